"""The push-off run's judged checkpoints next to jump-long's, whose iteration 1850 it started from:
falls of 20 and the mean longest flight (seeds 0-19, DR on, one 3 s clip) against the protocol's
0.15 s.

    PYTHONPATH=. .venv/bin/python docs/results/jump-pushoff-2026-12-05/plot_selection.py
"""

import csv
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt

from bcg_train.cli.select_checkpoint import read_rows

HERE = Path(__file__).resolve().parent
JUMP_LONG = HERE.parent / "jump-long-2026-12-05/flights.csv"  # written by that folder's flights.py
START = 1850  # the push-off run's warm start: jump-long's iteration 1850


def main() -> None:
    with open(JUMP_LONG) as f:
        long_rows = [{"iteration": int(r["iteration"]), "falls": int(r["falls"]), "flight_s": float(r["longest_flight_s_mean"])}
                     for r in csv.DictReader(f)]
    push_rows = read_rows(HERE / "part2/select/checkpoints.csv")
    fig, (top, bottom) = plt.subplots(2, 1, figsize=(9, 6), sharex=True)
    for label, rows, offset in (("jump-long (from scratch)", long_rows, 0), ("push-off (from jump-long's 1850)", push_rows, START)):
        its = [r["iteration"] + offset for r in rows]
        top.plot(its, [r["falls"] for r in rows], "o-", ms=3, label=label)
        bottom.plot(its, [r["flight_s"] for r in rows], "o-", ms=3, label=label)
    bottom.axhline(0.15, color="k", ls="--", lw=0.8, label="protocol's flight clause (0.15 s)")
    bottom.axhline(0.145, color="0.5", ls=":", lw=0.8, label="the clip played back (0.145 s, falls 5/5)")
    top.set_ylabel("falls of 20 (seeds 0-19)")
    bottom.set_ylabel("longest flight, mean (s)")
    bottom.set_xlabel("iteration (jump-long's count; 256 env steps each)")
    for ax in (top, bottom):
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8)
    fig.suptitle("G1 jump: judged checkpoints, falls and flight")
    fig.tight_layout()
    fig.savefig(HERE / "selection.png", dpi=110)


if __name__ == "__main__":
    main()
