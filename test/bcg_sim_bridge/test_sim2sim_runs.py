"""bcg-sim2sim end to end: real bridge, policy node and sentinel processes over both interfaces.

Each CLI run is one subprocess (it owns rclpy and the SDK's channel factory). On the shared
2-core machine (load ~9) processes go unscheduled for 60-110 ms, which trips the node's
stale-state watchdog (3 periods = 60 ms) before any fault is injected. The tests therefore
run with ``--stale-periods 10`` (200 ms, reported in the report's header) and a 500 ms
dropout, and ``--attempts 3`` re-runs a scenario only when a watchdog tripped BEFORE the
injection or the bridge ran below 0.9x real time (the machine, not the safety layer, failed:
stop 27's CI saw 0.71x, and three SDK scenarios failed); the report keeps those
attempts, with the machine's busy and stolen CPU, and the assertions are on the final one.
The production threshold is what ``make sim2sim`` uses.
"""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from bcg_sim_bridge.sim2sim.scenarios import SCENARIOS

pytestmark = pytest.mark.slow
ROOT = Path(__file__).resolve().parents[2]


def _sim2sim(out: Path, *args: str) -> tuple[int, dict, str]:
    proc = subprocess.run(
        [sys.executable, "-m", "bcg_sim_bridge.cli.sim2sim", "--out", str(out), "--no-video", "--attempts", "3",
         "--stale-periods", "10", "--dropout-ms", "500", "--run-seconds", "2", *args], cwd=ROOT, capture_output=True, text=True, timeout=900,
        env={**os.environ, "PYTHONPATH": str(ROOT)})
    report = json.loads((out / "report.json").read_text()) if (out / "report.json").is_file() else {}
    return proc.returncode, report, proc.stdout[-3000:] + proc.stderr[-3000:]


@pytest.mark.parametrize("interface", ["ros2", "unitree_sdk"])
def test_default_pose_policy_passes_sim2sim(interface, tmp_path):
    code, report, output = _sim2sim(tmp_path, "--interface", interface)
    assert code == 0, output
    (result,) = report["results"]
    assert result["passed"] and not result["fell"]
    assert result["reason"] == "operator_stop" and result["final_motor_mode"] == "DAMPING"
    assert result["e_track_cm"]["mean"] < 3.0
    assert result["root_height_error_cm"]["mean"] < 2.0  # against the stand clip's / default pose's pelvis height
    assert result["min_root_height_m"] > 0.6
    assert result["node_timing_ms"]["period"]["p50"] == pytest.approx(20.0, abs=2.0)
    assert result["bridge_timing_ms"]["realtime_factor"] == pytest.approx(1.0, abs=0.1)
    assert (tmp_path / "report.md").is_file() and (tmp_path / "sim2sim.png").stat().st_size > 10_000
    assert "default pose" in report["header"]["policy"] or "shipped" in report["header"]["policy"]
    # the node's own count of the policy's ticks (2 s of RUN at 50 Hz), as its diagnostics reported it:
    # a policy that holds the default pose is never shaped by the safety layer
    shaping = result["target_shaping"]
    assert 80 <= shaping["policy_ticks"] <= 130 and shaping["shaped"] == 0, shaping
    assert f"- target shaping: of {shaping['policy_ticks']} policy ticks the safety layer changed targets in 0 " \
        in (tmp_path / "report.md").read_text()


@pytest.fixture(scope="module")
def ros2_faults(tmp_path_factory):
    out = tmp_path_factory.mktemp("faults_ros2")
    faults = ["dropout", "nan", "kill", "estop", "foreign", "push"]
    code, report, output = _sim2sim(out, "--interface", "ros2", "--no-nominal", *[a for f in faults for a in ("--fault", f)])
    return code, {r["scenario"]: r for r in report.get("results", [])}, output


@pytest.mark.parametrize("fault", ["dropout", "nan", "kill", "estop", "foreign", "push"])
def test_fault_scenario_ends_in_damp_with_reason(ros2_faults, fault):
    code, results, output = ros2_faults
    result = results[fault]
    assert result["passed"], (result.get("observed"), result.get("error"), output)
    assert result["ends_in_damp"] and result["final_motor_mode"] == "DAMPING"
    assert result["reason"] in SCENARIOS[fault].expected_reasons and result["reason_text"]
    assert result["expected"] and result["observed"]


def test_killed_node_leaves_the_last_command_until_the_sentinel_damps(ros2_faults):
    _, results, _ = ros2_faults
    kill = results["kill"]
    # the bridge keeps the node's last (stiff) command; damping arrives only from the sentinel, once its
    # timeout (220 ms beside a node with --stale-periods 10) has passed since the node's last message.
    # That it waited its timeout is judged by the silence it measured (its log): the kill's time would
    # need the node's last tick just before it, and a late tick under load came earlier. The bound from
    # the kill is loose (a loaded machine delays the sentinel); it fails a sentinel that waited several timeouts.
    from bcg_policy_node.sentinel.sentinel_watch import sentinel_timeout_for

    control_dt = 0.02
    timeout_ms = 1e3 * sentinel_timeout_for(10 * control_dt, control_dt)
    assert kill["sentinel_silence_ms"] is not None and kill["sentinel_silence_ms"] >= timeout_ms, kill.get("sentinel_silence_ms")
    assert 0 < kill["reaction_ms"] <= timeout_ms + 1000, kill["reaction_ms"]
    assert any(e["source"] == "sentinel" and e["text"] == "TAKEN_OVER" for e in kill["timeline"])


def test_fault_run_exit_code_reflects_the_scenarios(ros2_faults):
    code, results, _ = ros2_faults
    assert code == (0 if all(r["passed"] for r in results.values()) else 1)


@pytest.fixture(scope="module")
def unitree_crc(tmp_path_factory):
    out = tmp_path_factory.mktemp("faults_unitree")
    code, report, output = _sim2sim(out, "--interface", "unitree_sdk", "--no-nominal", "--fault", "crc", "--fault", "estop",
                                    "--fault", "foreign")
    return code, {r["scenario"]: r for r in report.get("results", [])}, output


def test_corrupted_lowcmds_are_dropped_and_counted_by_the_bridge(unitree_crc):
    _, results, output = unitree_crc
    crc = results["crc"]
    assert crc["probe"]["sent_bad"] == 20, output
    assert crc["bridge_counters"]["bad_crc"] == 20
    assert crc["ends_in_damp"]


def test_remote_estop_over_unitree_sdk_ends_in_damp(unitree_crc):
    _, results, output = unitree_crc
    estop = results["estop"]
    assert estop["passed"] and estop["reason"] == "remote_estop", (estop.get("observed"), output)



def test_corrupted_lowstates_go_stale_and_end_in_damp(unitree_crc):
    _, results, output = unitree_crc
    crc = results["crc"]
    assert crc["passed"], (crc.get("observed"), output)
    assert crc["reason"] == "stale_state"


def test_a_second_sdk_commander_ends_in_damp_and_the_sentinel_reports_it(unitree_crc):
    _, results, output = unitree_crc
    foreign = results["foreign"]
    assert foreign["passed"] and foreign["reason"] == "foreign_commander", (foreign.get("observed"), output)
    assert any(e["source"] == "sentinel_fault" and "foreign_commander" in e["text"] for e in foreign["timeline"])


def test_a_policy_with_good_metadata_and_a_wrong_graph_is_exit_2_with_its_reason(tmp_path):
    import onnx

    from bcg_robot.config import load_robot_config
    from bcg_robot.contract import PolicyContract
    from bcg_sim_bridge.harness.sample_policies import write_policy

    robot = load_robot_config(check_model=False)
    c = PolicyContract.for_robot(robot)
    model = onnx.load(str(write_policy(tmp_path / "g23.onnx", robot, joint_names=c.joint_names[:23],
                                       default_pose=c.default_pose[:23], kp=c.kp[:23], kd=c.kd[:23],
                                       action_scale=c.action_scale[:23])))
    del model.metadata_props[:]
    onnx.helper.set_model_props(model, c.to_metadata())  # the robot's own, valid contract over a 23-joint graph
    bad = tmp_path / "bad_graph.onnx"
    onnx.save(model, str(bad))
    proc = subprocess.run([sys.executable, "-m", "bcg_sim_bridge.cli.sim2sim", "--policy", str(bad), "--out",
                           str(tmp_path / "out")], cwd=ROOT, capture_output=True, text=True, timeout=120,
                          env={**os.environ, "PYTHONPATH": str(ROOT)})
    lines = [line for line in (proc.stdout + proc.stderr).splitlines() if line.strip()]
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert len(lines) == 1 and str(bad) in lines[0] and "has 23 values, the robot has 29 joints" in lines[0], lines
    assert not (tmp_path / "out" / "report.json").exists()  # nothing ran


@pytest.fixture(scope="module")
def every_policy(tmp_path_factory):
    """``--policy all`` over a models folder of two policies that both hold the default pose: one whose
    contract names the squat (8 s) and one without a motion; the nominal run only, 3 s of RUN (the
    squat's knees bend 0.9 rad and its pelvis goes down ~10 cm by 2 s in)."""
    import shutil

    from bcg_robot.config import load_robot_config
    from bcg_robot.paths import share_file
    from bcg_sim_bridge.harness.sample_policies import write_policy

    robot = load_robot_config(check_model=False)
    models = tmp_path_factory.mktemp("models")
    (models / "motions").mkdir()
    shutil.copy(share_file("models/motions/squat.csv"), models / "motions" / "squat.csv")
    write_policy(models / "hold.onnx", robot)
    write_policy(models / "squat_hold.onnx", robot, motion_id="squat", motion_length_s=8.0)
    out = tmp_path_factory.mktemp("every_policy")
    code, report, output = _sim2sim(out, "--interface", "ros2", "--policy", "all", "--models-dir", str(models),
                                    "--run-seconds", "3")
    return code, out, report, output


def test_policy_all_runs_each_policy_with_a_report_section_and_folder_each(every_policy):
    code, out, report, output = every_policy
    assert code == 0, output
    sections = {Path(s["policy"]).stem: s for s in report["header"]["per_policy"]}
    assert set(sections) == {"hold", "squat_hold"}, output
    for name, section in sections.items():
        assert section["exit_code"] == 0 and Path(section["out_dir"]) == out / name
        own = json.loads((out / name / "report.json").read_text())
        (result,) = own["results"]
        assert result["scenario"] == "none" and result["passed"], result.get("observed")
        assert (out / name / "report.md").is_file() and (out / name / "ros2_none").is_dir()
    text = (out / "report.md").read_text()
    assert text.count("## Policy ") == 2 and "root z err cm" in text
    assert [r["policy"] for r in report["results"]] == [s["policy"] for s in report["header"]["per_policy"]]


def test_a_policy_with_a_motion_is_scored_against_its_clip(every_policy):
    _, out, _, output = every_policy
    hold = json.loads((out / "hold" / "report.json").read_text())["results"][0]
    squat = json.loads((out / "squat_hold" / "report.json").read_text())["results"][0]
    assert hold["e_track_cm"]["reference"] == "default pose" and squat["e_track_cm"]["reference"] == "squat"
    # the same robot motion (standing at the default pose): small against the default pose,
    # the squat's knee bend against its clip
    assert hold["e_track_cm"]["mean"] < 3.0, output
    assert squat["e_track_cm"]["mean"] > hold["e_track_cm"]["mean"] + 2.0 and squat["e_track_cm"]["max"] > 8.0
    # root height: the pelvis stays at ~0.78 m while the clip's goes down ~10 cm
    assert hold["root_height_error_cm"]["mean"] < 2.0
    assert squat["root_height_error_cm"]["max"] > 6.0
    assert squat["root_height_error_cm"]["mean"] > hold["root_height_error_cm"]["mean"] + 1.5
    assert "motion 'squat'" in json.loads((out / "squat_hold" / "report.json").read_text())["header"]["reference"]
