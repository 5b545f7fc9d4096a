"""Report metrics of sim-to-sim, computed from a bridge log (pure, no processes)."""

import numpy as np
import pytest

from bcg_robot import metrics
from bcg_robot.config import load_robot_config
from bcg_sim_bridge.physics import DriveMode
from bcg_sim_bridge.sim2sim.analysis import KeyBodyFK, percentiles_ms, tracking_error_cm


@pytest.fixture(scope="module")
def robot():
    return load_robot_config()


def test_the_sentinels_takeover_silence_is_read_from_its_last_takeover_line():
    from bcg_sim_bridge.sim2sim.runner import takeover_silence_ms

    log = ("[INFO] [1.0] [policy_sentinel]: WAITING -> WATCHING: armed by the policy node's commands (node#1)\n"
           "[ERROR] [2.0] [policy_sentinel]: TAKEOVER: policy node heartbeat silent for 131 ms; sending damping\n"
           "[INFO] [3.0] [policy_sentinel]: TAKEN_OVER -> WAITING: policy node heartbeat back\n"
           "[ERROR] [4.0] [policy_sentinel]: TAKEOVER: policy node command stream silent for 224 ms; sending damping\n")
    assert takeover_silence_ms(log) == 224.0
    assert takeover_silence_ms(log.split("[ERROR] [2.0]")[0]) is None


def test_tracking_error_is_zero_on_the_reference_and_grows_with_deviation(robot):
    fk = KeyBodyFK(robot)
    ref = np.tile(robot.default_q, (3, 1))
    assert tracking_error_cm(fk, ref, ref) == (0.0, 0.0)
    bent = ref.copy()
    bent[:, robot.joint_names.index("left_elbow")] += 0.3
    mean, worst = tracking_error_cm(fk, bent, ref)
    # only the left wrist moves: about forearm length (~0.2 m) * 0.3 rad, averaged over the tracked bodies
    assert 3.0 < worst < 10.0 and mean == pytest.approx(worst / len(metrics.TRACKED_BODIES), rel=1e-6)


def test_percentiles_ignore_non_finite_samples():
    p = percentiles_ms(np.array([np.nan, 0.001, 0.002, 0.003]))
    assert p["p50"] == pytest.approx(2.0) and p["max"] == pytest.approx(3.0)
    assert np.isnan(percentiles_ms(np.array([]))["p50"])


def test_drive_modes_are_stable_codes():
    # the bridge log stores these integers; reports decode them by name
    assert [m.value for m in DriveMode] == [0, 1, 2, 3]


def test_an_attempt_is_retried_only_when_it_says_nothing_about_the_safety_layer():
    from bcg_sim_bridge.sim2sim.runner import retry_reason

    real_time = {"bridge_timing_ms": {"realtime_factor": 0.98}}
    assert retry_reason({"passed": False, **real_time}) == ""  # a real failure is reported, not retried
    assert retry_reason({"passed": True, "spoiled_before_injection": True}) == ""
    assert "before the injection" in retry_reason({"passed": False, "spoiled_before_injection": True, **real_time})
    # a trip before the injection that no load causes is the policy's or the safety layer's: reported, never
    # retried (it was, and a policy that tripped in two attempts of three passed on the third)
    from bcg_sim_bridge.sim2sim.runner import spoiled_by_load

    assert spoiled_by_load(["stale_state: no state for 62 ms", "sentinel_missing: heartbeat silent for 130 ms"])
    assert not spoiled_by_load([]) and not spoiled_by_load(["tilt: 0.9 rad"])
    assert not spoiled_by_load(["stale_state: no state for 62 ms", "joint_velocity: left_knee 40 rad/s"])
    # the sentinel's damping after a late heartbeat (load) is a second writer: the node's trip on it is load too
    assert spoiled_by_load(["foreign_commander: writer 7 on rt/lowcmd"], sentinel_took_over=True)
    assert not spoiled_by_load(["foreign_commander: writer 7 on rt/lowcmd"])
    assert retry_reason({"passed": False, "harness_error": "probe did not finish"}) == "probe did not finish"
    slow = retry_reason({"passed": False, "bridge_timing_ms": {"realtime_factor": 0.71}})
    assert "0.71x real time" in slow and "overloaded" in slow
    stolen = retry_reason({"passed": False, "bridge_timing_ms": {"realtime_factor": 0.5},
                           "machine_cpu": {"busy": 0.99, "steal": 0.31}})
    assert "99 % busy, 31 % stolen by the hypervisor" in stolen
    assert retry_reason({"passed": False, "error": "policy node did not reach HOLD"}) == ""  # no bridge log: no figure
    # a node that never left PASSIVE never heard its inputs (the sentinel, the state): the rig's start-up
    assert "never left PASSIVE" in retry_reason({"passed": False, "stayed_passive": True, **real_time})


def test_a_node_that_stayed_passive_is_reported_with_the_faults_its_log_last_named():
    from bcg_sim_bridge.sim2sim.runner import passive_reason, retry_reason

    log = ("[INFO] [1.0] [bcg_policy_node]: PASSIVE until these clear: sentinel_missing: no sentinel heartbeat yet\n"
           "[INFO] [3.0] [bcg_policy_node]: PASSIVE until these clear: sentinel_missing: sentinel is WAITING, not WATCHING\n"
           "[INFO] [3.5] [bcg_policy_node]: something else\n")
    why = passive_reason(log)
    assert why == "sentinel_missing: sentinel is WAITING, not WATCHING" and passive_reason("") == ""
    reason = retry_reason({"passed": False, "stayed_passive": True, "passive_reason": why})
    assert f"never left PASSIVE ({why})" in reason
    assert "its log gives no reason" in retry_reason({"passed": False, "stayed_passive": True, "passive_reason": ""})
    # read from the policy node's log: the process group knows it by its role, "policy"
    from types import SimpleNamespace

    from bcg_policy_node.bringup import policy_node_spec
    from bcg_sim_bridge.sim2sim.runner import passive_reason_of

    role = policy_node_spec("ros2", "p.onnx", "robot.yaml", 1, "lo", False).role  # the key ProcessGroup gives it
    assert passive_reason_of({role: SimpleNamespace(log_tail=lambda lines: log)}) == why
    assert passive_reason_of({"bridge": SimpleNamespace(log_tail=lambda lines: log)}) == ""


def test_machine_cpu_use_reads_busy_and_stolen_shares_from_proc_stat(tmp_path):
    from bcg_sim_bridge.harness.processes import machine_cpu_times, machine_cpu_use

    stat = tmp_path / "stat"
    #                  user nice system idle iowait irq softirq steal
    stat.write_text("cpu  100 0 50 800 50 0 0 0 0 0\ncpu0 1 2 3\n")
    before = machine_cpu_times(str(stat))
    stat.write_text("cpu  400 100 50 900 50 0 0 200 0 0\n")
    use = machine_cpu_use(before, machine_cpu_times(str(stat)))
    assert use == {"busy": 0.571, "steal": 0.286}  # of 700 ticks: 400 ran work here, 200 stolen, 100 idle
    assert machine_cpu_times(str(tmp_path / "missing")) is None and machine_cpu_use(None, before) == {}
    real = machine_cpu_times()
    assert real is None or len(real) == 8


def test_an_attempt_folder_holds_no_output_of_an_earlier_run(tmp_path):
    """With --out reused, a bridge or probe that died before writing its own file left the
    earlier run's in place, and the verdict read it as this attempt's: an old bridge log has
    no row in this attempt's windows, so the scenario passed with nothing measured."""
    from bcg_robot.config import load_robot_config
    from bcg_sim_bridge.sim2sim.runner import ATTEMPT_OUTPUTS, RunOptions, attempt_dir
    from bcg_sim_bridge.sim2sim.scenarios import SCENARIOS

    opts = RunOptions(robot=load_robot_config(), robot_config="", policy=tmp_path / "p.onnx", policy_origin="test",
                      out_dir=tmp_path, ros_domain=1, sdk_domain=2)
    first = attempt_dir(opts, SCENARIOS["dropout"], "ros2", 0)
    for name in ATTEMPT_OUTPUTS:
        (first / name).write_text("an earlier run's\n")
    (first / "notes.txt").write_text("kept\n")
    again = attempt_dir(opts, SCENARIOS["dropout"], "ros2", 0)
    assert again == first and set(ATTEMPT_OUTPUTS) == {"bridge_log.npz", "probe.json"}
    assert not any((again / name).exists() for name in ATTEMPT_OUTPUTS) and (again / "notes.txt").is_file()
