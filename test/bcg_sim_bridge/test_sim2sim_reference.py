"""What sim-to-sim scores a policy against: its reference clip at the node's phase, or the default pose
(pure functions, and the CLI's exit-2 checks that run before any process starts)."""

import hashlib
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from bcg_robot.config import load_robot_config
from bcg_robot.motion_csv import MotionClip, load_motion_csv
from bcg_robot.paths import share_file
from bcg_sim_bridge.harness.sample_policies import write_policy
from bcg_sim_bridge.policies import resolve_policies
from bcg_sim_bridge.sim2sim.analysis import (DEFAULT_POSE_REFERENCE, KeyBodyFK, RunReference, clip_time, motion_origin,
                                             reference_at)

ROOT = Path(__file__).resolve().parents[2]
ROBOT = load_robot_config()


def _ramp_clip(frames: int = 11, fps: float = 10.0) -> MotionClip:
    """1 s at 10 fps: joint 0 and the root height rise linearly, joint 0 = clip time in rad."""
    t = np.arange(frames) / fps
    joints = np.zeros((frames, ROBOT.num_joints))
    joints[:, 0] = t
    root = np.stack([0 * t, 0 * t, 0.6 + 0.1 * t], axis=1)
    quat = np.tile([1.0, 0.0, 0.0, 0.0], (frames, 1))
    return MotionClip("ramp", fps, root, quat, joints)


def test_clip_time_is_the_time_since_run_wrapped_at_the_motion_length():
    t_run = 100.0
    np.testing.assert_allclose(clip_time(t_run + np.array([0.0, 0.25, 1.0, 1.75, 3.5]), t_run, 1.0), [0.0, 0.25, 0.0, 0.75, 0.5])
    # the node's phase, times the length: phase = ((now - run_started) / L) % 1
    now, length = t_run + 17.3, 8.0
    assert clip_time(np.array([now]), t_run, length)[0] == pytest.approx(((now - t_run) / length) % 1.0 * length)
    with pytest.raises(ValueError):
        clip_time(np.array([1.0]), 0.0, 0.0)


def test_the_motion_is_dated_from_the_nodes_first_run_state_not_the_request():
    """The node's phase starts at its first RUN tick, up to a control period after the request;
    the reference played from the request ran up to 20 ms ahead of the robot."""
    events = [(9.0, "HOLD"), (10.0, "HOLD"), (10.017, "RUN"), (10.037, "RUN")]
    assert motion_origin(events, 10.002) == pytest.approx(10.017)
    assert motion_origin([(9.0, "HOLD")], 10.002) == pytest.approx(10.002)  # no RUN state heard: the request
    assert motion_origin([(9.5, "RUN"), (10.02, "RUN")], 10.0) == pytest.approx(10.02)  # an earlier RUN does not count


def test_reference_at_wraps_and_interpolates_between_frames():
    clip, t_run = _ramp_clip(), 50.0
    ref = reference_at(clip, 1.0, t_run + np.array([0.0, 0.05, 0.55, 1.05, 2.33]), t_run)
    np.testing.assert_allclose(ref.joint_pos[:, 0], [0.0, 0.05, 0.55, 0.05, 0.33], atol=1e-12)  # between the 10 fps frames
    np.testing.assert_allclose(ref.root_pos[:, 2], 0.6 + 0.1 * np.array([0.0, 0.05, 0.55, 0.05, 0.33]), atol=1e-12)
    np.testing.assert_allclose(ref.root_quat, np.tile([1.0, 0, 0, 0], (5, 1)))
    # a motion length past the clip's last frame (the trainer's frames x dt) holds the last frame until the wrap
    longer = reference_at(clip, 1.02, t_run + np.array([1.01, 1.03]), t_run)
    np.testing.assert_allclose(longer.joint_pos[:, 0], [1.0, 0.01], atol=1e-12)


def test_a_run_reference_is_the_clip_or_the_default_pose_standing():
    fk = KeyBodyFK(ROBOT)
    t = np.array([10.0, 10.5])
    q, z = DEFAULT_POSE_REFERENCE.joints_and_height(ROBOT, fk, t, 10.0)
    np.testing.assert_allclose(q, np.tile(ROBOT.default_q, (2, 1)))
    np.testing.assert_allclose(z, 0.7842, atol=1e-3)  # the default keyframe's pelvis height
    squat = load_motion_csv(share_file("models/motions/squat.csv"), ROBOT)
    q, z = RunReference("squat", squat, 8.0).joints_and_height(ROBOT, fk, np.array([10.0, 12.0, 18.0]), 10.0)
    knee = ROBOT.joint_names.index("left_knee")
    # 2 s in: the bottom of the first squat (knees bent 0.9 rad more, pelvis ~10 cm down); 8 s in: wrapped to the start
    assert q[1, knee] - q[0, knee] == pytest.approx(0.9, abs=0.02) and z[0] - z[1] > 0.08
    np.testing.assert_allclose(q[2], q[0], atol=1e-9)


def test_policy_all_is_every_model_and_falls_back_to_the_default_pose(tmp_path):
    models = tmp_path / "models"
    models.mkdir()
    assert [o for _, o in resolve_policies(["all"], ROBOT, tmp_path, models)] == ["default pose (no shipped policy in models/)"]
    b, a = write_policy(models / "b.onnx", ROBOT), write_policy(models / "a.onnx", ROBOT)
    assert resolve_policies(["all"], ROBOT, tmp_path, models) == [(a, "shipped"), (b, "shipped")]
    # repeatable, duplicates once
    assert resolve_policies([str(b), "all"], ROBOT, tmp_path, models) == [(b, "given"), (a, "shipped")]


def _cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "bcg_sim_bridge.cli.sim2sim", *args], cwd=ROOT, capture_output=True,
                          text=True, timeout=120, env={**os.environ, "PYTHONPATH": str(ROOT)})


def _one_line(proc: subprocess.CompletedProcess) -> str:
    lines = [line for line in (proc.stdout + proc.stderr).splitlines() if line.strip()]
    assert proc.returncode == 2 and len(lines) == 1, proc.stdout + proc.stderr
    return lines[0]


def test_a_policy_whose_clip_is_missing_or_invalid_is_exit_2_naming_the_file(tmp_path):
    models = tmp_path / "models"
    (models / "motions").mkdir(parents=True)
    policy = write_policy(models / "hop.onnx", ROBOT, motion_id="hop", motion_length_s=2.0)
    line = _one_line(_cli("--policy", str(policy), "--models-dir", str(models), "--out", str(tmp_path / "out")))
    assert str(models / "motions" / "hop.csv") in line and "no such reference clip" in line and str(policy) in line
    bad = tmp_path / "bad.csv"
    bad.write_text("0,0,0.78\n0,0,0.78\n")
    line = _one_line(_cli("--policy", str(policy), "--reference", str(bad), "--out", str(tmp_path / "out")))
    assert line.startswith(f"bcg-sim2sim: error: {bad}: row 1: expected 36 columns")
    # a clip of another length than the policy's motion: it would be scored against the wrong timeline
    long = write_policy(tmp_path / "long.onnx", ROBOT, motion_id="squat", motion_length_s=6.02)
    squat = share_file("models/motions/squat.csv")
    line = _one_line(_cli("--policy", str(long), "--reference", str(squat), "--out", str(tmp_path / "out")))
    assert f"{squat}: is 8 s at 30 fps, but policy {long} was trained on a 6.02 s motion" in line
    # a clip of the right length with other content: the clip file's digest in the contract tells
    edited = tmp_path / "squat.csv"
    edited.write_text(squat.read_text().replace("0.", "0.", 1) + "\n")
    trained = write_policy(tmp_path / "trained.onnx", ROBOT, motion_id="squat", motion_length_s=8.0,
                           motion_sha256=hashlib.sha256(squat.read_bytes()).hexdigest())
    line = _one_line(_cli("--policy", str(trained), "--reference", str(edited), "--out", str(tmp_path / "out")))
    assert line.startswith(f"bcg-sim2sim: error: {edited}: not the clip policy {trained} was trained on (sha256 "), line
    # under --policy all, the same check for every model before anything runs
    shutil.copy(share_file("models/motions/squat.csv"), models / "motions" / "squat.csv")
    write_policy(models / "squat.onnx", ROBOT, motion_id="squat", motion_length_s=8.0)
    line = _one_line(_cli("--policy", "all", "--models-dir", str(models), "--out", str(tmp_path / "out")))
    assert str(models / "motions" / "hop.csv") in line
    # --reference is for a policy with a motion, and for one policy
    hold = write_policy(tmp_path / "hold.onnx", ROBOT)
    line = _one_line(_cli("--policy", str(hold), "--reference", str(bad), "--out", str(tmp_path / "out")))
    assert str(hold) in line and "has no reference motion" in line
    line = _one_line(_cli("--policy", str(hold), "--policy", str(policy), "--reference", str(bad), "--out", str(tmp_path / "out")))
    assert "--reference applies to one policy" in line
    assert not (tmp_path / "out" / "report.json").exists()  # nothing ran


def test_runs_that_could_not_test_anything_are_exit_2_before_anything_starts(tmp_path):
    out = str(tmp_path / "out")
    line = _one_line(_cli("--policy", "all", "--models-dir", str(tmp_path / "no_such_models"), "--out", out))
    assert str(tmp_path / "no_such_models") in line and "not a directory (--models-dir)" in line  # not a default-pose run
    line = _one_line(_cli("--no-nominal", "--out", out))  # no scenario: it printed "all 0 scenario(s) passed", exit 0
    assert line.startswith("bcg-sim2sim: error: nothing to run")
    line = _one_line(_cli("--no-nominal", "--fault", "crc", "--interface", "ros2", "--out", out))  # crc is unitree_sdk only
    assert "nothing to run" in line
    for key, value in (("frozen_pose", "true"), ("duration_s", "5.0"), ("command_timeout_s", "0.2")):
        bridge = tmp_path / f"bridge_{key}.yaml"
        bridge.write_text(f"{key}: {value}\n")
        line = _one_line(_cli("--bridge-config", str(bridge), "--out", out))
        assert str(bridge) in line and f"key '{key}'" in line and "without testing" in line, line


def test_a_safety_config_the_node_would_refuse_is_exit_2_before_anything_starts(tmp_path):
    """The node's configure builds a ControlLoop, which checks the safety config against the robot
    and the policy: refused there, every scenario's node would fail to start and the run report a
    failure (exit 1). ``--no-nominal`` alone: past these checks the run stops at 'nothing to run'."""
    out = str(tmp_path / "out")
    wait = tmp_path / "wait.yaml"
    wait.write_text("state_wait_periods: 5\n")  # 10 ms of a 20 ms control period waiting for a state
    line = _one_line(_cli("--safety-config", str(wait), "--no-nominal", "--out", out))
    assert line.startswith(f"bcg-sim2sim: error: {wait}: keys 'state_wait_periods' x 'state_period_s'"), line
    margin = tmp_path / "margin.yaml"
    margin.write_text("joint_limit_margin: 0.4\n")  # the robot's default pose outside the soft limits
    line = _one_line(_cli("--safety-config", str(margin), "--no-nominal", "--out", out))
    assert line.startswith(f"bcg-sim2sim: error: {margin}: key 'joint_limit_margin': 0.4 rad"), line
    # a policy whose default pose is inside the joint limits but is not the robot config's
    pose = list(ROBOT.default_pose)
    pose[3] = float(ROBOT.upper[3]) - 0.01
    near = write_policy(tmp_path / "near_limit.onnx", ROBOT, default_pose=tuple(pose))
    line = _one_line(_cli("--policy", str(near), "--no-nominal", "--out", out))
    assert line.startswith(f"bcg-sim2sim: error: {near}: policy default pose of '{ROBOT.joint_names[3]}' is "), line
    assert line.endswith(f"robot config has {ROBOT.default_pose[3]:.6g}"), line


def test_an_out_that_is_a_file_is_exit_2_before_anything_starts(tmp_path):
    existing = tmp_path / "report"
    existing.write_text("not a folder\n")
    line = _one_line(_cli("--out", str(existing)))
    assert line == f"bcg-sim2sim: error: {existing}: exists and is not a directory (--out)"
    line = _one_line(_cli("--out", str(existing / "run1")))
    assert line.startswith(f"bcg-sim2sim: error: {existing / 'run1'}: cannot create this directory (--out)"), line


def _nominal_verdict(tmp_path, diverged=False, band=False, counters=None, sim_rate=1.0,
                     trip="operator_stop: operator stop", trip_at=None, damped_at=None, end=None) -> dict:
    """``runner._analyse`` on a saved and loaded bridge log of a nominal run that stood and was
    stopped, with one thing changed: the simulation diverged, the band stayed engaged, the
    bridge counted refused commands, or it simulated ``sim_rate`` seconds per wall second."""
    from bcg_sim_bridge.physics import DriveMode
    from bcg_sim_bridge.sim2sim.analysis import BridgeLog
    from bcg_sim_bridge.sim2sim.driver import TimelineEvent
    from bcg_sim_bridge.sim2sim.runner import RunOptions, _analyse
    from bcg_sim_bridge.sim2sim.scenarios import SCENARIOS

    n, rows, t_stop = ROBOT.num_joints, 200, 1.5
    t = np.arange(rows) * 0.01
    stopped = t >= (t_stop if damped_at is None else damped_at)
    standing = dict(root_pos=np.tile([0.0, 0.0, 0.78], (rows, 1)), root_quat=np.tile([1.0, 0, 0, 0], (rows, 1)),
                    q=np.tile(ROBOT.default_q, (rows, 1)), dq=np.zeros((rows, n)), foot_penetration=np.zeros((rows, 2)),
                    cmd_q=np.tile(ROBOT.default_q, (rows, 1)), cmd_kp=np.where(stopped[:, None], 0.0, ROBOT.kp_array),
                    cmd_kd=np.tile(ROBOT.kd_array, (rows, 1)),
                    drive_mode=np.where(stopped, int(DriveMode.DAMPING), int(DriveMode.COMMAND)))
    counters = {"accepted": rows, **(counters or {})}
    np.savez(tmp_path / "log.npz", diverged=diverged, sim_time=t * sim_rate, wall_time=t,
             band_engaged=np.full(rows, band) | (t < 0.2), step_compute_s=np.zeros(rows), physics_dt=0.002,
             pacing=np.array([rows, 0, 0, 0.0, t[-1], t[-1]]), counters_names=np.array(list(counters)),
             counters=np.array(list(counters.values())), event_times=np.zeros(0), event_texts=np.array([], dtype=str), **standing)
    log = BridgeLog.load(tmp_path / "log.npz")
    assert log.diverged is diverged
    opts = RunOptions(robot=ROBOT, robot_config="", policy=tmp_path / "p.onnx", policy_origin="test", out_dir=tmp_path,
                      ros_domain=1, sdk_domain=1)
    events = [TimelineEvent(t_stop + 0.01 if trip_at is None else trip_at, "node_fault", trip)]
    marks = {"start": 0.0, "release": 0.2, "run": 0.5, "stop": t_stop, **({"end": end} if end is not None else {})}
    return _analyse(opts, SCENARIOS["none"], log, events, [], marks, {}, "")


def test_a_nominal_run_passes_only_when_the_robot_ran_the_policy_on_its_own_in_real_time(tmp_path):
    """The runner's verdict (``runner._analyse``) on saved bridge logs: the same standing run passes,
    and fails when the simulation diverged, when the elastic band still held the robot in the RUN, or
    when the bridge refused or partly disabled commands (the robot was not running the policy). Run
    slower than real time while the policy was in charge it is not a pass but a harness error (retried):
    the bridge's whole-run figure (here 1.0) is not what counts."""
    from bcg_sim_bridge.sim2sim.runner import retry_reason

    ok = _nominal_verdict(tmp_path)
    assert ok["passed"] and ok["reason"] == "operator_stop" and not ok["harness_error"], ok["observed"]
    assert ok["bridge_timing_ms"]["realtime_factor"] == pytest.approx(1.0) and retry_reason(ok) == ""
    diverged = _nominal_verdict(tmp_path, diverged=True)
    assert not diverged["passed"] and "THE SIMULATION DIVERGED" in diverged["observed"]
    held = _nominal_verdict(tmp_path, band=True)
    assert not held["passed"] and held["band_held_in_run"] and "the elastic band still held the robot" in held["observed"]
    assert "release did not take effect" in held["harness_error"]  # the rig failed, not the policy: retried
    for counter in ("bad_mode_machine", "ab_ankle_mode", "disabled_motor_cmds", "bad_crc", "malformed", "nonfinite"):
        refused = _nominal_verdict(tmp_path, counters={counter: 3})
        assert not refused["passed"] and refused["rejected_commands"] == {counter: 3}, refused["observed"]
        assert "the bridge refused or partly disabled commands" in refused["observed"]
    # a load trip (the node's own stall, a late state) heard at the injection: the machine was
    # overloaded, the attempt is retried
    for trip in ("loop_stalled: this tick started 211 ms after the previous one", "stale_state: no new robot state for 212 ms"):
        spoiled = _nominal_verdict(tmp_path, trip=trip)
        assert not spoiled["passed"] and "a load trip ended the scenario" in spoiled["harness_error"], spoiled
        assert trip in retry_reason(spoiled)
    slow = _nominal_verdict(tmp_path, sim_rate=0.7)
    assert not slow["passed"] and "0.70x real time while the policy was in charge" in slow["harness_error"]
    assert slow["bridge_timing_ms"]["realtime_factor_whole_run"] == pytest.approx(1.0)
    assert "0.70x real time" in retry_reason(slow)
    # the policy tripped a watchdog in the RUN before the operator's stop: a failure, and the report says
    # which trip (it said "no trip; motors damping")
    # the motors damped only after the scenario's end: by the shutdown of the processes, not the stop
    late = _nominal_verdict(tmp_path, damped_at=1.8, end=1.7)
    assert not late["passed"] and not late["ends_in_damp"] and late["final_motor_mode"] == "COMMAND", late["observed"]
    assert _nominal_verdict(tmp_path, end=1.7)["passed"]
    tilted = _nominal_verdict(tmp_path, trip="tilt: pelvis tilted 0.9 rad", trip_at=1.0)
    assert not tilted["passed"] and tilted["unexpected_trips"] == ["tilt: pelvis tilted 0.9 rad"], tilted["observed"]


def test_a_stale_limit_past_the_sentinel_timeout_gets_a_sentinel_that_waits_longer(tmp_path):
    """Whether the limit is relaxed by --stale-periods or by the run's own --safety-config: the
    sentinel would refuse a timeout within it (a stalled node must trip first), and every
    scenario's sentinel would have failed to start."""
    from bcg_robot.onnx_policy import OnnxPolicy
    from bcg_sim_bridge.cli.sim2sim import _safety_config

    dt = ROBOT.control_dt
    policies = [OnnxPolicy.load(write_policy(tmp_path / "hold.onnx", ROBOT), ROBOT)]
    assert _safety_config("", 0.0, ROBOT, policies, tmp_path).sentinel_timeout_s == 0.0  # 60 ms < the default 100 ms
    relaxed = _safety_config("", 10.0, ROBOT, policies, tmp_path)
    assert relaxed.sentinel_timeout_s == pytest.approx(11 * dt) and "sentinel timeout_s 0.22" in relaxed.description
    own = tmp_path / "slow_safety.yaml"
    own.write_text("stale_periods: 10.0\n")
    assert _safety_config(str(own), 0.0, ROBOT, policies, tmp_path).sentinel_timeout_s == pytest.approx(11 * dt)


@pytest.mark.parametrize("option, value, problem", [
    ("--run-seconds", "nan", "must be a finite number >= 0"), ("--run-seconds", "-4", "must be a finite number >= 0"),
    ("--soak", "-1", "must be a finite number >= 0"), ("--stale-periods", "nan", "must be a finite number >= 0"),
    ("--dropout-ms", "-5", "must be a finite number > 0"), ("--push-force", "nan", "must be a finite number > 0"),
    ("--attempts", "-3", "must be an integer >= 1"), ("--ros-domain", "999", "must be a DDS domain id 0-232"),
    # lengths past any sensible run: --run-seconds 1e308 was an OverflowError after bridge and node had started
    ("--run-seconds", "1e308", "must be at most 3600"), ("--soak", "1e308", "must be at most 604800"),
    ("--dropout-ms", "1e9", "must be at most 60000"), ("--push-force", "1e308", "must be at most 10000"),
    ("--soak", "5", "must be 0 (no soak) or at least 30 s"),
    ("--nice", "-40", "must be an integer -20..19"),  # too short to measure memory growth: failed with no reason
])
def test_a_duration_force_count_or_domain_that_makes_no_sense_is_refused_by_the_parser(option, value, problem, capsys):
    """These went through to the run (a negative dropout, a NaN push, a domain no DDS has); --soak and
    --stale-periods of NaN were silently ignored."""
    from bcg_sim_bridge.cli.sim2sim import build_parser

    with pytest.raises(SystemExit) as exc:
        build_parser().parse_args([option, value])
    assert exc.value.code == 2
    assert capsys.readouterr().err.splitlines()[-1] == f"bcg-sim2sim: error: argument {option}: {problem}, got '{value}'"


@pytest.mark.parametrize("value, problem", [("abc", "not an integer: 'abc'"), ("500", "must be a DDS domain id 0-232, got '500'")])
def test_a_ros_domain_id_in_the_environment_that_is_no_domain_is_exit_2_before_anything_starts(value, problem, tmp_path,
                                                                                                monkeypatch, capsys):
    """Without --ros-domain the run takes ROS_DOMAIN_ID from the environment: a value that is no DDS domain
    was int()'s traceback (or a domain no DDS has), after the output folder had been made."""
    from bcg_sim_bridge.cli.sim2sim import main

    monkeypatch.setenv("ROS_DOMAIN_ID", value)
    with pytest.raises(SystemExit) as exc:
        main(["--out", str(tmp_path / "out")])
    assert exc.value.code == 2
    assert capsys.readouterr().err.splitlines() == [f"bcg-sim2sim: error: ROS_DOMAIN_ID (environment): {problem}"]
    assert not (tmp_path / "out").exists()


def test_the_sdk_domain_is_next_to_the_ros_one_and_never_wraps_to_the_robots():
    """At the top of the range the SDK's domain was (232 + 1) % 233 = 0: the real robot's domain."""
    from bcg_sim_bridge.cli.sim2sim import _domains

    assert _domains(5) == (5, 6) and _domains(0) == (0, 1)
    assert _domains(232) == (232, 231)


def test_a_negative_niceness_needs_the_privilege_to_set_it():
    """Without CAP_SYS_NICE (or a raised RLIMIT_NICE) ``os.nice(-5)`` raised inside Popen's preexec at the
    first process start, a traceback after the probe had started; now it is exit 2 before anything."""
    import resource

    from bcg_sim_bridge.cli.sim2sim import CAP_SYS_NICE, _check_nice, may_set_niceness

    with_cap = 1 << CAP_SYS_NICE
    assert may_set_niceness(-20, with_cap, 0) and may_set_niceness(5, 0, 0) and may_set_niceness(0, 0, 0)
    assert not may_set_niceness(-5, 0, 0) and not may_set_niceness(-5, with_cap >> 1, 0)
    assert may_set_niceness(-5, 0, 25) and not may_set_niceness(-6, 0, 25)  # the ceiling is 20 - rlimit
    assert may_set_niceness(-20, 0, resource.RLIM_INFINITY)
    # this process, as it is: root (CI's container) may; a user without the limit raised may not
    status = Path("/proc/self/status").read_text()
    caps = int(next(line.split()[1] for line in status.splitlines() if line.startswith("CapEff:")), 16)
    rlimit = resource.getrlimit(resource.RLIMIT_NICE)[0]
    if may_set_niceness(-5, caps, rlimit):
        _check_nice(-5)
    else:
        from bcg_robot.errors import BCGInputError

        with pytest.raises(BCGInputError, match="needs CAP_SYS_NICE"):
            _check_nice(-5)
