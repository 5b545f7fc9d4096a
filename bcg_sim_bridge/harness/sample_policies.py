"""Small ONNX policies for tests and benchmarks, made with bcg_robot.onnx_graph."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np

from bcg_robot.config import RobotConfig
from bcg_robot.contract import PolicyContract
from bcg_robot.observation import observation_size
from bcg_robot.onnx_graph import DenseLayer, PolicyWeights, default_pose_weights, save_policy_onnx


def random_weights(contract: PolicyContract, seed: int = 0, hidden: int = 64, scale: float = 0.3) -> PolicyWeights:
    """A small random MLP (obs -> hidden -> n) with ELU: bounded, non-trivial actions."""
    rng = np.random.default_rng(seed)
    n_obs, n = observation_size(contract.observation_spec, contract.num_joints), contract.num_joints
    layers = (
        DenseLayer(rng.normal(0, 1 / np.sqrt(n_obs), (n_obs, hidden)), rng.normal(0, 0.1, hidden)),
        DenseLayer(rng.normal(0, scale / np.sqrt(hidden), (hidden, n)), rng.normal(0, scale, n), elu=False),
    )
    return PolicyWeights(np.zeros(n_obs), np.ones(n_obs), layers, action_clip=1.0)


def holding_mlp_weights(contract: PolicyContract, hidden=(512, 256, 128), seed: int = 0) -> PolicyWeights:
    """A deployment-sized ELU MLP whose output layer is zero: full inference cost, action 0
    (it holds the default pose, so a simulated robot stands while it is timed)."""
    rng = np.random.default_rng(seed)
    sizes = (observation_size(contract.observation_spec, contract.num_joints), *hidden)
    layers = [DenseLayer(rng.normal(0, 1 / np.sqrt(a), (a, b)), np.zeros(b)) for a, b in zip(sizes[:-1], sizes[1:])]
    layers.append(DenseLayer(np.zeros((sizes[-1], contract.num_joints)), np.zeros(contract.num_joints), elu=False))
    return PolicyWeights(np.zeros(sizes[0]), np.ones(sizes[0]), tuple(layers))


def write_policy(path: str | Path, robot: RobotConfig, kind: str = "default_pose", **contract_changes) -> Path:
    """``kind``: default_pose | random | holding_mlp | nan (a policy whose output is NaN)."""
    contract = dataclasses.replace(PolicyContract.for_robot(robot), **contract_changes)
    if kind == "default_pose":
        weights = default_pose_weights(contract)
    elif kind == "random":
        weights = random_weights(contract)
    elif kind == "holding_mlp":
        weights = holding_mlp_weights(contract)
    elif kind == "nan":
        base = default_pose_weights(contract)
        layer = dataclasses.replace(base.layers[0], bias=np.full(contract.num_joints, np.nan))
        weights = dataclasses.replace(base, layers=(layer,))
    else:
        raise ValueError(f"unknown test policy kind '{kind}'")
    return save_policy_onnx(path, contract, weights)


def truncate(path: str | Path, out: str | Path, keep_fraction: float = 0.5) -> Path:
    data = Path(path).read_bytes()
    Path(out).write_bytes(data[: int(len(data) * keep_fraction)])
    return Path(out)
