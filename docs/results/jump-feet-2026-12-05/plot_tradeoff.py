"""Every judged jump checkpoint of the runs on the rewritten clip (seeds 0-19, DR on, one 3 s clip):
mean longest flight against falls, per run, with the protocols' 0.15 s.

    PYTHONPATH=. .venv/bin/python docs/results/jump-feet-2026-12-05/plot_tradeoff.py
"""

import csv
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np

from bcg_train.cli.select_checkpoint import read_rows

HERE = Path(__file__).resolve().parent
RESULTS = HERE.parent


def _flights_csv(path: Path) -> list[dict]:  # tables from before the selection's flight column
    with open(path) as f:
        return [{"falls": int(r["falls"]), "flight_s": float(r["longest_flight_s_mean"])} for r in csv.DictReader(f)]


RUNS = {
    "jump-long (from scratch)": lambda: _flights_csv(RESULTS / "jump-long-2026-12-05/flights.csv"),
    "root height weighed": lambda: _flights_csv(RESULTS / "jump-flight-2026-12-05/flights.csv"),
    "push-off speed weighed": lambda: read_rows(RESULTS / "jump-pushoff-2026-12-05/part2/select/checkpoints.csv"),
    "feet height weighed": lambda: read_rows(HERE / "select/checkpoints.csv"),
}


def main() -> None:
    fig, ax = plt.subplots(figsize=(7, 4.5))
    falls, flights = [], []
    for label, rows in RUNS.items():
        rows = rows()
        ax.plot([r["flight_s"] for r in rows], [r["falls"] for r in rows], "o", ms=5, alpha=0.7, label=label)
        falls += [r["falls"] for r in rows]
        flights += [r["flight_s"] for r in rows]
    rho = np.corrcoef(flights, falls)[0, 1]
    ax.axvline(0.15, color="k", ls="--", lw=0.8, label="protocols' flight clause (0.15 s)")
    ax.set(xlabel="longest flight, mean over seeds 0-19 (s)", ylabel="falls of 20",
           title=f"G1 jump: every judged checkpoint ({len(falls)}; Pearson r = {rho:.2f})")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(HERE / "tradeoff.png", dpi=110)
    zero = [f for f, n in zip(flights, falls) if n == 0]
    print(f"{len(falls)} checkpoints, r = {rho:.2f}; 0 falls: {len(zero)}, flights {min(zero):.3f}-{max(zero):.3f} s; "
          f"longest flight {max(flights):.3f} s at {falls[int(np.argmax(flights))]}/20 falls")


if __name__ == "__main__":
    main()
