"""``unitree_hg`` LowState_/LowCmd_ conversion as the G1 does it (pure, no DDS traffic).

State out: ``tick``, ``mode_machine`` 5, IMU (quaternion w x y z, gyroscope,
accelerometer, rpy), motor states in motor order, ``wireless_remote`` and the CRC
computed by the SDK's own :class:`unitree_sdk2py.utils.crc.CRC`.
Command in: accepted only with a correct CRC and the robot's ``mode_machine``; a motor
whose ``mode`` is 0 is disabled (zero torque), as on the robot.
"""

from __future__ import annotations

import enum

import numpy as np
from unitree_sdk2py.idl.default import unitree_hg_msg_dds__LowCmd_, unitree_hg_msg_dds__LowState_
from unitree_sdk2py.idl.unitree_hg.msg.dds_ import LowCmd_, LowState_
from unitree_sdk2py.utils.crc import CRC

from bcg_robot.wire import UNITREE_MODE_MACHINE_29DOF, UNITREE_NUM_MOTORS, LowCommand
from bcg_sim_bridge.physics import BridgeState

MOTOR_TEMPERATURE_C = 35  # simulated drives stay cool
_crc = CRC()


class CommandVerdict(enum.Enum):
    ACCEPTED = "accepted"
    BAD_CRC = "bad_crc"
    BAD_MODE_MACHINE = "bad_mode_machine"


def quat_to_rpy(q_wxyz: np.ndarray) -> np.ndarray:
    w, x, y, z = q_wxyz
    roll = np.arctan2(2 * (w * x + y * z), 1 - 2 * (x * x + y * y))
    pitch = np.arcsin(np.clip(2 * (w * y - z * x), -1.0, 1.0))
    yaw = np.arctan2(2 * (w * z + x * y), 1 - 2 * (y * y + z * z))
    return np.array([roll, pitch, yaw])


def new_low_state() -> LowState_:
    msg = unitree_hg_msg_dds__LowState_()
    msg.mode_machine = UNITREE_MODE_MACHINE_29DOF
    for m in msg.motor_state:
        m.temperature = [MOTOR_TEMPERATURE_C, MOTOR_TEMPERATURE_C]
    return msg


def fill_low_state(msg: LowState_, state: BridgeState, remote: list[int], corrupt_crc: bool = False) -> LowState_:
    """Write ``state`` into ``msg`` (reused between calls) and seal it with the CRC."""
    msg.tick = state.tick & 0xFFFFFFFF
    imu = msg.imu_state
    imu.quaternion = [float(v) for v in state.imu_quat]
    imu.gyroscope = [float(v) for v in state.imu_gyro]
    imu.accelerometer = [float(v) for v in state.imu_acc]
    imu.rpy = [float(v) for v in quat_to_rpy(state.imu_quat)]
    for i, (q, dq, tau) in enumerate(zip(state.q.tolist(), state.dq.tolist(), state.tau.tolist())):
        m = msg.motor_state[i]
        m.mode = 1
        m.q, m.dq, m.tau_est = q, dq, tau
    msg.wireless_remote = remote
    msg.crc = _crc.Crc(msg)
    if corrupt_crc:
        msg.crc = (msg.crc ^ 0xDEADBEEF) & 0xFFFFFFFF
    return msg


def check_low_cmd(msg: LowCmd_, mode_machine: int = UNITREE_MODE_MACHINE_29DOF) -> CommandVerdict:
    if msg.crc != _crc.Crc(msg):
        return CommandVerdict.BAD_CRC
    if msg.mode_machine != mode_machine:
        return CommandVerdict.BAD_MODE_MACHINE
    return CommandVerdict.ACCEPTED


def low_cmd_to_command(msg: LowCmd_, num_joints: int) -> LowCommand:
    """The first ``num_joints`` motors in motor order; ``mode`` 0 disables a motor."""
    rows = np.zeros((5, num_joints))
    for i in range(num_joints):
        m = msg.motor_cmd[i]
        if m.mode:
            rows[:, i] = (m.q, m.dq, m.tau, m.kp, m.kd)
    return LowCommand.from_matrix(rows)


def command_to_low_cmd(cmd: LowCommand, mode_machine: int = UNITREE_MODE_MACHINE_29DOF) -> LowCmd_:
    """A sealed LowCmd_ as a client would send it (tests and fault injection)."""
    msg = unitree_hg_msg_dds__LowCmd_()
    msg.mode_pr = 0
    msg.mode_machine = mode_machine
    for i in range(cmd.num_joints):
        m = msg.motor_cmd[i]
        m.mode = 1
        m.q, m.dq, m.tau, m.kp, m.kd = (float(cmd.q[i]), float(cmd.dq[i]), float(cmd.tau[i]), float(cmd.kp[i]),
                                        float(cmd.kd[i]))
    msg.crc = _crc.Crc(msg)
    return msg


def low_state_crc_ok(msg: LowState_) -> bool:
    return msg.crc == _crc.Crc(msg)


assert UNITREE_NUM_MOTORS == len(unitree_hg_msg_dds__LowCmd_().motor_cmd)
