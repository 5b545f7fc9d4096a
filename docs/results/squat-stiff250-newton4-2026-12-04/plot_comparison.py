"""Falls on seeds 0-19 per checkpoint and training episode ends: 3 against 4 Newton iterations.

Usage (from the repository root):
    PYTHONPATH=. .venv/bin/python docs/results/squat-stiff250-newton4-2026-12-04/plot_comparison.py
"""

import csv
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np

HERE = Path(__file__).parent
RUNS = {
    "3 Newton iterations (../squat-stiff250-2026-12-04)": HERE.parent / "squat-stiff250-2026-12-04",
    "4 Newton iterations (this run)": HERE,
}


def read(path: Path) -> list[dict[str, str]]:
    with path.open() as f:
        return list(csv.DictReader(f))


def smooth(values: np.ndarray, window: int = 20) -> np.ndarray:
    kernel = np.ones(window) / window
    return np.convolve(values, kernel, mode="valid")


def main() -> None:
    fig, (falls_ax, ends_ax) = plt.subplots(1, 2, figsize=(11, 4))
    for label, folder in RUNS.items():
        select = read(folder / "select" / "checkpoints.csv")
        falls_ax.plot([int(r["iteration"]) for r in select], [int(r["falls"]) for r in select], "o-", label=label)
        metrics = read(folder / "metrics.csv")
        ends = np.array([float(r["episodes_ended"]) for r in metrics])
        ends_ax.plot(np.arange(len(ends) - 19) + 20, smooth(ends), label=label)
    falls_ax.set(xlabel="iteration", ylabel="falls of 20 (bridge, seeds 0-19, 8 s)", ylim=(0, 20))
    falls_ax.set_title("checkpoint falls (MuJoCo C bridge model)", fontsize=9)
    ends_ax.set(xlabel="iteration", ylabel="episodes ended per iteration (20-iteration mean)")
    ends_ax.set_title("training episodes ended (MJX train model)", fontsize=9)
    for ax in (falls_ax, ends_ax):
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8)
    fig.suptitle("Squat, stiff contact at 250 Hz, from the heading run's iteration 600")
    fig.tight_layout()
    fig.savefig(HERE / "comparison.png", dpi=110)


if __name__ == "__main__":
    main()
