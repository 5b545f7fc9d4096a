"""Bundled Contact Gradients on tiny inline models."""

import jax
import jax.numpy as jnp
import numpy as np

from bcg_train.bcg import BCGConfig, BundledSim, BundleForward, Estimator
from bcg_train.bcg.perturbation import damped_pseudo_inverse_map, integrate_configuration, joint_space_offsets
from bcg_train.bcg.rollout import per_env_action_gradients, rollout_open_loop
from bcg_train.sim import MjxSim
from bcg_train.sim.contact import point_jacobian
from bcg_train.sim.jax_setup import enable_compilation_cache
from bcg_train.sim.toy_models import two_link_leg

enable_compilation_cache()

LEG_QPOS = np.array([0.0, 0.0, 0.4, -0.8])
K, T, B = 2, 10, 3  # the leg's foot lands in control step 8


def leg_sim(timeconst=0.005):
    model, drive = two_link_leg(timeconst=timeconst)
    return MjxSim(model, drive, initial_qpos=LEG_QPOS)


def height_cost(state, action):
    return (state.data.qpos[1] + 0.15) ** 2 + 0.01 * jnp.sum(action**2)


def gradients(bsim, actions):
    start = bsim.reset(jax.random.split(jax.random.PRNGKey(0), K))
    grads, (costs, substeps) = jax.jit(lambda a: per_env_action_gradients(bsim, start, a, height_cost))(actions)
    final = jax.jit(lambda a: rollout_open_loop(bsim, start, a, height_cost)[1])(actions)
    return grads, costs, substeps, final


ACTIONS = jnp.stack([jnp.full((T, 2), 0.1), jnp.full((T, 2), -0.2)])


def test_bcg_that_never_triggers_is_bit_identical_to_plain():
    sim = leg_sim()
    plain = gradients(BundledSim(sim, BCGConfig(mode=Estimator.PLAIN)), ACTIONS)
    idle = gradients(BundledSim(sim, BCGConfig(num_branches=B, force_threshold=1e12)), ACTIONS)
    assert float(jnp.max(plain[3].sim.metrics["max_contact_force_peak"])) > 0  # feet are on the floor
    np.testing.assert_array_equal(idle[0], plain[0])
    np.testing.assert_array_equal(idle[1], plain[1])
    np.testing.assert_array_equal(idle[3].sim.data.qpos, plain[3].sim.data.qpos)
    assert int(jnp.sum(idle[3].bundle.num_started)) == 0
    assert int(idle[2]) == int(plain[2]) == K * T * sim.n_substeps


def test_zero_sigma_bcg_equals_plain():
    sim = leg_sim()
    plain = gradients(BundledSim(sim, BCGConfig(mode=Estimator.PLAIN)), ACTIONS)
    bundled = gradients(BundledSim(sim, BCGConfig(num_branches=B, sigma_p=0.0, sigma_v=0.0, force_threshold=0.0)), ACTIONS)
    assert int(jnp.min(bundled[3].bundle.num_started)) >= 1  # bundles really ran
    np.testing.assert_array_equal(bundled[1], plain[1])  # forward pass: bit for bit
    np.testing.assert_array_equal(bundled[3].sim.data.qpos, plain[3].sim.data.qpos)
    np.testing.assert_allclose(bundled[0], plain[0], rtol=1e-4, atol=1e-6 * float(jnp.max(jnp.abs(plain[0]))))


def test_trigger_fires_exactly_when_peak_contact_force_exceeds_tau():
    sim = leg_sim()
    step = jax.jit(jax.vmap(sim.step))
    states = jax.vmap(sim.reset)(jax.random.split(jax.random.PRNGKey(0), 1))
    pre, peaks = [], []
    for _ in range(T + 4):
        pre.append(states)
        states = step(states, jnp.zeros((1, 2)))
        peaks.append(float(jnp.max(states.info["contact_force_peak"])))
    peaks = np.array(peaks)
    touching = np.sort(peaks[peaks > 0])
    assert touching.size >= 3
    tau = float(0.5 * (touching[1] + touching[2]))  # between two observed peaks
    batch = jax.tree_util.tree_map(lambda *x: jnp.concatenate(x), *pre)  # every step's pre-state
    bsim = BundledSim(sim, BCGConfig(num_branches=B, force_threshold=tau))
    out = jax.jit(bsim.step)(bsim.wrap(batch), jnp.zeros((len(pre), 2)))
    np.testing.assert_array_equal(np.asarray(out.bundle.started), peaks > tau)
    assert out.bundle.started.any() and not out.bundle.started.all()
    np.testing.assert_array_equal(np.asarray(out.bundle.steps_left), np.where(peaks > tau, 1, 0))
    untriggered = ~(peaks > tau)
    nominal = step(batch, jnp.zeros((len(pre), 2)))
    np.testing.assert_array_equal(out.sim.data.qpos[untriggered], nominal.data.qpos[untriggered])


def test_pseudo_inverse_maps_cartesian_offset_onto_contact_point():
    sim = leg_sim()
    state = sim.reset(jax.random.PRNGKey(0))
    data = state.data
    foot = sim.mj_model.body("shank").id
    point = data.geom_xpos[sim.mj_model.geom("foot").id]
    jac = point_jacobian(sim.model, data, point, foot)
    dp = jnp.array([[0.01, 0.0, -0.005], [-0.004, 0.0, 0.008]])  # in the leg's plane
    dq = damped_pseudo_inverse_map(jac, dp, 1e-4)
    np.testing.assert_allclose(dq @ jac.T, dp, rtol=1e-3, atol=1e-6)
    # moving the configuration by dq moves the foot by ~dp (first order)
    for k in range(2):
        moved = sim.reset_to(integrate_configuration(sim.mj_model, data.qpos, dq[k]), data.qvel, state.rng).data
        shift = moved.geom_xpos[sim.mj_model.geom("foot").id] - point
        np.testing.assert_allclose(shift, dp[k], atol=5e-4)


def test_offsets_are_constants_and_follow_sigma():
    sim = leg_sim()
    data = sim.reset(jax.random.PRNGKey(0)).data
    force = jnp.zeros((1,))

    def f(qpos):
        kin = sim.reset_to(qpos, data.qvel, jax.random.PRNGKey(0)).data
        dq, dqd = joint_space_offsets(sim.mj_model, sim.model, kin, force, jax.random.PRNGKey(1), 64, 0.01, 0.02, 1e-4)
        return jnp.sum(dq) + jnp.sum(dqd), (dq, dqd)

    grad, (dq, dqd) = jax.grad(f, has_aux=True)(data.qpos)
    np.testing.assert_array_equal(grad, 0.0)
    assert 0.3 < float(jnp.std(dqd)) / float(jnp.std(dq)) < 10.0  # sigma_v / sigma_p = 2
    assert float(jnp.max(jnp.abs(dq))) < 0.2


def test_global_smoothing_bundles_every_step_and_nominal_forward_keeps_plain_values():
    sim = leg_sim()
    plain = gradients(BundledSim(sim, BCGConfig(mode=Estimator.PLAIN)), ACTIONS)
    smooth = gradients(BundledSim(sim, BCGConfig(mode=Estimator.GLOBAL_SMOOTHING, num_branches=B)), ACTIONS)
    np.testing.assert_array_equal(smooth[3].bundle.num_started, T // 2)  # H = 2: one bundle per 2 steps
    assert int(smooth[2]) == K * T * sim.n_substeps * (1 + B)
    nominal = gradients(
        BundledSim(sim, BCGConfig(mode=Estimator.GLOBAL_SMOOTHING, num_branches=B, forward=BundleForward.NOMINAL)), ACTIONS
    )
    np.testing.assert_array_equal(nominal[1], plain[1])
    assert np.all(np.isfinite(np.asarray(nominal[0]))) and np.all(np.isfinite(np.asarray(smooth[0])))
    assert not np.allclose(nominal[0], plain[0])
