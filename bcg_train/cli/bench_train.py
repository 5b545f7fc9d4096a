"""bcg-bench-train: what one SHAC iteration costs, per task, batch size and gradient estimator.

For every ``num_envs`` and estimator (``plain``, ``bcg``) one worker process (so that its
peak resident memory is its own) builds the task, compiles the jitted SHAC iteration and
times it. Reported per row:

* ``compile_s``: the first call's time (trace, lower, XLA compile, one iteration) less
  one iteration's median (the persistent cache is off in the worker: a cold compile);
* ``peak_rss_gb``: the worker's peak resident memory (compile included);
* ``s_per_iteration``: median over ``--iterations`` (>= 5) iterations after the compile
  (``s_each_iteration`` and ``bundled_each_iteration`` list them all);
* ``env_steps_per_s``: ``num_envs * horizon / s_per_iteration``;
* ``s_per_iteration_mean`` and ``env_steps_per_s_mean``: the same from the mean of the timed
  iterations, which is what a training run pays. A BCG iteration costs what its bundles
  cost, and bundles come in bursts: in a 5-iteration run one iteration that bundled 14 % of
  its steps took 2.8x the others, and the median did not see it (:func:`add_means`);
* ``bundled_fraction``: environment steps inside a BCG bundle; ``overflow_fraction``:
  steps that needed a bundle but found all ``bundle_slots`` taken (they stepped plain);
* ``s_rollout_backward`` and ``s_critic_update``: the split of an iteration; the critic
  update (``critic_iterations`` passes over the window) is compiled and timed on its own,
  the rest of the iteration (rollout, backward pass, actor step) is the difference.

Ratios come from the same run: BCG over plain at each ``num_envs`` (and solver iteration
count), of the medians and of the means; with several ``--solver-iterations``, each row over the row of the first count.
Output: a table on stdout and a JSON file ``{"rows": [...], "ratios": [...],
"solver_ratios": [...], "settings": {...}}``.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from bcg_robot.cli.arguments import nonnegative_float, positive_float, positive_int
from bcg_robot.errors import exit_on_input_error
from bcg_robot.model import check_physics_dt
from bcg_robot.paths import output_file
from bcg_train.learn.config import PRESETS, TRAIN_CONFIG_DIR, load_train_config

ESTIMATORS = ("plain", "bcg")
HOPPER = "hopper"
ROW_KEYS = ("task", "num_envs", "estimator", "compile_s", "peak_rss_gb", "s_per_iteration", "env_steps_per_s", "bundled_fraction")


@dataclasses.dataclass(frozen=True)
class BenchSpec:
    """One worker's job."""

    task: str  # a config/train task name, or "hopper"
    preset: str | None
    num_envs: int
    estimator: str
    iterations: int
    horizon: int | None = None  # None: the task config's
    contact: str | None = None  # None: the task config's
    bundle_slots: int | None = None  # None: the task config's
    force_threshold: float | None = None  # BCG's trigger tau in N; None: the task config's
    physics_dt: float | None = None  # G1 tasks: the train model's physics step; None: the config's
    solver_iterations: int | None = None  # G1 tasks: the train model's Newton iterations; None: the config's


def _learner_and_task(spec: BenchSpec):
    from bcg_train.bcg.config import Estimator

    mode = Estimator.BCG if spec.estimator == "bcg" else Estimator.PLAIN
    if spec.task == HOPPER:
        from bcg_train.claim.protocol import ClaimProtocol
        from bcg_train.tasks.hopper import HopperTask

        protocol = ClaimProtocol()
        cfg = protocol.task
        bcg = dataclasses.replace(cfg.bcg, mode=mode, bundle_slots=protocol.bundle_slots if spec.bundle_slots is None else spec.bundle_slots)
        if spec.force_threshold is not None:
            bcg = dataclasses.replace(bcg, force_threshold=spec.force_threshold)
        cfg = dataclasses.replace(cfg, bcg=bcg, contact=spec.contact or "stiff")
        shac = protocol.shac
        task = HopperTask(cfg)
    else:
        from bcg_train.learn.config import TRAIN_CONFIG_DIR, load_train_config
        from bcg_train.learn.train import make_task

        overrides: dict[str, Any] = {"task": {"bcg": {"mode": mode.value}}}
        if spec.bundle_slots is not None:
            overrides["task"]["bcg"]["bundle_slots"] = spec.bundle_slots
        if spec.contact is not None:
            overrides["task"]["contact"] = spec.contact
        if spec.force_threshold is not None:
            overrides["task"]["bcg"]["force_threshold"] = spec.force_threshold
        if spec.physics_dt is not None:
            overrides["task"]["physics_dt"] = spec.physics_dt
        if spec.solver_iterations is not None:
            overrides["task"]["solver_iterations"] = spec.solver_iterations
        train_cfg = load_train_config(TRAIN_CONFIG_DIR / f"{spec.task}.yaml", spec.preset, overrides)
        train_cfg.validate()
        shac, task = train_cfg.shac, make_task(train_cfg)
    shac = dataclasses.replace(shac, num_envs=spec.num_envs, horizon=spec.horizon or shac.horizon)
    shac.validate()
    return task, shac


def run_worker(spec: BenchSpec) -> dict[str, Any]:
    """Compile and time one configuration in this process (see the module docstring)."""
    import jax
    import numpy as np

    from bcg_train.learn.shac import SHAC

    task, shac_cfg = _learner_and_task(spec)
    shac = SHAC(task, shac_cfg, num_devices=1)
    state = shac.init(0)
    step = shac.jit_iteration(state)
    t0 = time.perf_counter()
    state, metrics = step(state)  # compiles
    jax.block_until_ready(metrics)
    first_s = time.perf_counter() - t0

    times, bundled, overflow, failures = [], [], [], 0.0
    for _ in range(spec.iterations):
        t = time.perf_counter()
        state, metrics = step(state)
        metrics = jax.device_get(metrics)
        times.append(time.perf_counter() - t)
        bundled.append(float(metrics["bundled"]))
        overflow.append(float(metrics.get("bundle_overflow", 0.0)))
        failures += float(metrics.get("sim_failures", 0.0))

    # the critic update alone, on a window of the right shape (first call compiles)
    h, k = shac_cfg.horizon, shac_cfg.num_envs
    obs = np.zeros((h, k, task.obs_size), np.float32)
    privileged = np.zeros((h, k, shac.privileged_size), np.float32)
    targets = np.zeros((h, k), np.float32)
    critic = jax.jit(shac._critic_update)
    jax.block_until_ready(critic(state, obs, privileged, targets, state.rng))
    critic_times = []
    for _ in range(spec.iterations):
        t = time.perf_counter()
        jax.block_until_ready(critic(state, obs, privileged, targets, state.rng))
        critic_times.append(time.perf_counter() - t)

    s_iter = statistics.median(times)
    s_critic = statistics.median(critic_times)
    compile_s = first_s - s_iter  # the first call compiles, then runs one iteration
    row = {
        "task": spec.task,
        "num_envs": k,
        "estimator": spec.estimator,
        "compile_s": round(compile_s, 2),
        "peak_rss_gb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024**2, 2),
        "s_per_iteration": round(s_iter, 4),
        "env_steps_per_s": round(k * h / s_iter, 1),
        "bundled_fraction": round(float(np.mean(bundled)), 4),
        "overflow_fraction": round(float(np.mean(overflow)), 4),
        "bundle_slots": task.bsim.config.bundle_slots,
        "force_threshold": task.bsim.config.force_threshold,
        "physics_dt": float(task.mj_model.opt.timestep),
        "solver_iterations": int(task.mj_model.opt.iterations),
        "s_rollout_backward": round(max(s_iter - s_critic, 0.0), 4),
        "s_critic_update": round(s_critic, 4),
        "horizon": h,
        "sim_failures": failures,
        "iterations_timed": spec.iterations,
        # every timed iteration, with its bundled fraction: the spread the median hides
        # (a BCG iteration's cost follows how many of its steps bundled)
        "s_each_iteration": [round(x, 4) for x in times],
        "bundled_each_iteration": [round(x, 4) for x in bundled],
    }
    return add_means(row)


def add_means(row: dict[str, Any]) -> dict[str, Any]:
    """``row`` with ``s_per_iteration_mean`` and ``env_steps_per_s_mean`` from its
    ``s_each_iteration`` (rows written before these fields existed gain them the same way)."""
    mean = statistics.fmean(row["s_each_iteration"])
    return {**row, "s_per_iteration_mean": round(mean, 4),
            "env_steps_per_s_mean": round(row["num_envs"] * row["horizon"] / mean, 1)}


def ratios(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Each BCG row over the plain row of its (task, num_envs, solver iterations), where both ran."""
    key = lambda r: (r["task"], r["num_envs"], r.get("solver_iterations"))
    plain = {key(r): r for r in rows if r["estimator"] == "plain"}
    out = []
    for bcg in rows:
        base = plain.get(key(bcg))
        if bcg["estimator"] != "bcg" or base is None:
            continue
        out.append({
            "task": bcg["task"], "num_envs": bcg["num_envs"],
            **({"force_threshold": bcg["force_threshold"]} if "force_threshold" in bcg else {}),
            **({"solver_iterations": bcg["solver_iterations"]} if "solver_iterations" in bcg else {}),
            "bcg_over_plain_s_per_iteration": round(bcg["s_per_iteration"] / base["s_per_iteration"], 2),
            **({"bcg_over_plain_s_per_iteration_mean": round(bcg["s_per_iteration_mean"] / base["s_per_iteration_mean"], 2)}
               if "s_per_iteration_mean" in bcg and "s_per_iteration_mean" in base else {}),
            "bcg_over_plain_compile_s": round(bcg["compile_s"] / base["compile_s"], 2),
            "bcg_over_plain_peak_rss_gb": round(bcg["peak_rss_gb"] / base["peak_rss_gb"], 2),
        })
    return out


def solver_ratios(rows: list[dict[str, Any]], counts: list[int] | None) -> list[dict[str, Any]]:
    """With several solver iteration counts: each row over the row of the first count with
    the same task, num_envs, estimator and trigger threshold."""
    if not counts or len(counts) < 2:
        return []
    key = lambda r: (r["task"], r["num_envs"], r["estimator"], r.get("force_threshold"))
    base = {key(r): r for r in rows if r.get("solver_iterations") == counts[0]}
    out = []
    for r in rows:
        b = base.get(key(r))
        if b is None or r is b:
            continue
        out.append({
            "task": r["task"], "num_envs": r["num_envs"], "estimator": r["estimator"],
            "solver_iterations": r["solver_iterations"], "over_solver_iterations": counts[0],
            "s_per_iteration_ratio": round(r["s_per_iteration"] / b["s_per_iteration"], 2),
            "compile_s_ratio": round(r["compile_s"] / b["compile_s"], 2),
            "peak_rss_gb_ratio": round(r["peak_rss_gb"] / b["peak_rss_gb"], 2),
        })
    return out


def format_table(rows: list[dict[str, Any]], ratio_rows: list[dict[str, Any]], solver_rows: list[dict[str, Any]] = ()) -> str:
    head = (f"{'task':<10} {'envs':>5} {'estimator':<9} {'solver':>6} {'compile s':>9} {'peak GB':>8} {'s/iter':>8} {'mean s/it':>9} {'steps/s':>8} {'bundled':>8} "
            f"{'overflow':>8} {'rollout+bwd s':>13} {'critic s':>9}")
    lines = [head, "-" * len(head)]
    for r in rows:
        lines.append(
            f"{r['task']:<10} {r['num_envs']:>5} {r['estimator']:<9} {r.get('solver_iterations', '-'):>6} {r['compile_s']:>9.1f} {r['peak_rss_gb']:>8.2f} "
            f"{r['s_per_iteration']:>8.3f} {r.get('s_per_iteration_mean', float('nan')):>9.3f} {r['env_steps_per_s']:>8.1f} {r['bundled_fraction']:>8.3f} {r.get('overflow_fraction', 0.0):>8.3f} "
            f"{r['s_rollout_backward']:>13.3f} {r['s_critic_update']:>9.3f}"
        )
    for q in ratio_rows:
        tau = f" (tau {q['force_threshold']:g} N)" if q.get("force_threshold") is not None else ""
        tau += f" ({q['solver_iterations']} solver iterations)" if q.get("solver_iterations") is not None else ""
        mean = (f" (median; {q['bcg_over_plain_s_per_iteration_mean']:.2f}x by the mean)"
                if "bcg_over_plain_s_per_iteration_mean" in q else "")
        lines.append(f"{q['task']} x{q['num_envs']}{tau}: BCG / plain = {q['bcg_over_plain_s_per_iteration']:.2f}x per iteration{mean}, "
                     f"{q['bcg_over_plain_compile_s']:.2f}x compile, {q['bcg_over_plain_peak_rss_gb']:.2f}x peak memory")
    for q in solver_rows:
        lines.append(f"{q['task']} x{q['num_envs']} {q['estimator']}: {q['solver_iterations']} / {q['over_solver_iterations']} solver iterations = "
                     f"{q['s_per_iteration_ratio']:.2f}x per iteration, {q['compile_s_ratio']:.2f}x compile, {q['peak_rss_gb_ratio']:.2f}x peak memory")
    return "\n".join(lines)


def _spawn(spec: BenchSpec) -> dict[str, Any]:
    env = dict(os.environ, JAX_ENABLE_COMPILATION_CACHE="false")  # cold compiles
    cmd = [sys.executable, "-m", "bcg_train.cli.bench_train", "--worker", json.dumps(dataclasses.asdict(spec))]
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env)
    result = [line for line in proc.stdout.splitlines() if line.startswith("{")]
    if proc.returncode != 0 or not result:
        lines = (proc.stderr or proc.stdout).strip().splitlines()
        errors = [line for line in lines if "Error" in line or "Exception" in line]  # the exception, not JAX's footer
        message = (errors or lines or ["no output"])[-1].strip()
        return {"task": spec.task, "num_envs": spec.num_envs, "estimator": spec.estimator, "error": f"exit {proc.returncode}: {message}"}
    return json.loads(result[-1])


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="bcg-bench-train", description=__doc__.split("\n\n")[0])
    p.add_argument("--task", default="squat", help="config/train/<task>.yaml, or 'hopper' (default squat)")
    p.add_argument("--preset", choices=PRESETS, default="cpu-small", help="training preset for G1 tasks (default cpu-small)")
    p.add_argument("--num-envs", type=int, nargs="+", default=[8, 32])
    p.add_argument("--estimators", nargs="+", choices=ESTIMATORS, default=list(ESTIMATORS))
    p.add_argument("--iterations", type=int, default=5, help="timed iterations per row after the compile (>= 5)")
    p.add_argument("--horizon", type=positive_int, default=None, help="override the config's SHAC horizon")
    p.add_argument("--physics-dt", type=positive_float, default=None, help="G1 tasks: the train model's physics step in s (default: the config's)")
    p.add_argument("--solver-iterations", type=int, nargs="+", default=None,
                   help="G1 tasks: the train model's Newton iterations: rows for each value (default: the config's)")
    p.add_argument("--contact", choices=("soft", "default", "stiff"), default="stiff", help="contact preset (default stiff)")
    p.add_argument("--bundle-slots", type=int, nargs="+", default=None,
                   help="BCG's bundle slots M (0: every environment): one value, or one per --num-envs (default: the config's)")
    p.add_argument("--tau", type=nonnegative_float, nargs="+", default=None,
                   help="BCG's trigger force threshold in N: a BCG row for each value (default: the config's)")
    p.add_argument("--out", type=Path, default=Path("runs/bench-train/throughput.json"))
    p.add_argument("--worker", help=argparse.SUPPRESS)
    return p


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.worker:
        with exit_on_input_error(parser.prog):
            print(json.dumps(run_worker(BenchSpec(**json.loads(args.worker)))), flush=True)
        return 0
    if args.iterations < 5:
        parser.error("--iterations must be >= 5 (the median of at least 5)")
    if min(args.num_envs) < 1:
        parser.error("--num-envs must be >= 1")
    slots = args.bundle_slots or [None]
    if len(slots) == 1:
        slots = slots * len(args.num_envs)
    if len(slots) != len(args.num_envs) or any(m is not None and m < 0 for m in slots):
        parser.error("--bundle-slots takes one value >= 0, or one per --num-envs")
    if args.task == HOPPER and (args.physics_dt is not None or args.solver_iterations is not None):
        parser.error("--physics-dt and --solver-iterations are for G1 tasks (the hopper runs the claim's model)")
    if args.solver_iterations is not None and min(args.solver_iterations) < 1:
        parser.error("--solver-iterations must be >= 1")
    from tqdm import tqdm

    preset = None if args.task == HOPPER else args.preset
    specs = [
        BenchSpec(args.task, preset, n, est, args.iterations, args.horizon, args.contact, m, tau, args.physics_dt, solver)
        for solver in (args.solver_iterations or [None])
        for n, m in zip(args.num_envs, slots) for est in args.estimators
        for tau in ([None] if est == "plain" or args.tau is None else args.tau)
    ]
    settings = {k: (str(v) if isinstance(v, Path) else v) for k, v in vars(args).items() if k != "worker"}
    if args.physics_dt is not None:
        try:
            check_physics_dt("train", args.physics_dt)
        except ValueError as err:
            parser.error(f"--physics-dt: {err}")
    with exit_on_input_error(parser.prog):  # before minutes of compiling
        if args.task != HOPPER:  # a missing task or a bad config was found in each worker, a FAILED row each
            load_train_config(TRAIN_CONFIG_DIR / f"{args.task}.yaml", args.preset).validate()
        output_file(args.out, "--out")
    rows, failed = [], []
    for spec in tqdm(specs, desc="bcg-bench-train", dynamic_ncols=True):
        row = _spawn(spec)
        if "error" in row:
            failed.append(row)
            tqdm.write(f"{spec.task} x{spec.num_envs} {spec.estimator}: FAILED ({row['error']})")
        else:
            rows.append(row)
            tqdm.write(f"{spec.task} x{spec.num_envs} {spec.estimator}"
                       f"{'' if spec.force_threshold is None else f' tau {spec.force_threshold:g} N'}"
                       f"{'' if spec.solver_iterations is None else f' {spec.solver_iterations} solver iterations'}: {row['s_per_iteration']:.3f} s/iteration, "
                       f"compile {row['compile_s']:.0f} s, peak {row['peak_rss_gb']:.1f} GB")
        # written after every row: a long run that dies keeps what it measured
        ratio_rows, solver_rows = ratios(rows), solver_ratios(rows, args.solver_iterations)
        args.out.write_text(json.dumps({"rows": rows, "ratios": ratio_rows, "solver_ratios": solver_rows, "failed": failed,
                                        "settings": settings}, indent=2) + "\n")
    print(format_table(rows, ratio_rows, solver_rows))
    print(f"wrote {args.out}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
