"""The sentinel's pure decision logic."""

from bcg_robot.wire import CommandWriter
import pytest

from bcg_robot.config import load_robot_config

from bcg_policy_node.config.safety_config import load_safety_config
from bcg_policy_node.sentinel.sentinel_watch import DEFAULT_TIMEOUT_S, SentinelState, SentinelWatch, stall_order_error, timing_error

NODE = CommandWriter("node", "node#00000001")
RESTARTED_NODE = CommandWriter("node", "node#00000002")
FOREIGN = CommandWriter("foreign", "unstamped rt/lowcmd writer")


def run(watch, t0, t1, hb=True, cmd=True, step=0.005, writer=NODE):
    t = t0
    while t < t1:
        if hb:
            watch.on_heartbeat(t)
        if cmd:
            assert watch.on_command(t, writer) is None
        watch.check(t)
        t += step
    return t


def test_not_armed_before_the_node_commands():
    w = SentinelWatch(0.1)
    for k in range(100):
        assert w.check(k * 0.005) is SentinelState.WAITING


def test_takes_over_when_commands_or_heartbeat_stop():
    for hb, cmd, which in ((True, False, "command stream"), (False, True, "heartbeat"), (False, False, "")):
        w = SentinelWatch(0.1)
        t = run(w, 0.0, 1.0)
        assert w.state is SentinelState.WATCHING
        run(w, t, t + 0.095, hb=hb, cmd=cmd)
        assert w.state is SentinelState.WATCHING
        run(w, t + 0.095, t + 0.11, hb=hb, cmd=cmd)
        assert w.state is SentinelState.TAKEN_OVER and which in w.reason


def test_a_command_that_comes_late_does_not_date_the_stream_back():
    # on ros2 the commands of a publisher not yet named come together once it is, with their times
    w = SentinelWatch(0.1)
    t = run(w, 0.0, 0.5)
    assert w.state is SentinelState.WATCHING
    w.on_command(t - 0.3, NODE)  # an old one, handed over after a newer
    w.on_heartbeat(t)
    assert w.check(t) is SentinelState.WATCHING and w.last_command == pytest.approx(t - 0.005)


def test_own_damping_commands_do_not_release_and_heartbeat_does():
    w = SentinelWatch(0.1)
    t = run(w, 0.0, 1.0)
    t = run(w, t, t + 0.2, hb=False, cmd=False)
    assert w.state is SentinelState.TAKEN_OVER
    t = run(w, t, t + 0.5, hb=False, cmd=True)  # commands queued before the node died
    assert w.state is SentinelState.TAKEN_OVER
    run(w, t, t + 0.05, hb=True, cmd=True)
    assert w.state is SentinelState.WATCHING


def test_a_live_heartbeat_without_commands_keeps_the_override():
    w = SentinelWatch(0.1)
    t = run(w, 0.0, 1.0)
    run(w, t, t + 1.0, hb=True, cmd=False)
    assert w.state is SentinelState.TAKEN_OVER and "command stream" in w.reason


def test_a_late_check_waits_for_queued_messages():
    w = SentinelWatch(0.1)
    t = run(w, 0.0, 1.0)
    assert w.check(t + 0.3) is SentinelState.WATCHING  # the sentinel itself was stalled
    w.on_command(t + 0.3, NODE)
    w.on_heartbeat(t + 0.3)
    assert w.check(t + 0.305) is SentinelState.WATCHING


def test_a_sentinel_starved_for_good_still_takes_over_at_its_second_late_check():
    """Every check late (the sentinel's process starved) must not mean no check ever decides:
    the late check after a late check takes over from a node that went silent."""
    w = SentinelWatch(0.1)
    t = run(w, 0.0, 1.0)
    assert w.check(t + 0.3) is SentinelState.WATCHING  # late: deferred once
    assert w.check(t + 0.6) is SentinelState.TAKEN_OVER and "silent" in w.reason


def test_a_late_check_after_a_late_check_that_heard_the_node_since_still_defers():
    """The executor runs a ready timer before ready subscriptions: after a deferred check it reads
    the node's queued heartbeat, and the next check can be late again with newer heartbeats still
    queued. Heard from since the previous check, the node is alive: no takeover."""
    w = SentinelWatch(0.1)
    t = run(w, 0.0, 1.0)
    assert w.check(t + 0.06) is SentinelState.WATCHING  # late: deferred
    w.on_heartbeat(t + 0.061)  # read right after it
    w.on_command(t + 0.061, NODE)
    assert w.check(t + 0.2) is SentinelState.WATCHING  # late again, 139 ms after the last heartbeat read
    w.on_heartbeat(t + 0.201)
    w.on_command(t + 0.201, NODE)
    assert w.check(t + 0.205) is SentinelState.WATCHING  # on time again


def test_a_second_commander_is_reported_and_never_counts_as_the_node():
    w = SentinelWatch(0.1)
    t = run(w, 0.0, 1.0)
    reports = []
    for k in range(60):  # the node died; another program writes at 200 Hz for 0.3 s
        reports.append(w.on_command(t, FOREIGN))
        w.check(t)
        t += 0.005
    assert w.state is SentinelState.TAKEN_OVER  # the foreign writer did not keep it watching
    assert [r for r in reports if r] == [reports[0]] and reports[0].startswith("foreign_commander: unstamped")
    assert "node#00000001" in reports[0] and w.foreign_commands == 60
    t += 2.0
    assert w.on_command(t, FOREIGN) is not None  # heard again after a quiet gap: reported again


def test_a_second_node_is_a_foreign_commander_until_the_first_restarts():
    w = SentinelWatch(0.1)
    t = run(w, 0.0, 1.0)
    assert w.on_command(t, RESTARTED_NODE).startswith("foreign_commander: node#00000002")
    t = run(w, t, t + 0.2, hb=False, cmd=False)
    assert w.state is SentinelState.TAKEN_OVER
    t = run(w, t, t + 0.05, hb=True, cmd=True, writer=RESTARTED_NODE)  # the node came back as a new writer
    assert w.state is SentinelState.WATCHING and w.owner == RESTARTED_NODE.ident
    run(w, t, t + 0.5, writer=RESTARTED_NODE)
    assert w.state is SentinelState.WATCHING


def test_a_restarted_nodes_first_commands_before_the_hand_back_are_no_second_commander():
    """On unitree_sdk a restarted node's first command (zero torque) can be taken before the check
    that hands back: it was reported as a second commander, on the latched fault topic. A new node
    writer while the old node's heartbeat is alive is one, and is still reported."""
    w = SentinelWatch(0.1)
    t = run(w, 0.0, 1.0)
    t = run(w, t, t + 0.2, hb=False, cmd=False)  # the node dies
    assert w.state is SentinelState.TAKEN_OVER
    w.on_heartbeat(t)
    assert w.on_command(t, RESTARTED_NODE) is None and w.foreign_commands == 0
    run(w, t, t + 0.5, writer=RESTARTED_NODE)
    assert w.state is SentinelState.WATCHING and w.owner == RESTARTED_NODE.ident
    frozen = SentinelWatch(0.1)
    t = run(frozen, 0.0, 1.0)
    t = run(frozen, t, t + 0.2, hb=True, cmd=False)  # commands stop, the heartbeat runs on
    assert frozen.state is SentinelState.TAKEN_OVER
    assert frozen.on_command(t, RESTARTED_NODE).startswith("foreign_commander: node#00000002")


def test_after_handing_back_it_waits_for_the_nodes_first_command_however_late():
    """A restarted node's first command can come well after its heartbeat (its first robot
    state; on ros2 its writer not yet named): the sentinel re-arms on that command, as at
    start-up, instead of taking over again for good on a command stream "silent" since the
    hand-back."""
    w = SentinelWatch(0.1)
    t = run(w, 0.0, 1.0)
    t = run(w, t, t + 0.2, hb=False, cmd=False)  # the node dies
    assert w.state is SentinelState.TAKEN_OVER
    t = run(w, t, t + 0.3, hb=True, cmd=False, writer=RESTARTED_NODE)  # back: heartbeat, no command yet
    assert w.state is SentinelState.WAITING and w.reason == "policy node heartbeat back"
    run(w, t, t + 1.0, writer=RESTARTED_NODE)
    assert w.state is SentinelState.WATCHING and w.owner == RESTARTED_NODE.ident
    assert w.reason == f"armed by the policy node's commands ({RESTARTED_NODE.ident})"


def node_dies_at_one_second(check_period):
    """The watch checked every ``check_period`` s; the node's heartbeat and commands stop at 1 s.
    Returns when it took over (None: not within 2 s)."""
    w = SentinelWatch(0.1)
    t = run(w, 0.0, 1.0, step=check_period)
    while t < 3.0:
        if w.check(t) is SentinelState.TAKEN_OVER:
            return t
        t += check_period
    return None


def test_a_check_period_over_half_the_timeout_is_refused_because_every_check_would_be_late():
    # the refused setting makes every check late: only every second one decides (it never took over before)
    assert node_dies_at_one_second(0.06) <= 1.0 + 0.1 + 2 * 0.06
    assert "check_period_s <= timeout_s / 4" in timing_error(0.1, 0.06)
    for period in (0.005, 0.025):  # the default, and the largest period accepted
        assert timing_error(0.1, period) is None
        assert node_dies_at_one_second(period) <= 1.0 + 0.1 + 2 * period


@pytest.mark.parametrize("timeout,period", [(0.0, 0.005), (-0.1, 0.005), (1.5, 0.005), (0.1, 0.0)])
def test_timeouts_outside_zero_to_one_second_and_empty_periods_are_refused(timeout, period):
    assert timing_error(timeout, period) is not None


def test_the_sentinel_must_wait_longer_than_a_stalled_node_takes_to_trip():
    """A node back from a stall trips loop_stalled past its stale limit; a sentinel taking
    over sooner could meet the node's first tick back still sending the policy."""
    robot, safety = load_robot_config(check_model=False), load_safety_config()
    assert stall_order_error(DEFAULT_TIMEOUT_S, safety.stale_after(robot.control_dt)) is None  # the shipped pair
    assert stall_order_error(0.1, 0.06) is None
    for timeout, limit in [(0.06, 0.06), (0.1, 0.2)]:
        assert "must exceed the node's stale limit" in stall_order_error(timeout, limit)
