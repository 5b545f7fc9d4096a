"""SHAC+BCG against plain SHAC on the stiff 250 Hz squat with 4 Newton iterations, same warm
start: training reward by iteration and wall time, the falls / E_track of every 50th checkpoint
on the selection seeds 0-19, and the training episodes ended.

    PYTHONPATH=. .venv/bin/python docs/results/squat-plain-newton4-2026-12-04/plot_comparison.py
"""

from pathlib import Path

from bcg_train.learn.curves import plot_run_comparison

HERE = Path(__file__).resolve().parent
RUNS = {"SHAC+BCG (../squat-stiff250-newton4-2026-12-04)": HERE.parent / "squat-stiff250-newton4-2026-12-04",
        "plain SHAC (this run)": HERE}
print(f"wrote {plot_run_comparison(RUNS, HERE / 'comparison.png')}")
