"""Bundled Contact Gradients on a stiff two-link leg dropped on a plane.

The compiled programs are shared between tests (sigma and tau are traced arguments),
so the module compiles one plain, one BCG and one global-smoothing gradient.
"""

import functools

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from bcg_train.bcg import BCGConfig, BundledSim, BundleForward, Estimator
from bcg_train.bcg.diagnostics import perturbed_starts, sample_statistics
from bcg_train.bcg.perturbation import damped_pseudo_inverse_map, integrate_configuration, joint_space_offsets
from bcg_train.bcg.rollout import grad_through_rollout, rollout_open_loop
from bcg_train.sim import MjxSim
from bcg_train.sim.contact import point_jacobian
from bcg_train.sim.jax_setup import enable_compilation_cache
from bcg_train.sim.toy_models import sphere_drop, two_link_leg

pytestmark = pytest.mark.slow  # compiles MJX programs

enable_compilation_cache()

LEG_QPOS = np.array([0.0, 0.0, 0.4, -0.8])
K, T, B = 16, 12, 8  # the foot lands in control step 9, then bounces on stiff contact
TOY_TAU = 150.0  # N; the leg weighs ~56 N, its stiff impact peaks above 1 kN


def leg_sim():
    model, drive = two_link_leg(height=0.7, timeconst=0.005)  # time constant = 1 physics step
    return MjxSim(model, drive, initial_qpos=LEG_QPOS)


def height_cost(state, action):
    return (state.data.qpos[1] + 0.12) ** 2 + 0.1 * state.data.qvel[1] ** 2 + 0.01 * jnp.sum(action**2)


def _gradients(bsim, start, actions):
    def total(a, s0):
        costs, final, substeps = rollout_open_loop(bsim, s0, a, height_cost)
        return jnp.sum(costs), (costs, substeps, final)

    grads, (costs, substeps, final) = grad_through_rollout(total)(actions, start)
    return grads, costs, substeps, final


@functools.cache
def programs():
    sim = leg_sim()

    def bcg(sigma_p, sigma_v, tau, start, actions):
        config = BCGConfig(num_branches=B, sigma_p=sigma_p, sigma_v=sigma_v, force_threshold=tau)
        return _gradients(BundledSim(sim, config), start, actions)

    plain = BundledSim(sim, BCGConfig(mode=Estimator.PLAIN))
    return sim, jax.jit(functools.partial(_gradients, plain)), jax.jit(bcg)


def starts(seed=0, noise=1e-3):
    sim = programs()[0]
    return perturbed_starts(BundledSim(sim, BCGConfig(num_branches=B)), K, noise, jax.random.PRNGKey(seed))


ACTIONS = jnp.broadcast_to(jnp.array([0.1, 0.1]), (K, T, 2)) + jnp.linspace(-0.3, 0.3, K)[:, None, None]


def test_bcg_that_never_triggers_is_bit_identical_to_plain():
    sim, plain_fn, bcg_fn = programs()
    start = starts()
    plain = plain_fn(start, ACTIONS)
    idle = bcg_fn(0.01, 0.02, 1e12, start, ACTIONS)
    assert float(jnp.max(plain[3].sim.metrics["max_contact_force_peak"])) > 0  # feet are on the floor
    np.testing.assert_array_equal(idle[1], plain[1])  # forward pass: bit for bit
    np.testing.assert_array_equal(idle[3].sim.data.qpos, plain[3].sim.data.qpos)
    assert int(jnp.sum(idle[3].bundle.num_started)) == 0
    assert int(idle[2]) == int(plain[2]) == K * T * sim.n_substeps
    # The gradient is equal in exact arithmetic: in float64 the two differ by 5e-14 with
    # entries up to 0.78 (measured, 2026-12-02). In float32 the BCG program's backward
    # pass sums the cotangents of its chunked rows in another order than the plain one,
    # and the stiff contact amplifies the rounding: seen <= 2.2e-5 of the largest entry.
    scale = float(jnp.max(jnp.abs(plain[0])))
    np.testing.assert_allclose(idle[0], plain[0], rtol=0, atol=1e-4 * scale)


def test_zero_sigma_bcg_equals_plain():
    _, plain_fn, bcg_fn = programs()
    start = starts()
    plain = plain_fn(start, ACTIONS)
    bundled = bcg_fn(0.0, 0.0, 0.0, start, ACTIONS)  # tau 0: bundles wherever a contact pushes
    assert int(jnp.min(bundled[3].bundle.num_started)) >= 1  # bundles really ran
    # Equal in exact arithmetic (means are x_0 + mean(x_i - x_0) over identical branches);
    # the (K, B) branch batch is vectorized differently by XLA than the (K,) nominal
    # batch, which can move float32 results by a few ulp (seen: <= 4e-6 relative).
    np.testing.assert_allclose(bundled[1], plain[1], rtol=2e-5)
    np.testing.assert_allclose(bundled[3].sim.data.qpos, plain[3].sim.data.qpos, rtol=2e-5, atol=1e-6)
    rel = float(jnp.linalg.norm(bundled[0] - plain[0]) / jnp.linalg.norm(plain[0]))
    assert rel < 1e-2, rel


def test_bcg_reduces_gradient_variance_on_stiff_bouncing_leg():
    _, plain_fn, bcg_fn = programs()
    start = starts(seed=3)
    actions = jnp.broadcast_to(jnp.array([0.1, 0.1]), (K, T, 2))  # same actions, perturbed starts
    plain = plain_fn(start, actions)
    bundled = bcg_fn(0.01, 0.02, TOY_TAU, start, actions)
    assert np.all(np.isfinite(np.asarray(bundled[0]))) and np.all(np.isfinite(np.asarray(plain[0])))
    assert int(jnp.min(bundled[3].bundle.num_started)) >= 1
    _, plain_trace, _, plain_cos = sample_statistics(np.asarray(plain[0]))
    _, bcg_trace, _, bcg_cos = sample_statistics(np.asarray(bundled[0]))
    assert plain_trace / bcg_trace > 2.0, (plain_trace, bcg_trace)
    assert bcg_cos > plain_cos


def test_global_smoothing_is_bcg_with_tau_minus_infinity_and_bundles_every_step():
    sim, plain_fn, bcg_fn = programs()
    start = starts()
    smooth = bcg_fn(0.01, 0.02, -jnp.inf, start, ACTIONS)
    np.testing.assert_array_equal(smooth[3].bundle.num_started, T // 2)  # H = 2: a bundle every 2nd step
    assert int(smooth[2]) == K * T * sim.n_substeps * (1 + B)
    assert np.all(np.isfinite(np.asarray(smooth[0])))
    assert not np.allclose(smooth[0], plain_fn(start, ACTIONS)[0], rtol=1e-2)
    assert BundledSim(sim, BCGConfig(mode=Estimator.GLOBAL_SMOOTHING)).trigger_threshold() == -jnp.inf


def test_nominal_forward_keeps_plain_values_with_smoothed_derivative():
    sim = leg_sim()
    states = jax.vmap(sim.reset)(jax.random.split(jax.random.PRNGKey(0), 1))
    plain_steps = []
    step = jax.jit(jax.vmap(sim.step))
    for _ in range(10):  # the foot lands in step 9
        plain_steps.append(states)
        states = step(states, jnp.zeros((1, 2)))
    pre = plain_steps[7]
    config = BCGConfig(mode=Estimator.GLOBAL_SMOOTHING, num_branches=3, forward=BundleForward.NOMINAL)
    bsim = BundledSim(sim, config)

    def height(qvel):
        s = bsim.wrap(pre.replace(data=pre.data.replace(qvel=qvel)))
        out, _ = jax.lax.scan(lambda c, _: (bsim.step(c, jnp.zeros((1, 2))), None), s, None, length=2)  # one step compiled
        return jnp.sum(out.sim.data.qpos[:, 1]), out

    (_, out), grad = jax.jit(jax.value_and_grad(height, has_aux=True))(pre.data.qvel)
    assert int(out.bundle.num_started[0]) == 1 and bool(out.bundle.bundled[0])
    np.testing.assert_array_equal(out.sim.data.qpos, plain_steps[9].data.qpos)  # the plain values
    assert np.all(np.isfinite(np.asarray(grad))) and float(jnp.abs(grad).max()) > 0


def test_trigger_fires_exactly_when_peak_contact_force_exceeds_tau():
    sim = leg_sim()
    step = jax.jit(jax.vmap(sim.step))
    states = jax.vmap(sim.reset)(jax.random.split(jax.random.PRNGKey(0), 1))
    pre, peaks = [], []
    for _ in range(T + 6):
        pre.append(states)
        states = step(states, jnp.zeros((1, 2)))
        peaks.append(float(jnp.max(states.info["contact_force_peak"])))
    peaks = np.array(peaks)
    touching = np.sort(peaks[peaks > 0])
    assert touching.size >= 3
    batch = jax.tree_util.tree_map(lambda *x: jnp.concatenate(x), *pre)  # every step's pre-state
    bundled_step = jax.jit(lambda tau, s, a: BundledSim(sim, BCGConfig(num_branches=3, force_threshold=tau)).step(s, a))
    wrap = BundledSim(sim, BCGConfig(num_branches=3)).wrap
    nominal = step(batch, jnp.zeros((len(pre), 2)))
    for tau in (0.5 * (touching[0] + touching[1]), float(touching[-2])):  # between two peaks; exactly at one
        out = bundled_step(tau, wrap(batch), jnp.zeros((len(pre), 2)))
        fired = peaks > tau
        np.testing.assert_array_equal(np.asarray(out.bundle.started), fired)
        assert fired.any() and not fired.all()
        np.testing.assert_array_equal(np.asarray(out.bundle.steps_left), np.where(fired, 1, 0))
        np.testing.assert_array_equal(out.sim.data.qpos[~fired], nominal.data.qpos[~fired])
        assert not np.array_equal(out.sim.data.qpos[fired], nominal.data.qpos[fired])


def test_pseudo_inverse_maps_cartesian_offset_onto_contact_point():
    sim = leg_sim()
    state = sim.reset(jax.random.PRNGKey(0))
    data = state.data
    shank = sim.mj_model.body("shank").id
    foot = sim.mj_model.geom("foot").id
    point = data.geom_xpos[foot]
    jac = point_jacobian(sim.model, data, point, shank)
    dp = jnp.array([[0.01, 0.0, -0.005], [-0.004, 0.0, 0.008]])  # in the leg's plane
    dq = damped_pseudo_inverse_map(jac, dp, 1e-4)
    np.testing.assert_allclose(dq @ jac.T, dp, rtol=1e-3, atol=1e-6)
    moved_to = jax.jit(lambda d: sim.reset_to(integrate_configuration(sim.mj_model, data.qpos, d), data.qvel, state.rng).data)
    for k in range(2):  # moving the configuration by dq moves the foot by ~dp
        moved = moved_to(dq[k])
        np.testing.assert_allclose(moved.geom_xpos[foot] - point, dp[k], atol=5e-4)


def test_offsets_are_constants_and_scale_with_sigma():
    sim = leg_sim()
    data = sim.reset(jax.random.PRNGKey(0)).data
    force = jnp.zeros((1,))

    def f(qpos, sigma_p, sigma_v):
        kin = sim.reset_to(qpos, data.qvel, jax.random.PRNGKey(0)).data
        dq, dqd = joint_space_offsets(sim.mj_model, sim.model, kin, force, jax.random.PRNGKey(1), 256, sigma_p, sigma_v, 1e-4)
        return jnp.sum(dq) + jnp.sum(dqd), (dq, dqd)

    grad, (dq, dqd) = jax.jit(jax.grad(f, has_aux=True))(data.qpos, 0.01, 0.02)
    np.testing.assert_array_equal(grad, 0.0)
    ratio = float(jnp.linalg.norm(dqd)) / float(jnp.linalg.norm(dq))
    assert 1.6 < ratio < 2.5  # sigma_v / sigma_p = 2 (independent samples)
    _, (dq0, dqd0) = jax.jit(f)(data.qpos, 0.0, 0.0)
    np.testing.assert_array_equal(dq0, 0.0)
    np.testing.assert_array_equal(dqd0, 0.0)


def test_a_push_reaches_the_branches_of_a_running_bundle():
    """A push (a velocity change from outside the step, as domain randomization applies it)
    during a running bundle moves the leg as it moves the plain one: the bundle continues
    from its branch states, so the push must reach them (it was lost before)."""
    sim, k = leg_sim(), 2
    push = jnp.zeros((k, sim.model.nv)).at[:, 0].set(1.0)  # +1 m/s along x
    actions = jnp.zeros((k, 2))

    def pushed(mode):
        bsim = BundledSim(sim, BCGConfig(mode=mode, num_branches=2, sigma_p=0.0, sigma_v=0.0))
        step = jax.jit(bsim.step)
        state = step(bsim.reset(jax.random.split(jax.random.PRNGKey(0), k)), actions)
        if mode is Estimator.GLOBAL_SMOOTHING:
            assert np.all(np.asarray(state.bundle.steps_left) > 0)  # the bundle runs into the next step
        state = step(BundledSim.add_qvel(state, push), actions)
        return np.asarray(state.sim.data.qpos[:, 0]), np.asarray(state.sim.data.qvel[:, 0])

    x_plain, vx_plain = pushed(Estimator.PLAIN)
    x_bundle, vx_bundle = pushed(Estimator.GLOBAL_SMOOTHING)
    assert np.all(vx_plain > 0.9) and np.all(x_plain > 0.01)  # the push moved the plain leg
    np.testing.assert_allclose(x_bundle, x_plain, atol=1e-6)
    np.testing.assert_allclose(vx_bundle, vx_plain, atol=1e-5)


def test_the_branch_mean_of_a_free_body_keeps_a_unit_quaternion():
    """A mean of rotated unit quaternions is shorter than one; the rewards, the observation's
    gravity and the termination read the orientation from qpos, so the bundle's state is
    scaled back to unit norm."""
    model, drive = sphere_drop(height=0.05, timeconst=0.01)  # resting on the floor: the contact bundles
    sim, k = MjxSim(model, drive), 2
    bsim = BundledSim(sim, BCGConfig(mode=Estimator.GLOBAL_SMOOTHING, num_branches=4, sigma_p=0.02, sigma_v=0.2))
    state = jax.jit(bsim.step)(bsim.reset(jax.random.split(jax.random.PRNGKey(0), k)), jnp.zeros((k, 0)))
    branch_quats = np.asarray(state.bundle.qpos[..., 3:7])  # (k, branches, 4), each unit
    assert np.ptp(branch_quats, axis=1).max() > 1e-2  # the branches turned apart
    assert np.linalg.norm(branch_quats.mean(axis=1), axis=-1).max() < 1 - 1e-5  # so their plain mean is short
    np.testing.assert_allclose(np.linalg.norm(np.asarray(state.sim.data.qpos[:, 3:7]), axis=-1), 1.0, atol=1e-6)
