"""The claim's outputs: ``claim.json``, a paper-style table and ``claim.png``.

Pure functions of :class:`~bcg_train.claim.runner.MethodResult` lists (tested on
synthetic results). NaN (no completed hop cycle, no contact) is written as null.
"""

from __future__ import annotations

import dataclasses
import math
from pathlib import Path

import numpy as np

from bcg_train.claim.protocol import ClaimProtocol
from bcg_train.claim.runner import MethodResult, SeedResult
from bcg_robot.yaml_dataclass import to_plain


def _num(x: float | None) -> float | None:
    return None if x is None or not math.isfinite(x) else float(x)


def first_below(curve: list[dict[str, float]], threshold: float) -> tuple[int | None, float | None]:
    """Env steps and wall time of the first curve point whose task error is <= threshold with no
    fall in that evaluation (the error averages the hop cycles completed, a fall's before it too)."""
    for p in curve:
        if math.isfinite(p["task_error"]) and p["task_error"] <= threshold and p["falls"] == 0:
            return int(p["env_steps"]), _num(p["wall_s"])
    return None, None


def method_entry(result: MethodResult, threshold: float) -> dict:
    reached = [first_below(s.curve, threshold) for s in result.seeds]
    bundled = [s.bundled_fraction for s in result.seeds if s.bundled_fraction is not None]
    is_bcg = result.method.estimator is not None and result.method.estimator.value == "bcg"
    return {
        "seeds": [s.seed for s in result.seeds],
        "env_steps_to_threshold": [r[0] for r in reached],
        "wall_s_to_threshold": [r[1] for r in reached],
        "final_task_error": [_num(s.final.task_error) for s in result.seeds],
        "transfer_falls": int(sum(s.transfer.falls for s in result.seeds)),
        "transfer_task_error": [_num(s.transfer.task_error) for s in result.seeds],
        "gradient_variance": _num(result.gradient_variance),
        "bundled_fraction": float(np.mean(bundled)) if (is_bcg and bundled) else None,
    }


def penetration_difference_mm(seed: SeedResult) -> float | None:
    """Mean foot penetration in the training model minus in MuJoCo C, mm."""
    a, b = seed.final.foot_penetration_m, seed.transfer.foot_penetration_m
    return _num(1000.0 * (a - b)) if math.isfinite(a) and math.isfinite(b) else None


def claim_json(results: list[MethodResult], protocol: ClaimProtocol) -> dict:
    methods = {r.method.name: method_entry(r, protocol.threshold) for r in results}
    ratio = None
    bcg, ppo = methods.get("shac_bcg_stiff"), methods.get("ppo_stiff")
    if bcg and ppo:
        b, p = bcg["env_steps_to_threshold"], ppo["env_steps_to_threshold"]
        # only when every seed of both reached the threshold: a mean over the seeds that did
        # drops the others (1 of 5 SHAC+BCG seeds at 10k, 5 of 5 PPO at 100k read 10x)
        if b and p and None not in b and None not in p:
            ratio = float(np.mean(p) / np.mean(b))
    return {
        "task": "hopper",
        "protocol": to_plain(protocol),
        "threshold": protocol.threshold,
        "methods": methods,
        "ppo_to_shac_bcg_env_steps": ratio,
    }


def details_json(results: list[MethodResult]) -> dict:
    """Everything behind the table: curves, scores, compile times, per seed."""
    out = {}
    for r in results:
        out[r.method.name] = {
            "compile_s": r.compile_s,
            "gradient_samples_finite": r.gradient_samples_finite,
            "seeds": [
                {
                    "seed": s.seed,
                    "curve": [{k: _num(v) for k, v in p.items()} for p in s.curve],
                    "final": {k: _num(v) if isinstance(v, float) else v for k, v in dataclasses.asdict(s.final).items()},
                    "transfer": {k: _num(v) if isinstance(v, float) else v for k, v in dataclasses.asdict(s.transfer).items()},
                    "penetration_difference_mm": penetration_difference_mm(s),
                    "bundled_fraction": s.bundled_fraction,
                    "nonfinite_actor_gradients": s.nonfinite_actor_gradients,
                    "sim_failures": s.sim_failures,
                }
                for s in r.seeds
            ],
        }
    return out


def _mean_std(values, scale: float = 1.0, digits: int = 1) -> str:
    v = np.array([x for x in values if x is not None], dtype=float) * scale
    if v.size == 0:
        return "-"
    return f"{v.mean():.{digits}f} +- {v.std():.{digits}f}" + (f" ({v.size}/{len(values)})" if v.size < len(values) else "")


def table(claim: dict, results: list[MethodResult]) -> str:
    n = {r.method.name: len(r.seeds) for r in results}
    pen = {r.method.name: [penetration_difference_mm(s) for s in r.seeds] for r in results}
    head = f"{'method':<15} {'final err cm':>16} {'transfer err cm':>16} {'falls':>6} {'pen. diff mm':>14} {'env steps to thr. (k)':>22} {'wall s to thr.':>16} {'grad var':>9} {'bundled':>8}"
    lines = [f"hopper, threshold {100 * claim['threshold']:.1f} cm apex error, mean +- std over seeds (reached/seeds where not all)", head, "-" * len(head)]
    for name, m in claim["methods"].items():
        gv = m["gradient_variance"]
        bf = m["bundled_fraction"]
        lines.append(
            f"{name:<15} {_mean_std(m['final_task_error'], 100):>16} {_mean_std(m['transfer_task_error'], 100):>16} "
            f"{m['transfer_falls']:>3}/{n[name]:<2} {_mean_std(pen[name], 1.0, 1):>14} "
            f"{_mean_std([None if s is None else s / 1000 for s in m['env_steps_to_threshold']], 1.0, 0):>22} "
            f"{_mean_std(m['wall_s_to_threshold'], 1.0, 0):>16} {('-' if gv is None else f'{gv:.2g}'):>9} {('-' if bf is None else f'{bf:.3f}'):>8}"
        )
    ratio = claim["ppo_to_shac_bcg_env_steps"]
    reached = "; ".join(f"{name}: {sum(s is not None for s in m['env_steps_to_threshold'])}/{len(m['env_steps_to_threshold'])} "
                        "seeds reached it" for name, m in claim["methods"].items() if name in ("shac_bcg_stiff", "ppo_stiff"))
    lines.append(f"PPO / SHAC+BCG env steps to threshold: {'-' if ratio is None else f'{ratio:.1f}x'} ({reached}; "
                 "a ratio needs every seed of both)")
    return "\n".join(lines)


def plot(results: list[MethodResult], claim: dict, path: Path) -> Path:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (ax_curve, ax_falls, ax_err) = plt.subplots(1, 3, figsize=(16, 4.5), gridspec_kw={"width_ratios": [2.2, 1, 1]})
    names = [r.method.name for r in results]
    for r in results:
        grid = np.array([p["env_steps"] for p in r.seeds[0].curve])
        errs = np.array([[p["task_error"] for p in s.curve[: len(grid)]] for s in r.seeds], dtype=float) * 100
        mean = np.nanmean(errs, axis=0)
        line, = ax_curve.plot(grid, mean, label=r.method.name)
        ax_curve.fill_between(grid, np.nanmin(errs, axis=0), np.nanmax(errs, axis=0), color=line.get_color(), alpha=0.2)
    ax_curve.axhline(100 * claim["threshold"], color="k", ls="--", lw=1, label="threshold")
    ax_curve.set_xscale("log")
    ax_curve.set_xlabel("environment steps")
    ax_curve.set_ylabel("apex error, training model (cm)")
    ax_curve.set_title("learning curves: mean, min-max over seeds")
    ax_curve.legend(fontsize=8)
    falls = [claim["methods"][n]["transfer_falls"] for n in names]
    ax_falls.bar(names, falls, color="tab:red")
    ax_falls.set_ylim(0, max(len(r.seeds) for r in results))
    ax_falls.set_title("falls in MuJoCo C (of seeds)")
    for n, entry in enumerate(names):
        errs = [e * 100 for e in claim["methods"][entry]["transfer_task_error"] if e is not None]
        ax_err.scatter([n] * len(errs), errs, color="tab:blue")
        if errs:
            ax_err.bar(n, np.mean(errs), color="tab:blue", alpha=0.3)
    ax_err.set_xticks(range(len(names)), names)
    ax_err.set_title("apex error in MuJoCo C (cm)")
    for ax in (ax_falls, ax_err):
        ax.tick_params(axis="x", labelrotation=30, labelsize=8)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path
