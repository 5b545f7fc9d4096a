"""The policy contract: what a policy assumes about the robot, carried inside its ONNX file.

Stored as ONNX ``metadata_props`` (string values, lists as JSON) and checked against
the robot config when a policy is loaded. Input and output names are fixed:

inputs   ``imu_quat``, ``imu_gyro``, ``joint_pos``, ``joint_vel``, ``last_action``, ``phase``
         (shapes ``[1, k]``, float32; see :mod:`bcg_robot.observation`)
outputs  ``joint_targets`` ``[1, n]`` absolute joint position targets (rad, motor order),
         ``action`` ``[1, n]`` the raw action, fed back as ``last_action`` next tick.
"""

from __future__ import annotations

import dataclasses
import json
import math
from typing import Any

import numpy as np

from bcg_robot.action_offset import DEFAULT_POSE, REFERENCE, check_action_offset
from bcg_robot.config import RobotConfig
from bcg_robot.errors import ContractError
from bcg_robot.observation import DEFAULT_OBSERVATION_SPEC, RAW_INPUT_NAMES, check_observation_spec

CONTRACT_VERSION = 1
INPUT_NAMES = RAW_INPUT_NAMES
OUTPUT_NAMES = ("joint_targets", "action")
CONTROL_DT_TOLERANCE = 1e-9
GAIN_TOLERANCE = 1e-6  # float32 round trips of gains
ACTION_SCALE_TOLERANCE = 1e-6  # relative
DEFAULT_POSE_TOLERANCE = 1e-6  # rad: the exporter writes the robot config's pose

_LIST_FIELDS = ("joint_names", "default_pose", "kp", "kd", "action_scale", "observation_spec")


@dataclasses.dataclass(frozen=True)
class PolicyContract:
    robot: str
    joint_names: tuple[str, ...]
    default_pose: tuple[float, ...]
    kp: tuple[float, ...]
    kd: tuple[float, ...]
    action_scale: tuple[float, ...]
    control_dt: float
    observation_spec: tuple[str, ...] = DEFAULT_OBSERVATION_SPEC
    motion_id: str = "default_pose"
    motion_length_s: float = 0.0  # 0: no reference motion (phase stays 0)
    motion_sha256: str = ""  # of the clip file trained on ('': not recorded, or no clip)
    # what the action is relative to (bcg_robot.action_offset): the default pose, or the
    # reference motion, whose joint table is then inside the graph
    action_offset: str = DEFAULT_POSE
    config_hash: str = ""
    source_commit: str = ""
    contract_version: int = CONTRACT_VERSION

    @property
    def num_joints(self) -> int:
        return len(self.joint_names)

    @classmethod
    def for_robot(cls, robot: RobotConfig, **overrides: Any) -> "PolicyContract":
        """A contract with the robot's joint order, default pose, gains and rate."""
        values = dict(
            robot=robot.name,
            joint_names=tuple(robot.joint_names),
            default_pose=tuple(robot.default_pose),
            kp=tuple(robot.kp),
            kd=tuple(robot.kd),
            action_scale=(robot.action_scale,) * robot.num_joints,
            control_dt=robot.control_dt,
        )
        values.update(overrides)
        return cls(**values)

    def to_metadata(self) -> dict[str, str]:
        meta = {}
        for field in dataclasses.fields(self):
            value = getattr(self, field.name)
            meta[field.name] = json.dumps(list(value)) if field.name in _LIST_FIELDS else str(value)
        return meta

    @classmethod
    def from_metadata(cls, meta: dict[str, str], source: str) -> "PolicyContract":
        values: dict[str, Any] = {}
        for field in dataclasses.fields(cls):
            if field.name not in meta:
                if field.default is dataclasses.MISSING:
                    raise ContractError(source, f"policy metadata lacks '{field.name}' (not a BCG policy export?)")
                continue
            raw = meta[field.name]
            try:
                if field.name in _LIST_FIELDS:
                    value = json.loads(raw)
                    if not isinstance(value, list):
                        raise ValueError("not a list")
                    if field.name in ("joint_names", "observation_spec"):
                        value = tuple(str(v) for v in value)
                    else:
                        value = tuple(float(v) for v in value)
                elif field.name in ("control_dt", "motion_length_s"):
                    value = float(raw)
                elif field.name == "contract_version":
                    value = int(raw)
                else:
                    value = raw
            except (ValueError, TypeError, OverflowError) as err:  # OverflowError: an integer beyond the float range
                raise ContractError(source, f"policy metadata '{field.name}' is malformed: {err}") from None
            except RecursionError:  # json.loads recurses once per level of nesting
                raise ContractError(source, f"policy metadata '{field.name}' is malformed: nested too deeply") from None
            values[field.name] = value
        contract = cls(**values)
        contract.validate(source)
        return contract

    def validate(self, source: str) -> None:
        """Internal consistency, independent of any robot."""
        if self.contract_version != CONTRACT_VERSION:
            raise ContractError(source, f"contract version {self.contract_version}, this build reads {CONTRACT_VERSION}")
        n = self.num_joints
        for name in ("default_pose", "kp", "kd", "action_scale"):
            values = getattr(self, name)
            if len(values) != n:
                raise ContractError(source, f"policy '{name}' has {len(values)} values for {n} joints")
            if not all(math.isfinite(v) for v in values):
                raise ContractError(source, f"policy '{name}' has a non-finite value")
        if any(v < 0 for v in self.kp + self.kd):
            raise ContractError(source, "policy gains must be >= 0")
        if any(v <= 0 for v in self.action_scale):
            raise ContractError(source, "policy action_scale must be > 0")
        if not (math.isfinite(self.control_dt) and self.control_dt > 0):
            raise ContractError(source, f"policy control_dt {self.control_dt} is not a positive number")
        if not (math.isfinite(self.motion_length_s) and self.motion_length_s >= 0):
            raise ContractError(source, f"policy motion_length_s {self.motion_length_s} is not a number >= 0")
        try:
            check_observation_spec(self.observation_spec)
        except ValueError as err:
            raise ContractError(source, f"policy observation_spec: {err}") from None
        try:
            check_action_offset(self.action_offset)
        except ValueError as err:
            raise ContractError(source, f"policy {err}") from None
        if self.action_offset == REFERENCE and not self.motion_length_s > 0:
            raise ContractError(source, "policy action_offset 'reference' needs a motion (motion_length_s > 0)")

    def check_against(self, robot: RobotConfig, source: str) -> None:
        """Raise :class:`ContractError` unless this policy can drive ``robot``."""
        self.validate(source)
        if self.robot != robot.name:
            raise ContractError(source, f"policy was exported for robot '{self.robot}', the robot config is '{robot.name}'")
        if self.num_joints != robot.num_joints:
            raise ContractError(source, f"policy has {self.num_joints} joints, robot '{robot.name}' has {robot.num_joints}")
        for i, (ours, theirs) in enumerate(zip(self.joint_names, robot.joint_names)):
            if ours != theirs:
                raise ContractError(
                    source, f"joint {i} is '{ours}' in the policy but '{theirs}' on the robot (joint order mismatch)"
                )
        if abs(self.control_dt - robot.control_dt) > CONTROL_DT_TOLERANCE:
            raise ContractError(source, f"policy control_dt {self.control_dt} s != robot control_dt {robot.control_dt} s")
        # the pose the node ramps to and holds, and the policy's observation is taken around: the
        # robot config's (inside the joint limits), which the trainer exported (a metadata edit with
        # action_offset 'reference' has no graph-side check, onnx_policy._check_offset_and_scale)
        q0 = np.asarray(self.default_pose)
        moved = np.flatnonzero(np.abs(q0 - robot.default_pose) > DEFAULT_POSE_TOLERANCE)
        if moved.size:
            j = moved[0]
            raise ContractError(source, f"policy default pose of '{robot.joint_names[j]}' is {q0[j]:.6g}, "
                                        f"robot config has {robot.default_pose[j]:.6g}")
        self.check_gains(robot, source)
        scale = np.asarray(self.action_scale)
        wrong = np.flatnonzero(np.abs(scale - robot.action_scale) > ACTION_SCALE_TOLERANCE * robot.action_scale)
        if wrong.size:  # the robot config is the one source of the action scale the trainer used
            j = wrong[0]
            raise ContractError(source, f"policy action_scale of '{robot.joint_names[j]}' is {scale[j]:g}, "
                                        f"robot config has {robot.action_scale:g}")

    def check_gains(self, robot: RobotConfig, source: str) -> None:
        """kp and kd within ``robot.policy_gain_ratio`` of the robot's, either way, per joint."""
        ratio = robot.policy_gain_ratio
        for name in ("kp", "kd"):
            ours, theirs = getattr(self, name), getattr(robot, name)
            for joint, a, b in zip(robot.joint_names, ours, theirs):
                if not (b / ratio - GAIN_TOLERANCE <= a <= b * ratio + GAIN_TOLERANCE):
                    bound = "equal to" if ratio == 1.0 else f"within {ratio:g}x of"
                    raise ContractError(source, f"policy {name} of '{joint}' is {a:g}, robot config has {b:g} "
                                                f"(must be {bound} it: policy_gain_ratio)")
