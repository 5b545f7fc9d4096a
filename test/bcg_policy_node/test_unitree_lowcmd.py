"""LowCmd filling and LowState decoding of the unitree_sdk interface (no DDS needed)."""

import numpy as np
from unitree_sdk2py.idl.default import unitree_hg_msg_dds__LowCmd_, unitree_hg_msg_dds__LowState_
from unitree_sdk2py.utils.crc import CRC

from bcg_robot.config import load_robot_config
from bcg_robot.remote import RemoteState, encode_remote
from bcg_robot.wire import STAMP_MAGIC, UNITREE_NUM_MOTORS, CommandWriter, LowCommand, command_stamp, writer_from_stamp

from bcg_policy_node.interfaces.unitree_sdk_interface import fill_lowcmd, state_from_lowstate


def test_lowcmd_carries_the_command_copied_mode_machine_and_motor_mode():
    robot = load_robot_config(check_model=False)
    n = robot.num_joints
    command = LowCommand.position(robot.default_q, robot.kp_array, robot.kd_array)
    msg = unitree_hg_msg_dds__LowCmd_()
    fill_lowcmd(msg, command, mode_machine=4, mode_pr=0)
    msg.crc = CRC().Crc(msg)
    assert msg.mode_machine == 4 and msg.mode_pr == 0
    assert [m.mode for m in msg.motor_cmd] == [1] * n + [0] * (UNITREE_NUM_MOTORS - n)
    assert np.allclose([m.q for m in msg.motor_cmd[:n]], robot.default_q)
    assert np.allclose([m.kp for m in msg.motor_cmd[:n]], robot.kp_array)
    crc = msg.crc
    msg.motor_cmd[3].q += 0.01
    assert CRC().Crc(msg) != crc  # the CRC covers the targets


def test_lowstate_decoding():
    robot = load_robot_config(check_model=False)
    msg = unitree_hg_msg_dds__LowState_()
    msg.tick, msg.mode_machine = 1234, 5
    msg.imu_state.quaternion = [0.9, 0.1, 0.0, 0.0]
    msg.motor_state[7].q, msg.motor_state[7].motorstate = 0.5, 9
    msg.motor_state[2].temperature = [30, 77]
    msg.wireless_remote = encode_remote(RemoteState(frozenset({"L2", "B"})))
    state = state_from_lowstate(msg, robot.num_joints, received_at=3.0)
    assert state.tick == 1234 and state.mode_machine == 5 and state.received_at == 3.0
    assert np.isclose(state.q[7], 0.5) and state.motor_fault[7] == 9 and state.motor_temperature[2] == 77
    assert state.remote.pressed("L2", "B") and np.allclose(state.quat_wxyz, [0.9, 0.1, 0, 0])


def test_the_writer_stamp_names_role_and_session_and_is_under_the_crc():
    robot = load_robot_config(check_model=False)
    command = LowCommand.damping(robot.kd_array)
    msg = unitree_hg_msg_dds__LowCmd_()
    assert writer_from_stamp(msg.reserve).role == "foreign"  # an unstamped LowCmd, as any SDK client sends
    fill_lowcmd(msg, command, mode_machine=5, mode_pr=0, stamp=command_stamp("sentinel", 0x1A2B3C4D, 7))
    msg.crc = CRC().Crc(msg)
    writer = writer_from_stamp(msg.reserve)
    assert writer == CommandWriter("sentinel", "sentinel#1a2b3c4d") and msg.reserve[2] == 7
    crc = msg.crc
    msg.reserve = command_stamp("node", 0x1A2B3C4D, 7)
    assert writer_from_stamp(msg.reserve).role == "node" and CRC().Crc(msg) != crc  # a forged stamp breaks the CRC
    assert writer_from_stamp([STAMP_MAGIC | 9, 1, 0, 0]).role == "foreign"  # unknown role code
