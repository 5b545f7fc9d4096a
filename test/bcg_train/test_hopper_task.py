"""The hopper test bench: model variants, reference motion, task smoke test, MuJoCo C evaluation."""

import dataclasses

import jax
import jax.numpy as jnp
import mujoco
import numpy as np
import pytest

from bcg_robot.model import CONTACT_PRESETS
from bcg_robot.pd import pd_torque
from bcg_train.evaluate.hopper_eval import evaluate_in_mujoco
from bcg_train.sim.hopper_model import ACTUATED, ROOT_PITCH, ROOT_Z, build_hopper, hopper_drive, standing_qpos
from bcg_train.sim.jax_setup import enable_compilation_cache
from bcg_train.tasks.hopper import GRAVITY, HopperConfig, HopperTask, hopper_observation, reference_height, task_error

pytestmark = pytest.mark.slow  # compiles MJX programs

enable_compilation_cache()


def test_variants_carry_the_contact_presets_and_integrators():
    for contact in ("soft", "default", "stiff"):
        m = build_hopper("train", contact)
        foot = m.geom("toe").id
        assert m.opt.integrator == mujoco.mjtIntegrator.mjINT_EULER and m.opt.timestep == pytest.approx(0.005)
        np.testing.assert_allclose(m.geom_solref[foot], [CONTACT_PRESETS[contact].timeconst, 1.0])
        assert bool(m.opt.disableflags & mujoco.mjtDisableBit.mjDSBL_REFSAFE) == (not CONTACT_PRESETS[contact].refsafe)
    e = build_hopper("eval")
    assert e.opt.integrator == mujoco.mjtIntegrator.mjINT_IMPLICITFAST and e.opt.timestep == pytest.approx(0.002)
    np.testing.assert_allclose(e.geom_solref[e.geom("heel").id], [CONTACT_PRESETS["stiff"].timeconst, 1.0])
    with pytest.raises(ValueError, match="unknown contact preset"):
        build_hopper("train", "rubber")


@pytest.mark.parametrize("variant", ["train", "eval"])
def test_the_default_pose_stands_in_mujoco_c(variant):
    m = build_hopper(variant, "stiff")
    d = mujoco.MjData(m)
    mujoco.mj_resetDataKeyframe(m, d, m.key("default").id)
    drive, act = hopper_drive(), np.asarray(ACTUATED)
    for _ in range(int(2.0 / m.opt.timestep)):
        d.ctrl[:] = pd_torque(drive.default_pose, d.qpos[act], 0.0, d.qvel[act], drive.kp, drive.kd, 0.0, drive.effort_limit)
        mujoco.mj_step(m, d)
    assert abs(d.qpos[ROOT_PITCH]) < 0.2 and abs(d.qpos[ROOT_Z] - standing_qpos()[ROOT_Z]) < 0.02


def test_reference_is_a_ballistic_hop_with_continuous_height_and_speed():
    cfg = HopperConfig()
    phase = np.linspace(0.0, 1.0, 20001)[:-1]
    h, v = reference_height(cfg, phase)
    assert h.max() == pytest.approx(cfg.apex_height, abs=1e-6)
    assert cfg.apex_height == pytest.approx(cfg.takeoff_height + GRAVITY * cfg.flight_time_s**2 / 8)
    assert h[0] == pytest.approx(h.min(), abs=1e-9) and v[0] == pytest.approx(0.0, abs=1e-9)  # phase 0: mid-stance
    dt = cfg.hop_period_s / phase.size
    np.testing.assert_allclose(np.gradient(h, dt)[1:-1], v[1:-1], atol=0.02)  # velocity is the height's derivative
    assert np.max(np.abs(np.diff(h))) < 1e-3 and np.max(np.abs(np.diff(v))) < 0.05  # no jumps (touch-down, take-off)


def test_observation_layout():
    q = standing_qpos() + np.array([0.0, 0.1, 0.2, 0.3, -0.4])
    qd = np.arange(5.0)
    obs = hopper_observation(q, qd, np.array([0.5, -0.5]), np.float64(0.25))
    np.testing.assert_allclose(obs, [0.1, 0.2, 0.3, -0.4, 0, 1, 2, 3, 4, 0.5, -0.5, 1.0, 0.0], atol=1e-12)


def test_task_error_is_the_mean_over_completed_cycles():
    assert task_error({"apex_error_sum": np.array([0.0, 0.1, 0.0, 0.3]), "apex_count": np.array([0, 1, 0, 1])}) == pytest.approx(0.2)
    assert np.isnan(task_error({"apex_error_sum": np.zeros(3), "apex_count": np.zeros(3)}))


def test_task_smoke_standing_policy_scores_the_standing_apex_error():
    """Zero actions hold the default pose: no fall, every cycle's apex error = apex - standing height."""
    task = HopperTask(HopperConfig(bcg=dataclasses.replace(HopperConfig().bcg, mode="plain")))
    state = task.reset(jax.random.PRNGKey(0), 4)
    assert task.observe(state).shape == (4, task.obs_size)

    @jax.jit
    def roll(s):
        def body(s, _):
            s, out = task.step(s, jnp.zeros((4, task.action_size)))
            return s, (out.reward, out.terminated, out.metrics)

        return jax.lax.scan(body, s, None, length=60)[1]

    reward, fell, metrics = jax.device_get(roll(state))
    assert not fell.any() and np.all(np.isfinite(reward)) and reward.min() > 0
    err = task_error(metrics)
    assert err == pytest.approx(task.cfg.apex_height - standing_qpos()[ROOT_Z], abs=0.02)
    assert metrics["apex_count"].sum() >= 4 * 2


def test_mujoco_evaluation_reports_no_fall_for_standing_and_a_fall_for_a_kick():
    cfg = HopperConfig()
    still = evaluate_in_mujoco(cfg, lambda obs: np.zeros(2), duration_s=2.0)
    assert still.falls == 0 and still.cycles == 4
    assert still.task_error == pytest.approx(cfg.apex_height - standing_qpos()[ROOT_Z], abs=0.02)
    assert still.foot_penetration_m > 0
    kick = evaluate_in_mujoco(cfg, lambda obs: np.array([3.0, 0.0]), duration_s=2.0)  # hip swings 1.5 rad: it tips over
    assert kick.falls == 1
