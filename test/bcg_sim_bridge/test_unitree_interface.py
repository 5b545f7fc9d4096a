"""The bridge's unitree_sdk side without DDS: LowState_ of the simulated G1, LowCmd_ as the robot takes it."""

import numpy as np
import pytest

from bcg_robot.config import load_robot_config
from bcg_robot.remote import RemoteState
from bcg_robot.unitree_hg import MODE_PR_AB, MOTOR_MODE_DISABLE, crc_ok, pack_low_cmd, pack_low_state, seal, unpack_low_state
from bcg_robot.wire import UNITREE_MODE_MACHINE_29DOF, LowCommand
from bcg_sim_bridge.config import BridgeConfig, ElasticBandConfig
from bcg_sim_bridge.interfaces import InterfaceCounters
from bcg_sim_bridge.physics import BridgePhysics
from bcg_sim_bridge.unitree_interface import MOTOR_TEMPERATURE_C, buttons_from_mask, receive_low_cmd, state_sample


@pytest.fixture(scope="module")
def robot():
    return load_robot_config()


def test_low_state_carries_tick_mode_machine_imu_motors_remote_and_crc(robot):
    physics = BridgePhysics(robot, BridgeConfig(elastic_band=ElasticBandConfig(enabled=False)))
    physics.step(10)
    state = physics.snapshot()
    msg = pack_low_state(state_sample(state, RemoteState(frozenset({"L2", "B"}))))
    assert msg.tick == state.tick == 20
    assert msg.mode_machine == 5
    assert crc_ok(msg)
    back = unpack_low_state(msg, robot.num_joints)
    np.testing.assert_allclose(back.quat_wxyz, state.imu_quat, atol=1e-6)
    np.testing.assert_allclose(back.accelerometer, state.imu_acc, atol=1e-5)
    np.testing.assert_allclose(back.q, state.q, atol=1e-6)
    np.testing.assert_allclose(back.tau_est, state.tau, atol=1e-4)
    assert np.all(back.motor_fault == 0) and np.all(back.motor_temperature == MOTOR_TEMPERATURE_C)
    assert back.remote.pressed("L2", "B")
    assert not crc_ok(pack_low_state(state_sample(state, RemoteState()), corrupt_crc=True))


def test_bad_crc_and_wrong_mode_machine_are_dropped_and_counted(robot):
    counters = InterfaceCounters()
    cmd = LowCommand.position(robot.default_q, robot.kp_array, robot.kd_array)
    bad = pack_low_cmd(cmd, UNITREE_MODE_MACHINE_29DOF)
    bad.crc ^= 1
    assert receive_low_cmd(bad, robot.num_joints, counters) is None
    assert receive_low_cmd(pack_low_cmd(cmd, mode_machine=0), robot.num_joints, counters) is None
    got = receive_low_cmd(pack_low_cmd(cmd, UNITREE_MODE_MACHINE_29DOF), robot.num_joints, counters)
    np.testing.assert_allclose(got.as_matrix(), cmd.as_matrix(), rtol=1e-6, atol=1e-6)
    snap = counters.snapshot()
    assert (snap["bad_crc"], snap["bad_mode_machine"], snap["accepted"], snap["disabled_motor_cmds"]) == (1, 1, 1, 0)


def test_motor_mode_zero_disables_the_motor_at_the_bridge_and_is_counted(robot):
    """Decode side of the motor mode rule: mode 0 -> that motor gets zero torque; the rest of the command applies."""
    counters = InterfaceCounters()
    msg = pack_low_cmd(LowCommand.position(robot.default_q, robot.kp_array, robot.kd_array), UNITREE_MODE_MACHINE_29DOF)
    msg.motor_cmd[3].mode = MOTOR_MODE_DISABLE
    seal(msg)
    got = receive_low_cmd(msg, robot.num_joints, counters)
    assert np.all(got.as_matrix()[:, 3] == 0)
    np.testing.assert_allclose(np.delete(got.kp, 3), np.delete(robot.kp_array, 3), rtol=1e-6)
    snap = counters.snapshot()
    assert snap["accepted"] == 1 and snap["disabled_motor_cmds"] == 1


def test_a_command_in_ab_ankle_mode_is_dropped_and_counted(robot):
    """The robot reads the ankle targets of a mode_pr 1 command as motor A/B positions; the bridge
    simulates pitch/roll ankles only, so it must not apply them as pitch/roll."""
    counters = InterfaceCounters()
    cmd = LowCommand.position(robot.default_q, robot.kp_array, robot.kd_array)
    assert receive_low_cmd(pack_low_cmd(cmd, UNITREE_MODE_MACHINE_29DOF, mode_pr=MODE_PR_AB), robot.num_joints,
                           counters) is None
    assert receive_low_cmd(pack_low_cmd(cmd, UNITREE_MODE_MACHINE_29DOF), robot.num_joints, counters) is not None
    snap = counters.snapshot()
    assert (snap["ab_ankle_mode"], snap["accepted"]) == (1, 1)


def test_remote_mask_names_buttons_with_the_shared_codec():
    """The bridge's button injection and the node's remote decoding are one codec (bcg_robot.remote):
    the bridge had its own copies of the mask's encoding and decoding."""
    import bcg_robot.remote as remote
    from bcg_sim_bridge import state_faults
    from bcg_sim_bridge.sim2sim import runner

    assert buttons_from_mask((1 << 5) | (1 << 9)) == frozenset({"L2", "B"})
    assert buttons_from_mask is remote.buttons_from_mask and state_faults.button_mask is remote.button_mask
    assert remote.decode_remote(remote.encode_remote(RemoteState(buttons_from_mask(runner.REMOTE_ESTOP_MASK)))).pressed("L2", "B")
    with pytest.raises(ValueError, match="unknown remote button Z"):
        remote.button_mask(("A", "Z"))


def test_a_command_with_a_non_finite_value_is_dropped_whole_and_counted_on_both_transports(robot):
    """MuJoCo zeroes every actuator's control when one is NaN (mjWARN_BADCTRL): one NaN wrist target
    left all 29 motors limp for the step while the bridge logged the command as applied."""
    import mujoco

    from bcg_robot.model import build_model, simulation_diverged
    from bcg_sim_bridge.ros2_interface import receive_command

    cmd = LowCommand.position(robot.default_q, robot.kp_array, robot.kd_array)
    nan = LowCommand.from_matrix(cmd.as_matrix())
    nan.q[-1] = np.nan
    counters = InterfaceCounters()
    assert receive_low_cmd(pack_low_cmd(nan, UNITREE_MODE_MACHINE_29DOF), robot.num_joints, counters) is None
    assert receive_command(nan.as_matrix().ravel(), robot.num_joints, counters) == (None, "a non-finite value")
    got, _ = receive_command(cmd.as_matrix().ravel(), robot.num_joints, counters)
    np.testing.assert_array_equal(got.as_matrix(), cmd.as_matrix())
    snap = counters.snapshot()
    assert (snap["nonfinite"], snap["accepted"]) == (2, 1)
    # and a non-finite control that reaches MuJoCo anyway is a divergence, not a quiet limp step
    model = build_model(robot, "bridge")
    data = mujoco.MjData(model)
    mujoco.mj_resetDataKeyframe(model, data, model.key("default").id)
    data.ctrl[:] = 0.0
    data.ctrl[0] = np.nan
    mujoco.mj_step(model, data)
    assert np.isfinite(data.qpos).all() and simulation_diverged(data)
