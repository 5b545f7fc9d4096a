"""The sim-to-sim report: JSON (everything), Markdown and a console table, and a PNG plot."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np

from bcg_sim_bridge.physics import DriveMode


def _fmt(v, digits: int = 2) -> str:
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return "-"
    return f"{v:.{digits}f}" if isinstance(v, float) else str(v)


def verdict(r: dict) -> str:
    """PASS, FAIL (the policy or its safety layer), or HARNESS ERROR (the test rig)."""
    if r.get("passed"):
        return "PASS"
    return "HARNESS ERROR" if r.get("harness_error") else "FAIL"


def summary_rows(results: list[dict]) -> list[list[str]]:
    rows = []
    for r in results:
        pen = r.get("foot_penetration_mm", {})
        bt, nt = r.get("bridge_timing_ms", {}), r.get("node_timing_ms", {})
        rows.append([
            r["interface"], r["scenario"], verdict(r),
            r.get("reason", "-"), _fmt(r.get("trip_ms"), 0), _fmt(r.get("reaction_ms"), 0), "yes" if r.get("fell") else "no",
            _fmt(r.get("e_track_cm", {}).get("mean")), _fmt(r.get("root_height_error_cm", {}).get("mean")),
            _fmt(pen.get("bridge_mean")), _fmt(pen.get("difference_mean")),
            _fmt(bt.get("p99"), 3), _fmt(bt.get("realtime_factor"), 3), _fmt(nt.get("jitter", {}).get("p99"), 2),
            shaped_fraction(r.get("target_shaping")),
        ])
    return rows


HEADER = ["interface", "scenario", "result", "DAMP reason", "node trip ms", "damping at motors ms", "fell", "E_track cm",
          "root z err cm", "foot pen. mm", "pen. diff vs train mm", "bridge step p99 ms", "bridge RTF", "node jitter p99 ms",
          "policy ticks shaped"]


def shaped_fraction(counts: dict | None) -> str:
    """``shaped/policy ticks``: how often the node's safety layer changed the policy's targets."""
    if not counts or "policy_ticks" not in counts:
        return "-"
    return f"{counts.get('shaped', 0)}/{counts['policy_ticks']}"


def shaping_line(counts: dict | None) -> str | None:
    """The report's line on the node's target shaping over the policy's ticks (None: not reported)."""
    if not counts or "policy_ticks" not in counts:
        return None
    n = counts["policy_ticks"]
    return (f"- target shaping: of {n} policy ticks the safety layer changed targets in {counts.get('shaped', 0)} "
            f"(soft joint limits {counts.get('joint_limits', 0)}, step limit {counts.get('rate', 0)}, torque window "
            f"{counts.get('torque', 0)}); the training simulation has none of these stages")


def markdown(results: list[dict], header: dict, title: str = "Sim-to-sim report", level: int = 1) -> str:
    """The report of one policy; ``level`` is the heading level of ``title`` (2 inside a run over several policies)."""
    h = "#" * level
    lines = [f"{h} {title}", ""]
    lines += [f"- {k}: {v}" for k, v in header.items()]
    lines += ["", "| " + " | ".join(HEADER) + " |", "|" + "---|" * len(HEADER)]
    lines += ["| " + " | ".join(row) + " |" for row in summary_rows(results)]
    lines += ["", f"{h}# Scenarios", ""]
    for r in results:
        lines += [f"{h}## {r['interface']} / {r['scenario']}: {verdict(r)}", "",
                  f"- injected: {r['injects']}", f"- expected: {r['expected']}", f"- observed: {r.get('observed', '-')}"]
        if r.get("error"):
            lines.append(f"- error: {r['error']}")
        if r.get("harness_error"):
            lines.append(f"- harness error: {r['harness_error']}")
        shaping = shaping_line(r.get("target_shaping"))
        if shaping:
            lines.append(shaping)
        if r.get("machine_cpu"):
            m = r["machine_cpu"]
            lines.append(f"- machine during the run: CPU {100 * m['busy']:.0f} % busy, {100 * m['steal']:.0f} % stolen "
                         "by the hypervisor")
        skipped = (r.get("bridge_counters") or {}).get("states_skipped_behind", 0)
        if skipped:
            lines.append(f"- the bridge ran behind real time and skipped {skipped} of its state publications "
                         f"(sent {r['bridge_counters'].get('states_sent', '?')})")
        if r.get("unexpected_trips"):
            lines.append(f"- unexpected trips: {r['unexpected_trips']}")
        for a in r.get("spoiled_attempts", []):
            why = a.get("why") or a.get("harness_error") or "a watchdog tripped before the injection"
            lines.append(f"- discarded attempt ({why}): {a.get('observed')} [{a.get('log_dir')}]")
        lines.append("- timeline: " + "; ".join(f"{e['t']:.2f}s {e['source']}: {e['text']}" for e in r.get("timeline", [])))
        lines.append("")
    return "\n".join(lines)


def print_console(results: list[dict], header: dict) -> None:
    try:
        from rich.console import Console
        from rich.table import Table
    except ImportError:  # plain text when rich is absent
        print(markdown(results, header))
        return
    table = Table(title="bcg-sim2sim")
    for h in HEADER:
        table.add_column(h)
    for row in summary_rows(results):
        style = "green" if row[2] == "PASS" else "red"
        table.add_row(*row, style=style)
    console = Console(width=200)
    console.print(table)
    for r in results:
        console.print(f"[bold]{r['interface']}/{r['scenario']}[/bold] expected: {r['expected']}\n"
                      f"    observed: {r.get('observed', '-')}" + (f"\n    error: {r['error']}" if r.get("error") else ""))


def write_json(results: list[dict], header: dict, path: Path) -> Path:
    def clean(o):
        if isinstance(o, float) and math.isnan(o):
            return None
        if isinstance(o, dict):
            return {str(k): clean(v) for k, v in o.items()}
        if isinstance(o, (list, tuple)):
            return [clean(v) for v in o]
        if isinstance(o, np.generic):
            return o.item()
        return o

    path.write_text(json.dumps(clean({"header": header, "results": results}), indent=2))
    return path


def plot(results: list[dict], path: Path) -> Path | None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from bcg_sim_bridge.sim2sim.analysis import BridgeLog

    runs = [r for r in results if r.get("bridge_log")]
    if not runs:
        return None
    fig, axes = plt.subplots(4, 1, figsize=(11, 11), sharex=True)
    for r in runs:
        log = BridgeLog.load(r["bridge_log"])
        t = log.sim_time
        label = f"{r['interface']}/{r['scenario']}"
        axes[0].plot(t, log.root_pos[:, 2], label=label)
        axes[1].plot(t, np.abs(log.q - np.asarray(log.cmd_q) * (log.cmd_kp > 0)).max(axis=1) * (log.cmd_kp.max(axis=1) > 0),
                     label=label)
        axes[2].step(t, log.drive_mode, where="post", label=label)
        axes[3].plot(t, log.foot_penetration * 1e3, label=label)
    axes[0].axhline(0.3, color="k", ls="--", lw=0.8)
    axes[0].set_ylabel("root height (m)")
    axes[1].set_ylabel("max |q - q_cmd| (rad)\n(while stiff)")
    axes[2].set_yticks([m.value for m in DriveMode], [m.name.lower() for m in DriveMode])
    axes[2].set_ylabel("what the motors got")
    axes[3].set_ylabel("foot penetration (mm)")
    axes[3].set_xlabel("simulated time (s)")
    axes[0].legend(fontsize=7, ncol=3)
    fig.suptitle("bcg-sim2sim: bridge trajectory per scenario")
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    plt.close(fig)
    return path
