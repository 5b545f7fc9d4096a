"""The bridge's physics core: PD every step from the latest command, like the G1's drives."""

import dataclasses

import mujoco
import numpy as np
import pytest

from bcg_robot.config import load_robot_config
from bcg_robot.errors import ConfigError
from bcg_robot.model import build_model, joint_dof_indices
from bcg_robot.wire import LowCommand
from bcg_sim_bridge.config import BridgeConfig, ElasticBandConfig, load_bridge_config
from bcg_sim_bridge.physics import BridgePhysics, DriveMode, default_pose_command


@pytest.fixture(scope="module")
def robot():
    return load_robot_config()


def _physics(robot, **overrides):
    cfg = dataclasses.replace(BridgeConfig(), elastic_band=ElasticBandConfig(enabled=False), **overrides)
    return BridgePhysics(robot, cfg)


@pytest.mark.parametrize("dt", [0.002, 0.001])
def test_holds_the_g1_standing_under_a_default_pose_command(robot, dt):
    physics = _physics(robot, physics_dt=dt)
    physics.set_command(default_pose_command(robot))
    physics.step(int(3.0 / dt))
    state = physics.snapshot()
    assert state.root_pos[2] > 0.7
    assert np.abs(state.q - robot.default_q).max() < 0.15
    assert state.drive_mode == DriveMode.COMMAND
    # IMU from the model's sensors: upright, gravity on +z of the accelerometer
    assert abs(state.imu_quat[0]) > 0.99
    assert state.imu_acc[2] == pytest.approx(9.81, abs=0.5)
    assert state.tick == round(3.0 * 1000)
    assert 0 <= state.foot_penetration < 0.005


def test_the_imu_reads_the_current_state_and_reading_it_leaves_the_trajectory_unchanged(robot):
    """mj_step computes its sensors before it integrates; the state's IMU is the pelvis' orientation
    and rate now, beside the joints of now, as the training observation reads them (the IMU site
    sits on the pelvis, aligned with it). A run that reads its state steps exactly as one that does not."""
    band = ElasticBandConfig(enabled=True)
    read, unread = (BridgePhysics(robot, dataclasses.replace(BridgeConfig(), elastic_band=band)) for _ in range(2))
    for physics in (read, unread):
        physics.set_command(default_pose_command(robot))
        physics.push(np.array([300.0, 200.0, 0.0]), 0.1)  # the hanging robot swings and turns
    rates = []
    for _ in range(150):
        read.step()
        unread.step()
        state = read.snapshot()
        quat = read.data.qpos[3:7] / np.linalg.norm(read.data.qpos[3:7])
        np.testing.assert_allclose(state.imu_quat, quat, rtol=0, atol=1e-9)
        np.testing.assert_allclose(state.imu_gyro, read.data.qvel[3:6], rtol=0, atol=1e-9)
        rates.append(np.linalg.norm(state.imu_gyro))
    # every position and velocity sensor of the model (root_angmom too) as a forward pass on this state gives them
    fresh = mujoco.MjData(read.model)
    fresh.qpos[:], fresh.qvel[:] = read.data.qpos, read.data.qvel
    mujoco.mj_forward(read.model, fresh)
    for i in np.flatnonzero(read.model.sensor_needstage < int(mujoco.mjtStage.mjSTAGE_ACC)):
        at = slice(read.model.sensor_adr[i], read.model.sensor_adr[i] + read.model.sensor_dim[i])
        np.testing.assert_allclose(read.data.sensordata[at], fresh.sensordata[at], rtol=1e-9, atol=1e-12,
                                   err_msg=read.model.sensor(i).name)
    assert max(rates) > 0.2  # it turned: a reading one step old would differ
    np.testing.assert_array_equal(read.data.qpos, unread.data.qpos)
    np.testing.assert_array_equal(read.data.qvel, unread.data.qvel)


def test_torque_is_the_shared_pd_law_clipped_to_effort(robot):
    physics = _physics(robot)
    target = robot.default_q + 1.0  # far away: saturates every joint
    physics.set_command(LowCommand.position(target, robot.kp_array * 10, robot.kd_array))
    physics.step(1)
    np.testing.assert_allclose(np.abs(physics.tau), robot.effort)


def test_an_unsaturated_command_gets_tau_plus_kp_and_kd_terms_on_each_joints_own_coordinates(robot):
    """Every term of the drive's law, on a moving robot: the saturating test above could not tell a
    sign error, a dq read from another joint, or a dropped feed-forward velocity or torque."""
    physics = _physics(robot)
    physics.set_command(default_pose_command(robot))
    physics.push(np.array([200.0, -100.0, 0.0]), 0.05)
    physics.step(40)  # falling and swinging: every joint has its own q and dq
    n = robot.num_joints
    q_cmd = robot.default_q + np.linspace(-0.05, 0.05, n)
    dq_cmd, tau_ff = np.linspace(0.2, -0.2, n), np.linspace(-1.0, 1.0, n)
    kp, kd = 0.2 * robot.kp_array, robot.kd_array
    physics.set_command(LowCommand(q=q_cmd, dq=dq_cmd, tau=tau_ff, kp=kp, kd=kd))
    model, data = physics.model, physics.data
    qpos_adr = [model.jnt_qposadr[model.joint(name).id] for name in robot.mjcf_joint_names]
    dof_adr = [model.jnt_dofadr[model.joint(name).id] for name in robot.mjcf_joint_names]
    q, dq = data.qpos[qpos_adr].copy(), data.qvel[dof_adr].copy()
    assert np.abs(dq).max() > 0.05  # the robot moves
    physics.step(1)
    want = tau_ff + kp * (q_cmd - q) + kd * (dq_cmd - dq)
    assert np.all(np.abs(want) < robot.effort)  # no joint saturates: every term shows
    np.testing.assert_allclose(physics.tau, want, rtol=1e-12, atol=1e-9)
    np.testing.assert_allclose(data.ctrl, want, rtol=1e-12, atol=1e-9)


def test_last_command_stays_applied_when_commands_stop(robot):
    physics = _physics(robot)
    physics.set_command(default_pose_command(robot))
    physics.step(500)
    received = physics.commands_received
    physics.step(2500)  # 5 s without a single new command
    state = physics.snapshot()
    assert physics.commands_received == received
    assert state.drive_mode == DriveMode.COMMAND  # still stiff: only a sentinel can change that
    assert state.root_pos[2] > 0.7


def test_optional_bridge_timeout_switches_to_damping(robot):
    physics = _physics(robot, command_timeout_s=0.1)
    physics.set_command(default_pose_command(robot))
    physics.step(40)  # 80 ms: still commanded
    assert physics.drive_mode == DriveMode.COMMAND
    physics.step(20)  # 120 ms since the command
    assert physics.drive_mode == DriveMode.TIMEOUT_DAMPING
    # what the log records is the damping the drives applied, not the stale command it replaced
    assert np.all(physics.applied_command.kp == 0) and np.all(physics.applied_command.kd == 2.0)
    dq = physics.snapshot().dq
    physics.step(1)
    # damping: kp 0, the torque opposes the joint velocity only
    expected = np.clip(-2.0 * physics.snapshot().dq, -robot.effort, robot.effort)
    assert np.sign(physics.tau[np.abs(dq) > 1e-2]).tolist() == np.sign(expected[np.abs(dq) > 1e-2]).tolist()
    physics.set_command(default_pose_command(robot))
    physics.step(1)
    assert physics.drive_mode == DriveMode.COMMAND


def test_damping_command_lets_the_robot_sink(robot):
    physics = _physics(robot)
    physics.set_command(LowCommand.damping(robot.kd_array))
    physics.step(1500)
    assert physics.drive_mode == DriveMode.DAMPING
    assert physics.snapshot().root_pos[2] < 0.5


def test_only_a_full_damping_command_counts_as_damping(robot):
    """kp 0 everywhere is not damping when a joint has no kd or a feed-forward torque pushes:
    "ends in DAMP" must mean what the node and the sentinel send (LowCommand.is_damping)."""
    physics = _physics(robot)
    kd = robot.kd_array.copy()
    kd[3] = 0.0
    physics.set_command(LowCommand.damping(kd))
    physics.step(1)
    assert physics.drive_mode == DriveMode.COMMAND
    pushing = LowCommand.damping(robot.kd_array)
    pushing.tau[0] = 5.0
    physics.set_command(pushing)
    physics.step(1)
    assert physics.drive_mode == DriveMode.COMMAND
    physics.set_command(LowCommand.damping(robot.kd_array))
    physics.step(1)
    assert physics.drive_mode == DriveMode.DAMPING


@pytest.mark.parametrize("field", ["qpos", "qvel"])
def test_a_state_mujoco_reset_itself_is_not_finite(robot, field):
    """Past mjMAXVAL (1e10) MuJoCo resets the data to the initial pose with a warning: upright and
    finite afterwards, so only the warning tells the bridge it diverged."""
    physics = _physics(robot)
    physics.set_command(default_pose_command(robot))
    physics.step(5)
    assert physics.is_finite()
    getattr(physics.data, field)[7] = 1e11
    physics.step(1)
    assert np.isfinite(physics.data.qpos).all() and np.isfinite(physics.data.qvel).all()  # reset, not NaN
    assert not physics.is_finite()


def test_the_joints_have_the_training_models_damping_unless_extra_is_configured(robot):
    """Sim-to-sim must not help a policy with damping it never trained with: by default the
    bridge's joints damp as the training model's do; a configured ``joint_damping`` adds to that."""
    train = build_model(robot, "train")
    trained = train.dof_damping[joint_dof_indices(train, robot)]
    default = _physics(robot)
    np.testing.assert_array_equal(default.model.dof_damping[joint_dof_indices(default.model, robot)], trained)
    extra = _physics(robot, joint_damping=0.5)
    np.testing.assert_allclose(extra.model.dof_damping[joint_dof_indices(extra.model, robot)], trained + 0.5)


def test_zero_torque_before_any_command(robot):
    physics = _physics(robot)
    physics.step(5)
    assert physics.drive_mode == DriveMode.ZERO_TORQUE
    assert not physics.tau.any()


def test_elastic_band_holds_a_limp_robot_until_released(robot):
    physics = BridgePhysics(robot, BridgeConfig())
    standing = physics.snapshot().root_pos[2]
    physics.step(1000)  # 2 s limp, hanging
    assert physics.snapshot().root_pos[2] > standing - 0.06
    assert physics.snapshot().band_engaged
    physics.set_band(False)
    physics.step(1000)
    assert physics.snapshot().root_pos[2] < 0.5  # limp and released: it falls


@pytest.mark.parametrize("physics_dt", [0.002, 0.001])
def test_the_band_at_its_largest_settings_holds_a_limp_robot_without_diverging(robot, physics_dt):
    from bcg_sim_bridge.config import BAND_LIMITS

    band = ElasticBandConfig(**{k: v for k, v in BAND_LIMITS.items() if k != "release_after_s"})
    physics = BridgePhysics(robot, BridgeConfig(physics_dt=physics_dt, elastic_band=band))
    physics.step(int(round(1.0 / physics_dt)))
    assert physics.is_finite() and physics.snapshot().root_pos[2] > 1.5  # hanging, 1 m up


def test_the_bands_automatic_release_happens_once(robot):
    """A band engaged again on request after ``release_after_s`` holds: it was released again on
    the next step, so a robot caught by the operator after the release fell all the same."""
    physics = BridgePhysics(robot, BridgeConfig(elastic_band=ElasticBandConfig(release_after_s=0.1)))
    physics.step(100)  # 0.2 s
    assert not physics.band_engaged
    physics.set_band(True)
    physics.step(10)
    assert physics.band_engaged


def test_the_bands_angular_damping_opposes_the_pelvis_rotation_in_the_world_frame(robot):
    """The free joint's angular velocity is in the body frame, the applied torque in the world's:
    damped as if they were one frame, a robot turned 180 degrees about z had its roll rate driven,
    not damped."""
    physics = BridgePhysics(robot, BridgeConfig())
    yaw = np.array([0.0, 0.0, 0.0, 1.0])  # w, x, y, z: 180 degrees about z
    physics.data.qpos[3:7] = yaw
    physics.data.qvel[3:6] = [1.0, 0.0, 0.0]  # about the pelvis x axis: the world's -x
    physics._anchor = physics.data.qpos[:3].copy()
    physics._external_forces()
    torque = physics.data.xfrc_applied[physics._root_body][3:]
    omega_world = np.array([-1.0, 0.0, 0.0])
    assert float(torque @ omega_world) < 0, torque


def test_push_moves_the_robot(robot):
    physics = _physics(robot)
    physics.set_command(default_pose_command(robot))
    physics.step(250)
    physics.push(np.array([300.0, 0.0, 0.0]), 0.2)
    physics.step(100)
    assert physics.snapshot().root_pos[0] > 0.02


def test_bridge_config_rejects_unknown_keys_and_bad_rates(tmp_path):
    bad = tmp_path / "bridge.yaml"
    bad.write_text("physics_dt: 0.002\nphysiscs: 1\n")
    with pytest.raises(ConfigError, match="unknown key 'physiscs'"):
        load_bridge_config(bad)
    bad.write_text("physics_dt: 0.01\n")
    with pytest.raises(ConfigError) as info:
        load_bridge_config(bad)
    assert str(info.value) == f"{bad}: key 'physics_dt': 0.01 outside [0.001, 0.002] s"
    bad.write_text("interface: can_bus\n")
    with pytest.raises(ConfigError, match="interface"):
        load_bridge_config(bad)
    assert load_bridge_config().interface == "ros2"


@pytest.mark.parametrize("text,message", [
    ("mode_machine: 999\n", "key 'mode_machine': 999 not in 1..255"),  # was a struct.error once running
    ("mode_machine: 0\n", "key 'mode_machine': 0 not in 1..255"),  # the bridge took commands the robot drops
    # 500 Hz / 300 Hz is no whole number of steps: published at 250 Hz, reported as 300
    ("state_rate_hz: 300\n", "key 'state_rate_hz': 300 Hz is not the physics rate 500 Hz divided by a whole number of steps (1.667)"),
    ("elastic_band:\n  stiffness: -10000.0\n", "key 'elastic_band.stiffness': -10000.0 not in [0, 100000]"),
    ("elastic_band:\n  release_after_s: -1.0\n", "key 'elastic_band.release_after_s': -1.0 not in [0, 1e+06]"),
    # the spring diverged the simulation in its first step, named by neither file nor key
    ("elastic_band:\n  stiffness: 1.0e+300\n", "key 'elastic_band.stiffness': 1e+300 not in [0, 100000]"),
    ("elastic_band:\n  lift: -5.0\n", "key 'elastic_band.lift': -5.0 not in [0, 1]"),  # was not checked at all
])
def test_bridge_config_rejects_values_the_bridge_would_fail_on_or_misuse(tmp_path, text, message):
    bad = tmp_path / "bridge.yaml"
    bad.write_text(text)
    with pytest.raises(ConfigError) as info:
        load_bridge_config(bad)
    assert str(info.value) == f"{bad}: {message}"


def test_a_trajectory_log_path_that_is_a_directory_is_refused_before_the_run(tmp_path):
    """Found only at exit before: the whole run simulated, then IsADirectoryError and no log."""
    with pytest.raises(ConfigError) as info:
        load_bridge_config(overrides={"log_path": str(tmp_path)})
    assert str(info.value).endswith(f"key 'log_path': {tmp_path} is a directory, not a file to write")


class _FakeTime:
    """A clock and a stop event whose wait moves that clock: the pacer's arithmetic, without the
    OS scheduler (a wake-up late under CI's load failed a wall-clock version of these tests)."""

    def __init__(self):
        self.now, self.waits = 100.0, []

    def __call__(self) -> float:
        return self.now

    def wait(self, timeout: float) -> bool:
        self.waits.append(timeout)
        self.now += timeout
        return False

    def set(self) -> None:
        pass


def _paced(**kwargs):
    from bcg_sim_bridge.pacing import RealtimePacer

    fake = _FakeTime()
    return RealtimePacer(0.002, stop_event=fake, clock=fake, **kwargs), fake


def test_pacer_waits_until_each_step_is_due_and_never_runs_ahead():
    pacer, fake = _paced()
    for _ in range(100):
        pacer.wait_next()
    assert fake.waits == pytest.approx([0.002] * 100)  # each wait ends at its step's deadline
    assert fake.now - 100.0 == pytest.approx(0.2) and pacer.stats.sim_s == pytest.approx(0.2)
    assert pacer.lag_s == pytest.approx(-0.002) and pacer.stats.overruns == 0
    fast, fake = _paced(realtime_factor=2.0)
    fast.wait_next()
    assert fake.waits == pytest.approx([0.001])


def test_pacer_reports_how_far_behind_a_slow_step_left_it_and_makes_the_time_up():
    pacer, fake = _paced()
    fake.now += 0.03  # a step that took 15 periods
    pacer.wait_next()
    assert pacer.lag_s == pytest.approx(0.028) and pacer.stats.overruns == 1 and fake.waits == []
    for _ in range(13):  # the next 13 steps are overdue too: run at once, catching up
        pacer.wait_next()
    assert fake.waits == [] and pacer.stats.overruns == 14 and pacer.stats.max_lag_s == pytest.approx(0.028)
    pacer.wait_next()  # step 15 is due exactly now (a wait of 0), the one after a period later
    pacer.wait_next()
    assert fake.waits == pytest.approx([0.0, 0.002], abs=1e-9) and pacer.stats.resyncs == 0


def test_pacer_re_anchors_instead_of_sprinting_after_a_long_stall():
    pacer, fake = _paced(max_lag_s=0.1)
    fake.now += 0.5
    pacer.wait_next()
    assert pacer.stats.resyncs == 1 and pacer.lag_s == pytest.approx(0.498)
    pacer.wait_next()  # the schedule starts over from the stall's end: the next step waits a period
    assert fake.waits == pytest.approx([0.002])


def test_pacer_paces_on_the_real_clock():
    import time

    from bcg_sim_bridge.pacing import RealtimePacer

    pacer = RealtimePacer(0.002)
    t0 = time.monotonic()
    for _ in range(50):
        pacer.wait_next()
    assert time.monotonic() - t0 >= 0.1 - 0.002  # never ahead of real time (late is allowed: a loaded machine)


def test_a_bridge_behind_real_time_thins_its_state_stream_with_a_bounded_gap():
    from bcg_sim_bridge.pacing import StateThinning

    on_time = StateThinning(max_lag_s=0.004)
    assert not any(on_time.skip(lag_s=0.0) for _ in range(6))
    behind = StateThinning(max_lag_s=0.004, max_skips=3)
    skipped = [behind.skip(lag_s=0.05) for _ in range(12)]
    assert skipped == [True, True, True, False] * 3  # three due publications skipped, the fourth sent: never a longer gap
    assert not behind.skip(lag_s=0.004)  # at the threshold: not behind
