"""Simulation failures: states no physical motion reaches, caught in the step they appear.

An explicit (Euler) ``train`` model at stiff contact can blow up: one bad contact
solve and an environment's state runs to 1e8 m or NaN within a few steps. Such a state
must neither reach a metric nor the actor gradient. A task therefore steps its
simulator through :func:`guarded_step`, which reports, per environment, whether the
step produced a failed state (:func:`state_failed`: non-finite, or outside the
:class:`SimBounds`), and in the backward pass gives a failed environment a zero
cotangent for that step's input state and action. The zero is *selected*, not
multiplied in, so the NaN or inf that a blown-up step's Jacobian holds cannot leak into
the gradient (``0 * inf`` is NaN). What the environment earned before the failing step
keeps its gradient: it does not depend on that step.

The task then replaces the failed state with a fresh episode before it computes reward,
observation or metrics from it, terminates the episode (no bootstrap) and counts the
event in the ``sim_failures`` metric.
"""

from __future__ import annotations

from typing import Any, Callable

import jax
import jax.numpy as jnp
import numpy as np

from bcg_train.sim.bounds import SimBounds

__all__ = ["SIM_FAILURES", "SimBounds", "any_branch_failed", "cut_failed", "guarded_step", "state_failed"]

SIM_FAILURES = "sim_failures"  # metric: 1 where an environment's step failed (summed per iteration)


def state_failed(
    bounds: SimBounds,
    qpos: jax.Array,
    qvel: jax.Array,
    root_pos: jax.Array,
    root_vel: jax.Array,
    joint_vel: jax.Array,
    joint_speed_limit: Any,
    reference_root_pos: jax.Array | None = None,
) -> jax.Array:
    """(K,) bool: the state is non-finite or outside ``bounds``. ``root_pos`` (K, 1-3) with
    the height last, ``root_vel`` (K, 1-3), ``joint_vel`` (K, nj), ``joint_speed_limit`` (nj,)."""
    bad = ~(jnp.all(jnp.isfinite(qpos), axis=-1) & jnp.all(jnp.isfinite(qvel), axis=-1))
    if bounds.joint_speed_factor > 0:
        limit = bounds.joint_speed_factor * jnp.asarray(joint_speed_limit, jnp.float32)
        bad |= jnp.any(jnp.abs(joint_vel) > limit, axis=-1)
    if bounds.max_root_height > 0:
        bad |= root_pos[..., -1] > bounds.max_root_height
    if bounds.max_root_speed > 0:
        bad |= jnp.linalg.norm(root_vel, axis=-1) > bounds.max_root_speed
    if bounds.max_root_distance > 0 and reference_root_pos is not None:
        bad |= jnp.linalg.norm(root_pos - reference_root_pos, axis=-1) > bounds.max_root_distance
    # a NaN compares False everywhere above; the finite check has caught it
    return bad


def any_branch_failed(bundle: Any, failed: Callable[[jax.Array, jax.Array], jax.Array]) -> jax.Array:
    """(K,) bool: a branch of an environment's bundle, computed in this step, failed
    (``failed(qpos, qvel)`` on the (K B, n) branch states). The step's state is the branches'
    mean, which can stay inside the bounds while one branch of B has blown up (one at 6x the
    joint speed limit, nine at 1x: 1.5x on average); that branch's Jacobian would enter the
    environment's sensitivity, and a running bundle continues from each branch's own state."""
    k, b = bundle.qpos.shape[:2]
    bad = failed(bundle.qpos.reshape((k * b,) + bundle.qpos.shape[2:]), bundle.qvel.reshape((k * b,) + bundle.qvel.shape[2:]))
    return bundle.bundled & jnp.any(bad.reshape(k, b), axis=1)


def _is_float(x: Any) -> bool:
    return hasattr(x, "dtype") and jnp.issubdtype(x.dtype, jnp.floating)


def cut_failed(tree: Any, failed: jax.Array) -> Any:
    """``tree`` with the leading-axis rows of ``failed`` environments replaced by zeros
    (float leaves with that batch axis; other leaves unchanged)."""
    k = failed.shape[0]

    def cut(x):
        if not _is_float(x) or x.ndim == 0 or x.shape[0] != k:
            return x
        return jnp.where(failed.reshape((k,) + (1,) * (x.ndim - 1)), jnp.zeros_like(x), x)

    return jax.tree_util.tree_map(cut, tree)


def _zero_cotangent(tree: Any) -> Any:
    def zero(x):
        x = jnp.asarray(x)
        return jnp.zeros_like(x) if _is_float(x) else np.zeros(x.shape, jax.dtypes.float0)

    return jax.tree_util.tree_map(zero, tree)


def guarded_step(
    step: Callable[[Any, jax.Array, Any], Any], failed: Callable[[Any, Any], jax.Array]
) -> Callable[[Any, jax.Array, Any, Any], tuple[Any, jax.Array]]:
    """``run(state, action, params, aux) -> (next_state, failed)`` with ``next_state =
    step(state, action, params)`` and ``failed = failed(next_state, aux)`` ((K,) bool);
    backward, the cotangents of ``state`` and ``action`` are the step's own except for
    failed environments, whose are zero.

    ``params`` (e.g. a sampled model) and ``aux`` (e.g. the reference root position) are
    constants of the step, not differentiated (zero cotangent). Everything traced that
    the step uses must come in through them: a custom VJP may not close over a traced value
    (under ``lax.scan`` such a closure leaks out of the body's trace)."""

    @jax.custom_vjp
    def run(state, action, params, aux):
        out = step(state, action, params)
        return out, failed(out, aux)

    def forward(state, action, params, aux):
        out, vjp = jax.vjp(lambda s, a: step(s, a, params), state, action)
        bad = failed(out, aux)
        return (out, bad), (vjp, bad, params, aux)

    def backward(residuals, cotangents):
        vjp, bad, params, aux = residuals
        g_state, g_action = vjp(cotangents[0])
        return cut_failed(g_state, bad), cut_failed(g_action, bad), _zero_cotangent(params), _zero_cotangent(aux)

    run.defvjp(forward, backward)
    return run
