"""Per-start gradient norms of every condition, float32 and float64 (diagnosis.json -> norms.png).

    PYTHONPATH=. .venv/bin/python docs/results/bcg-variance-2026-12-05/plot_norms.py
"""
import json
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np

HERE = Path(__file__).parent
fig, axes = plt.subplots(2, 2, figsize=(13, 8), sharey="row")
for col, precision in enumerate(("float32", "float64")):
    results = json.loads((HERE / precision / "diagnosis.json").read_text())["results"]
    for row, (problem, title) in enumerate((("drop20_h16", "20 cm drop, 16 steps"), ("drop05_h8", "5 cm drop, 8 steps"))):
        ax = axes[row, col]
        conditions = list(results[problem])
        for i, name in enumerate(conditions):
            norms = np.asarray(results[problem][name]["per_start_norm"])
            ax.scatter(i + np.linspace(-0.25, 0.25, norms.size), norms, s=10, alpha=0.7)
            ax.plot([i - 0.3, i + 0.3], [np.median(norms)] * 2, color="k", lw=1)
        ax.set_yscale("log")
        ax.set_xticks(range(len(conditions)), [c.replace("_", "\n") for c in conditions], fontsize=8)
        ax.set_title(f"{title}, {precision}")
        ax.grid(axis="y", alpha=0.3)
    axes[0, 0].set_ylabel("|d cost / d actions| per start")
    axes[1, 0].set_ylabel("|d cost / d actions| per start")
fig.suptitle("G1 landing, stiff, 4 Newton iterations, 32 starts: gradient norm per start (black: median)")
fig.tight_layout()
fig.savefig(HERE / "norms.png", dpi=110)
print("wrote", HERE / "norms.png")
