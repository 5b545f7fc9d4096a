"""Periodic hopping on the planar hopper: the G1 trainer's stiff-contact test bench.

The same code path as the G1 imitation task: :class:`~bcg_train.sim.env.MjxSim` ->
:class:`~bcg_train.bcg.bundle.BundledSim` -> this task (``obs_size``, ``action_size``,
``reset(rng, num_envs)``, ``observe``, ``step -> (state, StepOutput)``, batched and
auto-resetting) -> SHAC, or brax PPO through :class:`~bcg_train.learn.ppo_baseline.BraxTaskEnv`.

The motion to track is a reference hip height, periodic with ``hop_period_s``: a
ballistic flight of ``flight_time_s`` from and back to ``takeoff_height`` (apex
``apex_height``), joined by a stance phase whose height is the cubic that matches height
and vertical velocity at touch-down and take-off. Phase 0 is mid-stance (the lowest
point); each episode starts standing still (feet on the floor) at the default pose
plus joint noise at phase 0, except the first episodes of a batch (:meth:`HopperTask.reset`).
The policy sees the phase as sin / cos.

Task error: the apex error of a hop cycle is ``|max hip height over the cycle -
apex_height|`` (standing still scores ``apex_height - standing height``). Every step
reports ``apex_error_sum`` (the apex error where a cycle ended, else 0) and
``apex_count`` (1 where a cycle ended); the task error over a batch of steps is
``sum(apex_error_sum) / sum(apex_count)`` (:func:`task_error`).

A fall (pitch beyond ``max_pitch`` or hip below ``min_height``) terminates the episode;
so does a simulation failure (:mod:`bcg_train.sim.failure`: a non-finite state or one
outside ``sim_bounds``), which is replaced by a fresh episode before anything is computed
from it and counted in ``sim_failures``.
"""

from __future__ import annotations

import dataclasses
import functools

import jax
import jax.numpy as jnp
import numpy as np
from mujoco import mjx

from bcg_train.bcg.bundle import BundledSim, BundledState
from bcg_train.bcg.config import BCGConfig
from bcg_train.sim.config import SimConfig
from bcg_train.sim.env import MjxSim
from bcg_train.sim.failure import SIM_FAILURES, SimBounds, any_branch_failed, guarded_step, state_failed
from bcg_train.sim.hopper_model import (ACTUATED, DEFAULT_POSE, HIP, JOINT_SPEED_LIMIT, KNEE, ROOT_PITCH, ROOT_X, ROOT_Z,
                                        build_hopper, hopper_drive, model_info, standing_qpos)
from bcg_train.tasks.imitation import StepOutput

OBS_SIZE = 13
ACTION_SIZE = 2
GRAVITY = 9.81


@dataclasses.dataclass(frozen=True)
class HopperConfig:
    contact: str = "stiff"  # contact preset of the train model (soft | default | stiff)
    physics_dt: float = 0.005
    control_dt: float = 0.02
    episode_length_s: float = 6.0
    hop_period_s: float = 0.5
    flight_time_s: float = 0.3
    takeoff_height: float = 0.43  # m, hip height at take-off and touch-down
    init_joint_noise: float = 0.05  # rad, uniform, on hip and knee at reset
    max_pitch: float = 0.7  # rad
    min_height: float = 0.2  # m
    height_sigma: float = 0.15  # m (wide: a standing hopper still feels the hop reference)
    vertical_speed_sigma: float = 1.0  # m/s
    pitch_sigma: float = 0.2  # rad
    drift_speed_sigma: float = 0.3  # m/s
    action_rate_weight: float = 0.01
    # BCG's trigger: 150 N is 4x the hopper's weight (3.85 kg); standing puts <= 75 N on one sphere
    bcg: BCGConfig = BCGConfig(force_threshold=150.0)
    # the hopper tracks no root position, so no distance bound
    sim_bounds: SimBounds = SimBounds(max_root_distance=0.0)

    @property
    def apex_height(self) -> float:
        return self.takeoff_height + GRAVITY * self.flight_time_s**2 / 8.0

    def validate(self) -> None:
        self.sim_bounds.validate()
        if self.contact not in ("soft", "default", "stiff"):
            raise ValueError(f"contact: unknown preset '{self.contact}' (soft | default | stiff)")
        if not 0 < self.flight_time_s < self.hop_period_s:
            raise ValueError("flight_time_s must be in (0, hop_period_s)")
        steps = self.hop_period_s / self.control_dt
        if abs(steps - round(steps)) > 1e-6:
            raise ValueError("hop_period_s must be a multiple of control_dt")


def reference_height(cfg: HopperConfig, phase, xp=np):
    """Reference hip height and vertical speed at ``phase`` in [0, 1) (0: mid-stance)."""
    period, flight = cfg.hop_period_s, cfg.flight_time_s
    stance = period - flight
    v0 = GRAVITY * flight / 2.0  # take-off speed
    t = phase * period
    # shift so that the stance runs over [0, stance) from touch-down, flight after it
    u = xp.mod(t + stance / 2.0, period)
    s = u / stance
    stance_h = cfg.takeoff_height - stance * v0 * s * (1.0 - s)
    stance_v = -v0 * (1.0 - 2.0 * s)
    tf = u - stance
    flight_h = cfg.takeoff_height + v0 * tf - 0.5 * GRAVITY * tf**2
    flight_v = v0 - GRAVITY * tf
    in_stance = u < stance
    return xp.where(in_stance, stance_h, flight_h), xp.where(in_stance, stance_v, flight_v)


def hopper_observation(qpos, qvel, last_action, phase, xp=np):
    """The policy's input (13): base height (from standing), pitch, joint offsets from the
    default pose, base and joint velocities, last action, phase as sin / cos. ``qpos`` /
    ``qvel`` (..., 5), ``last_action`` (..., 2), ``phase`` (...,). Used by training and by
    the MuJoCo C evaluation alike."""
    stand = standing_qpos()
    angle = 2.0 * np.pi * phase
    return xp.concatenate(
        [
            qpos[..., ROOT_Z : ROOT_Z + 1] - stand[ROOT_Z],
            qpos[..., ROOT_PITCH : ROOT_PITCH + 1],
            qpos[..., HIP : KNEE + 1] - xp.asarray(DEFAULT_POSE),
            qvel[..., ROOT_X : ROOT_PITCH + 1],
            qvel[..., HIP : KNEE + 1],
            last_action,
            xp.sin(angle)[..., None],
            xp.cos(angle)[..., None],
        ],
        axis=-1,
    )


def hopper_fell(cfg: HopperConfig, qpos, xp=np):
    return (xp.abs(qpos[..., ROOT_PITCH]) > cfg.max_pitch) | (qpos[..., ROOT_Z] < cfg.min_height)


def task_error(metrics: dict) -> float:
    """Mean apex error over the cycles that ended in a batch of step metrics (NaN if none)."""
    count = float(np.sum(metrics["apex_count"]))
    return float(np.sum(metrics["apex_error_sum"])) / count if count > 0 else float("nan")


@functools.partial(jax.tree_util.register_dataclass, data_fields=["sim", "t", "last_action", "cycle_peak", "rng"], meta_fields=[])
@dataclasses.dataclass(frozen=True)
class HopperState:
    sim: BundledState
    t: jax.Array  # (K,) control steps since the episode started
    last_action: jax.Array  # (K, 2)
    cycle_peak: jax.Array  # (K,) highest hip height in the current hop cycle
    rng: jax.Array


def _select(mask, a, b):
    return jax.tree_util.tree_map(lambda x, y: jnp.where(mask.reshape(mask.shape + (1,) * (x.ndim - 1)), x, y), a, b)


class HopperTask:
    """Batched periodic hopping (see the module docstring)."""

    obs_size = OBS_SIZE
    action_size = ACTION_SIZE

    def __init__(self, cfg: HopperConfig = HopperConfig()):
        cfg.validate()
        self.cfg = cfg
        self.mj_model = build_hopper("train", cfg.contact, cfg.physics_dt)
        self.info = model_info(self.mj_model)
        self.drive = hopper_drive()
        self.sim = MjxSim(self.mj_model, self.drive, SimConfig(control_dt=cfg.control_dt), initial_qpos=standing_qpos())
        self.bsim = BundledSim(self.sim, cfg.bcg)
        self.guarded_step = guarded_step(lambda sim, action, _params: self.bsim.step(sim, action), self._failed)
        self.period_steps = int(round(cfg.hop_period_s / cfg.control_dt))
        self.episode_steps = int(round(cfg.episode_length_s / cfg.control_dt))
        # MJX's candidate contacts are static: find the foot-floor ones once
        candidates = np.asarray(jax.jit(self.sim.reset)(jax.random.PRNGKey(0)).data._impl.contact.geom)  # jit: 5x faster than eager
        feet = np.isin(candidates, np.asarray(self.info.foot_geoms)).any(axis=-1)
        self.foot_contacts = jnp.asarray(feet & (candidates == self.info.floor_geom).any(axis=-1))
        if not np.any(self.foot_contacts):
            raise ValueError("hopper model: no foot-floor contact candidates")

    def phase(self, t):
        return (t % self.period_steps).astype(jnp.float32) / self.period_steps

    def observe(self, state: HopperState) -> jax.Array:
        d = state.sim.sim.data
        return hopper_observation(d.qpos, d.qvel, state.last_action, self.phase(state.t), xp=jnp)

    def _fresh(self, rng: jax.Array, k: int, forward: bool = True) -> BundledState:
        """Newly started episodes; ``forward=False`` inside a step (see :meth:`MjxSim.reset_to`)."""
        k_noise, k_sim = jax.random.split(rng)
        qpos = jnp.broadcast_to(jnp.asarray(standing_qpos(), jnp.float32), (k, 5))
        noise = jax.random.uniform(k_noise, (k, 2), minval=-1.0, maxval=1.0) * self.cfg.init_joint_noise
        qpos = qpos.at[:, list(ACTUATED)].add(noise)
        qpos = qpos.at[:, ROOT_Z].add(-jax.vmap(self._foot_clearance)(qpos))
        reset = functools.partial(self.sim.reset_to, forward=forward)
        sims = jax.vmap(reset)(qpos, jnp.zeros((k, 5), jnp.float32), jax.random.split(k_sim, k))
        return self.bsim.wrap(sims)

    def _foot_clearance(self, qpos: jax.Array) -> jax.Array:
        """Height of the lowest foot sphere's bottom above the floor at ``qpos``."""
        data = mjx.kinematics(self.sim.model, mjx.make_data(self.sim.model).replace(qpos=qpos))
        ids = np.asarray(self.info.foot_geoms)
        return jnp.min(data.geom_xpos[ids, 2] - self.sim.model.geom_size[ids, 0])

    def reset(self, rng: jax.Array, num_envs: int) -> HopperState:
        """A batch of ``num_envs`` fresh environments (:meth:`_reset`), compiled as one program:
        run eagerly (a test's or a benchmark's start), the reset otherwise dispatches op by
        op (the hopper's, 4 environments, cold: 43 s, against 25 s as one program). Inside a
        traced function the jit is a nested call XLA inlines."""
        return jax.jit(self._reset, static_argnums=1)(rng, num_envs)

    def _reset(self, rng: jax.Array, num_envs: int) -> HopperState:
        """A batch at the start of its episodes; the first episodes start at uniformly random
        times (phases) of an episode so the batch's landings and time limits are spread."""
        k_env, k_t, k_next = jax.random.split(rng, 3)
        sim = self._fresh(k_env, num_envs)
        t = jax.random.randint(k_t, (num_envs,), 0, self.episode_steps)
        height = sim.sim.data.qpos[:, ROOT_Z]
        return HopperState(sim, t, jnp.zeros((num_envs, ACTION_SIZE), jnp.float32), height, k_next)

    def _failed(self, sim: BundledState, _aux) -> jax.Array:
        """(K,) bool: the step's state, or a branch of its bundle, failed (bcg_train.sim.failure)."""
        d = sim.sim.data
        return self._state_failed(d.qpos, d.qvel) | any_branch_failed(sim.bundle, self._state_failed)

    def _state_failed(self, qpos: jax.Array, qvel: jax.Array) -> jax.Array:
        root = jnp.asarray([ROOT_X, ROOT_Z])
        return state_failed(self.cfg.sim_bounds, qpos, qvel, qpos[:, root], qvel[:, root], qvel[:, HIP : KNEE + 1], JOINT_SPEED_LIMIT)

    def foot_penetration(self, data) -> jax.Array:
        """(K,) deepest foot-floor penetration (m, >= 0) of each environment."""
        depth = jnp.where(self.foot_contacts, jnp.maximum(-data._impl.contact.dist, 0.0), 0.0)
        return jnp.max(depth, axis=-1, initial=0.0)

    def step(self, state: HopperState, action: jax.Array) -> tuple[HopperState, StepOutput]:
        cfg = self.cfg
        k = action.shape[0]
        rng, k_reset = jax.random.split(state.rng)
        stepped_sim, failed = self.guarded_step(state.sim, action, None, None)
        fresh = self._fresh(k_reset, k, forward=False)
        sim = _select(failed, fresh, stepped_sim)  # nothing below sees a failed state
        d = sim.sim.data
        t = state.t + 1
        z, pitch, vx, vz = d.qpos[:, ROOT_Z], d.qpos[:, ROOT_PITCH], d.qvel[:, ROOT_X], d.qvel[:, ROOT_Z]
        z_ref, vz_ref = reference_height(cfg, self.phase(t), xp=jnp)
        terms = {
            "height": 0.5 * jnp.exp(-jnp.square((z - z_ref) / cfg.height_sigma)),
            "vertical_speed": 0.1 * jnp.exp(-jnp.square((vz - vz_ref) / cfg.vertical_speed_sigma)),
            "upright": 0.2 * jnp.exp(-jnp.square(pitch / cfg.pitch_sigma)),
            "no_drift": 0.1 * jnp.exp(-jnp.square(vx / cfg.drift_speed_sigma)),
            "alive": jnp.full((k,), 0.1),
            "action_rate": -cfg.action_rate_weight * jnp.sum(jnp.square(action - state.last_action), axis=-1),
        }
        terms = {name: jnp.where(failed, 0.0, value) for name, value in terms.items()}
        reward = sum(terms.values())
        fell = hopper_fell(cfg, d.qpos, xp=jnp) & ~failed
        terminated = fell | failed
        truncated = (t >= self.episode_steps) & ~terminated
        peak = jnp.maximum(state.cycle_peak, z)
        cycle_end = (t % self.period_steps == 0) & ~terminated
        apex_error = jnp.abs(jax.lax.stop_gradient(peak) - cfg.apex_height)
        stepped = HopperState(sim, t, action, peak, rng)
        terminal_obs = self.observe(stepped)

        done = terminated | truncated
        after = HopperState(
            sim=_select(done, fresh, sim),
            t=jnp.where(done, 0, t),
            last_action=jnp.where(done[:, None], 0.0, action),
            cycle_peak=jnp.where(done, fresh.sim.data.qpos[:, ROOT_Z], jnp.where(cycle_end, z, peak)),
            rng=rng,
        )
        metrics = {f"reward/{name}": value for name, value in terms.items()}
        metrics.update(
            apex_error_sum=jnp.where(cycle_end, apex_error, 0.0),
            apex_count=cycle_end.astype(jnp.float32),
            height_error_m=jnp.where(failed, 0.0, jnp.abs(z - z_ref)),
            fell=fell.astype(jnp.float32),
            bundled=sim.bundle.bundled.astype(jnp.float32),
            bundle_overflow=sim.bundle.overflowed.astype(jnp.float32),
            foot_penetration_m=jnp.where(failed, 0.0, self.foot_penetration(d)),
        )
        metrics[SIM_FAILURES] = failed.astype(jnp.float32)
        metrics = {name: jax.lax.stop_gradient(v) for name, v in metrics.items()}
        return after, StepOutput(self.observe(after), reward, terminated, truncated, terminal_obs, metrics)
