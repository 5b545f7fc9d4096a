"""``bcg-sim2sim``: sim-to-sim validation of a policy over the real node, sentinel and bridge processes.

Starts the MuJoCo sim bridge, the policy node and the sentinel as processes from the
same node list the launch files use (no launch_ros), drives the startup sequence
(lifecycle configure + activate, ramp, hold in the elastic band, release, operator
RUN), runs the policy and writes a report (JSON, Markdown, console table, PNG plot and
a GIF when offscreen rendering works). ``--fault`` adds fault-injection scenarios; each
must end in DAMP with the expected reason. E_track and the root-height error of the RUN
are measured against the policy's reference motion (the clip its contract names,
``models/motions/<motion_id>.csv`` or ``--reference``, played from RUN at the node's
phase), or the default pose for a policy without one. ``--policy all`` runs the
scenarios for every ``models/*.onnx`` in turn (a report section and subfolder each).
Exit status 1 on a fall, an unexpected trip or a scenario that did not end as expected
(for any policy); 2 on bad input (a policy, a reference clip, a safety config the node
would refuse, an --out that is a file: before any process starts); 3 when only the test
rig failed (a probe that left no report: a harness error, retried under ``--attempts``,
as are attempts whose bridge ran below 0.9x real time).
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import random
import resource
import sys
import time
from pathlib import Path
from typing import NamedTuple

from bcg_robot.cli.arguments import (DDS_DOMAINS, dds_domain, integer_in, nonnegative_float, nonnegative_float_at_most,
                                     positive_float_at_most, positive_int)
from bcg_robot.config import DEFAULT_ROBOT_CONFIG, RobotConfig, load_robot_config
from bcg_robot.contract import PolicyContract
from bcg_robot.errors import BCGInputError, ConfigError, ContractError, exit_on_input_error
from bcg_robot.motion_csv import MotionError, check_trained_clip, load_motion_csv
from bcg_robot.onnx_policy import OnnxPolicy
from bcg_robot.paths import output_dir, share_file
from bcg_sim_bridge.config import DEFAULT_BRIDGE_CONFIG, INTERFACES, load_bridge_config
from bcg_sim_bridge.policies import resolve_policies
from bcg_sim_bridge.sim2sim.analysis import DEFAULT_POSE_REFERENCE, RunReference
from bcg_sim_bridge.sim2sim.scenarios import FAULTS, SCENARIOS


# bounds of the run lengths: past them a value is a typo (--run-seconds 1e308 was an OverflowError
# in the run's wait, after bridge and node had started; --soak 1e308 a run with no end)
MAX_RUN_S = 3600.0
MAX_SOAK_S = 7 * 24 * 3600.0
# memory is sampled once a second and its growth needs ten samples after the warm-up: a shorter
# soak failed with no reason given
MIN_SOAK_S = 30.0
MAX_DROPOUT_MS = 60_000.0
MAX_PUSH_N = 10_000.0  # 30x the G1's weight: beyond any recovery test, short of a diverging simulation


def _soak_seconds(text: str) -> float:
    value = nonnegative_float_at_most(MAX_SOAK_S)(text)
    if 0 < value < MIN_SOAK_S:
        raise argparse.ArgumentTypeError(f"must be 0 (no soak) or at least {MIN_SOAK_S:g} s, got {text!r}")
    return value


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="bcg-sim2sim", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--interface", choices=(*INTERFACES, "both"), default=None,
                   help="bridge <-> node transport (default: ros2; both with --soak)")
    p.add_argument("--policy", action="append", default=[],
                   help="policy ONNX, repeatable; 'all' = every models/*.onnx, one report section and subfolder each "
                        "(default: the shipped models/g1_policy.onnx, else a default-pose export)")
    p.add_argument("--reference", default="",
                   help="reference clip (G1 CSV) of a policy with a motion (default: models/motions/<motion_id>.csv)")
    p.add_argument("--models-dir", default="", help="where 'all' finds policies and the clips are looked up (default: models/)")
    p.add_argument("--robot-config", default=str(DEFAULT_ROBOT_CONFIG))
    p.add_argument("--bridge-config", default=str(DEFAULT_BRIDGE_CONFIG))
    p.add_argument("--fault", action="append", choices=(*FAULTS, "all"), default=[],
                   help="fault-injection scenario (repeatable; 'all' = every one)")
    p.add_argument("--no-nominal", action="store_true", help="only the fault scenarios")
    p.add_argument("--run-seconds", type=nonnegative_float_at_most(MAX_RUN_S), default=0.0,
                   help=f"RUN time of the nominal run (default: motion length or 4 s; at most {MAX_RUN_S:g})")
    p.add_argument("--dropout-ms", type=positive_float_at_most(MAX_DROPOUT_MS), default=300.0,
                   help=f"length of the state dropout and CRC faults (at most {MAX_DROPOUT_MS:g} ms)")
    p.add_argument("--push-force", type=positive_float_at_most(MAX_PUSH_N), default=500.0,
                   help=f"N, for 0.2 s on the pelvis (at most {MAX_PUSH_N:g})")
    p.add_argument("--physics-hz", type=float, default=500.0, choices=(500.0, 1000.0))
    p.add_argument("--out", default="", help="report folder (default runs/sim2sim/<time>)")
    p.add_argument("--video", action=argparse.BooleanOptionalAction, default=True, help="render a GIF of the nominal run")
    p.add_argument("--safety-config", default="", help="the node's safety config (default: config/safety.yaml)")
    p.add_argument("--stale-periods", type=nonnegative_float, default=0.0,
                   help="override the safety config's stale_periods for this run (0: keep it); the report says so")
    p.add_argument("--nice", type=integer_in(-20, 19), default=0,
                   help="niceness of bridge, node and sentinel; < 0 puts them ahead of batch jobs on a shared machine "
                        "(needs CAP_SYS_NICE, as real-time priority does on a robot PC)")
    p.add_argument("--attempts", type=positive_int, default=1,
                   help="re-run a scenario spoiled by a load watchdog's trip BEFORE its injection (stale state, a stalled "
                        "tick or loop, a late sentinel heartbeat: an overloaded machine; any other early trip fails "
                        "the scenario), by a harness error or by a bridge that ran below 0.9x real time, up to "
                        "this many times in all; spoiled attempts stay in the report")
    p.add_argument("--ros-domain", type=dds_domain, default=-1, help="ROS_DOMAIN_ID for the run (default: env or random)")
    p.add_argument("--soak", type=_soak_seconds, default=0.0, metavar="SECONDS",
                   help="instead of the scenarios: run the policy this long per interface and report missed deadlines, "
                        f"trips, memory growth and CPU (soak.md / soak.json; {MIN_SOAK_S:g} s to {MAX_SOAK_S:g} s, a week)")
    return p


def _domains(requested: int) -> tuple[int, int]:
    if requested < 0:
        env = os.environ.get("ROS_DOMAIN_ID")
        try:
            # 1-100: ROS 2's safe range on Linux (the ports of domains past 101 fall in the ephemeral range)
            requested = dds_domain(env) if env else random.randrange(1, 100)
        except argparse.ArgumentTypeError as err:  # was int()'s traceback
            raise BCGInputError("ROS_DOMAIN_ID (environment)", str(err)) from None
    # the SDK's Cyclone DDS domain, next to the ROS one (below it at the top of the range: wrapping
    # 232 round to 0 put the rig on the real robot's domain)
    return requested, requested + 1 if requested + 1 in DDS_DOMAINS else requested - 1


CAP_SYS_NICE = 23  # linux/capability.h


def may_set_niceness(nice: int, effective_caps: int, rlimit_nice: int) -> bool:
    """Whether a process may set its niceness to ``nice`` (Linux, sched(7)): raising it always;
    lowering it with CAP_SYS_NICE, or down to the ceiling RLIMIT_NICE gives (20 - its soft limit)."""
    if nice >= 0 or effective_caps >> CAP_SYS_NICE & 1 or rlimit_nice == resource.RLIM_INFINITY:
        return True
    return nice >= 20 - rlimit_nice


def _check_nice(nice: int) -> None:
    """A niceness below 0 without the privilege raised inside Popen at the first process start,
    a traceback after the probe had started."""
    status = Path("/proc/self/status").read_text()
    caps = int(next((line.split()[1] for line in status.splitlines() if line.startswith("CapEff:")), "0"), 16)
    if not may_set_niceness(nice, caps, resource.getrlimit(resource.RLIMIT_NICE)[0]):
        raise BCGInputError("--nice", f"{nice} needs CAP_SYS_NICE or a raised RLIMIT_NICE, which this process lacks")


def _check_bridge_config(path: str, physics_hz: float):
    """The bridge config as the run overrides it (physics rate, real time), and none of the
    settings that would let a run pass without testing anything: a frozen robot, a bridge that
    stops by itself, or bridge-side damping."""
    cfg = load_bridge_config(path, overrides={"physics_dt": 1.0 / physics_hz, "realtime_factor": 1.0})
    for key, harmless in (("frozen_pose", False), ("duration_s", 0.0), ("command_timeout_s", 0.0)):
        if getattr(cfg, key) != harmless:
            raise ConfigError(path, f"key '{key}': {getattr(cfg, key)} would let sim-to-sim pass without testing the "
                                    f"policy and its safety layer; it must be {harmless} here")
    return cfg


def _joint_damping_line(extra: float) -> str:
    if extra == 0:
        return "none added: the joints' damping is the training model's"
    return f"{extra:g} N m s/rad added on every joint, which the training model does not have"


class SafetyChoice(NamedTuple):
    path: str  # the safety config node and sentinel get
    description: str  # for the report
    sentinel_timeout_s: float  # 0: the sentinel's default


def _safety_config(path: str, stale_periods: float, robot: RobotConfig, policies: list[OnnxPolicy],
                   out: Path) -> SafetyChoice:
    """The safety config of the run (``--stale-periods`` > 0 relaxes it) and the sentinel's
    timeout: a stale limit past the sentinel's default timeout gets a sentinel that waits one
    control period longer, since a stalled node must trip before the sentinel takes over
    (the sentinel refuses to start otherwise). A config the node would refuse at configure
    with any of the run's ``policies`` (the checks of the :class:`ControlLoop` it builds there:
    a state wait too long for the robot, soft limits that exclude the default pose) is a
    :class:`ConfigError` or :class:`ContractError` here, before any process starts."""
    from bcg_policy_node.config.safety_config import DEFAULT_SAFETY_CONFIG, load_safety_config
    from bcg_policy_node.safety.control_loop import ControlLoop
    from bcg_policy_node.sentinel.sentinel_watch import DEFAULT_TIMEOUT_S, sentinel_timeout_for
    from bcg_robot.yaml_dataclass import dump_dataclass

    source = path or str(DEFAULT_SAFETY_CONFIG)
    cfg = load_safety_config(source)
    if stale_periods > 0:
        described = f"{source} with stale_periods {stale_periods:g} instead of {cfg.stale_periods:g} (--stale-periods)"
        cfg = dataclasses.replace(cfg, stale_periods=stale_periods, source=f"{source} with --stale-periods {stale_periods:g}")
        cfg.validate()
        source = str(dump_dataclass(cfg, out / "safety.yaml"))
    else:
        described = f"{source} (stale after {cfg.stale_periods:g} periods)"
    for policy in policies:  # what the node's configure checks: the ControlLoop it builds validates the config
        ControlLoop(robot, policy, cfg)
    timeout = sentinel_timeout_for(cfg.stale_after(robot.control_dt), robot.control_dt)
    if timeout == DEFAULT_TIMEOUT_S:
        return SafetyChoice(source, described, 0.0)
    return SafetyChoice(source, f"{described}; sentinel timeout_s {timeout:g}", timeout)


@dataclasses.dataclass(frozen=True)
class PolicyRun:
    """One policy of a run, validated before any process starts: its file, the policy as the node loads it
    (contract, gains), its reference and report folder."""

    path: Path
    origin: str
    policy: OnnxPolicy
    reference: RunReference
    reference_note: str
    out_dir: Path

    @property
    def contract(self) -> PolicyContract:
        return self.policy.contract

    @property
    def label(self) -> str:
        return f"{self.path} ({self.origin}, motion '{self.contract.motion_id}')"


def load_reference(contract: PolicyContract, policy: Path, robot: RobotConfig, requested: str,
                   models_dir: Path) -> tuple[RunReference, str]:
    """(reference, how the report names it) of a policy: its motion clip (``--reference`` or
    ``<models>/motions/<motion_id>.csv``) when the contract has a motion length, else the default pose.
    A missing or invalid clip is a :class:`MotionError` naming the file."""
    if contract.motion_length_s <= 0:
        if requested:
            raise ContractError(policy, f"--reference {requested}: the policy has no reference motion (motion_length_s 0; "
                                        f"motion '{contract.motion_id}'), it is scored against the default pose")
        return DEFAULT_POSE_REFERENCE, "default pose (the policy has no reference motion)"
    clip_path = Path(requested) if requested else models_dir / "motions" / f"{contract.motion_id}.csv"
    if not clip_path.is_file():
        raise MotionError(clip_path, f"no such reference clip for policy {policy} (motion '{contract.motion_id}'"
                                     + ("" if requested else "; --reference PATH names another") + ")")
    check_trained_clip(clip_path, contract.motion_sha256, str(policy))
    clip = load_motion_csv(clip_path, robot, name=contract.motion_id)
    # the trainer's motion length is the clip resampled at the control rate: its duration plus
    # up to one period (bcg_train.motion.reference); another length is another clip or frame rate
    if not clip.duration_s - 1e-6 <= contract.motion_length_s <= clip.duration_s + 2 * robot.control_dt:
        raise MotionError(clip_path, f"is {clip.duration_s:g} s at {clip.fps:g} fps, but policy {policy} was trained on a "
                                     f"{contract.motion_length_s:g} s motion (motion_length_s): another clip or frame rate")
    note = (f"motion '{contract.motion_id}' ({clip_path}, {clip.duration_s:g} s at {clip.fps:g} fps), played from the "
            f"node's first RUN tick, wrapping every {contract.motion_length_s:g} s (the node's phase)")
    return RunReference(contract.motion_id, clip, contract.motion_length_s), note


def _policy_dirs(paths: list[Path], out: Path) -> list[Path]:
    """The report folder of each policy: ``out`` for one, ``out/<stem>`` (unique) for several."""
    if len(paths) == 1:
        return [out]
    dirs, seen = [], set()
    for p in paths:
        name, k = p.stem, 1
        while name in seen:
            k += 1
            name = f"{p.stem}_{k}"
        seen.add(name)
        dirs.append(out / name)
    return dirs


def validate_policies(args: argparse.Namespace, robot: RobotConfig, out: Path) -> list[PolicyRun]:
    """Every policy of the run with its contract and reference (a bad one is exit 2 here, before any process)."""
    if args.models_dir and not Path(args.models_dir).is_dir():  # else 'all' would fall back to a default-pose policy
        raise ConfigError(args.models_dir, "not a directory (--models-dir)")
    models_dir = Path(args.models_dir) if args.models_dir else share_file("models")
    chosen = resolve_policies(args.policy, robot, out, models_dir)
    if args.reference and len(chosen) > 1:
        raise ContractError(args.reference, f"--reference applies to one policy; this run has {len(chosen)} "
                                            "(each is scored against <models>/motions/<motion_id>.csv)")
    runs = []
    for (path, origin), folder in zip(chosen, _policy_dirs([p for p, _ in chosen], out)):
        # the node's own loader: graph signature, contract, gains (a bad file is exit 2 here,
        # with the reason the node would give, before any process starts)
        policy = OnnxPolicy.load(path, robot)
        reference, note = load_reference(policy.contract, path, robot, args.reference, models_dir)
        runs.append(PolicyRun(path, origin, policy, reference, note, folder))
    return runs


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    with exit_on_input_error("bcg-sim2sim"):
        ros_domain, sdk_domain = _domains(args.ros_domain)
        _check_nice(args.nice)
        out = output_dir(args.out or f"runs/sim2sim/{time.strftime('%Y%m%d-%H%M%S')}", "--out")
        robot = load_robot_config(args.robot_config)
        bridge_cfg = _check_bridge_config(args.bridge_config, args.physics_hz)
        policies = validate_policies(args, robot, out)
        safety = _safety_config(args.safety_config, args.stale_periods, robot, [run.policy for run in policies], out)
    if args.soak > 0 and len(policies) > 1:
        print(f"bcg-sim2sim: error: --soak runs one policy, this run has {len(policies)}", file=sys.stderr)
        return 2
    os.environ["ROS_DOMAIN_ID"] = str(ros_domain)
    os.environ.setdefault("ROS_AUTOMATIC_DISCOVERY_RANGE", "LOCALHOST")

    from bcg_sim_bridge.sim2sim import report
    from bcg_sim_bridge.sim2sim.driver import init_ros
    from bcg_sim_bridge.sim2sim.runner import RunOptions

    import rclpy

    base = RunOptions(robot=robot, robot_config=args.robot_config, policy=policies[0].path, policy_origin=policies[0].origin,
                      out_dir=out, ros_domain=ros_domain, sdk_domain=sdk_domain, bridge_config=args.bridge_config,
                      dropout_ms=args.dropout_ms, push_force=args.push_force, physics_dt=1.0 / args.physics_hz,
                      safety_config=safety.path, sentinel_timeout_s=safety.sentinel_timeout_s, nice=args.nice)
    interface = args.interface or ("both" if args.soak > 0 else "ros2")
    interfaces = INTERFACES if interface == "both" else (interface,)
    # extra joint damping in the bridge is help the training model never gave: a report says how much
    common = {"robot": robot.name, "physics": f"{args.physics_hz:.0f} Hz", "safety_config": safety.description,
              "bridge_joint_damping": _joint_damping_line(bridge_cfg.joint_damping)}
    if args.soak <= 0 and not scenario_plan(args, interfaces)[0]:  # "all 0 scenario(s) passed" would be exit 0
        print(f"bcg-sim2sim: error: nothing to run: --no-nominal and no --fault that applies to {' and '.join(interfaces)}",
              file=sys.stderr)
        return 2
    if args.soak > 0:
        return _soak(dataclasses.replace(base, reference=policies[0].reference), interfaces, args.soak,
                     header_base={"policy": policies[0].label, **common})
    init_ros()
    t0 = time.monotonic()
    sections = []
    try:
        for run in policies:
            run.out_dir.mkdir(parents=True, exist_ok=True)
            run_s = args.run_seconds or (run.contract.motion_length_s if run.contract.motion_length_s > 0 else 4.0)
            opts = dataclasses.replace(base, policy=run.path, policy_origin=run.origin, out_dir=run.out_dir, run_s=run_s,
                                       reference=run.reference)
            header = {"policy": run.label, "reference": run.reference_note, **common, "nice": args.nice,
                      "ros_domain": ros_domain, "sdk_domain": sdk_domain}
            sections.append(_run_policy(opts, run, args, interfaces, header, report))
    finally:
        rclpy.try_shutdown()
    wall_s = round(time.monotonic() - t0, 1)
    if len(sections) > 1:
        _write_combined(sections, {**common, "policies": len(sections), "wall_s": wall_s}, out, report)
        for s in sections:
            print(f"bcg-sim2sim: {s['policy']}: {s['verdict']} ({s['out_dir'] / 'report.md'})")
    codes = [s["exit_code"] for s in sections]
    return 1 if 1 in codes else 3 if 3 in codes else 0


def scenario_plan(args: argparse.Namespace, interfaces) -> tuple[list, list[str]]:
    """The (scenario, interface) pairs the run will run, and those it cannot (not applicable)."""
    faults = FAULTS if "all" in args.fault else tuple(dict.fromkeys(args.fault))
    plan = [(SCENARIOS[name], itf) for itf in interfaces
            for name in ((() if args.no_nominal else ("none",)) + faults) if itf in SCENARIOS[name].interfaces]
    skipped = [f"{name} on {itf}: not applicable ({SCENARIOS[name].interfaces} only)" for itf in interfaces
               for name in faults if itf not in SCENARIOS[name].interfaces]
    return plan, skipped


def _run_policy(opts, run: PolicyRun, args: argparse.Namespace, interfaces, header: dict, report) -> dict:
    """The scenarios of one policy, its report in ``opts.out_dir``; a section of the run (exit code, verdict, results)."""
    from bcg_sim_bridge.sim2sim.runner import retry_reason, run_scenario
    from bcg_sim_bridge.sim2sim.video import render_video

    out = opts.out_dir
    plan, skipped = scenario_plan(args, interfaces)
    header["not_run"] = skipped or "none"
    results = []
    t0 = time.monotonic()
    from tqdm import tqdm

    for scenario, itf in tqdm(plan, desc=f"sim2sim {run.path.stem}", unit="scenario"):
        spoiled = []
        for attempt in range(max(1, args.attempts)):
            result = run_scenario(opts, scenario, itf, attempt)
            why = retry_reason(result)
            if not why or attempt + 1 >= args.attempts:
                break
            spoiled.append({"why": why, **{k: result.get(k) for k in ("observed", "error", "harness_error",
                                                                       "unexpected_trips", "log_dir")}})
        result["spoiled_attempts"] = spoiled
        result["policy"] = str(run.path)
        results.append(result)
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
    code = 1 if failed else 3 if broken else 0
    if not code:
        print(f"bcg-sim2sim: all {len(results)} scenario(s) passed in {header['wall_s']} s")
    verdict = "FAILED" if failed else "HARNESS ERROR" if broken else f"all {len(results)} scenario(s) passed"
    return {"policy": str(run.path), "out_dir": out, "exit_code": code, "verdict": verdict, "header": header, "results": results}


def _write_combined(sections: list[dict], header: dict, out: Path, report) -> None:
    """The run's report over several policies: one section per policy (its own report is in its folder)."""
    report.write_json([dict(r) for s in sections for r in s["results"]], {
        **header, "per_policy": [{"policy": s["policy"], "out_dir": str(s["out_dir"]), "exit_code": s["exit_code"],
                                  "verdict": s["verdict"], "header": s["header"]} for s in sections]}, out / "report.json")
    parts = ["# Sim-to-sim report: every policy", ""] + [f"- {k}: {v}" for k, v in header.items()] + [""]
    parts += [f"- {s['policy']}: **{s['verdict']}** ([report]({s['out_dir'].relative_to(out) / 'report.md'}))" for s in sections]
    for s in sections:
        parts += ["", report.markdown(s["results"], s["header"], title=f"Policy {s['policy']}", level=2)]
    (out / "report.md").write_text("\n".join(parts))


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
