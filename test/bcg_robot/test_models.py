"""Model variants: structure, contact presets, standing under PD, and MJX compatibility."""

import mujoco
import numpy as np
import pytest

from bcg_robot.config import load_robot_config
from bcg_robot.model import (
    CONTACT_PRESETS, FLOOR_NAME, TRAIN_SOLVER_ITERATIONS, build_model, effective_contact_timeconst, foot_sphere_name,
    joint_qpos_indices,
)
from bcg_robot.standing import stand_at_default_pose


@pytest.fixture(scope="module")
def cfg():
    return load_robot_config()


def test_actuators_follow_motor_order_with_effort_ranges(cfg):
    for variant in ("train", "bridge"):
        model = build_model(cfg, variant)
        assert model.nu == 29
        for i, name in enumerate(cfg.joint_names):
            assert model.actuator(i).name == name
            joint_id = model.actuator_trnid[i, 0]
            assert model.joint(joint_id).name == f"{name}_joint"
            np.testing.assert_allclose(model.actuator_ctrlrange[i], [-cfg.effort_limits[i], cfg.effort_limits[i]])
            assert model.dof_armature[model.jnt_dofadr[joint_id]] == pytest.approx(cfg.armature[i])
            lo, hi = model.jnt_range[joint_id]
            assert (lo, hi) == pytest.approx((cfg.position_lower[i], cfg.position_upper[i]), abs=1e-4)
        np.testing.assert_allclose(model.key("default").qpos[joint_qpos_indices(model, cfg)], cfg.default_pose)


def test_train_variant_is_mjx_shaped(cfg):
    model = build_model(cfg, "train")
    assert not np.any(model.geom_type == mujoco.mjtGeom.mjGEOM_MESH)
    assert model.nmesh == 0
    assert model.opt.integrator == mujoco.mjtIntegrator.mjINT_EULER
    assert model.opt.iterations == TRAIN_SOLVER_ITERATIONS
    for foot in cfg.feet:
        spheres = [g for g in range(model.ngeom) if model.geom_bodyid[g] == model.body(foot).id and model.geom_conaffinity[g]]
        assert len(spheres) == 4
        assert all(model.geom_type[g] == mujoco.mjtGeom.mjGEOM_SPHERE for g in spheres)
        assert model.geom(foot_sphere_name(foot, 0)).id in spheres
    # robot geoms never collide with each other
    robot = [g for g in range(model.ngeom) if model.geom(g).name != FLOOR_NAME]
    assert all(model.geom_contype[g] == 0 for g in robot)


def test_train_solver_iterations_are_settable_and_only_on_the_train_variant(cfg):
    model = build_model(cfg, "train", solver_iterations=10, ls_iterations=6)
    assert (model.opt.iterations, model.opt.ls_iterations) == (10, 6)
    with pytest.raises(ValueError, match="settings of the train variant"):
        build_model(cfg, "bridge", solver_iterations=10)
    with pytest.raises(ValueError, match="ls_iterations must be >= 1, got 0"):
        build_model(cfg, "train", ls_iterations=0)


def test_bridge_variant_keeps_meshes_and_uses_implicitfast(cfg):
    model = build_model(cfg, "bridge")
    assert model.nmesh > 0
    assert model.opt.integrator == mujoco.mjtIntegrator.mjINT_IMPLICITFAST
    assert model.opt.solver == mujoco.mjtSolver.mjSOL_NEWTON
    assert model.opt.timestep == pytest.approx(0.002)
    assert {"imu_quat", "imu_gyro", "imu_acc"} <= {model.sensor(i).name for i in range(model.nsensor)}


def test_contact_presets_and_refsafe_are_explicit(cfg):
    floor_tc = {}
    for name, preset in CONTACT_PRESETS.items():
        model = build_model(cfg, "train", physics_dt=0.005, contact=name)
        floor = model.geom(FLOOR_NAME).id
        assert model.geom_solref[floor, 0] == pytest.approx(preset.timeconst)
        refsafe_on = not model.opt.disableflags & mujoco.mjtDisableBit.mjDSBL_REFSAFE
        assert refsafe_on == preset.refsafe
        floor_tc[name] = effective_contact_timeconst(model, floor)
    assert floor_tc["soft"] > floor_tc["default"] > floor_tc["stiff"]
    assert floor_tc["stiff"] < 2 * 0.005  # only possible because REFSAFE is off


@pytest.mark.parametrize("dt, ok", [(0.005, True), (0.004, True), (0.002, False), (0.01, False)])
def test_train_physics_dt_range(cfg, dt, ok):
    if ok:
        assert build_model(cfg, "train", physics_dt=dt).opt.timestep == pytest.approx(dt)
    else:
        with pytest.raises(ValueError, match="physics_dt"):
            build_model(cfg, "train", physics_dt=dt)


@pytest.mark.parametrize("variant, contact", [("train", "default"), ("train", "stiff"), ("train", "soft"), ("bridge", None)])
def test_g1_stands_two_seconds_under_pd(cfg, variant, contact):
    result = stand_at_default_pose(build_model(cfg, variant, contact=contact), cfg, duration_s=2.0)
    assert result.finite
    assert not result.fell
    assert result.min_root_height > 0.7
    assert result.max_joint_error < 0.15


def test_train_variant_steps_in_mjx(cfg):
    import jax
    from mujoco import mjx

    model = build_model(cfg, "train")
    mx = mjx.put_model(model)
    data = mujoco.MjData(model)
    mujoco.mj_resetDataKeyframe(model, data, 0)
    dx = mjx.put_data(model, data)
    step = jax.jit(mjx.step)
    for _ in range(5):
        dx = step(mx, dx)
        mujoco.mj_step(model, data)
    assert np.isfinite(np.asarray(dx.qpos)).all()
    np.testing.assert_allclose(np.asarray(dx.qpos), data.qpos, atol=2e-3)
