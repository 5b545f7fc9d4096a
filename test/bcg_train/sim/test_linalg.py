"""Plain-JAX Cholesky and solves against numpy, batched and differentiated."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from bcg_train.sim import linalg


def _spd(n, seed=0):
    rng = np.random.default_rng(seed)
    a = rng.normal(size=(n, n))
    return (a @ a.T + n * np.eye(n)).astype(np.float32)


@pytest.mark.parametrize("n", [1, 3, 35])
def test_cholesky_and_solve_match_numpy(n):
    a = _spd(n)
    b = np.random.default_rng(1).normal(size=(n,)).astype(np.float32)
    factor = np.asarray(jax.jit(linalg.cholesky)(a))
    np.testing.assert_allclose(factor, np.linalg.cholesky(a), rtol=1e-4, atol=1e-5)
    assert np.all(np.triu(factor, 1) == 0)
    np.testing.assert_allclose(jax.jit(linalg.spd_solve)(a, b), np.linalg.solve(a, b), rtol=1e-4, atol=1e-5)
    rhs = np.random.default_rng(2).normal(size=(n, 4)).astype(np.float32)
    np.testing.assert_allclose(jax.jit(linalg.spd_solve)(a, rhs), np.linalg.solve(a, rhs), rtol=1e-4, atol=1e-5)


def test_batched_solve_and_its_gradient():
    a = np.stack([_spd(5, s) for s in range(6)])
    b = np.random.default_rng(3).normal(size=(6, 5)).astype(np.float32)
    x = jax.jit(jax.vmap(linalg.spd_solve))(a, b)
    np.testing.assert_allclose(x, np.linalg.solve(a, b[..., None])[..., 0], rtol=1e-4, atol=1e-5)
    # d/db sum(A^-1 b) = A^-T 1 =: w and d/dA sum(A^-1 b) = -w x^T; the factorization reads
    # one triangle, so differentiate through a symmetrization (as the solver does).
    loss = lambda a, b: jnp.sum(linalg.spd_solve(0.5 * (a + jnp.swapaxes(a, -1, -2)), b))
    ga, gb = jax.jit(jax.vmap(jax.grad(loss, argnums=(0, 1))))(a, b)
    w = np.linalg.solve(np.swapaxes(a, 1, 2), np.ones((6, 5, 1)))[..., 0]
    np.testing.assert_allclose(gb, w, rtol=1e-3, atol=1e-4)
    expected = -w[:, :, None] * np.asarray(x)[:, None, :]
    np.testing.assert_allclose(ga, 0.5 * (expected + np.swapaxes(expected, 1, 2)), rtol=1e-3, atol=1e-4)


def test_no_lapack_custom_call_in_the_program():
    """The point of this module: nothing for jaxlib's batched LAPACK kernels to deadlock on."""
    a = np.stack([_spd(4, s) for s in range(3)])
    hlo = jax.jit(jax.vmap(linalg.spd_solve)).lower(a, a[:, 0]).as_text()
    assert "custom_call" not in hlo
    lapack = jax.jit(jax.vmap(jnp.linalg.solve)).lower(a, a[:, 0]).as_text()
    assert "custom_call" in lapack  # the guard above would catch a LAPACK call

