"""``ros2`` robot interface: the sim bridge's standard-message topics (bcg_robot.wire).

State: ``sensor_msgs/JointState`` (names in motor order, tick in ``header.frame_id`` as
``tick:N``) plus the latest ``sensor_msgs/Imu``; a JointState whose names are not the
robot's joints in motor order is rejected (and the state goes stale, which trips DAMP).
Command: ``std_msgs/Float64MultiArray`` 5 x n (q, dq, tau, kp, kd), see bcg_robot.wire.

QoS: state subscriptions are best-effort (they match reliable and best-effort
publishers), the command publisher is reliable (it matches either kind of subscriber).
"""

from __future__ import annotations

import threading
import time
from typing import Callable

import numpy as np
from rclpy.callback_groups import CallbackGroup
from rclpy.node import Node
from rclpy.qos import QoSProfile, ReliabilityPolicy
from sensor_msgs.msg import Imu, JointState
from std_msgs.msg import Float64MultiArray, MultiArrayDimension

from bcg_robot.wire import COMMAND_FIELDS, COMMAND_TOPIC, STATE_IMU_TOPIC, STATE_JOINTS_TOPIC, TICK_FRAME_PREFIX, LowCommand, command_to_flat

from bcg_policy_node.interfaces.robot_state import RobotState

STATE_QOS = QoSProfile(depth=1, reliability=ReliabilityPolicy.BEST_EFFORT)
COMMAND_QOS = QoSProfile(depth=1, reliability=ReliabilityPolicy.RELIABLE)


def command_message(command: LowCommand) -> Float64MultiArray:
    msg = Float64MultiArray()
    n = command.num_joints
    msg.layout.dim = [
        MultiArrayDimension(label="field", size=len(COMMAND_FIELDS), stride=len(COMMAND_FIELDS) * n),
        MultiArrayDimension(label="joint", size=n, stride=n),
    ]
    msg.data = command_to_flat(command)
    return msg


def parse_tick(frame_id: str, stamp_ns: int) -> int:
    """The bridge's tick from ``frame_id`` (``tick:N``); the stamp in ns when absent."""
    if frame_id.startswith(TICK_FRAME_PREFIX):
        try:
            return int(frame_id[len(TICK_FRAME_PREFIX):])
        except ValueError:
            pass
    return stamp_ns


class Ros2RobotInterface:
    kind = "ros2"

    def __init__(self, node: Node, joint_names: tuple[str, ...], callback_group: CallbackGroup | None = None,
                 subscribe_state: bool = True):
        self._node = node
        self._names = list(joint_names)
        self._n = len(joint_names)
        self._lock = threading.Lock()
        self._imu: Imu | None = None
        self._state: RobotState | None = None
        self._rejected = 0
        self._group = callback_group
        self._subs = []
        if subscribe_state:
            self._subs.append(node.create_subscription(JointState, STATE_JOINTS_TOPIC, self._on_joints, STATE_QOS,
                                                       callback_group=callback_group))
            self._subs.append(node.create_subscription(Imu, STATE_IMU_TOPIC, self._on_imu, STATE_QOS,
                                                       callback_group=callback_group))
        self._pub = node.create_publisher(Float64MultiArray, COMMAND_TOPIC, COMMAND_QOS)

    @property
    def rejected_samples(self) -> int:
        return self._rejected

    def _on_imu(self, msg: Imu) -> None:
        with self._lock:
            self._imu = msg

    def _on_joints(self, msg: JointState) -> None:
        now = time.monotonic()
        if list(msg.name) != self._names or len(msg.position) != self._n or len(msg.velocity) != self._n:
            self._rejected += 1
            self._node.get_logger().error(
                f"rejected JointState on '{STATE_JOINTS_TOPIC}': names/lengths are not the robot's {self._n} joints "
                "in motor order", throttle_duration_sec=1.0)
            return
        with self._lock:
            imu = self._imu
        if imu is None:
            return
        o, w = imu.orientation, imu.angular_velocity
        effort = np.asarray(msg.effort, dtype=np.float64) if len(msg.effort) == self._n else np.zeros(self._n)
        state = RobotState(
            tick=parse_tick(msg.header.frame_id, msg.header.stamp.sec * 1_000_000_000 + msg.header.stamp.nanosec),
            received_at=now,
            q=np.asarray(msg.position, dtype=np.float64),
            dq=np.asarray(msg.velocity, dtype=np.float64),
            tau_est=effort,
            quat_wxyz=np.array([o.w, o.x, o.y, o.z]),
            gyro=np.array([w.x, w.y, w.z]),
        )
        with self._lock:
            self._state = state

    def latest_state(self) -> RobotState | None:
        with self._lock:
            return self._state

    def send(self, command: LowCommand) -> None:
        self._pub.publish(command_message(command))

    def watch_commands(self, callback: Callable[[float], None]) -> None:
        self._subs.append(self._node.create_subscription(
            Float64MultiArray, COMMAND_TOPIC, lambda _msg: callback(time.monotonic()), STATE_QOS,
            callback_group=self._group))

    def close(self) -> None:
        for sub in self._subs:
            self._node.destroy_subscription(sub)
        self._subs.clear()
        self._node.destroy_publisher(self._pub)
