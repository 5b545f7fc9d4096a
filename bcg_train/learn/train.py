"""``train(cfg) -> (policy, params, metrics)``: the SHAC training loop with logging and checkpoints.

Per run directory (``cfg.run_dir``):

``config.yaml``          the resolved :class:`TrainConfig` (``bcg_robot.yaml_dataclass.dump_dataclass``)
``metrics.csv``          one row per iteration (also as TensorBoard scalars in ``tb/``)
``curves.png``           training curves, redrawn at every checkpoint (:mod:`bcg_train.learn.curves`)
``summary.json``         what the run cost (:func:`run_summary`): compile, s/iteration, env steps/s,
                          peak device and resident memory
``warm_start.json``      with ``init_from``: the checkpoint the networks came from (its hash,
                          iteration and env steps, and the digests of its clip and this run's)
``checkpoints/NNNNNN.pkl`` the full training state (learner, optimizers, normalizer, environments,
                          RNG) plus the resolved config and its hash, the digest of the clip and
                          the robot config trained with; :func:`train` with ``resume=...``
                          continues bit for bit as if never interrupted.
"""

from __future__ import annotations

import csv
import dataclasses
import json
import pickle
import resource
import statistics
import time
from pathlib import Path
from typing import Any, Callable

import jax
import numpy as np
from tqdm import tqdm

from bcg_robot.config import RobotConfig, load_robot_config
from bcg_robot.errors import BCGInputError
from bcg_robot.paths import resolve_share_path
from bcg_robot.yaml_dataclass import dump_dataclass, from_mapping, to_plain
from bcg_train.learn.config import TrainConfig, config_hash, motion_id, motion_sha256, plain_config_hash, source_commit
from bcg_train.learn.curves import plot_training_curves
from bcg_train.learn.shac import SHAC, SHACState
from bcg_train.sim.jax_setup import enable_compilation_cache, enable_float64

CHECKPOINT_FORMAT = 1


class CheckpointError(BCGInputError):
    """A checkpoint that cannot be used."""


@dataclasses.dataclass(frozen=True)
class Checkpoint:
    config: TrainConfig  # as stored, with fields added since at their defaults
    state: SHACState  # host (numpy) arrays
    path: Path
    stored_hash: str  # the config hash the checkpoint was saved with (its exports carry it)
    motion_sha256: str | None = None  # of the clip trained on (None: saved before checkpoints carried it)
    robot: dict | None = None  # robot_record() of the robot trained with (None: not recorded, or no robot)
    source_commit: str | None = None  # of the code that trained it (None: saved before checkpoints carried it)


# What of the robot config shapes training (model, joint drive, action, observation): all
# but where it was read from and the node's gain tolerance.
TRAINING_ROBOT_FIELDS = tuple(f.name for f in dataclasses.fields(RobotConfig) if f.name not in ("source", "policy_gain_ratio"))


def robot_record(robot: RobotConfig) -> dict:
    plain = to_plain(robot)
    return {key: plain[key] for key in TRAINING_ROBOT_FIELDS}


def save_checkpoint(path: Path, cfg: TrainConfig, state: SHACState, motion_digest: str | None = None,
                    robot: RobotConfig | None = None, commit: str | None = None) -> Path:
    """``motion_digest``: :func:`motion_sha256` of the clip the run trained on, taken when the
    run started (None: the clip's digest now). ``robot``: the robot config the task was built
    from (none for a task without a robot). ``commit``: :func:`source_commit` of the code
    training, taken when the run started (None: the source tree's now)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    payload = {
        "format": CHECKPOINT_FORMAT,
        "config": to_plain(cfg),
        "config_hash": config_hash(cfg),
        "motion_sha256": motion_digest or motion_sha256(cfg),
        "robot": None if robot is None else robot_record(robot),
        "source_commit": source_commit() if commit is None else commit,
        "state": jax.device_get(state),
    }
    tmp = path.with_suffix(".tmp")
    with open(tmp, "wb") as f:
        pickle.dump(payload, f, protocol=pickle.HIGHEST_PROTOCOL)
    tmp.replace(path)
    return path


def load_checkpoint(path: str | Path) -> Checkpoint:
    path = Path(path)
    if path.is_dir():
        found = sorted((path / "checkpoints").glob("*.pkl")) or sorted(path.glob("*.pkl"))
        if not found:
            raise CheckpointError(path, "no checkpoint (*.pkl) in this directory")
        path = found[-1]
    try:
        with open(path, "rb") as f:
            payload = pickle.load(f)
    # ValueError: a bad protocol byte; TypeError: a class called with arguments it does not take
    except (OSError, pickle.UnpicklingError, EOFError, AttributeError, ImportError, ValueError, TypeError) as err:
        raise CheckpointError(path, f"cannot read checkpoint: {err}") from None
    if not isinstance(payload, dict) or payload.get("format") != CHECKPOINT_FORMAT:
        raise CheckpointError(path, "not a BCG training checkpoint (format mismatch)")
    missing = [key for key in ("config", "config_hash", "state") if key not in payload]
    if missing:
        raise CheckpointError(path, f"checkpoint lacks '{missing[0]}'")
    for key, kind, what in (("config", dict, "a mapping"), ("config_hash", str, "a string"), ("state", SHACState, "a SHAC state")):
        if not isinstance(payload[key], kind):  # a hand-made pickle: was a traceback wherever it was first used
            raise CheckpointError(path, f"checkpoint's '{key}' is not {what} ({type(payload[key]).__name__})")
    # integrity of the stored config itself: a field added to TrainConfig since the
    # checkpoint was saved loads at its default and does not make the checkpoint unreadable
    if plain_config_hash(payload["config"]) != payload["config_hash"]:
        raise CheckpointError(path, "config hash does not match the stored config")
    cfg = from_mapping(TrainConfig, payload["config"], str(path))
    return Checkpoint(cfg, payload["state"], path, payload["config_hash"], payload.get("motion_sha256"), payload.get("robot"),
                      payload.get("source_commit"))


def check_checkpoint_motion(ckpt: Checkpoint) -> None:
    """The clip the checkpoint's config resolves to here is the one it was trained on. The
    config holds a path: run from another directory, a relative one can name another clip
    (``resolve_share_path`` tries the working directory first), and a clip edited since
    training changes under the same name. Exporting then would embed the wrong timeline
    (``action_offset: reference``) and contract; resuming would train on another motion."""
    if ckpt.motion_sha256 is None:  # saved before checkpoints carried the digest
        return
    here = motion_sha256(ckpt.config)
    if here != ckpt.motion_sha256:
        found = resolve_share_path(ckpt.config.task.motion)
        what = "is missing" if here is None else f"differs from the clip trained on (sha256 {here[:12]}, trained on {ckpt.motion_sha256[:12]})"
        raise CheckpointError(ckpt.path, f"motion '{ckpt.config.task.motion}' resolves here to {found}, which {what}; "
                                         "run from the training's directory or restore the clip")


# What of the robot config a warm start's actor depends on: its inputs and outputs are joints in
# this order, read and commanded about this default pose, scaled by this action scale, at this
# rate. Gains and limits may differ (fine-tuning after a gain change is a warm start's use).
WARM_START_ROBOT_FIELDS = ("joint_names", "default_pose", "action_scale", "control_dt")


def check_checkpoint_robot(ckpt: Checkpoint, robot: RobotConfig, fields: tuple[str, ...] = TRAINING_ROBOT_FIELDS,
                           advice: str = "use the robot config it was trained with") -> None:
    """``robot`` is the robot config the checkpoint was trained with. The trainer reads gains,
    default pose, action scale, control rate and limits from the robot config, and export
    writes them into the policy's contract from the config it is given: after an edit of
    ``robot.yaml`` the ONNX would state values training never used, and the node, which
    checks the contract against that same edited file, would accept it. A field added to
    :class:`RobotConfig` since the checkpoint was saved is not compared."""
    if ckpt.robot is None:  # saved before checkpoints carried it, or a task without a robot
        return
    now = robot_record(robot)
    for key in fields:
        if key in ckpt.robot and ckpt.robot[key] != now[key]:
            was, is_ = ckpt.robot[key], now[key]
            if isinstance(was, list) and isinstance(is_, list) and len(was) == len(is_) == robot.num_joints:
                i = next(i for i, (a, b) in enumerate(zip(was, is_)) if a != b)
                was, is_, key = was[i], is_[i], f"{key}[{robot.joint_names[i]}]"
            raise CheckpointError(ckpt.path, f"trained with robot config {key} = {was}, but {robot.source} says {is_}; {advice}")


def warm_start_source(cfg: TrainConfig) -> Checkpoint:
    """The checkpoint ``cfg.init_from``, read and checked before the task is built and its
    reset compiled (a bad file was found only after about 46 s of setup). The observation
    layout must be the checkpoint's: the same sizes in another order would pass every shape
    check and feed the actor the wrong inputs."""
    ckpt = load_checkpoint(cfg.init_from)
    if tuple(ckpt.config.task.observation_spec) != tuple(cfg.task.observation_spec):
        raise CheckpointError(
            ckpt.path, f"observation_spec {list(ckpt.config.task.observation_spec)} differs from this config's "
            f"{list(cfg.task.observation_spec)}; cannot warm-start from it"
        )
    return ckpt


def warm_start(shac: SHAC, state: SHACState, cfg: TrainConfig, run_dir: Path, ckpt: Checkpoint) -> SHACState:
    """``state`` with the networks and normalizer of ``ckpt``, the checkpoint ``cfg.init_from`` as
    :func:`warm_start_source` read it (:meth:`SHAC.warm_start`); the source is recorded in
    ``run_dir/warm_start.json``. Where the critics' inputs differ (``task.critic_privileged``),
    only the actor and its normalizer are taken: the critics start fresh (give them
    ``shac.critic_warmup_iterations``)."""
    same_critics = tuple(ckpt.config.task.critic_privileged) == tuple(cfg.task.critic_privileged)
    try:
        warm = shac.warm_start(state, ckpt.state, critics=same_critics)
    except ValueError as err:
        raise CheckpointError(ckpt.path, f"cannot warm-start from it: {err}") from None
    record = {
        "init_from": str(ckpt.path),
        "source_config_hash": ckpt.stored_hash,
        "source_iteration": int(np.asarray(ckpt.state.iteration)),
        "source_env_steps": int(np.asarray(ckpt.state.iteration)) * ckpt.config.shac.num_envs * ckpt.config.shac.horizon,
        # the clips by content: a warm start may change the clip (stand -> jump), and the record says so
        "source_motion": ckpt.config.task.motion,
        "source_motion_sha256": ckpt.motion_sha256,
        "motion_sha256": motion_sha256(cfg),
        "critics": "from the source" if same_critics else
        f"fresh: critic_privileged {list(cfg.task.critic_privileged)}, the source's {list(ckpt.config.task.critic_privileged)}",
    }
    (run_dir / "warm_start.json").write_text(json.dumps(record, indent=2) + "\n")
    return warm


def make_task(cfg: TrainConfig, robot: RobotConfig | None = None):
    from bcg_train.tasks.imitation import ImitationTask

    if cfg.task.float64:
        enable_float64()  # process-wide (jax_enable_x64), before the model goes on the device
    return ImitationTask(cfg.task, robot or load_robot_config())


def _iteration(row: list[str]) -> int | None:
    """The iteration of a ``metrics.csv`` row, None for a line cut short or garbled (a full disk)."""
    try:
        return int(row[0])
    except (IndexError, ValueError):
        return None


class MetricsLog:
    """Metrics per iteration to CSV and TensorBoard.

    ``resume_from``: the iteration of the checkpoint a resumed run continues from. Rows logged
    after it (a run that ended between checkpoints) are dropped, from the CSV and from
    TensorBoard, since the resumed run logs those iterations again: kept, they would appear
    twice, and a threshold the abandoned segment reached would still count."""

    def __init__(self, run_dir: Path, resume_from: int | None = None):
        self.path = run_dir / "metrics.csv"
        self.keys: list[str] | None = None
        if resume_from is not None and self.path.is_file():
            with open(self.path, newline="") as f:
                rows = list(csv.reader(f))
            if rows:
                self.keys = rows[0]
                kept = [row for row in rows[1:] if (it := _iteration(row)) is not None and it <= resume_from]
                with open(self.path, "w", newline="") as f:
                    csv.writer(f).writerows([self.keys, *kept])
        elif self.path.exists():
            self.path.unlink()
        try:
            from tensorboardX import SummaryWriter

            purge = None if resume_from is None else resume_from + 1
            self.tb = SummaryWriter(str(run_dir / "tb"), purge_step=purge)
        except ImportError:  # pragma: no cover - tensorboardX is in requirements/train.txt
            self.tb = None

    def write(self, iteration: int, row: dict[str, float]) -> None:
        row = {"iteration": iteration, **row}
        if self.keys is None:
            self.keys = list(row)
            with open(self.path, "w", newline="") as f:
                csv.writer(f).writerow(self.keys)
        with open(self.path, "a", newline="") as f:
            csv.writer(f).writerow([row.get(k, "") for k in self.keys])
        if self.tb is not None:
            for k, v in row.items():
                if k != "iteration":
                    self.tb.add_scalar(k, v, iteration)

    def close(self) -> None:
        if self.tb is not None:
            self.tb.close()


def peak_device_memory_gb() -> float | None:
    """Peak memory in use on the local accelerators (summed), or None where the backend
    does not report it (XLA:CPU)."""
    peaks = []
    for device in jax.local_devices():
        stats = device.memory_stats() if hasattr(device, "memory_stats") else None
        if stats and "peak_bytes_in_use" in stats:
            peaks.append(stats["peak_bytes_in_use"])
    return sum(peaks) / 1e9 if peaks else None


def run_summary(cfg: TrainConfig, history: list[dict[str, float]]) -> dict[str, Any]:
    """What a run cost, from its metrics rows (``wall_s`` is cumulative from the first call).

    ``first_iteration_s`` holds the compile (trace, XLA compile, one iteration);
    ``s_per_iteration`` is the median of the later iterations (None with fewer than two);
    ``env_steps_per_s`` = ``num_envs * horizon / s_per_iteration``."""
    walls = [row["wall_s"] for row in history]
    steps = [b - a for a, b in zip(walls, walls[1:])]
    s_per_it = statistics.median(steps) if steps else None
    device = jax.local_devices()[0]
    return {
        "task": motion_id(cfg),
        "platform": device.platform,
        "device_kind": device.device_kind,
        "num_devices": jax.local_device_count(),
        "num_envs": cfg.shac.num_envs,
        "horizon": cfg.shac.horizon,
        "estimator": cfg.task.bcg.mode.value,
        "iterations": len(history),
        "first_iteration_s": walls[0] if walls else None,
        "s_per_iteration": s_per_it,
        "env_steps_per_s": cfg.shac.num_envs * cfg.shac.horizon / s_per_it if s_per_it else None,
        "wall_s": walls[-1] if walls else 0.0,
        "env_steps": history[-1]["env_steps"] if history else 0.0,
        "peak_device_memory_gb": peak_device_memory_gb(),
        "peak_rss_gb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1e6,
    }


def train(
    cfg: TrainConfig,
    task: Any = None,
    resume: str | Path | None = None,
    iterations: int | None = None,
    progress: bool = True,
    on_iteration: Callable[[int, dict[str, float]], None] | None = None,
    max_train_s: float | None = None,
) -> tuple[Callable[[jax.Array], jax.Array], SHACState, list[dict[str, float]]]:
    """Train (or continue) a policy; returns the deterministic policy, the final state and the metrics.

    ``iterations`` stops early (e.g. to test resume); the schedule still spans ``cfg.shac.iterations``.
    ``max_train_s`` stops after the iteration that ends that many seconds after the first
    (compiling) iteration, with a checkpoint; the schedule is unchanged, so the run can resume.
    """
    enable_compilation_cache()
    run_dir = Path(cfg.run_dir)
    motion_digest = motion_sha256(cfg)  # the clip the task reads now, not after an edit mid-run
    commit = source_commit()  # the code training now, recorded in every checkpoint (and so in its exports)
    ckpt = None
    if resume is not None:  # refused before anything in the run directory is written
        ckpt = load_checkpoint(resume)
        if config_hash(ckpt.config) != config_hash(cfg):
            raise CheckpointError(ckpt.path, "checkpoint was trained with a different config")
        check_checkpoint_motion(ckpt)
    elif any((run_dir / "checkpoints").glob("*.pkl")):
        # a fresh run would leave an earlier run's later checkpoints beside its own: bcg-export
        # <run dir> takes the newest by name, and bcg-select-checkpoint judges them as this run's
        raise CheckpointError(run_dir, "holds checkpoints of an earlier run: --resume one of them, or train into "
                                       "another run directory")
    source = warm_start_source(cfg) if resume is None and cfg.init_from else None
    task = task if task is not None else make_task(cfg)
    robot = getattr(task, "robot", None)
    if ckpt is not None and robot is not None:
        check_checkpoint_robot(ckpt, robot)
    if source is not None and robot is not None:  # before the reset's compile
        check_checkpoint_robot(source, robot, WARM_START_ROBOT_FIELDS,
                               "a warm start keeps the actor, whose inputs and outputs mean these (--init-from)")
    run_dir.mkdir(parents=True, exist_ok=True)
    shac = SHAC(task, cfg.shac, cfg.devices)
    if ckpt is not None:
        state = shac.shard(jax.tree_util.tree_map(np.asarray, ckpt.state))
    else:
        state = shac.init(cfg.seed)
        if source is not None:
            state = warm_start(shac, state, cfg, run_dir, source)
    dump_dataclass(cfg, run_dir / "config.yaml")
    step = shac.jit_iteration(state)
    start = int(state.iteration)
    stop = min(cfg.shac.iterations, start + iterations) if iterations is not None else cfg.shac.iterations
    log = MetricsLog(run_dir, resume_from=start if ckpt is not None else None)
    history: list[dict[str, float]] = []
    t0 = time.perf_counter()
    env_steps_per_iter = cfg.shac.num_envs * cfg.shac.horizon
    bar = tqdm(range(start, stop), desc="shac", disable=not progress, dynamic_ncols=True)
    for it in bar:
        state, metrics = step(state)
        row = {k: float(v) for k, v in jax.device_get(metrics).items()}
        row["env_steps"] = float((it + 1) * env_steps_per_iter)
        row["wall_s"] = time.perf_counter() - t0
        history.append(row)
        log.write(it + 1, row)
        bar.set_postfix(reward=f"{row['reward']:.3f}", loss=f"{row['actor_loss']:.3f}")
        if on_iteration is not None:
            on_iteration(it + 1, row)
        out_of_time = max_train_s is not None and row["wall_s"] - history[0]["wall_s"] >= max_train_s
        if (it + 1) % cfg.checkpoint_every == 0 or it + 1 == stop or out_of_time:
            save_checkpoint(run_dir / "checkpoints" / f"{it + 1:06d}.pkl", cfg, state, motion_digest, robot, commit)
            plot_training_curves(log.path, run_dir / "curves.png", f"{run_dir.name}: iteration {it + 1}")
        if out_of_time:
            break
    bar.close()
    log.close()
    (run_dir / "summary.json").write_text(json.dumps(run_summary(cfg, history), indent=2) + "\n")
    return shac.policy_fn(state), state, history
