"""scripts/gpu_train.sh in its CPU mode: the one-call GPU run's path (train under a time
budget, collect the figures) on this machine, with the cpu-tiny preset."""

import csv
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "gpu_train.sh"


def test_the_script_refuses_a_missing_output_directory():
    done = subprocess.run(["bash", str(SCRIPT), "--cpu"], capture_output=True, text=True)
    assert done.returncode == 2 and "usage:" in done.stderr


@pytest.mark.slow  # a G1 compile (conftest.G1_MODULES)
def test_cpu_mode_trains_within_the_time_budget_and_writes_the_figures(tmp_path):
    out = tmp_path / "out"
    # a budget shorter than one iteration: the run stops after the second of cpu-tiny's three
    env = {**os.environ, "PYTHON": sys.executable, "BCG_TRAIN_S": "0.001"}
    done = subprocess.run(["bash", str(SCRIPT), "--cpu", str(out)], capture_output=True, text=True, env=env, timeout=1500)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]

    summary = json.loads((out / "summary.json").read_text())
    assert summary["platform"] == "cpu" and summary["task"] == "jump" and summary["estimator"] == "plain"
    assert summary["iterations"] == 2
    assert summary["first_iteration_s"] > summary["s_per_iteration"] > 0
    assert summary["env_steps_per_s"] == pytest.approx(2 * 4 / summary["s_per_iteration"])
    assert summary["peak_device_memory_gb"] is None  # XLA:CPU reports none
    assert summary["peak_rss_gb"] > 0.1
    with open(out / "metrics.csv") as f:
        rows = list(csv.DictReader(f))
    assert [int(r["iteration"]) for r in rows] == [1, 2]
    assert (out / "curves.png").stat().st_size > 0 and (out / "config.yaml").is_file()
    assert sorted(p.name for p in (out / "run" / "checkpoints").glob("*.pkl")) == ["000001.pkl", "000002.pkl"]
    assert "gpu_train: " in done.stdout and (out / "train.log").is_file()
