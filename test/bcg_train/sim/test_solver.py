"""The fixed-iteration scan solver against MJX's own while_loop solver."""

import jax
import jax.numpy as jnp
import mujoco
import numpy as np
import pytest
from mujoco import mjx

from bcg_train.sim import jax_setup, solver

pytestmark = pytest.mark.slow  # compiles MJX programs

jax_setup.enable_compilation_cache()

# A box landing tilted on a plane: several contacts. Newton converges here in one iteration,
# conjugate gradient (CG) needs several, so CG exercises the scan over iterations.
_BOX_XML = """
<mujoco>
  <option timestep="0.005" integrator="Euler" solver="{solver}" jacobian="{jacobian}" iterations="{iterations}" ls_iterations="6" tolerance="{tolerance}"/>
  <worldbody>
    <geom type="plane" size="2 2 0.1" solref="0.02 1"/>
    <body pos="0 0 0.095" euler="4 3 0">
      <freejoint/>
      <geom type="box" size="0.1 0.07 0.1" mass="2"/>
    </body>
  </worldbody>
</mujoco>"""


def _box(iterations: int, tolerance: float = 1e-8, solver_name: str = "CG", jacobian: str = "dense"):
    xml = _BOX_XML.format(iterations=iterations, tolerance=tolerance, solver=solver_name, jacobian=jacobian)
    m = mujoco.MjModel.from_xml_string(xml)
    mx = mjx.put_model(m)
    d = mjx.make_data(mx).replace(qpos=jnp.asarray(m.qpos0), qvel=jnp.asarray(np.linspace(-0.3, 0.3, m.nv)))
    return mx, d


def _rollout(step_fn, mx, d, n=20):
    return jax.lax.scan(lambda d, _: (step_fn(mx, d), None), d, None, length=n)[0]


@pytest.mark.parametrize(
    "iterations,tolerance,solver_name,jacobian",
    [(1, 1e-8, "CG", "dense"), (6, 1e-8, "CG", "dense"), (6, 1e-3, "CG", "sparse"), (4, 1e-8, "Newton", "sparse"),
     (1, 1e-8, "Newton", "dense")],
)
def test_step_matches_mjx_step(iterations, tolerance, solver_name, jacobian):
    """Same trajectory as mjx.step, including Newton, whose Hessian solve is our own."""
    mx, d = _box(iterations, tolerance, solver_name, jacobian)
    ours = jax.jit(lambda d: _rollout(solver.step, mx, d))(d)
    theirs = jax.jit(lambda d: _rollout(mjx.step, mx, d))(d)
    # float32 over 20 steps; our Cholesky rounds differently from LAPACK's (seen: 5e-6)
    np.testing.assert_allclose(ours.qpos, theirs.qpos, rtol=1e-4, atol=2e-5)
    np.testing.assert_allclose(ours.qvel, theirs.qvel, rtol=1e-4, atol=2e-4)
    np.testing.assert_allclose(ours._impl.efc_force, theirs._impl.efc_force, rtol=1e-3, atol=1e-3)


def test_more_iterations_change_the_answer():
    """Guards the test above: with CG on this model 1 and 6 iterations must really differ."""
    one_model, d = _box(1)
    six_model, _ = _box(6)
    one = jax.jit(lambda d: _rollout(solver.step, one_model, d))(d)
    six = jax.jit(lambda d: _rollout(solver.step, six_model, d))(d)
    assert six.qacc.shape == one.qacc.shape
    assert np.max(np.abs(np.asarray(one.qacc) - np.asarray(six.qacc))) > 1e-2


@pytest.mark.parametrize("solver_name", ["CG", "Newton"])
def test_reverse_mode_through_several_iterations_matches_forward_mode_of_mjx(solver_name):
    """jax.grad through our solver equals jax.jvp through mjx.step (while_loop allows forward mode)."""
    mx, d = _box(6, solver_name=solver_name, jacobian="sparse")

    def final_height(step_fn, v0):
        return _rollout(step_fn, mx, d.replace(qvel=v0), n=10).qpos[2]

    v0 = d.qvel
    grad = jax.jit(jax.grad(lambda v: final_height(solver.step, v)))(v0)
    assert np.all(np.isfinite(grad))
    with pytest.raises(ValueError, match="Reverse-mode differentiation does not work for lax.while_loop"):
        jax.grad(lambda v: final_height(mjx.step, v))(v0)
    # every direction in one compiled program (a jit per direction compiled it once each)
    directional = jax.jit(jax.vmap(lambda t: jax.jvp(lambda x: final_height(mjx.step, x), (v0,), (t,))[1]))(
        jnp.eye(v0.shape[0], dtype=v0.dtype))
    np.testing.assert_allclose(grad, directional, rtol=2e-3, atol=2e-5)


def test_newton_step_of_a_batch_has_no_lapack_call():
    """A batched Newton step on a sparse model compiles to a program without LAPACK kernels."""
    mx, d = _box(3, solver_name="Newton", jacobian="sparse")
    batch = jax.tree_util.tree_map(lambda x: jnp.stack([x, x]), d)
    hlo = jax.jit(jax.vmap(lambda d: solver.step(mx, d))).lower(batch).as_text()
    assert "lapack" not in hlo
    dense, _ = _box(3, solver_name="Newton", jacobian="dense")
    assert "lapack" in jax.jit(jax.vmap(lambda d: mjx.step(dense, d))).lower(batch).as_text()
