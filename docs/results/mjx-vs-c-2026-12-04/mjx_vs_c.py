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
    if follow_up in ("solver", "solver-split", "solver-sweep"):
        import bcg_train.tasks.imitation as imitation

        built = imitation.training_model
        counts = {"solver": [(10, 10)], "solver-split": [(10, 4), (3, 10)], "solver-sweep": [(4, 4), (6, 4)]}[follow_up]
        models = (("stiff 250 Hz", STIFF250), ("default 200 Hz", DEFAULT200)) if follow_up == "solver" else (("stiff 250 Hz", STIFF250),)
        variants = []
        for newton, line_search in counts:
            def with_iterations(task_cfg, robot, newton=newton, line_search=line_search):
                model = built(task_cfg, robot)
                model.opt.iterations, model.opt.ls_iterations = newton, line_search
                return model

            for m, p in models:  # the task builds its model through imitation.training_model
                variants.append((f"{m}, plain step, from frame 0, {newton}/{line_search} solver iterations",
                                 (variant(p, **frame0), with_iterations), (0.0,)))
    elif follow_up == "float64":
        variants = [(f"{m}, plain step, from frame 0, float64", variant(p, **frame0), (0.0,))
                    for m, p in (("stiff 250 Hz", STIFF250), ("default 200 Hz", DEFAULT200))]
    rows = []
    for name, cfg, noises in variants:
        if isinstance(cfg, tuple):
            cfg, imitation.training_model = cfg
        task = make_task(cfg)
        if follow_up == "float64":  # the randomized model fields in the sim's precision
            task.base_friction, task.base_mass = (jnp.asarray(x, jnp.float64) for x in (task.base_friction, task.base_mass))
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
    """Each rollout ends at its first termination (the task's low / tilted tests) or at its
    first state outside the task's simulation bounds (``sim_failures`` in MJX: bcg_train.sim.failure),
    checked after every control step as the MJX task checks them."""
    from tqdm import tqdm

    from bcg_robot.config import load_robot_config
    from bcg_robot.model import joint_dof_indices
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
    speed_limit = np.asarray(robot.velocity)
    rows = []
    for name, cfg_path in (("stiff 250 Hz, from frame 0", STIFF250), ("default 200 Hz, from frame 0", DEFAULT200)):
        cfg = load_train_config(cfg_path)
        model, term, bounds = training_model(cfg.task, robot), cfg.task.termination, cfg.task.sim_bounds
        di = joint_dof_indices(model, robot)
        ends = {"low": 0, "tilted": 0, "sim_failures": 0}
        failures = {"non-finite": 0, "joint speed": 0, "root height": 0, "root speed": 0, "root distance": 0}
        steps = 0
        for seed in tqdm(C_SEEDS, desc=name, leave=False):
            first = []

            def on_frame(data, t, first=first):
                if first:
                    return
                k = int(round(t / robot.control_dt))
                ref_root = reference.root_pos[(k + 1) % reference.num_frames]
                failed = {
                    "non-finite": not (np.isfinite(data.qpos).all() and np.isfinite(data.qvel).all()),
                    "joint speed": bool(np.any(np.abs(data.qvel[di]) > bounds.joint_speed_factor * speed_limit)),
                    "root height": data.qpos[2] > bounds.max_root_height,
                    "root speed": np.linalg.norm(data.qvel[:3]) > bounds.max_root_speed,
                    "root distance": np.linalg.norm(data.qpos[:3] - ref_root) > bounds.max_root_distance,
                }
                if any(failed.values()):
                    first.append(("sim_failures", t, [n for n, hit in failed.items() if hit]))
                elif data.qpos[2] < term.min_root_height:
                    first.append(("low", t, []))
                elif tilt_cos(data.qpos[3:7]) < np.cos(term.max_tilt):
                    first.append(("tilted", t, []))

            result = rollout(policy, model, robot, reference, seed, 8.0, cfg.task.domain, on_frame=on_frame)
            if first:
                reason, t, which = first[0]
                ends[reason] += 1
                for n in which:
                    failures[n] += 1
                steps += int(round(t / robot.control_dt)) + 1
            else:
                steps += len(result.time)
        per = {k: v * PER / steps for k, v in ends.items()}
        row = {"variant": name, "engine": "mujoco C", "noise_std": 0.0, "env_steps": steps, "episodes": len(C_SEEDS),
               "ends_per_256": sum(per.values()), "by_reason_per_256": per, "ends": ends, "failed_bounds": failures}
        rows.append(row)
        print(f"{name:<45} C  ends/256 {row['ends_per_256']:.2f}  " + "  ".join(f"{k} {v:.2f}" for k, v in per.items())
              + f"  ({sum(ends.values())} ends in {steps} steps; bounds {failures})", flush=True)
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
             "solver": lambda checkpoint, out: mjx_part(checkpoint, out, "solver"),
             "solver-split": lambda checkpoint, out: mjx_part(checkpoint, out, "solver-split"),
             "solver-sweep": lambda checkpoint, out: mjx_part(checkpoint, out, "solver-sweep")}
    parts[part](source, target)
