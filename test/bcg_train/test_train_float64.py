"""``task.float64``: a G1 training iteration with the simulator in float64 and the learner in
float32 (the process turns on jax_enable_x64 itself, so the run is a subprocess: the flag is
process-wide and would change every later test's dtypes)."""

import csv
import subprocess
import sys
from pathlib import Path

import jax
import numpy as np
import pytest

from bcg_train.learn.train import load_checkpoint

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.slow  # a G1 compile (conftest.G1_MODULES)
def test_float64_jump_iteration_simulates_in_float64_and_learns_in_float32(tmp_path):
    config = tmp_path / "jump_float64.yaml"
    config.write_text(f"extends: {ROOT / 'config' / 'train' / 'jump.yaml'}\ntask:\n  float64: true\n")
    run = tmp_path / "run"
    done = subprocess.run(
        [sys.executable, "-m", "bcg_train.cli.train", "--task", "jump", "--config", str(config), "--preset", "cpu-tiny",
         "--iterations", "1", "--run-dir", str(run), "--no-progress"],
        capture_output=True, text=True, cwd=ROOT, timeout=1500,
    )
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]

    state = load_checkpoint(run).state
    data = state.env.sim.sim.data
    assert data.qpos.dtype == np.float64 and data.qvel.dtype == np.float64  # the physics ran in 64 bits
    # the learner did not: networks, normalizer and the task's own carried fields stay float32
    for tree in (state.actor, state.critics, state.obs_stats):
        assert {x.dtype for x in jax.tree_util.tree_leaves(tree)} == {np.dtype(np.float32)}
    assert state.env.last_action.dtype == np.float32 and state.env.pending_action.dtype == np.float32
    with open(run / "metrics.csv") as f:
        (row,) = list(csv.DictReader(f))
    # SHAC + BCG through the float64 bundle: bundles fired and the actor update was finite and taken
    assert float(row["bundled"]) > 0 and float(row["skipped_actor_updates"]) == 0
    assert 0 < float(row["actor_grad_norm"]) < float("inf")
    assert np.isfinite(float(row["reward"])) and np.isfinite(float(row["tracking_error_m"]))
