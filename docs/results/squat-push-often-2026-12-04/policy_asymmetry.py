"""How lopsided is a policy for a symmetric clip? Along bridge rollouts (DR of its training
config, seeds 0-2, 4 s), the policy's joint targets in the mirrored state against the mirror of
its targets, |targets(M o) - M targets(o)| (rad), next to the size of its correction to the clip,
|action| * action_scale (rad); and the joints where they differ most.

    PYTHONPATH=. .venv/bin/python docs/results/squat-push-often-2026-12-04/policy_asymmetry.py POLICY.onnx POLICY.train.yaml
"""

import sys

import numpy as np

from bcg_robot.config import load_robot_config
from bcg_robot.model import build_model
from bcg_robot.onnx_policy import OnnxPolicy
from bcg_train.evaluate.rollout import rollout
from bcg_train.learn.config import load_train_config
from bcg_train.motion.reference import load_reference_motion
from bcg_robot.paths import resolve_share_path
from bcg_train.tasks.mirror import apply, joint_mirror, mirror_raw_inputs


class MirrorProbe:
    """The policy, run as usual; every call also runs it on the mirrored inputs and records the gap."""

    def __init__(self, policy: OnnxPolicy, perm: np.ndarray, sign: np.ndarray, action_scale: float):
        self.policy, self.contract, self.perm, self.sign, self.scale = policy, policy.contract, perm, sign, action_scale
        self.gaps, self.corrections = [], []

    def run(self, raw):
        targets, action = self.policy.run(raw)
        mirrored, _ = self.policy.run(mirror_raw_inputs(raw, self.perm, self.sign))
        self.gaps.append(np.abs(mirrored - apply(self.perm, self.sign, targets)))
        self.corrections.append(np.abs(action) * self.scale)
        return targets, action


def main(policy_path: str, train_yaml: str) -> None:
    robot = load_robot_config()
    train_model = build_model(robot, "train")
    perm, sign = joint_mirror(train_model, robot)
    cfg = load_train_config(train_yaml)
    reference = load_reference_motion(resolve_share_path(cfg.task.motion), robot, cfg.task.motion_fps, train_model)
    probe = MirrorProbe(OnnxPolicy.load(policy_path, robot), perm, sign, robot.action_scale)
    for seed in range(3):
        rollout(probe, build_model(robot, "bridge"), robot, reference, seed, 4.0, cfg.task.domain)
    gaps, corrections = np.array(probe.gaps), np.array(probe.corrections)
    worst = np.argsort(-gaps.mean(0))[:4]
    print(f"{policy_path}: mirror gap {gaps.mean():.4f} rad (max {gaps.max():.3f}), correction {corrections.mean():.4f} rad; "
          f"most lopsided: {', '.join(f'{robot.joint_names[i]} {gaps.mean(0)[i]:.3f}' for i in worst)}")


if __name__ == "__main__":
    main(*sys.argv[1:3])
