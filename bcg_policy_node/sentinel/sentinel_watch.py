"""The sentinel's decision (pure): has the policy node stopped commanding the motors?

Armed once both the node's heartbeat and its command stream have been seen. Takes over
when either is older than ``timeout`` (100 ms). Gives control back only when the node's
heartbeat has been silent during the takeover and then returns (the node restarted or
unfroze; it starts in PASSIVE or trips on stale state itself). A node whose heartbeat
runs on while its commands do not arrive stays overridden until the sentinel restarts.
Its own damping commands never count as the node's.

A check that runs late (more than half the timeout after the previous one) only records
the time: the sentinel itself was not running, so messages may be queued that it has not
seen yet; the next check (one check period later) decides.
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
        self._last_check: float | None = None
        self._heartbeat_gap = False

    def on_heartbeat(self, t: float) -> None:
        self.last_heartbeat = t

    def on_command(self, t: float) -> None:
        if self.state is not SentinelState.TAKEN_OVER:
            self.last_command = t

    def check(self, now: float) -> SentinelState:
        late = self._last_check is not None and now - self._last_check > self.timeout / 2
        self._last_check = now
        if late:
            return self.state
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
                self._heartbeat_gap = hb_age > self.timeout
            return self.state
        if now - self.last_heartbeat > self.timeout:
            self._heartbeat_gap = True
        elif self._heartbeat_gap and self.last_heartbeat > self.taken_over_at:
            self.state, self.reason = SentinelState.WATCHING, "policy node heartbeat back"
            self.last_command, self._heartbeat_gap = now, False
        return self.state
