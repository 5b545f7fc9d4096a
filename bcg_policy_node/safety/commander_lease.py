"""One owner of the motors (pure): the node holds the lease; any other writer is a fault.

The robot obeys every ``rt/lowcmd`` writer, so a second program commanding the motors
while the node is in control fights the policy unseen. The interface reports the
commands other writers sent (:class:`bcg_policy_node.interfaces.robot_state.SeenCommand`,
own commands excluded, invalid CRCs dropped since the robot drops them too); the lease
turns them into a ``foreign_commander`` fault that stays present while that writer was
heard within ``window_s``, so a reset is refused until it has gone quiet.
"""

from __future__ import annotations

from collections.abc import Iterable

from bcg_policy_node.interfaces.robot_state import SeenCommand
from bcg_policy_node.safety.faults import Fault


class CommanderLease:
    def __init__(self, window_s: float):
        self.window_s = window_s
        self.last_seen: dict[str, float] = {}
        self.counts: dict[str, int] = {}

    def observe(self, seen: Iterable[SeenCommand]) -> None:
        for command in seen:
            ident = str(command.writer)
            self.last_seen[ident] = max(command.t, self.last_seen.get(ident, command.t))
            self.counts[ident] = self.counts.get(ident, 0) + 1

    def fault(self, now: float) -> Fault | None:
        present = sorted((t, ident) for ident, t in self.last_seen.items() if now - t <= self.window_s)
        if not present:
            return None
        t, ident = present[-1]
        others = f" (and {len(present) - 1} more)" if len(present) > 1 else ""
        return Fault("foreign_commander",
                     f"another writer commands the motors: {ident}{others}, {self.counts[ident]} commands seen")
