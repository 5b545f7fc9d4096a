"""``bcg-sim2sim --soak SECONDS``: the policy running for a long time on one interface.

Same processes and startup as every scenario (bcg_sim_bridge.sim2sim.runner), then RUN
for the given time while the resident memory and CPU time of bridge, node and sentinel
are sampled once a second. The bridge keeps no trajectory log here (it would grow with
the run and hide the processes' own memory growth). Reported:

- missed deadlines: control ticks whose period exceeded ``2 x control_dt`` (from the
  node's timing topic), and the worst period;
- watchdog trips after RUN (any is a failure) and sentinel takeovers;
- memory growth per process: mean RSS over the last tenth of the run minus the mean over
  the tenth after a warm-up (the first 10 % or 30 s, whichever is shorter);
- CPU per process (share of one core over the run), state-to-command latency and
  jitter percentiles.

Pass: no trip, no takeover, no missed deadline, every process's growth < ``max_growth_mb``.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

import numpy as np

from bcg_sim_bridge.node_list import sim2sim_nodes
from bcg_sim_bridge.sim2sim import analysis
from bcg_sim_bridge.sim2sim.driver import DriverError
from bcg_sim_bridge.harness.processes import ProcessGroup
from bcg_sim_bridge.sim2sim.runner import RunOptions, node_extras, start_processes, start_up

MAX_GROWTH_MB = 20.0
DEADLINE_PERIODS = 2.0


def rss_mb(pid: int) -> float | None:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024.0
    except OSError:
        return None
    return None


def memory_growth_mb(t: np.ndarray, rss: np.ndarray) -> float:
    """Mean RSS of the last tenth minus the mean of the tenth after the warm-up."""
    if t.size < 10:
        return float("nan")
    span = t[-1] - t[0]
    warm = t[0] + min(0.1 * span, 30.0)
    tenth = 0.1 * span
    early = rss[(t >= warm) & (t <= warm + tenth)]
    late = rss[t >= t[-1] - tenth]
    return float(late.mean() - early.mean()) if early.size and late.size else float("nan")


def run_soak(opts: RunOptions, interface: str, seconds: float, max_growth_mb: float = MAX_GROWTH_MB) -> dict:
    from tqdm import tqdm

    soak_dir = opts.out_dir / f"{interface}_soak"
    soak_dir.mkdir(parents=True, exist_ok=True)
    specs = sim2sim_nodes(
        interface, str(opts.policy), opts.robot_config, opts.bridge_config, opts.sdk_domain,
        bridge_extra={"physics_dt": opts.physics_dt, "realtime_factor": 1.0},
        **node_extras(opts),
    )
    group = ProcessGroup(soak_dir / "logs", {"ROS_DOMAIN_ID": str(opts.ros_domain),
                                             "ROS_AUTOMATIC_DISCOVERY_RANGE": "LOCALHOST"}, nice=opts.nice)
    driver = start_processes(group, specs)
    marks: dict[str, float] = {"start": time.monotonic()}
    samples: dict[str, list[tuple[float, float]]] = {role: [] for role in group.nodes}
    error = ""
    try:
        start_up(opts, driver, marks)
        if not driver.wait_for_state("RUN", 5.0):
            raise DriverError(f"policy node did not report RUN (state '{driver.node_state}')")
        n_timing = len(driver.timing)
        cpu_at_run = group.cpu_seconds()
        end = marks["run"] + seconds
        with tqdm(total=int(seconds), desc=f"soak {interface}", unit="s") as bar:
            while (now := time.monotonic()) < end:
                for role, node in group.nodes.items():
                    mb = rss_mb(node.process.pid) if node.alive() else None
                    if mb is not None:
                        samples[role].append((now, mb))
                if driver.node_state != "RUN":
                    error = f"node left RUN ({driver.node_state}: {driver.last_fault})"
                    break
                bar.update(int(now - marks["run"]) - bar.n)
                time.sleep(1.0)
        marks["stop"] = time.monotonic()
        cpu = {role: round((spent - cpu_at_run.get(role, 0.0)) / (marks["stop"] - marks["run"]), 3)
               for role, spent in group.cpu_seconds().items()}  # over the RUN only, not the start-up
        driver.operator("stop")
        driver.wait_for_state("DAMP", 2.0)
    except DriverError as err:
        error, cpu, n_timing = str(err), group.cpu_share(), 0
    finally:
        events, timing = driver.events(), list(driver.timing)
        driver.close()
        exit_codes = group.stop_all()
    t_run = marks.get("run")
    trips = [e.text for e in events if e.source == "node_fault" and t_run is not None and e.t >= t_run
             and e.t < marks.get("stop", np.inf) - 1e-3]
    takeovers = [e.text for e in events if e.source == "sentinel" and e.text == "TAKEN_OVER"]
    timing_arr = np.asarray(timing[n_timing:], dtype=np.float64).reshape(-1, 3)
    period_ms = timing_arr[:, 0]
    dt_ms = opts.robot.control_dt * 1e3
    missed = int(np.sum(period_ms > DEADLINE_PERIODS * dt_ms))
    memory = {}
    for role, rows in samples.items():
        arr = np.asarray(rows).reshape(-1, 2)
        memory[role] = {"start_mb": float(arr[0, 1]) if arr.size else float("nan"),
                        "end_mb": float(arr[-1, 1]) if arr.size else float("nan"),
                        "growth_mb": memory_growth_mb(arr[:, 0], arr[:, 1])}
    growth_ok = all(np.isfinite(m["growth_mb"]) and m["growth_mb"] < max_growth_mb for m in memory.values())
    passed = not error and not trips and not takeovers and missed == 0 and growth_ok
    ran_s = (marks.get("stop", time.monotonic()) - t_run) if t_run is not None else 0.0
    return {
        "interface": interface, "requested_s": seconds, "ran_s": round(ran_s, 1), "passed": bool(passed),
        "error": error, "trips": trips, "sentinel_takeovers": len(takeovers),
        "ticks": int(period_ms.size), "missed_deadlines": missed, "deadline_ms": DEADLINE_PERIODS * dt_ms,
        "period_max_ms": float(period_ms.max()) if period_ms.size else float("nan"),
        "jitter_ms": analysis.percentiles_ms(np.abs(period_ms - dt_ms) / 1e3),
        "latency_ms": analysis.percentiles_ms(timing_arr[:, 1] / 1e3),
        "compute_ms": analysis.percentiles_ms(timing_arr[:, 2] / 1e3),
        "memory": memory, "max_growth_mb": max_growth_mb, "cpu_share": cpu, "exit_codes": exit_codes,
        "load_average": os.getloadavg()[0], "log_dir": str(soak_dir),
    }


def soak_markdown(results: list[dict], header: dict) -> str:
    lines = ["# Sim-to-sim soak", ""] + [f"- {k}: {v}" for k, v in header.items()] + [""]
    cols = ["interface", "result", "ran s", "ticks", "missed (> 2 periods)", "worst period ms", "jitter p99 ms",
            "latency p99 ms", "trips", "takeovers", "growth MB (bridge / node / sentinel)", "CPU (bridge / node / sentinel)"]
    lines += ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    for r in results:
        mem, cpu = r["memory"], r["cpu_share"]
        growth = " / ".join(f"{mem.get(k, {}).get('growth_mb', float('nan')):.1f}" for k in ("bridge", "policy", "sentinel"))
        share = " / ".join(f"{100 * cpu.get(k, float('nan')):.0f} %" for k in ("bridge", "policy", "sentinel"))
        lines.append("| " + " | ".join([
            r["interface"], "PASS" if r["passed"] else "FAIL", f"{r['ran_s']:.0f}", str(r["ticks"]),
            str(r["missed_deadlines"]), f"{r['period_max_ms']:.1f}", f"{r['jitter_ms'].get('p99', float('nan')):.2f}",
            f"{r['latency_ms'].get('p99', float('nan')):.2f}", str(len(r["trips"])), str(r["sentinel_takeovers"]),
            growth, share]) + " |")
        if r["error"]:
            lines.append(f"\n{r['interface']}: {r['error']}")
    return "\n".join(lines) + "\n"
