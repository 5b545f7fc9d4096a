"""MJX physics step whose constraint solver runs a fixed number of iterations under ``scan``.

Why this exists: ``mjx.solve`` runs more than one solver iteration inside
``jax.lax.while_loop``, which has no reverse-mode derivative, so ``jax.grad`` through
``mjx.step`` only works with ``opt.iterations == 1``. One Newton iteration is not enough
for the G1: with ``iterations=1`` MJX (unlike MuJoCo C) lets the standing G1 diverge under
0.05 rad action noise, NaN in float32 and a fall in float64, at soft and default contact
alike (measured on the pinned ``mujoco``), while 3-4 iterations hold it.

:func:`solve` is ``mjx.solve`` with the ``while_loop`` replaced by a ``scan`` of exactly
``opt.iterations`` steps; once the solver's own stopping test says done, the remaining
steps keep the context unchanged (``lax.cond``), so the forward result equals
``mjx.solve``'s and reverse mode works. The per-iteration pieces (line search, constraint
and gradient update) are MJX's own, from ``mujoco.mjx._src.solver`` of the pinned
``mujoco`` version, except the Newton direction on sparse models (``opt.jacobian =
SPARSE``), which solves with the Hessian through :mod:`bcg_train.sim.linalg`. MJX factors
the sparse mass matrix in plain JAX too, so a sparse model's step has no LAPACK custom
call and cannot hit the CPU thread-pool deadlock under ``vmap``; the ``train`` variant is
sparse. :func:`step` composes MJX's public forward stages around the solver.
``test/bcg_train/sim/test_solver.py`` checks both against ``mjx.step``.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import mujoco
from mujoco import mjx
from mujoco.mjx._src import solver as _mjx_solver
from mujoco.mjx._src import support as _mjx_support
from mujoco.mjx._src.types import ConeType, DisableBit, IntegratorType, SolverType

from bcg_train.sim import linalg


def _not_done(m: mjx.Model, d: mjx.Data, ctx: _mjx_solver.Context) -> jax.Array:
    """MJX's stopping test (iteration count, cost improvement, gradient norm), negated."""
    improvement = _mjx_solver._rescale(m, d, ctx.prev_cost - ctx.cost)
    gradient = _mjx_solver._rescale(m, d, jnp.linalg.norm(ctx.grad))
    done = ctx.solver_niter >= m.opt.iterations
    done |= improvement < m.opt.tolerance
    done |= gradient < m.opt.tolerance
    return ~done


def _update_gradient(m: mjx.Model, d: mjx.Data, ctx: _mjx_solver.Context) -> _mjx_solver.Context:
    """Gradient and preconditioned gradient; on sparse models, Newton's solve without LAPACK.

    CG, and Newton on dense models, are MJX's own code. For Newton (pyramidal cone) on a
    sparse model this is MJX's Hessian ``M + J^T diag(D * active) J`` factored by
    :mod:`bcg_train.sim.linalg` instead of ``jax.scipy.linalg.cho_factor``, whose batched
    LAPACK kernel deadlocks XLA's thread pool on 2-core CPUs (see that module); with the
    sparse mass matrix the whole step is then LAPACK-free. Dense models keep MJX's exact
    numerics (separately compiled programs agree bit for bit, which the BCG tests on the
    toy models rely on; the plain-JAX Cholesky can differ by an ulp between programs).
    """
    if m.opt.solver != SolverType.NEWTON or not _mjx_support.is_sparse(m):
        return _mjx_solver._update_gradient(m, d, ctx)
    if m.opt.cone == ConeType.ELLIPTIC:
        raise NotImplementedError("bcg_train.sim.solver: Newton with the elliptic cone is not supported")
    grad = ctx.Ma - d.qfrc_smooth - ctx.qfrc_constraint
    efc_j = d._impl.efc_J
    hessian = _mjx_support.full_m(m, d) + (efc_j.T * (d._impl.efc_D * ctx.active)) @ efc_j
    hessian = 0.5 * (hessian + hessian.T)
    return ctx.replace(grad=grad, Mgrad=linalg.spd_solve(hessian, grad))


def _context(m: mjx.Model, d: mjx.Data, grad: bool = True) -> _mjx_solver.Context:
    """``Context.create`` with :func:`_update_gradient` for the first gradient."""
    ctx = _mjx_solver.Context.create(m, d, grad=False)
    if grad:
        ctx = _update_gradient(m, d, ctx)
        ctx = ctx.replace(search=-ctx.Mgrad)
    return ctx


def _iteration(m: mjx.Model, d: mjx.Data, ctx: _mjx_solver.Context) -> _mjx_solver.Context:
    """One primal iteration: line search, constraint update, new search direction."""
    ctx = _mjx_solver._linesearch(m, d, ctx)
    prev_grad, prev_mgrad = ctx.grad, ctx.Mgrad
    ctx = _mjx_solver._update_constraint(m, d, ctx)
    ctx = _update_gradient(m, d, ctx)
    if m.opt.solver == SolverType.NEWTON:
        search = -ctx.Mgrad
    else:  # conjugate gradient, Polak-Ribiere
        beta = jnp.dot(ctx.grad, ctx.Mgrad - prev_mgrad)
        beta = beta / jnp.maximum(mujoco.mjMINVAL, jnp.dot(prev_grad, prev_mgrad))
        search = -ctx.Mgrad + jnp.maximum(0, beta) * ctx.search
    return ctx.replace(search=search, solver_niter=ctx.solver_niter + 1)


def solve(m: mjx.Model, d: mjx.Data) -> mjx.Data:
    """Constraint forces after at most ``m.opt.iterations`` iterations (reverse-mode safe)."""
    qacc = d.qacc_smooth
    if not m.opt.disableflags & DisableBit.WARMSTART:
        warm = _context(m, d.replace(qacc=d.qacc_warmstart), grad=False)
        smooth = _context(m, d.replace(qacc=d.qacc_smooth), grad=False)
        qacc = jnp.where(warm.cost < smooth.cost, d.qacc_warmstart, d.qacc_smooth)
    d = d.replace(qacc=qacc)
    ctx = _context(m, d)

    if m.opt.iterations == 1:  # as mjx.solve: one unconditional iteration
        ctx = _iteration(m, d, ctx)
    else:  # as mjx.solve's while_loop: test before every iteration, then stop for good

        def body(carry, _):
            ctx, active = carry
            ctx = jax.lax.cond(active, lambda c: _iteration(m, d, c), lambda c: c, ctx)
            return (ctx, active & _not_done(m, d, ctx)), None

        (ctx, _), _ = jax.lax.scan(body, (ctx, _not_done(m, d, ctx)), None, length=m.opt.iterations)

    return d.tree_replace(
        {"qfrc_constraint": ctx.qfrc_constraint, "qacc": ctx.qacc, "_impl.efc_force": ctx.efc_force}
    )


def forward(m: mjx.Model, d: mjx.Data) -> mjx.Data:
    """``mjx.forward`` with the fixed-iteration :func:`solve`."""
    d = mjx.fwd_position(m, d)
    d = mjx.sensor_pos(m, d)
    d = mjx.fwd_velocity(m, d)
    d = mjx.sensor_vel(m, d)
    d = mjx.fwd_actuation(m, d)
    d = mjx.fwd_acceleration(m, d)
    if d._impl.efc_J.size == 0:  # no constraints: as mjx.forward
        return d.replace(qacc=d.qacc_smooth)
    d = solve(m, d)
    return mjx.sensor_acc(m, d)


def step(m: mjx.Model, d: mjx.Data) -> mjx.Data:
    """``mjx.step`` with the fixed-iteration :func:`solve` (Euler integrator only)."""
    if m.opt.integrator != IntegratorType.EULER:
        raise ValueError(f"bcg_train.sim.solver.step supports the Euler integrator, not {m.opt.integrator}")
    return mjx.euler(m, forward(m, d))
