"""The protocol's table from the six runs' report.json files."""
import json
import sys
from pathlib import Path

here = Path(__file__).parent
rows = []
for d in ("0.5", "0.0"):
    for run in sorted((here / f"damping-{d}").glob("run*")):
        if not run.is_dir():
            continue
        for pol in sorted(p for p in run.iterdir() if (p / "report.json").is_file()):
            for r in json.loads((pol / "report.json").read_text())["results"]:
                e = r.get("e_track_cm") or {}
                h = r.get("root_height_error_cm") or {}
                rows.append((pol.name, r["scenario"], d, run.name, r["passed"], r.get("fell"), r.get("reason", ""),
                             e.get("mean"), e.get("max"), h.get("mean"), r.get("min_root_height_m"), len(r.get("spoiled_attempts", []))))
fmt = lambda x: "" if x is None else (f"{x:.2f}" if isinstance(x, float) else str(x))
print("| policy | scenario | damping | run | passed | fell | reason | E_track mean cm | E_track max cm | height err mean cm | min root height m | spoiled |")
print("|---" * 12 + "|")
for row in sorted(rows, key=lambda r: (r[0], r[1], r[2], r[3])):
    print("| " + " | ".join(fmt(x) for x in row) + " |")
