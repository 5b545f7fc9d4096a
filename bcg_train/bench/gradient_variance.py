"""The gradient benchmark (``bcg-bench-gradients``): gradient variance of plain vs BCG vs global smoothing.

G1 landing from a drop (open-loop actions = hold the default pose), K perturbed starts
(qpos offsets ~ N(0, noise^2) in every tangent direction), at the soft / default / stiff
contact presets (the problem: :mod:`bcg_train.tasks.g1_landing`). For each estimator and
preset :func:`comparison_rows` gives the variance ratio to plain (trace of plain's
gradient covariance over the estimator's), the CV of the gradient norm, the mean cosine
to the mean gradient, the wall time per gradient and its ratio to plain;
:mod:`bcg_train.cli.bench_gradients` prints them and writes ``gradient_variance.json``
and ``gradient_variance.png``.

Targets (:func:`check_targets`): at stiff contact BCG cuts the variance >= 10x versus plain at
<= 2x plain's wall time and <= half of global smoothing's; at soft contact it matches
plain within noise.
"""

from __future__ import annotations

import dataclasses
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
    paired_variance_ratio_interval,
    perturbed_starts,
)


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
    solver_iterations: int | None = None  # the train model's Newton iterations (None: bcg_robot.model's default)
    seed: int = 0


def run_benchmark(settings: BenchSettings, progress=None) -> dict[str, dict[str, GradientStatistics]]:
    """Statistics per estimator and preset. ``progress`` is called after each run."""
    from bcg_robot.config import load_robot_config
    from bcg_train.tasks.g1_landing import build_landing_problem, landing_cost

    problem = build_landing_problem(load_robot_config(), settings.drop_height, settings.physics_dt, settings.float64,
                                    settings.solver_iterations)
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
                if plain.samples is not None and s.samples is not None:
                    # same starts for every estimator (one seed), so the ratio is paired
                    row["variance_ratio_interval_90"] = list(paired_variance_ratio_interval(plain.samples, s.samples))
            rows.append(row)
    return rows


def check_targets(rows: list[dict]) -> dict[str, bool | None]:
    """The targets of the module docstring, evaluated on the measured rows (None: not measured)."""
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
