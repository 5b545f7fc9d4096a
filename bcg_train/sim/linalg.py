"""Small dense Cholesky factorization and solves in plain ``jax.numpy`` (no LAPACK call).

Why: on CPU, ``jax.scipy.linalg.cho_factor`` / ``solve_triangular`` / ``jnp.linalg.solve``
become jaxlib LAPACK custom calls, and under ``vmap`` their batched kernels split the batch
over XLA's intra-op thread pool (``ParallelBatchMap``) and block waiting for it. On the
2-core CI machine two such kernels running at once each hold one of the two pool threads
and wait for the other forever: SHAC's iteration hung in ``lapack_spotrf`` (Cholesky of
the Newton Hessian) and, with ``--xla_cpu_multi_thread_eigen=false``, in the batched
triangular solve. The matrices here are tiny (the G1's 35x35 Hessian,
3x3 Gram matrices), so column loops in ``jax.numpy`` cost little, batch cleanly under
``vmap`` and differentiate in reverse mode.

All functions take a symmetric positive-definite ``a`` of shape (n, n) and right-hand
sides ``b`` of shape (n,) or (n, k).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp


def cholesky(a: jax.Array) -> jax.Array:
    """Lower-triangular ``L`` with ``L @ L.T == a`` (right-looking, one column per step)."""
    n = a.shape[-1]
    index = jnp.arange(n)
    tiny = jnp.finfo(a.dtype).tiny

    def column(j, carry):
        rest, factor = carry
        pivot = jnp.sqrt(jnp.maximum(rest[j, j], tiny))
        col = jnp.where(index >= j, rest[:, j] / pivot, 0.0)
        return rest - jnp.outer(col, col), factor.at[:, j].set(col)

    _, factor = jax.lax.fori_loop(0, n, column, (a, jnp.zeros_like(a)))
    return factor


def solve_lower(factor: jax.Array, b: jax.Array) -> jax.Array:
    """``x`` with ``factor @ x == b`` for lower-triangular ``factor`` (forward substitution)."""
    n = factor.shape[-1]
    index = jnp.arange(n)
    expand = (lambda v: v[:, None]) if b.ndim == 2 else (lambda v: v)

    def row(j, rhs):
        x_j = rhs[j] / factor[j, j]
        rhs = rhs - expand(jnp.where(index > j, factor[:, j], 0.0)) * x_j
        return rhs.at[j].set(x_j)

    return jax.lax.fori_loop(0, n, row, b)


def solve_upper_transposed(factor: jax.Array, b: jax.Array) -> jax.Array:
    """``x`` with ``factor.T @ x == b`` for lower-triangular ``factor`` (back substitution)."""
    n = factor.shape[-1]
    index = jnp.arange(n)
    expand = (lambda v: v[:, None]) if b.ndim == 2 else (lambda v: v)

    def row(i, rhs):
        j = n - 1 - i
        x_j = rhs[j] / factor[j, j]
        rhs = rhs - expand(jnp.where(index < j, factor[j, :], 0.0)) * x_j
        return rhs.at[j].set(x_j)

    return jax.lax.fori_loop(0, n, row, b)


def cho_solve(factor: jax.Array, b: jax.Array) -> jax.Array:
    """``x`` with ``a @ x == b`` given ``factor = cholesky(a)``."""
    return solve_upper_transposed(factor, solve_lower(factor, b))


def spd_solve(a: jax.Array, b: jax.Array) -> jax.Array:
    """``x`` with ``a @ x == b`` for symmetric positive-definite ``a``."""
    return cho_solve(cholesky(a), b)
