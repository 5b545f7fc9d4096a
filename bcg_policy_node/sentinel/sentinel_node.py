"""``sentinel``: a separate small process that keeps a crashed or frozen policy node from
leaving a stiff command on the motors.

It watches the node's heartbeat (operator_api.HEARTBEAT_TOPIC) and the command stream on
the robot interface (``lowcmd`` on ros2, ``rt/lowcmd`` on unitree_sdk); when either stops
for more than ``timeout_s`` (100 ms) it sends damping (kp 0, kd = robot kd x
damping_kd_scale of the safety config) through the same interface at the control rate
until the node's heartbeat returns. Its state is published on
operator_api.SENTINEL_STATE_TOPIC. The sentinel never releases sport mode; on
unitree_sdk it reads ``rt/lowstate`` for ``mode_machine`` and sends nothing before that.
"""

from __future__ import annotations

import threading
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
from bcg_policy_node.node.spin import run_node
from bcg_policy_node.sentinel.sentinel_watch import SentinelState, SentinelWatch


class SentinelNode(Node):
    def __init__(self, **kwargs):
        super().__init__(api.SENTINEL_NODE_NAME, **kwargs)
        robot_path = self.declare_parameter("robot_config", str(DEFAULT_ROBOT_CONFIG)).value
        safety_path = self.declare_parameter("safety_config", str(DEFAULT_SAFETY_CONFIG)).value
        self.timeout = float(self.declare_parameter("timeout_s", 0.1).value)
        self.check_period = float(self.declare_parameter("check_period_s", 0.005).value)
        self.send_period = float(self.declare_parameter("damping_period_s", 0.02).value)
        params = InterfaceParams.declare(self)
        if not 0 < self.check_period < self.timeout:
            raise BCGInputError(self.get_name(), "parameters: need 0 < check_period_s < timeout_s")
        if not self.send_period > 0:
            raise BCGInputError(self.get_name(), "parameter 'damping_period_s' must be > 0")
        robot = load_robot_config(robot_path, check_model=False)
        safety = load_safety_config(safety_path)
        self.damping = LowCommand.damping(robot.kd_array * safety.damping_kd_scale)
        self.watch = SentinelWatch(self.timeout)
        self._lock = threading.Lock()
        self._last_sent = 0.0
        self.takeovers = 0
        watch_group, check_group = MutuallyExclusiveCallbackGroup(), MutuallyExclusiveCallbackGroup()
        self.interface = open_interface(self, params, robot, watch_group, take_control=False)
        self.interface.watch_commands(self._on_command)
        self.create_subscription(UInt64, api.HEARTBEAT_TOPIC, self._on_heartbeat, 10, callback_group=watch_group)
        self._state_pub = self.create_publisher(String, api.SENTINEL_STATE_TOPIC, api.latched_qos())
        self._state_pub.publish(String(data=self.watch.state.value))
        self.create_timer(self.check_period, self._on_check, callback_group=check_group)
        self.get_logger().info(f"watching policy node ({params.kind}), takeover after {self.timeout * 1e3:.0f} ms of silence")

    def _on_command(self, t: float) -> None:
        with self._lock:
            self.watch.on_command(t)

    def _on_heartbeat(self, msg: UInt64) -> None:
        with self._lock:
            self.watch.on_heartbeat(time.monotonic())

    def _on_check(self) -> None:
        now = time.monotonic()
        with self._lock:
            before = self.watch.state
            state = self.watch.check(now)
            reason = self.watch.reason
        if state is SentinelState.TAKEN_OVER and (before is not state or now - self._last_sent >= self.send_period):
            self.interface.send(self.damping)
            self._last_sent = now
        if state is not before:
            if state is SentinelState.TAKEN_OVER:
                self.takeovers += 1
                self.get_logger().error(f"TAKEOVER: {reason}; sending damping")
            else:
                self.get_logger().info(f"{before.value} -> {state.value}" + (f": {reason}" if reason else ""))
            self._state_pub.publish(String(data=state.value))


def main(args=None) -> int:
    return run_node("sentinel", SentinelNode, args, close=lambda node: node.interface.close())


if __name__ == "__main__":
    raise SystemExit(main())
