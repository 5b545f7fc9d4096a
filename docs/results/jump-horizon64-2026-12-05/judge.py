"""The protocol's secondary rule for the 64-step runs, against the uncapped 32-step runs at matched env steps.

    PYTHONPATH=. .venv/bin/python docs/results/jump-horizon64-2026-12-05/judge.py
"""

import csv
import json
from pathlib import Path

HERE = Path(__file__).resolve().parent
UNCAPPED = json.loads((HERE.parent / "jump-env-cap-seeds-2026-12-05" / "summary.json").read_text())["runs"]


def point(falls: list[int], flights: list[float]) -> tuple[int, float]:
    return sum(falls), sum(flights) / len(flights)


def dominates(a: tuple[int, float], b: tuple[int, float]) -> bool:
    """a has no more falls and no less flight than b (and is not b)."""
    return a[0] <= b[0] and a[1] >= b[1] and a != b


def judge_table(table: Path, iterations: tuple[int, int], controls: dict) -> tuple[dict, dict]:
    """A selection table's rows by iteration, and its point at the two matched checkpoints with the
    uncapped runs it is dominated by and dominates."""
    rows = {int(r["iteration"]): r for r in csv.DictReader(table.open())}
    p = point([int(rows[i]["falls"]) for i in iterations], [float(rows[i]["flight_s"]) for i in iterations])
    return rows, {"point": p,
                  "dominated_by": [n for n, c in controls.items() if dominates(c, p)],
                  "dominates": [n for n, c in controls.items() if dominates(p, c)]}


def verdict(runs: dict) -> str:
    """The secondary rule, once both seeds have run: moves the trade iff neither run is dominated and each
    dominates an uncapped run; does not iff either is dominated; otherwise unclear."""
    if any(r["dominated_by"] for r in runs.values()):
        return "does not move the trade"
    if len(runs) < 2:
        return "waits for seed 2"
    if all(r["dominates"] for r in runs.values()):
        return "moves the trade"
    return "unclear"


# Amendment 3: 32-step windows with the 300-iteration schedule, judged at iterations 50 and 100 (the same env steps).
SCHEDULE_CONTROL = {"seed1": HERE / "void_seed1_horizon32_checkpoints.csv",
                    "seed2": HERE / "schedule_control_seed2" / "select" / "checkpoints.csv"}


def schedule_control(controls: dict, runs: dict) -> dict:
    """Amendment 3's rule on the schedule control, and (without a rule) each 64-step run against its own seed's."""
    out = {"runs": {}}
    for seed, table in SCHEDULE_CONTROL.items():
        if not table.exists():
            continue
        _, entry = judge_table(table, (50, 100), controls)
        p = entry["point"]
        if seed in runs:
            h64 = tuple(runs[seed]["point"])
            entry["horizon64_point"] = h64
            entry["horizon64_dominates_it"] = dominates(h64, p)
            entry["it_dominates_horizon64"] = dominates(p, h64)
        out["runs"][seed] = entry
    seed2 = out["runs"].get("seed2")
    if seed2 is None:
        out["verdict"] = "waits for the seed-2 control"
    elif not seed2["dominated_by"] and seed2["dominates"]:
        out["verdict"] = "the schedule explains it"
    else:
        out["verdict"] = "unclear"
    return out


def main() -> None:
    controls = {name: point([r["falls"][k] for k in ("50", "100")], [r["flight_s"][k] for k in ("50", "100")])
                for name, r in UNCAPPED.items() if r["arm"] == "uncapped"}
    out = {"controls": controls, "runs": {}}
    for table in sorted(HERE.glob("seed*/select/checkpoints.csv")):
        rows, judged = judge_table(table, (25, 50), controls)
        out["runs"][table.parts[-3]] = {
            **judged,
            "checkpoints": {i: {k: rows[i][k] for k in ("falls", "e_track_cm", "flight_s")} for i in sorted(rows)},
            "primary_met": any(float(r["flight_s"]) >= 0.15 and int(r["falls"]) <= 3 for r in rows.values()),
        }
    out["verdict"] = verdict(out["runs"])
    out["schedule_control"] = schedule_control(controls, out["runs"])
    (HERE / "judged.json").write_text(json.dumps(out, indent=1))
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
