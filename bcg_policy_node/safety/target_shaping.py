"""What the safety layer does to every position target before it reaches the motors (pure).

In order: clamp to the soft joint limits (position limits shrunk by a margin), limit the
change per tick, and clip so the PD torque ``kp (q_t - q) - kd dq`` (the drive's law,
bcg_robot.pd, with dq_des = tau_ff = 0) stays within ``torque_fraction`` of the effort
limits (:func:`bcg_robot.pd.position_target_bounds`). The torque clip comes last, so the
drives are never asked for more than their limit; its window is never empty.

:class:`ShapingCounts` counts, over the ticks the policy ran, how often each stage changed
its targets: the training simulation has none of these stages, so a policy that leans on
them runs differently on the robot than in training (the node reports the counts in its
diagnostics, and sim-to-sim in its report).
"""

from __future__ import annotations

import dataclasses

import numpy as np

from bcg_robot.config import RobotConfig
from bcg_robot.pd import position_target_bounds

from bcg_policy_node.config.safety_config import SafetyConfig


@dataclasses.dataclass(frozen=True)
class TargetLimits:
    soft_lower: np.ndarray
    soft_upper: np.ndarray
    max_step: float
    effort: np.ndarray

    @classmethod
    def for_robot(cls, robot: RobotConfig, config: SafetyConfig) -> "TargetLimits":
        lower, upper = config.soft_limits(robot)  # that they hold the default pose: SafetyConfig.check_against
        return cls(lower, upper, config.max_target_step, robot.effort * config.torque_fraction)


@dataclasses.dataclass(frozen=True)
class ShapedTargets:
    targets: np.ndarray
    clamped_limits: int  # joints moved by each stage this tick
    clamped_rate: int
    clamped_torque: int


def shape_targets(targets: np.ndarray, previous: np.ndarray, q: np.ndarray, dq: np.ndarray,
                  kp: np.ndarray, kd: np.ndarray, limits: TargetLimits) -> ShapedTargets:
    t0 = np.clip(targets, limits.soft_lower, limits.soft_upper)
    t1 = np.clip(t0, previous - limits.max_step, previous + limits.max_step)
    lo, hi = position_target_bounds(q, dq, kp, kd, limits.effort)
    t2 = np.clip(t1, lo, hi)
    return ShapedTargets(
        t2,
        int(np.count_nonzero(t0 != targets)),
        int(np.count_nonzero(t1 != t0)),
        int(np.count_nonzero(t2 != t1)),
    )


@dataclasses.dataclass
class ShapingCounts:
    """Policy ticks, those where any stage moved a joint's target, and those where each stage did."""

    policy_ticks: int = 0
    shaped: int = 0
    joint_limits: int = 0
    rate: int = 0
    torque: int = 0

    def add(self, shaped: ShapedTargets) -> None:
        self.policy_ticks += 1
        self.shaped += (shaped.clamped_limits + shaped.clamped_rate + shaped.clamped_torque) > 0
        self.joint_limits += shaped.clamped_limits > 0
        self.rate += shaped.clamped_rate > 0
        self.torque += shaped.clamped_torque > 0

    def as_dict(self) -> dict[str, int]:
        return dataclasses.asdict(self)
