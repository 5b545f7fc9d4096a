"""Bar chart of every row of this folder's JSON files: terminations per 256 environment steps
by reason. Usage: PYTHONPATH=. .venv/bin/python docs/results/mjx-vs-c-2026-12-04/plot.py"""

import json
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt

HERE = Path(__file__).parent
FILES = ("mjx.json", "float64.json", "solver.json", "solver_split.json", "solver_sweep.json", "c.json")
REASONS = ("tilted", "sim_failures", "lost", "low")

rows = []
for name in FILES:
    path = HERE / name
    if path.exists():
        rows += json.loads(path.read_text())["rows"]
labels = [f"{r['engine']}: {r['variant']}" + (f", noise {r['noise_std']:g}" if r["engine"] == "mjx" else "") for r in rows]
fig, ax = plt.subplots(figsize=(11, 0.42 * len(rows) + 1.2))
left = [0.0] * len(rows)
for reason, color in zip(REASONS, ("tab:orange", "tab:red", "tab:purple", "tab:brown")):
    values = [r["by_reason_per_256"].get(reason, 0.0) for r in rows]
    ax.barh(range(len(rows)), values, left=left, color=color, label=reason)
    left = [a + b for a, b in zip(left, values)]
ax.set_yticks(range(len(rows)), labels, fontsize=8)
ax.invert_yaxis()
ax.set_xlabel("episode ends per 256 environment steps (one cpu-small SHAC iteration)")
ax.set_title("Heading squat, iteration 600: MJX against MuJoCo C on one MjModel", fontsize=10)
ax.legend(loc="lower right")
fig.tight_layout()
fig.savefig(HERE / "ends_per_256.png", dpi=110)
print(f"wrote {HERE / 'ends_per_256.png'}")
