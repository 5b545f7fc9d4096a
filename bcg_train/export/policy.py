"""From a trained SHAC state to the deployable ONNX policy (via :mod:`bcg_robot.onnx_graph`).

The JAX actor (hidden layers Linear -> LayerNorm(eps 1e-5) -> ELU, linear output,
weights (in, out)) and the observation normalizer map one to one onto
``PolicyWeights`` / ``DenseLayer``; the contract records the robot, observation spec,
motion id and length, the hash of the resolved training config and the commit of the code
that trained it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import jax.numpy as jnp
import numpy as np

from bcg_robot.action_offset import reference_joint_targets
from bcg_robot.config import RobotConfig
from bcg_robot.contract import PolicyContract
from bcg_robot.errors import BCGInputError
from bcg_robot.observation import build_observation, observation_size
from bcg_robot.onnx_graph import DenseLayer, PolicyWeights, save_policy_onnx
from bcg_train.learn.config import TrainConfig, config_hash, motion_id, motion_sha256, source_commit
from bcg_train.learn.networks import RunningStats, policy_action


class ExportError(BCGInputError):
    """A checkpoint whose policy must not be exported (one line naming the checkpoint)."""


def _numbers(value: Any, source: str, what: str) -> np.ndarray:
    try:
        return np.asarray(value, np.float64)
    except (TypeError, ValueError):
        raise ExportError(source, f"policy {what} is not an array of numbers ({type(value).__name__})") from None


def policy_weights(actor: list[dict[str, Any]], stats: RunningStats, obs_clip: float, action_clip: float,
                   reference_joint_pos: np.ndarray | None = None, source: str = "<policy>") -> PolicyWeights:
    """The actor's layers and the normalizer as :class:`PolicyWeights`; an actor that is not a
    list of layer mappings (``w``, ``b``, and ``ln_scale`` with ``ln_bias`` on hidden layers) is
    an :class:`ExportError` naming ``source`` (the checkpoint). Shapes: :func:`check_policy_shapes`."""
    if not isinstance(actor, (list, tuple)):
        raise ExportError(source, f"policy actor is not a list of layers ({type(actor).__name__})")
    layers = []
    for i, layer in enumerate(actor):
        if not isinstance(layer, dict):
            raise ExportError(source, f"policy layer {i} is not a mapping ({type(layer).__name__})")
        missing = [key for key in ("w", "b") if key not in layer]
        if missing:
            raise ExportError(source, f"policy layer {i} lacks '{missing[0]}'")
        hidden = "ln_scale" in layer
        if hidden != ("ln_bias" in layer):
            raise ExportError(source, f"policy layer {i} has only one of 'ln_scale' and 'ln_bias'")
        layers.append(
            DenseLayer(
                weight=_numbers(layer["w"], source, f"layer {i} weight"),
                bias=_numbers(layer["b"], source, f"layer {i} bias"),
                ln_scale=_numbers(layer["ln_scale"], source, f"layer {i} ln_scale") if hidden else None,
                ln_bias=_numbers(layer["ln_bias"], source, f"layer {i} ln_bias") if hidden else None,
                elu=hidden,
            )
        )
    try:
        mean, std = stats.mean, stats.std
    except (AttributeError, TypeError):  # TypeError: std of a var that is not an array
        raise ExportError(source, f"policy observation normalizer is not a RunningStats ({type(stats).__name__})") from None
    return PolicyWeights(
        obs_mean=_numbers(mean, source, "obs_mean"), obs_std=_numbers(std, source, "obs_std"),
        layers=tuple(layers), obs_clip=float(obs_clip), action_clip=float(action_clip),
        reference_joint_pos=None if reference_joint_pos is None else np.asarray(reference_joint_pos, np.float64),
    )


def policy_contract(cfg: TrainConfig, robot: RobotConfig, motion_id: str, motion_length_s: float,
                    stored_hash: str | None = None, trained_at: str | None = None) -> PolicyContract:
    """``stored_hash``: the config hash the checkpoint was saved with (default: ``cfg``'s now).
    ``trained_at``: the commit of the code that trained it, as the checkpoint recorded it
    (default, for a checkpoint that did not: this source tree's)."""
    return PolicyContract.for_robot(
        robot,
        observation_spec=tuple(cfg.task.observation_spec),
        motion_id=motion_id,
        motion_length_s=float(motion_length_s),
        # the clip the config names, as read now: bcg-export checked it is the one trained on
        motion_sha256=motion_sha256(cfg) or "",
        action_offset=cfg.task.action_offset,
        config_hash=stored_hash or config_hash(cfg),
        source_commit=trained_at or source_commit(),
    )


def contract_mismatch(contract: PolicyContract, cfg: TrainConfig) -> str | None:
    """How a training config differs from the one a policy's contract was made from
    (:func:`policy_contract`: motion id, observation spec, action offset), or None. The config
    hash cannot tell: a config saved before a field was added hashes differently when read now."""
    ours = {"motion_id": motion_id(cfg), "observation_spec": tuple(cfg.task.observation_spec),
            "action_offset": cfg.task.action_offset}
    for name, value in ours.items():
        if getattr(contract, name) != value:
            return f"its {name} is {value!r}, the policy's contract says {getattr(contract, name)!r}"
    return None


def jax_policy_on_raw(contract: PolicyContract, actor, stats: RunningStats, obs_clip: float, action_clip: float, raw: dict,
                      reference_joint_pos=None) -> tuple[jnp.ndarray, jnp.ndarray]:
    """The trained JAX policy on raw robot state: (joint_targets, action), as the ONNX graph
    computes them (``reference_joint_pos``: the offset table of ``action_offset: reference``)."""
    q0 = jnp.asarray(contract.default_pose, jnp.float32)
    raw = {k: jnp.asarray(v) for k, v in raw.items()}
    obs = build_observation(contract.observation_spec, raw, q0, xp=jnp)
    action = policy_action(actor, stats, obs, obs_clip, action_clip)
    offset = q0 if reference_joint_pos is None else reference_joint_targets(jnp.asarray(reference_joint_pos, jnp.float32), raw["phase"], xp=jnp)
    return offset + jnp.asarray(contract.action_scale, jnp.float32) * action, action


def reference_offset_table(cfg: TrainConfig, robot: RobotConfig):
    """The task's reference motion and, with ``action_offset: reference``, the offset table the
    ONNX graph carries (its joint positions at the control rate); else None."""
    from bcg_robot.action_offset import REFERENCE
    from bcg_train.motion.reference import load_reference_motion
    from bcg_robot.paths import resolve_share_path

    ref = load_reference_motion(resolve_share_path(cfg.task.motion), robot, cfg.task.motion_fps)
    return ref, (ref.joint_pos if cfg.task.action_offset == REFERENCE else None)


def check_policy_shapes(weights: PolicyWeights, num_obs: int, num_actions: int, source: str) -> None:
    """The layers chain from the observation (``num_obs``) to the action (``num_actions``), each
    bias and LayerNorm the width of its layer's output, the normalizer the observation's size;
    ONNX shape inference failed on a checkpoint that broke this, in a traceback."""
    for name in ("obs_mean", "obs_std"):
        if getattr(weights, name).shape != (num_obs,):
            raise ExportError(source, f"policy {name} has shape {getattr(weights, name).shape}, expected ({num_obs},) "
                                      "(the observation's size)")
    if not weights.layers:
        raise ExportError(source, "policy actor has no layers")
    width = num_obs
    for i, layer in enumerate(weights.layers):
        if layer.weight.ndim != 2 or layer.weight.shape[0] != width:
            raise ExportError(source, f"policy layer {i} weight has shape {layer.weight.shape}, expected ({width}, outputs)")
        width = layer.weight.shape[1]
        for name in ("bias", "ln_scale", "ln_bias"):
            value = getattr(layer, name)
            if value is not None and value.shape != (width,):
                raise ExportError(source, f"policy layer {i} {name} has shape {value.shape}, expected ({width},)")
    if width != num_actions:
        raise ExportError(source, f"policy actor outputs {width} values, expected {num_actions} (one per joint)")


def check_exportable(weights: PolicyWeights, source: str) -> None:
    """A policy the robot may run: finite weights and normalizer, a positive std (the graph
    divides by it). The loader accepts such a graph (its NaN output trips the node's watchdog
    on the first RUN tick), so the exporter is where it is refused."""
    arrays = {"obs_mean": weights.obs_mean, "obs_std": weights.obs_std}
    for i, layer in enumerate(weights.layers):
        arrays.update({f"layer {i} {k}": v for k, v in (("weight", layer.weight), ("bias", layer.bias),
                                                          ("ln_scale", layer.ln_scale), ("ln_bias", layer.ln_bias)) if v is not None})
    for name, value in arrays.items():
        if not np.isfinite(value).all():
            raise ExportError(source, f"policy {name} has non-finite values: refusing to export")
    if not (weights.obs_std > 0).all():
        raise ExportError(source, "policy obs_std has values <= 0: refusing to export")


def export_onnx(path: str | Path, cfg: TrainConfig, robot: RobotConfig, actor, stats: RunningStats, motion_id: str, motion_length_s: float,
                reference_joint_pos: np.ndarray | None = None, source: str = "<policy>", stored_hash: str | None = None,
                trained_at: str | None = None) -> Path:
    """``reference_joint_pos`` (frames at the control rate, n): exactly with ``action_offset: reference``
    (:func:`bcg_robot.onnx_graph.check_offset` says so otherwise). ``source``: the checkpoint, for errors.
    ``stored_hash``, ``trained_at``: the config hash and source commit the checkpoint was saved
    with (:func:`policy_contract`)."""
    contract = policy_contract(cfg, robot, motion_id, motion_length_s, stored_hash, trained_at)
    weights = policy_weights(actor, stats, cfg.shac.obs_clip, cfg.shac.action_clip, reference_joint_pos, source)
    check_policy_shapes(weights, observation_size(contract.observation_spec, contract.num_joints), contract.num_joints, source)
    check_exportable(weights, source)
    return save_policy_onnx(path, contract, weights)
