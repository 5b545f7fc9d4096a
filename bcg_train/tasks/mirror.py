"""Left-right mirror of the G1's observation and action (sagittal plane, world y -> -y).

For a symmetric motion (the squat, the jump) the policy that tracks it should act as its own
mirror image: the action it takes in the mirrored state is the mirrored action. A policy
trained without that constraint need not (the newton4 squat falls after 7 of 13 backward-left
pushes and 3 of the other 37); SHAC's ``mirror_loss_weight`` adds
``|| pi(M_o o) - M_a pi(o) ||^2`` over each window's observations to the actor loss.

The joint map is read from the model, not written down: each joint's partner swaps
``left_``/``right_`` in its name (a centre joint is its own partner), and the sign follows
from the hinge axes. Reflecting y maps a rotation by theta about axis ``a`` to one by
``-theta`` about ``M a`` (M = diag(1, -1, 1)), so with the partner's axis ``b`` (in the
mirrored body frame) the partner's angle is ``-(b . M a) theta``: +1 for pitch joints
(axis y), -1 for roll and yaw. ``test/bcg_train/tasks/test_mirror.py`` checks the map
against MuJoCo's forward kinematics.
"""

from __future__ import annotations

from typing import Any

import mujoco
import numpy as np

from bcg_robot.config import RobotConfig
from bcg_robot.observation import FEATURES, check_observation_spec

REFLECT_Y = np.diag([1.0, -1.0, 1.0])


def partner_name(name: str) -> str:
    for a, b in (("left_", "right_"), ("right_", "left_")):
        if name.startswith(a):
            return b + name[len(a):]
    return name


def joint_mirror(model: mujoco.MjModel, robot: RobotConfig) -> tuple[np.ndarray, np.ndarray]:
    """``(perm, sign)`` in motor order: the mirrored joint vector is ``sign * q[perm]``."""
    names = list(robot.mjcf_joint_names)
    perm, sign = [], []
    for name in names:
        partner = partner_name(name)
        if partner not in names:
            raise ValueError(f"joint '{name}': no mirror partner '{partner}' among the robot's joints")
        a = model.jnt_axis[model.joint(name).id]
        b = model.jnt_axis[model.joint(partner).id]
        s = -float(b @ REFLECT_Y @ a)
        if abs(abs(s) - 1.0) > 1e-6:
            raise ValueError(f"joint '{name}': axis {a} is not the mirror of '{partner}' axis {b}")
        perm.append(names.index(partner))
        sign.append(np.sign(s))
    return np.asarray(perm), np.asarray(sign, np.float32)


def _vector_sign(name: str) -> np.ndarray | None:
    """Mirror signs of a 3-vector feature: a polar vector flips y, an axial one x and z."""
    if name == "projected_gravity":
        return np.array([1.0, -1.0, 1.0], np.float32)
    if name == "base_ang_vel":
        return GYRO_SIGN.astype(np.float32)
    return None


JOINT_FEATURES = ("joint_pos_rel", "joint_vel", "last_action")
INVARIANT_FEATURES = ("phase_sin_cos",)


def observation_mirror(spec: tuple[str, ...] | list[str], perm: np.ndarray, sign: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(index, sign)`` over the observation: the mirrored observation is ``sign * obs[..., index]``."""
    check_observation_spec(spec)
    n = len(perm)
    index, signs, start = [], [], 0
    for name in spec:
        size = FEATURES[name].size(n)
        if name in JOINT_FEATURES:
            index.append(start + perm)
            signs.append(sign)
        elif _vector_sign(name) is not None:
            index.append(start + np.arange(3))
            signs.append(_vector_sign(name))
        elif name in INVARIANT_FEATURES:
            index.append(start + np.arange(size))
            signs.append(np.ones(size, np.float32))
        else:
            raise ValueError(f"observation feature '{name}': no mirror defined")  # a feature added to bcg_robot.observation
        start += size
    return np.concatenate(index), np.concatenate(signs).astype(np.float32)


QUAT_SIGN = np.array([1.0, -1.0, 1.0, -1.0])  # w x y z of M R M
GYRO_SIGN = np.array([-1.0, 1.0, -1.0])  # an axial vector: x and z flip


def mirror_raw_inputs(raw: dict[str, Any], perm: np.ndarray, sign: np.ndarray) -> dict[str, Any]:
    """The raw policy inputs (:mod:`bcg_robot.observation`) of the mirrored robot state, the
    phase unchanged: for probing a deployed (ONNX) policy's symmetry."""
    return dict(raw, imu_quat=raw["imu_quat"] * QUAT_SIGN, imu_gyro=raw["imu_gyro"] * GYRO_SIGN,
                joint_pos=apply(perm, sign, raw["joint_pos"]), joint_vel=apply(perm, sign, raw["joint_vel"]),
                last_action=apply(perm, sign, raw["last_action"]))


def apply(index: np.ndarray, sign: np.ndarray, x: Any) -> Any:
    """``sign * x[..., index]`` (numpy or jax arrays)."""
    return sign * x[..., index]
