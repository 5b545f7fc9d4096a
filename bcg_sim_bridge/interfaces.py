"""What the bridge loop needs from a transport: publish state, count what came in, close."""

from __future__ import annotations

import dataclasses
import threading
from typing import Callable, Protocol

from bcg_robot.wire import LowCommand
from bcg_sim_bridge.physics import BridgeState

CommandSink = Callable[[LowCommand], None]


@dataclasses.dataclass
class InterfaceCounters:
    """Incoming-command bookkeeping, shared between the DDS callback thread and the loop."""

    accepted: int = 0
    ab_ankle_mode: int = 0  # unitree_sdk commands with mode_pr 1 (A/B ankles, not simulated), dropped whole
    bad_crc: int = 0
    bad_mode_machine: int = 0
    disabled_motor_cmds: int = 0  # accepted commands that disabled one of the robot's motors (zero torque there)
    malformed: int = 0
    nonfinite: int = 0  # commands with a NaN or inf value, dropped whole (MuJoCo would zero every motor's control)
    states_sent: int = 0
    states_skipped_behind: int = 0  # due state publications the loop skipped while behind real time (pacing.StateThinning)
    lock: threading.Lock = dataclasses.field(default_factory=threading.Lock, repr=False, compare=False)

    def add(self, field: str, n: int = 1) -> None:
        with self.lock:
            setattr(self, field, getattr(self, field) + n)

    def snapshot(self) -> dict[str, int]:
        with self.lock:
            return {f.name: getattr(self, f.name) for f in dataclasses.fields(self) if f.name != "lock"}


class BridgeInterface(Protocol):
    counters: InterfaceCounters

    def publish_state(self, state: BridgeState, corrupt_crc: bool = False) -> None: ...

    def set_remote_buttons(self, mask: int) -> None: ...

    def close(self) -> None: ...
