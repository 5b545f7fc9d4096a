"""Sizes the mirror loss's weight before a run: at a checkpoint, over a few training windows, the
norm of the actor gradient of the window's return term against that of the mirror term
(shac.mirror_loss_weight, per unit weight), and the mirror loss itself. Also the first G1
compile of the rollout with the mirror loss in it.

    PYTHONPATH=. .venv/bin/python docs/results/squat-mirror-weight-2026-12-04/measure_gradient_scale.py CHECKPOINT.pkl [WINDOWS]
"""

import dataclasses
import sys
import time

import jax
import numpy as np
import optax

from bcg_train.learn.shac import SHAC, mirror_loss
from bcg_train.learn.train import load_checkpoint, make_task
from bcg_train.sim.jax_setup import enable_compilation_cache


def main(path: str, windows: int = 5) -> None:
    enable_compilation_cache()
    ckpt = load_checkpoint(path)
    cfg = dataclasses.replace(ckpt.config.shac, mirror_loss_weight=1.0)
    task = make_task(ckpt.config)
    shac = SHAC(task, cfg)
    state = shac.shard(jax.tree_util.tree_map(np.asarray, ckpt.state))
    print(f"checkpoint {path}: iteration {int(state.iteration)}, clip mirror error {task.motion_mirror_error:.2g} rad")
    grad = jax.jit(jax.value_and_grad(shac._rollout, has_aux=True))
    mirror_grad = jax.jit(jax.value_and_grad(lambda actor, obs: mirror_loss(
        actor, state.obs_stats, obs, task.mirror_observation, task.mirror_action, cfg.obs_clip, cfg.action_clip)))
    rows = []
    for w, key in enumerate(jax.random.split(jax.random.PRNGKey(0), windows)):
        t = time.perf_counter()
        (_, (env, records, extra)), g_total = grad(state.actor, state, key)
        m, g_mirror = mirror_grad(state.actor, records[0][0])
        g_return = jax.tree_util.tree_map(lambda a, b: a - cfg.mirror_loss_weight * b, g_total, g_mirror)
        rows.append((float(optax.tree.norm(g_return)), float(optax.tree.norm(g_mirror)), float(m), float(extra["mirror_loss"])))
        print(f"window {w}: |grad return| {rows[-1][0]:.3g}, |grad mirror| per unit weight {rows[-1][1]:.3g}, "
              f"mirror loss {rows[-1][2]:.3g} (in the rollout: {rows[-1][3]:.3g}), {time.perf_counter() - t:.0f} s")
        state = dataclasses.replace(state, env=env)
    r = np.array(rows)
    print(f"median |grad return| {np.median(r[:, 0]):.3g}, median |grad mirror| per unit weight {np.median(r[:, 1]):.3g}: "
          f"equal at weight {np.median(r[:, 0]) / np.median(r[:, 1]):.3g}; median mirror loss {np.median(r[:, 2]):.3g}")


if __name__ == "__main__":
    main(sys.argv[1], *(int(x) for x in sys.argv[2:3]))
