"""scripts/gpu_train.sh in its CPU mode: the one-call GPU run's path (train under a time
budget, collect the figures) on this machine, with the cpu-tiny preset. It is also the
suite's G1 test of the training path end to end: SHAC + BCG on the jump's stiff contact
with domain randomization on, compiled and run, with bundles firing."""

import csv
import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "gpu_train.sh"


def run_script(argv, env, timeout):
    """The script in a session of its own: on a timeout its whole process group is killed. (subprocess.run
    kills only bash, and the training it started went on compiling, orphaned, beside the next tests.) The
    timeout is for a hang: a cold G1 compile took 1,072 s under CI on a slow machine, and longer when the
    machine had other work."""
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, start_new_session=True)
    try:
        stdout, stderr = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.communicate()
        raise
    return subprocess.CompletedProcess(argv, proc.returncode, stdout, stderr)


def test_the_script_refuses_a_missing_output_directory():
    done = subprocess.run(["bash", str(SCRIPT), "--cpu"], capture_output=True, text=True)
    assert done.returncode == 2 and "usage:" in done.stderr


@pytest.mark.slow  # a G1 compile (conftest.G1_MODULES)
def test_cpu_mode_trains_within_the_time_budget_and_writes_the_figures(tmp_path):
    out = tmp_path / "out"
    # a budget shorter than one iteration: the run stops after the second of cpu-tiny's three
    env = {**os.environ, "PYTHON": sys.executable, "BCG_TRAIN_S": "0.001"}
    done = run_script(["bash", str(SCRIPT), "--cpu", str(out)], env, timeout=2400)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]

    summary = json.loads((out / "summary.json").read_text())
    assert summary["platform"] == "cpu" and summary["task"] == "jump" and summary["estimator"] == "bcg"
    assert summary["iterations"] == 2
    assert summary["first_iteration_s"] > summary["s_per_iteration"] > 0
    assert summary["env_steps_per_s"] == pytest.approx(2 * 4 / summary["s_per_iteration"])
    assert summary["peak_device_memory_gb"] is None  # XLA:CPU reports none
    assert summary["peak_rss_gb"] > 0.1
    with open(out / "metrics.csv") as f:
        rows = list(csv.DictReader(f))
    assert [int(r["iteration"]) for r in rows] == [1, 2]
    # the G1's bundled gradient through the SHAC window, with the sampled model (DR) in the
    # guarded step and the state clip on: bundles fired, every actor update was finite and taken
    assert all(float(r["bundled"]) > 0 for r in rows)
    assert all(0 < float(r["actor_grad_norm"]) < float("inf") and float(r["skipped_actor_updates"]) == 0 for r in rows)
    config = yaml.safe_load((out / "config.yaml").read_text())
    task = config["task"]
    assert task["domain"]["enabled"] is True and task["contact"] == "stiff" and task["bcg"]["mode"] == "bcg"
    assert config["shac"]["state_grad_clip"] > 0
    assert (out / "curves.png").stat().st_size > 0 and (out / "config.yaml").is_file()
    assert sorted(p.name for p in (out / "run" / "checkpoints").glob("*.pkl")) == ["000001.pkl", "000002.pkl"]
    assert "gpu_train: " in done.stdout and (out / "train.log").is_file()
