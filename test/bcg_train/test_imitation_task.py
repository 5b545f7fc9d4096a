"""The G1 imitation task on the MJX core: observations as the ONNX graph sees them, reference
state initialization, domain randomization, and (slow) stepping with rewards and resets."""

import dataclasses

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from bcg_robot.config import load_robot_config
from bcg_robot.observation import build_observation
from bcg_train.bcg.config import BCGConfig, Estimator
from bcg_train.sim.failure import SIM_FAILURES
from bcg_train.sim.jax_setup import enable_compilation_cache
from bcg_train.tasks.config import DomainRandomizationConfig, ImitationConfig, PushRecoveryConfig
from bcg_train.tasks.imitation import ImitationTask

pytestmark = pytest.mark.slow  # compiles MJX programs (a G1 module: see conftest.G1_MODULES)

ROBOT = load_robot_config()


@pytest.fixture(scope="module")
def squat_task():
    enable_compilation_cache()
    return ImitationTask(ImitationConfig(motion="models/motions/squat.csv"), ROBOT)


# One batch size for every reset of the squat task in this module: the reset is compiled
# once, and the later tests load it from the compilation cache.
RESET_ENVS = 64


def test_reset_observation_is_the_raw_state_observation(squat_task):
    task = squat_task
    state = jax.jit(task.reset, static_argnums=1)(jax.random.PRNGKey(3), RESET_ENVS)
    frames = np.asarray(state.frame)
    assert len(set(frames.tolist())) > 1  # reference state initialization: random frames
    qpos = np.asarray(state.sim.sim.data.qpos)
    np.testing.assert_allclose(qpos, np.asarray(task.ref_qpos)[frames], atol=1e-6)
    # the observation is build_observation (numpy) of the raw inputs the robot would report
    raw = {
        "imu_quat": qpos[:, 3:7],
        "imu_gyro": np.asarray(state.sim.sim.data.qvel)[:, 3:6],
        "joint_pos": qpos[:, 7:],
        "joint_vel": np.asarray(state.sim.sim.data.qvel)[:, 6:],
        "last_action": np.zeros((RESET_ENVS, 29)),
        "phase": (frames / task.num_frames)[:, None],
    }
    expected = build_observation(task.cfg.observation_spec, raw, ROBOT.default_q)
    np.testing.assert_allclose(np.asarray(task.observe(state)), expected, atol=1e-5)
    assert task.obs_size == expected.shape[1]
    # phase = time / motion length, motion length = frames * control period
    assert task.reference.length_s == pytest.approx(task.num_frames * ROBOT.control_dt)


def test_domain_samples_within_configured_ranges(squat_task):
    dr = squat_task.cfg.domain
    d = jax.jit(jax.vmap(squat_task._sample_domain))(jax.random.split(jax.random.PRNGKey(0), 200))
    for name, (lo, hi) in (("friction", dr.friction), ("mass_delta", dr.base_mass_delta), ("gain_scale", dr.gain_scale)):
        x = np.asarray(getattr(d, name))
        assert lo <= x.min() and x.max() <= hi and np.ptp(x) > 0.5 * (hi - lo), name
    state = jax.jit(squat_task.reset, static_argnums=1)(jax.random.PRNGKey(0), RESET_ENVS)
    late = np.asarray(state.late).mean()
    assert 0.25 < late < 0.75  # latency probability 0.5
    sim = squat_task.domain_sim(dataclasses.replace(state.domain, gain_scale=jnp.asarray(1.1)))
    np.testing.assert_allclose(np.asarray(sim.sim._kp), 1.1 * ROBOT.kp_array, rtol=1e-6)
    pelvis = squat_task.pelvis_id
    assert float(sim.sim.model.body_mass[pelvis]) == pytest.approx(float(squat_task.base_mass[pelvis] + state.domain.mass_delta), rel=1e-6)


def test_a_push_opens_the_push_recovery_window(squat_task):
    """A push (env 0, due now) changes the root's horizontal velocity by at most push_velocity
    and opens a window of window_s / control_dt steps; env 1 (not due) counts its window down."""
    task = ImitationTask(dataclasses.replace(squat_task.cfg, push_recovery=PushRecoveryConfig(window_s=0.5, scale=0.2)), ROBOT)
    state = jax.jit(squat_task.reset, static_argnums=1)(jax.random.PRNGKey(1), RESET_ENVS)
    due = jnp.zeros((RESET_ENVS,), jnp.int32).at[0].set(1).at[1:].set(100)
    left = jnp.zeros((RESET_ENVS,), jnp.int32).at[1].set(4)
    state = dataclasses.replace(state, push_countdown=due, recovery_left=left)
    sim, countdown, recovery_left = jax.jit(task._push)(state, state.sim, jax.random.PRNGKey(2))
    assert task.recovery_steps == 25
    np.testing.assert_array_equal(np.asarray(recovery_left)[:3], [25, 3, 0])
    dv = np.asarray(sim.sim.data.qvel - state.sim.sim.data.qvel)
    assert 0 < np.abs(dv[0, :2]).max() <= task.cfg.domain.push_velocity and not dv[0, 2:].any() and not dv[1:].any()
    assert int(countdown[0]) >= int(round(task.cfg.domain.push_interval_s[0] / ROBOT.control_dt)) and int(countdown[1]) == 99


def test_privileged_critic_inputs_are_the_simulator_state(squat_task):
    """``task.privileged`` (bcg_train.tasks.privileged) of a reset batch: the root's velocity in
    its heading frame, its height against the reference's frame, the batch's domain draw and each
    environment's latency; the task without ``critic_privileged`` has none."""
    assert squat_task.privileged_size == 0
    cfg = dataclasses.replace(squat_task.cfg, critic_privileged=("root_lin_vel", "root_height", "domain"))
    task = ImitationTask(cfg, ROBOT, squat_task.reference)
    assert task.privileged_size == 8
    state = jax.jit(task.reset, static_argnums=1)(jax.random.PRNGKey(5), RESET_ENVS)
    p = np.asarray(task.privileged(state))
    assert p.shape == (RESET_ENVS, 8)
    qpos, qvel = np.asarray(state.sim.sim.data.qpos), np.asarray(state.sim.sim.data.qvel)
    # reference state initialization: the root sits on the reference, moving at its velocity
    np.testing.assert_allclose(p[:, 3], 10.0 * (qpos[:, 2] - np.asarray(task.ref_tracked.root_pos)[np.asarray(state.frame), 2]), atol=1e-5)
    np.testing.assert_allclose(np.linalg.norm(p[:, :3], axis=1), np.linalg.norm(qvel[:, :3], axis=1), rtol=1e-4, atol=1e-6)
    assert np.ptp(p[:, 2]) > 0.01  # the squat moves the root up and down, differently by frame
    dr = cfg.domain
    np.testing.assert_allclose(p[:, 5], (float(state.domain.mass_delta) - np.mean(dr.base_mass_delta)) / (0.5 * np.ptp(dr.base_mass_delta)), rtol=1e-5)
    assert np.all(np.abs(p[:, 4:7]) <= 1.0 + 1e-6)
    np.testing.assert_array_equal(p[:, 7], np.asarray(state.late).astype(np.float32))


def test_stand_steps_rewards_and_resets():
    """Rewards, truncation, termination and simulation failures of the task's step. They do not
    depend on the gradient estimator, so the step is plain (half the program of a BCG step;
    SHAC + BCG on the G1, with domain randomization, is test_gpu_train_script's)."""
    enable_compilation_cache()
    cfg = ImitationConfig(domain=DomainRandomizationConfig(enabled=False), episode_length_s=0.2,
                          bcg=BCGConfig(mode=Estimator.PLAIN), push_recovery=PushRecoveryConfig(window_s=0.1, scale=0.5))
    task = ImitationTask(cfg, ROBOT)
    state = task.reset(jax.random.PRNGKey(0), 2)
    step = jax.jit(task.step)
    outs = []
    for _ in range(10):
        state, out = step(state, jnp.zeros((2, 29)))
        outs.append(out)
    rewards = np.array([np.asarray(o.reward) for o in outs])
    best = sum(t.weight for t in (cfg.rewards.joint_pos, cfg.rewards.joint_vel, cfg.rewards.root_pos, cfg.rewards.root_orient, cfg.rewards.root_vel, cfg.rewards.key_body))
    assert np.isfinite(rewards).all() and (rewards > 0.8 * best).all() and (rewards <= best + 1e-6).all()
    assert not any(np.asarray(o.terminated).any() for o in outs)
    # the 0.2 s episode (10 steps) is truncated at step 10 and the environment restarts
    assert np.asarray(outs[-1].truncated).all() and not np.asarray(outs[-2].truncated).any()
    assert (np.asarray(state.t) == 0).all()
    # no pushes without DR: no push-recovery window; inside one (env 0, 3 steps left) the posture
    # terms are halved, the rest unchanged, and the window counts down
    assert not any(np.asarray(o.metrics["push_recovering"]).any() for o in outs)
    _, plain = step(state, jnp.zeros((2, 29)))
    after, relaxed = step(dataclasses.replace(state, recovery_left=jnp.asarray([3, 0], jnp.int32)), jnp.zeros((2, 29)))
    for name in cfg.rewards.names():
        p, r = np.asarray(plain.metrics[f"reward/{name}"]), np.asarray(relaxed.metrics[f"reward/{name}"])
        np.testing.assert_allclose(r, [0.5 * p[0] if name in cfg.push_recovery.terms else p[0], p[1]], rtol=1e-6, err_msg=name)
    np.testing.assert_array_equal(np.asarray(after.recovery_left), [2, 0])
    np.testing.assert_array_equal(np.asarray(relaxed.metrics["push_recovering"]), [1.0, 0.0])
    # a robot 1 m away from its reference (standing, teleported) has lost the motion: terminated
    data = state.sim.sim.data
    moved = dataclasses.replace(state, sim=dataclasses.replace(state.sim, sim=state.sim.sim.replace(data=data.replace(qpos=data.qpos.at[:, 0].add(1.0)))))
    _, out = step(moved, jnp.zeros((2, 29)))
    assert np.asarray(out.terminated).all() and (np.asarray(out.metrics["tracking_error_m"]) > 0.9).all()
    reasons = {name: np.asarray(out.metrics[f"terminated/{name}"]) for name in ("low", "tilted", "lost")}
    np.testing.assert_array_equal(reasons["lost"], [1.0, 1.0])  # counted under its reason
    assert not reasons["low"].any() and not reasons["tilted"].any()
    # a NaN (env 0) and a blow-up (env 1, 10 m above the floor) are simulation failures:
    # terminated and reset in that step, no reward, and no metric reports them
    broken_data = data.replace(qvel=data.qvel.at[0, 6].set(jnp.nan), qpos=data.qpos.at[1, 2].add(10.0))
    broken = dataclasses.replace(state, sim=dataclasses.replace(state.sim, sim=state.sim.sim.replace(data=broken_data)))
    after, out = step(broken, jnp.zeros((2, 29)))
    np.testing.assert_array_equal(np.asarray(out.metrics[SIM_FAILURES]), [1.0, 1.0])
    assert not any(np.asarray(out.metrics[f"terminated/{name}"]).any() for name in ("low", "tilted", "lost"))  # only a failure
    assert np.asarray(out.terminated).all() and (np.asarray(out.reward) == 0).all() and (np.asarray(after.t) == 0).all()
    assert all(np.isfinite(np.asarray(v)).all() for v in out.metrics.values())
    assert (np.asarray(out.metrics["tracking_error_m"]) < 0.5).all() and np.isfinite(np.asarray(out.obs)).all()


@pytest.mark.parametrize("frame, failed", [("world", [True, False]), ("heading", [False, False])])
def test_the_root_distance_bound_is_taken_in_the_tasks_reference_frame(frame, failed):
    """A squat robot pushed 5 m from the reference's root: a simulation failure in the world frame,
    none under ``heading``, where the reference stands where the robot stands (the task's own
    ``sim_failed``, on a hand-built state; nothing is stepped or compiled but elementwise ops)."""
    import types

    task = ImitationTask(ImitationConfig(motion="models/motions/squat.csv", reference_frame=frame), ROBOT)
    qpos = jnp.tile(jnp.asarray(task.mj_model.key("default").qpos, jnp.float32), (2, 1)).at[0, 0].add(5.0)
    nv, b = task.mj_model.nv, 3
    idle = types.SimpleNamespace(qpos=jnp.tile(qpos[:, None], (1, b, 1)), qvel=jnp.zeros((2, b, nv)), bundled=jnp.zeros((2,), bool))
    state = types.SimpleNamespace(sim=types.SimpleNamespace(data=types.SimpleNamespace(qpos=qpos, qvel=jnp.zeros((2, nv)))), bundle=idle)
    reference_root = jnp.tile(jnp.asarray(task.mj_model.key("default").qpos[:3], jnp.float32), (2, 1))  # one per env, as in step
    assert task.sim_failed(state, reference_root).tolist() == failed
    # env 1 stepped by a bundle: one branch of three at 6x the knee's speed limit, the others at rest
    # (their mean, 2x, inside the 4x bound) fails the environment; the same branch states are ignored
    # in an environment that stepped plain (they are an old bundle's)
    knee = int(task.di[3])
    speed = 6.0 * float(task.joint_speed_limit[3])
    branches = idle.qvel.at[1, 0, knee].set(speed)
    bundled = types.SimpleNamespace(qpos=idle.qpos, qvel=branches, bundled=jnp.array([False, True]))
    mean = jnp.zeros((2, nv)).at[1, knee].set(speed / b)
    state = types.SimpleNamespace(sim=types.SimpleNamespace(data=types.SimpleNamespace(qpos=qpos, qvel=mean)), bundle=bundled)
    assert task.sim_failed(state, reference_root).tolist() == [failed[0], True]
    state.bundle = types.SimpleNamespace(qpos=idle.qpos, qvel=branches, bundled=jnp.zeros((2,), bool))
    assert task.sim_failed(state, reference_root).tolist() == failed
