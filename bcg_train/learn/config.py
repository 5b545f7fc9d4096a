"""Typed training configuration: task + learner + run settings, loaded from YAML with presets.

``config/train/<task>.yaml`` holds a :class:`TrainConfig` mapping, either complete or
``extends: <other>.yaml`` (a path relative to the file) plus the keys that differ;
``config/train/presets/<preset>.yaml`` holds a partial mapping merged over it
(nested keys merge, lists replace). Unknown keys anywhere are one-line errors.
"""

from __future__ import annotations

import dataclasses
import hashlib
import subprocess
from pathlib import Path
from typing import Any

import yaml

from bcg_robot.errors import ConfigError
from bcg_robot.paths import resolve_share_path, share_file
from bcg_robot.yaml_dataclass import from_mapping, read_yaml_mapping, to_plain
from bcg_train.tasks.config import ImitationConfig

TRAIN_CONFIG_DIR = share_file("config/train")
PRESETS = ("cpu-small", "gpu", "cpu-tiny")


@dataclasses.dataclass(frozen=True)
class SHACConfig:
    """SHAC hyperparameters; defaults are the published ones (bcg_method.md)."""

    num_envs: int = 64
    horizon: int = 32
    iterations: int = 3000
    actor_hidden: tuple[int, ...] = (512, 256, 128)
    critic_hidden: tuple[int, ...] = (256, 256)
    num_critics: int = 3
    actor_lr: float = 5e-3
    critic_lr: float = 2e-3
    lr_end: float = 1e-5
    # where the critics' learning rate decays to (None: lr_end, the published schedule). The
    # critics refit every window; in the heading squat, as their rate decayed to 1e-5, their
    # loss after fitting grew ~40x (held at 1e-3 in the fine-tuning run, it stayed flat)
    critic_lr_end: float | None = None
    betas: tuple[float, float] = (0.7, 0.95)
    gamma: float = 0.99
    td_lambda: float = 0.95
    critic_iterations: int = 16
    critic_minibatches: int = 4
    actor_grad_clip: float = 1.0
    # per-environment cap on the norm of the gradient flowing back through the simulator
    # state at every control step (0: off, the published SHAC). Stiff contact makes the
    # step Jacobians' product blow up (1e10-inf in float32 over 32 G1 steps); the cap keeps
    # the gradient of the near future and drops the exploded far tail's magnitude.
    state_grad_clip: float = 0.0
    critic_grad_clip: float = 10.0
    # cap on each environment's share of the actor gradient (0: off, the published SHAC): its
    # window's action gradient dL/da is scaled to at most this many times the median over the
    # environments' window norms in that iteration, before it is chained through the policy
    # (bcg_train.learn.action_gradients.cap_environment_gradients). On the jump one environment carried a
    # median 76 % of |dL/da|^2 (docs/results/jump-gradient-trace-2026-12-05/)
    env_gradient_cap: float = 0.0
    # iterations at the start that fit the critics (and the observation normalizer) while
    # the actor stays fixed: the actor's window loss bootstraps with the critics' value at
    # the window end, and an untrained critic's gradient there is noise (0: off, published)
    critic_warmup_iterations: int = 0
    target_critic_alpha: float = 0.2  # target <- alpha * target + (1 - alpha) * critic
    action_noise_std: float = 0.1  # exploration noise on the raw action during training
    actor_output_scale: float = 0.01  # initial last-layer scale: start near the default pose
    obs_clip: float = 10.0
    action_clip: float = 5.0
    # weight of the mirror loss || pi(M_o o) - M_a pi(o) ||^2 over each window's observations,
    # added to the actor loss (0: off). Needs a task with mirror_observation / mirror_action
    # whose motion is its own mirror image (bcg_train.tasks.mirror)
    mirror_loss_weight: float = 0.0

    def validate(self) -> None:
        positive = ("num_envs", "horizon", "iterations", "num_critics", "critic_iterations", "critic_minibatches")
        for name in positive:
            if getattr(self, name) < 1:
                raise ValueError(f"shac.{name} must be >= 1")
        if (self.num_envs * self.horizon) % self.critic_minibatches:
            raise ValueError("shac.critic_minibatches must divide num_envs * horizon")
        if self.critic_warmup_iterations < 0 or self.critic_warmup_iterations >= self.iterations:
            raise ValueError("shac.critic_warmup_iterations must be in [0, iterations)")
        if self.critic_lr_end is not None and self.critic_lr_end <= 0:
            raise ValueError("shac.critic_lr_end must be > 0 (or absent: lr_end)")
        if self.mirror_loss_weight < 0:
            raise ValueError("shac.mirror_loss_weight must be >= 0 (0: off)")
        if self.env_gradient_cap < 0:
            raise ValueError("shac.env_gradient_cap must be >= 0 (0: off)")
        if self.env_gradient_cap > 0 and self.mirror_loss_weight > 0:
            raise ValueError("shac.env_gradient_cap does not combine with mirror_loss_weight (the mirror loss's gradient "
                             "does not pass through the window's actions)")
        if self.state_grad_clip < 0:
            raise ValueError("shac.state_grad_clip must be >= 0 (0: off)")
        if not (0 < self.gamma <= 1 and 0 <= self.td_lambda <= 1):
            raise ValueError("shac.gamma must be in (0, 1] and shac.td_lambda in [0, 1]")
        positive = ("actor_lr", "critic_lr", "lr_end", "actor_grad_clip", "critic_grad_clip", "obs_clip", "action_clip",
                    "actor_output_scale")
        for name in positive:  # a clip of 0 zeroes every update: nothing trains, and nothing says why
            if not getattr(self, name) > 0:
                raise ValueError(f"shac.{name} must be > 0, got {getattr(self, name)}")
        if not 0 <= self.target_critic_alpha < 1:
            raise ValueError(f"shac.target_critic_alpha must be in [0, 1) (1: the target never moves), got {self.target_critic_alpha}")
        if self.action_noise_std < 0:
            raise ValueError(f"shac.action_noise_std must be >= 0, got {self.action_noise_std}")
        if len(self.betas) != 2 or not all(0 <= b < 1 for b in self.betas):  # Adam's moment decays: 1.5 diverges
            raise ValueError(f"shac.betas must be two numbers in [0, 1), got {list(self.betas)}")
        for name in ("actor_hidden", "critic_hidden"):  # a layer of 0 units compiles, and the network outputs constants
            if not all(width >= 1 for width in getattr(self, name)):
                raise ValueError(f"shac.{name} must list layer widths >= 1, got {list(getattr(self, name))}")


@dataclasses.dataclass(frozen=True)
class TrainConfig:
    task: ImitationConfig = ImitationConfig()
    shac: SHACConfig = SHACConfig()
    seed: int = 0
    run_dir: str = "runs/stand"
    checkpoint_every: int = 50  # iterations (and always at the end)
    devices: int = 0  # data-parallel devices (0: all visible)
    # a checkpoint whose networks (actor, critics) and observation normalizer start this run
    # (a warm start, ``bcg-train --init-from``); optimizers, lr schedule, environments and
    # the iteration count start fresh, so the config may differ from the checkpoint's in
    # everything but the network sizes and the observation ("": start from random networks)
    init_from: str = ""

    def validate(self) -> None:
        self.task.validate()
        self.shac.validate()
        if self.devices < 0:
            raise ValueError("devices must be >= 0")
        if self.checkpoint_every < 1:  # found after the first compiled iteration otherwise (minutes on the G1)
            raise ValueError(f"checkpoint_every must be >= 1, got {self.checkpoint_every}")
        if not 0 <= self.seed < 2**32:  # jax.random.PRNGKey's range (a larger one overflowed after the task was built)
            raise ValueError(f"seed must be in [0, 2**32), got {self.seed}")
        if not self.run_dir:  # the working directory: its metrics.csv and checkpoints/ would be the run's
            raise ValueError("run_dir must not be empty (it would name the working directory)")


def deep_merge(base: dict[str, Any], override: dict[str, Any], source: str | Path = "<config>", _prefix: str = "") -> dict[str, Any]:
    """``override`` merged over ``base`` (nested keys merge, lists replace). A mapping merged over
    a value that is neither a mapping nor empty (``task: [1, 2]`` under a preset's ``task:``) is a
    :class:`ConfigError` naming ``source`` and the key: replaced, it would be lost without a word."""
    out = dict(base)
    for key, value in override.items():
        if isinstance(value, dict) and out.get(key) is not None:
            if not isinstance(out[key], dict):
                raise ConfigError(source, f"key '{_prefix}{key}': expected a mapping, got {type(out[key]).__name__}")
            value = deep_merge(out[key], value, source, f"{_prefix}{key}.")
        out[key] = value
    return out


EXTENDS_KEY = "extends"


def extends_chain(path: str | Path, _seen: tuple[Path, ...] = ()) -> list[tuple[Path, dict[str, Any]]]:
    """The files of ``path``'s ``extends`` chain, the root first and ``path`` last, each with
    its own mapping (without the ``extends`` key)."""
    path = Path(path)
    data = read_yaml_mapping(path)
    parent = data.pop(EXTENDS_KEY, None)
    if parent is None:
        return [(path, data)]
    if not isinstance(parent, str):
        raise ConfigError(path, f"'{EXTENDS_KEY}' must be a file name, got {type(parent).__name__}")
    base = (path.parent / parent).resolve()
    if base in _seen or base == path.resolve():
        raise ConfigError(path, f"'{EXTENDS_KEY}: {parent}' forms a cycle")
    if not base.is_file():  # named here: the missing file alone did not say which config wanted it
        raise ConfigError(path, f"'{EXTENDS_KEY}: {parent}': no such file ({base})")
    return extends_chain(base, _seen + (path.resolve(),)) + [(path, data)]


def read_train_mapping(path: str | Path) -> dict[str, Any]:
    """The file's mapping with its ``extends`` chain resolved (nested keys merge, lists replace)."""
    merged: dict[str, Any] = {}
    for _, data in extends_chain(path):
        merged = deep_merge(merged, data, path)
    return merged


def leaf_settings(mapping: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    """``{"shac.horizon": 32, ...}``: the mapping's leaves under dotted keys (a list is a leaf)."""
    out: dict[str, Any] = {}
    for key, value in mapping.items():
        if isinstance(value, dict):
            out.update(leaf_settings(value, f"{prefix}{key}."))
        else:
            out[f"{prefix}{key}"] = value
    return out


def _is_task_config(path: Path) -> bool:
    """A task config shipped in the package's ``config/train/`` (in the repository or installed)."""
    return path.parent.parts[-2:] == ("config", "train")


def experiment_settings(path: str | Path) -> dict[str, tuple[Any, Path]]:
    """The leaf settings that the files of ``path``'s ``extends`` chain outside the package's
    task configs make (an experiment's own choices), each with the file that makes it last."""
    settings: dict[str, tuple[Any, Path]] = {}
    for file, data in extends_chain(path):
        file = file.resolve()
        if not _is_task_config(file):
            settings.update({key: (value, file) for key, value in leaf_settings(data).items()})
    return settings


def check_preset_keeps_the_experiment(path: str | Path, preset: str, preset_data: dict[str, Any],
                                      overrides: dict[str, Any] | None) -> None:
    """A preset is merged over the config, so a setting of an experiment's own file that the
    preset also sets would be silently replaced: refuse that (one line naming the file, the key
    and both values). Equal values pass, and so do keys the command line sets anyway."""
    overridden = leaf_settings(overrides or {})
    explicit = experiment_settings(path)
    for key, preset_value in leaf_settings(preset_data).items():
        if key in explicit and key not in overridden and explicit[key][0] != preset_value:
            value, file = explicit[key]
            raise ConfigError(file, f"sets {key}: {value}, but preset '{preset}' sets {preset_value} and is merged over "
                                    f"the config, so {value} would not be used: remove the key here or the preset")


def load_train_config(path: str | Path, preset: str | None = None, overrides: dict[str, Any] | None = None) -> TrainConfig:
    return train_config_from_mapping(read_train_mapping(path), path, preset, overrides)


def train_config_from_mapping(
    data: dict[str, Any], path: str | Path, preset: str | None = None, overrides: dict[str, Any] | None = None
) -> TrainConfig:
    """``data`` (the mapping read from ``path``) with ``preset`` and ``overrides`` merged over it."""
    source = str(path)
    if preset is not None:
        preset_path = TRAIN_CONFIG_DIR / "presets" / f"{preset}.yaml"
        if not preset_path.is_file():
            raise ConfigError(preset_path, f"unknown preset '{preset}' (known: {', '.join(PRESETS)})")
        preset_data = read_yaml_mapping(preset_path)
        check_preset_keeps_the_experiment(path, preset, preset_data, overrides)
        data = deep_merge(data, preset_data, path)
        source = f"{path} + preset {preset}"
    if overrides:
        data = deep_merge(data, overrides, path)
    return from_mapping(TrainConfig, data, source)


DEFAULT_TASK = "stand"


@dataclasses.dataclass(frozen=True)
class TrainRequest:
    """What a training run is asked for, before any file is read (``bcg-train``'s arguments).

    ``config`` (default ``config/train/<task>.yaml``) supplies every setting; ``preset`` is
    merged over it, then the fields below that are set. ``motion`` replaces the task's
    clip (``task.motion``) with a G1 CSV anywhere on disk; its file stem is then the motion
    id and the default run directory is ``runs/<stem>-<preset>`` instead of
    ``runs/<task>-<preset>``.
    """

    task: str = DEFAULT_TASK
    config: Path | None = None
    preset: str | None = None
    motion: Path | None = None
    run_dir: str | None = None
    seed: int | None = None
    iterations: int | None = None
    init_from: Path | None = None

    @property
    def config_path(self) -> Path:
        return self.config if self.config is not None else TRAIN_CONFIG_DIR / f"{self.task}.yaml"

    @property
    def run_name(self) -> str:
        return self.motion.stem if self.motion is not None else self.task


def default_run_dir(request: TrainRequest) -> str:
    """``runs/<task or clip stem>-<preset>``: where a run writes unless told otherwise."""
    return f"runs/{request.run_name}-{request.preset or 'default'}"


def train_overrides(request: TrainRequest) -> dict[str, Any]:
    """The mapping merged over the config file (and preset) for ``request``.

    The motion path is made absolute (against the working directory), so the resolved
    config saved in the run directory names the same file from anywhere. The run directory
    is here only when asked for (``resolve_train_config`` supplies the default)."""
    overrides: dict[str, Any] = {"run_dir": request.run_dir} if request.run_dir else {}
    if request.motion is not None:
        overrides["task"] = {"motion": str(Path(request.motion).expanduser().resolve())}
    if request.seed is not None:
        overrides["seed"] = request.seed
    if request.iterations is not None:
        overrides["shac"] = {"iterations": request.iterations}
    if request.init_from is not None:
        overrides["init_from"] = str(Path(request.init_from).expanduser().resolve())
    return overrides


def resolve_train_config(request: TrainRequest) -> TrainConfig:
    """The validated :class:`TrainConfig` of ``request`` (reads the YAML files, no JAX).

    The run directory is ``request.run_dir``, else the config file's own ``run_dir`` (an
    experiment's config, or a run's saved ``config.yaml``, names where it writes), else
    :func:`default_run_dir`."""
    data = read_train_mapping(request.config_path)
    overrides = train_overrides(request)
    if "run_dir" not in overrides and "run_dir" not in data:
        overrides["run_dir"] = default_run_dir(request)
    return train_config_from_mapping(data, request.config_path, request.preset, overrides)


def motion_id(cfg: TrainConfig) -> str:
    """The id a run's motion travels under (ONNX contract ``motion_id``, run summary): the clip's file stem."""
    return Path(cfg.task.motion).stem


def motion_sha256(cfg: TrainConfig) -> str | None:
    """SHA-256 of the motion file ``cfg.task.motion`` resolves to from this process (None where
    there is none: a task that reads no clip). The config holds only the path, and a relative
    path resolves against the working directory first, so the same config can name another
    clip elsewhere or after an edit: checkpoints carry this digest, and export and resume
    compare it with the clip they would use."""
    path = resolve_share_path(cfg.task.motion)
    try:
        return hashlib.sha256(path.read_bytes()).hexdigest()
    except OSError:
        return None


def source_commit() -> str:
    """The commit of the source tree (with ``-dirty`` if it has uncommitted changes), or ''."""
    root = Path(__file__).resolve().parents[2]
    try:
        commit = subprocess.run(["git", "rev-parse", "HEAD"], cwd=root, capture_output=True, text=True, check=True).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=root, capture_output=True, text=True).stdout.strip()
        return commit + ("-dirty" if dirty else "")
    except (OSError, subprocess.CalledProcessError):
        return ""


def config_hash(cfg: TrainConfig) -> str:
    """Stable short hash of what determines training (travels in checkpoints and ONNX metadata).

    Where the run writes (``run_dir``) and how often it checkpoints do not change the
    result, so they are left out: a run resumed into another directory keeps its hash.
    So is ``init_from``, a path that differs between clones: a resumed run takes its
    networks from the checkpoint it resumes, and a warm-started run records the source
    checkpoint's own hash and iteration in ``warm_start.json``."""
    return plain_config_hash(to_plain(cfg))


def plain_config_hash(plain: dict) -> str:
    """:func:`config_hash` of a config as plain values (``to_plain``), e.g. as a checkpoint
    stored it: a field added to the dataclasses later does not change what it hashes."""
    plain = dict(plain)
    for key in ("run_dir", "checkpoint_every", "init_from"):
        plain.pop(key, None)
    text = yaml.safe_dump(plain, sort_keys=True)
    return hashlib.sha256(text.encode()).hexdigest()[:16]
