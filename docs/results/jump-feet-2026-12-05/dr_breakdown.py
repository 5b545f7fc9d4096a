"""Per-seed flight and falls of every judged checkpoint of the push-off and feet runs against each
seed's domain draw (base mass, friction, PD gain scale, latency). Seeds 0-19 draw the same domains
for every checkpoint, so this is 20 domains seen through 16 policies, not 320 independent ones.

    python docs/results/jump-feet-2026-12-05/dr_breakdown.py
"""

import glob
import json
from pathlib import Path

import numpy as np

RESULTS = Path(__file__).resolve().parent.parent
PATTERNS = ("jump-feet-2026-12-05/select/it*_seeds0-19/summary.json", "jump-pushoff-2026-12-05/part*/select/it*_seeds0-19/summary.json")


def main() -> None:
    rows = []
    for pattern in PATTERNS:
        for path in sorted(glob.glob(str(RESULTS / pattern))):
            for p in json.loads(Path(path).read_text())["per_seed"]:
                d = p["domain"]
                rows.append((d["mass_delta"], d["friction"], d["gain_scale"], d["late"], p["longest_flight_s"], p["fell"], len(p["pushes"])))
    mass, friction, gain, late, flight, fell, pushes = (np.asarray(c) for c in zip(*rows))
    print(f"{len(rows)} rollouts; rollouts with a push: {int((pushes > 0).sum())} (the first push comes after 3-6 s, the clip is 3 s)")
    for name, v in (("base mass delta", mass), ("friction", friction), ("gain scale", gain)):
        lo, hi = np.quantile(v, [1 / 3, 2 / 3])
        thirds = (v <= lo, (v > lo) & (v <= hi), v > hi)
        print(f"{name:16s} r(flight) {np.corrcoef(flight, v)[0, 1]:+.2f}; by thirds, low to high: falls "
              + " / ".join(f"{fell[m].mean():.2f}" for m in thirds) + ", flight " + " / ".join(f"{flight[m].mean():.3f}" for m in thirds))
    print(f"latency: falls {fell[late].mean():.2f} with a step of latency, {fell[~late].mean():.2f} without")


if __name__ == "__main__":
    main()
