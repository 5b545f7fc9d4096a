"""bcg-claim: SHAC+BCG, SHAC (stiff, soft) and brax PPO on the stiff-contact hopper, N seeds each.

Runs the fixed protocol of :mod:`bcg_train.claim.protocol`, evaluates every final
policy in the MuJoCo C ``eval`` variant, prints a paper-style table and writes
``claim.json``, ``claim_details.json`` (curves and per-seed scores) and ``claim.png``.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import time
from pathlib import Path

from bcg_robot.cli.arguments import positive_int
from bcg_robot.errors import exit_on_input_error
from bcg_robot.paths import output_dir
from bcg_train.claim.protocol import METHOD_NAMES, ClaimProtocol, method_by_name


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="bcg-claim", description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=positive_int, default=5, help="seeds 0..N-1 of every method")
    parser.add_argument("--methods", nargs="+", choices=METHOD_NAMES, default=list(METHOD_NAMES))
    parser.add_argument("--out", type=Path, default=Path("runs/claim"))
    parser.add_argument("--shac-iterations", type=positive_int, default=None,
                        help="quick checks only: SHAC iterations (PPO keeps 10x SHAC's env steps); the protocol's is 100")
    args = parser.parse_args(argv)
    with exit_on_input_error(parser.prog):
        output_dir(args.out, "--out")

    from bcg_train.claim import report
    from bcg_train.claim.runner import run_method
    from bcg_train.sim.jax_setup import enable_compilation_cache

    enable_compilation_cache()
    protocol = dataclasses.replace(ClaimProtocol(), seeds=tuple(range(args.seeds)))
    if args.shac_iterations is not None:
        protocol = protocol.with_shac_iterations(args.shac_iterations)
    t0 = time.perf_counter()
    results = []
    for name in args.methods:
        results.append(run_method(method_by_name(name), protocol))
    claim = report.claim_json(results, protocol)
    (args.out / "claim.json").write_text(json.dumps(claim, indent=2) + "\n")
    details = {"total_wall_s": time.perf_counter() - t0, "methods": report.details_json(results)}
    (args.out / "claim_details.json").write_text(json.dumps(details, indent=2) + "\n")
    report.plot(results, claim, args.out / "claim.png")
    text = report.table(claim, results)
    (args.out / "claim_table.txt").write_text(text + "\n")
    print(text)
    print(f"total {details['total_wall_s']:.0f} s; wrote {args.out}/claim.json, claim_details.json, claim.png")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
