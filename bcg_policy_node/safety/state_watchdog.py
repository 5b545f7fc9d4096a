"""Watchdogs on the robot state (pure): freshness, tick progress, finiteness, joint
velocity, tilt, motor faults and temperature, the remote's L2+B."""

from __future__ import annotations

import numpy as np

from bcg_robot.config import RobotConfig
from bcg_robot.observation import projected_gravity
from bcg_robot.wire import UNITREE_MODE_MACHINE_BY_JOINTS

from bcg_policy_node.config.safety_config import SafetyConfig
from bcg_policy_node.interfaces.robot_state import RobotState
from bcg_policy_node.operator_api import REMOTE_ESTOP_BUTTONS
from bcg_policy_node.safety.faults import Fault


def tilt_angle(quat_wxyz: np.ndarray) -> float:
    """Angle (rad) between the body z axis and vertical, from the IMU quaternion."""
    q = np.asarray(quat_wxyz, dtype=np.float64)
    q = q / np.linalg.norm(q)
    g = projected_gravity(q)
    return float(np.arccos(np.clip(-g[2], -1.0, 1.0)))


class StateWatchdog:
    """Checks each state sample; remembers the tick to see it advance."""

    def __init__(self, robot: RobotConfig, config: SafetyConfig, control_dt: float):
        self.robot = robot
        self.config = config
        self.stale_after = config.stale_after(control_dt)
        self.velocity_limit = robot.velocity * config.velocity_fraction
        self._last_tick: int | None = None
        self._tick_changed_at = 0.0
        self.tick_advanced = False  # a sample with a new tick has followed the first one
        self.mode_machine = UNITREE_MODE_MACHINE_BY_JOINTS.get(robot.num_joints)  # None: no Unitree variant has this count

    def reset(self) -> None:
        self._last_tick, self.tick_advanced = None, False

    def check(self, now: float, state: RobotState | None) -> list[Fault]:
        if state is None:
            return []
        faults: list[Fault] = []
        age = now - state.received_at
        if age > self.stale_after:
            faults.append(Fault("stale_state", f"no new robot state for {age * 1e3:.0f} ms (limit {self.stale_after * 1e3:.0f} ms)"))
        # The stall is the span over which arriving samples showed the same tick: from the
        # first sample with the current value to the newest one. A stream that stopped
        # altogether is stale_state, not a stall. States are sampled once a control tick,
        # so the first sample seen with a value can be up to a tick after it was set: this
        # watchdog may trip up to one control period late, never early (dating the change
        # to the previous sample instead turned the node's own scheduling gaps into trips).
        # Any change counts, a step back too: the uint32 tick wraps, and a restarted low-level
        # board counts from 0 (with '>' either latched this fault on every later tick).
        if state.tick != self._last_tick:
            self.tick_advanced |= self._last_tick is not None
            self._last_tick, self._tick_changed_at = state.tick, state.received_at
        stalled = state.received_at - self._tick_changed_at
        if stalled > self.stale_after:
            faults.append(Fault("tick_stalled", f"state tick stuck at {self._last_tick} for {stalled * 1e3:.0f} ms"))
        # None: not reported (ros2 transport). A 0 from the robot is a wrong value like any other: every
        # command (the sentinel's damping too) copies it, and the robot ignores a command carrying it
        if state.mode_machine is not None and state.mode_machine != self.mode_machine:
            faults.append(Fault("robot_variant", f"the robot reports mode_machine {state.mode_machine}, a robot config "
                                                 f"with {self.robot.num_joints} joints needs {self.mode_machine}"))
        if not state.is_finite():
            faults.append(Fault("nonfinite_state", "NaN/Inf in robot state (joint positions, velocities or IMU)"))
            return faults
        names = self.robot.joint_names
        ratio = np.abs(state.dq) / self.velocity_limit
        j = int(np.argmax(ratio))
        if ratio[j] > 1.0:
            faults.append(Fault("joint_velocity", f"'{names[j]}' at {state.dq[j]:.2f} rad/s, limit {self.velocity_limit[j]:.2f}"))
        if np.linalg.norm(state.quat_wxyz) < 0.5:
            faults.append(Fault("nonfinite_state", "IMU quaternion is not a rotation (norm < 0.5)"))
        else:
            tilt = tilt_angle(state.quat_wxyz)
            if tilt > self.config.max_tilt:
                faults.append(Fault("tilt", f"pelvis tilted {tilt:.2f} rad, limit {self.config.max_tilt:.2f}"))
        if self.config.trip_on_motor_fault and state.motor_fault is not None and np.any(state.motor_fault != 0):
            j = int(np.flatnonzero(state.motor_fault)[0])
            faults.append(Fault("motor_fault", f"'{names[j]}' reports fault code {int(state.motor_fault[j])}"))
        if state.motor_temperature is not None:
            j = int(np.argmax(state.motor_temperature))
            if state.motor_temperature[j] > self.config.max_motor_temperature:
                faults.append(Fault("motor_temperature", f"'{names[j]}' at {state.motor_temperature[j]:.0f} C, "
                                                         f"limit {self.config.max_motor_temperature:.0f} C"))
        if state.remote is not None and state.remote.pressed(*REMOTE_ESTOP_BUTTONS):
            faults.append(Fault("remote_estop", "remote " + "+".join(REMOTE_ESTOP_BUTTONS) + " pressed"))
        return faults
