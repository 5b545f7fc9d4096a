"""The bridge's ``ros2`` interface: the standard messages of :mod:`bcg_robot.wire`.

State out on ``STATE_JOINTS_TOPIC`` (sensor_msgs/JointState, tick in ``frame_id``) and
``STATE_IMU_TOPIC`` (sensor_msgs/Imu); commands in on ``COMMAND_TOPIC``
(std_msgs/Float64MultiArray, 5 x n). Publishers are reliable (they match reliable and
best-effort readers), the command reader is best effort (it matches any writer).
"""

from __future__ import annotations

from rclpy.node import Node
from rclpy.qos import QoSProfile, ReliabilityPolicy, HistoryPolicy
from sensor_msgs.msg import Imu, JointState
from std_msgs.msg import Float64MultiArray

from bcg_robot.wire import COMMAND_TOPIC, STATE_IMU_TOPIC, STATE_JOINTS_TOPIC, TICK_FRAME_PREFIX, LowCommand, command_from_flat
from bcg_sim_bridge.interfaces import CommandSink, InterfaceCounters
from bcg_sim_bridge.physics import BridgeState

STATE_QOS = QoSProfile(depth=1, reliability=ReliabilityPolicy.RELIABLE, history=HistoryPolicy.KEEP_LAST)
COMMAND_QOS = QoSProfile(depth=1, reliability=ReliabilityPolicy.BEST_EFFORT, history=HistoryPolicy.KEEP_LAST)


def fill_joint_state(msg: JointState, state: BridgeState, stamp) -> JointState:
    msg.header.stamp = stamp
    msg.header.frame_id = f"{TICK_FRAME_PREFIX}{state.tick}"
    msg.position = state.q.tolist()
    msg.velocity = state.dq.tolist()
    msg.effort = state.tau.tolist()
    return msg


def fill_imu(msg: Imu, state: BridgeState, stamp) -> Imu:
    msg.header.stamp = stamp
    msg.header.frame_id = f"{TICK_FRAME_PREFIX}{state.tick}"
    w, x, y, z = state.imu_quat.tolist()
    msg.orientation.x, msg.orientation.y, msg.orientation.z, msg.orientation.w = x, y, z, w
    msg.angular_velocity.x, msg.angular_velocity.y, msg.angular_velocity.z = state.imu_gyro.tolist()
    msg.linear_acceleration.x, msg.linear_acceleration.y, msg.linear_acceleration.z = state.imu_acc.tolist()
    return msg


def receive_command(data, num_joints: int, counters: InterfaceCounters) -> tuple[LowCommand | None, str]:
    """What the motors get from one command message, counted: the command, or None and why it
    was dropped (malformed; a non-finite value, for which MuJoCo would zero every motor's control)."""
    try:
        cmd = command_from_flat(data, num_joints)
    except ValueError as err:
        counters.add("malformed")
        return None, f"malformed: {err}"
    if not cmd.is_finite():
        counters.add("nonfinite")
        return None, "a non-finite value"
    counters.add("accepted")
    return cmd, ""


class Ros2Interface:
    def __init__(self, node: Node, joint_names: tuple[str, ...], on_command: CommandSink, callback_group=None):
        self.counters = InterfaceCounters()
        self._node = node
        self._n = len(joint_names)
        self._on_command = on_command
        self._joints = JointState()
        self._joints.name = list(joint_names)
        self._imu = Imu()
        self._joint_pub = node.create_publisher(JointState, STATE_JOINTS_TOPIC, STATE_QOS)
        self._imu_pub = node.create_publisher(Imu, STATE_IMU_TOPIC, STATE_QOS)
        self._sub = node.create_subscription(
            Float64MultiArray, COMMAND_TOPIC, self._handle_command, COMMAND_QOS, callback_group=callback_group
        )

    def _handle_command(self, msg: Float64MultiArray) -> None:
        cmd, problem = receive_command(msg.data, self._n, self.counters)
        if cmd is None:
            self._node.get_logger().warn(f"dropped a command: {problem}", throttle_duration_sec=1.0)
            return
        self._on_command(cmd)

    def set_remote_buttons(self, mask: int) -> None:
        """The ros2 transport carries no remote; the node takes its e-stop from a topic instead."""

    def publish_state(self, state: BridgeState, corrupt_crc: bool = False) -> None:
        stamp = self._node.get_clock().now().to_msg()
        self._imu_pub.publish(fill_imu(self._imu, state, stamp))
        self._joint_pub.publish(fill_joint_state(self._joints, state, stamp))
        self.counters.add("states_sent")

    def close(self) -> None:
        self._node.destroy_subscription(self._sub)
        self._node.destroy_publisher(self._joint_pub)
        self._node.destroy_publisher(self._imu_pub)
