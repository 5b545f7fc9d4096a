"""The jump on the faithful train model against the first jump run: falls of every 50th
checkpoint on seeds 0-19 (bridge and train model), their longest flight, and the training
episodes ended. Writes select/checkpoint_details.csv and comparison.png.

Usage (from the repository root, after bcg-select-checkpoint has run on runs/jump-newton4):
    PYTHONPATH=. .venv/bin/python docs/results/jump-newton4-2026-12-04/plot_comparison.py [runs/jump-newton4]
"""

import csv
import json
import sys
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np

HERE = Path(__file__).parent
CONTROL = HERE.parent / "jump-cpu-small-2026-12-03"


def read(path: Path) -> list[dict[str, str]]:
    with path.open() as f:
        return list(csv.DictReader(f))


def details(run: Path) -> list[dict]:
    rows = []
    for summary in sorted((run / "select").glob("it*_seeds0-19/summary.json")):
        d = json.loads(summary.read_text())
        rows.append({"iteration": int(summary.parent.name[2:8]), "falls": d["falls"], "train_model_falls": d["train_sim_falls"],
                     "longest_flight_s": round(d["longest_flight_s_mean"], 4), "e_track_cm": round(d["tracking_error_cm_mean"], 3)})
    return rows


def smooth(values: np.ndarray, window: int = 20) -> np.ndarray:
    return np.convolve(values, np.ones(window) / window, mode="valid")


def main(run: Path) -> None:
    table = HERE / "select" / "checkpoint_details.csv"
    if (run / "select").is_dir():
        rows = details(run)
        with table.open("w", newline="") as f:
            writer = csv.DictWriter(f, fieldnames=list(rows[0]))
            writer.writeheader()
            writer.writerows(rows)
    rows = read(table)
    control = read(CONTROL / "select" / "checkpoints.csv")
    fig, (falls_ax, flight_ax, ends_ax) = plt.subplots(1, 3, figsize=(15, 4))
    falls_ax.plot([int(r["iteration"]) for r in control], [int(r["falls"]) for r in control], "o-",
                  label="first run: 200 Hz, 3 Newton iterations (bridge)")
    falls_ax.plot([int(r["iteration"]) for r in rows], [int(r["falls"]) for r in rows], "o-", label="250 Hz, 4 Newton iterations (bridge)")
    falls_ax.plot([int(r["iteration"]) for r in rows], [int(r["train_model_falls"]) for r in rows], "x--",
                  label="250 Hz, 4 Newton iterations (its train model, MuJoCo C)")
    falls_ax.set(xlabel="iteration", ylabel="falls of 20 (seeds 0-19, 3 s, DR on)", ylim=(-0.5, 20.5))
    flight_ax.plot([int(r["iteration"]) for r in rows], [float(r["longest_flight_s"]) for r in rows], "o-", color="C1")
    flight_ax.axhline(0.29, color="k", ls=":", label="the clip's flight (0.29 s)")
    flight_ax.axhline(0.15, color="r", ls="--", label="take-off rule (0.15 s)")
    flight_ax.set(xlabel="iteration", ylabel="longest flight, mean over seeds 0-19 (s)")
    for label, folder in (("first run", CONTROL), ("250 Hz, 4 Newton iterations", HERE)):
        ends = np.array([float(r["episodes_ended"]) for r in read(folder / "metrics.csv")])
        ends_ax.plot(np.arange(len(ends) - 19) + 20, smooth(ends), label=label)
    ends_ax.set(xlabel="iteration", ylabel="training episodes ended per iteration (20-iteration mean)")
    for ax in (falls_ax, flight_ax, ends_ax):
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7)
    fig.suptitle("Jump, SHAC+BCG, stiff contact, cpu-small, seed 0, from scratch")
    fig.tight_layout()
    fig.savefig(HERE / "comparison.png", dpi=110)


if __name__ == "__main__":
    main(Path(sys.argv[1]) if len(sys.argv) > 1 else Path("runs/jump-newton4"))
