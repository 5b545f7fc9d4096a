"""Where the jump's actor gradient outliers come from (protocol.md): the top 10 % of the iterations by
actor gradient norm before clipping, against the rest, on how the window's action gradient dL/da spread
over the environments (``action_gradient_spread`` in bcg_train/learn/shac.py). Prints the table and the
verdicts and writes trace.json and trace.png next to the run's metrics.

    PYTHONPATH=. .venv/bin/python docs/results/jump-gradient-trace-2026-12-05/trace.py RUN_DIR [OUT_DIR]
"""

import csv
import json
import sys
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np
from scipy.stats import spearmanr

COLUMNS = ("actor_grad_norm", "action_grad_norm", "action_grad_top_env_share", "action_grad_top_env_ended",
           "action_grad_top_env_terminated", "action_grad_top_env_bundled", "bundled", "bundle_overflow")


def read(run: Path) -> dict[str, np.ndarray]:
    with open(run / "metrics.csv") as f:
        rows = list(csv.DictReader(f))
    return {c: np.array([float(r[c]) for r in rows]) for c in COLUMNS}


def verdict(outliers: float, rest: float, supported: float, floor: float | None = None) -> str:
    """Supported at >= ``supported`` x the rest (and >= ``floor``), refuted at <= 1.2 x, else between."""
    ratio = outliers / rest if rest > 0 else float("inf")
    if ratio >= supported and (floor is None or outliers >= floor):
        return "supported"
    return "refuted" if ratio <= 1.2 else "between"


def main(run: Path, out: Path) -> None:
    m = read(run)
    finite = np.isfinite(m["actor_grad_norm"])
    norm = m["actor_grad_norm"][finite]
    top = norm >= np.quantile(norm, 0.9)
    pick = lambda c, sel: m[c][finite][sel]
    summary = {"iterations": int(finite.size), "non_finite": int((~finite).sum()), "outliers": int(top.sum())}
    rows = {}
    for name, stat in (("action_grad_top_env_share", np.median), ("action_grad_top_env_terminated", np.mean),
                       ("action_grad_top_env_ended", np.mean), ("action_grad_top_env_bundled", np.mean),
                       ("bundled", np.mean), ("bundle_overflow", np.mean)):
        rows[name] = {"outliers": float(stat(pick(name, top))), "rest": float(stat(pick(name, ~top)))}
    time_limit = lambda sel: float(np.mean(pick("action_grad_top_env_ended", sel) * (1 - pick("action_grad_top_env_terminated", sel))))
    rows["top_env_time_limit_only"] = {"outliers": time_limit(top), "rest": time_limit(~top)}
    summary["rows"] = rows
    r = rows["action_grad_top_env_share"]
    summary["one_environment"] = verdict(r["outliers"], r["rest"], 1.5, 0.5)
    r = rows["action_grad_top_env_terminated"]
    summary["falls"] = verdict(r["outliers"], r["rest"], 2.0, 0.5)
    r = rows["action_grad_top_env_bundled"]
    summary["bundles"] = verdict(r["outliers"], r["rest"], 2.0)
    summary["spearman_action_vs_actor_norm"] = float(spearmanr(norm, pick("action_grad_norm", slice(None))).statistic)
    summary["p90_over_median"] = float(np.quantile(norm, 0.9) / np.median(norm))
    share_all = pick("action_grad_top_env_share", slice(None))
    summary["top_env_share_quartiles"] = [float(q) for q in np.quantile(share_all, [0.25, 0.5, 0.75])]
    summary["top_env_share_above_half"] = float(np.mean(share_all > 0.5))
    (out / "trace.json").write_text(json.dumps(summary, indent=2) + "\n")

    print(f"{summary['iterations']} iterations ({summary['non_finite']} non-finite), {summary['outliers']} outliers "
          f"(top 10 % of the actor gradient norm); p90/median {summary['p90_over_median']:.2f}")
    print(f"{'':34s} {'outliers':>9s} {'rest':>9s}")
    for name, v in rows.items():
        print(f"{name:34s} {v['outliers']:9.3f} {v['rest']:9.3f}")
    print(f"one environment: {summary['one_environment']}; falls: {summary['falls']}; bundles: {summary['bundles']}; "
          f"Spearman(action, actor norm) {summary['spearman_action_vs_actor_norm']:.2f}")
    q = summary["top_env_share_quartiles"]
    print(f"largest environment's share, every iteration: quartiles {q[0]:.2f} / {q[1]:.2f} / {q[2]:.2f}; "
          f"above 0.5 in {100 * summary['top_env_share_above_half']:.0f} % of the iterations")

    share = pick("action_grad_top_env_share", slice(None))
    term = pick("action_grad_top_env_terminated", slice(None)) > 0
    fig, ax = plt.subplots(figsize=(7, 4.5))
    ax.scatter(norm[~term], share[~term], s=10, label="largest environment not terminated in the window")
    ax.scatter(norm[term], share[term], s=10, marker="x", label="largest environment terminated in the window")
    ax.axvline(np.quantile(norm, 0.9), color="k", lw=0.8, ls="--", label="top 10 % (outliers)")
    ax.axhline(1 / 8, color="grey", lw=0.8, ls=":", label="1/K (even spread, K = 8)")
    ax.set(xscale="log", xlabel="actor gradient norm before clipping", ylabel="largest environment's share of |dL/da|^2",
           title="G1 jump: where each iteration's gradient comes from")
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(out / "trace.png", dpi=120)


if __name__ == "__main__":
    run = Path(sys.argv[1])
    main(run, Path(sys.argv[2]) if len(sys.argv) > 2 else run)
