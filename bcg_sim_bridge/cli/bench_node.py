"""``bcg-bench-node``: the policy node, its watchdogs and the sentinel, timed as real processes
against the sim bridge (see :mod:`bcg_sim_bridge.bench.node_timing`).

Prints a table, writes JSON and a PNG to ``--out-dir``.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from bcg_robot.cli.arguments import dds_domain, positive_float, positive_float_at_most
from bcg_robot.errors import exit_on_input_error
from bcg_robot.paths import output_dir
from bcg_robot.wire import TRANSPORT_ROS2, TRANSPORTS
from bcg_sim_bridge.bench.node_timing import NodeBenchSettings, plot, print_table, run_node_benchmark


MAX_DURATION_S = 3600.0


def parse_args(argv: list[str] | None) -> NodeBenchSettings:
    parser = argparse.ArgumentParser(prog="bcg-bench-node", description=__doc__.split("\n\n")[0])
    parser.add_argument("--duration", type=positive_float_at_most(MAX_DURATION_S), default=60.0,
                        help=f"seconds of policy running to time (default 60, at most {MAX_DURATION_S:g})")
    parser.add_argument("--interface", choices=TRANSPORTS, default=TRANSPORT_ROS2)
    parser.add_argument("--no-physics", action="store_true",
                        help="the bridge's G1 stays at the default pose (frozen_pose) instead of MuJoCo physics")
    parser.add_argument("--state-rate", type=positive_float, default=500.0, help="robot state rate, Hz (default 500)")
    parser.add_argument("--sdk-domain", type=dds_domain, default=171, help="unitree_sdk DDS domain (keep it off the ROS domain)")
    parser.add_argument("--out-dir", default="bench_node_out", help="where JSON, PNG and process logs go")
    args = parser.parse_args(argv)
    return NodeBenchSettings(duration_s=args.duration, interface=args.interface, frozen_pose=args.no_physics,
                             state_rate_hz=args.state_rate, sdk_domain=args.sdk_domain, out_dir=Path(args.out_dir))


def main(argv: list[str] | None = None) -> int:
    settings = parse_args(argv)
    with exit_on_input_error("bcg-bench-node"):
        output_dir(settings.out_dir, "--out-dir")
    result = run_node_benchmark(settings)
    out = settings.out_dir
    print_table(result)
    plot(result, out / "bench_node.png")
    (out / "bench_node.json").write_text(json.dumps(result, indent=2))
    print(f"wrote {out / 'bench_node.json'} and {out / 'bench_node.png'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
