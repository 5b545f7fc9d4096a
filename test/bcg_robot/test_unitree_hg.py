"""The unitree_hg codec: LowCmd_/LowState_ packing and unpacking, CRC, the motor mode rule."""

import numpy as np
import pytest

from bcg_robot.config import load_robot_config
from bcg_robot.remote import RemoteState
from bcg_robot.unitree_hg import (
    MOTOR_MODE_DISABLE, MOTOR_MODE_ENABLE, CommandVerdict, LowStateSample, check_low_cmd, crc_ok, message_crc,
    new_low_cmd, pack_low_cmd, pack_low_state, quat_to_rpy, seal, unpack_low_cmd, unpack_low_state,
)
from bcg_robot.wire import UNITREE_MODE_MACHINE_29DOF, UNITREE_NUM_MOTORS, LowCommand, command_stamp, writer_from_stamp


@pytest.fixture(scope="module")
def robot():
    return load_robot_config(check_model=False)


def _sample(robot, **changes) -> LowStateSample:
    n = robot.num_joints
    fields = dict(
        tick=20, mode_machine=UNITREE_MODE_MACHINE_29DOF, q=robot.default_q + 0.01, dq=np.linspace(-1, 1, n),
        tau_est=np.linspace(-5, 5, n), quat_wxyz=np.array([0.9, 0.1, 0.0, 0.0]) / np.hypot(0.9, 0.1),
        gyro=np.array([0.1, -0.2, 0.3]), accelerometer=np.array([0.0, 0.0, 9.81]),
        motor_fault=np.zeros(n, dtype=np.int64), motor_temperature=np.full(n, 35.0),
        remote=RemoteState(frozenset({"L2", "B"})),
    )
    fields.update(changes)
    return LowStateSample(**fields)


def test_low_state_round_trip_carries_everything_and_is_sealed(robot):
    n = robot.num_joints
    fault = np.where(np.arange(n) == 7, 9, 0)
    temperature = np.where(np.arange(n) == 2, 77.0, 35.0)
    sample = _sample(robot, motor_fault=fault, motor_temperature=temperature)
    msg = pack_low_state(sample)
    assert crc_ok(msg) and msg.crc == message_crc(msg)
    back = unpack_low_state(msg, n)
    assert (back.tick, back.mode_machine) == (20, UNITREE_MODE_MACHINE_29DOF)
    for name in ("q", "dq", "tau_est", "quat_wxyz", "gyro", "accelerometer"):
        np.testing.assert_allclose(getattr(back, name), getattr(sample, name), atol=1e-6, err_msg=name)
    assert back.motor_fault[7] == 9 and back.motor_fault.sum() == 9
    assert back.motor_temperature[2] == 77 and back.motor_temperature[0] == 35
    assert back.remote.pressed("L2", "B")
    np.testing.assert_allclose(msg.imu_state.rpy, quat_to_rpy(sample.quat_wxyz), atol=1e-6)
    assert [m.mode for m in msg.motor_state[:n]] == [MOTOR_MODE_ENABLE] * n


def test_any_change_breaks_the_low_state_seal_and_corruption_is_on_request(robot):
    msg = pack_low_state(_sample(robot))
    msg.motor_state[3].q += 0.1
    assert not crc_ok(msg)
    seal(msg)
    assert crc_ok(msg)
    assert not crc_ok(pack_low_state(_sample(robot), corrupt_crc=True))
    reused = pack_low_state(_sample(robot), corrupt_crc=True)
    assert crc_ok(pack_low_state(_sample(robot, tick=21), into=reused))  # a reused message is resealed


def test_low_cmd_carries_command_mode_machine_mode_pr_stamp_and_crc(robot):
    n = robot.num_joints
    command = LowCommand.position(robot.default_q, robot.kp_array, robot.kd_array)
    msg = pack_low_cmd(command, mode_machine=4, mode_pr=1, stamp=command_stamp("node", 0x1A2B3C4D, 3))
    assert crc_ok(msg) and msg.mode_machine == 4 and msg.mode_pr == 1
    assert writer_from_stamp(msg.reserve).ident == "node#1a2b3c4d"
    np.testing.assert_allclose([m.q for m in msg.motor_cmd[:n]], robot.default_q, atol=1e-6)
    np.testing.assert_allclose([m.kp for m in msg.motor_cmd[:n]], robot.kp_array, rtol=1e-6)
    crc = msg.crc
    msg.motor_cmd[3].q += 0.01
    assert message_crc(msg) != crc  # the CRC covers the targets
    unstamped = pack_low_cmd(command, mode_machine=5)
    assert writer_from_stamp(unstamped.reserve).role == "foreign"


def test_bad_crc_and_wrong_mode_machine_are_rejected_whole(robot):
    cmd = LowCommand.position(robot.default_q, robot.kp_array, robot.kd_array)
    msg = pack_low_cmd(cmd, UNITREE_MODE_MACHINE_29DOF)
    assert check_low_cmd(msg) is CommandVerdict.ACCEPTED
    msg.crc ^= 1
    assert check_low_cmd(msg) is CommandVerdict.BAD_CRC
    assert check_low_cmd(pack_low_cmd(cmd, mode_machine=0)) is CommandVerdict.BAD_MODE_MACHINE
    assert check_low_cmd(pack_low_cmd(cmd, mode_machine=4), mode_machine=4) is CommandVerdict.ACCEPTED


@pytest.mark.parametrize("kind", ["position", "damping", "zero_torque"])
def test_motor_mode_rule_packing_enables_every_joint_of_the_robot(robot, kind):
    """Mode 1 on every joint in every command (a disabled motor cannot damp); mode 0 and zeros beyond."""
    n = robot.num_joints
    command = {"position": LowCommand.position(robot.default_q, robot.kp_array, robot.kd_array),
               "damping": LowCommand.damping(robot.kd_array), "zero_torque": LowCommand.zero_torque(n)}[kind]
    msg = pack_low_cmd(command, UNITREE_MODE_MACHINE_29DOF)
    assert [m.mode for m in msg.motor_cmd] == [MOTOR_MODE_ENABLE] * n + [MOTOR_MODE_DISABLE] * (UNITREE_NUM_MOTORS - n)
    assert all((m.q, m.dq, m.tau, m.kp, m.kd) == (0, 0, 0, 0, 0) for m in msg.motor_cmd[n:])
    unpacked = unpack_low_cmd(msg, n)
    assert unpacked.disabled == ()
    np.testing.assert_allclose(unpacked.command.as_matrix(), command.as_matrix(), rtol=1e-6, atol=1e-6)


def test_a_reused_low_cmd_keeps_no_stale_motor(robot):
    n = robot.num_joints
    msg = new_low_cmd()
    for m in msg.motor_cmd:
        m.mode, m.kp = 7, 99.0  # whatever an earlier writer left there
    pack_low_cmd(LowCommand.damping(robot.kd_array), UNITREE_MODE_MACHINE_29DOF, into=msg)
    assert [m.mode for m in msg.motor_cmd] == [MOTOR_MODE_ENABLE] * n + [MOTOR_MODE_DISABLE] * (UNITREE_NUM_MOTORS - n)
    assert all(m.kp == 0 for m in msg.motor_cmd)


@pytest.mark.parametrize("mode", [MOTOR_MODE_DISABLE, 2])
def test_motor_mode_rule_unpacking_disables_a_motor_not_in_mode_1(robot, mode):
    """A joint not in mode 1 unpacks to zero torque (all-zero row), never to the targets it carries."""
    cmd = LowCommand.position(robot.default_q, robot.kp_array, robot.kd_array)
    msg = pack_low_cmd(cmd, UNITREE_MODE_MACHINE_29DOF)
    msg.motor_cmd[3].mode = mode
    seal(msg)
    assert check_low_cmd(msg) is CommandVerdict.ACCEPTED  # not rejected: the robot does not reject it either
    unpacked = unpack_low_cmd(msg, robot.num_joints)
    assert unpacked.disabled == (3,)
    assert np.all(unpacked.command.as_matrix()[:, 3] == 0)
    np.testing.assert_allclose(np.delete(unpacked.command.kp, 3), np.delete(robot.kp_array, 3), rtol=1e-6)


def test_rpy_of_a_yaw_rotation():
    half = np.pi / 8
    np.testing.assert_allclose(quat_to_rpy(np.array([np.cos(half), 0, 0, np.sin(half)])), [0, 0, np.pi / 4], atol=1e-12)


def test_a_23_dof_robots_joints_sit_in_its_motor_slots_on_both_sides_of_the_wire(robot):
    """g1.md: a 23-DoF G1 leaves slots 13, 14, 20, 21, 27 and 28 unused. Joint i went to slot i,
    so a 23-joint config (which the robot_variant check accepts on mode_machine 4) drove its left
    shoulder pitch into an empty slot, its right arm's last joints onto other motors, and left the
    right elbow and wrist limp; the bridge packed the same way, so sim-to-sim agreed with it."""
    from bcg_robot.wire import UNITREE_MODE_MACHINE_23DOF, unitree_motor_slots

    slots = unitree_motor_slots(23)
    assert slots == (*range(13), 15, 16, 17, 18, 19, 22, 23, 24, 25, 26) and unitree_motor_slots(29) == tuple(range(29))
    n = 23
    command = LowCommand.position(np.arange(n) + 1.0, np.full(n, 40.0), np.full(n, 2.0))
    msg = pack_low_cmd(command, UNITREE_MODE_MACHINE_23DOF)
    assert [m.mode for m in msg.motor_cmd[:29]] == [MOTOR_MODE_DISABLE if s in (13, 14, 20, 21, 27, 28) else MOTOR_MODE_ENABLE
                                                   for s in range(29)]
    assert [msg.motor_cmd[s].q for s in slots] == list(np.arange(n) + 1.0)  # joint 13 (left shoulder pitch) in slot 15
    assert msg.motor_cmd[13].kp == 0.0 and msg.motor_cmd[15].q == 14.0 and msg.motor_cmd[26].q == 23.0
    back = unpack_low_cmd(msg, n)
    np.testing.assert_array_equal(back.command.q, command.q)
    assert back.disabled == ()

    sample = LowStateSample(
        tick=1, mode_machine=UNITREE_MODE_MACHINE_23DOF, q=np.arange(n) * 0.1, dq=np.zeros(n), tau_est=np.zeros(n),
        quat_wxyz=np.array([1.0, 0.0, 0.0, 0.0]), gyro=np.zeros(3), accelerometer=np.zeros(3),
        motor_fault=np.zeros(n, dtype=np.int64), motor_temperature=np.full(n, 30.0), remote=RemoteState())
    state = pack_low_state(sample)
    assert state.motor_state[15].q == pytest.approx(1.3) and state.motor_state[13].q == 0.0
    assert [m.mode for m in state.motor_state[13:15]] == [MOTOR_MODE_DISABLE] * 2
    np.testing.assert_allclose(unpack_low_state(state, n).q, sample.q, atol=1e-6)
