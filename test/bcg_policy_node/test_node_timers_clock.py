"""The policy node's and the sentinel's timers run on the steady clock.

On the node's ROS clock (``create_timer``'s default) a wall clock stepped back by J seconds
stops a timer for J seconds: the 50 Hz tick with every watchdog, and the sentinel's check
and heartbeat, all at once, the drives holding the last target. The same happens for good
under ``use_sim_time`` with no ``/clock``, which is how these tests stop the ROS clock: each
node runs in this process with ``use_sim_time`` and no clock publisher, so its ROS time stays
at 0, and every one of its timers must still count down."""

import itertools
import os
import time

from rclpy.lifecycle import TransitionCallbackReturn
from rclpy.parameter import Parameter

from bcg_robot.config import load_robot_config
from bcg_policy_node.node.policy_node import PolicyNode
from bcg_policy_node.sentinel.sentinel_node import SentinelNode
from bcg_sim_bridge.harness.sample_policies import write_policy

NAMESPACES = (f"/timers_clock_{os.getpid()}_{i}" for i in itertools.count())
SIM_TIME = Parameter("use_sim_time", value=True)
WAIT_S = 0.2


def assert_every_timer_counts_down_with_ros_time_stopped(node):
    timers = [t for t in node.timers if not t.is_canceled()]  # (the node's idle poll stops at activation)
    assert timers, "the node has no timers to check"
    assert node.get_clock().now().nanoseconds == 0  # ROS time stopped: no /clock yet
    before = [t.time_until_next_call() for t in timers]
    time.sleep(WAIT_S)
    after = [t.time_until_next_call() for t in timers]
    # a timer on the stopped ROS clock would still be exactly as far from its next call
    counted = [(b - a) / 1e9 for b, a in zip(before, after)]
    assert all(c >= 0.5 * WAIT_S for c in counted), counted


def test_the_policy_nodes_tick_and_other_timers_run_with_ros_time_stopped(tmp_path, rclpy_context):
    policy = write_policy(tmp_path / "random.onnx", load_robot_config(check_model=False), "random")
    node = PolicyNode(context=rclpy_context, namespace=next(NAMESPACES),
                      parameter_overrides=[Parameter("policy_path", value=str(policy)), SIM_TIME])
    try:
        assert node.trigger_configure() == TransitionCallbackReturn.SUCCESS, node.configure_error
        assert node.trigger_activate() == TransitionCallbackReturn.SUCCESS
        assert node._timer in list(node.timers) and not node._timer.is_canceled()  # the 50 Hz tick is among those checked
        assert_every_timer_counts_down_with_ros_time_stopped(node)
    finally:
        node.destroy_node()


def test_the_sentinels_check_and_heartbeat_run_with_ros_time_stopped(rclpy_context):
    node = SentinelNode(context=rclpy_context, namespace=next(NAMESPACES), parameter_overrides=[SIM_TIME])
    try:
        assert len(list(node.timers)) == 2  # the check and the heartbeat
        assert_every_timer_counts_down_with_ros_time_stopped(node)
    finally:
        node.destroy_node()
