"""The probe armed (``--armed``): it starts up and connects, and sends nothing until its go line."""

import os
import subprocess
import sys
from pathlib import Path

from bcg_sim_bridge.unitree_probe import read_result

ROOT = Path(__file__).resolve().parents[2]


def test_an_armed_probe_whose_stdin_closes_before_the_go_line_sends_nothing_and_says_why(tmp_path):
    """The sim2sim harness starts the probe before the run and closes its stdin if the run
    never reaches the injection: the probe must then leave, report why, and send nothing."""
    result = tmp_path / "probe.json"
    done = subprocess.run(
        [sys.executable, "-m", "bcg_sim_bridge.unitree_probe", "--armed", "--domain", "87", "--good", "5", "--bad", "5",
         "--wait", "5", "--result", str(result)],
        stdin=subprocess.DEVNULL, capture_output=True, text=True, cwd=ROOT, timeout=120,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    report = read_result(result)
    assert done.returncode == 1, done.stdout + done.stderr
    assert report == {"error": "stdin closed before the go line (--armed)"}
