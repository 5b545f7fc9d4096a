"""A brax PPO policy (:mod:`bcg_train.learn.ppo_baseline`) as the same deployable ONNX graph as SHAC's.

So that the benchmark judges PPO with the same ``bcg-eval`` as SHAC (bridge model, domain
randomization, falls and E_track), brax's deterministic policy is written with
:func:`bcg_robot.onnx_graph.save_policy_onnx`: brax's observation normalizer ``(obs - mean) / std``
(no clip: the graph's clip is set past any float32 observation), its hidden layers ``Dense -> ELU``
(no LayerNorm) and its output ``Dense``, whose output is the Gaussian's mean, which is brax's
deterministic action for the ``normal`` distribution (identity postprocessing). The action is
clipped to the same ``action_clip`` the training adapter (:class:`BraxTaskEnv`) applied.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from bcg_robot.config import RobotConfig
from bcg_robot.observation import observation_size
from bcg_robot.onnx_graph import DenseLayer, PolicyWeights, save_policy_onnx
from bcg_train.export.policy import check_exportable, check_policy_shapes, policy_contract
from bcg_train.learn.config import TrainConfig

# brax's normalizer does not clip; the graph's observation clip is set where it never acts
NO_OBS_CLIP = 1e30


def ppo_policy_weights(params: Any, action_clip: float, reference_joint_pos: np.ndarray | None = None) -> PolicyWeights:
    """``params``: brax PPO's ``(normalizer_state, policy_params, ...)``, as its ``make_policy`` takes them."""
    normalizer, policy = params[0], params[1]
    tree = policy["params"]
    hidden = tree["MLP_0"]
    names = sorted(hidden, key=lambda n: int(n.removeprefix("hidden_")))
    if set(tree) - {"MLP_0", "Dense_0", "std_logparam", "std_param"} or "Dense_0" not in tree:
        raise ValueError(f"not a brax PPO policy with a state-independent std: parameters {sorted(tree)}")
    layers = [DenseLayer(weight=np.asarray(hidden[n]["kernel"], np.float64), bias=np.asarray(hidden[n]["bias"], np.float64), elu=True)
              for n in names]
    layers.append(DenseLayer(weight=np.asarray(tree["Dense_0"]["kernel"], np.float64), bias=np.asarray(tree["Dense_0"]["bias"], np.float64), elu=False))
    return PolicyWeights(
        obs_mean=np.asarray(normalizer.mean, np.float64), obs_std=np.asarray(normalizer.std, np.float64),
        layers=tuple(layers), obs_clip=NO_OBS_CLIP, action_clip=float(action_clip),
        reference_joint_pos=None if reference_joint_pos is None else np.asarray(reference_joint_pos, np.float64),
    )


def export_ppo_onnx(path: str | Path, cfg: TrainConfig, robot: RobotConfig, params: Any, action_clip: float, motion_id: str,
                    motion_length_s: float, reference_joint_pos: np.ndarray | None = None) -> Path:
    """The ONNX policy of brax PPO ``params`` trained on ``cfg``'s task (same contract as SHAC's export).
    Refused as SHAC's is (:class:`bcg_train.export.policy.ExportError`, naming ``path``): a network
    that does not chain from the observation to the joints, or non-finite weights (a diverged
    run), whose file the node would load and damp on at its first RUN tick."""
    contract = policy_contract(cfg, robot, motion_id, motion_length_s)
    weights = ppo_policy_weights(params, action_clip, reference_joint_pos)
    check_policy_shapes(weights, observation_size(contract.observation_spec, contract.num_joints), contract.num_joints, str(path))
    check_exportable(weights, str(path))
    return save_policy_onnx(path, contract, weights)
