"""The selection table with each checkpoint's longest flight (mean over seeds 0-19), and a plot of
falls and flight against iteration: `python docs/results/jump-long-2026-12-05/flights.py runs/jump-long [out_dir]`.
A run resumed in a fresh checkout has only its own part's evaluations: the rows already in
`out_dir/flights.csv` (default: this folder) are kept, those of the same iteration replaced."""
import csv
import json
import sys
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt

run = Path(sys.argv[1])
here = Path(sys.argv[2]) if len(sys.argv) > 2 else Path(__file__).parent
known = {}
if (here / "flights.csv").is_file():
    with open(here / "flights.csv") as f:
        known = {int(r["iteration"]): {k: (int(v) if k in ("iteration", "falls", "seeds") else float(v)) for k, v in r.items()}
                 for r in csv.DictReader(f)}
rows = []
for summary in sorted((run / "select").glob("it*_seeds0-19/summary.json")):
    s = json.loads(summary.read_text())
    rows.append({"iteration": int(summary.parent.name[2:8]), "falls": s["falls"], "seeds": s["seeds"],
                 "e_track_cm": round(s["tracking_error_cm_mean"], 3), "longest_flight_s_mean": round(s["longest_flight_s_mean"], 4)})
rows = sorted({**known, **{r["iteration"]: r for r in rows}}.values(), key=lambda r: r["iteration"])
with open(here / "flights.csv", "w", newline="") as f:
    writer = csv.DictWriter(f, fieldnames=list(rows[0]))
    writer.writeheader()
    writer.writerows(rows)
fig, ax = plt.subplots(figsize=(8, 3.5))
it = [r["iteration"] for r in rows]
ax.plot(it, [r["falls"] for r in rows], "o-", color="C3", label="falls of 20")
ax.set(xlabel="iteration", ylabel="falls of 20 (seeds 0-19)")
ax2 = ax.twinx()
ax2.plot(it, [r["longest_flight_s_mean"] for r in rows], "s-", color="C0", label="longest flight (s, mean)")
ax2.axhline(0.15, color="C0", ls="--", lw=0.8)
ax2.set(ylabel="longest flight (s, mean)")
ax.set_title("selection checkpoints (seeds 0-19); dashed: the ship rule's 0.15 s flight", fontsize=10)
fig.legend(loc="lower left", bbox_to_anchor=(0.08, 0.15))
fig.tight_layout()
fig.savefig(here / "flights.png", dpi=100)
print(f"{len(rows)} checkpoints -> {here / 'flights.csv'}")
