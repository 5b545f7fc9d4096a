"""The safety layer's typed config (YAML, unknown keys rejected): ``config/safety.yaml``."""

from __future__ import annotations

import dataclasses
import math
from pathlib import Path

import numpy as np

from bcg_robot.config import RobotConfig
from bcg_robot.errors import ConfigError
from bcg_robot.paths import share_file
from bcg_robot.yaml_dataclass import load_dataclass

DEFAULT_SAFETY_CONFIG = share_file("config/safety.yaml")


@dataclasses.dataclass(frozen=True)
class SafetyConfig:
    stale_periods: float = 3.0  # trip when no new state (or no tick advance) for more control periods than this
    joint_limit_margin: float = 0.05  # rad inside each position limit: soft limits the targets are clamped to
    max_target_step: float = 0.3  # rad per tick a target may move (rate limit)
    torque_fraction: float = 1.0  # targets are clipped so |kp (q_t - q) - kd dq| <= fraction * effort limit
    velocity_fraction: float = 1.0  # trip when |dq| > fraction * velocity limit
    max_tilt: float = 1.0  # rad between the pelvis z axis and vertical (from projected gravity)
    max_motor_temperature: float = 90.0  # deg C (unitree_sdk: max of the two winding sensors)
    trip_on_motor_fault: bool = True  # unitree_sdk: any non-zero motorstate code trips
    ramp_duration: float = 2.0  # s from the measured pose to the default pose
    damping_kd_scale: float = 1.0  # DAMP uses kd = scale * robot config kd (kp = 0): see damping_kd
    foreign_commander_window_s: float = 0.5  # a second writer of motor commands stays a fault this long after its last
    state_wait_periods: float = 1.25  # a tick waits up to this many state periods for the next state sample (0: none)
    state_period_s: float = 0.002  # the robot's state period (G1: 500 Hz)
    source: str = dataclasses.field(default="<safety config>", compare=False)

    def validate(self) -> None:
        positive = ("stale_periods", "max_target_step", "torque_fraction", "velocity_fraction", "max_tilt",
                    "max_motor_temperature", "ramp_duration", "damping_kd_scale", "foreign_commander_window_s",
                    "state_period_s")
        for key in positive:
            value = getattr(self, key)
            if not (math.isfinite(value) and value > 0):
                raise ConfigError(self.source, f"key '{key}': must be a positive number, got {value}")
        if not (math.isfinite(self.joint_limit_margin) and self.joint_limit_margin >= 0):
            raise ConfigError(self.source, f"key 'joint_limit_margin': must be >= 0, got {self.joint_limit_margin}")
        if not (math.isfinite(self.state_wait_periods) and 0 <= self.state_wait_periods <= 5):
            raise ConfigError(self.source, f"key 'state_wait_periods': must be in [0, 5], got {self.state_wait_periods}")
        if self.torque_fraction > 1.0 or self.velocity_fraction > 1.0:
            raise ConfigError(self.source, "keys 'torque_fraction'/'velocity_fraction': must be <= 1")
        if self.max_tilt > math.pi:
            raise ConfigError(self.source, f"key 'max_tilt': {self.max_tilt} rad exceeds pi")

    def damping_kd(self, robot: RobotConfig) -> np.ndarray:
        """The kd of a damping command (kp = 0), the same for the node and the sentinel.

        It is the robot config's kd times ``damping_kd_scale``: a loaded policy's kd was
        checked against the robot's (``PolicyContract.check_against``), so whichever program
        damps, the motors get the same kd.
        """
        return robot.kd_array * self.damping_kd_scale


def load_safety_config(path: str | Path = DEFAULT_SAFETY_CONFIG) -> SafetyConfig:
    return load_dataclass(SafetyConfig, path, overrides={"source": str(path)})
