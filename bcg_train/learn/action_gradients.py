"""Where an iteration's actor gradient comes from, and reweighting it per environment.

The window's action gradient ``dL/da`` (T, K, A) is the gradient of SHAC's actor loss with
respect to every action taken; the actor gradient is it chained through the policy
(:func:`actor_gradient_from_actions`). :func:`action_gradient_spread` says how it spreads
over the K environments (metrics of every iteration); :func:`cap_environment_gradients`
caps each environment's share (``shac.env_gradient_cap``). Pure functions of arrays.
"""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp

from bcg_train.learn.networks import RunningStats, policy_action

Params = Any


def environment_sq_norms(action_gradient: jax.Array) -> jax.Array:
    """(K,) squared norm of each environment's window (its T x A block) of ``action_gradient`` (T, K, A)."""
    return jnp.sum(action_gradient**2, axis=(0, 2))


def action_gradient_spread(
    action_gradient: jax.Array, done: jax.Array, terminated: jax.Array, bundled: jax.Array | None = None
) -> dict[str, jax.Array]:
    """How the window's action gradient ``dL/da`` (T, K, A; the gradient of the actor loss
    with respect to every action taken, which the actor gradient chains through the policy)
    spreads over the K environments:

    * ``action_grad_norm``: its norm;
    * ``action_grad_top_env_share``: the share of its squared norm that the largest
      environment carries (1/K spread evenly, 1 all in one environment);
    * ``action_grad_top_env_ended``: 1 if that environment's episode ended in the window
      (``done``, T x K: a termination, a truncation or a simulation failure);
    * ``action_grad_top_env_terminated``: 1 if it ended by a termination (``terminated``:
      a fall, a lost reference or a simulation failure, not the time limit);
    * ``action_grad_top_env_bundled``: the fraction of its steps that were bundled (tasks
      with a per-environment ``bundled`` metric, T x K).
    """
    per_env = environment_sq_norms(action_gradient)
    total = jnp.sum(per_env)
    top = jnp.argmax(per_env)
    out = {
        "action_grad_norm": jnp.sqrt(total),
        "action_grad_top_env_share": jnp.where(total > 0, per_env[top] / total, 0.0),
        "action_grad_top_env_ended": jnp.any(done[:, top]).astype(jnp.float32),
        "action_grad_top_env_terminated": jnp.any(terminated[:, top]).astype(jnp.float32),
    }
    if bundled is not None:
        out["action_grad_top_env_bundled"] = jnp.mean(bundled[:, top])
    return out


def cap_environment_gradients(action_gradient: jax.Array, cap: float) -> jax.Array:
    """``action_gradient`` (T, K, A) with each environment's window (its T x A block) scaled
    to norm <= ``cap`` x the median of the K window norms: no environment's window weighs
    more than ``cap`` typical ones in the actor gradient. The median is computed over the
    finite norms; a non-finite window stays non-finite (the update is then skipped, counted)."""
    norms = jnp.sqrt(environment_sq_norms(action_gradient))
    limit = cap * jnp.nanmedian(jnp.where(jnp.isfinite(norms), norms, jnp.nan))
    scale = jnp.where(norms > limit, limit / jnp.maximum(norms, 1e-30), 1.0)
    return action_gradient * scale[None, :, None].astype(action_gradient.dtype)


def actor_gradient_from_actions(actor: Params, stats: RunningStats, obs: jax.Array, action_gradient: jax.Array,
                                obs_clip: float, action_clip: float) -> Params:
    """The actor gradient chained from the action gradient: ``sum_t,k (d pi(o_tk) / d theta)^T
    dL/da_tk`` over the window's observations ``obs`` (T, K, O) held fixed. Every path from the
    actor to the loss goes through an action, so with the window's own dL/da this is the
    actor gradient itself (a test checks it); with a reweighted one it is the gradient of
    the reweighted loss."""
    obs = jax.lax.stop_gradient(obs)
    _, vjp = jax.vjp(lambda p: policy_action(p, stats, obs, obs_clip, action_clip), actor)
    return vjp(action_gradient.astype(obs.dtype))[0]
