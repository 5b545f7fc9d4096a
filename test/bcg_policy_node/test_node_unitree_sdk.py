"""The policy node over real unitree_sdk2py DDS on ``lo``, against the sim bridge (its G1 frozen at the default pose).

The SDK side runs in a domain of its own, away from the ROS domain of this test process
(ROS topic ``lowcmd`` is DDS topic ``rt/lowcmd`` too). The bridge reports the 29-DoF
mode_machine 5; it drops and counts every LowCmd with a wrong CRC or mode_machine, and
counts every one that disables a motor. The last test restarts it as a 23-DoF robot
(mode_machine 4): the node's zero-torque commands carry the copied 4, and it never ramps.
"""

import os
import signal
import subprocess
import sys
import time

import numpy as np
import pytest
from lifecycle_msgs.msg import Transition

from bcg_robot.wire import UNITREE_MODE_MACHINE_23DOF, UNITREE_MODE_MACHINE_29DOF
import rclpy

from bcg_robot.config import load_robot_config

from bcg_policy_node import operator_api as api
from bcg_policy_node.sentinel.sentinel_watch import sentinel_timeout_for
from bcg_sim_bridge.harness.observer import (LOAD_FAULTS, Observer, back_to_hold, enter_run, robot_parameters,
                                             wait_first_hold)
from bcg_sim_bridge.harness.processes import (BRIDGE_MODULE, NODE_MODULE, PROBE_MODULE, SENTINEL_MODULE, ProcessGroup,
                                              ros_args)
from bcg_sim_bridge.harness.sample_policies import write_policy
from bcg_sim_bridge.unitree_probe import read_result

pytestmark = pytest.mark.slow
SDK_DOMAIN = 202 + os.getpid() % 30
MODE_MACHINE = UNITREE_MODE_MACHINE_29DOF

TRIES = 4  # windows a load fault spoiled are retried (a starved 2-core test machine)

def sdk_params(**extra):
    return {"kind": "unitree_sdk", "domain_id": SDK_DOMAIN, "network_interface": "lo", **extra}


@pytest.fixture(scope="module")
def robot():
    return load_robot_config(check_model=False)


@pytest.fixture(scope="module")
def rig(robot, tmp_path_factory):
    tmp = tmp_path_factory.mktemp("sdk_node")
    safety = tmp / "safety.yaml"
    safety.write_text("stale_periods: 10.0\n")
    policy = write_policy(tmp / "random.onnx", robot, "random")
    rclpy.init()
    procs = ProcessGroup(tmp / "logs")
    obs = Observer(robot.num_joints)
    procs.start_module("robot", BRIDGE_MODULE, robot_parameters(interface="unitree_sdk", domain_id=SDK_DOMAIN, frozen_pose=True,
                                                                state_rate_hz=100.0, mode_machine=MODE_MACHINE))
    try:
        yield obs, procs, tmp, safety, policy
    finally:
        procs.stop_all()
        obs.close()
        rclpy.shutdown()


def test_sport_mode_release_without_a_motion_switcher_is_a_clear_error(rig):
    obs, procs, tmp, safety, policy = rig
    t0 = time.monotonic()
    params = {"policy_path": str(policy), "autostart": True, **sdk_params(release_sport_mode=True, motion_switcher_timeout_s=1.0)}
    run = subprocess.run([sys.executable, "-m", NODE_MODULE, *ros_args(params)], capture_output=True, text=True, timeout=120)
    assert run.returncode == 2, run.stdout[-2000:]
    errors = [line for line in run.stdout.splitlines() if line.startswith("policy_node: error:")]
    assert len(errors) == 1 and "motion switcher" in errors[0] and "release_sport_mode:=false" in errors[0]
    assert obs.received_since(t0) == []


@pytest.fixture(scope="module")
def sdk_node(rig):
    obs, procs, tmp, safety, policy = rig
    procs.start_module("node", NODE_MODULE, {"policy_path": str(policy), "safety_config": str(safety), "autostart": True,
                                      "sentinel_timeout_s": 0.0, **sdk_params(release_sport_mode=False)})
    wait_first_hold(obs, procs)
    return rig


def test_every_lowcmd_has_crc_copied_mode_machine_and_motor_mode(sdk_node, robot):
    obs, *_ = sdk_node
    for _ in range(TRIES):  # a 1 s window in HOLD that no load fault interrupted (as the ros2 twin)
        back_to_hold(obs)
        t0 = time.monotonic()
        time.sleep(1.0)
        if obs.state() == "HOLD" and not any(t > t0 for t, _ in obs.faults):
            break
    obs.wait_for(lambda: len(obs.received_since(t0)) > 20, 10, "the HOLD commands' echoes")
    held = [c for t, c in obs.received_since(t0) if t <= t0 + 1.0]
    off_pose = sum(not np.allclose(c.q, robot.default_q, atol=1e-6) for c in held)  # float32 on the wire
    status = obs.wait_for(lambda: obs.robot_status if obs.robot_status.get("accepted", 0) > 40 else None, 10, "commands")
    assert obs.state() == "HOLD" and len(held) > 20 and off_pose == 0, (off_pose, len(held), obs.faults[-3:])
    assert status["bad_crc"] == 0 and status["bad_mode_machine"] == 0 and status["disabled_motor_cmds"] == 0


def test_remote_start_enters_run(sdk_node):
    obs, *_ = sdk_node
    back_to_hold(obs)
    for _ in range(4):
        back_to_hold(obs)
        obs.inject("remote_start")
        try:
            obs.wait_state("RUN", 10)
            break
        except TimeoutError:  # a load fault took the node out of HOLD first
            assert obs.faults and obs.faults[-1][1].split(":")[0] in LOAD_FAULTS, obs.faults[-3:]
        finally:
            obs.inject("clear")
    assert obs.state() == "RUN"


@pytest.mark.parametrize("trigger,kind", [
    ("motor_fault", "motor_fault"), ("hot", "motor_temperature"), ("remote_estop", "remote_estop"), ("freeze", "stale_state"),
    ("corrupt_crc", "stale_state"),  # LowStates with a wrong CRC are dropped, the state goes stale
])
def test_sdk_watchdogs_damp_the_motors(sdk_node, trigger, kind):
    obs, *_ = sdk_node
    for _ in range(4):  # repeated only when a load fault (a starved process) came first
        enter_run(obs)
        n_faults = len(obs.faults)
        t0 = time.monotonic()
        obs.inject(trigger)
        try:
            t_damp, command = obs.wait_received(lambda c: c.is_damping(), t0, 10, f"damping after {trigger}")
            obs.wait_for(lambda: len(obs.faults) > n_faults, 5, "the fault report")
            fault = obs.faults[n_faults][1]
            time.sleep(0.3)
        finally:
            obs.inject("clear")
        if fault.startswith(kind + ":") or fault.split(":")[0] not in LOAD_FAULTS:
            break
    assert fault.startswith(kind + ":"), (fault, obs.faults[-5:])
    assert all(c.is_damping() for _, c in obs.received_since(t_damp))


def start_probe(tmp, commands: int, name: str = "probe") -> subprocess.Popen:
    """A second SDK client writing valid-CRC default-pose LowCmds at 100 Hz."""
    return subprocess.Popen([sys.executable, "-m", PROBE_MODULE, "--domain", str(SDK_DOMAIN), "--good", str(commands),
                             "--rate", "100", "--result", str(tmp / f"{name}.json")], stdout=subprocess.PIPE, text=True)


def test_a_second_sdk_commander_trips_damp(sdk_node):
    obs, procs, tmp, safety, policy = sdk_node
    for _ in range(4):
        back_to_hold(obs)
        n_faults = len(obs.faults)
        probe = start_probe(tmp, 200)
        try:
            obs.wait_for(lambda: len(obs.faults) > n_faults, 30, "the fault report")
            fault = obs.faults[n_faults][1]
        finally:
            out, _ = probe.communicate(timeout=60)
        assert probe.returncode == 0, out[-2000:]
        if fault.split(":")[0] not in LOAD_FAULTS:
            break
    assert fault.startswith("foreign_commander:") and "unstamped rt/lowcmd writer" in fault, obs.faults[-3:]
    assert obs.state() == "DAMP"


def test_a_writer_gone_before_the_activation_is_no_fault_after_it(sdk_node):
    """The SDK reader dates a command when it is taken. While the node was deactivated nothing
    took them, and the last 64 of a writer long gone read as current at the first tick after
    activation (foreign_commander). The idle poll takes them as they come."""
    obs, procs, tmp, safety, policy = sdk_node
    for _ in range(4):  # repeated only when a load fault (a starved process) came
        back_to_hold(obs)
        assert obs.transition(Transition.TRANSITION_DEACTIVATE)
        probe = start_probe(tmp, 100, "gone")  # 1 s of commands, into the inactive node's reader
        out, _ = probe.communicate(timeout=60)
        assert probe.returncode == 0, out[-2000:]
        time.sleep(2.0)  # four times foreign_commander_window_s
        n_faults, t_active = len(obs.faults), time.monotonic()
        assert obs.transition(Transition.TRANSITION_ACTIVATE)
        obs.wait_for(lambda: obs.states[-1][0] > t_active, 10, "a state after the activation")
        time.sleep(1.0)
        faults = [fault for _, fault in obs.faults[n_faults:]]
        if not any(fault.split(":")[0] in LOAD_FAULTS for fault in faults):
            break
    assert read_result(tmp / "gone.json")["sent_good"] == 100
    assert faults == [], faults
    back_to_hold(obs)


@pytest.fixture(scope="module")
def sentinel_took_over(sdk_node, robot):
    """The node SIGKILLed under a watching sentinel, and 0.3 s of the sentinel's damping after it:
    (kill time, first damping command's time). The last tests of the module, in any order, need
    the sentinel in charge; the node stays dead. The sentinel's timeout is the launchers' for the
    node's 200 ms stale limit (the default 100 ms could take over on a hiccup before the kill)."""
    obs, procs, tmp, safety, policy = sdk_node
    procs.start_module("sentinel", SENTINEL_MODULE, sdk_params(
        safety_config=str(safety), timeout_s=sentinel_timeout_for(10 * robot.control_dt, robot.control_dt)))
    enter_run(obs)
    obs.wait_for(lambda: obs.sentinel_states and obs.sentinel_states[-1][1] == "WATCHING", 30, "sentinel watching")
    time.sleep(0.5)
    assert obs.state() == "RUN" and obs.sentinel_states[-1][1] == "WATCHING", obs.faults[-3:]  # no takeover before the kill
    t_kill = time.monotonic()
    procs.kill("node")
    t_damp, _ = obs.wait_received(lambda c: c.is_damping(), t_kill, 10, "sentinel damping")
    time.sleep(0.3)
    return t_kill, t_damp


def test_sentinel_damps_over_the_sdk_when_the_node_dies(sdk_node, sentinel_took_over):
    obs = sdk_node[0]
    t_kill, t_damp = sentinel_took_over
    after = [c for t, c in obs.received_since(t_damp) if t <= t_damp + 0.3]
    assert after and all(c.is_damping() for c in after)
    status = obs.robot_status
    assert status["bad_crc"] == 0 and status["bad_mode_machine"] == 0
    print(f"sentinel takeover over unitree_sdk {1e3 * (t_damp - t_kill):.0f} ms after SIGKILL")


def start_recorder(tmp, most_seconds: float) -> subprocess.Popen:
    """Every rt/lowcmd sample, with its writer's own send time, from when this returns (its
    reader exists) until a line is written to its stdin (``communicate("stop\\n")``)."""
    recorder = subprocess.Popen([sys.executable, "-m", PROBE_MODULE, "--domain", str(SDK_DOMAIN), "--armed",
                                 "--record", str(most_seconds), "--result", str(tmp / "lowcmd_record.json")],
                                stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    first = recorder.stdout.readline()
    assert first.strip() == "recording", f"the recorder did not start: {first!r}"
    return recorder


def test_sentinel_keeps_damping_through_a_second_writer_and_stops_on_sigint(sdk_node, sentinel_took_over):
    """The deadlock scenario: node dead, sentinel damping, a second program writes rt/lowcmd
    at 100 Hz for 3 s. The sentinel must keep writing damping during and after it (judged by
    its own send times, which a DDS recorder reads from each sample), the drives must keep
    getting it, the sentinel must report the writer, and SIGINT must end it within 1 s."""
    obs, procs, tmp, safety, policy = sdk_node
    assert procs.nodes["sentinel"].alive() and obs.sentinel_states[-1][1] == "TAKEN_OVER"
    recorder = start_recorder(tmp, 60.0)
    time.sleep(0.5)  # its reader exists: this is for matching the sentinel's writer
    probe = start_probe(tmp, 300, "writer")
    try:
        obs.wait_received(lambda c: not c.is_damping(), time.monotonic(), 30, "the second writer's commands")
        t_writing = time.monotonic()
    finally:
        out, _ = probe.communicate(timeout=60)
    t_done = time.monotonic()
    assert probe.returncode == 0, out[-2000:]
    time.sleep(1.0)
    out, _ = recorder.communicate("stop\n", timeout=60)
    assert recorder.returncode == 0, out[-2000:]
    record = read_result(tmp / "lowcmd_record.json")
    samples = record["samples"]
    realtime_ahead = time.time() - time.monotonic()  # both clocks are system-wide: one offset maps the send times
    foreign = np.array([t for t, role, *_ in samples if role == "foreign"]) - realtime_ahead
    sent = np.array([t for t, role, _, ok in samples if role == "sentinel" and ok]) - realtime_ahead
    assert len(foreign) >= 250 and foreign[-1] - foreign[0] > 2.5, f"the recorder saw {len(foreign)} foreign writes"
    edges = np.arange(foreign[0], foreign[-1] + 1.0, 0.25)  # the writer's 3 s and 1 s after it
    sent_per_window = np.histogram(sent, bins=edges)[0]
    damping = [t for t, c in obs.received_since(t_writing - 1.0) if c.is_damping()]
    received_per_window = np.histogram(damping, bins=edges)[0]
    why = f"per 250 ms the sentinel sent {sent_per_window}, the bridge received {received_per_window}"
    # a recorder that stopped early reads as a sentinel gone silent (CI at aa848b9: 11 7 0 0 0
    # sent, 11 8 11 11 11 received, from a fixed 8 s recording that began before a slow probe start)
    assert record["recorded_until"] - realtime_ahead > edges[-1], f"the recording ended before the last window: {why}"
    # and began before the first: a reader matched to the sentinel's writer late reads the same way
    assert sent.size and sent[0] < edges[0], f"the recorder heard the sentinel only after the first window: {why}"
    # the safety property, by the sentinel's own send times: its 50 Hz damping never stopped.
    # A deadlock stops it for good (it did, before the polled readers); a starved process on
    # the loaded 2-core test machine once sent nothing for one 250 ms window in the middle of
    # the writer's burst and then went on (CI at eb6bccf: 5 2 3 8 4 4 9 0 3 11 9 11 11 11 11).
    # So: never two starved windows in a row, and every window after the writer is done full.
    starved = sent_per_window < 2
    assert not (starved[1:] & starved[:-1]).any() and not starved[-4:].any(), why
    # and the drives got it. The bridge (a test bench on a loaded 2-core machine, not the
    # robot's firmware) once stalled for one window, so its receipts count over the span
    assert received_per_window.sum() >= 0.7 * sent_per_window.sum(), why
    assert all(c.is_damping() for _, c in obs.received_since(t_done + 0.1))
    assert any("foreign_commander: unstamped rt/lowcmd writer" in text for _, text in obs.sentinel_faults)
    sentinel = procs.nodes["sentinel"].process
    t_int = time.monotonic()
    sentinel.send_signal(signal.SIGINT)
    sentinel.wait(timeout=10)
    assert time.monotonic() - t_int < 1.0, "the sentinel did not end within 1 s of SIGINT"


def test_a_robot_of_another_variant_is_damped_with_its_own_mode_machine_and_never_ramps(rig, robot):
    """A 23-DoF G1 (mode_machine 4) under the 29-joint config: the policy would run on the
    wrong motors. The node trips DAMP (robot_variant) at its first state and never sends a
    position target, and its commands carry the robot's own mode_machine (copied, never
    hard-coded), so the robot accepts the damping."""
    obs, procs, tmp, safety, policy = rig
    for name in ("node", "sentinel", "robot"):
        procs.stop(name)
    with obs.cond:
        obs.robot_status = {}  # from the new bridge only
    procs.start_module("robot23", BRIDGE_MODULE, robot_parameters(interface="unitree_sdk", domain_id=SDK_DOMAIN, frozen_pose=True,
                                                                  state_rate_hz=100.0, mode_machine=UNITREE_MODE_MACHINE_23DOF))
    t0 = time.monotonic()
    n_faults = len(obs.faults)
    procs.start_module("node23", NODE_MODULE, {"policy_path": str(policy), "safety_config": str(safety), "autostart": True,
                                        "sentinel_timeout_s": 0.0, **sdk_params(release_sport_mode=False)})
    try:
        obs.wait_for(lambda: len(obs.faults) > n_faults, 60, "the node's fault report")
        fault = obs.faults[n_faults][1]
        assert fault.startswith("robot_variant:") and "mode_machine 4" in fault, obs.faults[-3:]
        # The first damping command reaches the observer once discovery between it and the new
        # node's writer is done, which under CI load can take longer than the fault report.
        obs.wait_received(lambda c: True, t0, 30, "the node's damping commands")
        time.sleep(1.0)
        assert {state for t, state in obs.states if t > t0} <= {"PASSIVE", "DAMP"} and obs.state() == "DAMP"
        sent = obs.received_since(t0)
        assert sent and not any(np.any(c.kp > 0) for _, c in sent)  # never a position target
        status = obs.wait_for(lambda: obs.robot_status if obs.robot_status.get("accepted", 0) > 20 else None, 10, "commands")
        assert status["bad_mode_machine"] == 0 and status["bad_crc"] == 0, status
    finally:
        procs.stop("node23")
        procs.stop("robot23")
