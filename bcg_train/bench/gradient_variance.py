"""``bcg-bench-gradients``: gradient variance of plain vs BCG vs global smoothing.

G1 landing from a drop (open-loop actions = hold the default pose), K perturbed starts
(qpos offsets ~ N(0, noise^2) in every tangent direction), at the soft / default / stiff
contact presets. For each estimator and preset it prints the variance ratio to plain
(trace of plain's gradient covariance over the estimator's), the CV of the gradient
norm, the mean cosine to the mean gradient, the wall time per gradient and its ratio
to plain; it writes ``gradient_variance.json`` and ``gradient_variance.png``.

Targets (issue 3): at stiff contact BCG cuts the variance >= 10x versus plain at
<= 2x plain's wall time and <= half of global smoothing's; at soft contact it matches
plain within noise.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import time
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np

from bcg_train.bcg.config import BCGConfig, Estimator
from bcg_train.bcg.bundle import BundledSim
from bcg_train.bcg.diagnostics import (
    GradientStatistics,
    make_open_loop_gradient_fn,
    open_loop_gradient_statistics,
    perturbed_starts,
)
from bcg_train.sim.jax_setup import enable_compilation_cache, enable_float64


@dataclasses.dataclass(frozen=True)
class BenchSettings:
    num_starts: int = 8
    horizon: int = 20
    drop_height: float = 0.2
    qpos_noise: float = 1e-3
    num_branches: int = 10
    bundle_steps: int = 2
    force_threshold: float = 400.0
    repeats: int = 1
    presets: tuple[str, ...] = ("soft", "default", "stiff")
    estimators: tuple[str, ...] = ("plain", "bcg", "global_smoothing")
    physics_dt: float = 0.005
    float64: bool = False
    seed: int = 0


def parse_args(argv=None) -> tuple[BenchSettings, Path]:
    d = BenchSettings()
    p = argparse.ArgumentParser(prog="bcg-bench-gradients", description=__doc__.split("\n\n")[0])
    p.add_argument("--num-starts", type=int, default=d.num_starts, help="K perturbed starts (gradient samples)")
    p.add_argument("--horizon", type=int, default=d.horizon, help="control steps (50 Hz)")
    p.add_argument("--drop-height", type=float, default=d.drop_height, help="m above the standing height")
    p.add_argument("--qpos-noise", type=float, default=d.qpos_noise)
    p.add_argument("--branches", type=int, default=d.num_branches, help="B")
    p.add_argument("--bundle-steps", type=int, default=d.bundle_steps, help="H")
    p.add_argument("--tau", type=float, default=d.force_threshold, help="trigger: peak contact normal force, N")
    p.add_argument("--repeats", type=int, default=d.repeats, help="timed gradient calls after the compile")
    p.add_argument("--presets", nargs="+", default=list(d.presets), choices=["soft", "default", "stiff"])
    p.add_argument("--estimators", nargs="+", default=list(d.estimators), choices=[e.value for e in Estimator])
    p.add_argument("--physics-dt", type=float, default=d.physics_dt)
    p.add_argument("--float64", action="store_true")
    p.add_argument("--seed", type=int, default=d.seed)
    p.add_argument("--out-dir", type=Path, default=Path("runs/bench_gradients"))
    a = p.parse_args(argv)
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
    )
    return settings, a.out_dir


def run_benchmark(settings: BenchSettings, progress=None) -> dict[str, dict[str, GradientStatistics]]:
    """Statistics per estimator and preset. ``progress`` is called after each run."""
    from bcg_robot.config import load_robot_config
    from bcg_train.bench.g1_landing import build_landing_problem, landing_cost

    problem = build_landing_problem(load_robot_config(), settings.drop_height, settings.physics_dt, settings.float64)
    cost = landing_cost(problem)
    actions = jnp.zeros((settings.horizon, problem.sim.mj_model.nu), problem.sim.dtype)
    results: dict[str, dict[str, GradientStatistics]] = {}
    compiled: dict[bool, object] = {}  # BCG and global smoothing share one program
    for name in settings.estimators:
        config = BCGConfig(
            mode=Estimator(name),
            num_branches=settings.num_branches,
            bundle_steps=settings.bundle_steps,
            force_threshold=settings.force_threshold,
        )
        bsim = BundledSim(problem.sim, config)
        start = perturbed_starts(bsim, settings.num_starts, settings.qpos_noise, jax.random.PRNGKey(settings.seed))
        bundled = config.mode != Estimator.PLAIN
        if bundled not in compiled:
            compiled[bundled] = make_open_loop_gradient_fn(bsim, cost)  # one compile for every preset
        results[name] = {}
        for preset in settings.presets:
            solref, solimp = problem.contact_params[preset]
            stats = open_loop_gradient_statistics(
                bsim,
                start,
                actions,
                cost,
                repeats=settings.repeats,
                gradient_fn=compiled[bundled],
                geom_solref=jnp.asarray(solref, problem.sim.dtype),
                geom_solimp=jnp.asarray(solimp, problem.sim.dtype),
            )
            results[name][preset] = stats
            if progress is not None:
                progress(name, preset, stats)
    return results


def comparison_rows(results: dict[str, dict[str, GradientStatistics]]) -> list[dict]:
    rows = []
    for name, per_preset in results.items():
        for preset, s in per_preset.items():
            plain = results.get("plain", {}).get(preset)
            row = {"estimator": name, "preset": preset, **s.summary()}
            if plain is not None:
                row["variance_ratio_to_plain"] = plain.covariance_trace / max(s.covariance_trace, 1e-300)
                row["wall_time_ratio_to_plain"] = s.wall_time_per_gradient_s / plain.wall_time_per_gradient_s
            rows.append(row)
    return rows


def check_targets(rows: list[dict]) -> dict[str, bool | None]:
    """The issue's targets, evaluated on the measured rows (None: not measured)."""
    get = {(r["estimator"], r["preset"]): r for r in rows}
    bcg, smooth, soft = get.get(("bcg", "stiff")), get.get(("global_smoothing", "stiff")), get.get(("bcg", "soft"))
    out: dict[str, bool | None] = {}
    out["stiff_bcg_variance_cut_>=10x"] = None if bcg is None or "variance_ratio_to_plain" not in bcg else bcg["variance_ratio_to_plain"] >= 10
    out["stiff_bcg_time_<=2x_plain"] = None if bcg is None or "wall_time_ratio_to_plain" not in bcg else bcg["wall_time_ratio_to_plain"] <= 2
    out["stiff_bcg_time_<=half_global"] = (
        None if bcg is None or smooth is None else bcg["wall_time_per_gradient_s"] <= 0.5 * smooth["wall_time_per_gradient_s"]
    )
    # "within noise": variance ratio in [0.5, 2] (K samples give a rough trace estimate)
    out["soft_bcg_matches_plain"] = None if soft is None or "variance_ratio_to_plain" not in soft else 0.5 <= soft["variance_ratio_to_plain"] <= 2
    return out


def write_plot(rows: list[dict], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    presets = list(dict.fromkeys(r["preset"] for r in rows))
    estimators = list(dict.fromkeys(r["estimator"] for r in rows))
    get = {(r["estimator"], r["preset"]): r for r in rows}
    fig, axes = plt.subplots(1, 3, figsize=(14, 4))
    width = 0.8 / len(estimators)
    panels = [
        ("covariance_trace", "trace of gradient covariance", True),
        ("mean_cosine", "mean cosine to mean gradient", False),
        ("wall_time_per_gradient_s", "wall time per gradient (s)", True),
    ]
    for ax, (key, title, log) in zip(axes, panels):
        for i, name in enumerate(estimators):
            values = [get[(name, p)][key] if (name, p) in get else np.nan for p in presets]
            ax.bar(np.arange(len(presets)) + i * width, values, width, label=name)
        ax.set_xticks(np.arange(len(presets)) + width * (len(estimators) - 1) / 2, presets)
        ax.set_title(title)
        if log:
            ax.set_yscale("log")
    axes[0].legend()
    fig.suptitle("G1 landing: gradient estimators by contact stiffness")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def main(argv=None) -> int:
    settings, out_dir = parse_args(argv)
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
    for col in ("preset", "estimator", "var ratio to plain", "norm CV", "cosine", "s / gradient", "time ratio", "bundles", "non-finite"):
        table.add_column(col, justify="right")
    for r in sorted(rows, key=lambda r: (settings.presets.index(r["preset"]), r["estimator"])):
        table.add_row(
            r["preset"],
            r["estimator"],
            f"{r.get('variance_ratio_to_plain', float('nan')):.3g}",
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

    out_dir.mkdir(parents=True, exist_ok=True)
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
