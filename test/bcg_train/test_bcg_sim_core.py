"""MJX environment core on tiny inline models: PD law, contact forces, gradients."""

import jax
import jax.numpy as jnp
import mujoco
import numpy as np
import pytest

from bcg_train.sim import JointDrive, MjxSim, SimConfig
from bcg_train.sim.jax_setup import enable_compilation_cache
from bcg_train.sim.toy_models import sphere_drop, two_link_leg

pytestmark = pytest.mark.slow  # compiles MJX programs

enable_compilation_cache()

LEG_QPOS = np.array([0.0, 0.0, 0.4, -0.8])


def test_pd_torque_is_clipped_to_the_effort_limit():
    model, drive = two_link_leg()
    sim = MjxSim(model, drive, initial_qpos=LEG_QPOS)
    data = sim.reset(jax.random.PRNGKey(0)).data.replace(qvel=jnp.array([0.0, 0.0, 1.0, -2.0]))
    small = jnp.array([0.45, -0.85])
    expected = drive.kp * (np.asarray(small) - LEG_QPOS[2:]) - drive.kd * np.array([1.0, -2.0])
    np.testing.assert_allclose(sim.pd_torque(data, small), expected, rtol=1e-5, atol=1e-4)
    np.testing.assert_allclose(sim.pd_torque(data, jnp.array([3.0, -3.0])), [60.0, -60.0])


def test_control_step_runs_substeps_and_reports_contact_force_and_impulse():
    model, drive = sphere_drop(height=0.05, timeconst=0.02)  # resting on the floor
    sim = MjxSim(model, drive, SimConfig(control_dt=0.02))
    assert sim.n_substeps == 4
    step = jax.jit(sim.step)
    state = sim.reset(jax.random.PRNGKey(0))
    for _ in range(25):
        state = step(state, jnp.zeros((0,)))
    weight = float(model.body_mass[1]) * 9.81
    assert state.step_count == 25
    np.testing.assert_allclose(state.info["contact_force"][0], weight, rtol=0.05)
    np.testing.assert_allclose(state.info["contact_impulse"][0], weight * 0.02, rtol=0.05)
    assert state.info["contact_force_peak"][0] >= state.info["contact_force"][0]
    assert state.data.qpos.dtype == jnp.float32


def test_control_dt_must_be_a_multiple_of_the_physics_step():
    model, drive = sphere_drop(dt=0.003)
    with pytest.raises(ValueError, match="multiple"):
        MjxSim(model, drive, SimConfig(control_dt=0.02))


def test_drive_must_match_motor_actuators():
    model, _ = two_link_leg()
    wrong = JointDrive(kp=np.ones(3), kd=np.ones(3), effort_limit=np.ones(3), default_pose=np.zeros(3))
    with pytest.raises(ValueError, match="actuators"):
        MjxSim(model, wrong)


def test_float64_requires_x64():
    model, drive = two_link_leg()
    with jax.enable_x64(False):
        with pytest.raises(ValueError, match="x64"):
            MjxSim(model, drive, SimConfig(float64=True))


def test_gradient_matches_central_finite_differences_without_contact():
    """float64, leg high in the air for 3 control steps (12 physics steps)."""
    with jax.enable_x64(True):
        model, drive = two_link_leg(height=2.0)
        sim = MjxSim(model, drive, SimConfig(float64=True), initial_qpos=LEG_QPOS)
        state0 = sim.reset(jax.random.PRNGKey(0))
        assert state0.data.qpos.dtype == jnp.float64

        def loss(actions):
            state, _ = jax.lax.scan(lambda s, a: (sim.step(s, a), None), state0, actions)  # one step compiled
            assert state.info["contact_force_peak"].shape == (1,)
            q, v = state.data.qpos, state.data.qvel
            return jnp.sum(jnp.sin(q) * jnp.arange(1, 5)) + 0.1 * jnp.sum(v**2), state.metrics["max_contact_force_peak"]

        actions = jnp.array([[0.3, -0.2], [0.1, 0.4], [-0.2, 0.1]], jnp.float64)
        grad, peak = jax.jit(jax.grad(loss, has_aux=True))(actions)
        assert peak == 0.0  # really contact-free
        value = jax.jit(lambda a: loss(a)[0])
        eps = 1e-6
        fd = np.zeros(actions.shape)
        for i in np.ndindex(actions.shape):
            e = jnp.zeros(actions.shape).at[i].set(eps)
            fd[i] = (value(actions + e) - value(actions - e)) / (2 * eps)
        np.testing.assert_allclose(np.asarray(grad), fd, rtol=1e-3, atol=1e-8)
        assert np.abs(fd).max() > 1e-3


def test_batched_step_jits_without_nan():
    model, drive = two_link_leg(timeconst=0.005)
    sim = MjxSim(model, drive, initial_qpos=LEG_QPOS)
    states = jax.vmap(sim.reset)(jax.random.split(jax.random.PRNGKey(0), 3))
    step = jax.jit(jax.vmap(sim.step))
    actions = jnp.array([[0.0, 0.0], [0.5, -0.5], [-0.5, 0.5]])
    peak = 0.0
    for _ in range(15):
        states = step(states, actions)
        peak = max(peak, float(jnp.max(states.info["contact_force_peak"])))
    assert np.all(np.isfinite(np.asarray(states.data.qpos)))
    assert peak > 100.0  # the feet hit the floor
    assert not np.allclose(states.data.qpos[0], states.data.qpos[1])
