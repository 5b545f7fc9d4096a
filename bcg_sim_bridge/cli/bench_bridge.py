"""``bcg-bench-bridge``: how fast the sim bridge runs, and how long a sim-to-sim run takes
(see :mod:`bcg_sim_bridge.bench.bridge_speed`).

Physics only at 500 Hz and 1 kHz, the bridge process with each interface at both rates,
and one nominal ``bcg-sim2sim`` run. Prints a table and writes JSON (``--out``).
"""

from __future__ import annotations

import argparse
import json
import os
import random
from pathlib import Path

from bcg_robot.cli.arguments import positive_float_at_most
from bcg_robot.errors import exit_on_input_error
from bcg_robot.paths import output_file
from bcg_robot.wire import TRANSPORTS
from bcg_sim_bridge.bench.bridge_speed import bridge_process, physics_only, print_rows, sim2sim_wall


MIN_SIM_S, MAX_SIM_S = 0.1, 3600.0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="bcg-bench-bridge", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sim-seconds", type=positive_float_at_most(MAX_SIM_S), default=5.0,
                        help=f"simulated time per bridge measurement ({MIN_SIM_S:g} to {MAX_SIM_S:g} s)")
    parser.add_argument("--state-hz", type=positive_float_at_most(1000.0), default=250.0,
                        help="state messages per second (robot: 500; at most the physics rate)")
    parser.add_argument("--no-sim2sim", action="store_true", help="skip the sim-to-sim wall-time measurement")
    parser.add_argument("--out", default="runs/bench_bridge.json")
    args = parser.parse_args(argv)
    if args.sim_seconds < MIN_SIM_S:  # no whole physics step to time
        parser.error(f"--sim-seconds {args.sim_seconds:g} is under {MIN_SIM_S:g} s")
    out = Path(args.out)
    with exit_on_input_error(parser.prog):  # before minutes of measurement
        output_file(out, "--out")
    domain = random.randrange(100, 200, 2)
    rows = [physics_only(hz, args.sim_seconds) for hz in (500.0, 1000.0)]
    try:
        from tqdm import tqdm
    except ImportError:  # progress is optional
        def tqdm(x, **_):
            return x
    cases = [(itf, hz) for itf in TRANSPORTS for hz in (500.0, 1000.0)]
    for itf, hz in tqdm(cases, desc="bridge", unit="case"):
        rows.append(bridge_process(itf, hz, args.sim_seconds, domain, args.state_hz))
    if not args.no_sim2sim:
        rows.append(sim2sim_wall(domain))
    print_rows(rows)
    out.write_text(json.dumps({"load_average": os.getloadavg(), "cpus": os.cpu_count(), "rows": rows}, indent=2))
    print(f"written {out} (load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs)")
    return 0 if all("error" not in r for r in rows) else 1


if __name__ == "__main__":
    raise SystemExit(main())
