"""The policy node as a real process against the sim bridge (its G1 frozen at the default pose) over real ROS 2 DDS.

Watchdog scenarios use a safety config whose stale limit is 10 periods instead of 3 and
a 1 s deadman, so a loaded test machine (processes descheduled for 100 ms and more)
rarely trips them by accident; a scenario that such a load fault spoils before its own
fault shows is repeated (a few times at most). The exact 3-period limit is covered by the
pure tests and measured by the benchmark.
"""

import signal
import subprocess
import sys
import time

import numpy as np
import pytest
import rclpy
from lifecycle_msgs.msg import State as LifecycleState
from lifecycle_msgs.msg import Transition
from lifecycle_msgs.srv import ChangeState, GetState
from std_msgs.msg import Bool

from bcg_robot.config import load_robot_config
from bcg_robot.contract import PolicyContract

from bcg_policy_node import operator_api as api
from bcg_policy_node.sentinel.sentinel_watch import sentinel_timeout_for
from bcg_sim_bridge.harness.observer import (LOAD_FAULTS, Observer, back_to_hold, enter_run, robot_parameters,
                                             wait_first_hold)
from bcg_sim_bridge.harness.processes import (BRIDGE_MODULE, NODE_MODULE, PROBE_MODULE, SENTINEL_MODULE, ProcessGroup,
                                              ros_args)
from bcg_sim_bridge.harness.sample_policies import truncate, write_policy
from bcg_sim_bridge.unitree_probe import read_result

pytestmark = pytest.mark.slow
DEADMAN_S = 1.0
TRIES = 4


@pytest.fixture(scope="module")
def robot():
    return load_robot_config(check_model=False)


@pytest.fixture(scope="module")
def rig(robot, tmp_path_factory):
    tmp = tmp_path_factory.mktemp("ros2_node")
    safety = tmp / "safety.yaml"
    safety.write_text("stale_periods: 10.0\n")
    policy = write_policy(tmp / "random.onnx", robot, "random")
    rclpy.init()
    procs = ProcessGroup(tmp / "logs")
    obs = Observer(robot.num_joints)
    obs.deadman_enabled.set()
    procs.start_module("robot", BRIDGE_MODULE, robot_parameters(frozen_pose=True, state_rate_hz=250.0))
    procs.start_module("node", NODE_MODULE, {"policy_path": str(policy), "safety_config": str(safety), "autostart": True,
                                      "deadman_timeout_s": DEADMAN_S, "sentinel_timeout_s": 0.0})  # no sentinel here
    try:
        wait_first_hold(obs, procs)
        yield obs, procs, tmp, safety, policy
    finally:
        procs.stop_all()
        obs.close()
        rclpy.shutdown()


def position_commands(commands):
    return [c for _, c in commands if np.any(c.kp > 0)]


def test_run_is_entered_only_by_the_operator(rig, robot):
    obs, *_ = rig
    for _ in range(TRIES):  # a 1 s window in HOLD that no load fault interrupted
        back_to_hold(obs)
        t0 = time.monotonic()
        time.sleep(1.0)
        if obs.state() == "HOLD" and not any(t > t0 for t, _ in obs.faults):
            break
    held = position_commands(obs.received_since(t0))
    assert obs.state() == "HOLD" and len(held) > 20, obs.faults[-3:]
    assert all(np.allclose(c.q, robot.default_q) for c in held)  # the policy never reached the motors
    t_run = enter_run(obs)
    # the policy's targets reach the motors and nothing of HOLD follows them. t_run is when the observer
    # heard RUN, the commands are dated when the bridge echoed them: the last HOLD command's echo can
    # come after t_run, so the policy's first target is found, not assumed at a time
    obs.wait_for(lambda: len(position_commands(obs.received_since(t_run))) >= 15, 10, "the policy's commands")
    after = position_commands(obs.received_since(t_run - 0.5))
    policy = [i for i, c in enumerate(after) if not np.allclose(c.q, robot.default_q, atol=1e-3)]
    assert policy, f"none of {len(after)} position commands since RUN left the default pose"
    ran = after[policy[0]:]
    assert len(ran) >= 10 and all(not np.allclose(c.q, robot.default_q, atol=1e-3) for c in ran), (len(after), policy[0])
    again = obs.call(api.RUN_SERVICE)
    assert not again.success and "RUN" in again.message


@pytest.mark.parametrize("trigger,kind", [
    ("freeze", "stale_state"), ("stall_tick", "tick_stalled"), ("nan", "nonfinite_state"),
    ("overspeed", "joint_velocity"), ("tilt", "tilt"), ("estop", "estop"), ("stop", "operator_stop"),
    ("deadman", "deadman"),
])
def test_each_watchdog_trips_and_the_motors_get_damping(rig, trigger, kind):
    obs, *_ = rig
    for _ in range(TRIES):
        t_damp, command, fault = trip_once(obs, trigger)
        if fault.startswith(kind + ":") or fault.split(":")[0] not in LOAD_FAULTS:
            break
    assert fault.startswith(kind + ":"), (fault, obs.faults[-5:])
    assert np.all(command.kd > 0) and np.all(command.kp == 0)
    assert all(c.is_damping() for _, c in obs.received_since(t_damp))  # latched
    assert obs.state() == "DAMP"


def trip_once(obs, trigger):
    """RUN, trigger the fault, wait for damping at the motors: (t_damp, command, fault reason)."""
    enter_run(obs)
    n_faults = len(obs.faults)
    t0 = time.monotonic()
    if trigger == "estop":
        obs.estop_pub.publish(Bool(data=True))
    elif trigger == "stop":
        assert obs.call(api.STOP_SERVICE).success
    elif trigger == "deadman":
        obs.deadman_enabled.clear()
    else:
        obs.inject(trigger)
    try:
        t_damp, command = obs.wait_received(lambda c: c.is_damping(), t0, 10, f"damping after {trigger}")
        obs.wait_for(lambda: len(obs.faults) > n_faults, 5, "the fault report")
        fault = obs.faults[n_faults][1]
        time.sleep(0.3)
        if trigger in ("estop", "tilt") and fault.startswith(trigger):
            refused = obs.call(api.RESET_SERVICE)
            assert not refused.success and "fault still present" in refused.message
        return t_damp, command, fault
    finally:
        obs.deadman_enabled.set()
        obs.estop_pub.publish(Bool(data=False))
        obs.inject("clear")


@pytest.mark.parametrize("gap_ms", [0, 5, 10])
def test_estop_pulses_shorter_than_a_tick_all_trip(rig, gap_ms):
    obs, *_ = rig
    back_to_hold(obs)
    tripped, pulse, spoiled = 0, 0, []
    while pulse < 8:  # in RAMP or HOLD: back_to_hold, then the wait for the ramp after each reset
        n_faults = len(obs.faults)
        obs.estop_pub.publish(Bool(data=True))
        time.sleep(gap_ms / 1e3)
        obs.estop_pub.publish(Bool(data=False))
        obs.wait_for(lambda: len(obs.faults) > n_faults, 5, f"a trip after e-stop pulse {pulse}")
        fault = obs.faults[n_faults][1]
        deadline = time.monotonic() + 10  # reset (the e-stop is released): PASSIVE, then the ramp
        while not obs.call(api.RESET_SERVICE).success:
            assert time.monotonic() < deadline, obs.faults[-2:]
            time.sleep(0.05)
        obs.wait_for(lambda: obs.state() in ("RAMP", "HOLD"), 5, "the ramp after reset")
        if fault.split(":")[0] in LOAD_FAULTS and len(spoiled) < 2 * TRIES:
            spoiled.append(fault)  # a load watchdog tripped first (a starved machine): this pulse is redone
            continue
        tripped += fault.startswith("estop:")
        pulse += 1
    assert tripped == 8, (obs.faults[-8:], f"pulses redone after a load trip: {spoiled}")


@pytest.mark.parametrize("name", ["bcg_probe", api.NODE_NAME])
def test_a_second_commander_on_lowcmd_trips_damp(rig, robot, name):
    """Another program writing commands, also one whose node bears the policy node's own name (a
    second node started by mistake): the node knows its own publisher by its GID, not its name."""
    obs, procs, tmp, *_ = rig
    for _ in range(TRIES):
        back_to_hold(obs)
        n_faults = len(obs.faults)
        probe = subprocess.Popen([sys.executable, "-m", PROBE_MODULE, "--transport", "ros2", "--good", "300", "--rate",
                                  "100", "--subscribers", "2",  # robot and node have discovered it
                                  "--node-name", name, "--result", str(tmp / "probe.json")], stdout=subprocess.PIPE, text=True)
        try:
            obs.wait_for(lambda: len(obs.faults) > n_faults, 30, "the fault report")
            fault = obs.faults[n_faults][1]
            refused = obs.call(api.RESET_SERVICE)  # while it still writes
        finally:
            out, _ = probe.communicate(timeout=60)
        assert probe.returncode == 0, out[-2000:]
        if fault.split(":")[0] not in LOAD_FAULTS:
            break
    # the probe by name, or by its publisher's GID while the node's graph has not learnt the
    # probe's name yet (DDS matches endpoints before the ROS discovery message names their node)
    gid = read_result(tmp / "probe.json").get("publisher_gid", "")
    assert gid.count(".") >= 7, gid
    assert fault.startswith("foreign_commander:"), obs.faults[-3:]
    named = f"{name} (another node of this node's name, publisher {gid})" if name == api.NODE_NAME else name
    assert f"commands the motors: {named}," in fault or f"unidentified publisher {gid}," in fault, (gid, obs.faults[-3:])
    assert obs.state() == "DAMP"
    assert not refused.success and "foreign_commander" in refused.message
    time.sleep(0.6)  # quiet for longer than foreign_commander_window_s
    assert obs.call(api.RESET_SERVICE).success


def test_observability_topics(rig, robot):
    obs, *_ = rig
    back_to_hold(obs)
    time.sleep(1.2)
    js = obs.joint_states[-1]
    assert list(js.name) == list(robot.joint_names) and np.allclose(js.position, robot.default_q)
    period, age, compute = np.nanmedian(np.array(obs.timing[-40:]), axis=0)
    assert 15.0 < period < 25.0 and 0 <= age < 100 and 0 < compute < 20
    values = {kv.key: kv.value for kv in obs.diagnostics[-1].status[0].values}
    assert values["state"] == "HOLD" and "jitter_p99_ms" in values


def test_a_policy_that_outputs_nan_is_damped_at_its_first_tick(rig, robot):
    obs, procs, tmp, safety, policy = rig
    procs.stop("node")  # the tests below start their own nodes
    t_start = time.monotonic()
    nan_policy = write_policy(tmp / "nan.onnx", robot, "nan")
    procs.start_module("nan_node", NODE_MODULE, {"policy_path": str(nan_policy), "safety_config": str(safety), "autostart": True,
                                          "sentinel_timeout_s": 0.0})
    try:
        obs.wait_for(lambda: obs.states[-1][0] > t_start + 0.5, 60, "the new node's state")
        for _ in range(TRIES):
            back_to_hold(obs)
            n_faults = len(obs.faults)
            t0 = time.monotonic()
            assert obs.call(api.RUN_SERVICE).success
            t_damp, command = obs.wait_received(lambda c: c.is_damping(), t0, 10, "damping")
            obs.wait_for(lambda: len(obs.faults) > n_faults, 5, "the fault report")
            fault = obs.faults[n_faults][1]
            if fault.split(":")[0] not in LOAD_FAULTS:
                break
        assert fault.startswith("nonfinite_action:"), obs.faults[-3:]
        ran = [c for _, c in obs.received_since(t0) if np.any(c.kp > 0) and not np.allclose(c.q, robot.default_q)]
        assert ran == []  # no target of the NaN policy ever reached the motors
    finally:
        procs.stop("nan_node")


def test_bad_policies_exit_with_their_error_and_no_motor_command(rig, robot):
    obs, procs, tmp, safety, policy = rig
    contract = PolicyContract.for_robot(robot)
    names = list(robot.joint_names)
    names[0], names[6] = names[6], names[0]
    cases = {
        "corrupt": (truncate(policy, tmp / "corrupt.onnx"), "not a loadable ONNX model"),
        "count": (write_policy(tmp / "count.onnx", robot, joint_names=contract.joint_names[:23],
                               default_pose=contract.default_pose[:23], kp=contract.kp[:23], kd=contract.kd[:23],
                               action_scale=contract.action_scale[:23]),
                  "policy output 'joint_targets' has 23 values, the robot has 29 joints"),
        "gains": (write_policy(tmp / "gains.onnx", robot, kp=tuple(10 * k for k in robot.kp)),
                  "policy kp of 'left_hip_pitch' is 1000, robot config has 100"),
        "names": (write_policy(tmp / "names.onnx", robot, joint_names=tuple(names)), "joint order mismatch"),
        "dt": (write_policy(tmp / "dt.onnx", robot, control_dt=0.01), "control_dt 0.01 s != robot control_dt 0.02 s"),
    }
    procs.stop("node")  # the robot stays; nothing may command it from now on
    time.sleep(0.5)
    t0 = time.monotonic()
    for name, (path, message) in cases.items():
        run = subprocess.run([sys.executable, "-m", NODE_MODULE, *ros_args({"policy_path": str(path), "autostart": True})],
                             capture_output=True, text=True, timeout=120)
        assert run.returncode == 2, (name, run.stdout[-2000:], run.stderr[-2000:])
        errors = [line for line in run.stdout.splitlines() if line.startswith("policy_node: error:")]
        assert len(errors) == 1 and str(path) in errors[0] and message in errors[0], (name, run.stdout)
        assert run.stdout.count(message) == 1, (name, run.stdout)  # said once, not logged and printed
    # without autostart the lifecycle node refuses configure and stays unconfigured
    procs.start_module("manual", NODE_MODULE, {"policy_path": str(cases["names"][0])})
    try:
        change = obs.create_client(ChangeState, f"{api.NODE_NAME}/change_state")
        get = obs.create_client(GetState, f"{api.NODE_NAME}/get_state")
        assert change.wait_for_service(timeout_sec=60) and get.wait_for_service(timeout_sec=30)
        result = call_and_wait(change, ChangeState.Request(transition=Transition(id=Transition.TRANSITION_CONFIGURE)))
        assert not result.success
        assert call_and_wait(get, GetState.Request()).current_state.id == LifecycleState.PRIMARY_STATE_UNCONFIGURED
        assert "joint order mismatch" in procs.log("manual")
    finally:
        procs.stop("manual")
    time.sleep(0.3)
    assert obs.received_since(t0) == []


@pytest.mark.parametrize("module,params,message", [
    (NODE_MODULE, {"kind": "can"}, "parameter 'kind': 'can' is not one of"),
    (NODE_MODULE, {"domain_id": "abc"}, "'domain_id'"),
    (NODE_MODULE, {}, "parameter 'policy_path' is required"),
    # rclpy drops a parameter the node never declared: a typo would have run without a deadman
    (NODE_MODULE, {"deadman_timout_s": 0.5}, "unknown parameter 'deadman_timout_s' (did you mean 'deadman_timeout_s'?)"),
    (NODE_MODULE, {"deadman_timeout_s": ".nan"}, "parameter 'deadman_timeout_s' must be 0 (no deadman) or in"),
    (NODE_MODULE, {"network_interface": "' '"}, "parameter 'network_interface' is empty"),
    (NODE_MODULE, {"network_interface": " "}, "parameter 'network_interface' is empty"),  # YAML: null
    (SENTINEL_MODULE, {"timeout_sec": 0.5}, "unknown parameter 'timeout_sec' (did you mean 'timeout_s'?)"),
    (SENTINEL_MODULE, {"damping_period_s": 1.0}, "parameter 'damping_period_s' must be in (0, timeout_s = 0.1]"),
    (BRIDGE_MODULE, {"physics_hz": 1000.0}, "unknown parameter 'physics_hz'"),
])
def test_bad_parameters_are_one_line_errors(module, params, message):
    policy = {"policy_path": "/nonexistent.onnx"} if params and module == NODE_MODULE else {}
    run = subprocess.run([sys.executable, "-m", module, *ros_args({**policy, **params})], capture_output=True,
                         text=True, timeout=120)
    assert run.returncode == 2 and message in run.stdout, run.stdout[-2000:] + run.stderr[-2000:]


def call_and_wait(client, request, timeout=30.0):
    future = client.call_async(request)
    deadline = time.monotonic() + timeout
    while not future.done():
        assert time.monotonic() < deadline, f"no answer from {client.srv_name}"
        time.sleep(0.02)
    return future.result()


def test_the_node_waits_for_the_sentinel_which_damps_a_stalled_and_a_killed_node(rig, robot):
    obs, procs, tmp, safety, policy = rig
    procs.stop("node")
    for _ in range(TRIES):  # a 1.5 s window that no load fault interrupted (CI: a 204 ms state gap, stale_state)
        t_start = time.monotonic()
        # the default sentinel_timeout_s: without a watching sentinel the node stays in PASSIVE (zero torque)
        procs.start_module("node2", NODE_MODULE, {"policy_path": str(policy), "safety_config": str(safety), "autostart": True})
        obs.wait_for(lambda: obs.states[-1][0] > t_start + 0.5, 60, "the new node's state")
        t_passive = time.monotonic()
        # its zero-torque commands reach the observer (through the bridge) once the bridge has
        # discovered the new node's writer, which under CI load took longer than 1.5 s
        obs.wait_received(lambda c: True, t_passive, 30, "the new node's commands")
        time.sleep(1.5)
        faults = [f for t, f in obs.faults if t > t_passive]
        if not faults:
            break
        # a starved process; not sentinel_missing or the deadman, which in PASSIVE trip nothing
        assert faults[0].split(":")[0] in ("stale_state", "tick_stalled", "loop_stalled"), faults
        procs.stop("node2")  # in DAMP, and no reset is granted without a sentinel: start it again
    assert {s for t, s in obs.states if t > t_passive} == {"PASSIVE"}, obs.faults[-3:]
    assert position_commands(obs.received_since(t_passive)) == [] and obs.received_since(t_passive)
    # and its log says why
    assert "PASSIVE until these clear: sentinel_missing: no sentinel heartbeat yet" in procs.log("node2")
    # its timeout as every launcher chooses it for node2's 200 ms stale limit (the default 100 ms
    # took over on a hiccup the node rightly did not trip on, and the node then tripped on that)
    procs.start_module("sentinel", SENTINEL_MODULE, {"safety_config": str(safety),
                                                     "timeout_s": sentinel_timeout_for(10 * robot.control_dt, robot.control_dt)})
    enter_run(obs)  # the sentinel arms on the node's commands, and the node ramps and holds
    obs.wait_for(lambda: obs.sentinel_states and obs.sentinel_states[-1][1] == "WATCHING", 30, "sentinel watching")
    time.sleep(0.5)

    # The node frozen in RUN for longer than the sentinel's timeout: the sentinel damps, and
    # the node's first tick back trips on its own stall; no position target follows the takeover.
    assert obs.state() == "RUN", obs.faults[-3:]
    t_freeze = procs.pause("node2", 0.6)
    t_damp, _ = obs.wait_received(lambda c: c.is_damping(), t_freeze, 10, "sentinel damping during the stall")
    obs.wait_for(lambda: obs.faults and obs.faults[-1][0] > t_freeze, 10, "the node's trip after the stall")
    obs.wait_for(lambda: obs.sentinel_states[-1][0] > t_damp and obs.sentinel_states[-1][1] == "WATCHING", 10,
                 "the sentinel handing back to the node")
    time.sleep(0.3)
    assert position_commands(obs.received_since(t_damp)) == []
    assert obs.faults[-1][1].startswith("loop_stalled:"), obs.faults[-3:]

    enter_run(obs)
    time.sleep(0.5)
    assert obs.state() == "RUN" and obs.sentinel_states[-1][1] == "WATCHING", obs.faults[-3:]  # no takeover before the kill
    t_kill = time.monotonic()
    procs.kill("node2", signal.SIGKILL)
    t_damp, command = obs.wait_received(lambda c: c.is_damping(), t_kill, 10, "sentinel damping")
    assert np.allclose(command.kd, robot.kd_array) and np.all(command.kp == 0)
    obs.wait_for(lambda: obs.sentinel_states[-1][0] > t_kill and obs.sentinel_states[-1][1] == "TAKEN_OVER", 5,
                 "sentinel takeover report")
    time.sleep(0.2)
    assert all(c.is_damping() for _, c in obs.received_since(t_damp))
    print(f"sentinel takeover {1e3 * (t_damp - t_kill):.0f} ms after SIGKILL")


def test_the_sentinel_checks_its_robot_config_against_the_model(tmp_path):
    """A limit that disagrees with the MJCF is refused by the sentinel as by the node."""
    from bcg_robot.config import DEFAULT_ROBOT_CONFIG

    text = DEFAULT_ROBOT_CONFIG.read_text()
    bad = tmp_path / "g1_wrong_limit.yaml"
    bad.write_text(text.replace("position_upper: [\n  2.8798,", "position_upper: [\n  2.5,", 1))
    assert bad.read_text() != text
    for module in (SENTINEL_MODULE, NODE_MODULE):
        params = {"robot_config": str(bad)} if module == SENTINEL_MODULE else \
            {"robot_config": str(bad), "policy_path": "/nonexistent.onnx", "autostart": True}
        run = subprocess.run([sys.executable, "-m", module, *ros_args(params)], capture_output=True, text=True, timeout=120)
        errors = [line for line in run.stdout.splitlines() if ": error:" in line]
        assert run.returncode == 2 and len(errors) == 1, (module, run.stdout[-2000:], run.stderr[-2000:])
        assert str(bad) in errors[0] and "position_upper" in errors[0] and "left_hip_pitch" in errors[0], errors


def test_operator_api_exists_from_configure_to_cleanup_and_outputs_only_while_active(rig):
    obs, procs, tmp, safety, policy = rig
    for name in ("node", "node2"):
        procs.stop(name)
    run = obs.create_client(api.COMMAND_SERVICE_TYPE, api.RUN_SERVICE)
    t_stop = time.monotonic()
    # a SIGKILLed node (the sentinel test's) stays in the graph until its DDS lease expires: ~20 s measured
    deadline = t_stop + 60
    while run.service_is_ready():
        assert time.monotonic() < deadline, "the stopped node's operator API is still in the graph"
        time.sleep(0.1)
    print(f"stopped nodes' services gone after {time.monotonic() - t_stop:.1f} s")
    procs.start_module("lifecycle", NODE_MODULE, {"policy_path": str(policy), "safety_config": str(safety)})
    try:
        assert obs.change_state.wait_for_service(timeout_sec=60)
        assert not run.wait_for_service(timeout_sec=1.0)  # unconfigured: no operator API

        def transition(tid):
            assert obs.transition(tid)

        def heartbeats_within(seconds):
            n = len(obs.heartbeats)
            time.sleep(seconds)
            return len(obs.heartbeats) - n

        transition(Transition.TRANSITION_CONFIGURE)
        assert run.wait_for_service(timeout_sec=30)
        assert heartbeats_within(0.5) == 0  # configured, inactive: no heartbeat
        transition(Transition.TRANSITION_ACTIVATE)
        n = len(obs.heartbeats)  # 50 Hz while active (waited for: a starved observer hears them late)
        obs.wait_for(lambda: len(obs.heartbeats) - n > 10, 10, "heartbeats while active")
        transition(Transition.TRANSITION_DEACTIVATE)
        # the heartbeats sent before the deactivation may still be on their way to a lagging observer:
        # wait for 0.2 s of quiet (a node that keeps publishing never gives it), then none for 0.5 s
        obs.wait_for(lambda: time.monotonic() - obs.heartbeats[-1] > 0.2, 10, "the heartbeats to stop after deactivation")
        assert heartbeats_within(0.5) == 0
        transition(Transition.TRANSITION_CLEANUP)
        deadline = time.monotonic() + 10
        while obs.get_publishers_info_by_topic(api.STATE_TOPIC) or run.service_is_ready():
            assert time.monotonic() < deadline, "operator API still there after cleanup"
            time.sleep(0.1)
    finally:
        procs.stop("lifecycle")
