"""This run against its control (the push-off run, sigma_p = 1 cm): falls of 20 and mean longest flight per
judged checkpoint (seeds 0-19, DR on, one 3 s clip), and the actor gradient norm before clipping.

    PYTHONPATH=. .venv/bin/python docs/results/jump-sigma1mm-2026-12-05/plot_compare.py
"""

import csv
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np

from bcg_train.cli.select_checkpoint import read_rows

HERE = Path(__file__).resolve().parent
CONTROL = HERE.parent / "jump-pushoff-2026-12-05/part2"
RUNS = (("sigma_p 1 cm (push-off run, control)", CONTROL), ("sigma_p 1 mm (this run)", HERE))


def grad_norms(folder: Path) -> np.ndarray:
    with open(folder / "metrics.csv") as f:
        return np.array([float(r["actor_grad_norm"]) for r in csv.DictReader(f)])


def main() -> None:
    fig, axes = plt.subplots(3, 1, figsize=(9, 8), sharex=True)
    for label, folder in RUNS:
        rows = read_rows(folder / "select/checkpoints.csv")
        its = [r["iteration"] for r in rows]
        axes[0].plot(its, [r["falls"] for r in rows], "o-", ms=3, label=label)
        axes[1].plot(its, [r["flight_s"] for r in rows], "o-", ms=3, label=label)
        g = grad_norms(folder)
        ratio = np.percentile(g, 90) / np.median(g)
        axes[2].plot(np.arange(1, g.size + 1), g, lw=0.6, label=f"{label}: p90/median {ratio:.1f}")
    axes[1].axhline(0.15, color="k", ls="--", lw=0.8, label="protocol's flight clause (0.15 s)")
    axes[0].set_ylabel("falls of 20")
    axes[1].set_ylabel("longest flight, mean (s)")
    axes[2].set_ylabel("actor grad norm\n(before clipping)")
    axes[2].set_yscale("log")
    axes[2].set_xlabel("iteration (from jump-long's 1850; 256 env steps each)")
    for ax in axes:
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8)
    fig.suptitle("G1 jump: BCG position offsets 1 mm against 1 cm")
    fig.tight_layout()
    fig.savefig(HERE / "compare.png", dpi=110)
    print("wrote", HERE / "compare.png")


if __name__ == "__main__":
    main()
