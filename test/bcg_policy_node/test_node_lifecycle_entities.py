"""The policy node's ROS entities follow its lifecycle: none of its own before configure,
the operator API, outputs and diagnostics from configure to cleanup, and a second
configure after cleanup works. The node runs in this process, without a robot and
without an executor (no tick runs); the ROS graph is read from the node itself."""

import itertools
import os
import time

import pytest
import rclpy
from rclpy.lifecycle import TransitionCallbackReturn
from rclpy.lifecycle.publisher import LifecyclePublisher
from rclpy.parameter import Parameter

from bcg_robot.config import load_robot_config
from bcg_robot.wire import COMMAND_TOPIC

from bcg_policy_node import operator_api as api
from bcg_sim_bridge.harness.sample_policies import write_policy
from bcg_policy_node.node.policy_node import PolicyNode

# One namespace per test: a node destroyed in an earlier test may linger in the graph under its name.
NAMESPACES = (f"/lifecycle_entities_{os.getpid()}_{i}" for i in itertools.count())
OUTPUT_TOPICS = (api.STATE_TOPIC, api.FAULT_TOPIC, api.HEARTBEAT_TOPIC, api.TIMING_TOPIC, api.JOINT_STATES_TOPIC,
                 api.DIAGNOSTICS_TOPIC, COMMAND_TOPIC)
INPUT_TOPICS = (api.ESTOP_TOPIC, api.DEADMAN_TOPIC, api.SENTINEL_HEARTBEAT_TOPIC, api.SENTINEL_STATE_TOPIC,
                COMMAND_TOPIC)  # lowcmd: watched for other writers
SERVICES = (api.RUN_SERVICE, api.STOP_SERVICE, api.RESET_SERVICE)


@pytest.fixture
def node(tmp_path):
    policy = write_policy(tmp_path / "random.onnx", load_robot_config(check_model=False), "random")
    context = rclpy.Context()
    rclpy.init(context=context)
    node = PolicyNode(context=context, namespace=next(NAMESPACES),
                      parameter_overrides=[Parameter("policy_path", value=str(policy))])
    try:
        yield node
    finally:
        node.destroy_node()
        rclpy.shutdown(context=context)


def graph(node):
    """(publisher topics, subscription topics, services) of the node, as the ROS graph has them."""
    name, ns = node.get_name(), node.get_namespace()
    return (frozenset(n for n, _ in node.get_publisher_names_and_types_by_node(name, ns)),
            frozenset(n for n, _ in node.get_subscriber_names_and_types_by_node(name, ns)),
            frozenset(n for n, _ in node.get_service_names_and_types_by_node(name, ns)))


def wait_for_graph(node, expected, what, timeout=15.0):
    deadline = time.monotonic() + timeout
    while (seen := graph(node)) != expected:
        assert time.monotonic() < deadline, f"{what}: graph {seen}, expected {expected}"
        time.sleep(0.05)


def unconfigured_graph(node, timeout=15.0):
    """The graph of the unconfigured node once rclpy's own lifecycle endpoints are in it."""
    change_state = node.resolve_service_name("~/change_state")
    transition_event = node.resolve_topic_name("~/transition_event")
    deadline = time.monotonic() + timeout
    while True:
        publishers, subscriptions, services = seen = graph(node)
        if change_state in services and transition_event in publishers:
            return seen
        assert time.monotonic() < deadline, f"the node's lifecycle endpoints are not in the graph: {seen}"
        time.sleep(0.05)


def local_entities(node):
    return {"publishers": len(list(node.publishers)), "subscriptions": len(list(node.subscriptions)),
            "services": len(list(node.services)), "timers": len(list(node.timers))}


def lifecycle_publishers(node):
    return [p for p in node.publishers if isinstance(p, LifecyclePublisher)]


def state_helper_present(node):
    return ("policy_node_state", node.get_namespace()) in node.get_node_names_and_namespaces()


def test_entities_exist_from_configure_to_cleanup_and_configure_runs_again(node):
    topic, service = node.resolve_topic_name, node.resolve_service_name
    operator = (frozenset(topic(t) for t in OUTPUT_TOPICS), frozenset(topic(t) for t in INPUT_TOPICS),
                frozenset(service(s) for s in SERVICES))
    before = local_entities(node)
    assert before["timers"] == 0 and not lifecycle_publishers(node)
    unconfigured = unconfigured_graph(node)
    for own, theirs in zip(operator, unconfigured):
        assert not own & theirs, "an operator topic or service exists before configure"

    for cycle in range(2):
        assert node.trigger_configure() == TransitionCallbackReturn.SUCCESS, (cycle, node.configure_error)
        wait_for_graph(node, tuple(b | o for b, o in zip(unconfigured, operator)), f"configured ({cycle})")
        added = {k: v - before[k] for k, v in local_entities(node).items()}
        # publishers: state, fault, heartbeat, timing, joint states, diagnostics, lowcmd;
        # subscriptions: e-stop, deadman, the sentinel's heartbeat and state, lowcmd; run/stop/reset; the diagnostics
        # and idle-poll timers
        assert added == {"publishers": 7, "subscriptions": 5, "services": 3, "timers": 2}, cycle
        assert state_helper_present(node)
        outputs = lifecycle_publishers(node)  # heartbeat, timing, joint states and the motor commands
        assert sorted(p.topic_name for p in outputs) == sorted(
            topic(t) for t in (api.HEARTBEAT_TOPIC, api.TIMING_TOPIC, api.JOINT_STATES_TOPIC, COMMAND_TOPIC))
        assert not any(p.is_activated for p in outputs)  # inactive: they publish nothing

        assert node.trigger_activate() == TransitionCallbackReturn.SUCCESS
        assert all(p.is_activated for p in outputs) and local_entities(node)["timers"] == 3  # + control timer
        assert node.trigger_deactivate() == TransitionCallbackReturn.SUCCESS
        assert not any(p.is_activated for p in outputs) and local_entities(node)["timers"] == 2

        assert node.trigger_cleanup() == TransitionCallbackReturn.SUCCESS
        assert local_entities(node) == before and not lifecycle_publishers(node)
        wait_for_graph(node, unconfigured, f"cleaned up ({cycle})")
        assert not state_helper_present(node)


def test_shutdown_from_active_releases_every_entity(node):
    before = local_entities(node)
    unconfigured = unconfigured_graph(node)
    assert node.trigger_configure() == TransitionCallbackReturn.SUCCESS, node.configure_error
    assert node.trigger_activate() == TransitionCallbackReturn.SUCCESS
    assert node.trigger_shutdown() == TransitionCallbackReturn.SUCCESS
    assert local_entities(node) == before and not lifecycle_publishers(node)
    wait_for_graph(node, unconfigured, "shut down")


def test_a_transition_that_raises_releases_everything_and_configure_runs_again(node, monkeypatch):
    from bcg_policy_node.node import policy_node

    before = local_entities(node)
    assert node.trigger_configure() == TransitionCallbackReturn.SUCCESS, node.configure_error

    def broken_control_loop(*args):
        raise RuntimeError("control loop construction failed")

    with monkeypatch.context() as patch:
        patch.setattr(policy_node, "ControlLoop", broken_control_loop)
        assert node.trigger_activate() == TransitionCallbackReturn.ERROR
    assert local_entities(node) == before and not lifecycle_publishers(node)
    # error processing went back to unconfigured (from finalized, configure would fail)
    assert node.trigger_configure() == TransitionCallbackReturn.SUCCESS, node.configure_error
    assert node.trigger_activate() == TransitionCallbackReturn.SUCCESS


def test_a_damp_stays_latched_through_deactivate_and_activate(node):
    """Reactivating is no reset: the new control loop starts in DAMP with the fault the old one
    was not reset from (with the sentinel off, nothing else would have kept it damped), and a
    loop stopped in any other state starts in PASSIVE as before."""
    assert node.trigger_configure() == TransitionCallbackReturn.SUCCESS, node.configure_error
    assert node.trigger_activate() == TransitionCallbackReturn.SUCCESS
    assert node.loop.state is api.ControlState.PASSIVE
    assert node.trigger_deactivate() == TransitionCallbackReturn.SUCCESS
    assert node.trigger_activate() == TransitionCallbackReturn.SUCCESS
    assert node.loop.state is api.ControlState.PASSIVE  # nothing was latched
    node.loop.request_stop(time.monotonic())
    for _ in range(2):
        assert node.trigger_deactivate() == TransitionCallbackReturn.SUCCESS
        assert node.trigger_activate() == TransitionCallbackReturn.SUCCESS
        fault = node.loop.machine.fault
        assert node.loop.state is api.ControlState.DAMP and fault.kind == "operator_stop", fault
        assert str(fault).count("latched before the node was deactivated") == 1
    assert node.trigger_deactivate() == TransitionCallbackReturn.SUCCESS
    assert node.trigger_cleanup() == TransitionCallbackReturn.SUCCESS  # a new configure starts over
    assert node.trigger_configure() == TransitionCallbackReturn.SUCCESS, node.configure_error
    assert node.trigger_activate() == TransitionCallbackReturn.SUCCESS
    assert node.loop.state is api.ControlState.PASSIVE
    assert node.trigger_deactivate() == TransitionCallbackReturn.SUCCESS
    assert node.trigger_cleanup() == TransitionCallbackReturn.SUCCESS


def test_commands_of_other_writers_seen_while_inactive_are_bounded(node):
    """When nothing takes them (here no executor runs the idle poll), another writer's commands (the
    sentinel damping at 50 Hz) were kept without bound. The newest SEEN_COMMANDS_KEPT are kept."""
    from bcg_policy_node.interfaces.ros2_interface import SEEN_COMMANDS_KEPT

    assert node.trigger_configure() == TransitionCallbackReturn.SUCCESS, node.configure_error
    info = {"publisher_gid": {"data": bytes(range(24))}}  # a writer the graph does not know: foreign
    for _ in range(500):
        node.interface._on_command(b"", info)
    time.sleep(0.01)
    newest_from = time.monotonic()
    for _ in range(SEEN_COMMANDS_KEPT):
        node.interface._on_command(b"", info)
    seen = node.interface.take_commands()
    assert len(seen) == SEEN_COMMANDS_KEPT and seen[-1].writer.role == "foreign"
    assert seen[0].t >= newest_from  # the oldest 500 were dropped, the newest kept
    assert node.interface.take_commands() == []
    assert node.trigger_cleanup() == TransitionCallbackReturn.SUCCESS


def test_other_writers_heard_while_inactive_reach_the_next_activation_only_while_recent(node):
    """Not active, the idle poll takes other writers' commands as they come and keeps those of the
    last foreign_commander_window_s; activation hands them to the new control loop's lease, so a
    writer heard just before it is a fault at once, and one gone for longer is none."""
    assert node.trigger_configure() == TransitionCallbackReturn.SUCCESS, node.configure_error
    window = node.safety.foreign_commander_window_s
    info = {"publisher_gid": {"data": bytes(range(24))}}  # a writer the graph does not know: foreign
    node.interface._on_command(b"", info)
    node._on_idle_poll()  # what the idle timer runs
    assert len(node._idle_commands) == 1 and node._idle_commands[0].writer.role == "foreign"
    time.sleep(window + 0.1)
    node._on_idle_poll()
    assert node._idle_commands == []  # gone for longer than the window: forgotten
    assert node.trigger_activate() == TransitionCallbackReturn.SUCCESS
    assert node.loop.lease.fault(time.monotonic()) is None
    assert node._idle_timer.is_canceled()  # active: the ticks take them, the idle poll does not run
    node.interface._on_command(b"", info)
    node._on_idle_poll()  # and takes nothing if it ran
    assert node._idle_commands == [] and len(node.interface.take_commands()) == 1
    assert node.trigger_deactivate() == TransitionCallbackReturn.SUCCESS
    assert not node._idle_timer.is_canceled()
    node.interface._on_command(b"", info)  # heard just before the activation, not yet polled
    assert node.trigger_activate() == TransitionCallbackReturn.SUCCESS
    fault = node.loop.lease.fault(time.monotonic())
    assert fault is not None and fault.kind == "foreign_commander", fault
    assert node._idle_commands == []
    assert node.trigger_deactivate() == TransitionCallbackReturn.SUCCESS
    assert node.trigger_cleanup() == TransitionCallbackReturn.SUCCESS


def test_parameters_are_read_only_and_a_change_at_run_time_is_refused(node):
    """The node reads its parameters once: a change at run time would be reported as set and
    never used (the next configure would load the old policy with the old timeouts)."""
    for parameter in (Parameter("policy_path", value="/tmp/another.onnx"), Parameter("deadman_timeout_s", value=float("nan")),
                      Parameter("sentinel_timeout_s", value=0.0), Parameter("kind", value="unitree_sdk")):
        result, = node.set_parameters([parameter])
        assert not result.successful and "read-only" in result.reason, (parameter.name, result)
        assert node.get_parameter(parameter.name).value != parameter.value
    assert node.trigger_configure() == TransitionCallbackReturn.SUCCESS, node.configure_error
    assert node.policy is not None and node.interface.kind == "ros2"


def test_configure_reports_the_reason_of_an_error_no_check_foresaw(node, monkeypatch):
    """rclpy turns an exception in a transition into ERROR and logs only that it raised: the
    operator (and autostart's exit line) would learn nothing. Configure fails with the reason."""
    from bcg_policy_node.node import policy_node

    before = local_entities(node)

    def failing_interface(*args, **kwargs):
        raise OSError("no such network interface 'enp9s9'")

    with monkeypatch.context() as patch:
        patch.setattr(policy_node, "open_interface", failing_interface)
        assert node.trigger_configure() == TransitionCallbackReturn.FAILURE
    assert node.configure_error == "OSError: no such network interface 'enp9s9'"
    assert local_entities(node) == before and node.interface is None
    assert node.trigger_configure() == TransitionCallbackReturn.SUCCESS, node.configure_error


def test_destroy_node_takes_the_node_out_of_the_ros_graph(tmp_path):
    # rclpy's LifecycleNode left its state machine, which holds the rcl node, to the garbage
    # collector: the destroyed node stayed in the graph while its Python object lived, and was
    # finalized at interpreter exit after the context's shutdown (a hang and a -11 in CI)
    policy = write_policy(tmp_path / "random.onnx", load_robot_config(check_model=False), "random")
    context = rclpy.Context()
    rclpy.init(context=context)
    try:
        namespace = next(NAMESPACES)
        observer = rclpy.create_node("graph_observer", namespace=namespace, context=context)
        node = PolicyNode(context=context, namespace=namespace,
                          parameter_overrides=[Parameter("policy_path", value=str(policy))])
        listed = lambda: (api.NODE_NAME, namespace) in observer.get_node_names_and_namespaces()  # noqa: E731
        deadline = time.monotonic() + 15.0
        while not listed():
            assert time.monotonic() < deadline, "the policy node never appeared in the graph"
            time.sleep(0.05)
        node.destroy_node()
        deadline = time.monotonic() + 5.0
        while listed():  # node (the Python object) is still referenced here
            assert time.monotonic() < deadline, "the destroyed policy node is still in the ROS graph"
            time.sleep(0.05)
        observer.destroy_node()
    finally:
        rclpy.shutdown(context=context)
