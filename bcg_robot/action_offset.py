"""What a policy's action is relative to: the default pose, or the reference motion.

A policy's joint targets are ``offset + action_scale * action``. The offset is either

``default_pose``  the robot's default pose (a policy that outputs 0 holds it), or
``reference``     the reference motion's joint positions one control step ahead of the
                  current phase (a policy that outputs 0 plays the clip back through the
                  PD drives; the network learns the correction: balance, contact timing).

The second is the feed-forward + feedback split of trajectory tracking. The reference
table travels inside the ONNX graph (:mod:`bcg_robot.onnx_graph`), so the node's
contract (raw state in, absolute joint targets out) does not change; the contract
records which offset the graph uses (:attr:`bcg_robot.contract.PolicyContract.action_offset`).

:func:`reference_joint_targets` is the one definition of the lookup: the trainer calls it
with ``jax.numpy``, the numpy reference of the graph with numpy, and the ONNX lowering
(:func:`bcg_robot.onnx_graph.build_policy_onnx`) computes the same operations.
"""

from __future__ import annotations

from typing import Any

import numpy as np

DEFAULT_POSE = "default_pose"
REFERENCE = "reference"
ACTION_OFFSETS = (DEFAULT_POSE, REFERENCE)


def check_action_offset(value: str) -> None:
    if value not in ACTION_OFFSETS:
        raise ValueError(f"unknown action_offset '{value}' ({' | '.join(ACTION_OFFSETS)})")


def reference_joint_targets(table: Any, phase: Any, xp: Any = np) -> Any:
    """Joint positions of the reference one frame after ``phase``, linearly interpolated.

    ``table`` (F, n): the reference's joint positions, one frame per control step over one
    period; ``phase`` (..., 1) in [0, 1) (frame ``i`` is phase ``i / F``). Returns (..., n):
    row ``(i + 1) mod F`` at phase ``i / F``, and the linear blend between neighbouring rows
    (wrapping at the end of the clip) in between.
    """
    frames = table.shape[0]
    x = phase[..., 0] * frames + 1.0
    base = xp.floor(x)
    w = (x - base)[..., None]
    i0 = xp.mod(base, frames).astype(xp.int32 if xp is not np else np.int64)
    i1 = xp.mod(i0 + 1, frames)
    r0 = table[i0]
    return r0 + w * (table[i1] - r0)
