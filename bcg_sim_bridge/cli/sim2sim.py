"""``bcg-sim2sim``: sim-to-sim validation of a policy over the real node, sentinel and bridge processes.

Starts the MuJoCo sim bridge, the policy node and the sentinel as processes from the
same node list the launch files use (no launch_ros), drives the startup sequence
(lifecycle configure + activate, ramp, hold in the elastic band, release, operator
RUN), runs the policy and writes a report (JSON, Markdown, console table, PNG plot and
a GIF when offscreen rendering works). ``--fault`` adds fault-injection scenarios; each
must end in DAMP with the expected reason. Exit status 1 on a fall, an unexpected
trip or a scenario that did not end as expected; 2 on bad input; 3 when only the test
rig failed (a probe that left no report: a harness error, retried under ``--attempts``).
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import random
import time
from pathlib import Path

from bcg_robot.config import DEFAULT_ROBOT_CONFIG, load_robot_config
from bcg_robot.errors import exit_on_input_error
from bcg_robot.onnx_policy import OnnxPolicy
from bcg_sim_bridge.config import DEFAULT_BRIDGE_CONFIG, INTERFACES, load_bridge_config
from bcg_sim_bridge.policies import resolve_policy
from bcg_sim_bridge.sim2sim.scenarios import FAULTS, SCENARIOS


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="bcg-sim2sim", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--interface", choices=(*INTERFACES, "both"), default=None,
                   help="bridge <-> node transport (default: ros2; both with --soak)")
    p.add_argument("--policy", default="", help="policy ONNX (default: models/ shipped policy, else a default-pose export)")
    p.add_argument("--robot-config", default=str(DEFAULT_ROBOT_CONFIG))
    p.add_argument("--bridge-config", default=str(DEFAULT_BRIDGE_CONFIG))
    p.add_argument("--fault", action="append", choices=(*FAULTS, "all"), default=[],
                   help="fault-injection scenario (repeatable; 'all' = every one)")
    p.add_argument("--no-nominal", action="store_true", help="only the fault scenarios")
    p.add_argument("--run-seconds", type=float, default=0.0, help="RUN time of the nominal run (default: motion length or 4 s)")
    p.add_argument("--dropout-ms", type=float, default=300.0)
    p.add_argument("--push-force", type=float, default=500.0, help="N, for 0.2 s on the pelvis")
    p.add_argument("--physics-hz", type=float, default=500.0, choices=(500.0, 1000.0))
    p.add_argument("--out", default="", help="report folder (default runs/sim2sim/<time>)")
    p.add_argument("--video", action=argparse.BooleanOptionalAction, default=True, help="render a GIF of the nominal run")
    p.add_argument("--safety-config", default="", help="the node's safety config (default: config/safety.yaml)")
    p.add_argument("--stale-periods", type=float, default=0.0,
                   help="override the safety config's stale_periods for this run (0: keep it); the report says so")
    p.add_argument("--nice", type=int, default=0,
                   help="niceness of bridge, node and sentinel; < 0 puts them ahead of batch jobs on a shared machine "
                        "(needs CAP_SYS_NICE, as real-time priority does on a robot PC)")
    p.add_argument("--attempts", type=int, default=1,
                   help="re-run a scenario spoiled by a watchdog trip BEFORE its injection (e.g. stale state on an "
                        "overloaded machine) or by a harness error up to this many times in all; spoiled attempts "
                        "stay in the report")
    p.add_argument("--ros-domain", type=int, default=-1, help="ROS_DOMAIN_ID for the run (default: env or random)")
    p.add_argument("--soak", type=float, default=0.0, metavar="SECONDS",
                   help="instead of the scenarios: run the policy this long per interface and report missed deadlines, "
                        "trips, memory growth and CPU (soak.md / soak.json)")
    return p


def _domains(requested: int) -> tuple[int, int]:
    if requested < 0:
        env = os.environ.get("ROS_DOMAIN_ID")
        requested = int(env) if env else random.randrange(100, 200)
    return requested, (requested + 1) % 233  # the SDK's Cyclone DDS domain, next to the ROS one


def _safety_config(path: str, stale_periods: float, out: Path) -> tuple[str, str]:
    """(path, description) of the safety config node and sentinel get."""
    from bcg_policy_node.config.safety_config import DEFAULT_SAFETY_CONFIG, load_safety_config
    from bcg_robot.yaml_dataclass import dump_dataclass

    source = path or str(DEFAULT_SAFETY_CONFIG)
    cfg = load_safety_config(source)
    if stale_periods <= 0:
        return source, f"{source} (stale after {cfg.stale_periods:g} periods)"
    relaxed = dump_dataclass(dataclasses.replace(cfg, stale_periods=stale_periods), out / "safety.yaml")
    return str(relaxed), f"{source} with stale_periods {stale_periods:g} instead of {cfg.stale_periods:g} (--stale-periods)"


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    out = Path(args.out or f"runs/sim2sim/{time.strftime('%Y%m%d-%H%M%S')}")
    out.mkdir(parents=True, exist_ok=True)
    with exit_on_input_error("bcg-sim2sim"):
        robot = load_robot_config(args.robot_config)
        load_bridge_config(args.bridge_config)
        policy, origin = resolve_policy(args.policy, robot, out)
        # the node's own loader: graph signature, contract, gains (a bad file is exit 2 here,
        # with the reason the node would give, before any process starts)
        contract = OnnxPolicy.load(policy, robot).contract
        safety_config = _safety_config(args.safety_config, args.stale_periods, out)
    ros_domain, sdk_domain = _domains(args.ros_domain)
    os.environ["ROS_DOMAIN_ID"] = str(ros_domain)
    os.environ.setdefault("ROS_AUTOMATIC_DISCOVERY_RANGE", "LOCALHOST")
    run_s = args.run_seconds or (contract.motion_length_s if contract.motion_length_s > 0 else 4.0)

    from bcg_sim_bridge.sim2sim import report
    from bcg_sim_bridge.sim2sim.driver import init_ros
    from bcg_sim_bridge.sim2sim.runner import RunOptions, run_scenario
    from bcg_sim_bridge.sim2sim.video import render_video

    import rclpy

    opts = RunOptions(robot=robot, robot_config=args.robot_config, policy=policy, policy_origin=origin, out_dir=out,
                      ros_domain=ros_domain, sdk_domain=sdk_domain, bridge_config=args.bridge_config, run_s=run_s,
                      dropout_ms=args.dropout_ms, push_force=args.push_force, physics_dt=1.0 / args.physics_hz,
                      safety_config=safety_config[0], nice=args.nice)
    interface = args.interface or ("both" if args.soak > 0 else "ros2")
    interfaces = INTERFACES if interface == "both" else (interface,)
    if args.soak > 0:
        return _soak(opts, interfaces, args.soak, header_base={"policy": f"{policy} ({origin}, motion '{contract.motion_id}')",
                                                                "robot": robot.name, "physics": f"{args.physics_hz:.0f} Hz",
                                                                "safety_config": safety_config[1]})
    faults = FAULTS if "all" in args.fault else tuple(dict.fromkeys(args.fault))
    plan = [(SCENARIOS[name], itf) for itf in interfaces
            for name in ((() if args.no_nominal else ("none",)) + faults) if itf in SCENARIOS[name].interfaces]
    skipped = [f"{name} on {itf}: not applicable ({SCENARIOS[name].interfaces} only)" for itf in interfaces
               for name in faults if itf not in SCENARIOS[name].interfaces]
    header = {"policy": f"{policy} ({origin}, motion '{contract.motion_id}')", "robot": robot.name,
              "physics": f"{args.physics_hz:.0f} Hz", "safety_config": safety_config[1], "nice": args.nice, "ros_domain": ros_domain, "sdk_domain": sdk_domain,
              "not_run": skipped or "none"}
    init_ros()
    results = []
    t0 = time.monotonic()
    try:
        from tqdm import tqdm

        for scenario, itf in tqdm(plan, desc="sim2sim", unit="scenario"):
            spoiled = []
            for attempt in range(max(1, args.attempts)):
                result = run_scenario(opts, scenario, itf, attempt)
                retry = result.get("spoiled_before_injection") or result.get("harness_error")
                if result.get("passed") or not retry or attempt + 1 >= args.attempts:
                    break
                spoiled.append({k: result.get(k) for k in ("observed", "error", "harness_error", "unexpected_trips", "log_dir")})
            result["spoiled_attempts"] = spoiled
            results.append(result)
    finally:
        rclpy.try_shutdown()
    header["wall_s"] = round(time.monotonic() - t0, 1)
    nominal = next((r for r in results if r["scenario"] == "none" and r.get("bridge_log")), None)
    if args.video and nominal is not None:
        gif, note = render_video(Path(nominal["bridge_log"]), out / "sim2sim.gif", args.robot_config)
        header["video"] = str(gif) if gif else note
    else:
        header["video"] = "not requested" if not args.video else "no nominal run"
    png = report.plot(results, out / "sim2sim.png")
    header["plot"] = str(png) if png else "none"
    report.write_json(results, header, out / "report.json")
    (out / "report.md").write_text(report.markdown(results, header))
    report.print_console(results, header)
    print(f"report: {out / 'report.md'} (JSON {out / 'report.json'}, plot {header['plot']}, video {header['video']})")
    failed = [f"{r['interface']}/{r['scenario']}" for r in results if not r.get("passed") and not r.get("harness_error")]
    broken = [f"{r['interface']}/{r['scenario']} ({r['harness_error']})" for r in results
              if not r.get("passed") and r.get("harness_error")]
    if failed:
        print(f"bcg-sim2sim: FAILED: {', '.join(failed)}")
    if broken:
        print(f"bcg-sim2sim: HARNESS ERROR (the test rig, not the policy or its safety layer): {', '.join(broken)}")
    if failed or broken:
        return 1 if failed else 3
    print(f"bcg-sim2sim: all {len(results)} scenario(s) passed in {header['wall_s']} s")
    return 0


def _soak(opts, interfaces, seconds: float, header_base: dict) -> int:
    import json

    import rclpy

    from bcg_sim_bridge.sim2sim.driver import init_ros
    from bcg_sim_bridge.sim2sim.soak import run_soak, soak_markdown

    init_ros()
    t0 = time.monotonic()
    try:
        results = [run_soak(opts, itf, seconds) for itf in interfaces]
    finally:
        rclpy.try_shutdown()
    header = {**header_base, "soak_s": seconds, "wall_s": round(time.monotonic() - t0, 1)}
    (opts.out_dir / "soak.json").write_text(json.dumps({"header": header, "results": results}, indent=2, default=str))
    text = soak_markdown(results, header)
    (opts.out_dir / "soak.md").write_text(text)
    print(text)
    failed = [r["interface"] for r in results if not r["passed"]]
    print(f"bcg-sim2sim --soak: {'FAILED on ' + ', '.join(failed) if failed else 'passed'} ({opts.out_dir / 'soak.md'})")
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
