"""bcg-eval smoke: rolls the shipped policy (or, if none ships, a default-pose export) in the bridge model."""

import json
from pathlib import Path

import pytest

from bcg_robot.config import load_robot_config
from bcg_robot.contract import PolicyContract
from bcg_sim_bridge.policies import shipped_policy
from bcg_train.cli.evaluate import main as eval_main
from bcg_robot.onnx_graph import default_pose_weights, save_policy_onnx


def _policy(tmp_path: Path) -> Path:
    shipped = shipped_policy()
    if shipped is not None:
        return shipped
    robot = load_robot_config()
    contract = PolicyContract.for_robot(robot, motion_id="stand", motion_length_s=10.02)
    return save_policy_onnx(tmp_path / "default_stand.onnx", contract, default_pose_weights(contract))


def test_eval_smoke(tmp_path, capsys):
    policy = _policy(tmp_path)
    out = tmp_path / "eval"
    assert eval_main([str(policy), "--seeds", "2", "--duration", "1.0", "--out", str(out)]) == 0
    text = capsys.readouterr().out
    assert "falls 0/2" in text and "E_track" in text and "foot penetration" in text
    summary = json.loads((out / "summary.json").read_text())
    assert summary["falls"] == 0 and summary["seeds"] == 2
    assert 0.0 < summary["tracking_error_cm_mean"] < 10.0
    # root height against the reference's (stand: the default pose's pelvis height), next to E_track
    assert "root height error" in text and "root z err cm" in text
    z = summary["root_height_error_cm"]
    assert 0.0 <= z["mean"] <= z["max"] < 10.0
    assert all(0.0 <= s["root_height_error_cm"]["mean"] <= s["root_height_error_cm"]["max"] for s in summary["per_seed"])
    assert {s["seed"] for s in summary["per_seed"]} == {0, 1}
    assert summary["per_seed"][0]["foot_penetration_bridge_mm"] > 0.0
    assert (out / "eval.png").stat().st_size > 1000
    # held-out seeds: the same domain draws as seed 7 of a longer run
    assert eval_main([str(policy), "--seeds", "1", "--first-seed", "7", "--duration", "0.2", "--out", str(tmp_path / "late")]) == 0
    late = json.loads((tmp_path / "late" / "summary.json").read_text())
    assert [s["seed"] for s in late["per_seed"]] == [7] and late["first_seed"] == 7


def test_eval_rejects_a_malformed_policy(tmp_path, capsys):
    bad = tmp_path / "bad.onnx"
    bad.write_bytes(b"garbage")
    with pytest.raises(SystemExit) as exc:
        eval_main([str(bad), "--seeds", "1", "--duration", "0.1"])
    assert exc.value.code == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("bcg-eval: error:") and "bad.onnx" in err and "\n" not in err


def test_eval_video_comes_with_a_frame_strip(tmp_path):
    """As a user runs it: its own process, where bcg-eval picks the GL backend before MuJoCo
    loads (in this pytest process other tests have loaded MuJoCo already)."""
    import subprocess
    import sys

    out = tmp_path / "video"
    done = subprocess.run(
        [sys.executable, "-m", "bcg_train.cli.evaluate", str(_policy(tmp_path)), "--seeds", "1", "--duration", "0.5", "--video",
         "--out", str(out)], capture_output=True, text=True, timeout=300,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert "frame strip" in done.stdout, done.stdout  # "video skipped (...)" here: offscreen rendering failed
    from PIL import Image

    strip = Image.open(out / "seed0_frames.png")
    assert strip.width == 8 * 320 and strip.height > 240  # 8 tiles of 320 x 240 with their time labels
