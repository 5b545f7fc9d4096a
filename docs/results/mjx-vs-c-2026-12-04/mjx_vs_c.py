"""Why do training episodes end twice as often on stiff contact at 250 Hz as on default contact
at 200 Hz in MJX, when plain MuJoCo rolls the same starting policy about as well on both?

One policy (a checkpoint's deterministic actor), one model at a time, the training task's own
termination tests (``terminated/low|tilted|lost``, simulation failures). Each variant changes
one thing on the way from "as trained" (MJX, exploration noise, BCG forward, reference state
initialization) to "as evaluated" (no noise, the plain step, every episode from frame 0), and
the last part rolls the same model in plain MuJoCo C with bcg-eval's rollout and the same
termination tests. The figure is terminations per 256 environment steps (one cpu-small SHAC
iteration: 8 envs x 32 steps), with episodes reset as in training.

Usage (from the repository root; the MJX part compiles one program per model variant):

    PYTHONPATH=. .venv/bin/python docs/results/mjx-vs-c-2026-12-04/mjx_vs_c.py mjx CHECKPOINT OUT.json
    PYTHONPATH=. .venv/bin/python docs/results/mjx-vs-c-2026-12-04/mjx_vs_c.py c POLICY.onnx OUT.json

and, once the engines disagreed, what in MJX makes them disagree (plain step, every episode from
frame 0, no noise, as the C part): ``solver`` runs MJX with 10 Newton and 10 line-search
iterations instead of the train model's 3 and 4; ``float64`` runs MJX in float64:

    PYTHONPATH=. .venv/bin/python docs/results/mjx-vs-c-2026-12-04/mjx_vs_c.py solver CHECKPOINT OUT.json
    PYTHONPATH=. .venv/bin/python docs/results/mjx-vs-c-2026-12-04/mjx_vs_c.py float64 CHECKPOINT OUT.json
"""

from __future__ import annotations

import dataclasses
import json
import sys
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).parent
STIFF250 = HERE.parent / "squat-stiff250-2026-12-04" / "squat_stiff250.yaml"
DEFAULT200 = HERE.parent / "squat-finetune-2026-12-04" / "squat_finetune.yaml"
NUM_ENVS, CHUNK, CHUNKS = 16, 40, 10  # 16 envs x 400 control steps (8 s) per run
PER = 256  # environment steps of one cpu-small iteration
C_SEEDS = range(40)


def mjx_part(checkpoint: Path, out: Path, follow_up: str = "") -> None:
    import jax
    import jax.numpy as jnp
    from tqdm import tqdm

    from bcg_train.learn.config import load_train_config
    from bcg_train.learn.networks import policy_action
    from bcg_train.learn.train import load_checkpoint, make_task
    from bcg_train.sim.failure import SIM_FAILURES
    from bcg_train.tasks.rewards import TERMINATION_METRIC_PREFIX, TERMINATION_REASONS

    ckpt = load_checkpoint(checkpoint)
    actor, stats = jax.tree_util.tree_map(jnp.asarray, ckpt.state.actor), jax.tree_util.tree_map(jnp.asarray, ckpt.state.obs_stats)
    names = [TERMINATION_METRIC_PREFIX + r for r in TERMINATION_REASONS] + [SIM_FAILURES]

    def variant(cfg_path: Path, **task_changes):
        cfg = load_train_config(cfg_path)
        bcg = dataclasses.replace(cfg.task.bcg, **task_changes.pop("bcg", {}))
        return dataclasses.replace(cfg, task=dataclasses.replace(cfg.task, bcg=bcg, **task_changes))

    # (name, config, exploration noise std values run on the same compiled program)
    variants = [
        ("stiff 250 Hz, BCG mean forward, RSI", variant(STIFF250), (0.05, 0.0)),
        ("stiff 250 Hz, BCG nominal forward, RSI", variant(STIFF250, bcg={"forward": "nominal"}), (0.05,)),
        ("stiff 250 Hz, plain step, RSI", variant(STIFF250, bcg={"mode": "plain"}), (0.05, 0.0)),
        ("stiff 250 Hz, plain step, from frame 0", variant(STIFF250, bcg={"mode": "plain"}, reference_state_init=False), (0.0,)),
        ("default 200 Hz, BCG mean forward, RSI", variant(DEFAULT200), (0.05, 0.0)),
        ("default 200 Hz, plain step, from frame 0", variant(DEFAULT200, bcg={"mode": "plain"}, reference_state_init=False), (0.0,)),
    ]
    frame0 = {"bcg": {"mode": "plain"}, "reference_state_init": False}
    if follow_up == "solver":
        import bcg_train.tasks.imitation as imitation

        built = imitation.training_model

        def more_iterations(task_cfg, robot):
            model = built(task_cfg, robot)
            model.opt.iterations, model.opt.ls_iterations = 10, 10
            return model

        imitation.training_model = more_iterations  # the task builds its model through this name
        variants = [(f"{m}, plain step, from frame 0, 10/10 solver iterations", variant(p, **frame0), (0.0,))
                    for m, p in (("stiff 250 Hz", STIFF250), ("default 200 Hz", DEFAULT200))]
    elif follow_up == "float64":
        variants = [(f"{m}, plain step, from frame 0, float64", variant(p, **frame0), (0.0,))
                    for m, p in (("stiff 250 Hz", STIFF250), ("default 200 Hz", DEFAULT200))]
    rows = []
    for name, cfg, noises in variants:
        task = make_task(cfg)
        shac = cfg.shac

        def chunk(env, key, noise_std):
            def body(env, k):
                obs = task.observe(env)
                eps = noise_std * jax.random.normal(k, (NUM_ENVS, task.action_size))
                action = jnp.clip(policy_action(actor, stats, obs, shac.obs_clip, shac.action_clip) + eps, -shac.action_clip, shac.action_clip)
                action = action.astype(jnp.float32)  # float64 observations under x64
                env, step = task.step(env, action)
                return env, (jnp.stack([step.metrics[n].sum() for n in names]), step.metrics["bundled"].mean(),
                             step.metrics["bundle_overflow"].mean())

            return jax.lax.scan(body, env, jax.random.split(key, CHUNK))

        run = jax.jit(chunk)
        t0 = time.time()
        env0 = task.reset(jax.random.PRNGKey(0), NUM_ENVS)
        compiled = run.lower(env0, jax.random.PRNGKey(1), jnp.float32(0.0)).compile()
        compile_s = time.time() - t0
        for noise in noises:
            env, counts, bundled, overflow = env0, np.zeros(len(names)), [], []
            t1 = time.time()
            for i in tqdm(range(CHUNKS), desc=f"{name}, noise {noise}", leave=False):
                env, (c, b, o) = compiled(env, jax.random.PRNGKey(100 + i), jnp.float32(noise))
                counts += np.asarray(c).sum(axis=0)
                bundled.append(np.asarray(b))
                overflow.append(np.asarray(o))
            steps = NUM_ENVS * CHUNK * CHUNKS
            per = {n.removeprefix(TERMINATION_METRIC_PREFIX): float(v) * PER / steps for n, v in zip(names, counts)}
            row = {"variant": name, "engine": "mjx", "noise_std": noise, "env_steps": steps,
                   "ends_per_256": sum(per.values()), "by_reason_per_256": per,
                   "bundled_fraction": float(np.mean(bundled)), "overflow_fraction": float(np.mean(overflow)),
                   "compile_s": round(compile_s, 1), "run_s": round(time.time() - t1, 1)}
            rows.append(row)
            print(f"{name:<45} noise {noise:<5} ends/256 {row['ends_per_256']:.2f}  "
                  + "  ".join(f"{k} {v:.2f}" for k, v in per.items()) + f"  bundled {row['bundled_fraction']:.3f}", flush=True)
            out.write_text(json.dumps({"checkpoint": str(checkpoint), "rows": rows}, indent=2) + "\n")
        del task, run, compiled
        jax.clear_caches()


def c_part(policy_path: Path, out: Path) -> None:
    from tqdm import tqdm

    from bcg_robot.config import load_robot_config
    from bcg_robot.onnx_policy import OnnxPolicy
    from bcg_robot.paths import share_file
    from bcg_train.evaluate.rollout import rollout
    from bcg_train.learn.config import load_train_config
    from bcg_train.motion.reference import load_reference_motion
    from bcg_train.tasks.imitation import training_model
    from bcg_train.tasks.rewards import tilt_cos

    robot = load_robot_config()
    policy = OnnxPolicy.load(policy_path, robot)
    reference = load_reference_motion(share_file(f"models/motions/{policy.contract.motion_id}.csv"), robot)
    rows = []
    for name, cfg_path in (("stiff 250 Hz, from frame 0", STIFF250), ("default 200 Hz, from frame 0", DEFAULT200)):
        cfg = load_train_config(cfg_path)
        model, term = training_model(cfg.task, robot), cfg.task.termination
        ends = {"low": 0, "tilted": 0}
        steps = 0
        for seed in tqdm(C_SEEDS, desc=name, leave=False):
            first = []

            def on_frame(data, t, first=first):
                if first:
                    return
                if data.qpos[2] < term.min_root_height:
                    first.append(("low", t))
                elif tilt_cos(data.qpos[3:7]) < np.cos(term.max_tilt):
                    first.append(("tilted", t))

            result = rollout(policy, model, robot, reference, seed, 8.0, cfg.task.domain, on_frame=on_frame)
            if first:
                ends[first[0][0]] += 1
                steps += int(round(first[0][1] / robot.control_dt)) + 1
            else:
                steps += len(result.time)
        per = {k: v * PER / steps for k, v in ends.items()}
        row = {"variant": name, "engine": "mujoco C", "noise_std": 0.0, "env_steps": steps, "episodes": len(C_SEEDS),
               "ends_per_256": sum(per.values()), "by_reason_per_256": per}
        rows.append(row)
        print(f"{name:<45} C  ends/256 {row['ends_per_256']:.2f}  " + "  ".join(f"{k} {v:.2f}" for k, v in per.items())
              + f"  ({sum(ends.values())} ends in {steps} steps)", flush=True)
    out.write_text(json.dumps({"policy": str(policy_path), "seeds": [C_SEEDS.start, C_SEEDS.stop - 1], "rows": rows}, indent=2) + "\n")


def float64_part(checkpoint: Path, out: Path) -> None:
    import functools

    import bcg_train.tasks.imitation as imitation
    from bcg_train.sim.jax_setup import enable_float64

    enable_float64()
    imitation.SimConfig = functools.partial(imitation.SimConfig, float64=True)  # the task's MjxSim in float64
    mjx_part(checkpoint, out, "float64")


if __name__ == "__main__":
    part, source, target = sys.argv[1], Path(sys.argv[2]), Path(sys.argv[3])
    parts = {"mjx": mjx_part, "c": c_part, "float64": float64_part,
             "solver": lambda checkpoint, out: mjx_part(checkpoint, out, "solver")}
    parts[part](source, target)
