"""The squat's judged checkpoints over the whole run: the benchmark part (iterations 50-550, seeds
0-19) and this continuation (600-1200, seeds 0-39), as fall rates, with E_track.

    PYTHONPATH=. .venv/bin/python docs/results/squat-ship-2026-12-05/plot_selection.py
"""

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt

from bcg_train.cli.select_checkpoint import read_rows

HERE = Path(__file__).resolve().parent
PARTS = {"benchmark part (seeds 0-19)": HERE.parent / "benchmark-squat-2026-12-05/shac_bcg_part1/select/checkpoints.csv",
         "continuation (seeds 0-39)": HERE / "select/checkpoints.csv"}


def main() -> None:
    fig, (top, bottom) = plt.subplots(2, 1, figsize=(8, 6), sharex=True)
    for label, table in PARTS.items():
        rows = read_rows(table)
        its = [r["iteration"] for r in rows]
        top.plot(its, [r["falls"] / r["seeds"] for r in rows], "o-", label=label)
        bottom.plot(its, [r["e_track_cm"] for r in rows], "o-", label=label)
    top.axhline(5 / 50, color="k", ls="--", lw=0.8, label="ship rule held out (5/50)")
    top.annotate("chosen: 1050", (1050, 2 / 40), textcoords="offset points", xytext=(-20, 18), arrowprops={"arrowstyle": "->"})
    top.set_ylabel("fall rate on the selection seeds")
    bottom.set_ylabel("E_track (cm)")
    bottom.set_xlabel("iteration (256 env steps each)")
    top.legend()
    for ax in (top, bottom):
        ax.grid(alpha=0.3)
    fig.suptitle("G1 squat, SHAC + BCG from scratch on stiff 250 Hz contact: judged checkpoints")
    fig.tight_layout()
    fig.savefig(HERE / "selection.png", dpi=110)


if __name__ == "__main__":
    main()
