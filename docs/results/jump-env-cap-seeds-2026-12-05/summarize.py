"""Tables and a plot for the environment cap over three seeds per arm (protocol.md).

    PYTHONPATH=. .venv/bin/python docs/results/jump-env-cap-seeds-2026-12-05/summarize.py

Reads the selection tables and metrics of the six runs (three committed before this study, three here)
and writes summary.json and seeds.png next to this file.
"""

import csv
import json
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np

HERE = Path(__file__).resolve().parent
RESULTS = HERE.parent
ITERATIONS = (50, 100)
RUNS = {  # (arm, seed) -> (selection table, metrics)
    ("uncapped", 1): ("jump-pushoff-2026-12-05/part2/select/checkpoints.csv", "jump-pushoff-2026-12-05/part2/metrics.csv"),
    ("uncapped", 2): ("jump-control-replicate-2026-12-05/seed2/select/checkpoints.csv",
                      "jump-control-replicate-2026-12-05/seed2/metrics.csv"),
    ("uncapped", 3): ("jump-env-cap-seeds-2026-12-05/uncapped_seed3/select/checkpoints.csv",
                      "jump-env-cap-seeds-2026-12-05/uncapped_seed3/metrics.csv"),
    ("capped", 1): ("jump-env-cap-2026-12-05/select/checkpoints.csv", "jump-env-cap-2026-12-05/metrics.csv"),
    ("capped", 2): ("jump-env-cap-seeds-2026-12-05/capped_seed2/select/checkpoints.csv",
                    "jump-env-cap-seeds-2026-12-05/capped_seed2/metrics.csv"),
    ("capped", 3): ("jump-env-cap-seeds-2026-12-05/capped_seed3/select/checkpoints.csv",
                    "jump-env-cap-seeds-2026-12-05/capped_seed3/metrics.csv"),
}


def read(path: Path) -> list[dict]:
    with path.open() as f:
        return list(csv.DictReader(f))


def run_summary(selection: Path, metrics: Path) -> dict:
    table = {int(r["iteration"]): r for r in read(selection)}
    rows = [r for r in read(metrics) if int(r["iteration"]) <= max(ITERATIONS)]
    grad = np.array([float(r["actor_grad_norm"]) for r in rows])
    wall = np.array([float(r["wall_s"]) for r in rows])
    return {
        "falls": {it: int(table[it]["falls"]) for it in ITERATIONS},
        "falls_total": sum(int(table[it]["falls"]) for it in ITERATIONS),
        "flight_s": {it: float(table[it]["flight_s"]) for it in ITERATIONS},
        "e_track_cm": {it: float(table[it]["e_track_cm"]) for it in ITERATIONS},
        "reward_1_100": float(np.mean([float(r["reward"]) for r in rows])),
        "actor_grad_p90_over_median": float(np.percentile(grad, 90) / np.median(grad)),
        "s_per_iteration_median": float(np.median(np.diff(wall))),
        "iterations_read": len(rows),
    }


def verdict(capped: list[int], uncapped: list[int]) -> str:
    if max(capped) < min(uncapped):
        return "steadier: shown"
    if sum(capped) >= sum(uncapped):
        return "not steadier"
    return "unclear"


def main() -> None:
    runs = {f"{arm}_seed{seed}": {"arm": arm, "seed": seed, **run_summary(RESULTS / s, RESULTS / m)}
            for (arm, seed), (s, m) in RUNS.items()}
    falls = {arm: [r["falls_total"] for r in runs.values() if r["arm"] == arm] for arm in ("capped", "uncapped")}
    out = {"runs": runs, "falls_per_arm": falls, "falls_total_per_arm": {a: sum(v) for a, v in falls.items()},
           "verdict": verdict(falls["capped"], falls["uncapped"])}
    (HERE / "summary.json").write_text(json.dumps(out, indent=1))

    print("| run | falls 50 | falls 100 | of 40 | flight 50 / 100 (s) | E_track 50 / 100 (cm) | reward 1-100 | grad p90/median | s/it |")
    print("|---|---|---|---|---|---|---|---|---|")
    for name, r in runs.items():
        print(f"| {name} | {r['falls'][50]} | {r['falls'][100]} | {r['falls_total']} | {r['flight_s'][50]:.3f} / {r['flight_s'][100]:.3f} "
              f"| {r['e_track_cm'][50]:.2f} / {r['e_track_cm'][100]:.2f} | {r['reward_1_100']:.3f} "
              f"| {r['actor_grad_p90_over_median']:.2f} | {r['s_per_iteration_median']:.2f} |")
    print("falls per arm:", out["falls_per_arm"], "totals:", out["falls_total_per_arm"], "verdict:", out["verdict"])

    fig, axes = plt.subplots(1, 2, figsize=(10, 4))
    for arm, color, dx in (("uncapped", "tab:red", -0.1), ("capped", "tab:blue", 0.1)):
        rs = [r for r in runs.values() if r["arm"] == arm]
        for i, it in enumerate(ITERATIONS):
            axes[0].scatter([r["seed"] + dx + 0.04 * i for r in rs], [r["falls"][it] for r in rs], color=color,
                            marker="o" if i == 0 else "s", label=f"{arm}, iteration {it}")
            axes[1].scatter([r["seed"] + dx + 0.04 * i for r in rs], [r["flight_s"][it] for r in rs], color=color,
                            marker="o" if i == 0 else "s", label=f"{arm}, iteration {it}")
    axes[0].set(xlabel="training seed", ylabel="falls of 20 (seeds 0-19)", title="falls", xticks=[1, 2, 3])
    axes[1].set(xlabel="training seed", ylabel="longest flight, mean (s)", title="flight", xticks=[1, 2, 3])
    axes[1].axhline(0.15, color="grey", ls="--", lw=0.8)
    axes[0].legend(fontsize=7)
    fig.suptitle(f"environment cap 1.0 against uncapped, jump warm start (verdict: {out['verdict']})")
    fig.tight_layout()
    fig.savefig(HERE / "seeds.png", dpi=110)


if __name__ == "__main__":
    main()
