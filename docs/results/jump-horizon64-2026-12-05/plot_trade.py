"""Falls of 40 against mean longest flight at matched env steps, every arm of this study (reads judged.json).

    PYTHONPATH=. .venv/bin/python docs/results/jump-horizon64-2026-12-05/plot_trade.py
"""

import json
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

HERE = Path(__file__).resolve().parent


def main() -> None:
    judged = json.loads((HERE / "judged.json").read_text())
    arms = [("uncapped 32-step, 600-iteration schedule", "tab:gray", "o", judged["controls"]),
            ("64-step, 300-iteration schedule", "tab:blue", "s",
             {k: v["point"] for k, v in judged["runs"].items()}),
            ("32-step, 300-iteration schedule (control)", "tab:orange", "^",
             {k: v["point"] for k, v in judged["schedule_control"]["runs"].items()})]
    fig, ax = plt.subplots(figsize=(6.4, 4.4))
    for label, color, marker, points in arms:
        for i, (name, (falls, flight)) in enumerate(sorted(points.items())):
            ax.scatter(flight, falls, color=color, marker=marker, s=60, label=label if i == 0 else None)
            ax.annotate(name.replace("uncapped_", ""), (flight, falls), textcoords="offset points", xytext=(5, 4),
                        fontsize=8, color=color)
    ax.axvline(0.15, color="k", lw=0.8, ls="--")
    ax.text(0.1485, 1, "0.15 s", fontsize=8, ha="right")
    ax.set_ylim(0, 21)
    ax.set_xlabel("mean longest flight at the two matched checkpoints (s)")
    ax.set_ylabel("falls of 40 (seeds 0-19, two checkpoints)")
    ax.set_title("Jump: 64-step windows vs their schedule control")
    ax.legend(fontsize=8, loc="center right")
    fig.tight_layout()
    fig.savefig(HERE / "trade.png", dpi=120)


if __name__ == "__main__":
    main()
