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
    stale_periods: float = 3.0  # trip when no new state, tick advance or node tick for more control periods than this
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
        for key, (low, high) in _RANGES.items():
            value = getattr(self, key)
            if not (math.isfinite(value) and low < value <= high):
                raise ConfigError(self.source, f"key '{key}': must be in ({low:g}, {high:g}], got {value}")
        if not (math.isfinite(self.joint_limit_margin) and 0 <= self.joint_limit_margin <= 0.5):
            raise ConfigError(self.source, f"key 'joint_limit_margin': must be in [0, 0.5] rad, got {self.joint_limit_margin}")
        if not (math.isfinite(self.state_wait_periods) and 0 <= self.state_wait_periods <= 5):
            raise ConfigError(self.source, f"key 'state_wait_periods': must be in [0, 5], got {self.state_wait_periods}")
        if self.ramp_duration < 0.5:
            raise ConfigError(self.source, f"key 'ramp_duration': {self.ramp_duration} s is a jump to the default pose, need >= 0.5")

    def stale_after(self, control_dt: float) -> float:
        """The stale limit in seconds: a state, a tick counter or the node's own tick older than
        this trips (the node), and the sentinel must wait longer before it takes over."""
        return self.stale_periods * control_dt

    def check_against(self, robot: RobotConfig) -> None:
        """What depends on the robot: a tick's wait for a state sample must leave it time to
        compute, and the soft joint limits must hold the default pose. The node and the
        sentinel both check it: a sentinel must not watch over a config its node refuses."""
        wait = self.state_wait_periods * self.state_period_s
        if wait > 0.25 * robot.control_dt:
            raise ConfigError(self.source, f"keys 'state_wait_periods' x 'state_period_s': a tick would wait up to "
                                           f"{wait * 1e3:g} ms for a state, more than a quarter of the {robot.control_dt * 1e3:g} ms control period")
        lower, upper = self.soft_limits(robot)
        bad = np.flatnonzero((lower > robot.default_q) | (upper < robot.default_q))
        if bad.size:
            raise ConfigError(self.source, f"key 'joint_limit_margin': {self.joint_limit_margin} rad puts the default "
                                           f"pose of '{robot.joint_names[bad[0]]}' outside its soft limits")

    def soft_limits(self, robot: RobotConfig) -> tuple[np.ndarray, np.ndarray]:
        """(lower, upper): the joint limits less ``joint_limit_margin``."""
        return robot.lower + self.joint_limit_margin, robot.upper - self.joint_limit_margin

    def damping_kd(self, robot: RobotConfig) -> np.ndarray:
        """The kd of a damping command (kp = 0), the same for the node and the sentinel.

        It is the robot config's kd times ``damping_kd_scale``: a loaded policy's kd was
        checked against the robot's (``PolicyContract.check_against``), so whichever program
        damps, the motors get the same kd.
        """
        return robot.kd_array * self.damping_kd_scale


# (low, high]: a value outside is a typo or a watchdog switched off (a stale limit of 20,000 s)
_RANGES = {
    "stale_periods": (0.0, 10.0),
    "max_target_step": (0.0, 0.5),  # rad per tick
    "torque_fraction": (0.0, 1.0),
    "velocity_fraction": (0.0, 1.0),
    "max_tilt": (0.0, math.pi / 2),  # rad: past horizontal the robot is down
    "max_motor_temperature": (0.0, 120.0),  # deg C
    "ramp_duration": (0.0, 30.0),  # s (and >= 0.5, checked apart)
    "damping_kd_scale": (0.0, 5.0),
    "foreign_commander_window_s": (0.0, 10.0),
    "state_period_s": (0.0, 0.02),
}


def load_safety_config(path: str | Path = DEFAULT_SAFETY_CONFIG) -> SafetyConfig:
    return load_dataclass(SafetyConfig, path, overrides={"source": str(path)})
