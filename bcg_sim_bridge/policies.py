"""Which policy a sim-to-sim run uses: the shipped one in ``models/``, else a default-pose policy.

``--policy all`` (:func:`resolve_policies`) is every ``models/*.onnx``, with the same
default-pose fallback when none ships.

The default-pose policy (action always 0: hold the default pose) and a NaN policy (the
same contract, output NaN; fault injection) are exported with
:mod:`bcg_robot.onnx_graph`, which needs only numpy and onnx.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from bcg_robot.config import RobotConfig
from bcg_robot.contract import PolicyContract
from bcg_robot.onnx_graph import DenseLayer, PolicyWeights, default_pose_weights, save_policy_onnx
from bcg_robot.paths import share_file

SHIPPED_POLICY_NAMES = ("g1_policy.onnx", "policy.onnx")


def shipped_policy(models_dir: Path | None = None) -> Path | None:
    """The policy the repository ships (``models/g1_policy.onnx`` or ``models/policy.onnx``), if any."""
    folder = models_dir or share_file("models")
    for name in SHIPPED_POLICY_NAMES:
        if (folder / name).is_file():
            return folder / name
    return None


def default_pose_policy(robot: RobotConfig, path: Path) -> Path:
    return save_policy_onnx(path, PolicyContract.for_robot(robot, motion_id="default_pose"),
                            default_pose_weights(PolicyContract.for_robot(robot)))


def nan_policy(robot: RobotConfig, path: Path) -> Path:
    """A well-formed policy with the robot's contract whose action is NaN (0 * inf in its bias)."""
    contract = PolicyContract.for_robot(robot, motion_id="nan_fault")
    base = default_pose_weights(contract)
    layer = base.layers[0]
    nan_layer = DenseLayer(layer.weight, np.full_like(layer.bias, np.nan), elu=False)
    return save_policy_onnx(path, contract, PolicyWeights(base.obs_mean, base.obs_std, (nan_layer,)))


def shipped_policies(models_dir: Path | None = None) -> list[Path]:
    """Every policy the repository ships: ``models/*.onnx``, sorted by name."""
    folder = models_dir or share_file("models")
    return sorted(p for p in folder.glob("*.onnx") if p.is_file())


def resolve_policy(requested: str, robot: RobotConfig, out_dir: Path, models_dir: Path | None = None) -> tuple[Path, str]:
    """(path, how it was chosen) for ``requested`` ('' = shipped, else default pose)."""
    if requested:
        return Path(requested), "given"
    shipped = shipped_policy(models_dir)
    if shipped is not None:
        return shipped, "shipped"
    return _default_pose_fallback(robot, out_dir)


def _default_pose_fallback(robot: RobotConfig, out_dir: Path) -> tuple[Path, str]:
    """The policy a run uses when no policy ships: the default-pose export in ``out_dir``."""
    return default_pose_policy(robot, out_dir / "default_pose_policy.onnx"), "default pose (no shipped policy in models/)"


def resolve_policies(requested: list[str], robot: RobotConfig, out_dir: Path,
                     models_dir: Path | None = None) -> list[tuple[Path, str]]:
    """(path, how it was chosen) per policy of a run: each ``requested`` path in turn, ``all`` = every
    :func:`shipped_policies` (or the default-pose policy when none ships); none = :func:`resolve_policy` ('')."""
    if not requested:
        return [resolve_policy("", robot, out_dir, models_dir)]
    chosen: list[tuple[Path, str]] = []
    for item in requested:
        if item == "all":
            shipped = shipped_policies(models_dir)
            chosen += [(p, "shipped") for p in shipped] or [_default_pose_fallback(robot, out_dir)]
        else:
            chosen.append(resolve_policy(item, robot, out_dir, models_dir))
    unique: dict[Path, tuple[Path, str]] = {}
    for path, origin in chosen:
        unique.setdefault(path.resolve(), (path, origin))
    return list(unique.values())
