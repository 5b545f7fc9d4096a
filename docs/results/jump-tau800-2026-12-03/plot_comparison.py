"""The jump at tau 400 N, 800 N and 1600 N: training reward by iteration and by wall time, and the
falls / E_track of every 50th checkpoint on the selection seeds 0-19 (the protocol's measure).

    .venv/bin/python docs/results/jump-tau800-2026-12-03/plot_comparison.py
"""

import csv
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

HERE = Path(__file__).resolve().parent
RUNS = {"tau 400 N (first jump run)": HERE.parent / "jump-cpu-small-2026-12-03", "tau 800 N": HERE,
        "tau 1600 N": HERE.parent / "jump-tau1600-2026-12-03"}


def read(path: Path) -> dict[str, np.ndarray]:
    with open(path) as f:
        rows = list(csv.DictReader(f))
    return {k: np.array([float(r[k]) for r in rows]) for k in rows[0]}


def smooth(x: np.ndarray, n: int = 25) -> np.ndarray:
    return np.convolve(x, np.ones(n) / n, mode="valid")


fig, axes = plt.subplots(1, 4, figsize=(18, 4))
for label, folder in RUNS.items():
    m, sel = read(folder / "metrics.csv"), read(folder / "select" / "checkpoints.csv")
    axes[0].plot(m["iteration"][24:], smooth(m["reward"]), label=label)
    axes[1].plot(m["wall_s"][24:] / 60, smooth(m["reward"]), label=label)
    axes[2].plot(sel["iteration"], sel["falls"], "o-", label=label)
    axes[3].plot(sel["iteration"], sel["e_track_cm"], "o-", label=label)
axes[0].set(xlabel="iteration", ylabel="reward per step (mean of 25)", title="training reward")
axes[1].set(xlabel="wall time (min, compile included)", ylabel="reward per step (mean of 25)", title="by wall time")
axes[2].set(xlabel="iteration", ylabel="falls of 20", title="falls, seeds 0-19 (DR on, 3 s)")
axes[3].set(xlabel="iteration", ylabel="cm", title="E_track, seeds 0-19")
for ax in axes:
    ax.grid(alpha=0.3)
axes[0].legend()
fig.tight_layout()
fig.savefig(HERE / "comparison.png", dpi=100)
print(f"wrote {HERE / 'comparison.png'}")
