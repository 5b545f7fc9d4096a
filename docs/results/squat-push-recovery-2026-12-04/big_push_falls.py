"""Falls after the biggest pushes: for each bcg-eval summary.json given (with per-seed ``pushes``),
the seeds whose largest push (|dv|, m/s) in the 3 s before their end (the fall, or the run's end)
is >= 0.28 m/s, and how many of them and of the others fell (the table of
../squat-horizon64-2026-12-04/README.md).

    PYTHONPATH=. .venv/bin/python docs/results/squat-push-recovery-2026-12-04/big_push_falls.py NAME=summary.json ...
"""

import json
import math
import sys
from pathlib import Path

BIG = 0.28  # m/s
WINDOW = 3.0  # s before the end


def largest_recent_push(seed: dict) -> float:
    end = seed["survived_s"]
    sizes = [math.hypot(*p["dv"]) for p in seed["pushes"] if end - WINDOW <= p["t_s"] < end]
    return max(sizes, default=0.0)


def main(runs: list[str]) -> None:
    print(f"| policy | falls after a push >= {BIG} m/s | falls after smaller pushes |\n|---|---|---|")
    for spec in runs:
        name, path = spec.split("=", 1)
        seeds = json.loads(Path(path).read_text())["per_seed"]
        big = [s for s in seeds if largest_recent_push(s) >= BIG]
        small = [s for s in seeds if largest_recent_push(s) < BIG]
        print(f"| {name} | {sum(s['fell'] for s in big)}/{len(big)} | {sum(s['fell'] for s in small)}/{len(small)} |")


if __name__ == "__main__":
    main(sys.argv[1:])
