"""The low-level command and state as they travel between node and robot (pure, no ROS).

Two transports carry the same content:

``ros2`` (sim bridge, standard messages only; custom interfaces cannot be built here)
    state in:   ``STATE_JOINTS_TOPIC`` sensor_msgs/JointState: ``name`` in motor order,
                ``position``, ``velocity``, ``effort`` (estimated torque); the header stamp
                and ``TICK_FRAME_PREFIX``+tick in ``header.frame_id`` give freshness.
                ``STATE_IMU_TOPIC`` sensor_msgs/Imu: orientation (x, y, z, w as ROS orders
                it), angular_velocity (rad/s, IMU frame), linear_acceleration.
    command out: ``COMMAND_TOPIC`` std_msgs/Float64MultiArray, a ``5 x n`` row-major
                matrix with layout dims ``field`` (q, dq, tau, kp, kd) and ``joint`` (motor
                order). The drive applies ``tau + kp (q - q_meas) + kd (dq - dq_meas)``.

``unitree_sdk`` (robot, and the bridge's emulation): ``rt/lowstate`` / ``rt/lowcmd`` with
the ``unitree_hg`` IDL, packed and unpacked by :mod:`bcg_robot.unitree_hg`.

:data:`TRANSPORTS` names them; the same name selects a transport everywhere: the policy
node's and sentinel's ``kind`` parameter, the sim bridge's ``interface`` and the
command-line flags of ``bcg-sim2sim`` and the benchmarks.
"""

from __future__ import annotations

import dataclasses
from typing import Literal

import numpy as np

TRANSPORT_ROS2 = "ros2"
TRANSPORT_UNITREE_SDK = "unitree_sdk"
Transport = Literal["ros2", "unitree_sdk"]
TRANSPORTS: tuple[str, ...] = (TRANSPORT_ROS2, TRANSPORT_UNITREE_SDK)

STATE_JOINTS_TOPIC = "lowstate/joint_states"
STATE_IMU_TOPIC = "lowstate/imu"
COMMAND_TOPIC = "lowcmd"
TICK_FRAME_PREFIX = "tick:"
COMMAND_FIELDS = ("q", "dq", "tau", "kp", "kd")

UNITREE_STATE_TOPIC = "rt/lowstate"
UNITREE_COMMAND_TOPIC = "rt/lowcmd"
UNITREE_NUM_MOTORS = 35
UNITREE_MODE_MACHINE_29DOF = 5
UNITREE_MODE_MACHINE_23DOF = 4
# LowState's mode_machine by the robot's joint count (g1.md): a robot config with 29 joints
# on a robot that reports another variant would run its policy on the wrong motors
UNITREE_MODE_MACHINE_BY_JOINTS = {29: UNITREE_MODE_MACHINE_29DOF, 23: UNITREE_MODE_MACHINE_23DOF}
# The motor slot of each joint of the robot config, in its joint order (g1.md): a 29-DoF G1
# fills slots 0..28; a 23-DoF one leaves the waist's roll and pitch (13, 14) and each wrist's
# pitch and yaw (20, 21, 27, 28) unused, so its joints 13..22 sit in slots 15..19 and 22..26.
UNITREE_23DOF_UNUSED_SLOTS = (13, 14, 20, 21, 27, 28)
UNITREE_MOTOR_SLOTS = {
    29: tuple(range(29)),
    23: tuple(s for s in range(29) if s not in UNITREE_23DOF_UNUSED_SLOTS),
}


def unitree_motor_slots(num_joints: int) -> tuple[int, ...]:
    """The motor slots of a robot config's ``num_joints`` joints, in its joint order. A count no
    G1 variant has keeps the first slots; the state watchdog refuses to run such a config on a
    robot that reports its variant (``robot_variant``)."""
    return UNITREE_MOTOR_SLOTS.get(num_joints, tuple(range(num_joints)))


@dataclasses.dataclass(frozen=True)
class LowCommand:
    """One command for all motors, in motor order."""

    q: np.ndarray
    dq: np.ndarray
    tau: np.ndarray
    kp: np.ndarray
    kd: np.ndarray

    @property
    def num_joints(self) -> int:
        return int(self.q.shape[0])

    def as_matrix(self) -> np.ndarray:
        return np.stack([self.q, self.dq, self.tau, self.kp, self.kd]).astype(np.float64)

    def is_finite(self) -> bool:
        return bool(np.isfinite(self.as_matrix()).all())

    def is_damping(self) -> bool:
        return bool(np.all(self.kp == 0) and np.all(self.kd > 0) and np.all(self.tau == 0) and np.all(self.dq == 0))

    def is_zero_torque(self) -> bool:
        return bool(np.all(self.kp == 0) and np.all(self.kd == 0) and np.all(self.tau == 0))

    @classmethod
    def from_matrix(cls, matrix: np.ndarray) -> "LowCommand":
        m = np.asarray(matrix, dtype=np.float64)
        if m.ndim != 2 or m.shape[0] != len(COMMAND_FIELDS):
            raise ValueError(f"command matrix must be {len(COMMAND_FIELDS)} x n, got {m.shape}")
        return cls(*(m[i].copy() for i in range(len(COMMAND_FIELDS))))

    @classmethod
    def damping(cls, kd: np.ndarray) -> "LowCommand":
        """kp = 0, kd > 0: the motors resist motion and hold nothing."""
        kd = np.asarray(kd, dtype=np.float64)
        z = np.zeros_like(kd)
        return cls(z.copy(), z.copy(), z.copy(), z.copy(), kd.copy())

    @classmethod
    def zero_torque(cls, n: int) -> "LowCommand":
        z = np.zeros(n)
        return cls(z.copy(), z.copy(), z.copy(), z.copy(), z.copy())

    @classmethod
    def position(cls, q: np.ndarray, kp: np.ndarray, kd: np.ndarray) -> "LowCommand":
        q = np.asarray(q, dtype=np.float64)
        z = np.zeros_like(q)
        return cls(q.copy(), z.copy(), z.copy(), np.asarray(kp, dtype=np.float64).copy(), np.asarray(kd, dtype=np.float64).copy())


def command_to_flat(cmd: LowCommand) -> list[float]:
    """Row-major flattening used for ``std_msgs/Float64MultiArray.data``."""
    return cmd.as_matrix().reshape(-1).tolist()


def command_from_flat(data, num_joints: int) -> LowCommand:
    flat = np.asarray(data, dtype=np.float64)
    expected = len(COMMAND_FIELDS) * num_joints
    if flat.shape != (expected,):
        raise ValueError(f"command has {flat.size} values, expected {expected}")
    return LowCommand.from_matrix(flat.reshape(len(COMMAND_FIELDS), num_joints))


# Who wrote a command. On ``rt/lowcmd`` the BCG writers stamp ``reserve[4]`` (covered by
# the CRC; the robot ignores it): [STAMP_MAGIC | role code, session, sequence, 0], the
# session a random 32-bit number per process. On ros2 the writer is told by the
# publishing node's name and, for the node's and the sentinel's names, its publisher GID
# (two nodes of one name are two writers). Any other writer is a second commander.
STAMP_MAGIC = 0xBC600000
STAMP_ROLES = {"node": 1, "sentinel": 2}


@dataclasses.dataclass(frozen=True)
class CommandWriter:
    role: str  # "node", "sentinel" or "foreign"
    ident: str  # e.g. "node#1a2b3c4d" (stamp) or "policy_node (publisher 01.0f...)" (ros2 node name, GID)

    def __str__(self) -> str:
        return self.ident


def command_stamp(role: str, session: int, sequence: int) -> list[int]:
    return [STAMP_MAGIC | STAMP_ROLES[role], session & 0xFFFFFFFF, sequence & 0xFFFFFFFF, 0]


def writer_from_stamp(reserve) -> CommandWriter:
    """The writer a ``rt/lowcmd`` sample's ``reserve`` words name (foreign when unstamped)."""
    words = [int(v) for v in reserve]
    if len(words) >= 2 and words[0] & 0xFFFFFF00 == STAMP_MAGIC:
        for role, code in STAMP_ROLES.items():
            if words[0] & 0xFF == code:
                return CommandWriter(role, f"{role}#{words[1]:08x}")
    return CommandWriter("foreign", "unstamped rt/lowcmd writer")
