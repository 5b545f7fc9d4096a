"""The sentinel's decision (pure): has the policy node stopped commanding the motors?

Armed once both the node's heartbeat and its command stream have been seen. Takes over
when either is older than ``timeout`` (100 ms). Gives control back only when a heartbeat
newer than the takeover arrives (the node is back; it restarts in PASSIVE and ramps);
its own damping commands never count as the node's.
"""

from __future__ import annotations

import enum


class SentinelState(str, enum.Enum):
    WAITING = "WAITING"  # not armed: the node has not commanded yet
    WATCHING = "WATCHING"
    TAKEN_OVER = "TAKEN_OVER"  # sending damping itself


class SentinelWatch:
    def __init__(self, timeout: float):
        self.timeout = timeout
        self.state = SentinelState.WAITING
        self.last_heartbeat: float | None = None
        self.last_command: float | None = None
        self.taken_over_at = 0.0
        self.reason = ""

    def on_heartbeat(self, t: float) -> None:
        self.last_heartbeat = t

    def on_command(self, t: float) -> None:
        if self.state is not SentinelState.TAKEN_OVER:
            self.last_command = t

    def check(self, now: float) -> SentinelState:
        if self.state is SentinelState.WAITING:
            if self.last_heartbeat is not None and self.last_command is not None:
                self.state = SentinelState.WATCHING
            return self.state
        if self.state is SentinelState.WATCHING:
            hb_age, cmd_age = now - self.last_heartbeat, now - self.last_command
            if hb_age > self.timeout or cmd_age > self.timeout:
                which = "heartbeat" if hb_age >= cmd_age else "command stream"
                self.reason = f"policy node {which} silent for {max(hb_age, cmd_age) * 1e3:.0f} ms"
                self.state, self.taken_over_at = SentinelState.TAKEN_OVER, now
            return self.state
        if self.last_heartbeat > self.taken_over_at and now - self.last_heartbeat <= self.timeout:
            self.state, self.reason = SentinelState.WATCHING, "policy node heartbeat back"
            self.last_command = now
        return self.state
