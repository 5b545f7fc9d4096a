"""Gradient diagnostics over K perturbed starts: how usable is an estimator's gradient?

For an open-loop action sequence or a policy, the per-start gradients g_1..g_K of the
rollout cost (taken as one ``grad`` of the batch sum, see
:mod:`bcg_train.bcg.rollout`) give:

* ``mean_gradient``: (1/K) sum_k g_k;
* ``covariance_trace``: trace of the sample covariance, sum_k |g_k - mean|^2 / (K - 1);
* ``norm_cv``: coefficient of variation (std / mean) of the norms |g_k|;
* ``mean_cosine``: mean over k of cos(g_k, mean_gradient);
* ``num_nonfinite``: samples whose gradient is not finite (left out of the above);
* ``median_norm`` and ``max_norm_over_median``: how far the largest sample sits above a
  typical one. At stiff contact a few starts carry most of the trace (measured on the G1
  landing in float64: the largest of 32 norms 53-56x the median), so a trace ratio between two
  estimators moves with those starts; :func:`paired_variance_ratio_interval` says how much;
* wall time per gradient (compile excluded) and physics substeps simulated per
  gradient (branches included).
"""

from __future__ import annotations

import dataclasses
import functools
import time
from typing import Callable

import jax
import jax.numpy as jnp
import numpy as np

from bcg_train.bcg.bundle import BundledSim, BundledState
from bcg_train.bcg.config import Estimator
from bcg_train.bcg.perturbation import integrate_configuration
from bcg_train.bcg.rollout import StepCost, bundled_count, grad_through_rollout, rollout_open_loop, simulated_substeps
from bcg_train.sim.env import SimState


@dataclasses.dataclass(frozen=True)
class GradientStatistics:
    estimator: str
    num_samples: int
    num_nonfinite: int  # samples left out of the statistics (NaN/inf gradient)
    mean_gradient: np.ndarray
    covariance_trace: float
    norm_cv: float
    mean_cosine: float
    wall_time_per_gradient_s: float
    simulated_steps_per_gradient: float
    mean_cost: float
    bundles_per_rollout: float
    compile_time_s: float
    median_norm: float = float("nan")
    max_norm_over_median: float = float("nan")
    samples: np.ndarray | None = None  # (K, D) per-start gradients, non-finite rows included

    def summary(self) -> dict:
        """JSON-ready scalars (the mean gradient is reduced to its norm, the samples left out)."""
        out = {f.name: getattr(self, f.name) for f in dataclasses.fields(self) if f.name not in ("mean_gradient", "samples")}
        out["mean_gradient_norm"] = float(np.linalg.norm(self.mean_gradient))
        return out


def sample_statistics(gradients: np.ndarray) -> tuple[np.ndarray, float, float, float]:
    """(mean, covariance trace, norm CV, mean cosine to the mean) of (K, ...) gradients."""
    g = np.asarray(gradients, dtype=np.float64).reshape(gradients.shape[0], -1)
    k = g.shape[0]
    if k < 2:
        raise ValueError("need at least two gradient samples")
    mean = g.mean(axis=0)
    covariance_trace = float(np.sum((g - mean) ** 2) / (k - 1))
    norms = np.linalg.norm(g, axis=1)
    norm_cv = float(norms.std(ddof=1) / norms.mean()) if norms.mean() > 0 else float("nan")
    mean_norm = np.linalg.norm(mean)
    denom = np.maximum(norms * mean_norm, np.finfo(np.float64).tiny)
    mean_cosine = float(np.mean(g @ mean / denom))
    return mean, covariance_trace, norm_cv, mean_cosine


def paired_variance_ratio_interval(
    reference: np.ndarray, other: np.ndarray, level: float = 0.9, resamples: int = 2000, seed: int = 0
) -> tuple[float, float]:
    """Bootstrap interval of trace(cov(reference)) / trace(cov(other)) over paired samples.

    Row k of both arrays is the gradient from start k, so the starts are resampled jointly
    (one index draw serves both traces): the interval is that of the ratio on these starts,
    not of two independent estimates. Rows not finite in both are left out. Percentile
    interval at ``level``; resamples whose ``other`` trace is 0 are dropped.
    """
    a = np.asarray(reference, np.float64).reshape(np.shape(reference)[0], -1)
    b = np.asarray(other, np.float64).reshape(np.shape(other)[0], -1)
    if a.shape[0] != b.shape[0]:
        raise ValueError(f"paired samples need the same starts: {a.shape[0]} vs {b.shape[0]}")
    keep = np.all(np.isfinite(a), axis=1) & np.all(np.isfinite(b), axis=1)
    a, b = a[keep], b[keep]
    k = a.shape[0]
    if k < 2:
        return float("nan"), float("nan")
    index = np.random.default_rng(seed).integers(0, k, size=(resamples, k))

    def traces(x):
        out = []
        for rows in np.array_split(index, max(1, resamples // 100)):  # bounded memory: (~100, k, D) at a time
            draws = x[rows]
            centred = draws - draws.mean(axis=1, keepdims=True)
            out.append(np.sum(centred**2, axis=(1, 2)) / (k - 1))
        return np.concatenate(out)

    ta, tb = traces(a), traces(b)
    ok = tb > 0
    ratios = ta[ok] / tb[ok]
    if ratios.size == 0:
        return float("nan"), float("nan")
    tail = 100 * (1 - level) / 2
    low, high = np.percentile(ratios, [tail, 100 - tail])
    return float(low), float(high)


def perturbed_starts(bsim: BundledSim, num_starts: int, qpos_noise: float, rng: jax.Array) -> BundledState:
    """K copies of the sim's initial state, configurations offset by N(0, qpos_noise^2)
    in every tangent direction (quaternions via the exponential map)."""
    sim = bsim.sim
    key_noise, key_envs = jax.random.split(rng)
    states = jax.vmap(sim.reset)(jax.random.split(key_envs, num_starts))
    dq = qpos_noise * jax.random.normal(key_noise, (num_starts, sim.mj_model.nv), sim.dtype)
    qpos = jax.vmap(lambda q, d: integrate_configuration(sim.mj_model, q, d))(states.data.qpos, dq)
    return bsim.wrap(states.replace(data=states.data.replace(qpos=qpos)))


def make_open_loop_gradient_fn(bsim: BundledSim, step_cost: StepCost) -> Callable:
    """Jitted ``f(geom_solref, geom_solimp, force_threshold, start, actions) -> (grads,
    costs, substeps, bundles)``.

    Contact parameters and the trigger threshold are arguments, so one compile serves
    every contact preset of a model (same structure and flags, other solref/solimp),
    and BCG and global smoothing (BCG with threshold -inf) share one program.
    """
    bundled = bsim.config.mode != Estimator.PLAIN
    mode = Estimator.BCG if bundled else Estimator.PLAIN

    def gradients(geom_solref, geom_solimp, force_threshold, start: BundledState, actions: jax.Array):
        config = dataclasses.replace(bsim.config, mode=mode, force_threshold=force_threshold)
        b = BundledSim(bsim.sim.with_contact_params(geom_solref, geom_solimp), config)

        def total(a, s0):
            costs, final, substeps = rollout_open_loop(b, s0, a, step_cost)
            return jnp.sum(costs), (costs, substeps, final.bundle.num_started)

        grads, (costs, substeps, bundles) = grad_through_rollout(total)(actions, start)
        return grads, costs, substeps, bundles

    return jax.jit(gradients)


def open_loop_gradient_statistics(
    bsim: BundledSim,
    start: BundledState,
    actions: jax.Array,
    step_cost: StepCost,
    repeats: int = 1,
    gradient_fn: Callable | None = None,
    geom_solref: jax.Array | None = None,
    geom_solimp: jax.Array | None = None,
) -> GradientStatistics:
    """Statistics of d cost / d actions over the K starts in ``start``.

    ``actions`` is one (T, nu) sequence shared by all starts (tiled to (K, T, nu), one
    differentiated copy per start). ``gradient_fn`` (from
    :func:`make_open_loop_gradient_fn`) lets several calls share one compile.
    """
    fn = gradient_fn or make_open_loop_gradient_fn(bsim, step_cost)
    solref = bsim.sim.model.geom_solref if geom_solref is None else geom_solref
    solimp = bsim.sim.model.geom_solimp if geom_solimp is None else geom_solimp
    threshold = jnp.asarray(bsim.trigger_threshold(), bsim.sim.dtype)
    k = start.sim.step_count.shape[0]
    tiled = jnp.broadcast_to(jnp.asarray(actions, bsim.sim.dtype), (k,) + tuple(actions.shape))
    t0 = time.perf_counter()
    jax.block_until_ready(fn(solref, solimp, threshold, start, tiled))
    compile_time = time.perf_counter() - t0
    t0 = time.perf_counter()
    for _ in range(repeats):
        grads, costs, substeps, bundles = jax.block_until_ready(fn(solref, solimp, threshold, start, tiled))
    elapsed = (time.perf_counter() - t0) / repeats
    return _statistics(bsim, grads, costs, substeps, bundles, elapsed, compile_time)


def policy_gradient_statistics(
    bsim: BundledSim,
    start: BundledState,
    policy: Callable[[object, jax.Array], jax.Array],
    observe: Callable[[SimState], jax.Array],
    params,
    horizon: int,
    step_cost: StepCost,
    repeats: int = 1,
) -> GradientStatistics:
    """Statistics of d cost / d params of ``policy(params, observe(state)) -> action``
    over the K starts; params are tiled to one differentiated copy per start."""
    k = start.sim.step_count.shape[0]
    tiled = jax.tree_util.tree_map(lambda p: jnp.broadcast_to(p, (k,) + jnp.shape(p)), params)

    def total(params_k, start):
        def body(s, _):
            actions = jax.vmap(policy)(params_k, jax.vmap(observe)(s.sim))
            s = bsim.step(s, actions)
            return s, (jax.vmap(step_cost)(s.sim, actions), bundled_count(s))

        final, (costs, bundled) = jax.lax.scan(body, start, None, length=horizon)
        per_env = jnp.sum(costs, axis=0)
        return jnp.sum(per_env), (per_env, simulated_substeps(bsim, k, bundled), final.bundle.num_started)

    fn = jax.jit(functools.partial(grad_through_rollout(total), start=start))
    t0 = time.perf_counter()
    jax.block_until_ready(fn(tiled))
    compile_time = time.perf_counter() - t0
    t0 = time.perf_counter()
    for _ in range(repeats):
        grads, (costs, substeps, bundles) = jax.block_until_ready(fn(tiled))
    elapsed = (time.perf_counter() - t0) / repeats
    flat = jnp.concatenate([g.reshape(k, -1) for g in jax.tree_util.tree_leaves(grads)], axis=1)
    return _statistics(bsim, flat, costs, substeps, bundles, elapsed, compile_time)


def _statistics(bsim, grads, costs, substeps, bundles, elapsed, compile_time) -> GradientStatistics:
    """Statistics over the finite gradient samples; non-finite ones are counted."""
    g = np.asarray(grads).reshape(np.shape(grads)[0], -1)
    k = g.shape[0]
    finite = np.all(np.isfinite(g), axis=1)
    if finite.sum() >= 2:
        mean, trace, cv, cosine = sample_statistics(g[finite])
        norms = np.linalg.norm(np.asarray(g[finite], np.float64), axis=1)
        median = float(np.median(norms))
        spread = float(norms.max() / median) if median > 0 else float("nan")
    else:
        mean, trace, cv, cosine = np.full(g.shape[1], np.nan), float("nan"), float("nan"), float("nan")
        median, spread = float("nan"), float("nan")
    return GradientStatistics(
        estimator=bsim.config.mode.value,
        num_samples=k,
        num_nonfinite=int(k - finite.sum()),
        mean_gradient=mean,
        covariance_trace=trace,
        norm_cv=cv,
        mean_cosine=cosine,
        wall_time_per_gradient_s=elapsed / k,
        simulated_steps_per_gradient=float(substeps) / k,
        mean_cost=float(np.mean(np.asarray(costs))),
        bundles_per_rollout=float(np.mean(np.asarray(bundles))),
        compile_time_s=compile_time,
        median_norm=median,
        max_norm_over_median=spread,
        samples=np.asarray(g, np.float64),
    )
