"""The ros2 interface's state sample is as old as its older part: joint states and IMU come
on two topics, and an IMU stream that stopped must make the state stale (the tilt watchdog
and the policy would otherwise read its last sample forever). In this process, over DDS."""

import itertools
import os
import time

import numpy as np
import rclpy
from rclpy.qos import QoSProfile, ReliabilityPolicy
from sensor_msgs.msg import Imu, JointState

from bcg_robot.config import load_robot_config
from bcg_robot.wire import STATE_IMU_TOPIC, STATE_JOINTS_TOPIC, TICK_FRAME_PREFIX

from bcg_policy_node.interfaces.ros2_interface import Ros2RobotInterface

NAMESPACES = (f"/ros2_interface_state_{os.getpid()}_{i}" for i in itertools.count())
QOS = QoSProfile(depth=1, reliability=ReliabilityPolicy.RELIABLE)


def test_a_state_whose_imu_stopped_dates_from_its_last_imu_sample():
    robot = load_robot_config(check_model=False)
    context = rclpy.Context()
    rclpy.init(context=context)
    namespace = next(NAMESPACES)
    node = rclpy.create_node("policy_node", namespace=namespace, context=context)
    robot_node = rclpy.create_node("robot", namespace=namespace, context=context)
    try:
        interface = Ros2RobotInterface(node, robot.joint_names)
        joints_pub = robot_node.create_publisher(JointState, STATE_JOINTS_TOPIC, QOS)
        imu_pub = robot_node.create_publisher(Imu, STATE_IMU_TOPIC, QOS)
        tick = itertools.count()

        def publish(imu: bool) -> None:
            msg = JointState(name=list(robot.joint_names), position=robot.default_q.tolist(), velocity=[0.0] * robot.num_joints)
            msg.header.frame_id = f"{TICK_FRAME_PREFIX}{next(tick)}"
            joints_pub.publish(msg)
            if imu:
                sample = Imu()
                sample.orientation.w = 1.0
                imu_pub.publish(sample)

        deadline = time.monotonic() + 20
        while (state := interface.latest_state(0.01)) is None:  # discovery
            assert time.monotonic() < deadline, "no state over DDS"
            publish(imu=True)
            time.sleep(0.01)
        for _ in range(10):
            publish(imu=True)
            time.sleep(0.01)
            state = interface.latest_state(0.01)
        assert time.monotonic() - state.received_at < 0.1 and np.allclose(state.quat_wxyz, [1, 0, 0, 0])
        last_imu = time.monotonic()
        for _ in range(30):  # 0.3 s of joint states without an IMU
            publish(imu=False)
            time.sleep(0.01)
            state = interface.latest_state(0.01)
        now = time.monotonic()
        assert state.tick >= 35  # the joint states keep coming ...
        assert state.received_at <= last_imu + 0.005 and now - state.received_at > 0.25  # ... but the state is stale
        interface.close()
    finally:
        robot_node.destroy_node()
        node.destroy_node()
        rclpy.shutdown(context=context)
