"""LowState_/LowCmd_ as the G1 does them: CRC by the SDK, mode_machine 5, disabled motors."""

import numpy as np
import pytest

from bcg_robot.config import load_robot_config
from bcg_robot.remote import RemoteState, decode_remote, encode_remote
from bcg_robot.wire import LowCommand
from bcg_sim_bridge.config import BridgeConfig, ElasticBandConfig
from bcg_sim_bridge.physics import BridgePhysics
from bcg_sim_bridge.unitree_codec import (
    CommandVerdict, check_low_cmd, command_to_low_cmd, fill_low_state, low_cmd_to_command, low_state_crc_ok,
    new_low_state, quat_to_rpy,
)


@pytest.fixture(scope="module")
def robot():
    return load_robot_config()


def test_low_state_carries_tick_mode_machine_imu_motors_remote_and_crc(robot):
    physics = BridgePhysics(robot, BridgeConfig(elastic_band=ElasticBandConfig(enabled=False)))
    physics.step(10)
    state = physics.snapshot()
    remote = encode_remote(RemoteState(frozenset({"L2", "B"})))
    msg = fill_low_state(new_low_state(), state, remote)
    assert msg.tick == state.tick == 20
    assert msg.mode_machine == 5
    np.testing.assert_allclose(msg.imu_state.quaternion, state.imu_quat, atol=1e-6)
    np.testing.assert_allclose([m.q for m in msg.motor_state[:29]], state.q, atol=1e-6)
    assert decode_remote(msg.wireless_remote).pressed("L2", "B")
    assert low_state_crc_ok(msg)
    msg.motor_state[3].q += 0.1  # any change breaks the seal
    assert not low_state_crc_ok(msg)
    assert not low_state_crc_ok(fill_low_state(new_low_state(), state, remote, corrupt_crc=True))


def test_bad_crc_and_wrong_mode_machine_are_rejected(robot):
    cmd = LowCommand.position(robot.default_q, robot.kp_array, robot.kd_array)
    msg = command_to_low_cmd(cmd)
    assert check_low_cmd(msg) is CommandVerdict.ACCEPTED
    msg.crc ^= 1
    assert check_low_cmd(msg) is CommandVerdict.BAD_CRC
    assert check_low_cmd(command_to_low_cmd(cmd, mode_machine=0)) is CommandVerdict.BAD_MODE_MACHINE


def test_motor_mode_zero_is_ignored(robot):
    cmd = LowCommand.position(robot.default_q, robot.kp_array, robot.kd_array)
    msg = command_to_low_cmd(cmd)
    msg.motor_cmd[3].mode = 0
    decoded = low_cmd_to_command(msg, robot.num_joints)
    assert decoded.kp[3] == 0 and decoded.kd[3] == 0 and decoded.q[3] == 0
    np.testing.assert_allclose(np.delete(decoded.kp, 3), np.delete(robot.kp_array, 3), rtol=1e-6)


def test_rpy_of_a_yaw_rotation():
    half = np.pi / 8
    np.testing.assert_allclose(quat_to_rpy(np.array([np.cos(half), 0, 0, np.sin(half)])), [0, 0, np.pi / 4], atol=1e-12)
