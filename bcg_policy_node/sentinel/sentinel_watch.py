"""The sentinel's decision (pure): has the policy node stopped commanding the motors, and
does anyone else command them?

Armed once both the node's heartbeat and its command stream have been seen. Takes over
when either is older than ``timeout`` (100 ms). Gives control back only when the node's
heartbeat has been silent during the takeover and then returns (the node restarted or
unfroze; it starts in PASSIVE or trips on stale state itself), and is then armed again as
at start-up, by the node's next command. A node whose heartbeat runs on while its
commands do not arrive stays overridden until the sentinel restarts.

Only the node's commands count as its command stream: the first node writer seen is the
owner (forgotten when the node comes back after a takeover, since a restarted node is a
new writer). Any other writer (unstamped, another node session, another sentinel) is a
second commander: :meth:`on_command` returns a report the first time it is heard and
again after it was quiet for ``report_gap`` s; a new node writer during a takeover after the
node's heartbeat went silent is the node restarting, not reported. Its commands never keep
the sentinel from taking over. The sentinel's own commands are not shown to it.

A check that runs late (more than half the timeout after the previous one) only records
the time: the sentinel itself was not running, so messages may be queued that it has not
seen yet; the next check (one check period later) decides.
"""

from __future__ import annotations

import enum

from bcg_robot.wire import CommandWriter


class SentinelState(str, enum.Enum):
    WAITING = "WAITING"  # not armed: the node has not commanded yet
    WATCHING = "WATCHING"
    TAKEN_OVER = "TAKEN_OVER"  # sending damping itself


DEFAULT_TIMEOUT_S = 0.1  # the sentinel node's timeout_s
MAX_TIMEOUT_S = 1.0  # a sentinel slower than this leaves a frozen node's last command on the motors too long
CHECKS_PER_TIMEOUT = 4  # a check on time is never "late" (timeout / 2), with room for 2x jitter


def timing_error(timeout: float, check_period: float) -> str | None:
    """Why a timeout and check period cannot work, or None. A check period over half the
    timeout makes every check late, and a late check decides only after a late check that
    heard nothing new from the node: the sentinel would take over a period or more late."""
    if not 0 < timeout <= MAX_TIMEOUT_S:
        return f"need 0 < timeout_s <= {MAX_TIMEOUT_S} (got {timeout})"
    if not 0 < check_period <= timeout / CHECKS_PER_TIMEOUT:
        return (f"need 0 < check_period_s <= timeout_s / {CHECKS_PER_TIMEOUT} = {timeout / CHECKS_PER_TIMEOUT:g} "
                f"(got {check_period}): a check later than timeout_s / 2 after the last one defers its decision")
    return None


def stall_order_error(timeout: float, node_stall_limit: float) -> str | None:
    """Why the sentinel would take over before a stalled node trips, or None.
    ``node_stall_limit``: the node's stale limit (stale_periods x control period), past which
    a node that stalled trips ``loop_stalled`` on its first tick back. A takeover within that
    limit could meet the node's first tick back sending the policy's targets, before the
    node has read the sentinel's damping."""
    if timeout <= node_stall_limit:
        return (f"{timeout * 1e3:g} ms must exceed the node's stale limit ({node_stall_limit * 1e3:g} ms, "
                f"stale_periods x control period), so a stalled node trips before the sentinel takes over")
    return None


def sentinel_timeout_for(node_stall_limit: float, control_dt: float) -> float:
    """The sentinel's ``timeout_s`` for a node with this stale limit: the default where it is
    longer than the limit (:func:`stall_order_error`), else one control period past the limit.
    Every launcher of a node and its sentinel (``g1_real``, ``bcg-sim2sim``) chooses it so."""
    if stall_order_error(DEFAULT_TIMEOUT_S, node_stall_limit) is None:
        return DEFAULT_TIMEOUT_S
    return node_stall_limit + control_dt


class SentinelWatch:
    def __init__(self, timeout: float, report_gap: float = 1.0):
        self.timeout = timeout
        self.report_gap = report_gap
        self.state = SentinelState.WAITING
        self.last_heartbeat: float | None = None
        self.last_command: float | None = None
        self.owner: str | None = None  # the node writer whose commands count
        self.foreign_last: dict[str, float] = {}
        self.foreign_commands = 0
        self.taken_over_at = 0.0
        self.reason = ""
        self._last_check: float | None = None
        self._heartbeat_gap = False
        self._deferred = False  # the previous check was late and decided nothing

    def on_heartbeat(self, t: float) -> None:
        self.last_heartbeat = t

    def on_command(self, t: float, writer: CommandWriter) -> str | None:
        """A command some other process sent; a report line when it is a second commander."""
        if writer.role == "node" and self.owner in (None, writer.ident):
            self.owner = writer.ident
            if self.state is not SentinelState.TAKEN_OVER:  # the newest: commands held back come late (ros2_interface)
                self.last_command = t if self.last_command is None else max(self.last_command, t)
            return None
        if writer.role == "node" and self.state is SentinelState.TAKEN_OVER and self._heartbeat_gap:
            # the node restarting: its heartbeat went silent, and a new node writer's first (zero-torque)
            # commands can come before the check that hands back and makes it the owner. Not a second
            # commander (a report on the latched fault topic would be a false alarm). With the old
            # node's heartbeat alive throughout, a new node writer is one, and is reported.
            return None
        self.foreign_commands += 1
        last = self.foreign_last.get(writer.ident)
        self.foreign_last[writer.ident] = t
        if last is not None and t - last <= self.report_gap:
            return None
        owner = f"; the node's commands come from {self.owner}" if self.owner else ""
        return f"foreign_commander: {writer.ident} writes motor commands{owner}"

    def check(self, now: float) -> SentinelState:
        # A late check (the sentinel itself was descheduled) decides nothing: the node's messages
        # queued meanwhile may not be read yet (the executor runs a ready timer before ready
        # subscriptions). Once it has deferred, the executor has read what was queued, so a late
        # check after a late check decides unless the node was heard from since the previous
        # check: starved for good, every check would be late, and the sentinel would watch a
        # dead node for ever while reporting WATCHING.
        previous = self._last_check
        late = previous is not None and now - previous > self.timeout / 2
        self._last_check = now
        if late:
            heard = any(t is not None and t > previous for t in (self.last_heartbeat, self.last_command))
            if heard or not self._deferred:
                self._deferred = True
                return self.state
        self._deferred = False
        if self.state is SentinelState.WAITING:
            if self.last_heartbeat is not None and self.last_command is not None:
                self.state, self.reason = SentinelState.WATCHING, f"armed by the policy node's commands ({self.owner})"
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
            # re-armed as at start-up: watching from the node's first command. Watching from now
            # would take over again if that command came later than the timeout (a restarted
            # node's first state, or its writer not yet named on ros2), and with the heartbeat
            # live the sentinel would then never hand back. Meanwhile the motors keep the
            # sentinel's damping, and the node does not ramp before the sentinel is WATCHING.
            self.state, self.reason = SentinelState.WAITING, "policy node heartbeat back"
            self.last_command, self._heartbeat_gap, self.owner = None, False, None
        return self.state
