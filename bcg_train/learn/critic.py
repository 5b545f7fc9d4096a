"""SHAC's critic ensemble: its input, its values, TD(lambda) targets and how well it predicts them.
Pure functions of arrays and parameter pytrees."""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp

from bcg_train.learn.networks import RunningStats, mlp_apply

Params = Any


def critic_input(stats: RunningStats, obs: jax.Array, privileged: jax.Array, obs_clip: float) -> jax.Array:
    """What the critics see: the actor's normalized observation, then the task's privileged
    inputs as they come (scaled to order one by the task; width 0 for a task without)."""
    return jnp.concatenate([stats.normalize(obs, obs_clip), privileged.astype(obs.dtype)], axis=-1)


def ensemble_values(critics: Params, obs: jax.Array) -> jax.Array:
    """Values of every critic of the ensemble, shape (num_critics, ...)."""
    return jax.vmap(lambda p: mlp_apply(p, obs)[..., 0])(critics)


def explained_variance(predicted: jax.Array, target: jax.Array) -> jax.Array:
    """``1 - Var(target - predicted) / Var(target)``: 1 for a perfect value estimate, 0 for
    one no better than the targets' mean, negative for worse (NaN if the targets are constant)."""
    return 1.0 - jnp.var(target - predicted) / jnp.var(target)


def critic_diagnostics(critics: Params, normalized_obs: jax.Array, targets: jax.Array) -> dict[str, jax.Array]:
    """How well ``critics`` (before they fit this window) predict the window's TD targets:
    the ensemble's mean squared error (``critic_loss_fresh``, the error on data they have not
    seen, unlike ``critic_loss`` after fitting), the explained variance of their mean
    (``critic_explained_variance``) and the targets' mean (``value_target_mean``, the
    value scale)."""
    values = ensemble_values(critics, normalized_obs)
    return {
        "critic_loss_fresh": jnp.mean((values - targets[None]) ** 2),
        "critic_explained_variance": explained_variance(jnp.mean(values, axis=0), targets),
        "value_target_mean": jnp.mean(targets),
    }


def td_lambda_returns(
    rewards: jax.Array, next_values: jax.Array, continues: jax.Array, gamma: float, lam: float
) -> jax.Array:
    """TD(lambda) returns over a window, all arrays (T, K).

    ``next_values[t]``: value of the state after step t (0 after a termination, the
    pre-reset value after a truncation); ``continues[t]``: 0 where the episode ended
    at step t, so the lambda-return does not reach into the next episode.
    ``G_t = r_t + gamma ((1 - lam c_t) V_{t+1} + lam c_t G_{t+1})``, ``G_T = V_T``.
    """

    def back(g_next, x):
        r, v, c = x
        g = r + gamma * ((1.0 - lam * c) * v + lam * c * g_next)
        return g, g

    _, returns = jax.lax.scan(back, next_values[-1], (rewards, next_values, continues), reverse=True)
    return returns
