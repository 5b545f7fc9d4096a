"""Zero-correction baselines of a policy, as ONNX files with the policy's own contract.

A trained policy is only worth shipping if it beats what needs no training. Two baselines
answer that, each an ONNX graph whose action is always 0 (the same graph, loader, node
and metrics as a trained policy, so nothing in the comparison differs but the network):

``default-pose``  the PD targets are the default pose: the robot stands still.
``playback``      the PD targets are the reference clip's joint positions one control
                  step ahead (``action_offset: reference`` with a zero correction): the
                  clip played back open loop through the PD drives.

Both keep the policy's motion id and length, so the phase input, the reference E_track is
measured against and the evaluation's domain draws per seed are those of the policy.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np

from bcg_robot.action_offset import DEFAULT_POSE, REFERENCE
from bcg_robot.contract import PolicyContract
from bcg_robot.onnx_graph import default_pose_weights, save_policy_onnx

DEFAULT_POSE_BASELINE = "default-pose"
PLAYBACK_BASELINE = "playback"
BASELINES = (DEFAULT_POSE_BASELINE, PLAYBACK_BASELINE)


def write_baseline_policy(kind: str, contract: PolicyContract, reference_joint_pos: np.ndarray, path: str | Path) -> Path:
    """Write the ``kind`` baseline of ``contract`` to ``path``; ``reference_joint_pos`` (F, n)
    is the clip's joint positions at the control rate (used by ``playback`` only)."""
    if kind == DEFAULT_POSE_BASELINE:
        baseline = dataclasses.replace(contract, action_offset=DEFAULT_POSE)
        weights = default_pose_weights(baseline)
    elif kind == PLAYBACK_BASELINE:
        # the phase runs over the table it plays (a clip up to a frame off the policy's length is accepted)
        table = np.asarray(reference_joint_pos, np.float64)
        baseline = dataclasses.replace(contract, action_offset=REFERENCE, motion_length_s=len(table) * contract.control_dt)
        weights = dataclasses.replace(default_pose_weights(baseline), reference_joint_pos=table)
    else:
        raise ValueError(f"unknown baseline '{kind}' ({' | '.join(BASELINES)})")
    return save_policy_onnx(path, baseline, weights)
