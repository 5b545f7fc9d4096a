"""The G1's left-right mirror (bcg_train.tasks.mirror) against MuJoCo: mirrored joint angles give
mirrored body positions, the observation of a mirrored state is the mirrored observation; the
shipped clips are their own mirror image; an unmirrorable joint set is an error."""

import dataclasses

import mujoco
import numpy as np
import pytest

from bcg_robot.config import load_robot_config
from bcg_robot.model import build_model, joint_dof_indices, joint_qpos_indices
from bcg_robot.observation import DEFAULT_OBSERVATION_SPEC, build_observation, raw_inputs
from bcg_train.tasks.mirror import apply, joint_mirror, mirror_raw_inputs, observation_mirror, partner_name

ROBOT = load_robot_config()
MODEL = build_model(ROBOT, "train")


def _random_state(rng):
    ids = [MODEL.joint(n).id for n in ROBOT.mjcf_joint_names]
    lo, hi = MODEL.jnt_range[ids].T
    q = rng.uniform(lo, hi)
    quat = rng.normal(size=4)
    return q, quat / np.linalg.norm(quat), rng.normal(size=3), rng.normal(size=len(q))


def test_mirrored_joint_angles_mirror_every_body():
    perm, sign = joint_mirror(MODEL, ROBOT)
    assert sorted(perm) == list(range(ROBOT.num_joints)) and set(np.abs(sign)) == {1.0}
    names = list(ROBOT.joint_names)
    assert names[perm[names.index("left_knee")]] == "right_knee" and sign[names.index("left_knee")] == 1.0
    assert sign[names.index("left_hip_roll")] == -1.0 and sign[names.index("waist_yaw")] == -1.0
    qi = joint_qpos_indices(MODEL, ROBOT)
    data = mujoco.MjData(MODEL)
    rng = np.random.default_rng(0)
    for _ in range(5):
        q = _random_state(rng)[0]
        data.qpos[:] = MODEL.qpos0
        data.qpos[qi] = q
        mujoco.mj_kinematics(MODEL, data)
        original = data.xpos.copy()
        data.qpos[qi] = apply(perm, sign, q)
        mujoco.mj_kinematics(MODEL, data)
        for body in range(1, MODEL.nbody):
            mirrored = MODEL.body(partner_name(MODEL.body(body).name)).id
            np.testing.assert_allclose(data.xpos[mirrored], original[body] * [1.0, -1.0, 1.0], atol=1e-4)  # the model's own asymmetry: ~1e-5 m
    # the default pose is its own mirror image
    np.testing.assert_allclose(apply(perm, sign, ROBOT.default_q), ROBOT.default_q, atol=1e-9)


def test_observation_of_the_mirrored_state_is_the_mirrored_observation():
    perm, sign = joint_mirror(MODEL, ROBOT)
    index, obs_sign = observation_mirror(DEFAULT_OBSERVATION_SPEC, perm, sign)
    qi, di = joint_qpos_indices(MODEL, ROBOT), joint_dof_indices(MODEL, ROBOT)
    data = mujoco.MjData(MODEL)
    rng = np.random.default_rng(1)
    for _ in range(5):
        q, quat, gyro, qd = _random_state(rng)
        last = rng.normal(size=len(q))
        phase = np.array([rng.uniform()])
        obs = build_observation(DEFAULT_OBSERVATION_SPEC, raw_inputs(quat, gyro, q, qd, last, phase), ROBOT.default_q)
        # the mirrored state: y reflected (R -> M R M: quaternion w, -x, y, -z), body rates x and z flip
        mirrored_quat = quat * [1.0, -1.0, 1.0, -1.0]
        raw = raw_inputs(mirrored_quat, gyro * [-1.0, 1.0, -1.0], apply(perm, sign, q), apply(perm, sign, qd), apply(perm, sign, last), phase)
        np.testing.assert_allclose(apply(index, obs_sign, obs), build_observation(DEFAULT_OBSERVATION_SPEC, raw, ROBOT.default_q), atol=1e-6)
        probe = mirror_raw_inputs(raw_inputs(quat, gyro, q, qd, last, phase), perm, sign)  # what policy_asymmetry.py feeds an ONNX policy
        for name, value in raw.items():
            np.testing.assert_allclose(probe[name], value, atol=1e-12, err_msg=name)
        # the mirrored quaternion is the mirrored rotation (checked with MuJoCo's conversion)
        r, rm = np.zeros(9), np.zeros(9)
        mujoco.mju_quat2Mat(r, quat)
        mujoco.mju_quat2Mat(rm, mirrored_quat)
        m = np.diag([1.0, -1.0, 1.0])
        np.testing.assert_allclose(rm.reshape(3, 3), m @ r.reshape(3, 3) @ m, atol=1e-12)
        # and the mirrored body rate turns the mirrored orientation as the rate turns the original
        turned, mirrored_turned = quat.copy(), mirrored_quat.copy()
        mujoco.mju_quatIntegrate(turned, gyro, 0.01)
        mujoco.mju_quatIntegrate(mirrored_turned, gyro * [-1.0, 1.0, -1.0], 0.01)
        np.testing.assert_allclose(mirrored_turned, turned * [1.0, -1.0, 1.0, -1.0], atol=1e-12)
    assert qi.shape == di.shape


def test_the_shipped_clips_are_their_own_mirror_and_the_task_says_so():
    from bcg_train.tasks.config import ImitationConfig
    from bcg_train.tasks.imitation import ImitationTask

    for clip in ("squat", "jump"):
        task = ImitationTask(ImitationConfig(motion=f"models/motions/{clip}.csv"), ROBOT)
        assert "_joint_mirror" not in vars(task)  # built on first use only (the mirror loss), not at start-up
        assert task.motion_mirror_error < 1e-6, clip
        obs = np.random.default_rng(2).normal(size=(3, task.obs_size)).astype(np.float32)
        np.testing.assert_allclose(np.asarray(task.mirror_observation(task.mirror_observation(obs))), obs)  # an involution
    lopsided = dataclasses.replace(task.reference, joint_pos=task.reference.joint_pos + 0.2 * (np.arange(ROBOT.num_joints) == 0))
    assert ImitationTask(ImitationConfig(motion="models/motions/jump.csv"), ROBOT, lopsided).motion_mirror_error == pytest.approx(0.2, abs=1e-6)


def test_an_unmirrorable_robot_or_feature_is_an_error():
    perm, sign = joint_mirror(MODEL, ROBOT)
    with pytest.raises(ValueError, match="unknown observation feature 'heading'"):
        observation_mirror(("projected_gravity", "heading"), perm, sign)
    one_sided = dataclasses.replace(ROBOT, joint_names=tuple(j for j in ROBOT.joint_names if not j.startswith("right_")))
    with pytest.raises(ValueError, match="no mirror partner 'right_hip_pitch_joint'"):
        joint_mirror(MODEL, one_sided)
