"""Falls against pushes: for each bcg-eval summary.json given (with per-seed ``pushes``), every
seed's last push before its end as a point (world dv_x, dv_y; red: it fell), and the time
from that push to the fall. Prints one line per fall.

    PYTHONPATH=. .venv/bin/python docs/results/squat-push-often-2026-12-04/plot_pushes.py OUT.png NAME=summary.json ...
"""

import json
import sys
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def last_push(seed: dict) -> dict | None:
    before = [p for p in seed["pushes"] if p["t_s"] < seed["survived_s"]]
    return before[-1] if before else None


def main(out: str, runs: list[str]) -> None:
    fig, axes = plt.subplots(1, len(runs), figsize=(4.2 * len(runs), 4.2), squeeze=False)
    for ax, spec in zip(axes[0], runs):
        name, path = spec.split("=", 1)
        summary = json.loads(Path(path).read_text())
        falls, delays = 0, []
        for s in summary["per_seed"]:
            p = last_push(s)
            if p is None:
                if s["fell"]:
                    print(f"{name}: seed {s['seed']} fell at {s['survived_s']:.2f} s with no push before")
                continue
            ax.scatter(*p["dv"], c="tab:red" if s["fell"] else "tab:gray", s=28 if s["fell"] else 14)
            if s["fell"]:
                falls += 1
                delays.append(s["survived_s"] - p["t_s"])
                print(f"{name}: seed {s['seed']} fell at {s['survived_s']:.2f} s, {delays[-1]:.2f} s after a push of "
                      f"({p['dv'][0]:+.2f}, {p['dv'][1]:+.2f}) m/s at {p['t_s']:.2f} s")
        lim = max(summary["domain"]["push_velocity"], 0.05) * 1.1
        ax.set(xlim=(-lim, lim), ylim=(-lim, lim), xlabel="push dv_x (m/s, world; the clip faces +x)", ylabel="push dv_y (m/s, world)", aspect="equal")
        ax.axhline(0, c="k", lw=0.5), ax.axvline(0, c="k", lw=0.5)
        span = f", {min(delays):.1f}-{max(delays):.1f} s after it" if delays else ""
        ax.set_title(f"{name}\n{summary['falls']}/{summary['seeds']} falls (red){span}", fontsize=9)
    fig.suptitle("each seed's last push before its end", fontsize=10)
    fig.tight_layout()
    fig.savefig(out, dpi=110)
    print(f"wrote {out}")


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2:])
