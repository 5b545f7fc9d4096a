"""One owner of the motors (pure): the node holds the lease; any other writer is a fault.

The robot obeys every ``rt/lowcmd`` writer, so a second program commanding the motors
while the node is in control fights the policy unseen. The interface reports the
commands other writers sent (:class:`bcg_policy_node.interfaces.robot_state.SeenCommand`,
own commands excluded, invalid CRCs dropped since the robot drops them too); the lease
turns them into a ``foreign_commander`` fault that stays present while that writer was
heard within ``window_s``, so a reset is refused until it has gone quiet.

The sentinel's damping is no second program: it writes only after it took over from this
node (a late heartbeat, or a node restarted meanwhile). Its commands give ``sentinel_missing``,
the kind the node also reports when it hears the sentinel's TAKEN_OVER state, so one event
yields one kind whichever message arrives first. That kind trips only an energized node: a
node starting in PASSIVE beside a damping sentinel waits for it to hand back instead of
latching DAMP as if a foreign program were commanding. A foreign writer is reported first.
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
        self.sentinels: set[str] = set()  # the writers whose stamp or node name says sentinel

    def observe(self, seen: Iterable[SeenCommand]) -> None:
        for command in seen:
            ident = str(command.writer)
            self.last_seen[ident] = max(command.t, self.last_seen.get(ident, command.t))
            self.counts[ident] = self.counts.get(ident, 0) + 1
            if command.writer.role == "sentinel":
                self.sentinels.add(ident)

    def fault(self, now: float) -> Fault | None:
        present = sorted((t, ident) for ident, t in self.last_seen.items() if now - t <= self.window_s)
        foreign = [(t, ident) for t, ident in present if ident not in self.sentinels]
        if foreign:
            _, ident = foreign[-1]
            others = f" (and {len(present) - 1} more)" if len(present) > 1 else ""
            return Fault("foreign_commander",
                         f"another writer commands the motors: {ident}{others}, {self.counts[ident]} commands seen")
        if present:
            _, ident = present[-1]
            return Fault("sentinel_missing", f"the sentinel's damping is on the motors ({ident}, {self.counts[ident]} "
                                             "commands seen): it took over from this node; wait for it to hand back")
        return None
