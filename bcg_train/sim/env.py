"""Batched MJX environment core: pure ``reset`` / ``step`` on an ``mjx.Model``.

One control step (50 Hz by default) runs ``n_substeps = control_dt / opt.timestep``
physics steps. Every substep recomputes the joint-space PD torque from the position
targets, ``tau = clip(kp (q* - q) + kd (0 - dq), -effort, effort)`` (the drives' law,
:func:`bcg_robot.pd.pd_torque`, shared with the sim bridge and the node), and applies it
through the model's motor actuators (``ctrl``). The per-contact normal force of
every substep is recorded, so callers see the force at the end of the step, its
peak over the step and the normal impulse summed over the step.

Everything here is a pure function of its inputs (``jax.jit`` / ``jax.grad``
compatible). One :class:`SimState` is one environment; batch with ``jax.vmap``
(see :mod:`bcg_train.sim.batching` for how gradients over a batch are taken).
"""

from __future__ import annotations

import copy
import dataclasses
import functools

import jax
import jax.numpy as jnp
import mujoco
import numpy as np
from mujoco import mjx

from bcg_robot.pd import pd_torque
from bcg_train.sim import solver
from bcg_train.sim.config import JointDrive, SimConfig
from bcg_train.sim.contact import contact_normal_forces
from bcg_train.sim.jax_setup import float64_enabled


@functools.partial(
    jax.tree_util.register_dataclass,
    data_fields=["data", "step_count", "rng", "info", "metrics"],
    meta_fields=[],
)
@dataclasses.dataclass(frozen=True)
class SimState:
    """State of one environment.

    ``info`` holds ``contact_force`` (ncon,) normal force of each candidate contact
    in the last substep, ``contact_force_peak`` (ncon,) its maximum over the control
    step's substeps, ``contact_impulse`` (ncon,) the normal impulse summed over the
    control step, and ``q_target`` (nu,) the PD targets of the step.
    ``metrics`` holds scalar per-step summaries.
    """

    data: mjx.Data
    step_count: jax.Array
    rng: jax.Array
    info: dict
    metrics: dict

    def replace(self, **changes) -> "SimState":
        return dataclasses.replace(self, **changes)


@functools.partial(
    jax.tree_util.register_dataclass,
    data_fields=["force", "force_peak", "impulse"],
    meta_fields=[],
)
@dataclasses.dataclass(frozen=True)
class ContactSummary:
    """Per-contact normal force over one control step, each of shape (ncon,)."""

    force: jax.Array
    force_peak: jax.Array
    impulse: jax.Array


def _float_dtype(x64: bool):
    return jnp.float64 if x64 else jnp.float32


def cast_floats(tree, dtype):
    """Casts every floating-point leaf (jax or numpy) of a pytree to ``dtype``."""

    def cast(x):
        if isinstance(x, (jax.Array, np.ndarray)) and jnp.issubdtype(x.dtype, jnp.floating):
            return jnp.asarray(x, dtype=dtype)
        return x

    return jax.tree_util.tree_map(cast, tree)


class MjxSim:
    """PD-driven MJX simulation of a model with one motor actuator per driven joint."""

    def __init__(
        self,
        mj_model: mujoco.MjModel,
        drive: JointDrive,
        config: SimConfig = SimConfig(),
        initial_qpos: np.ndarray | None = None,
        initial_qvel: np.ndarray | None = None,
    ) -> None:
        if config.float64 and not float64_enabled():
            raise ValueError("SimConfig(float64=True) needs jax_enable_x64; call jax_setup.enable_float64() first")
        _check_motor_actuators(mj_model, drive)
        self.mj_model = mj_model
        self.drive = drive
        self.config = config
        self.dtype = _float_dtype(config.float64)
        ratio = config.control_dt / mj_model.opt.timestep
        self.n_substeps = int(round(ratio))
        if self.n_substeps < 1 or abs(ratio - self.n_substeps) > 1e-6:
            raise ValueError(f"control_dt {config.control_dt} is not a multiple of timestep {mj_model.opt.timestep}")
        self.physics_dt = float(mj_model.opt.timestep)
        self.model = cast_floats(mjx.put_model(mj_model), self.dtype)
        joint_ids = mj_model.actuator_trnid[:, 0]
        self.actuated_qposadr = np.asarray(mj_model.jnt_qposadr[joint_ids], dtype=np.int32)
        self.actuated_dofadr = np.asarray(mj_model.jnt_dofadr[joint_ids], dtype=np.int32)
        self.initial_qpos = np.array(mj_model.qpos0 if initial_qpos is None else initial_qpos, dtype=np.float64)
        self.initial_qvel = np.zeros(mj_model.nv) if initial_qvel is None else np.array(initial_qvel, dtype=np.float64)
        self._kp = jnp.asarray(drive.kp, self.dtype)
        self._kd = jnp.asarray(drive.kd, self.dtype)
        self._effort = jnp.asarray(drive.effort_limit, self.dtype)
        self._default_pose = jnp.asarray(drive.default_pose, self.dtype)

    # -- model variants -------------------------------------------------------------
    def with_model(self, model: mjx.Model) -> "MjxSim":
        """Same sim on another mjx.Model of identical structure (e.g. traced contact params)."""
        other = copy.copy(self)
        other.model = model
        return other

    def with_contact_params(self, geom_solref: jax.Array, geom_solimp: jax.Array) -> "MjxSim":
        """Same sim with other per-geom contact ``solref`` / ``solimp`` (may be traced)."""
        model = self.model.replace(
            geom_solref=jnp.asarray(geom_solref, self.dtype), geom_solimp=jnp.asarray(geom_solimp, self.dtype)
        )
        return self.with_model(model)

    # -- reset ------------------------------------------------------------------------
    def reset(self, rng: jax.Array) -> SimState:
        """Environment at the initial configuration (the model's ``qpos0`` unless given)."""
        return self.reset_to(jnp.asarray(self.initial_qpos, self.dtype), jnp.asarray(self.initial_qvel, self.dtype), rng)

    def reset_to(self, qpos: jax.Array, qvel: jax.Array, rng: jax.Array, forward: bool = True) -> SimState:
        """Environment at ``qpos`` / ``qvel``. With ``forward`` (default) the derived fields
        (kinematics, contacts, constraint rows) are computed; without it they stay zero.

        A physics step reads only ``qpos``, ``qvel``, ``act``, ``qacc_warmstart`` (zero either
        way) and the inputs, so the next step is the same with or without the forward pass.
        Resets inside a task's step pass ``forward=False``: nothing reads a fresh state's
        derived fields before its next step (a step's rewards and metrics of a failed
        environment are masked), and the step's compiled program then holds no forward pass
        beside the physics step's own.

        Compiled as one program: run eagerly (a test's or a benchmark's start state), MJX's
        forward pass otherwise dispatches op by op, and on the G1 that compiled ~1,900 small
        programs in 84 s. Inside a traced function the jit is a nested call XLA inlines."""
        return jax.jit(functools.partial(self._reset_to, forward=forward))(qpos, qvel, rng)

    def _reset_to(self, qpos: jax.Array, qvel: jax.Array, rng: jax.Array, forward: bool) -> SimState:
        data = mjx.make_data(self.model)
        data = data.replace(qpos=jnp.asarray(qpos, self.dtype), qvel=jnp.asarray(qvel, self.dtype))
        if forward:
            data = solver.forward(self.model, data)
        zeros = jnp.zeros((data._impl.ncon,), self.dtype)
        info = {
            "contact_force": zeros,
            "contact_force_peak": zeros,
            "contact_impulse": zeros,
            "q_target": jnp.asarray(data.qpos[self.actuated_qposadr], self.dtype),
        }
        metrics = {"max_contact_force_peak": jnp.zeros((), self.dtype)}
        return SimState(data=data, step_count=jnp.zeros((), jnp.int32), rng=rng, info=info, metrics=metrics)

    # -- dynamics -----------------------------------------------------------------------
    def position_targets(self, action: jax.Array) -> jax.Array:
        """PD position targets ``q* = default_pose + action_scale * action``."""
        return self._default_pose + self.drive.action_scale * jnp.asarray(action, self.dtype)

    def pd_torque(self, data: mjx.Data, q_target: jax.Array) -> jax.Array:
        """The drives' PD law (:func:`bcg_robot.pd.pd_torque`) with ``dq_des = tau_ff = 0``."""
        q = data.qpos[self.actuated_qposadr]
        dq = data.qvel[self.actuated_dofadr]
        return pd_torque(q_target, q, 0.0, dq, self._kp, self._kd, 0.0, self._effort, xp=jnp)

    def physics_step(self, data: mjx.Data, q_target: jax.Array) -> tuple[mjx.Data, jax.Array]:
        """One physics step with the PD torque; returns new data and per-contact normal force."""
        data = data.replace(ctrl=self.pd_torque(data, q_target))
        data = solver.step(self.model, data)
        return data, contact_normal_forces(self.model, data)

    def control_step(self, data: mjx.Data, q_target: jax.Array) -> tuple[mjx.Data, ContactSummary]:
        """``n_substeps`` physics steps towards fixed position targets (each substep
        rematerialized in the backward pass unless ``SimConfig.remat_substeps`` is off)."""
        physics_step = jax.checkpoint(self.physics_step) if self.config.remat_substeps else self.physics_step

        def body(d, _):
            d, force = physics_step(d, q_target)
            return d, force

        data, forces = jax.lax.scan(body, data, None, length=self.n_substeps)
        summary = ContactSummary(
            force=forces[-1],
            force_peak=jnp.max(forces, axis=0),
            impulse=jnp.sum(forces, axis=0) * jnp.asarray(self.physics_dt, self.dtype),
        )
        return data, summary

    def step(self, state: SimState, action: jax.Array) -> SimState:
        """One control step of one environment (vmap for a batch)."""
        q_target = self.position_targets(action)
        data, contact = self.control_step(state.data, q_target)
        return self.with_step_result(state, data, contact, q_target)

    def with_step_result(self, state: SimState, data: mjx.Data, contact: ContactSummary, q_target: jax.Array) -> SimState:
        info = dict(state.info)
        info.update(
            contact_force=contact.force,
            contact_force_peak=contact.force_peak,
            contact_impulse=contact.impulse,
            q_target=q_target,
        )
        metrics = dict(state.metrics)
        peak = jnp.max(contact.force_peak) if contact.force_peak.shape[0] else jnp.zeros((), self.dtype)
        metrics["max_contact_force_peak"] = peak
        return state.replace(data=data, step_count=state.step_count + 1, info=info, metrics=metrics)


def _check_motor_actuators(m: mujoco.MjModel, drive: JointDrive) -> None:
    if m.nu != drive.num_actuators:
        raise ValueError(f"model has {m.nu} actuators, drive has {drive.num_actuators}")
    if np.any(m.actuator_trntype != mujoco.mjtTrn.mjTRN_JOINT):
        raise ValueError("every actuator must drive a joint")
    joint_types = m.jnt_type[m.actuator_trnid[:, 0]]
    if np.any((joint_types != mujoco.mjtJoint.mjJNT_HINGE) & (joint_types != mujoco.mjtJoint.mjJNT_SLIDE)):
        raise ValueError("actuated joints must be hinge or slide joints")
    motor = (
        (m.actuator_gaintype == mujoco.mjtGain.mjGAIN_FIXED)
        & (m.actuator_biastype == mujoco.mjtBias.mjBIAS_NONE)
        & np.isclose(m.actuator_gainprm[:, 0], 1.0)
        & np.isclose(m.actuator_gear[:, 0], 1.0)
        & (m.actuator_dyntype == mujoco.mjtDyn.mjDYN_NONE)
    )
    if not np.all(motor):
        raise ValueError("actuators must be plain motors (gain 1, gear 1, no bias, no dynamics)")
