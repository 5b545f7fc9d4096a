"""Observation features from raw robot state: one definition for trainer, export and node.

A policy's observation is a concatenation of named features (its *observation spec*)
computed from the raw state the robot reports. The same functions run on numpy and on
``jax.numpy`` (pass ``xp``); the ONNX exporter bakes the identical computation into the
graph, so a deployed policy takes raw state (:data:`RAW_INPUTS`) and a parity test
checks graph against this module.

Raw inputs (all float32, leading batch dimension allowed):

``imu_quat``      (4,)  pelvis IMU orientation, w x y z
``imu_gyro``      (3,)  pelvis angular velocity in the IMU frame, rad/s
``joint_pos``     (n,)  joint positions in motor order, rad
``joint_vel``     (n,)  joint velocities in motor order, rad/s
``last_action``   (n,)  the policy's previous raw action (before scaling)
``phase``         (1,)  motion phase in [0, 1); 0 for policies without a motion
"""

from __future__ import annotations

import dataclasses
from typing import Any, Callable

import numpy as np


def raw_input_sizes(num_joints: int) -> dict[str, int]:
    return {
        "imu_quat": 4,
        "imu_gyro": 3,
        "joint_pos": num_joints,
        "joint_vel": num_joints,
        "last_action": num_joints,
        "phase": 1,
    }


RAW_INPUT_NAMES = tuple(raw_input_sizes(0))


def raw_inputs(imu_quat: Any, imu_gyro: Any, joint_pos: Any, joint_vel: Any, last_action: Any, phase: Any) -> dict[str, Any]:
    """The raw policy inputs keyed by their names (see the module docstring).

    The arrays pass through unchanged (numpy or ``jax.numpy``, with or without a batch
    dimension); :meth:`bcg_robot.onnx_policy.OnnxPolicy.run` casts them for onnxruntime.
    """
    return {
        "imu_quat": imu_quat,
        "imu_gyro": imu_gyro,
        "joint_pos": joint_pos,
        "joint_vel": joint_vel,
        "last_action": last_action,
        "phase": phase,
    }


def projected_gravity(quat_wxyz: Any, xp: Any = np) -> Any:
    """Gravity direction (0, 0, -1) in the body frame: R(q)^T g."""
    w, x, y, z = (quat_wxyz[..., i] for i in range(4))
    gx = -2.0 * (x * z - w * y)
    gy = -2.0 * (y * z + w * x)
    gz = -(1.0 - 2.0 * (x * x + y * y))
    return xp.stack([gx, gy, gz], axis=-1)


@dataclasses.dataclass(frozen=True)
class Feature:
    size: Callable[[int], int]
    compute: Callable[[dict[str, Any], Any, Any], Any]  # (raw, default_pose, xp) -> array
    doc: str


FEATURES: dict[str, Feature] = {
    "projected_gravity": Feature(
        lambda n: 3, lambda raw, q0, xp: projected_gravity(raw["imu_quat"], xp), "gravity in the pelvis frame"
    ),
    "base_ang_vel": Feature(lambda n: 3, lambda raw, q0, xp: raw["imu_gyro"], "IMU angular velocity"),
    "joint_pos_rel": Feature(lambda n: n, lambda raw, q0, xp: raw["joint_pos"] - q0, "joint positions minus default pose"),
    "joint_vel": Feature(lambda n: n, lambda raw, q0, xp: raw["joint_vel"], "joint velocities"),
    "last_action": Feature(lambda n: n, lambda raw, q0, xp: raw["last_action"], "previous raw action"),
    "phase_sin_cos": Feature(
        lambda n: 2,
        lambda raw, q0, xp: xp.concatenate(
            [xp.sin(2 * np.pi * raw["phase"]), xp.cos(2 * np.pi * raw["phase"])], axis=-1
        ),
        "sin and cos of 2 pi phase",
    ),
}

DEFAULT_OBSERVATION_SPEC = (
    "projected_gravity",
    "base_ang_vel",
    "joint_pos_rel",
    "joint_vel",
    "last_action",
    "phase_sin_cos",
)


def check_observation_spec(spec: tuple[str, ...] | list[str]) -> None:
    if not spec:  # a policy that sees nothing: its graph has no input to concatenate
        raise ValueError("observation spec is empty")
    unknown = [name for name in spec if name not in FEATURES]
    if unknown:
        raise ValueError(f"unknown observation feature '{unknown[0]}' (known: {', '.join(FEATURES)})")
    if len(set(spec)) != len(spec):
        raise ValueError("observation spec repeats a feature")


def observation_size(spec: tuple[str, ...] | list[str], num_joints: int) -> int:
    check_observation_spec(spec)
    return sum(FEATURES[name].size(num_joints) for name in spec)


def build_observation(spec: tuple[str, ...] | list[str], raw: dict[str, Any], default_pose: Any, xp: Any = np) -> Any:
    """Concatenate the features of ``spec`` computed from ``raw`` (see module docstring)."""
    return xp.concatenate([FEATURES[name].compute(raw, default_pose, xp) for name in spec], axis=-1)
