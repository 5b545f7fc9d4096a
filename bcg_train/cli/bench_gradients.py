"""``bcg-bench-gradients``: gradient variance of plain vs BCG vs global smoothing on the G1 landing
(see :mod:`bcg_train.bench.gradient_variance`); prints the comparison table and writes
``gradient_variance.json`` and ``gradient_variance.png`` to ``--out-dir``."""

from __future__ import annotations

import argparse
import dataclasses
import json
import time
from pathlib import Path

import jax

from bcg_robot.cli.arguments import nonnegative_float, nonnegative_int, positive_float, positive_int
from bcg_robot.errors import exit_on_input_error
from bcg_robot.model import check_physics_dt
from bcg_robot.paths import output_dir
from bcg_train.bcg.config import Estimator
from bcg_train.bench.gradient_variance import BenchSettings, check_targets, comparison_rows, run_benchmark, write_plot
from bcg_train.sim.jax_setup import enable_compilation_cache, enable_float64

DESCRIPTION = "gradient variance of plain vs BCG vs global smoothing"

def parse_args(argv=None) -> tuple[BenchSettings, Path]:
    d = BenchSettings()
    p = argparse.ArgumentParser(prog="bcg-bench-gradients", description=DESCRIPTION)
    p.add_argument("--num-starts", type=positive_int, default=d.num_starts, help="K perturbed starts (gradient samples)")
    p.add_argument("--horizon", type=positive_int, default=d.horizon, help="control steps (50 Hz)")
    p.add_argument("--drop-height", type=nonnegative_float, default=d.drop_height, help="m above the standing height")
    p.add_argument("--qpos-noise", type=nonnegative_float, default=d.qpos_noise)
    p.add_argument("--branches", type=positive_int, default=d.num_branches, help="B")
    p.add_argument("--bundle-steps", type=positive_int, default=d.bundle_steps, help="H")
    p.add_argument("--tau", type=nonnegative_float, default=d.force_threshold, help="trigger: peak contact normal force, N")
    p.add_argument("--repeats", type=positive_int, default=d.repeats, help="timed gradient calls after the compile")
    p.add_argument("--presets", nargs="+", default=list(d.presets), choices=["soft", "default", "stiff"])
    p.add_argument("--estimators", nargs="+", default=list(d.estimators), choices=[e.value for e in Estimator])
    p.add_argument("--physics-dt", type=positive_float, default=d.physics_dt, help="s, within the train model's range")
    p.add_argument("--solver-iterations", type=positive_int, default=None,
                   help="the train model's Newton iterations (default: bcg_robot.model's, 4)")
    p.add_argument("--float64", action="store_true")
    p.add_argument("--seed", type=nonnegative_int, default=d.seed)
    p.add_argument("--out-dir", type=Path, default=Path("runs/bench_gradients"))
    a = p.parse_args(argv)
    if a.num_starts < 2:
        p.error(f"--num-starts must be >= 2 (a variance needs two gradients), got {a.num_starts}")
    try:
        check_physics_dt("train", a.physics_dt)
    except ValueError as err:
        p.error(f"argument --physics-dt: {err}")
    settings = BenchSettings(
        num_starts=a.num_starts,
        horizon=a.horizon,
        drop_height=a.drop_height,
        qpos_noise=a.qpos_noise,
        num_branches=a.branches,
        bundle_steps=a.bundle_steps,
        force_threshold=a.tau,
        repeats=a.repeats,
        presets=tuple(a.presets),
        estimators=tuple(a.estimators),
        physics_dt=a.physics_dt,
        float64=a.float64,
        seed=a.seed,
        solver_iterations=a.solver_iterations,
    )
    return settings, a.out_dir


def main(argv=None) -> int:
    settings, out_dir = parse_args(argv)
    with exit_on_input_error("bcg-bench-gradients"):  # before the measurement, not after it
        output_dir(out_dir, "--out-dir")
    enable_compilation_cache()
    if settings.float64:
        enable_float64()
    from rich.console import Console
    from rich.table import Table
    from tqdm import tqdm

    console = Console()
    bar = tqdm(total=len(settings.estimators) * len(settings.presets), desc="gradients", unit="run")

    def progress(name, preset, stats):
        bar.set_postfix_str(f"{name}/{preset} trace={stats.covariance_trace:.3g} compile={stats.compile_time_s:.0f}s")
        bar.update(1)

    t0 = time.perf_counter()
    results = run_benchmark(settings, progress)
    bar.close()
    rows = comparison_rows(results)
    targets = check_targets(rows)

    table = Table(title=f"G1 landing, K={settings.num_starts} starts, T={settings.horizon} steps")
    for col in ("preset", "estimator", "var ratio to plain", "90% interval", "max/median norm", "norm CV", "cosine", "s / gradient", "time ratio", "bundles", "non-finite"):
        table.add_column(col, justify="right")
    for r in sorted(rows, key=lambda r: (settings.presets.index(r["preset"]), r["estimator"])):
        table.add_row(
            r["preset"],
            r["estimator"],
            f"{r.get('variance_ratio_to_plain', float('nan')):.3g}",
            "[{:.3g}, {:.3g}]".format(*r.get("variance_ratio_interval_90", (float("nan"), float("nan")))),
            f"{r['max_norm_over_median']:.3g}",
            f"{r['norm_cv']:.3g}",
            f"{r['mean_cosine']:.3f}",
            f"{r['wall_time_per_gradient_s']:.3g}",
            f"{r.get('wall_time_ratio_to_plain', float('nan')):.2f}",
            f"{r['bundles_per_rollout']:.1f}",
            f"{r['num_nonfinite']}/{r['num_samples']}",
        )
    console.print(table)
    for name, ok in targets.items():
        console.print(f"target {name}: {'n/a' if ok is None else ('met' if ok else 'NOT met')}")

    report = {
        "settings": dataclasses.asdict(settings),
        "rows": rows,
        "targets": targets,
        "total_time_s": time.perf_counter() - t0,
        "backend": jax.default_backend(),
    }
    (out_dir / "gradient_variance.json").write_text(json.dumps(report, indent=2))
    write_plot(rows, out_dir / "gradient_variance.png")
    console.print(f"wrote {out_dir / 'gradient_variance.json'} and {out_dir / 'gradient_variance.png'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
