"""Do the leg drives saturate at the jump's push-off? (a results script of this folder)

Rolls each policy with `bcg-eval`'s rollout (bridge model, DR on as the policy's training config
sets it, seeds 0-4, one 3 s clip) and records, every control step, the drive torques as a fraction
of their effort limits, the pelvis's vertical velocity and the feet's world height. The push-off
window is the clip's climb from its lowest crouch (0.90 s) to where it passes the standing height
(1.16 s); the flight window is where the clip's feet are off the floor (1.08-1.40 s). It also says
what the `feet_height` reward term (weight 0.6, sigma 0.0032 m^2) would pay each policy there.

    PYTHONPATH=. .venv/bin/python docs/results/jump-pushoff-2026-12-05/saturation.py [--out DIR] [--policy LABEL=ONNX ...]

writes `saturation.json` and `saturation.png` to DIR (default: next to this file); the policies
default to jump-long's choice and the push-off run's iteration 450, and the clip played back
(the first policy's playback baseline) is always rolled first.
"""

from __future__ import annotations

import argparse
import json
import tempfile
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np

from bcg_robot.config import load_robot_config
from bcg_robot.onnx_policy import OnnxPolicy
from bcg_train.evaluate.baselines import PLAYBACK_BASELINE, write_baseline_policy
from bcg_train.evaluate.rollout import rollout
from bcg_train.learn.config import load_train_config
from bcg_train.motion.reference import KEY_BODIES, load_reference_motion
from bcg_robot.model import build_model

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[2]
POLICIES = {
    "jump-long it1850": ROOT / "docs/results/jump-long-2026-12-05/choice/it001850.onnx",
    "push-off it450": HERE / "part2/it000450.onnx",
}
LEG_JOINTS = ("hip_pitch", "knee", "ankle_pitch")
PUSH_OFF_S = (0.90, 1.16)
FLIGHT_S = (1.08, 1.40)
FEET_HEIGHT = (0.6, 0.0032)  # weight, sigma (m^2) of ../jump-feet-2026-12-05/jump_feet.yaml
SEEDS = range(5)
SATURATED = 0.98  # |tau| / effort at or above this counts as at the limit


class Recorder:
    def __init__(self, effort: np.ndarray, feet: list[int]):
        self.effort, self.feet, self.t, self.ratio, self.vz, self.feet_z = effort, feet, [], [], [], []

    def __call__(self, data, t: float) -> None:
        self.t.append(t)
        self.ratio.append(np.abs(np.asarray(data.ctrl)) / self.effort)
        self.vz.append(float(data.qvel[2]))
        self.feet_z.append(data.xpos[self.feet, 2].copy())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=HERE)
    parser.add_argument("--policy", action="append", default=None, metavar="LABEL=ONNX")
    args = parser.parse_args()
    chosen = dict(p.split("=", 1) for p in args.policy) if args.policy else POLICIES
    chosen = {k: Path(v) for k, v in chosen.items()}
    first_path = next(iter(chosen.values()))
    robot = load_robot_config()
    effort = np.asarray(robot.effort_limits)
    legs = {name: [i for i, j in enumerate(robot.joint_names) if name in j and ("left" in j or "right" in j)] for name in LEG_JOINTS}
    bridge = build_model(robot, "bridge")
    first = OnnxPolicy.load(first_path, robot)
    reference = load_reference_motion(ROOT / f"models/motions/{first.contract.motion_id}.csv", robot)
    feet_bodies = [bridge.body(f).id for f in robot.feet]
    ref_feet_z = reference.key_body_pos[:, [KEY_BODIES.index(f) for f in robot.feet], 2]
    with tempfile.TemporaryDirectory() as tmp:
        policies = {"clip played back": OnnxPolicy.load(write_baseline_policy(PLAYBACK_BASELINE, first.contract, reference.joint_pos, Path(tmp) / "playback.onnx"), robot)}
        policies.update({k: OnnxPolicy.load(p, robot) for k, p in chosen.items()})
        results, traces = {}, {}
        for label, policy in policies.items():
            path = chosen.get(label, first_path)
            dr = load_train_config(path.with_suffix(".train.yaml")).task.domain
            rows = []
            for seed in SEEDS:
                rec = Recorder(effort, feet_bodies)
                r = rollout(policy, bridge, robot, reference, seed, 3.0, dr, rec)
                t, ratio, vz, feet_z = np.asarray(rec.t), np.asarray(rec.ratio), np.asarray(rec.vz), np.asarray(rec.feet_z)
                window = (t >= PUSH_OFF_S[0]) & (t <= PUSH_OFF_S[1])
                flight = (t >= FLIGHT_S[0]) & (t <= FLIGHT_S[1])
                frames = (np.arange(len(t)) + 1) % reference.num_frames  # the frame each step is compared with
                pay = FEET_HEIGHT[0] * np.exp(-np.sum((feet_z - ref_feet_z[frames]) ** 2, axis=1) / FEET_HEIGHT[1])
                rows.append({
                    "seed": seed, "fell": r.fell, "longest_flight_s": r.longest_flight_s,
                    "take_off_vz_m_s": float(vz[window].max()) if window.any() else None,
                    "feet_rise_cm": float(100 * (feet_z[flight] - feet_z[0]).max()) if flight.any() else None,
                    "feet_height_pay": {"flight": float(pay[flight].mean()) if flight.any() else None, "elsewhere": float(pay[~flight].mean())},
                    "push_off": {name: {"mean_ratio": float(ratio[window][:, idx].mean()),
                                        "saturated_fraction": float((ratio[window][:, idx] >= SATURATED).mean())}
                                 for name, idx in legs.items()},
                })
                if seed == 0:
                    traces[label] = (t, ratio, vz)
            results[label] = {
                "per_seed": rows,
                "take_off_vz_m_s_mean": float(np.mean([r["take_off_vz_m_s"] for r in rows])),
                "longest_flight_s_mean": float(np.mean([r["longest_flight_s"] for r in rows])),
                "feet_rise_cm_mean": float(np.mean([r["feet_rise_cm"] for r in rows if r["feet_rise_cm"] is not None])),
                "push_off": {name: {k: float(np.mean([r["push_off"][name][k] for r in rows])) for k in ("mean_ratio", "saturated_fraction")}
                             for name in LEG_JOINTS},
            }
            print(label, json.dumps({k: v for k, v in results[label].items() if k != "per_seed"}))
    ref_vz = np.gradient(reference.root_pos[:, 2], reference.dt)
    results["clip"] = {"peak_vz_m_s": float(ref_vz.max()), "feet_rise_cm": float(100 * (ref_feet_z - ref_feet_z[0]).max()),
                       "push_off_window_s": PUSH_OFF_S, "flight_window_s": FLIGHT_S, "saturated_at": SATURATED}
    (args.out / "saturation.json").write_text(json.dumps(results, indent=2))

    fig, axes = plt.subplots(len(LEG_JOINTS) + 1, 1, figsize=(8, 9), sharex=True)
    for label, (t, ratio, vz) in traces.items():
        for ax, name in zip(axes, LEG_JOINTS):
            ax.plot(t, ratio[:, legs[name]].max(axis=1), label=label)
            ax.set_ylabel(f"{name}\n|tau|/effort (max of legs)")
        axes[-1].plot(t, vz, label=label)
    axes[-1].plot(np.arange(reference.num_frames) * reference.dt, ref_vz, "k--", label="clip")
    axes[-1].set_ylabel("pelvis vz (m/s)")
    axes[-1].set_xlabel("t (s), seed 0")
    for ax in axes:
        ax.axvspan(*PUSH_OFF_S, color="0.9")
    axes[0].legend(fontsize=8)
    fig.suptitle("Leg drive torques during the jump (seed 0; shaded: the clip's push-off)")
    fig.tight_layout()
    fig.savefig(args.out / "saturation.png", dpi=110)


if __name__ == "__main__":
    main()
