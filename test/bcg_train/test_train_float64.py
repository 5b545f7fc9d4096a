"""``task.float64``: a G1 training iteration with the simulator in float64 and the learner in
float32. The process turns on jax_enable_x64 itself (``make_task``), and the flag is
process-wide, so the check runs in a subprocess.

The initial state is only traced (``jax.eval_shape`` of ``SHAC.init``: compiling the float64
reset took half of the test's 169 s), and the iteration is traced and lowered, not compiled:
every dtype of its carried state is then fixed (``Lowered.out_info``), and a float64 primal meeting a float32 cotangent in a custom
VJP (the bundle, the guarded step, the state clip) fails right there, in tracing. XLA's
compile of a G1 SHAC + BCG iteration is most of its cost (a cold float64 one took 465 s
of a 26 min trainer suite on the 2-core CI machine); the float32 iteration is compiled and
run end to end by the GPU script's CPU mode (test_gpu_train_script.py). What this leaves
unrun in the suite: float64 numbers through contact and the bundle (bundles firing, a finite
update); float64 physics and its gradient run only without contact, on the toy leg
(test_bcg_sim_core.py), and ``bcg-bench-gradients --float64`` runs the rest."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

PROBE = """
import json, sys
import jax
from bcg_train.learn.config import load_train_config
from bcg_train.learn.shac import SHAC
from bcg_train.learn.train import make_task

cfg = load_train_config(sys.argv[1], preset="cpu-tiny", overrides={"run_dir": sys.argv[2]})
task = make_task(cfg)  # turns on jax_enable_x64
shac = SHAC(task, cfg.shac, 1)
state = jax.eval_shape(shac.init, 0)  # shapes and dtypes only: the reset is traced, not compiled
after, metrics = jax.jit(shac.iteration).lower(state).out_info

def dtypes(tree):
    return sorted({str(x.dtype) for x in jax.tree_util.tree_leaves(tree)})

print(json.dumps({
    "x64": bool(jax.config.jax_enable_x64), "bundled_mode": cfg.task.bcg.mode.value,
    "qpos": [str(s.env.sim.sim.data.qpos.dtype) for s in (state, after)],
    "qvel": [str(s.env.sim.sim.data.qvel.dtype) for s in (state, after)],
    "learner": [dtypes((s.actor, s.critics, s.obs_stats)) for s in (state, after)],
    "actions": [[str(s.env.last_action.dtype), str(s.env.pending_action.dtype)] for s in (state, after)],
    "metrics": sorted(metrics),
}))
"""


@pytest.mark.slow  # a G1 trace (conftest.G1_MODULES)
def test_float64_jump_iteration_simulates_in_float64_and_learns_in_float32(tmp_path):
    config = tmp_path / "jump_float64.yaml"
    config.write_text(f"extends: {ROOT / 'config' / 'train' / 'jump.yaml'}\ntask:\n  float64: true\n")
    done = subprocess.run([sys.executable, "-c", PROBE, str(config), str(tmp_path / "run")],
                          capture_output=True, text=True, cwd=ROOT, timeout=1500)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    seen = json.loads(done.stdout.strip().splitlines()[-1])

    assert seen["x64"] and seen["bundled_mode"] == "bcg"  # SHAC + BCG: the float64 bundle is traced
    # the physics runs in 64 bits, before and after an iteration
    assert seen["qpos"] == ["float64", "float64"] and seen["qvel"] == ["float64", "float64"]
    # the learner does not: networks, normalizer and the task's own carried actions stay float32
    assert seen["learner"] == [["float32"], ["float32"]]
    assert seen["actions"] == [["float32", "float32"], ["float32", "float32"]]
    assert {"reward", "actor_grad_norm", "bundled", "skipped_actor_updates"} <= set(seen["metrics"])
