"""``bcg-robot-info``: validate the robot config, build every model variant, print the contract."""

from __future__ import annotations

import argparse
import time

from bcg_robot.cli.arguments import positive_float_at_most
from bcg_robot.config import DEFAULT_ROBOT_CONFIG, load_robot_config
from bcg_robot.contract import PolicyContract
from bcg_robot.errors import exit_on_input_error
from bcg_robot.model import CONTACT_PRESETS, build_model, effective_contact_timeconst
from bcg_robot.observation import observation_size
from bcg_robot.standing import stand_at_default_pose


MAX_STAND_S = 60.0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="bcg-robot-info", description=__doc__)
    parser.add_argument("--robot-config", default=str(DEFAULT_ROBOT_CONFIG), help="robot config YAML")
    parser.add_argument("--stand-seconds", type=positive_float_at_most(MAX_STAND_S), default=2.0,
                        help=f"PD standing check per variant (at most {MAX_STAND_S:g} s)")
    args = parser.parse_args(argv)
    with exit_on_input_error(parser.prog):
        cfg = load_robot_config(args.robot_config)
    print(f"robot config {args.robot_config}: '{cfg.name}', {cfg.num_joints} joints, MJCF {cfg.mjcf_path()}")
    print(f"{'idx':>3}  {'joint':<22}{'lower':>8}{'upper':>8}{'vel':>6}{'effort':>7}{'q0':>7}{'kp':>6}{'kd':>5}")
    for i, name in enumerate(cfg.joint_names):
        print(
            f"{i:>3}  {name:<22}{cfg.position_lower[i]:>8.3f}{cfg.position_upper[i]:>8.3f}{cfg.velocity_limits[i]:>6.0f}"
            f"{cfg.effort_limits[i]:>7.0f}{cfg.default_pose[i]:>7.2f}{cfg.kp[i]:>6.0f}{cfg.kd[i]:>5.1f}"
        )
    contract = PolicyContract.for_robot(cfg)
    n_obs = observation_size(contract.observation_spec, cfg.num_joints)
    print(f"policy contract: control_dt {cfg.control_dt} s, action_scale {cfg.action_scale}, observation {n_obs} = "
          + " + ".join(contract.observation_spec))
    failed = False
    variants = [("train", c) for c in CONTACT_PRESETS] + [("bridge", None)]
    for variant, contact in variants:
        t0 = time.perf_counter()
        model = build_model(cfg, variant, contact=contact)
        build_s = time.perf_counter() - t0
        result = stand_at_default_pose(model, cfg, args.stand_seconds)
        failed |= result.fell
        tc = effective_contact_timeconst(model, model.geom("floor").id)
        label = f"{variant}/{contact or 'stiff'}"
        print(
            f"{label:<15} dt {model.opt.timestep * 1e3:.1f} ms, contact timeconst {tc * 1e3:.1f} ms, "
            f"{model.ngeom} geoms, built in {build_s:.2f} s; stand {args.stand_seconds:.0f} s: "
            f"root {result.min_root_height:.3f}..{result.final_root_height:.3f} m, "
            f"max joint error {result.max_joint_error:.3f} rad -> {'FELL' if result.fell else 'ok'}"
        )
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
