"""State faults the bridge injects on request (``sim/inject``), each held until ``clear``.

Every fault makes the published robot state trip one of the policy node's watchdogs
(:data:`INJECTIONS`); ``remote_start`` is no fault, it presses the remote's RUN buttons.
The first state published after a request stamps the injection (``injected_at``) and
remembers when the last state before it went out (``last_good_at``), both
``time.monotonic()``: a benchmark measures a watchdog's reaction from there (a stale
family fault holds once the last good state is older than the node's window).
"""

from __future__ import annotations

import dataclasses
import threading

import numpy as np

from bcg_robot.config import RobotConfig
from bcg_robot.remote import button_mask
from bcg_robot.wire import TRANSPORT_UNITREE_SDK
from bcg_policy_node.operator_api import REMOTE_ESTOP_BUTTONS, REMOTE_RUN_BUTTONS
from bcg_sim_bridge.physics import BridgeState

# injection -> the watchdog it must trip
INJECTIONS = {
    "freeze": "stale_state", "stall_tick": "tick_stalled", "nan": "nonfinite_state", "overspeed": "joint_velocity",
    "tilt": "tilt", "motor_fault": "motor_fault", "hot": "motor_temperature", "remote_estop": "remote_estop",
    "corrupt_crc": "stale_state", "remote_start": None,
}
SDK_ONLY = ("motor_fault", "hot", "remote_estop", "remote_start", "corrupt_crc")
REMOTE_BUTTONS = {"remote_estop": REMOTE_ESTOP_BUTTONS, "remote_start": REMOTE_RUN_BUTTONS}
FAULTY_JOINT = "left_knee"  # "motor_fault" reports a fault code on this joint's motor
HOT_JOINT = "right_knee"  # "hot" reports this joint's motor at HOT_MOTOR_TEMPERATURE_C
HOT_MOTOR_TEMPERATURE_C = 120.0
NORMAL_MOTOR_TEMPERATURE_C = 40.0
TILT_QUAT = np.array([np.cos(0.65), np.sin(0.65), 0.0, 0.0])  # 1.3 rad about x (w x y z)


def faulty_state(state: BridgeState, fault: str, robot: RobotConfig, stalled_tick: int) -> BridgeState | None:
    """``state`` as a robot with ``fault`` reports it; None when it reports nothing (``freeze``)."""
    if fault == "freeze":
        return None
    if fault == "stall_tick":
        return dataclasses.replace(state, tick=stalled_tick)
    if fault == "nan":
        q = state.q.copy()
        q[0] = np.nan
        return dataclasses.replace(state, q=q)
    if fault == "overspeed":
        dq = state.dq.copy()
        dq[3] = 2.0 * robot.velocity_limits[3]
        return dataclasses.replace(state, dq=dq)
    if fault == "tilt":
        return dataclasses.replace(state, imu_quat=TILT_QUAT.copy())
    if fault in ("motor_fault", "hot"):
        names = list(robot.joint_names)
        motor_fault = np.zeros(robot.num_joints, dtype=np.int64)
        temperature = np.full(robot.num_joints, NORMAL_MOTOR_TEMPERATURE_C)
        if fault == "motor_fault":
            motor_fault[names.index(FAULTY_JOINT)] = 1
        else:
            temperature[names.index(HOT_JOINT)] = HOT_MOTOR_TEMPERATURE_C
        return dataclasses.replace(state, motor_fault=motor_fault, motor_temperature=temperature)
    return state  # corrupt_crc (sealed by the transport), remote buttons (held by the transport)


class StateFaultInjector:
    """The held injection; requests come from the executor thread, states from the loop thread."""

    def __init__(self, robot: RobotConfig, transport: str):
        self.robot = robot
        self.transport = transport
        self._lock = threading.Lock()
        self.fault = ""
        self.injected_at = 0.0
        self.last_good_at = 0.0
        self.last_state_at = 0.0
        self._last_tick = 0  # of the last state published
        self._stalled_tick = 0

    def request(self, what: str) -> str:
        """Set or ``clear`` the injection; returns an error message ('' when accepted)."""
        if what != "clear" and what not in INJECTIONS:
            return f"unknown injection '{what}' ({' | '.join(INJECTIONS)} | clear)"
        if what in SDK_ONLY and self.transport != TRANSPORT_UNITREE_SDK:
            return f"injection '{what}' needs the unitree_sdk interface"
        with self._lock:
            self.fault, self.injected_at = ("", 0.0) if what == "clear" else (what, 0.0)
        return ""

    @staticmethod
    def remote_buttons(what: str) -> int | None:
        """The remote button mask the transport reports after request ``what``; None: unchanged
        (``clear`` releases every button, ``sim/remote``'s too)."""
        if what in REMOTE_BUTTONS or what == "clear":
            return button_mask(REMOTE_BUTTONS.get(what, ()))
        return None

    def apply(self, state: BridgeState, now: float) -> tuple[BridgeState | None, bool]:
        """(the state to publish or None, whether to seal it with a wrong CRC)."""
        with self._lock:
            fault = self.fault
            if fault and self.injected_at == 0.0:
                self.injected_at = now
                self.last_good_at = self.last_state_at  # the last state published before the injection
                self._stalled_tick = self._last_tick  # "stall_tick" repeats the last tick sent
            stalled = self._stalled_tick
        if not fault:
            return state, False
        return faulty_state(state, fault, self.robot, stalled), fault == "corrupt_crc"

    def published(self, state: BridgeState, now: float) -> None:
        with self._lock:
            self.last_state_at = now
            self._last_tick = state.tick

    def status(self) -> dict:
        with self._lock:
            return {"injection": self.fault, "injected_at": self.injected_at, "last_good_at": self.last_good_at,
                    "last_state_at": self.last_state_at}
