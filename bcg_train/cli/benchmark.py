"""bcg-benchmark: SHAC+BCG vs SHAC on stiff contact vs PPO on one imitation task.

Each method trains from the same task config for a fixed budget of iterations; the
benchmark reports the environment steps and wall time until the training tracking
error (mean key-body error over the iteration's steps, averaged over a 5-iteration
window) first falls below ``--threshold`` cm, and the ratios against SHAC+BCG. The
published claim it tests: SHAC+BCG needs >= 10x fewer environment steps than PPO, and
vanilla SHAC on stiff contact stalls. Wall time excludes the first (compiling) iteration.
PPO is brax's PPO trainer (:mod:`bcg_train.learn.ppo_baseline`); its tracking error is
brax's training episode metric (per-step mean over each finished episode, the last 100
episodes), so it trails the policy by up to an episode.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
from pathlib import Path

import numpy as np

from bcg_robot.errors import exit_on_input_error
from bcg_train.learn.config import PRESETS, TRAIN_CONFIG_DIR, load_train_config

METHODS = ("shac_bcg", "shac_stiff", "ppo")
WINDOW = 5


def steps_to_threshold(history: list[dict], threshold_m: float) -> tuple[float | None, float | None]:
    errors = np.array([h["tracking_error_m"] for h in history])
    for i in range(WINDOW - 1, len(errors)):
        if errors[i - WINDOW + 1 : i + 1].mean() < threshold_m:
            return history[i]["env_steps"], history[i]["wall_s"]
    return None, None


def run_shac(cfg, iterations: int) -> list[dict]:
    from bcg_train.learn.train import train

    _, _, history = train(cfg, iterations=iterations, progress=True)
    compiled_at = history[0]["wall_s"]  # the first iteration includes the compile, as for PPO
    return [dict(h, wall_s=h["wall_s"] - compiled_at) for h in history]


def run_ppo(cfg, iterations: int, num_envs: int, seed: int) -> list[dict]:
    """brax's PPO (see :mod:`bcg_train.learn.ppo_baseline`): one row per rollout of all environments."""
    from tqdm import tqdm

    from bcg_train.learn.ppo_baseline import PPOConfig, train_ppo
    from bcg_train.learn.train import make_task

    ppo_cfg = PPOConfig(num_envs=num_envs, iterations=iterations, actor_hidden=cfg.shac.actor_hidden, critic_hidden=cfg.shac.critic_hidden)
    with tqdm(total=iterations, desc="ppo (brax)") as bar:
        def progress(row: dict) -> None:
            bar.update(1)
            bar.set_postfix(reward=f"{row['reward']:.3f}", err_cm=f"{100 * row.get('tracking_error_m', float('nan')):.2f}")

        _, _, history = train_ppo(make_task(cfg), ppo_cfg, seed=seed, progress_fn=progress)
    return history


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="bcg-benchmark", description=__doc__.splitlines()[0])
    parser.add_argument("--task", default="squat", help="default squat (a posture change to learn, not a pose to hold)")
    parser.add_argument("--config", type=Path, default=None)
    parser.add_argument("--preset", choices=PRESETS, default="cpu-small")
    parser.add_argument("--iterations", type=int, default=100, help="iterations per method")
    parser.add_argument("--ppo-envs", type=int, default=64, help="PPO environments (published: 4096)")
    parser.add_argument("--threshold", type=float, default=2.5,
                        help="threshold (cm) on the training's tracking_error_m: world-frame key-body error, drift and the "
                             "steps before a fall included, so not bcg-eval's root-relative E_track")
    parser.add_argument("--methods", nargs="+", choices=METHODS, default=list(METHODS))
    parser.add_argument("--out", type=Path, default=Path("runs/benchmark"))
    args = parser.parse_args(argv)
    with exit_on_input_error(parser.prog):
        base = load_train_config(args.config or TRAIN_CONFIG_DIR / f"{args.task}.yaml", args.preset)
        results = {}
        for method in args.methods:
            run_dir = str(args.out / method)
            if method == "shac_bcg":
                cfg = dataclasses.replace(base, run_dir=run_dir, task=dataclasses.replace(base.task, contact="stiff", bcg=dataclasses.replace(base.task.bcg, mode="bcg")))
                history = run_shac(cfg, args.iterations)
            elif method == "shac_stiff":
                cfg = dataclasses.replace(base, run_dir=run_dir, task=dataclasses.replace(base.task, contact="stiff", bcg=dataclasses.replace(base.task.bcg, mode="plain")))
                history = run_shac(cfg, args.iterations)
            else:
                cfg = dataclasses.replace(base, run_dir=run_dir, task=dataclasses.replace(base.task, contact="stiff"))
                history = run_ppo(cfg, args.iterations, args.ppo_envs, base.seed)
            steps, wall = steps_to_threshold(history, args.threshold / 100.0)
            results[method] = {
                "env_steps_to_threshold": steps, "wall_s_to_threshold": wall,
                "final_tracking_error_cm": 100 * history[-1]["tracking_error_m"], "final_reward": history[-1]["reward"],
                "env_steps_total": history[-1]["env_steps"], "wall_s_total": history[-1]["wall_s"],
            }
        print(f"threshold {args.threshold:g} cm (mean over {WINDOW} iterations), task {args.task}, preset {args.preset}")
        print(f"{'method':<11} {'steps to thr.':>14} {'wall s to thr.':>15} {'final E cm':>10} {'total steps':>12}")
        for m, r in results.items():
            s = f"{r['env_steps_to_threshold']:.0f}" if r["env_steps_to_threshold"] is not None else "not reached"
            w = f"{r['wall_s_to_threshold']:.0f}" if r["wall_s_to_threshold"] is not None else "-"
            print(f"{m:<11} {s:>14} {w:>15} {r['final_tracking_error_cm']:>10.2f} {r['env_steps_total']:>12.0f}")
        ref = results.get("shac_bcg", {}).get("env_steps_to_threshold")
        for m in ("ppo", "shac_stiff"):
            other = results.get(m, {}).get("env_steps_to_threshold")
            if ref and other:
                print(f"env-step ratio {m} / shac_bcg: {other / ref:.1f}x")
        args.out.mkdir(parents=True, exist_ok=True)
        (args.out / "benchmark.json").write_text(json.dumps(results, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
