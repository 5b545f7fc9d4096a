"""Bundled Contact Gradients on a batch of MJX environments.

:class:`BundledSim` wraps :class:`bcg_train.sim.MjxSim`. Its ``reset`` / ``step``
work on a batch of environments (leading axis K; one environment is K = 1); the
branches of a bundle are a second axis (K, B). Per control step and environment:

1. The nominal control step is simulated (all modes).
2. Trigger (``BCG``): no bundle is running and the PEAK per-contact normal force
   over the step (max over physics substeps and candidate contacts, see
   :class:`~bcg_train.bcg.config.BCGConfig`) exceeds ``force_threshold``.
   ``GLOBAL_SMOOTHING`` is the same code with tau = -inf, so it triggers whenever no
   bundle is running; ``PLAIN`` skips all of this.
3. A triggered environment restarts the step from its pre-step state as B branches
   offset by :func:`~bcg_train.bcg.perturbation.joint_space_offsets` (constants),
   all driven by the same actions. The branches persist for ``bundle_steps``
   control steps; each step's actions come from the caller (so from the policy on
   the bundle's state) and are shared by all branches.
4. The environment's state is the arithmetic mean of the branch states (every
   floating-point field of ``mjx.Data``), so autodiff passes the mean of the branch
   sensitivities backward. With ``forward = NOMINAL`` the value is the nominal step
   and only the derivative is the branch mean.

With ``bundle_slots = M > 0`` only M environments run branches: those with a running
bundle first, then new triggers in environment order (:func:`slot_assignment`); they are
gathered into an (M, B) batch and their results scattered back. A trigger beyond M takes
the plain step and is counted in ``overflowed``; so is a running bundle beyond M, which
then ends early.

The bundled computation sits in a ``lax.cond`` on "any environment bundled" at the
batch level, outside every ``vmap``: when no environment triggers it is not executed
(forward or backward) and the result is exactly the plain nominal step. Inside the
cond, environments that are not bundled select their nominal step with ``where``.
The mean is taken as ``x_0 + mean_i(x_i - x_0)``, exact when the branches coincide
(zero sigma), so zero-sigma BCG reproduces the plain forward pass bit for bit.
"""

from __future__ import annotations

import dataclasses
import functools

import jax
import jax.numpy as jnp
from mujoco import mjx

from bcg_train.bcg.config import BCGConfig, BundleForward, Estimator
from bcg_train.bcg.perturbation import integrate_configuration, joint_space_offsets
from bcg_train.sim.env import ContactSummary, MjxSim, SimState


@functools.partial(
    jax.tree_util.register_dataclass,
    data_fields=["qpos", "qvel", "qacc_warmstart", "act", "steps_left", "started", "bundled", "num_started", "overflowed"],
    meta_fields=[],
)
@dataclasses.dataclass(frozen=True)
class BundleState:
    """Branch states of one environment's running bundle (leading axis B)."""

    qpos: jax.Array
    qvel: jax.Array
    qacc_warmstart: jax.Array
    act: jax.Array
    steps_left: jax.Array  # control steps the running bundle still covers
    started: jax.Array  # a bundle started at the last step
    bundled: jax.Array  # the last step was computed by branches (started or running)
    num_started: jax.Array  # bundles started since reset
    overflowed: jax.Array  # the last step needed a bundle slot and found none (plain step)


@functools.partial(jax.tree_util.register_dataclass, data_fields=["sim", "bundle"], meta_fields=[])
@dataclasses.dataclass(frozen=True)
class BundledState:
    sim: SimState
    bundle: BundleState


def _is_float(x) -> bool:
    return hasattr(x, "dtype") and jnp.issubdtype(x.dtype, jnp.floating)


def branch_mean(tree, axis: int = 1):
    """Mean over the branch axis of every float leaf, exact when branches coincide."""

    def mean(x):
        if not _is_float(x):
            return jnp.take(x, 0, axis=axis)
        first = jnp.take(x, 0, axis=axis)
        return first + jnp.mean(x - jnp.expand_dims(first, axis), axis=axis)

    return jax.tree_util.tree_map(mean, tree)


def straight_through(value_tree, gradient_tree):
    """Value of ``value_tree``, derivative of ``gradient_tree`` (float leaves)."""

    def combine(v, g):
        if not _is_float(v):
            return v
        return jax.lax.stop_gradient(v) + (g - jax.lax.stop_gradient(g))

    return jax.tree_util.tree_map(combine, value_tree, gradient_tree)


def _select(mask: jax.Array, on_true, on_false):
    """Per-environment ``where`` over pytrees with a leading batch axis."""

    def pick(a, b):
        m = mask.reshape(mask.shape + (1,) * (a.ndim - 1))
        return jnp.where(m, a, b)

    return jax.tree_util.tree_map(pick, on_true, on_false)


def _idle(bundle: BundleState) -> BundleState:
    no = jnp.zeros_like(bundle.started)
    return dataclasses.replace(bundle, started=no, bundled=no, overflowed=no)


def _take(tree, index: jax.Array):
    return jax.tree_util.tree_map(lambda x: x[index], tree)


def _put(tree, index: jax.Array, values):
    return jax.tree_util.tree_map(lambda x, v: x.at[index].set(v), tree, values)


def slot_assignment(active: jax.Array, need: jax.Array, slots: int) -> jax.Array:
    """Indices (slots,) of the environments that get a bundle slot this step.

    Running bundles come first (their branch states exist only in their slots' results),
    then new triggers, each group in environment order; the rest of the slots hold
    environments that need nothing (their results equal the nominal step)."""
    rank = jnp.where(active, 0, jnp.where(need, 1, 2))
    return jnp.argsort(rank, stable=True)[:slots]


class BundledSim:
    """Batched rollout with plain, BCG or globally smoothed gradients."""

    def __init__(self, sim: MjxSim, config: BCGConfig = BCGConfig()) -> None:
        self.sim = sim
        self.config = config

    def trigger_threshold(self):
        """tau for BCG; -inf for global smoothing, which is BCG that always fires."""
        if self.config.mode == Estimator.GLOBAL_SMOOTHING:
            return -jnp.inf
        return self.config.force_threshold

    def with_sim(self, sim: MjxSim) -> "BundledSim":
        return BundledSim(sim, self.config)

    # -- reset ------------------------------------------------------------------------
    def reset(self, rngs: jax.Array) -> BundledState:
        """Batch of environments at the initial configuration; ``rngs`` is (K, key)."""
        return self.wrap(jax.vmap(self.sim.reset)(rngs))

    def wrap(self, sims: SimState) -> BundledState:
        """Adds an idle bundle to a batch of sim states (leading axis K)."""
        k = sims.step_count.shape[0]
        b = self.config.num_branches
        data = sims.data
        tile = lambda x: jnp.broadcast_to(x[:, None], (k, b) + x.shape[1:])
        bundle = BundleState(
            qpos=tile(data.qpos),
            qvel=tile(data.qvel),
            qacc_warmstart=tile(data.qacc_warmstart),
            act=tile(data.act),
            steps_left=jnp.zeros((k,), jnp.int32),
            started=jnp.zeros((k,), bool),
            bundled=jnp.zeros((k,), bool),
            num_started=jnp.zeros((k,), jnp.int32),
            overflowed=jnp.zeros((k,), bool),
        )
        return BundledState(sim=sims, bundle=bundle)

    # -- step -------------------------------------------------------------------------
    def step(self, state: BundledState, actions: jax.Array) -> BundledState:
        """One control step of the batch; ``actions`` is (K, nu)."""
        sim, cfg = self.sim, self.config
        q_target = jax.vmap(sim.position_targets)(actions)
        nominal_data, nominal_contact = jax.vmap(sim.control_step)(state.sim.data, q_target)
        nominal = jax.vmap(sim.with_step_result)(state.sim, nominal_data, nominal_contact, q_target)
        bundle = state.bundle
        if cfg.mode == Estimator.PLAIN:
            return BundledState(sim=nominal, bundle=_idle(bundle))

        active = bundle.steps_left > 0
        peak = jnp.max(nominal_contact.force_peak, axis=-1, initial=0.0)
        start = (~active) & (peak > self.trigger_threshold())
        need = active | start

        def bundled(_):
            slots = cfg.bundle_slots
            if slots == 0 or slots >= need.shape[0]:
                return self._bundled_step(state, nominal, nominal_contact, q_target, start, need)
            return self._slotted_step(state, nominal, nominal_contact, q_target, active, start, need, slots)

        def not_bundled(_):
            return BundledState(sim=nominal, bundle=_idle(bundle))

        return jax.lax.cond(jnp.any(need), bundled, not_bundled, None)

    def _slotted_step(self, state, nominal, nominal_contact, q_target, active, start, need, slots) -> BundledState:
        """The bundled step of at most ``slots`` environments, gathered and scattered back.

        Only the slotted environments run branches (``slots x B`` instead of ``K x B``).
        An environment that needs a bundle but gets no slot takes the plain nominal step,
        its bundle (if one was running) ends, and ``overflowed`` says so."""
        index = slot_assignment(active, need, slots)
        sub_state = BundledState(sim=_take(state.sim, index), bundle=_take(state.bundle, index))
        sub = self._bundled_step(
            sub_state, _take(nominal, index), _take(nominal_contact, index), q_target[index], start[index], need[index]
        )
        bundle = state.bundle
        no = jnp.zeros_like(bundle.started)
        base = BundledState(
            sim=nominal,
            bundle=dataclasses.replace(bundle, steps_left=jnp.zeros_like(bundle.steps_left), started=no, bundled=no, overflowed=need),
        )
        return BundledState(sim=_put(base.sim, index, sub.sim), bundle=_put(base.bundle, index, sub.bundle))

    def _bundled_step(self, state, nominal, nominal_contact, q_target, start, need) -> BundledState:
        sim, cfg = self.sim, self.config
        bundle = state.bundle
        b = cfg.num_branches
        pre = state.sim.data

        # new bundles: offsets around the pre-step state, Jacobian at the nominal step's
        # contact candidates and kinematics (both from its last substep).
        keys = jax.vmap(jax.random.split)(state.sim.rng)
        rng_next, offset_keys = keys[:, 0], keys[:, 1]
        offsets = functools.partial(
            joint_space_offsets,
            sim.mj_model,
            sim.model,
            num_branches=b,
            sigma_p=cfg.sigma_p,
            sigma_v=cfg.sigma_v,
            damping=cfg.damping,
        )
        dq, dqd = jax.vmap(lambda kin, f, key: offsets(kin, f, key))(
            nominal.data, nominal_contact.force_peak, offset_keys
        )
        perturb = jax.vmap(jax.vmap(lambda qpos, d: integrate_configuration(sim.mj_model, qpos, d), (None, 0)))
        fresh = BundleState(
            qpos=perturb(pre.qpos, dq),
            qvel=pre.qvel[:, None] + dqd,
            qacc_warmstart=jnp.broadcast_to(pre.qacc_warmstart[:, None], dq.shape),
            act=jnp.broadcast_to(pre.act[:, None], (pre.act.shape[0], b) + pre.act.shape[1:]),
            steps_left=bundle.steps_left,
            started=start,
            bundled=need,
            num_started=bundle.num_started,
            overflowed=jnp.zeros_like(need),
        )
        branches_in = _select(start, fresh, bundle)

        # B branches per environment, same targets.
        def branch_data(data, qpos, qvel, warm, act):
            return data.replace(qpos=qpos, qvel=qvel, qacc_warmstart=warm, act=act)

        data_in = jax.vmap(jax.vmap(branch_data, (None, 0, 0, 0, 0)))(
            pre, branches_in.qpos, branches_in.qvel, branches_in.qacc_warmstart, branches_in.act
        )
        data_out, contact_out = jax.vmap(jax.vmap(sim.control_step, (0, None)))(data_in, q_target)

        mean_data = branch_mean(data_out)
        mean_contact = branch_mean(contact_out)
        if cfg.forward == BundleForward.NOMINAL:
            mean_data = straight_through(nominal.data, mean_data)
            mean_contact = jax.lax.stop_gradient(
                ContactSummary(force=nominal_contact.force, force_peak=nominal_contact.force_peak, impulse=nominal_contact.impulse)
            )
        bundled_sim = jax.vmap(sim.with_step_result)(state.sim, mean_data, mean_contact, q_target)
        new_sim = _select(need, bundled_sim, nominal)
        new_sim = new_sim.replace(rng=_select(start, rng_next, state.sim.rng))

        steps_left = jnp.where(start, cfg.bundle_steps - 1, jnp.maximum(bundle.steps_left - 1, 0))
        new_bundle = BundleState(
            qpos=_select(need, data_out.qpos, bundle.qpos),
            qvel=_select(need, data_out.qvel, bundle.qvel),
            qacc_warmstart=_select(need, data_out.qacc_warmstart, bundle.qacc_warmstart),
            act=_select(need, data_out.act, bundle.act),
            steps_left=jnp.where(need, steps_left, 0),
            started=start,
            bundled=need,
            num_started=bundle.num_started + start.astype(jnp.int32),
            overflowed=jnp.zeros_like(need),
        )
        return BundledState(sim=new_sim, bundle=new_bundle)
