"""The jump at tau 400 N, 800 N and 1600 N: training reward by iteration and by wall time, and the
falls / E_track of every 50th checkpoint on the selection seeds 0-19 (the protocol's measure).

    PYTHONPATH=. .venv/bin/python docs/results/jump-tau800-2026-12-03/plot_comparison.py
"""

from pathlib import Path

from bcg_train.learn.curves import plot_run_comparison

HERE = Path(__file__).resolve().parent
RUNS = {"tau 400 N (first jump run)": HERE.parent / "jump-cpu-small-2026-12-03", "tau 800 N": HERE,
        "tau 1600 N": HERE.parent / "jump-tau1600-2026-12-03"}
print(f"wrote {plot_run_comparison(RUNS, HERE / 'comparison.png')}")
