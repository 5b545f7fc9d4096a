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
   sensitivities backward; the free and ball joints' quaternions in ``qpos`` are then
   scaled back to unit norm (:func:`~bcg_train.bcg.perturbation.normalize_quaternions`). With ``forward = NOMINAL`` the value is the nominal step
   and only the derivative is the branch mean.

With ``bundle_slots = M > 0`` only M environments run branches: those with a running
bundle first, then new triggers in environment order (:func:`slot_assignment`). A trigger
beyond M takes the plain step and is counted in ``overflowed``; so is a running bundle
beyond M, which then ends early. Backward, an overflowing step passes the plain stiff-contact
gradient, or with ``overflow = CUT`` nothing (its environment's state is cut from the graph).

**One physics program.** The nominal step and the branches are rows of one table,
simulated in chunks of K rows by one ``vmap``-ed control step under ``lax.scan``: chunk 0
holds the K nominal rows; after it, :meth:`BundledSim._plan` decides the triggers, assigns
the slots and writes each slot's B branch inputs into the rows that follow (slot-major,
``ceil(M B / K)`` chunks). A chunk whose rows are all unused is skipped by a ``lax.cond``
(forward and backward), so the branch work is proportional to the slots in use, rounded up
to whole chunks, and a step where nothing triggers simulates only the nominal chunk. The
compiled program holds the control step once, where a nominal step beside a bundled
``cond`` held it twice; what it has beyond the plain program is the bundle's bookkeeping
(compile 1.8x plain on the hopper, 2.4x on the G1 squat, from 2.9x and 3.3x; README,
"Training throughput"). Environments that are not bundled
select their nominal step with ``where``. The mean is taken as ``x_0 + mean_i(x_i - x_0)``,
exact when the branches coincide (zero sigma), so zero-sigma BCG reproduces the plain
forward pass up to float32 rounding.
"""

from __future__ import annotations

import dataclasses
import functools

import jax
import jax.numpy as jnp

from bcg_train.bcg.config import BCGConfig, BundleForward, Estimator, Overflow
from bcg_train.bcg.perturbation import integrate_configuration, joint_space_offsets, normalize_quaternions
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


@functools.partial(
    jax.tree_util.register_dataclass, data_fields=["qpos", "qvel", "qacc_warmstart", "act", "time", "env", "used"], meta_fields=[]
)
@dataclasses.dataclass(frozen=True)
class _Rows:
    """Physics inputs of one control step's rows: the K nominal rows, then the branch rows."""

    qpos: jax.Array
    qvel: jax.Array
    qacc_warmstart: jax.Array
    act: jax.Array
    time: jax.Array
    env: jax.Array  # the environment whose pre-step data and targets the row takes
    used: jax.Array  # the row's result is used (a chunk without one is not simulated)


@functools.partial(jax.tree_util.register_dataclass, data_fields=["index", "start", "need", "rng"], meta_fields=[])
@dataclasses.dataclass(frozen=True)
class _Plan:
    index: jax.Array  # (M,) the environments in the bundle slots
    start: jax.Array  # (K,) a bundle starts
    need: jax.Array  # (K,) a bundle starts or runs
    rng: jax.Array  # (K,) keys after the new bundles drew their offsets


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

    @staticmethod
    def add_qvel(state: BundledState, delta: jax.Array) -> BundledState:
        """Adds ``delta`` (K, nv) to each environment's velocity, in its bundle's branches too:
        a running bundle continues from its branch states, not from the environment's (their
        mean), so a push applied to the environment alone was lost at the next step."""
        data = state.sim.data
        sim = state.sim.replace(data=data.replace(qvel=data.qvel + delta))
        return BundledState(sim=sim, bundle=dataclasses.replace(state.bundle, qvel=state.bundle.qvel + delta[:, None]))

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
        if cfg.mode == Estimator.PLAIN:
            nominal_data, nominal_contact = jax.vmap(sim.control_step)(state.sim.data, q_target)
            nominal = jax.vmap(sim.with_step_result)(state.sim, nominal_data, nominal_contact, q_target)
            return BundledState(sim=nominal, bundle=_idle(state.bundle))
        return self._bundled_step(state, q_target)

    def _slots(self, num_envs: int) -> int:
        slots = self.config.bundle_slots
        return slots if 0 < slots < num_envs else num_envs

    def _bundled_step(self, state: BundledState, q_target: jax.Array) -> BundledState:
        """Nominal step and branches as chunks of one physics program (module docstring)."""
        sim, cfg = self.sim, self.config
        pre, bundle = state.sim.data, state.bundle
        k, b = q_target.shape[0], cfg.num_branches
        m = self._slots(k)
        chunks = 1 + -(-(m * b) // k)
        env = jnp.concatenate([jnp.arange(k, dtype=jnp.int32), jnp.zeros(((chunks - 1) * k,), jnp.int32)])
        # a running bundle that keeps its slot (slot_assignment puts running bundles first, so
        # which ones keep theirs is known before the nominal step) continues from its branches,
        # and its nominal row's result is discarded; cut that row's input from the gradient, or a
        # row that blows up while the branches do not sends NaN (0 x inf) back into the state
        running = bundle.steps_left > 0
        discarded = running & jnp.zeros((k,), bool).at[slot_assignment(running, running, m)].set(True)
        nominal_in = lambda x: _select(discarded, jax.lax.stop_gradient(x), x)  # noqa: E731
        rows = _Rows(
            qpos=nominal_in(pre.qpos)[env], qvel=nominal_in(pre.qvel)[env], qacc_warmstart=nominal_in(pre.qacc_warmstart)[env],
            act=nominal_in(pre.act)[env], time=pre.time[env], env=env, used=jnp.arange(chunks * k) < k,
        )
        # the fields a chunk does not fill in come from the environment at the row's position,
        # which is not the branch's own in chunks past the first: no gradient through them, or
        # one environment's branch sensitivity lands on another's applied forces (a per-environment
        # state-gradient clip then judged the wrong environment, and a NaN there skipped the update)
        frozen = jax.lax.stop_gradient(pre)
        zero = jnp.zeros_like(state.sim.info["contact_force"])  # (K, ncon)
        no_contact = ContactSummary(force=zero, force_peak=zero, impulse=zero)
        no = jnp.zeros((k,), bool)
        plan = _Plan(index=jnp.zeros((m,), jnp.int32), start=no, need=no, rng=state.sim.rng)

        def chunk(carry, i):
            rows, plan = carry
            part = lambda x: jax.lax.dynamic_slice_in_dim(x, i * k, k)
            # a physics step reads only these fields of its input and derives the rest
            # (MjxSim.reset_to), so every chunk fills them into the pre-step batch instead of
            # gathering whole states; the applied-force inputs (qfrc_applied, xfrc_applied)
            # would come from the chunk position's environment: no task sets them
            data_in = frozen.replace(
                qpos=part(rows.qpos), qvel=part(rows.qvel), qacc_warmstart=part(rows.qacc_warmstart), act=part(rows.act),
                time=part(rows.time),
            )
            targets = q_target[part(rows.env)]
            out = jax.lax.cond(
                jnp.any(part(rows.used)),
                lambda d: jax.vmap(sim.control_step)(d, targets),
                lambda d: (d, no_contact),
                data_in,
            )
            rows, plan = jax.lax.cond(i == 0, lambda c: self._plan(state, out[0], out[1], c[0], m), lambda c: c, (rows, plan))
            return (rows, plan), out

        (_, plan), (data_out, contact_out) = jax.lax.scan(chunk, (rows, plan), jnp.arange(chunks))
        first = lambda y: y[0]
        nominal_data = jax.tree_util.tree_map(first, data_out)
        nominal_contact = jax.tree_util.tree_map(first, contact_out)
        nominal = jax.vmap(sim.with_step_result)(state.sim, nominal_data, nominal_contact, q_target)

        def branches(y):  # rows k .. k + m b, slot-major -> (m, b, ...)
            flat = y[1:].reshape(((chunks - 1) * k,) + y.shape[2:])
            return flat[: m * b].reshape((m, b) + y.shape[2:])

        branch_data = jax.tree_util.tree_map(branches, data_out)
        branch_contact = jax.tree_util.tree_map(branches, contact_out)
        index = plan.index
        start, need = plan.start[index], plan.need[index]
        mean_data, mean_contact = branch_mean(branch_data), branch_mean(branch_contact)
        mean_data = mean_data.replace(qpos=normalize_quaternions(sim.mj_model, mean_data.qpos))
        if cfg.forward == BundleForward.NOMINAL:
            mean_data = straight_through(_take(nominal_data, index), mean_data)
            mean_contact = jax.lax.stop_gradient(_take(nominal_contact, index))
        bundled_sim = jax.vmap(sim.with_step_result)(_take(state.sim, index), mean_data, mean_contact, q_target[index])
        slot_sim = _select(need, bundled_sim, _take(nominal, index))
        new_sim = _put(nominal, index, slot_sim).replace(rng=plan.rng)

        old = _take(bundle, index)
        steps_left = jnp.where(start, cfg.bundle_steps - 1, jnp.maximum(old.steps_left - 1, 0))
        slot_bundle = BundleState(
            qpos=_select(need, branch_data.qpos, old.qpos),
            qvel=_select(need, branch_data.qvel, old.qvel),
            qacc_warmstart=_select(need, branch_data.qacc_warmstart, old.qacc_warmstart),
            act=_select(need, branch_data.act, old.act),
            steps_left=jnp.where(need, steps_left, 0),
            started=start,
            bundled=need,
            num_started=old.num_started + start.astype(jnp.int32),
            overflowed=jnp.zeros_like(need),
        )
        # an environment without a slot steps plain: its bundle (if any) ends, and a need is counted
        base = dataclasses.replace(bundle, steps_left=jnp.zeros_like(bundle.steps_left), started=no, bundled=no, overflowed=plan.need)
        new_bundle = _put(base, index, slot_bundle)
        if cfg.overflow == Overflow.CUT:
            new_sim = _select(new_bundle.overflowed, jax.lax.stop_gradient(new_sim), new_sim)
        return BundledState(sim=new_sim, bundle=new_bundle)

    def _plan(self, state: BundledState, nominal_data, nominal_contact: ContactSummary, rows: "_Rows", m: int):
        """After the nominal chunk: who needs a bundle, the slots, and the slots' branch inputs
        written into ``rows`` (rows ``K + s B .. K + (s + 1) B`` are slot ``s``'s branches)."""
        sim, cfg = self.sim, self.config
        pre, bundle = state.sim.data, state.bundle
        k, b = nominal_contact.force_peak.shape[0], cfg.num_branches
        active = bundle.steps_left > 0
        peak = jnp.max(nominal_contact.force_peak, axis=-1, initial=0.0)
        start = (~active) & (peak > self.trigger_threshold())
        need = active | start
        index = slot_assignment(active, need, m).astype(jnp.int32)  # int64 under jax_enable_x64

        # new bundles: offsets around the pre-step state, Jacobian at the nominal step's
        # contact candidates and kinematics (both from its last substep).
        keys = jax.vmap(jax.random.split)(state.sim.rng[index])
        rng_next, offset_keys = keys[:, 0], keys[:, 1]
        offsets = functools.partial(
            joint_space_offsets, sim.mj_model, sim.model, num_branches=b, sigma_p=cfg.sigma_p, sigma_v=cfg.sigma_v,
            damping=cfg.damping,
        )
        dq, dqd = jax.vmap(offsets)(_take(nominal_data, index), nominal_contact.force_peak[index], offset_keys)
        perturb = jax.vmap(jax.vmap(lambda qpos, d: integrate_configuration(sim.mj_model, qpos, d), (None, 0)))
        tile = lambda x: jnp.broadcast_to(x[:, None], (m, b) + x.shape[1:])
        unperturbed = (tile(pre.qpos[index]), tile(pre.qvel[index]), tile(pre.qacc_warmstart[index]), tile(pre.act[index]))
        perturbed = (perturb(pre.qpos[index], dq), pre.qvel[index][:, None] + dqd) + unperturbed[2:]
        old = _take(bundle, index)
        # a running bundle continues from its branches, a new one from the perturbed pre-step
        # state; a slot that needs nothing runs only if its chunk does, and its result is
        # discarded: it repeats the nominal step, so its rows cannot blow up and send NaN
        # (0 x inf) back into a healthy environment's gradient
        inputs = _select(active[index], (old.qpos, old.qvel, old.qacc_warmstart, old.act),
                         _select(start[index], perturbed, unperturbed))
        put = lambda buffer, x: buffer.at[k : k + m * b].set(x.reshape((m * b,) + x.shape[2:]))
        rows = _Rows(
            qpos=put(rows.qpos, inputs[0]), qvel=put(rows.qvel, inputs[1]), qacc_warmstart=put(rows.qacc_warmstart, inputs[2]),
            act=put(rows.act, inputs[3]), time=put(rows.time, tile(pre.time[index])),
            env=rows.env.at[k : k + m * b].set(jnp.repeat(index, b)),
            used=rows.used.at[k : k + m * b].set(jnp.repeat(need[index], b)),
        )
        rng = state.sim.rng.at[index].set(_select(start[index], rng_next, state.sim.rng[index]))
        return rows, _Plan(index=index, start=start, need=need, rng=rng)
