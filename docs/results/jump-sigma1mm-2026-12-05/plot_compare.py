"""A run warm-started from jump-long's 1850 against the push-off run (its control): falls of 20 and mean
longest flight per judged checkpoint (seeds 0-19, DR on, one 3 s clip), and the actor gradient norm before
clipping, with its p90 / median ratio over the iterations both runs reached.

    PYTHONPATH=. .venv/bin/python docs/results/jump-sigma1mm-2026-12-05/plot_compare.py   # this folder's run
    PYTHONPATH=. .venv/bin/python docs/results/jump-sigma1mm-2026-12-05/plot_compare.py \
        docs/results/jump-overflow-cut-2026-12-05 "overflow cut (that run)" "G1 jump: overflowing bundle steps cut against passed plain"
    PYTHONPATH=. .venv/bin/python docs/results/jump-sigma1mm-2026-12-05/plot_compare.py \
        docs/results/jump-float64-2026-12-05 "float64 (that run)" "G1 jump: simulated in float64 against float32" \
        "float32 (push-off run, control)"
"""

import csv
import sys
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np

from bcg_train.cli.select_checkpoint import read_rows

HERE = Path(__file__).resolve().parent
CONTROL = HERE.parent / "jump-pushoff-2026-12-05/part2"


def grad_norms(folder: Path) -> np.ndarray:
    with open(folder / "metrics.csv") as f:
        return np.array([float(r["actor_grad_norm"]) for r in csv.DictReader(f)])


def main(run: Path = HERE, label: str = "sigma_p 1 mm (this run)", title: str = "G1 jump: BCG position offsets 1 mm against 1 cm",
         control_label: str = "push-off run (control)") -> None:
    runs = ((control_label, CONTROL), (label, run))
    matched = min(grad_norms(folder).size for _, folder in runs)  # iterations both runs reached
    fig, axes = plt.subplots(3, 1, figsize=(9, 8), sharex=True)
    for name, folder in runs:
        rows = read_rows(folder / "select/checkpoints.csv")
        its = [r["iteration"] for r in rows]
        axes[0].plot(its, [r["falls"] for r in rows], "o-", ms=3, label=name)
        axes[1].plot(its, [r["flight_s"] for r in rows], "o-", ms=3, label=name)
        g = grad_norms(folder)
        window = g[:matched]
        finite = window[np.isfinite(window)]  # a non-finite gradient skips its update (counted, `skipped_actor_updates`)
        ratio = np.percentile(finite, 90) / np.median(finite)
        print(f"{name}: p90/median of the actor gradient norm over iterations 1-{matched}: {ratio:.2f} "
              f"(median {np.median(finite):.1f}, p99 {np.percentile(finite, 99):.0f}; {window.size - finite.size} non-finite left out)")
        axes[2].plot(np.arange(1, g.size + 1), g, lw=0.6, label=f"{name}: p90/median {ratio:.1f} (iterations 1-{matched})")
    axes[1].axhline(0.15, color="k", ls="--", lw=0.8, label="protocol's flight clause (0.15 s)")
    axes[0].set_ylabel("falls of 20")
    axes[1].set_ylabel("longest flight, mean (s)")
    axes[2].set_ylabel("actor grad norm\n(before clipping)")
    axes[2].set_yscale("log")
    axes[2].set_xlabel("iteration (from jump-long's 1850; 256 env steps each)")
    for ax in axes:
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8)
    fig.suptitle(title)
    fig.tight_layout()
    fig.savefig(run / "compare.png", dpi=110)
    print("wrote", run / "compare.png")


if __name__ == "__main__":
    if len(sys.argv) > 1:
        control = sys.argv[4] if len(sys.argv) > 4 else "overflow plain (push-off run, control)"
        main(Path(sys.argv[1]).resolve(), sys.argv[2], sys.argv[3], control_label=control)
    else:
        main(control_label="sigma_p 1 cm (push-off run, control)")
