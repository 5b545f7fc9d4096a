"""The robot state as the node sees it, whichever interface delivered it (pure)."""

from __future__ import annotations

import dataclasses

import numpy as np

from bcg_robot.remote import RemoteState
from bcg_robot.wire import CommandWriter


@dataclasses.dataclass(frozen=True)
class RobotState:
    """One state sample, motor order; ``received_at`` on the receiver's monotonic clock (s)."""

    tick: int
    received_at: float
    q: np.ndarray
    dq: np.ndarray
    tau_est: np.ndarray
    quat_wxyz: np.ndarray
    gyro: np.ndarray
    motor_fault: np.ndarray | None = None  # unitree_sdk: motorstate code per joint
    motor_temperature: np.ndarray | None = None  # unitree_sdk: max winding temperature per joint, deg C
    remote: RemoteState | None = None  # unitree_sdk: decoded wireless remote
    mode_machine: int | None = None  # unitree_sdk: the robot's LowState value, 0 included; None: ros2 (not reported)

    def is_finite(self) -> bool:
        return bool(
            np.isfinite(self.q).all() and np.isfinite(self.dq).all() and np.isfinite(self.quat_wxyz).all()
            and np.isfinite(self.gyro).all()
        )


@dataclasses.dataclass(frozen=True)
class SeenCommand:
    """A command some other writer sent to the motors, seen at ``t`` (monotonic, s)."""

    t: float
    writer: CommandWriter

