"""The control state machine (pure): PASSIVE -> RAMP -> HOLD -> RUN, any -> DAMP.

RUN is entered only by an explicit operator request from HOLD. DAMP latches: only a
reset leaves it, and only while no fault is present; reset leads to PASSIVE.
"""

from __future__ import annotations

import dataclasses

from bcg_policy_node.operator_api import ControlState
from bcg_policy_node.safety.faults import Fault


@dataclasses.dataclass(frozen=True)
class Transition:
    before: ControlState
    after: ControlState
    reason: str


class ControlStateMachine:
    def __init__(self, ramp_duration: float):
        self.ramp_duration = ramp_duration
        self.state = ControlState.PASSIVE
        self.fault: Fault | None = None
        self.entered_at = 0.0
        self.transitions: list[Transition] = []  # drained by the caller (for logging)

    def _go(self, after: ControlState, now: float, reason: str) -> None:
        self.transitions.append(Transition(self.state, after, reason))
        self.state, self.entered_at = after, now

    def drain_transitions(self) -> list[Transition]:
        out, self.transitions = self.transitions, []
        return out

    def trip(self, fault: Fault, now: float) -> bool:
        """Any state -> DAMP; the first fault is kept as the reason. True if newly tripped."""
        if self.state is ControlState.DAMP:
            return False
        self.fault = fault
        self._go(ControlState.DAMP, now, str(fault))
        return True

    def start_ramp(self, now: float) -> bool:
        if self.state is not ControlState.PASSIVE:
            return False
        self._go(ControlState.RAMP, now, "ramping to the default pose")
        return True

    def ramp_fraction(self, now: float) -> float:
        return min(max((now - self.entered_at) / self.ramp_duration, 0.0), 1.0)

    def advance(self, now: float) -> None:
        if self.state is ControlState.RAMP and now - self.entered_at >= self.ramp_duration:
            self._go(ControlState.HOLD, now, "default pose reached")

    def request_run(self, now: float) -> tuple[bool, str]:
        if self.state is not ControlState.HOLD:
            return False, f"run refused: state is {self.state.value}, run needs HOLD"
        self._go(ControlState.RUN, now, "operator run")
        return True, "RUN"

    def request_reset(self, now: float, faults: list[Fault]) -> tuple[bool, str]:
        if self.state is not ControlState.DAMP:
            return False, f"reset refused: state is {self.state.value}, reset leaves DAMP only"
        if faults:
            return False, f"reset refused: fault still present ({faults[0]})"
        self.fault = None
        self._go(ControlState.PASSIVE, now, "operator reset")
        return True, "PASSIVE"
