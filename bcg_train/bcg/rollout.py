"""Differentiable batched rollouts and the batching strategy for gradients.

Batching strategy (why not ``vmap(grad(loss))``): on this CPU ``vmap`` of a gradient
of an MJX rollout hung twice. We instead ``vmap`` (or batch explicitly) INSIDE the
loss and take ONE ``grad`` of the SUM of the per-environment losses. Every
environment gets its own copy of the differentiated input (open-loop actions of
shape (K, T, nu), or policy parameters tiled to (K, ...)), and environment k's loss
depends only on copy k, so the gradient of the sum with respect to copy k is exactly
environment k's own gradient: per-sample gradients from a single reverse pass over
one batched program. This is also the fast layout on a GPU: one large batched
forward and backward, no per-sample program transformation, and the BCG ``cond``
stays at batch level (outside every vmap) where XLA executes only the taken branch.
"""

from __future__ import annotations

from typing import Any, Callable

import jax
import jax.numpy as jnp

from bcg_train.bcg.bundle import BundledSim, BundledState
from bcg_train.bcg.config import Estimator
from bcg_train.sim.env import SimState

StepCost = Callable[[SimState, jax.Array], jax.Array]
"""Per-environment cost of one control step: (state after the step, action) -> scalar."""


def rollout_open_loop(
    bsim: BundledSim, state: BundledState, actions: jax.Array, step_cost: StepCost
) -> tuple[jax.Array, BundledState, jax.Array]:
    """Runs actions (K, T, nu); returns per-env summed cost (K,), final state and the
    number of physics substeps simulated for the whole batch (branches included)."""

    def body(carry, action_t):
        s = bsim.step(carry, action_t)
        cost = jax.vmap(step_cost)(s.sim, action_t)
        return s, (cost, bundled_count(s))

    final, (costs, bundled) = jax.lax.scan(body, state, jnp.swapaxes(actions, 0, 1))
    return jnp.sum(costs, axis=0), final, simulated_substeps(bsim, actions.shape[0], bundled)


def bundled_count(state: BundledState) -> jax.Array:
    """How many environments ran branches in the step that produced ``state`` (the slots in use)."""
    return jnp.sum(state.bundle.bundled.astype(jnp.int32))


def simulated_substeps(bsim: BundledSim, num_envs: int, bundled_per_step: jax.Array) -> jax.Array:
    """Physics substeps the batch simulated, given the environments bundled in each step: the
    step runs whole chunks of ``num_envs`` rows (:class:`BundledSim`), the nominal chunk and
    ceil(bundled x B / K) branch chunks (it charged K x B rows for any bundled step before)."""
    n = bsim.sim.n_substeps
    branch_chunks = -(-(bundled_per_step.astype(jnp.int32) * bsim.config.num_branches) // num_envs)
    return (bundled_per_step.shape[0] + jnp.sum(branch_chunks)) * num_envs * n


def grad_through_rollout(fun: Callable[..., tuple[jax.Array, Any]]) -> Callable[..., tuple[Any, Any]]:
    """``g(x, start, *args) -> (d fun / d x, aux)`` for ``fun(x, start, *args) -> (scalar, aux)``,
    a rollout (``lax.scan``) from ``start``. The start is differentiated as well and its
    gradient dropped: from a constant start, lax.scan's linearization finds the state's
    tangent nonzero after one step and linearizes the whole body (the physics step and its
    bundles) a second time to reach its fixpoint. The gradient with respect to ``x`` is the
    same bit for bit (docs/results/trace-fixpoint-2026-12-06/; SHAC does the same with
    ``value_and_grad``, :meth:`bcg_train.learn.shac.SHAC.iteration`)."""
    grad = jax.grad(fun, argnums=(0, 1), has_aux=True, allow_int=True)

    def grad_x(x, start, *args):
        (g_x, _), aux = grad(x, start, *args)
        return g_x, aux

    return grad_x


def per_env_action_gradients(
    bsim: BundledSim, state: BundledState, actions: jax.Array, step_cost: StepCost
) -> tuple[jax.Array, tuple[jax.Array, jax.Array]]:
    """Per-environment gradients d cost_k / d actions_k, shape (K, T, nu), via one
    ``grad`` of the batch sum. Also returns the per-env costs and simulated substeps."""

    def total(a, start):
        costs, _, substeps = rollout_open_loop(bsim, start, a, step_cost)
        return jnp.sum(costs), (costs, substeps)

    return grad_through_rollout(total)(actions, state)
