"""The bridge benchmark (``bcg-bench-bridge``): how fast the sim bridge runs, and how long a sim-to-sim run takes.

* :func:`physics_only`: :class:`~bcg_sim_bridge.physics.BridgePhysics` stepping in this process;
* :func:`bridge_process`: the bridge process with one interface (``ros2``, ``unitree_sdk``),
  unpaced (``realtime_factor`` 0), publishing state at its configured rate: the real-time
  factor it could sustain (> 1 means it keeps up with the robot's clock);
* :func:`sim2sim_wall`: the wall time of one nominal ``bcg-sim2sim`` run (default-pose or
  shipped policy, ros2).

:func:`print_rows` prints the table.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path


from bcg_robot.config import load_robot_config
from bcg_sim_bridge.config import BridgeConfig, ElasticBandConfig
from bcg_sim_bridge.physics import BridgePhysics, default_pose_command
from bcg_sim_bridge.sim2sim.analysis import BridgeLog, percentiles_ms

CODE_ROOT = str(Path(__file__).resolve().parents[2])


def _env(domain: int) -> dict[str, str]:
    path = os.pathsep.join(p for p in (CODE_ROOT, os.environ.get("PYTHONPATH", "")) if p)
    return {**os.environ, "PYTHONPATH": path, "ROS_DOMAIN_ID": str(domain),
            "ROS_AUTOMATIC_DISCOVERY_RANGE": "LOCALHOST"}


def physics_only(hz: float, sim_s: float) -> dict:
    robot = load_robot_config()
    physics = BridgePhysics(robot, BridgeConfig(physics_dt=1 / hz, elastic_band=ElasticBandConfig(enabled=False)))
    physics.set_command(default_pose_command(robot))
    n = int(sim_s * hz)
    t0 = time.perf_counter()
    physics.step(n)
    wall = time.perf_counter() - t0
    return {"case": f"physics only {hz:.0f} Hz", "rtf": sim_s / wall, "step_us": 1e6 * wall / n}


def bridge_process(interface: str, hz: float, sim_s: float, domain: int, state_hz: float) -> dict:
    with tempfile.TemporaryDirectory() as tmp:
        log = Path(tmp) / "bench.npz"
        argv = [sys.executable, "-m", "bcg_sim_bridge.bridge_node", "--ros-args", "-p", f"interface:={interface}",
                "-p", f"physics_dt:={1 / hz!r}", "-p", "realtime_factor:=0.0", "-p", f"duration_s:={sim_s!r}",
                "-p", f"log_path:={log}", "-p", f"domain_id:={domain + 1}", "-p", f"state_rate_hz:={state_hz!r}"]
        proc = subprocess.run(argv, capture_output=True, text=True, env=_env(domain), timeout=600)
        if proc.returncode != 0 or not log.is_file():
            return {"case": f"bridge {interface} {hz:.0f} Hz", "error": proc.stdout[-500:] + proc.stderr[-500:]}
        data = BridgeLog.load(log)
    step = percentiles_ms(data.step_compute_s)
    return {"case": f"bridge {interface} {hz:.0f} Hz (state {state_hz:.0f} Hz)", "rtf": data.pacing["sim_s"] / data.pacing["wall_s"],
            "step_us": 1e3 * step["p50"], "step_p99_us": 1e3 * step["p99"], "states": data.counters["states_sent"]}


def sim2sim_wall(domain: int) -> dict:
    with tempfile.TemporaryDirectory() as tmp:
        t0 = time.monotonic()
        proc = subprocess.run([sys.executable, "-m", "bcg_sim_bridge.cli.sim2sim", "--out", tmp, "--no-video",
                               "--attempts", "3", "--ros-domain", str(domain)], capture_output=True, text=True, env=_env(domain), timeout=900)
        wall = time.monotonic() - t0
        report = json.loads((Path(tmp) / "report.json").read_text()) if (Path(tmp) / "report.json").is_file() else {}
    results = report.get("results", [{}])
    marks = results[0].get("marks", {}) if results else {}
    attempts = 1 + len(results[0].get("spoiled_attempts", [])) if results else 0
    return {"case": "bcg-sim2sim nominal (ros2)", "wall_s": wall, "exit_code": proc.returncode, "attempts": attempts,
            "startup_to_hold_s": marks.get("hold"), "run_s": (marks.get("stop", 0) - marks.get("run", 0)) if marks else None}


def print_rows(rows: list[dict]) -> None:
    print(f"{'case':<42}{'RTF':>8}{'step p50 us':>13}{'step p99 us':>13}  other")
    for r in rows:
        other = {k: (round(v, 2) if isinstance(v, float) else v) for k, v in r.items()
                 if k not in ("case", "rtf", "step_us", "step_p99_us")}
        rtf = f"{r['rtf']:.2f}" if "rtf" in r else "-"
        p50 = f"{r['step_us']:.0f}" if "step_us" in r else "-"
        p99 = f"{r['step_p99_us']:.0f}" if "step_p99_us" in r else "-"
        print(f"{r['case']:<42}{rtf:>8}{p50:>13}{p99:>13}  {other if other else ''}")
