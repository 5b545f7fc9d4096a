"""The unitree_sdk interface's LowCmd (what node and sentinel write) and LowState decoding (no DDS needed)."""

import numpy as np
import pytest
from unitree_sdk2py.idl.default import unitree_hg_msg_dds__LowState_

from bcg_robot.config import load_robot_config
from bcg_robot.remote import RemoteState, encode_remote
from bcg_robot.unitree_hg import (MOTOR_MODE_DISABLE, MOTOR_MODE_ENABLE, crc_ok, message_crc, new_low_cmd, pack_low_cmd,
                                  unpack_low_cmd)
from bcg_robot.wire import STAMP_MAGIC, UNITREE_NUM_MOTORS, CommandWriter, LowCommand, command_stamp, writer_from_stamp

from bcg_policy_node.interfaces import unitree_sdk_interface
from bcg_policy_node.interfaces.unitree_sdk_interface import state_from_lowstate


def test_lowcmd_carries_the_command_copied_mode_machine_and_motor_mode():
    robot = load_robot_config(check_model=False)
    n = robot.num_joints
    command = LowCommand.position(robot.default_q, robot.kp_array, robot.kd_array)
    msg = pack_low_cmd(command, mode_machine=4, mode_pr=0)
    assert crc_ok(msg)
    assert msg.mode_machine == 4 and msg.mode_pr == 0
    assert [m.mode for m in msg.motor_cmd] == [1] * n + [0] * (UNITREE_NUM_MOTORS - n)
    assert np.allclose([m.q for m in msg.motor_cmd[:n]], robot.default_q)
    assert np.allclose([m.kp for m in msg.motor_cmd[:n]], robot.kp_array)
    crc = msg.crc
    msg.motor_cmd[3].q += 0.01
    assert message_crc(msg) != crc  # the CRC covers the targets


def test_the_interface_packs_with_the_shared_codec():
    """The node's and sentinel's send() has no LowCmd encoder of its own."""
    assert unitree_sdk_interface.pack_low_cmd is pack_low_cmd
    assert not hasattr(unitree_sdk_interface, "fill_lowcmd")


@pytest.mark.parametrize("kind", ["damping", "zero_torque", "position"])
def test_motor_mode_rule_every_command_the_node_sends_enables_every_joint(kind):
    """Encode side of the motor mode rule: DAMP (the sentinel's takeover too) keeps the motors enabled."""
    robot = load_robot_config(check_model=False)
    n = robot.num_joints
    command = {"damping": LowCommand.damping(robot.kd_array), "zero_torque": LowCommand.zero_torque(n),
               "position": LowCommand.position(robot.default_q, robot.kp_array, robot.kd_array)}[kind]
    msg = new_low_cmd()
    pack_low_cmd(command, 5, 0, command_stamp("sentinel", 1, 1), into=msg)
    assert [m.mode for m in msg.motor_cmd[:n]] == [MOTOR_MODE_ENABLE] * n
    assert {m.mode for m in msg.motor_cmd[n:]} == {MOTOR_MODE_DISABLE}
    unpacked = unpack_low_cmd(msg, n)  # what the robot (or the bridge) makes of it
    assert unpacked.disabled == ()
    np.testing.assert_allclose(unpacked.command.kd, command.kd, rtol=1e-6)


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
    msg = new_low_cmd()
    assert writer_from_stamp(msg.reserve).role == "foreign"  # an unstamped LowCmd, as any SDK client sends
    pack_low_cmd(command, mode_machine=5, mode_pr=0, stamp=command_stamp("sentinel", 0x1A2B3C4D, 7), into=msg)
    writer = writer_from_stamp(msg.reserve)
    assert writer == CommandWriter("sentinel", "sentinel#1a2b3c4d") and msg.reserve[2] == 7
    crc = msg.crc
    msg.reserve = command_stamp("node", 0x1A2B3C4D, 7)
    assert writer_from_stamp(msg.reserve).role == "node" and message_crc(msg) != crc  # a forged stamp breaks the CRC
    assert writer_from_stamp([STAMP_MAGIC | 9, 1, 0, 0]).role == "foreign"  # unknown role code


def test_the_ab_ankle_mode_is_refused_because_the_config_has_pitch_and_roll_ankles():
    from bcg_policy_node.interfaces.factory import InterfaceParams
    from bcg_robot.errors import BCGInputError

    InterfaceParams(kind="unitree_sdk", mode_pr=0).validate("policy_node")
    with pytest.raises(BCGInputError, match=r"policy_node: parameter 'mode_pr': 1, but only 0 \(pitch/roll ankles"):
        InterfaceParams(kind="unitree_sdk", mode_pr=1).validate("policy_node")


SWITCHER_PROBE = """
import os, sys, threading
from bcg_policy_node.interfaces.unitree_sdk_interface import SdkInterfaceError, init_channel_factory, release_sport_mode
init_channel_factory(int(sys.argv[1]), "lo")
before = sum(t.name == "ch_reader" for t in threading.enumerate())
for _ in range(2):  # two configures in a row, each with no motion switcher to answer
    try:
        release_sport_mode(0.2, log=lambda line: None)
    except SdkInterfaceError as err:
        print("refused:", err)
print("ch_reader threads:", sum(t.name == "ch_reader" for t in threading.enumerate()) - before)
"""


def test_releasing_sport_mode_leaves_no_sdk_reader_thread_behind():
    """The SDK's MotionSwitcherClient opens a response reader (a DDS listener and a thread) and a
    request writer when it is made, and has no close: every configure on unitree_sdk, and every
    retry after 'no answer', left them in the control process."""
    import os
    import subprocess
    import sys

    domain = 150 + os.getpid() % 40  # a domain of its own, nothing answering on it
    done = subprocess.run([sys.executable, "-c", SWITCHER_PROBE, str(domain)], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.count("refused: unitree_sdk: motion switcher: no answer") == 2, done.stdout
    assert "ch_reader threads: 0" in done.stdout, done.stdout
