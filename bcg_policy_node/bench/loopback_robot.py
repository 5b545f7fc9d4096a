"""A G1 on loopback for the node's tests and benchmark (not the sim bridge).

A small process that plays the robot side of either interface: real MuJoCo (the
``bridge`` model variant from bcg_robot.model, PD from bcg_robot.pd on the latest
command) or, with ``physics:=false``, a robot frozen at the default pose. Until the first
command with kp > 0 arrives the robot hangs still in its "gantry" (physics paused), as
a real G1 does before low-level control starts; ``reset_sim`` puts it back there.

It checks every command it receives (unitree_sdk: CRC, copied ``mode_machine``, motor
mode 1) and reports on ROS topics, so a test or the benchmark can see exactly what the
motors got:

``loopback_robot/received``  std_msgs/Float64MultiArray ``[t_receive, *q, *dq, *tau, *kp, *kd]``
                             (CLOCK_MONOTONIC seconds, comparable across processes)
``loopback_robot/status``    std_msgs/String JSON (counts, injection and its start time)
``loopback_robot/inject``    std_msgs/String in: a fault name of :data:`INJECTIONS`, ``clear``
                             or ``reset_sim``.
"""

from __future__ import annotations

import json
import threading
import time

import numpy as np
from rclpy.node import Node
from rclpy.qos import QoSProfile, ReliabilityPolicy
from sensor_msgs.msg import Imu, JointState
from std_msgs.msg import Float64MultiArray, String

from bcg_robot.config import load_robot_config
from bcg_robot.pd import pd_torque
from bcg_robot.remote import RemoteState, encode_remote
from bcg_robot.wire import (COMMAND_TOPIC, STATE_IMU_TOPIC, STATE_JOINTS_TOPIC, TICK_FRAME_PREFIX,
                            UNITREE_COMMAND_TOPIC, UNITREE_MODE_MACHINE_29DOF, UNITREE_STATE_TOPIC, LowCommand,
                            command_from_flat)

from bcg_policy_node.node.spin import run_node
from bcg_policy_node.operator_api import REMOTE_ESTOP_BUTTONS, REMOTE_RUN_BUTTONS

RECEIVED_TOPIC = "loopback_robot/received"
STATUS_TOPIC = "loopback_robot/status"
INJECT_TOPIC = "loopback_robot/inject"
# injection -> the watchdog it must trip ("remote_start" is not a fault: it asks for RUN)
INJECTIONS = {
    "freeze": "stale_state", "stall_tick": "tick_stalled", "nan": "nonfinite_state", "overspeed": "joint_velocity",
    "tilt": "tilt", "motor_fault": "motor_fault", "hot": "motor_temperature", "remote_estop": "remote_estop",
    "corrupt_crc": "stale_state", "remote_start": None,
}
SDK_ONLY = ("motor_fault", "hot", "remote_estop", "remote_start", "corrupt_crc")
STATE_QOS = QoSProfile(depth=1, reliability=ReliabilityPolicy.RELIABLE)


class SimulatedG1:
    """The robot's physics (or a frozen default pose); pure apart from MuJoCo."""

    def __init__(self, robot, physics: bool):
        self.robot = robot
        self.n = robot.num_joints
        self.physics = physics
        self.command = LowCommand.zero_torque(self.n)
        if physics:
            import mujoco

            from bcg_robot.model import build_model, joint_dof_indices, joint_qpos_indices

            self.mujoco = mujoco
            self.model = build_model(robot, "bridge")
            self.data = mujoco.MjData(self.model)
            self.qi, self.di = joint_qpos_indices(self.model, robot), joint_dof_indices(self.model, robot)
            self.dt = self.model.opt.timestep
        else:
            self.dt = 0.002
        self.reset()

    def reset(self) -> None:
        self.in_gantry = True
        if self.physics:
            self.mujoco.mj_resetDataKeyframe(self.model, self.data, self.model.key("default").id)
            self.mujoco.mj_forward(self.model, self.data)

    def apply(self, command: LowCommand) -> None:
        self.command = command
        if np.any(command.kp > 0):
            self.in_gantry = False

    def step(self) -> None:
        if not self.physics or self.in_gantry:
            return
        d, c = self.data, self.command
        d.ctrl[:] = pd_torque(c.q, d.qpos[self.qi], c.dq, d.qvel[self.di], c.kp, c.kd, c.tau, self.robot.effort)
        self.mujoco.mj_step(self.model, d)

    def read(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """q, dq, quat (w x y z), gyro (body frame)."""
        if not self.physics:
            return self.robot.default_q.copy(), np.zeros(self.n), np.array([1.0, 0, 0, 0]), np.zeros(3)
        d = self.data
        return d.qpos[self.qi].copy(), d.qvel[self.di].copy(), d.qpos[3:7].copy(), d.qvel[3:6].copy()


class LoopbackRobot(Node):
    def __init__(self):
        super().__init__("loopback_robot")
        self.kind = self.declare_parameter("interface", "ros2").value
        domain = int(self.declare_parameter("domain_id", 1).value)
        nic = self.declare_parameter("network_interface", "lo").value
        physics = bool(self.declare_parameter("physics", True).value)
        state_rate = float(self.declare_parameter("state_rate_hz", 500.0).value)
        self.mode_machine = int(self.declare_parameter("mode_machine", UNITREE_MODE_MACHINE_29DOF).value)
        self.robot = load_robot_config(check_model=False)
        self.sim = SimulatedG1(self.robot, physics)
        self.n = self.robot.num_joints
        self.state_every = max(1, round(1.0 / (state_rate * self.sim.dt)))
        self.lock = threading.Lock()
        self.steps = 0
        self.tick = 0
        self.injection = ""
        self.injected_at = 0.0
        self.counts = {"received": 0, "bad_crc": 0, "bad_mode_machine": 0, "bad_motor_mode": 0}
        self.last_state_at = 0.0
        self.last_good_at = 0.0
        self.received_pub = self.create_publisher(Float64MultiArray, RECEIVED_TOPIC, 100)
        self.status_pub = self.create_publisher(String, STATUS_TOPIC, 10)
        self.create_subscription(String, INJECT_TOPIC, self._on_inject, 10)
        if self.kind == "ros2":
            self.joint_pub = self.create_publisher(JointState, STATE_JOINTS_TOPIC, STATE_QOS)
            self.imu_pub = self.create_publisher(Imu, STATE_IMU_TOPIC, STATE_QOS)
            self.create_subscription(Float64MultiArray, COMMAND_TOPIC, self._on_ros_command, STATE_QOS)
        else:
            from unitree_sdk2py.core.channel import ChannelPublisher, ChannelSubscriber
            from unitree_sdk2py.idl.default import unitree_hg_msg_dds__LowState_
            from unitree_sdk2py.idl.unitree_hg.msg.dds_ import LowCmd_, LowState_
            from unitree_sdk2py.utils.crc import CRC

            from bcg_policy_node.interfaces.unitree_sdk_interface import init_channel_factory

            init_channel_factory(domain, nic)
            self.crc = CRC()
            self.lowstate = unitree_hg_msg_dds__LowState_()
            self.state_writer = ChannelPublisher(UNITREE_STATE_TOPIC, LowState_)
            self.state_writer.Init()
            self.cmd_reader = ChannelSubscriber(UNITREE_COMMAND_TOPIC, LowCmd_)
            self.cmd_reader.Init(self._on_lowcmd, 0)
        self.create_timer(self.sim.dt, self._on_step)
        self.create_timer(0.2, self._publish_status)

    # commands in ---------------------------------------------------------------------
    def _record(self, t: float, command: LowCommand) -> None:
        with self.lock:
            self.sim.apply(command)
            self.counts["received"] += 1
        self.received_pub.publish(Float64MultiArray(data=[t, *command.as_matrix().reshape(-1).tolist()]))

    def _on_ros_command(self, msg: Float64MultiArray) -> None:
        t = time.monotonic()
        try:
            command = command_from_flat(msg.data, self.n)
        except ValueError as err:
            self.get_logger().error(f"bad command: {err}")
            return
        self._record(t, command)

    def _on_lowcmd(self, msg) -> None:
        t = time.monotonic()
        with self.lock:
            if msg.crc != self.crc.Crc(msg):
                self.counts["bad_crc"] += 1
                return
            if msg.mode_machine != self.mode_machine:
                self.counts["bad_mode_machine"] += 1
                return
            if any(msg.motor_cmd[i].mode != 1 for i in range(self.n)):
                self.counts["bad_motor_mode"] += 1
                return
        m = msg.motor_cmd[: self.n]
        command = LowCommand(*(np.array([getattr(c, f) for c in m], dtype=np.float64) for f in ("q", "dq", "tau", "kp", "kd")))
        self._record(t, command)

    # injections ----------------------------------------------------------------------
    def _on_inject(self, msg: String) -> None:
        what = msg.data
        with self.lock:
            if what == "reset_sim":
                self.sim.reset()
            elif what == "clear":
                self.injection, self.injected_at = "", 0.0
            elif what in INJECTIONS:
                if what in SDK_ONLY and self.kind != "unitree_sdk":
                    self.get_logger().error(f"injection '{what}' needs the unitree_sdk interface")
                    return
                self.injection, self.injected_at = what, 0.0
            else:
                self.get_logger().error(f"unknown injection '{what}'")
                return
        self.get_logger().info(f"inject: {what}")

    # state out -----------------------------------------------------------------------
    def _on_step(self) -> None:
        with self.lock:
            self.sim.step()
            self.steps += 1
            if self.steps % self.state_every:
                return
            inj = self.injection
            if inj and self.injected_at == 0.0:
                self.injected_at = time.monotonic()
                self.last_good_at = self.last_state_at  # the last state published before the injection
            if inj == "freeze":
                return
            if inj != "stall_tick":
                self.tick += 1
            q, dq, quat, gyro = self.sim.read()
        if inj == "nan":
            q[0] = np.nan
        elif inj == "overspeed":
            dq[3] = 2.0 * self.robot.velocity_limits[3]
        elif inj == "tilt":
            quat = np.array([np.cos(0.65), np.sin(0.65), 0.0, 0.0])  # 1.3 rad about x
        self.last_state_at = time.monotonic()
        if self.kind == "ros2":
            self._publish_ros_state(q, dq, quat, gyro)
        else:
            self._publish_lowstate(q, dq, quat, gyro, inj)

    def _publish_ros_state(self, q, dq, quat, gyro) -> None:
        stamp = self.get_clock().now().to_msg()
        imu = Imu()
        imu.header.stamp = stamp
        imu.orientation.w, imu.orientation.x, imu.orientation.y, imu.orientation.z = (float(v) for v in quat)
        imu.angular_velocity.x, imu.angular_velocity.y, imu.angular_velocity.z = (float(v) for v in gyro)
        self.imu_pub.publish(imu)
        js = JointState(name=list(self.robot.joint_names), position=q.tolist(), velocity=dq.tolist(), effort=[0.0] * self.n)
        js.header.stamp = stamp
        js.header.frame_id = f"{TICK_FRAME_PREFIX}{self.tick}"
        self.joint_pub.publish(js)

    def _publish_lowstate(self, q, dq, quat, gyro, inj: str) -> None:
        s = self.lowstate
        s.tick, s.mode_machine = self.tick, self.mode_machine
        s.imu_state.quaternion = [float(v) for v in quat]
        s.imu_state.gyroscope = [float(v) for v in gyro]
        for i in range(self.n):
            m = s.motor_state[i]
            m.q, m.dq = float(q[i]), float(dq[i])
            m.motorstate = 1 if inj == "motor_fault" and i == 3 else 0
            m.temperature = [120, 120] if inj == "hot" and i == 9 else [40, 40]
        buttons = {"remote_estop": REMOTE_ESTOP_BUTTONS, "remote_start": REMOTE_RUN_BUTTONS}.get(inj, ())
        s.wireless_remote = encode_remote(RemoteState(frozenset(buttons)))
        s.crc = self.crc.Crc(s) ^ (1 if inj == "corrupt_crc" else 0)
        self.state_writer.Write(s)

    def _publish_status(self) -> None:
        with self.lock:
            status = dict(self.counts, injection=self.injection, injected_at=self.injected_at,
                          last_good_at=self.last_good_at, tick=self.tick,
                          in_gantry=self.sim.in_gantry, last_state_at=self.last_state_at)
        self.status_pub.publish(String(data=json.dumps(status)))


def main(args=None) -> int:
    return run_node("loopback_robot", LoopbackRobot, args)


if __name__ == "__main__":
    raise SystemExit(main())
