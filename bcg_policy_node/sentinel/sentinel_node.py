"""``sentinel``: a separate small process that keeps a crashed or frozen policy node from
leaving a stiff command on the motors, and reports any second commander.

It watches the node's heartbeat (operator_api.HEARTBEAT_TOPIC) and the command stream on
the robot interface (``lowcmd`` on ros2, ``rt/lowcmd`` on unitree_sdk); when either stops
for more than ``timeout_s`` (100 ms) it sends damping (kp 0, kd = robot kd x
damping_kd_scale of the safety config) through the same interface at the control rate
until the node's heartbeat returns. Commands from any writer other than the node (and
itself) are a second commander: logged and published on
operator_api.SENTINEL_FAULT_TOPIC; they never count as the node's commands. Its state is
published on operator_api.SENTINEL_STATE_TOPIC, and its own heartbeat on
operator_api.SENTINEL_HEARTBEAT_TOPIC (20 Hz): the node leaves PASSIVE only while both say
it runs and watches. The sentinel never releases sport mode;
on unitree_sdk it reads ``rt/lowstate`` for ``mode_machine`` and sends nothing before that.

Every robot-side reader is polled by the check timer (no DDS listener: see
bcg_policy_node.interfaces.unitree_sdk_interface for the deadlock a listener on a topic
the process also writes can cause).
"""

from __future__ import annotations

import time

from rclpy.callback_groups import MutuallyExclusiveCallbackGroup
from rclpy.node import Node
from std_msgs.msg import String, UInt64

from bcg_robot.config import DEFAULT_ROBOT_CONFIG, load_robot_config
from bcg_robot.errors import BCGInputError
from bcg_robot.wire import LowCommand

from bcg_policy_node import operator_api as api
from bcg_policy_node.config.safety_config import DEFAULT_SAFETY_CONFIG, load_safety_config
from bcg_policy_node.interfaces.factory import InterfaceParams, open_interface
from bcg_policy_node.node.parameters import declare_startup_parameter, reject_undeclared_parameters
from bcg_policy_node.node.spin import run_node
from bcg_policy_node.node.steady_timer import steady_timer
from bcg_policy_node.sentinel.sentinel_watch import (DEFAULT_TIMEOUT_S, SentinelState, SentinelWatch, stall_order_error,
                                                         timing_error)


class SentinelNode(Node):
    def __init__(self, **kwargs):
        super().__init__(api.SENTINEL_NODE_NAME, **kwargs)
        robot_path = declare_startup_parameter(self, "robot_config", str(DEFAULT_ROBOT_CONFIG))
        safety_path = declare_startup_parameter(self, "safety_config", str(DEFAULT_SAFETY_CONFIG))
        self.timeout = float(declare_startup_parameter(self, "timeout_s", DEFAULT_TIMEOUT_S))
        self.check_period = float(declare_startup_parameter(self, "check_period_s", 0.005))
        self.send_period = float(declare_startup_parameter(self, "damping_period_s", 0.02))
        params = InterfaceParams.declare(self)
        reject_undeclared_parameters(self)
        problem = timing_error(self.timeout, self.check_period)
        if problem:
            raise BCGInputError(self.get_name(), f"parameters: {problem}")
        if not 0 < self.send_period <= self.timeout:  # damping at least as often as it waits for the node
            raise BCGInputError(self.get_name(), f"parameter 'damping_period_s' must be in (0, timeout_s = {self.timeout:g}] s, "
                                                 f"got {self.send_period}")
        robot = load_robot_config(robot_path)  # checked against the model, as the node does
        safety = load_safety_config(safety_path)
        safety.check_against(robot)  # what the node checks of it too
        problem = stall_order_error(self.timeout, safety.stale_after(robot.control_dt))
        if problem:
            raise BCGInputError(self.get_name(), f"parameter 'timeout_s' with {safety.source}: {problem}")
        self.damping = LowCommand.damping(safety.damping_kd(robot))
        self.watch = SentinelWatch(self.timeout)
        self._last_sent = 0.0
        self.takeovers = 0
        # one thread (run_node): heartbeat callback and check timer never run at once
        group = MutuallyExclusiveCallbackGroup()
        self.interface = open_interface(self, params, robot, group, role="sentinel")
        self.create_subscription(UInt64, api.HEARTBEAT_TOPIC, self._on_heartbeat, 10, callback_group=group)
        self._state_pub = self.create_publisher(String, api.SENTINEL_STATE_TOPIC, api.latched_qos())
        self._fault_pub = self.create_publisher(String, api.SENTINEL_FAULT_TOPIC, api.latched_qos())
        self._state_pub.publish(String(data=self.watch.state.value))
        # the node waits for this (and WATCHING) before it ramps: a sentinel that is not running cannot take over
        self._heartbeat_pub = self.create_publisher(UInt64, api.SENTINEL_HEARTBEAT_TOPIC, 10)
        self._heartbeats = 0
        # on the steady clock: a wall clock stepped back must not stop the takeover (steady_timer)
        steady_timer(self, self.check_period, self._on_check, callback_group=group)
        steady_timer(self, api.SENTINEL_HEARTBEAT_PERIOD_S, self._on_heartbeat_timer, callback_group=group)
        self.get_logger().info(f"watching policy node ({params.kind}), takeover after {self.timeout * 1e3:.0f} ms of silence")

    def _on_heartbeat(self, msg: UInt64) -> None:
        self.watch.on_heartbeat(time.monotonic())

    def _on_heartbeat_timer(self) -> None:
        self._heartbeats += 1
        self._heartbeat_pub.publish(UInt64(data=self._heartbeats))

    def _on_check(self) -> None:
        for seen in self.interface.take_commands():
            report = self.watch.on_command(seen.t, seen.writer)
            if report is not None:
                self.get_logger().error(report)
                self._fault_pub.publish(String(data=report))
        now = time.monotonic()
        before = self.watch.state
        state = self.watch.check(now)
        if state is SentinelState.TAKEN_OVER and (before is not state or now - self._last_sent >= self.send_period):
            self.interface.latest_state()  # unitree_sdk: the newest mode_machine
            self.interface.send(self.damping)
            self._last_sent = now
        if state is not before:
            if state is SentinelState.TAKEN_OVER:
                self.takeovers += 1
                self.get_logger().error(f"{api.TAKEOVER_LOG}{self.watch.reason}; sending damping")
            else:
                self.get_logger().info(f"{before.value} -> {state.value}" + (f": {self.watch.reason}" if self.watch.reason else ""))
            self._state_pub.publish(String(data=state.value))


def main(args=None) -> int:
    return run_node("sentinel", SentinelNode, args, close=lambda node: node.interface.close())


if __name__ == "__main__":
    raise SystemExit(main())
