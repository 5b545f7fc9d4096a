"""The pure safety layer: watchdogs, target shaping, state machine, control loop (fake clock)."""

import dataclasses

import numpy as np
import pytest

from bcg_robot.config import load_robot_config
from bcg_robot.contract import PolicyContract
from bcg_robot.errors import ConfigError, ContractError
from bcg_robot.pd import pd_torque
from bcg_robot.remote import RemoteState
from bcg_robot.yaml_dataclass import dump_dataclass, from_mapping

from bcg_policy_node.config.safety_config import SafetyConfig, load_safety_config
from bcg_policy_node.interfaces.robot_state import RobotState, SeenCommand
from bcg_robot.wire import CommandWriter
from bcg_policy_node.operator_api import ControlState
from bcg_policy_node.safety.control_loop import ControlLoop, OperatorInputs
from bcg_policy_node.safety.state_watchdog import StateWatchdog
from bcg_policy_node.safety.target_shaping import ShapingCounts, TargetLimits, shape_targets

DT = 0.02


@pytest.fixture(scope="module")
def robot():
    return load_robot_config(check_model=False)


def make_state(robot, tick, t, **changes):
    values = dict(tick=tick, received_at=t, q=robot.default_q.copy(), dq=np.zeros(robot.num_joints),
                  tau_est=np.zeros(robot.num_joints), quat_wxyz=np.array([1.0, 0, 0, 0]), gyro=np.zeros(3))
    values.update(changes)
    return RobotState(**values)


class FakePolicy:
    """Stands in for OnnxPolicy in the pure loop: a fixed offset from the default pose."""

    def __init__(self, robot, offset=0.05, nan=False):
        self.contract = PolicyContract.for_robot(robot)
        self.offset, self.nan, self.calls = offset, nan, 0

    def run(self, raw):
        self.calls += 1
        action = np.full(self.contract.num_joints, np.nan if self.nan else self.offset / 0.25)
        return np.asarray(self.contract.default_pose) + 0.25 * action, action


class Rig:
    """A control loop driven tick by tick on a fake clock with fresh states."""

    def __init__(self, robot, policy=None, config=SafetyConfig(), deadman=0.0, sentinel=0.0):
        self.robot = robot
        self.policy = policy or FakePolicy(robot)
        self.loop = ControlLoop(robot, self.policy, config, deadman, sentinel)
        self.t, self.tick_no = 100.0, 0
        self.inputs = OperatorInputs()
        # the first sample: PASSIVE until the stream is seen advancing (the next tick's sample)
        first = self.loop.tick(self.t, make_state(robot, self.tick_no, self.t - 0.001), self.inputs, tick_gap=None)
        assert first.state is ControlState.PASSIVE and first.command.is_zero_torque(), first
        assert "state_unconfirmed" in [f.kind for f in first.faults], first.faults

    def step(self, foreign=(), tick_gap=DT, **state_changes):
        self.t += DT
        self.tick_no += 1
        state = make_state(self.robot, self.tick_no, self.t - 0.001, **state_changes)
        return self.loop.tick(self.t, state, self.inputs, foreign, tick_gap=tick_gap)

    def to_hold(self):
        for _ in range(int(2.0 / DT) + 2):
            result = self.step()
        assert result.state is ControlState.HOLD
        return result


def test_safety_config_rejects_unknown_keys_and_bad_values(tmp_path):
    assert load_safety_config() == SafetyConfig()
    bad = tmp_path / "safety.yaml"
    bad.write_text("stale_periods: 3\nmax_tilt_deg: 40\n")
    with pytest.raises(ConfigError, match="unknown key 'max_tilt_deg'"):
        load_safety_config(bad)
    with pytest.raises(ConfigError, match="max_target_step"):
        from_mapping(SafetyConfig, {"max_target_step": -1.0})


def test_a_dumped_safety_config_loads_back_and_a_file_cannot_set_its_source(tmp_path):
    """sim2sim's --stale-periods writes the run's config for the node; 'source' is the loader's."""
    relaxed = dataclasses.replace(SafetyConfig(), stale_periods=5.0, source="safety.yaml with --stale-periods 5")
    path = dump_dataclass(relaxed, tmp_path / "safety.yaml")
    assert load_safety_config(path) == relaxed and load_safety_config(path).source == str(path)
    path.write_text(path.read_text() + "source: elsewhere.yaml\n")
    with pytest.raises(ConfigError, match="unknown key 'source'"):
        load_safety_config(path)


@pytest.mark.parametrize("text,match", [
    ("stale_periods: 1000000\n", "key 'stale_periods': must be in (0, 10]"),  # a watchdog switched off by a typo
    ("max_target_step: 100\n", "key 'max_target_step': must be in (0, 0.5]"),
    ("max_motor_temperature: 1000000000\n", "key 'max_motor_temperature': must be in (0, 120]"),
    ("damping_kd_scale: 500\n", "key 'damping_kd_scale': must be in (0, 5]"),
    ("ramp_duration: 1.0e-9\n", "key 'ramp_duration': 1e-09 s is a jump to the default pose"),
    ("max_tilt: 2.0\n", "key 'max_tilt': must be in (0, 1.5708]"),
    ("joint_limit_margin: 1.0\n", "key 'joint_limit_margin': must be in [0, 0.5] rad"),
])
def test_safety_config_values_outside_their_ranges_are_refused(tmp_path, text, match):
    path = tmp_path / "safety.yaml"
    path.write_text(text)
    with pytest.raises(ConfigError) as err:
        load_safety_config(path)
    assert str(err.value).startswith(str(path)) and match in str(err.value), str(err.value)


def test_a_policy_default_pose_outside_the_soft_limits_is_refused(robot):
    """Inside the hard limits but within joint_limit_margin of one: HOLD would have aimed at the
    clamped pose without a word. (A loaded policy's pose is the robot config's, which the contract
    check enforces; the control loop checks the pose it is given all the same.)"""
    j = robot.joint_names.index("left_knee")
    pose = list(robot.default_pose)
    pose[j] = robot.upper[j] - 0.01
    policy = FakePolicy(robot)
    policy.contract = dataclasses.replace(policy.contract, default_pose=tuple(pose))
    with pytest.raises(ContractError, match="policy default pose of 'left_knee' is .*, robot config has"):
        policy.contract.check_against(robot, "policy.onnx")
    with pytest.raises(ContractError, match="policy default pose of 'left_knee' .* is outside the soft limits"):
        ControlLoop(robot, policy, SafetyConfig())


def test_a_state_wait_that_eats_the_control_period_is_refused(robot):
    config = SafetyConfig(state_wait_periods=5.0, state_period_s=0.01)  # 50 ms of a 20 ms tick
    with pytest.raises(ConfigError, match="a tick would wait up to 50 ms for a state"):
        ControlLoop(robot, FakePolicy(robot), config)
    ControlLoop(robot, FakePolicy(robot), SafetyConfig())  # the shipped 2.5 ms


@pytest.mark.parametrize("changes,kind", [
    (dict(q="nan"), "nonfinite_state"),
    (dict(dq="fast"), "joint_velocity"),
    (dict(quat_wxyz=np.array([np.cos(0.6), np.sin(0.6), 0, 0])), "tilt"),
    (dict(motor_fault="fault"), "motor_fault"),
    (dict(motor_temperature="hot"), "motor_temperature"),
    (dict(remote=RemoteState(frozenset({"L2", "B"}))), "remote_estop"),
])
def test_each_state_watchdog_trips_on_its_condition_only(robot, changes, kind):
    n = robot.num_joints
    arrays = {"nan": np.where(np.arange(n) == 4, np.nan, robot.default_q), "fast": np.where(np.arange(n) == 3, 25.0, 0.0),
              "fault": np.where(np.arange(n) == 7, 3, 0), "hot": np.where(np.arange(n) == 2, 95.0, 40.0)}
    changes = {k: arrays.get(v, v) if isinstance(v, str) else v for k, v in changes.items()}
    dog = StateWatchdog(robot, SafetyConfig(), DT)
    healthy = make_state(robot, 1, 10.0, motor_fault=np.zeros(n, int), motor_temperature=np.full(n, 40.0),
                         remote=RemoteState(frozenset({"L2"})))
    assert dog.check(10.0, healthy) == []
    faults = dog.check(10.02, dataclasses.replace(healthy, tick=2, received_at=10.02, **changes))
    assert [f.kind for f in faults] == [kind]


def test_a_robot_that_reports_another_variant_is_damped_and_never_ramps(robot):
    """mode_machine 4 is a 23-DoF G1: a 29-joint policy would drive the wrong motors. A robot
    reporting 0 is refused too (it was read as 'not reported', and ramped with commands carrying
    the 0 the robot ignores them for); None (the ros2 transport reports none) and the 29-DoF 5 pass."""
    rig = Rig(robot)
    result = rig.step(mode_machine=4)
    assert result.state is ControlState.DAMP and result.command.is_damping()
    assert [f.kind for f in result.faults] == ["robot_variant"] and rig.loop.machine.fault.kind == "robot_variant"
    assert not rig.loop.request_reset(rig.t, rig.inputs)[0]
    assert "mode_machine 4" in result.faults[0].message and "needs 5" in result.faults[0].message
    for mode_machine in (None, 5):
        assert Rig(robot).step(mode_machine=mode_machine).state is ControlState.RAMP
    zero = Rig(robot).step(mode_machine=0)
    assert zero.state is ControlState.DAMP and [f.kind for f in zero.faults] == ["robot_variant"]


def test_stale_state_and_stalled_tick(robot):
    dog = StateWatchdog(robot, SafetyConfig(), DT)
    s = make_state(robot, 1, 10.0)
    assert dog.check(10.0 + 3 * DT - 0.001, s) == []
    # a stream that stopped is stale; the tick stall is judged on samples that keep coming
    assert [f.kind for f in dog.check(10.0 + 3 * DT + 0.001, s)] == ["stale_state"]
    dog = StateWatchdog(robot, SafetyConfig(), DT)
    for k in range(8):  # fresh samples, same tick
        faults = dog.check(10.0 + k * DT, make_state(robot, 5, 10.0 + k * DT))
    assert [f.kind for f in faults] == ["tick_stalled"]


def test_a_gap_between_samples_is_not_a_stalled_tick(robot):
    """The node itself descheduled for 70 ms (longer than the 60 ms stall limit): the tick
    advanced across the gap, so it is no stall (a soak tripped on this once)."""
    dog = StateWatchdog(robot, SafetyConfig(), DT)
    for k in range(5):
        assert dog.check(10.0 + k * DT, make_state(robot, k, 10.0 + k * DT)) == []
    assert dog.check(10.15, make_state(robot, 40, 10.15)) == []
    faults = []
    for k in range(1, 5):  # from here on the tick is stuck at 40 while samples keep coming
        faults = dog.check(10.15 + k * DT, make_state(robot, 40, 10.15 + k * DT))
    assert [f.kind for f in faults] == ["tick_stalled"] and "80 ms" in faults[0].message


def test_a_tick_that_wraps_or_restarts_from_zero_keeps_advancing(robot):
    dog = StateWatchdog(robot, SafetyConfig(), DT)
    ticks = [2**32 - 3, 2**32 - 2, 2**32 - 1, 0, 1, 2, 3, 4, 5, 6, 0, 1, 2, 3, 4, 5]  # a wrap, then a board restart
    for k, tick in enumerate(ticks):
        assert dog.check(10.0 + k * DT, make_state(robot, tick, 10.0 + k * DT)) == [], (k, tick)


def test_target_shaping_clamps_limits_rate_and_torque(robot):
    cfg = SafetyConfig(joint_limit_margin=0.1, max_target_step=0.2)
    limits = TargetLimits.for_robot(robot, cfg)
    kp, kd, q0 = robot.kp_array, robot.kd_array, robot.default_q
    wild = robot.upper + 1.0
    out = shape_targets(wild, limits.soft_upper, q0, np.zeros_like(q0), kp, kd, limits)
    torque = pd_torque(out.targets, q0, 0.0, 0.0, kp, kd, 0.0, np.inf)
    assert np.all(out.targets <= robot.upper - 0.1 + 1e-12)
    assert np.all(np.abs(torque) <= robot.effort + 1e-9)
    assert out.clamped_torque > 0
    step = shape_targets(q0 + 1.0, q0, q0, np.zeros_like(q0), np.zeros_like(kp), kd, limits)
    assert np.allclose(np.abs(step.targets - q0), np.minimum(0.2, np.abs(np.clip(q0 + 1.0, limits.soft_lower, limits.soft_upper) - q0)))
    with pytest.raises(ConfigError, match="joint_limit_margin"):
        SafetyConfig(joint_limit_margin=0.5).check_against(robot)


def test_shaping_is_counted_per_stage_over_the_policy_ticks_only(robot):
    """What the node reports of its target shaping (diagnostics, the sim-to-sim report): the
    ticks the policy ran, and among them those where each stage moved a target."""
    rig = Rig(robot, FakePolicy(robot, offset=0.05))
    rig.to_hold()
    held = rig.step(q=robot.default_q + 0.3)  # far from the pose in HOLD: the torque clip moves targets
    assert held.shaped.clamped_torque > 0
    assert rig.loop.shaping == ShapingCounts()  # not the policy's
    assert rig.loop.request_run(rig.t)[0]
    for _ in range(3):
        rig.step()
    assert rig.loop.shaping == ShapingCounts(policy_ticks=3)  # 5 cm from the pose: nothing to shape
    rig.policy.offset = 3.0  # past the soft limits, the per-tick step and the torque window
    wild = rig.step()
    assert wild.shaped.clamped_limits and wild.shaped.clamped_rate and wild.shaped.clamped_torque
    rig.policy.offset = 0.05
    rig.step()  # back from the wild targets: the step limit moves them once more
    assert rig.loop.shaping.as_dict() == {"policy_ticks": 5, "shaped": 2, "joint_limits": 1, "rate": 2, "torque": 1}


def test_ramp_hold_and_run_only_on_operator_request(robot):
    rig = Rig(robot)
    first = rig.step(q=np.zeros(robot.num_joints))
    assert first.state is ControlState.RAMP and first.command.kp.max() > 0
    result = rig.to_hold()
    assert np.allclose(result.command.q, robot.default_q)
    for _ in range(100):  # HOLD forever without the operator
        result = rig.step()
    assert result.state is ControlState.HOLD and rig.policy.calls == 0
    assert rig.loop.request_run(rig.t)[0]
    result = rig.step()
    assert result.state is ControlState.RUN and rig.policy.calls == 1 and result.ran_policy
    assert np.allclose(result.command.q, robot.default_q + 0.05)


def test_a_single_old_sample_never_ramps_the_robot(robot):
    """The first sample read is dated when it is read, however old it is (arrival dating): a
    state stream that died before activation must not ramp the robot at full gains on it until
    it goes stale. The loop waits for the stream to advance; here it never does."""
    loop = ControlLoop(robot, FakePolicy(robot), SafetyConfig())
    t = 100.0
    only = make_state(robot, 7, t, q=np.zeros(robot.num_joints))  # the one sample there is, dated at its first read
    states = []
    for _ in range(10):
        result = loop.tick(t, only, OperatorInputs(), tick_gap=DT)
        states.append(result.state)
        assert result.command is None or result.command.kp.max() == 0, result.state
        t += DT
    assert ControlState.RAMP not in states and states[-1] is ControlState.DAMP
    assert loop.machine.fault.kind == "stale_state"
    # a stream that advances ramps at its second sample
    loop = ControlLoop(robot, FakePolicy(robot), SafetyConfig())
    first = loop.tick(100.0, make_state(robot, 7, 100.0), OperatorInputs())
    assert first.state is ControlState.PASSIVE and str(first.faults[0]).startswith("state_unconfirmed: one robot state so far (tick 7)")
    assert loop.tick(100.02, make_state(robot, 17, 100.02), OperatorInputs(), tick_gap=DT).state is ControlState.RAMP


class PhaseRecorder(FakePolicy):
    def __init__(self, robot):
        super().__init__(robot)
        self.contract = PolicyContract.for_robot(robot, motion_id="squat", motion_length_s=8.0)
        self.phases = []

    def run(self, raw):
        self.phases.append(float(raw["phase"][0]))
        return super().run(raw)


@pytest.mark.parametrize("request_before_tick_s", [0.0, 0.013])
def test_the_phase_starts_at_zero_on_the_first_run_tick_however_the_request_fell(robot, request_before_tick_s):
    """A training episode's first step has phase 0. The RUN service set the phase clock at the
    request, so a request 13 ms before a tick ran the whole motion 13 ms ahead (the remote's
    START, handled in the tick, started at 0: the two RUN paths disagreed)."""
    policy = PhaseRecorder(robot)
    rig = Rig(robot, policy)
    rig.to_hold()
    ok, _ = rig.loop.request_run(rig.t + DT - request_before_tick_s)
    assert ok
    rig.step()
    rig.step()
    assert policy.phases == pytest.approx([0.0, DT / 8.0], abs=1e-12)


def test_run_refused_outside_hold(robot):
    rig = Rig(robot)
    assert not rig.loop.request_run(rig.t)[0]  # PASSIVE
    rig.step()
    ok, message = rig.loop.request_run(rig.t)  # RAMP
    assert not ok and "RAMP" in message
    rig.loop.request_stop(rig.t)
    assert not rig.loop.request_run(rig.t)[0]  # DAMP


def test_trip_damps_in_the_same_tick_and_latches_until_reset(robot):
    rig = Rig(robot)
    rig.to_hold()
    rig.loop.request_run(rig.t)
    rig.step()
    tilted = np.array([np.cos(0.7), np.sin(0.7), 0, 0])
    result = rig.step(quat_wxyz=tilted)
    assert result.state is ControlState.DAMP and result.command.is_damping()
    assert rig.loop.machine.fault.kind == "tilt"
    for _ in range(5):
        assert rig.step().command.is_damping()  # latched with the fault gone
    rig.step(quat_wxyz=tilted)
    assert not rig.loop.request_reset(rig.t, rig.inputs)[0]  # refused while the fault is present
    rig.step()
    assert rig.loop.request_reset(rig.t, rig.inputs) == (True, "PASSIVE")
    assert rig.step().state is ControlState.RAMP


def test_a_stall_of_the_node_itself_sends_damping_not_the_policy(robot):
    """Back from a stall past the stale limit the sentinel may already be damping, its
    commands not yet read: the first tick back must not send the policy's targets."""
    rig = Rig(robot)
    limit = SafetyConfig().stale_periods * DT
    assert rig.step(tick_gap=10.0).state is ControlState.RAMP  # PASSIVE: nothing on the motors to go stale
    rig.to_hold()
    assert rig.step(tick_gap=0.9 * limit).state is ControlState.HOLD
    rig.loop.request_run(rig.t)
    assert rig.step(tick_gap=0.9 * limit).state is ControlState.RUN
    calls = rig.policy.calls
    result = rig.step(tick_gap=1.2 * limit)
    assert result.state is ControlState.DAMP and result.command.is_damping() and not result.ran_policy
    assert rig.policy.calls == calls and rig.loop.machine.fault.kind == "loop_stalled"
    assert "stalled" in str(rig.loop.machine.fault)
    rig.step()
    assert rig.loop.request_reset(rig.t, rig.inputs) == (True, "PASSIVE")  # a past stall is no present fault
    rig.step()
    assert rig.step(tick_gap=None).state is ControlState.RAMP  # the first tick after activation has no gap


def test_a_stall_inside_the_tick_sends_damping_not_the_stale_target(robot):
    """The tick started on time, then the process stalled before sending (GC, descheduling, a
    slow inference): its target is as old as the stall and the sentinel may have taken over.
    ``confirm_send``, just before the send, trips loop_stalled and sends damping instead."""
    rig = Rig(robot)
    limit = SafetyConfig().stale_periods * DT
    rig.to_hold()
    rig.loop.request_run(rig.t)
    sent = rig.loop.confirm_send(rig.step(), rig.t)
    assert sent.state is ControlState.RUN and not sent.command.is_damping()
    on_time = rig.loop.confirm_send(rig.step(), rig.t - DT + 0.9 * limit)  # a slow tick within the limit
    assert on_time.state is ControlState.RUN and not on_time.command.is_damping()
    sent_at = rig.t - DT + 0.9 * limit
    result = rig.step()
    assert result.state is ControlState.RUN and result.ran_policy  # the tick itself saw nothing wrong
    stalled = rig.loop.confirm_send(result, sent_at + 1.2 * limit)
    assert stalled.state is ControlState.DAMP and stalled.command.is_damping() and stalled.shaped is None
    assert rig.loop.machine.fault.kind == "loop_stalled" and "inside the tick" in str(rig.loop.machine.fault)
    assert [t.after for t in stalled.transitions][-1] is ControlState.DAMP and stalled.faults[-1].kind == "loop_stalled"
    # after damping nothing stiff is left on the motors: the first RAMP command, ready on a fresh
    # state, goes out however long ago the last position command was
    assert rig.loop.confirm_send(rig.step(), rig.t).command.is_damping()
    assert rig.loop.request_reset(rig.t, rig.inputs) == (True, "PASSIVE")
    ramp = rig.loop.confirm_send(rig.step(), rig.t)
    assert ramp.state is ControlState.RAMP and not ramp.command.is_damping()


def test_the_first_ramp_command_is_not_sent_on_a_state_the_node_stalled_past(robot):
    """The tick that leaves PASSIVE has no previous position command to time a stall from: a
    stall inside it sent a full-gain ramp command built on the pose before the stall, while the
    sentinel may already have taken over. A position command is never sent on a state older than
    the stale limit."""
    rig = Rig(robot, sentinel=1.0)
    rig.inputs.sentinel_at, rig.inputs.sentinel_state = rig.t, "WATCHING"
    limit = SafetyConfig().stale_periods * DT
    result = rig.step()
    assert result.state is ControlState.RAMP and not result.command.is_damping()
    state_at = rig.t - 0.001  # Rig.step's state was received 1 ms before its tick
    on_time = rig.loop.confirm_send(result, state_at + 0.9 * limit)
    assert on_time.state is ControlState.RAMP and not on_time.command.is_damping()
    assert rig.loop.request_stop(rig.t)[0] and rig.loop.confirm_send(rig.step(), rig.t).command.is_damping()
    rig.inputs.sentinel_at = rig.t
    assert rig.loop.request_reset(rig.t, rig.inputs) == (True, "PASSIVE")
    result = rig.step()
    assert result.state is ControlState.RAMP
    stalled = rig.loop.confirm_send(result, rig.t - 0.001 + 1.2 * limit)
    assert stalled.state is ControlState.DAMP and stalled.command.is_damping() and stalled.shaped is None
    fault = rig.loop.machine.fault
    assert fault.kind == "loop_stalled" and "after the tick was due" in fault.message


@pytest.mark.parametrize("age_when_due, late_by, kind", [
    (0.995, 0.002, "stale_state"),  # on time (CI at aa848b9: a stopped stream read as a stall, 203 ms against 200)
    (0.75, 0.025, "stale_state"),   # a tick more than a period late, on a state older than that when it was due
    (0.2, 0.055, "loop_stalled"),   # the node's own delay is the larger share
])
def test_a_state_crossing_the_limit_inside_a_tick_is_blamed_on_the_larger_share(robot, age_when_due, late_by, kind):
    """A stream that stops, or a node that stalls: the state passed the watchdog at the tick's
    due time and is past the stale limit when the command is ready. Damping goes out either way;
    the reason is the share of the state's age that is larger, its age when the tick was due (the
    stream, as a fraction of the limit) or the node's delay since (late start and work, in s)."""
    rig = Rig(robot)
    limit = SafetyConfig().stale_periods * DT
    rig.to_hold()
    result = rig.step(received_at=rig.t + DT - age_when_due * limit)  # Rig.step advances the clock by DT first
    assert result.state is ControlState.HOLD and not result.faults
    late = rig.loop.confirm_send(result, rig.t + late_by)
    assert late.state is ControlState.DAMP and late.command.is_damping() and late.shaped is None
    fault = rig.loop.machine.fault
    assert fault.kind == kind and late.faults[-1].kind == kind, fault


def test_damp_uses_the_robot_config_kd_like_the_sentinel(robot):
    config = SafetyConfig(damping_kd_scale=1.5)
    policy = FakePolicy(robot)
    policy.contract = dataclasses.replace(policy.contract, kd=tuple(1.2 * k for k in robot.kd))  # within a relaxed ratio
    rig = Rig(robot, policy, config)
    rig.to_hold()
    rig.loop.request_stop(rig.t)
    command = rig.step().command
    assert command.is_damping()
    np.testing.assert_array_equal(command.kd, config.damping_kd(robot))  # what the sentinel sends
    np.testing.assert_allclose(command.kd, 1.5 * robot.kd_array)


def test_nan_action_trips_and_sends_damping(robot):
    rig = Rig(robot, FakePolicy(robot, nan=True))
    rig.to_hold()
    rig.loop.request_run(rig.t)
    result = rig.step()
    assert result.state is ControlState.DAMP and result.command.is_damping()
    assert rig.loop.machine.fault.kind == "nonfinite_action"


class BrokenPolicy(FakePolicy):
    """A policy whose inference raises, or returns one value where a row of joints belongs."""

    def __init__(self, robot, how):
        super().__init__(robot)
        self.how = how

    def run(self, raw):
        targets, action = super().run(raw)
        if self.how == "raises":
            raise RuntimeError("[ONNXRuntimeError] : 6 : RUNTIME_EXCEPTION : Non-zero status code")
        return targets[:1], action[:1]


@pytest.mark.parametrize("how,message", [("raises", "policy inference failed: [ONNXRuntimeError]"),
                                         ("one_value", "policy returned shapes (1,) and (1,), expected (29,)")])
def test_a_failing_or_misshapen_policy_trips_damp_in_its_first_run_tick(robot, how, message):
    rig = Rig(robot, BrokenPolicy(robot, how))
    rig.to_hold()
    rig.loop.request_run(rig.t)
    result = rig.step()  # no exception escapes the tick, and no broadcast target goes out
    assert result.state is ControlState.DAMP and result.command.is_damping()
    fault = rig.loop.machine.fault
    assert fault.kind == "policy_error" and fault.message.startswith(message), fault.message


def test_estop_and_deadman(robot):
    rig = Rig(robot, deadman=0.2)
    assert rig.step().state is ControlState.PASSIVE  # deadman never seen: no ramp, no trip in PASSIVE
    rig.inputs.deadman_at = rig.t
    assert rig.step().state is ControlState.RAMP
    for _ in range(20):
        rig.inputs.deadman_at = rig.t
        rig.step()
    for _ in range(11):
        result = rig.step()
    assert result.state is ControlState.DAMP and rig.loop.machine.fault.kind == "deadman"
    rig = Rig(robot)
    rig.to_hold()
    rig.inputs.set_estop(True)
    assert rig.step().command.is_damping()
    assert not rig.loop.request_reset(rig.t, rig.inputs)[0]
    rig.inputs.set_estop(False)
    rig.step()
    assert rig.loop.request_reset(rig.t, rig.inputs)[0]


def test_one_stations_release_does_not_clear_another_stations_estop(robot):
    """The e-stop was one level, the last message's: station B publishing "released" at 10 Hz
    cleared station A's "pressed", and reset was accepted while A's button was still down."""
    rig = Rig(robot)
    rig.to_hold()
    rig.inputs.set_estop(True, b"A")
    assert rig.step().command.is_damping()
    rig.inputs.set_estop(False, b"B")
    rig.step()
    assert rig.inputs.estop and not rig.loop.request_reset(rig.t, rig.inputs)[0]
    rig.inputs.forget_estop_stations({b"A", b"B"})  # both still on the topic: A still holds it
    assert not rig.loop.request_reset(rig.t, rig.inputs)[0]
    rig.inputs.set_estop(False, b"A")
    rig.step()
    assert rig.loop.request_reset(rig.t, rig.inputs)[0]
    # a station gone from the topic (crashed while pressed, restarted under another id) stops holding it
    rig.inputs.set_estop(True, b"C")
    rig.step()
    rig.inputs.set_estop(False, b"C2")
    rig.step()
    assert not rig.loop.request_reset(rig.t, rig.inputs)[0]
    rig.inputs.forget_estop_stations({b"C2"})
    assert not rig.inputs.estop and rig.loop.request_reset(rig.t, rig.inputs)[0]


def test_the_node_leaves_passive_only_with_a_watching_sentinel_and_damps_when_it_goes_silent(robot):
    rig = Rig(robot, sentinel=1.0)
    for _ in range(10):  # no sentinel heard: PASSIVE (zero torque), not a trip
        result = rig.step()
    assert result.state is ControlState.PASSIVE and [f.kind for f in result.faults] == ["sentinel_missing"]
    assert "no sentinel heartbeat yet" in result.faults[0].message
    rig.inputs.sentinel_at, rig.inputs.sentinel_state = rig.t, "WAITING"  # up, not armed (it arms on the node's commands)
    assert rig.step().state is ControlState.PASSIVE
    rig.inputs.sentinel_state = "WATCHING"
    assert rig.step().state is ControlState.RAMP
    for _ in range(int(2.0 / DT) + 2):
        rig.inputs.sentinel_at = rig.t
        result = rig.step()
    assert result.state is ControlState.HOLD
    assert rig.loop.request_run(rig.t)[0]
    rig.inputs.sentinel_at = rig.t  # its last heartbeat: 1 s later, DAMP
    for _ in range(int(1.0 / DT) - 1):
        result = rig.step()
        assert result.state is ControlState.RUN
    rig.step()
    result = rig.step()
    assert result.state is ControlState.DAMP and result.command.is_damping()
    assert rig.loop.machine.fault.kind == "sentinel_missing" and "sentinel heartbeat silent" in rig.loop.machine.fault.message
    ok, why = rig.loop.request_reset(rig.t, rig.inputs)
    assert not ok and "sentinel_missing" in why
    rig.inputs.sentinel_at = rig.t
    assert rig.loop.request_reset(rig.t, rig.inputs)[0]


def test_a_sentinel_that_takes_over_keeps_the_node_from_ramping(robot):
    rig = Rig(robot, sentinel=1.0)
    rig.inputs.sentinel_at, rig.inputs.sentinel_state = rig.t, "TAKEN_OVER"
    result = rig.step()
    assert result.state is ControlState.PASSIVE and "sentinel is TAKEN_OVER, not WATCHING" in result.faults[0].message


def test_remote_start_needs_a_fresh_press_in_hold(robot):
    rig = Rig(robot)
    start = RemoteState(frozenset({"start"}))
    for _ in range(int(2.0 / DT) + 10):  # START held through the ramp does not count
        result = rig.step(remote=start)
    assert result.state is ControlState.HOLD
    rig.step(remote=RemoteState())
    assert rig.step(remote=start).state is ControlState.RUN


def test_passive_sends_zero_torque_and_no_state_sends_nothing(robot):
    rig = Rig(robot, deadman=0.2)
    assert rig.loop.tick(rig.t, None, rig.inputs).command is None
    for _ in range(int(2.0 / DT) + 2):  # the deadman held through the ramp
        rig.inputs.deadman_at = rig.t
        result = rig.step()
    assert result.state is ControlState.HOLD
    rig.inputs.set_estop(True)
    assert rig.step().state is ControlState.DAMP
    rig.inputs.set_estop(False)
    assert rig.loop.request_reset(rig.t, rig.inputs)[0]
    rig.inputs.deadman_at = None  # after the reset, no deadman: PASSIVE (zero torque), no ramp
    for _ in range(5):
        result = rig.step()
        assert result.state is ControlState.PASSIVE and result.command.is_zero_torque(), result


def test_an_estop_pulse_shorter_than_a_tick_trips_on_the_next_tick(robot):
    rig = Rig(robot)
    rig.to_hold()
    rig.inputs.set_estop(True)  # asserted and released between two ticks
    rig.inputs.set_estop(False)
    result = rig.step()
    assert result.state is ControlState.DAMP and result.command.is_damping()
    assert rig.loop.machine.fault.kind == "estop" and "pulse" in rig.loop.machine.fault.message
    assert rig.loop.request_reset(rig.t, rig.inputs)[0]  # the pulse was consumed by the tick


def test_reset_just_after_the_estop_is_released_is_accepted(robot):
    rig = Rig(robot)
    rig.to_hold()
    rig.inputs.set_estop(True)
    assert rig.step().state is ControlState.DAMP
    rig.step()
    rig.inputs.set_estop(False)  # released after the last tick: the reset is judged now
    assert rig.loop.request_reset(rig.t, rig.inputs) == (True, "PASSIVE")
    rig.inputs.set_estop(True)  # and a pulse no tick has seen yet blocks it
    rig.inputs.set_estop(False)
    rig.step()
    rig.inputs.set_estop(True)
    rig.inputs.set_estop(False)
    rig.loop.request_stop(rig.t)
    ok, message = rig.loop.request_reset(rig.t, rig.inputs)
    assert not ok and "estop" in message


def test_a_second_commander_trips_damp_and_blocks_reset_while_it_writes(robot):
    rig = Rig(robot)
    rig.to_hold()
    rig.loop.request_run(rig.t)
    rig.step()
    other = CommandWriter("foreign", "unstamped rt/lowcmd writer")
    result = rig.step(foreign=[SeenCommand(rig.t - 0.005, other), SeenCommand(rig.t - 0.001, other)])
    assert result.state is ControlState.DAMP and result.command.is_damping()
    fault = rig.loop.machine.fault
    assert fault.kind == "foreign_commander" and "unstamped rt/lowcmd writer" in fault.message and "2 commands" in fault.message
    for _ in range(5):  # it keeps writing
        rig.step(foreign=[SeenCommand(rig.t, other)])
    ok, message = rig.loop.request_reset(rig.t, rig.inputs)
    assert not ok and "foreign_commander" in message
    for _ in range(int(SafetyConfig().foreign_commander_window_s / DT) + 1):  # quiet for the window
        rig.step()
    assert rig.loop.request_reset(rig.t, rig.inputs)[0]


def test_the_sentinels_damping_is_the_sentinel_taking_over_not_a_second_commander(robot):
    """The sentinel writes only after it took over: its commands read as sentinel_missing, like
    its TAKEN_OVER state, whichever the node hears first. An energized node trips on them; a
    node starting in PASSIVE beside them (restarted after a takeover) holds zero torque until the
    sentinel has handed back and gone quiet, instead of latching DAMP for a foreign program."""
    sentinel = CommandWriter("sentinel", "sentinel#1a2b3c4d")
    rig = Rig(robot)
    for _ in range(5):
        held = rig.step(foreign=[SeenCommand(rig.t - 0.002, sentinel)])
        assert held.state is ControlState.PASSIVE and held.command.is_zero_torque(), held
    assert "sentinel_missing" in [f.kind for f in held.faults] and "foreign_commander" not in str(held.faults)
    for _ in range(int(SafetyConfig().foreign_commander_window_s / DT) + 1):  # it handed back: quiet for the window
        result = rig.step()
    assert result.state is ControlState.RAMP, result.faults
    rig.to_hold()
    rig.loop.request_run(rig.t)
    rig.step()
    tripped = rig.step(foreign=[SeenCommand(rig.t - 0.002, sentinel)])
    assert tripped.state is ControlState.DAMP and rig.loop.machine.fault.kind == "sentinel_missing", rig.loop.machine.fault
    other = CommandWriter("foreign", "unstamped rt/lowcmd writer")  # a second program beside it is still reported as such
    assert rig.loop.lease.fault(rig.t).kind == "sentinel_missing"
    rig.loop.lease.observe([SeenCommand(rig.t - 0.003, other)])
    assert rig.loop.lease.fault(rig.t).kind == "foreign_commander"


def test_a_second_commander_is_reported_before_what_its_commands_did(robot):
    """The robot obeys another writer at once and the node hears of it a tick later: by then its
    targets may have spun a joint past the speed limit. The writer is the cause and is latched."""
    rig = Rig(robot)
    rig.to_hold()
    rig.loop.request_run(rig.t)
    rig.step()
    other = CommandWriter("foreign", "unstamped rt/lowcmd writer")
    result = rig.step(foreign=[SeenCommand(rig.t - 0.01, other)], dq=2.0 * robot.velocity)
    assert {"foreign_commander", "joint_velocity"} <= {f.kind for f in result.faults}
    assert result.state is ControlState.DAMP and rig.loop.machine.fault.kind == "foreign_commander"


def test_no_second_commander_no_trip(robot):
    rig = Rig(robot)
    rig.to_hold()
    rig.loop.request_run(rig.t)
    for _ in range(50):
        assert rig.step(foreign=[]).state is ControlState.RUN
