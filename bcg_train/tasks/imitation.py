"""Motion imitation on the G1: the task SHAC (and PPO) learn, on the MJX core with BCG.

Built on :class:`bcg_train.bcg.BundledSim` (batched ``reset`` / ``step`` of the MJX
environment core with plain, BCG or smoothed gradients). This module adds what makes
it a task: reference motion, observations, rewards, terminations, resets and domain
randomization. Everything is a pure function of a :class:`ImitationState` pytree.

Observations are computed from raw state *exactly as the ONNX graph sees it*
(:func:`bcg_robot.observation.build_observation` with ``xp=jax.numpy``): pelvis IMU
quaternion and gyro (the IMU site is aligned with the pelvis, so these are the free
joint's orientation and its root-frame angular velocity), joint positions and
velocities in motor order, the previous raw action and the phase
``time / motion length`` (time since the motion start, wrapping).

Domain randomization: sliding friction (of every geom, so of every contact), pelvis mass and PD gain scale are drawn
for the whole batch and redrawn every ``model_resample_steps`` control steps (the MJX
model is shared by the batch, so that BCG's batch-level ``cond`` stays outside the
``vmap``); pushes (random horizontal root-velocity changes at random intervals) and the
0/1-step action latency are per environment. For ``task.push_recovery.window_s`` after a
push the posture terms of the reward are scaled down (:func:`bcg_train.tasks.rewards.relax_after_push`).

A simulation failure (:mod:`bcg_train.sim.failure`: a non-finite state, or one outside
``sim_bounds``, e.g. the root metres from the reference) terminates the environment in
the step it appears: the state is replaced by a fresh episode before reward,
observation or metrics are computed from it, the step's gradient is cut, and the event
is counted in ``sim_failures``.
"""

from __future__ import annotations

import copy
import dataclasses
import functools
from typing import NamedTuple

import jax
import jax.numpy as jnp
import mujoco
import numpy as np

from bcg_robot.action_offset import REFERENCE, reference_joint_targets
from bcg_robot.config import RobotConfig
from bcg_robot.model import build_model, joint_dof_indices, joint_qpos_indices
from bcg_robot.observation import build_observation, observation_size, raw_inputs
from bcg_robot.paths import resolve_share_path
from bcg_train.bcg.bundle import BundledSim, BundledState
from bcg_train.motion.reference import ReferenceMotion, load_reference_motion
from bcg_train.sim.config import JointDrive, SimConfig
from bcg_train.sim.env import MjxSim
from bcg_train.sim.failure import SIM_FAILURES, any_branch_failed, guarded_step, state_failed
from bcg_train.tasks import mirror
from bcg_train.tasks.config import ImitationConfig
from bcg_train.tasks.privileged import privileged_features, privileged_size
from bcg_train.tasks.rewards import (TERMINATION_METRIC_PREFIX, TrackedState, any_reason, feet_key_index, key_body_error, reference_in_frame,
                                     reference_root_in_frame, relax_after_push, reward_terms, termination_reasons)


def training_model(cfg: ImitationConfig, robot: RobotConfig) -> mujoco.MjModel:
    """The ``train`` model variant as this task simulates it (its rate, contact preset and
    solver iterations)."""
    return build_model(robot, "train", physics_dt=cfg.physics_dt, contact=cfg.contact,
                       solver_iterations=cfg.solver_iterations, ls_iterations=cfg.ls_iterations)


@functools.partial(jax.tree_util.register_dataclass, data_fields=["friction", "mass_delta", "gain_scale"], meta_fields=[])
@dataclasses.dataclass(frozen=True)
class DomainSample:
    friction: jax.Array
    mass_delta: jax.Array
    gain_scale: jax.Array


@functools.partial(
    jax.tree_util.register_dataclass,
    data_fields=["sim", "frame", "t", "last_action", "pending_action", "late", "push_countdown", "recovery_left", "domain", "domain_countdown",
                 "rng"],
    meta_fields=[],
)
@dataclasses.dataclass(frozen=True)
class ImitationState:
    sim: BundledState
    frame: jax.Array  # (K,) reference frame of the current state
    t: jax.Array  # (K,) control steps since the episode started
    last_action: jax.Array  # (K, nu) the policy's previous raw action (observation)
    pending_action: jax.Array  # (K, nu) the drive action (relative to the default pose) a late environment applies next
    late: jax.Array  # (K,) this environment acts one control step late
    push_countdown: jax.Array  # (K,) control steps to the next push
    recovery_left: jax.Array  # (K,) control steps left of the push-recovery window (0: none; task.push_recovery)
    domain: DomainSample
    domain_countdown: jax.Array  # () control steps to the next model sample
    rng: jax.Array

    def __setstate__(self, state: dict) -> None:
        """Unpickling (a checkpoint's environments): a state saved before ``recovery_left``
        existed resumes with no push-recovery window open."""
        if "recovery_left" not in state:
            state = {**state, "recovery_left": np.zeros(np.shape(state["t"]), np.int32)}
        self.__dict__.update(state)


class StepOutput(NamedTuple):
    obs: jax.Array  # (K, obs) after the step (after the reset of finished environments)
    reward: jax.Array  # (K,)
    terminated: jax.Array  # (K,) bool: fell or lost the motion
    truncated: jax.Array  # (K,) bool: episode time limit
    terminal_obs: jax.Array  # (K, obs) before the reset (bootstrap value of truncated episodes)
    metrics: dict  # name -> (K,)
    terminal_privileged: jax.Array | None = None  # (K, privileged) before the reset; None: the task has none


def _select(mask: jax.Array, a, b):
    def pick(x, y):
        return jnp.where(mask.reshape(mask.shape + (1,) * (x.ndim - 1)), x, y)

    return jax.tree_util.tree_map(pick, a, b)


def _learner_view(data):
    """The simulator's state fields the rewards and observations read, in float32: with
    ``float64`` only the physics (and its backward pass) runs in 64 bits; a no-op otherwise."""
    return data.replace(**{name: getattr(data, name).astype(jnp.float32) for name in ("qpos", "qvel", "xpos")})


class ImitationTask:
    """Batched motion-imitation environment (see the module docstring)."""

    def __init__(self, cfg: ImitationConfig, robot: RobotConfig, reference: ReferenceMotion | None = None):
        self.cfg, self.robot = cfg, robot
        self.mj_model = training_model(cfg, robot)
        self.reference = reference or load_reference_motion(resolve_share_path(cfg.motion), robot, cfg.motion_fps, self.mj_model)
        self.sim = MjxSim(self.mj_model, JointDrive.from_robot_config(robot), SimConfig(control_dt=robot.control_dt, float64=cfg.float64))
        self.bsim = BundledSim(self.sim, cfg.bcg)
        self.qi = jnp.asarray(joint_qpos_indices(self.mj_model, robot))
        self.di = jnp.asarray(joint_dof_indices(self.mj_model, robot))
        self.key_ids = jnp.asarray([self.mj_model.body(b).id for b in self.reference.key_body_names])
        self.pelvis_id = self.mj_model.body(robot.root_body).id
        self.feet_key_index = feet_key_index(self.reference.key_body_names, robot)
        ref = self.reference
        self.num_frames = ref.num_frames
        self.ref_qpos = jnp.asarray(np.stack([ref.qpos(i, self.mj_model, robot) for i in range(ref.num_frames)]), jnp.float32)
        self.ref_qvel = jnp.asarray(np.stack([ref.qvel(i, self.mj_model, robot) for i in range(ref.num_frames)]), jnp.float32)
        self.ref_tracked = TrackedState(
            *(jnp.asarray(x, jnp.float32) for x in (ref.root_pos, ref.root_quat, ref.root_lin_vel, ref.root_ang_vel, ref.joint_pos, ref.joint_vel, ref.key_body_pos))
        )
        self.default_pose = jnp.asarray(robot.default_q, jnp.float32)
        self.action_scale = float(robot.action_scale)
        # the action's offset (bcg_robot.action_offset): None for the default pose
        self.reference_table = self.ref_tracked.joint_pos if cfg.action_offset == REFERENCE else None
        self.action_size = robot.num_joints
        self.obs_size = observation_size(cfg.observation_spec, robot.num_joints)
        self.privileged_size = privileged_size(cfg.critic_privileged)
        self.episode_steps = int(round(cfg.episode_length_s / robot.control_dt))
        self.recovery_steps = int(round(cfg.push_recovery.window_s / robot.control_dt))
        self.base_friction = jnp.asarray(self.mj_model.geom_friction, self.sim.dtype)
        self.base_mass = jnp.asarray(self.mj_model.body_mass, self.sim.dtype)
        self.joint_speed_limit = jnp.asarray(robot.velocity, jnp.float32)
        self._guarded_step = guarded_step(lambda sim, action, domain: self.domain_sim(domain).step(sim, action), self.sim_failed)

    # -- state views ------------------------------------------------------------------
    def tracked(self, state: ImitationState) -> TrackedState:
        d = _learner_view(state.sim.sim.data)
        return TrackedState(d.qpos[:, :3], d.qpos[:, 3:7], d.qvel[:, :3], d.qvel[:, 3:6], d.qpos[:, self.qi], d.qvel[:, self.di], d.xpos[:, self.key_ids])

    def reference_at(self, frame: jax.Array) -> TrackedState:
        return TrackedState(**{f.name: getattr(self.ref_tracked, f.name)[frame] for f in dataclasses.fields(TrackedState)})

    def phase(self, frame: jax.Array) -> jax.Array:
        return (frame.astype(jnp.float32) / self.num_frames)[:, None]

    def raw_inputs(self, state: ImitationState) -> dict[str, jax.Array]:
        """The policy's raw inputs, as the robot reports them (see bcg_robot.observation)."""
        d = _learner_view(state.sim.sim.data)
        return raw_inputs(d.qpos[:, 3:7], d.qvel[:, 3:6], d.qpos[:, self.qi], d.qvel[:, self.di], state.last_action,
                          self.phase(state.frame))

    def observe(self, state: ImitationState) -> jax.Array:
        return build_observation(self.cfg.observation_spec, self.raw_inputs(state), self.default_pose, xp=jnp)

    # -- left-right mirror (bcg_train.tasks.mirror), built on first use: only SHAC's mirror loss
    # needs it, and a robot without left/right partners must still train without it
    @functools.cached_property
    def _joint_mirror(self) -> tuple[np.ndarray, np.ndarray]:
        return mirror.joint_mirror(self.mj_model, self.robot)

    @functools.cached_property
    def motion_mirror_error(self) -> float:
        """How far the clip's joint angles are from their own mirror image (rad; 0: symmetric)."""
        perm, sign = self._joint_mirror
        joints = np.asarray(self.reference.joint_pos)
        return float(np.max(np.abs(sign * joints[:, perm] - joints)))

    @functools.cached_property
    def _observation_mirror(self) -> tuple[np.ndarray, np.ndarray]:
        return mirror.observation_mirror(self.cfg.observation_spec, *self._joint_mirror)

    def mirror_observation(self, obs: jax.Array) -> jax.Array:
        """The observation of the left-right mirrored state."""
        return mirror.apply(*self._observation_mirror, obs)

    def mirror_action(self, action: jax.Array) -> jax.Array:
        return mirror.apply(*self._joint_mirror, action)

    def privileged(self, state: ImitationState) -> jax.Array:
        """(K, privileged_size) critic-only inputs of ``task.critic_privileged``
        (:mod:`bcg_train.tasks.privileged`)."""
        d = state.domain
        return privileged_features(self.cfg.critic_privileged, self.tracked(state), self.reference_at(state.frame),
                                   d.friction, d.mass_delta, d.gain_scale, state.late, self.cfg.domain, xp=jnp)

    def drive_action(self, action: jax.Array, frame: jax.Array) -> jax.Array:
        """The action relative to the default pose (what the drive takes) of a policy action
        taken at ``frame``: the action itself, or with ``action_offset: reference`` the action
        plus the reference's joint positions one step ahead, in action units."""
        if self.reference_table is None:
            return action
        offset = reference_joint_targets(self.reference_table, self.phase(frame), xp=jnp)
        return action + (offset - self.default_pose) / self.action_scale

    # -- reset -------------------------------------------------------------------------
    def _start_frames(self, rng: jax.Array, k: int) -> jax.Array:
        if self.cfg.reference_state_init:
            return jax.random.randint(rng, (k,), 0, self.num_frames)
        return jnp.zeros((k,), jnp.int32)

    def _push_interval(self, rng: jax.Array, k: int) -> jax.Array:
        lo, hi = self.cfg.domain.push_interval_s
        dt = self.robot.control_dt
        return jax.random.randint(rng, (k,), int(round(lo / dt)), int(round(hi / dt)) + 1)

    def _sample_domain(self, rng: jax.Array) -> DomainSample:
        dr = self.cfg.domain
        if not dr.enabled:
            return DomainSample(jnp.asarray(-1.0), jnp.asarray(0.0), jnp.asarray(1.0))
        k1, k2, k3 = jax.random.split(rng, 3)
        u = lambda key, bounds: jax.random.uniform(key, (), minval=bounds[0], maxval=bounds[1])
        return DomainSample(u(k1, dr.friction), u(k2, dr.base_mass_delta), u(k3, dr.gain_scale))

    def _fresh_envs(self, rng: jax.Array, k: int, forward: bool = True):
        """Per-environment fields of newly started episodes (reference state initialization);
        ``forward=False`` inside a step (see :meth:`MjxSim.reset_to`)."""
        k_frame, k_sim, k_push, k_late = jax.random.split(rng, 4)
        frame = self._start_frames(k_frame, k)
        reset = functools.partial(self.sim.reset_to, forward=forward)
        sims = jax.vmap(reset)(self.ref_qpos[frame], self.ref_qvel[frame], jax.random.split(k_sim, k))
        late = jax.random.bernoulli(k_late, self.cfg.domain.latency_probability, (k,)) & self.cfg.domain.enabled
        zeros = jnp.zeros((k, self.action_size), jnp.float32)
        return self.bsim.wrap(sims), frame, zeros, late, self._push_interval(k_push, k)

    def _held_targets(self, frame: jax.Array) -> jax.Array:
        """The drive action a fresh episode at ``frame`` holds before its first action (what a
        late first step applies): the pose of ``frame`` itself."""
        return self.drive_action(jnp.zeros((frame.shape[0], self.action_size), jnp.float32), frame - 1)

    def reset(self, rng: jax.Array, num_envs: int) -> ImitationState:
        """A batch of ``num_envs`` fresh environments (:meth:`_reset`), compiled as one program
        as :meth:`bcg_train.tasks.hopper.HopperTask.reset` is (run eagerly it would dispatch op
        by op); inside a traced function the jit is a nested call XLA inlines."""
        return jax.jit(self._reset, static_argnums=1)(rng, num_envs)

    def _reset(self, rng: jax.Array, num_envs: int) -> ImitationState:
        k_env, k_dom, k_next = jax.random.split(rng, 3)
        sim, frame, zeros, late, push = self._fresh_envs(k_env, num_envs)
        return ImitationState(
            sim=sim, frame=frame, t=jnp.zeros((num_envs,), jnp.int32), last_action=zeros, pending_action=self._held_targets(frame),
            late=late, push_countdown=push, recovery_left=jnp.zeros((num_envs,), jnp.int32), domain=self._sample_domain(k_dom),
            domain_countdown=jnp.asarray(self.cfg.domain.model_resample_steps, jnp.int32), rng=k_next,
        )

    # -- dynamics ----------------------------------------------------------------------
    def domain_sim(self, domain: DomainSample) -> BundledSim:
        """The batch's simulator with the sampled friction, pelvis mass and PD gains."""
        if not self.cfg.domain.enabled:
            return self.bsim
        friction = self.base_friction.at[:, 0].set(jnp.where(domain.friction > 0, domain.friction, self.base_friction[:, 0]))
        mass = self.base_mass.at[self.pelvis_id].add(domain.mass_delta)
        sim = self.sim.with_model(self.sim.model.replace(geom_friction=friction, body_mass=mass))
        sim = copy.copy(sim)
        sim._kp = self.sim._kp * domain.gain_scale  # MjxSim keeps its gains private; see report
        sim._kd = self.sim._kd * domain.gain_scale
        return self.bsim.with_sim(sim)

    def _push(self, state: ImitationState, sim: BundledState, rng: jax.Array) -> tuple[BundledState, jax.Array, jax.Array]:
        """The state after this step's pushes, the push countdown and the push-recovery window
        left (a push opens a window of ``recovery_steps``, this step included)."""
        k = state.t.shape[0]
        countdown = state.push_countdown - 1
        recovery_left = jnp.maximum(state.recovery_left - 1, 0)
        if not self.cfg.domain.enabled or self.cfg.domain.push_velocity <= 0:
            return sim, countdown, recovery_left
        k_vel, k_next = jax.random.split(rng)
        push = countdown <= 0
        dv = jax.random.uniform(k_vel, (k, 2), minval=-1.0, maxval=1.0) * self.cfg.domain.push_velocity
        delta = jnp.zeros_like(sim.sim.data.qvel).at[:, :2].set(jnp.where(push[:, None], dv, 0.0))
        sim = BundledSim.add_qvel(sim, delta)  # a running bundle's branches are pushed too
        return sim, jnp.where(push, self._push_interval(k_next, k), countdown), jnp.where(push, self.recovery_steps, recovery_left)

    def sim_failed(self, sim: BundledState, reference_root_pos: jax.Array) -> jax.Array:
        """(K,) bool: the simulation failed (see :mod:`bcg_train.sim.failure`). The root's distance
        from the reference is taken in the task's reference frame: under ``heading`` the reference
        stands where the robot stands, so a push that carries the robot metres away is no failure."""
        d = sim.sim.data
        reference = reference_root_in_frame(self.cfg.reference_frame, reference_root_pos, d.qpos[:, :3], jnp)
        # a bundle's branches are checked too (a branch lies within millimetres of the mean: the
        # distance from the reference is the mean's)
        return self._state_failed(d.qpos, d.qvel, reference) | any_branch_failed(sim.bundle, self._state_failed)

    def _state_failed(self, qpos: jax.Array, qvel: jax.Array, reference_root_pos: jax.Array | None = None) -> jax.Array:
        return state_failed(self.cfg.sim_bounds, qpos, qvel, qpos[:, :3], qvel[:, :3], qvel[:, self.di], self.joint_speed_limit,
                            reference_root_pos)

    def step(self, state: ImitationState, action: jax.Array) -> tuple[ImitationState, StepOutput]:
        k = action.shape[0]
        rng, k_push, k_reset, k_dom = jax.random.split(state.rng, 4)
        drive = self.drive_action(action, state.frame)
        applied = jnp.where(state.late[:, None], state.pending_action, drive)
        frame = (state.frame + 1) % self.num_frames
        ref = self.reference_at(frame)
        # the sampled model is a parameter of the guarded step (never differentiated): its
        # custom VJP may not close over traced values
        sim, failed = self._guarded_step(state.sim, applied, jax.lax.stop_gradient(state.domain), ref.root_pos)
        fresh_sim, fresh_frame, zeros, fresh_late, fresh_push = self._fresh_envs(k_reset, k, forward=False)
        sim = _select(failed, fresh_sim, sim)  # nothing below sees a failed state
        sim, push_countdown, recovery_left = self._push(state, sim, k_push)
        t = state.t + 1
        stepped = dataclasses.replace(
            state, sim=sim, frame=frame, t=t, last_action=action, pending_action=drive, push_countdown=push_countdown,
            recovery_left=recovery_left,
        )
        robot = self.tracked(stepped)
        target = reference_in_frame(self.cfg.reference_frame, ref, robot, xp=jnp)
        terms = reward_terms(self.cfg.rewards, robot, target, action, state.last_action, self.feet_key_index, xp=jnp)
        recovering = recovery_left > 0
        terms = relax_after_push(self.cfg.push_recovery, terms, recovering, xp=jnp)
        terms = {name: jnp.where(failed, 0.0, value) for name, value in terms.items()}
        reward = sum(terms.values())
        reasons = termination_reasons(self.cfg.termination, robot, target, xp=jnp)
        done_term = any_reason(reasons) | failed
        done_trunc = (t >= self.episode_steps) & ~done_term
        terminal_obs = self.observe(stepped)
        terminal_privileged = self.privileged(stepped)

        done = done_term | done_trunc
        countdown = stepped.domain_countdown - 1
        resample = countdown <= 0
        new_domain = _select(resample, self._sample_domain(k_dom), state.domain)
        after = ImitationState(
            sim=_select(done, fresh_sim, sim),
            frame=jnp.where(done, fresh_frame, frame),
            t=jnp.where(done, 0, t),
            last_action=jnp.where(done[:, None], zeros, action),
            pending_action=jnp.where(done[:, None], self._held_targets(fresh_frame), drive),
            late=jnp.where(done, fresh_late, state.late),
            push_countdown=jnp.where(done, fresh_push, push_countdown),
            recovery_left=jnp.where(done, 0, recovery_left),
            domain=new_domain,
            domain_countdown=jnp.where(resample, self.cfg.domain.model_resample_steps, countdown),
            rng=rng,
        )
        metrics = {f"reward/{name}": value for name, value in terms.items()}
        metrics["tracking_error_m"] = jnp.where(failed, 0.0, key_body_error(robot, ref, xp=jnp))
        metrics["root_height_m"] = jnp.where(failed, 0.0, robot.root_pos[:, 2])
        metrics["bundled"] = sim.bundle.bundled.astype(jnp.float32)
        metrics["bundle_overflow"] = sim.bundle.overflowed.astype(jnp.float32)
        metrics[SIM_FAILURES] = failed.astype(jnp.float32)
        metrics["push_recovering"] = recovering.astype(jnp.float32)
        for name, hit in reasons.items():  # counted per iteration; a failed step counts only as a failure
            metrics[f"{TERMINATION_METRIC_PREFIX}{name}"] = (hit & ~failed).astype(jnp.float32)
        return after, StepOutput(self.observe(after), reward, done_term, done_trunc, terminal_obs, metrics, terminal_privileged)
