"""A fault: which watchdog tripped and why (the reason logged and published)."""

from __future__ import annotations

import dataclasses

# Every watchdog, by the kind it reports (the benchmark measures each one's reaction).
FAULT_KINDS = (
    "stale_state", "tick_stalled", "nonfinite_state", "nonfinite_action", "policy_error", "joint_velocity", "tilt",
    "motor_fault", "motor_temperature", "robot_variant", "estop", "remote_estop", "deadman", "sentinel_missing",
    "operator_stop", "foreign_commander", "loop_stalled",
    "state_unconfirmed",  # PASSIVE only: one state sample so far, the stream not yet seen advancing
)


@dataclasses.dataclass(frozen=True)
class Fault:
    kind: str
    message: str

    def __post_init__(self) -> None:
        if self.kind not in FAULT_KINDS:
            raise ValueError(f"unknown fault kind '{self.kind}'")

    def __str__(self) -> str:
        return f"{self.kind}: {self.message}"
