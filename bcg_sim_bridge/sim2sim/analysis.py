"""Metrics of a sim-to-sim run from the bridge's trajectory log (pure: numpy + MuJoCo, no ROS).

The metric definitions are those of :mod:`bcg_robot.metrics`:

* falls while the policy was in charge;
* E_track (cm) of the tracked bodies in the pelvis frame (forward kinematics of the
  measured joints vs the reference's) and the root-height error (cm). The reference
  (:class:`RunReference`) is the clip the policy's contract names, played from the node's
  first RUN tick (:func:`motion_origin`) and wrapping at the contract's ``motion_length_s``
  exactly as the node's phase does (:func:`reference_at`); the default pose for a policy
  without a motion;
* foot penetration in the bridge vs the training simulator (the ``train`` variant
  replaying the same drive commands, open loop, from the same start);
* loop timing of the bridge (physics step compute time, pacing overruns, real-time factor).
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import mujoco
import numpy as np

from bcg_robot import metrics
from bcg_robot.config import RobotConfig
from bcg_robot.model import build_model, default_qpos, foot_floor_geoms, joint_dof_indices, joint_qpos_indices
from bcg_robot.motion_csv import ClipSample, MotionClip
from bcg_robot.pd import pd_torque
from bcg_sim_bridge.physics import DriveMode


@dataclasses.dataclass(frozen=True)
class BridgeLog:
    sim_time: np.ndarray
    wall_time: np.ndarray
    root_pos: np.ndarray
    root_quat: np.ndarray
    q: np.ndarray
    dq: np.ndarray
    foot_penetration: np.ndarray
    drive_mode: np.ndarray
    band_engaged: np.ndarray
    cmd_q: np.ndarray
    cmd_kp: np.ndarray
    cmd_kd: np.ndarray
    physics_dt: float
    step_compute_s: np.ndarray
    pacing: dict[str, float]
    counters: dict[str, int]
    events: list[tuple[float, str]]
    diverged: bool = False  # MuJoCo went unstable (NaN state) and the bridge stopped: nothing after it is physics

    @classmethod
    def load(cls, path: str | Path) -> "BridgeLog":
        d = np.load(path)
        pacing = dict(zip(("steps", "overruns", "resyncs", "max_lag_s", "wall_s", "sim_s"), d["pacing"].tolist()))
        return cls(
            **{k: d[k] for k in ("sim_time", "wall_time", "root_pos", "root_quat", "q", "dq", "foot_penetration",
                                 "drive_mode", "band_engaged", "cmd_q", "cmd_kp", "cmd_kd", "step_compute_s")},
            physics_dt=float(d["physics_dt"]), pacing=pacing,
            counters=dict(zip(d["counters_names"].tolist(), d["counters"].astype(int).tolist())),
            events=list(zip(d["event_times"].tolist(), d["event_texts"].tolist())),
            diverged=bool(d["diverged"]) if "diverged" in d.files else False,
        )

    def window(self, t0: float, t1: float) -> np.ndarray:
        """Boolean mask of rows with ``t0 <= wall_time < t1`` (monotonic clock)."""
        return (self.wall_time >= t0) & (self.wall_time < t1)

    def first_time(self, mask: np.ndarray) -> float | None:
        idx = np.flatnonzero(mask)
        return float(self.wall_time[idx[0]]) if idx.size else None


class KeyBodyFK:
    """Tracked-body positions in the pelvis frame from joint angles (root fixed at the origin)."""

    def __init__(self, robot: RobotConfig, bodies: tuple[str, ...] = metrics.TRACKED_BODIES):
        self.model = build_model(robot, "bridge")
        self.data = mujoco.MjData(self.model)
        self.qi = joint_qpos_indices(self.model, robot)
        self.ids = [self.model.body(b).id for b in bodies]
        self.bodies = bodies

    def __call__(self, q: np.ndarray) -> np.ndarray:
        q = np.atleast_2d(q)
        out = np.empty((q.shape[0], len(self.ids), 3))
        for k, qk in enumerate(q):
            self.data.qpos[:] = 0.0
            self.data.qpos[3] = 1.0
            self.data.qpos[self.qi] = qk
            mujoco.mj_kinematics(self.model, self.data)
            out[k] = self.data.xpos[self.ids]
        return out


def tracking_error_cm(fk: KeyBodyFK, q: np.ndarray, q_ref: np.ndarray) -> tuple[float, float]:
    """(E_track, max) in cm between measured and reference joint trajectories."""
    if len(q) == 0:
        return float("nan"), float("nan")
    summary = metrics.summarize_tracking(metrics.body_position_errors(fk(q), fk(q_ref)))
    return summary.mean_cm, summary.max_cm


def motion_origin(state_events: list[tuple[float, str]], t_run: float) -> float:
    """When the node's motion started, as the harness can date it: the node's phase clock starts
    at its first RUN tick, up to a control period after the RUN request ``t_run``, and that tick
    publishes the first RUN state. So: the first ``(time received, state)`` RUN at or after
    ``t_run`` (a few ms of DDS after the tick), else ``t_run``."""
    return next((t for t, state in state_events if state == "RUN" and t >= t_run), t_run)


def clip_time(t: np.ndarray, t_run: float, motion_length_s: float) -> np.ndarray:
    """Clip time (s) at monotonic times ``t`` of a motion started at ``t_run``: ``(t - t_run) % motion_length_s``,
    the node's phase (``bcg_policy_node.safety.control_loop``) times the motion length."""
    if not motion_length_s > 0:
        raise ValueError(f"motion length {motion_length_s} s is not positive")
    return np.mod(np.asarray(t, dtype=np.float64) - t_run, motion_length_s)


def reference_at(clip: MotionClip, motion_length_s: float, t: np.ndarray, t_run: float) -> ClipSample:
    """The reference at monotonic times ``t`` (bridge-log ``wall_time``) of a RUN accepted at ``t_run``:
    ``clip`` at :func:`clip_time` (interpolated between frames; past the clip's last frame, when the
    motion length is longer than the clip, its last frame)."""
    return clip.sample(clip_time(t, t_run, motion_length_s))


@dataclasses.dataclass(frozen=True)
class RunReference:
    """What a run is scored against: ``clip`` (the policy's reference motion, ``motion_length_s`` > 0)
    or, without a clip, the default pose standing at the model's ``default`` keyframe height."""

    name: str = "default pose"
    clip: MotionClip | None = None
    motion_length_s: float = 0.0

    def joints_and_height(self, robot: RobotConfig, fk: "KeyBodyFK", t: np.ndarray, t_run: float) -> tuple[np.ndarray, np.ndarray]:
        """(q_ref (T, n), root z_ref (T,)) at monotonic times ``t``."""
        t = np.asarray(t, dtype=np.float64).reshape(-1)
        if self.clip is None:
            return np.tile(robot.default_q, (len(t), 1)), np.full(len(t), float(default_qpos(fk.model)[2]))
        ref = reference_at(self.clip, self.motion_length_s, t, t_run)
        return ref.joint_pos, ref.root_pos[:, 2]


DEFAULT_POSE_REFERENCE = RunReference()


def training_sim_penetration(robot: RobotConfig, log: BridgeLog, mask: np.ndarray) -> np.ndarray:
    """Foot penetration (m) of the ``train`` variant replaying the logged drive commands of ``mask`` open loop."""
    rows = np.flatnonzero(mask)
    if rows.size == 0:
        return np.zeros(0)
    model = build_model(robot, "train")
    data = mujoco.MjData(model)
    mujoco.mj_resetDataKeyframe(model, data, model.key("default").id)
    qi, di = joint_qpos_indices(model, robot), joint_dof_indices(model, robot)
    data.qpos[qi] = log.q[rows[0]]
    mujoco.mj_forward(model, data)
    foot_floor = foot_floor_geoms(model, robot)
    log_dt = float(np.median(np.diff(log.sim_time))) if len(log.sim_time) > 1 else 0.01
    steps_per_row = max(1, round(log_dt / model.opt.timestep))
    out = []
    for r in rows:
        for _ in range(steps_per_row):
            data.ctrl[:] = pd_torque(log.cmd_q[r], data.qpos[qi], 0.0, data.qvel[di], log.cmd_kp[r], log.cmd_kd[r], 0.0,
                                     robot.effort)
            mujoco.mj_step(model, data)
        out.append(foot_floor.deepest_penetration_of(data.contact))
    return np.asarray(out)


def percentiles_ms(values_s: np.ndarray) -> dict[str, float]:
    v = np.asarray(values_s, dtype=np.float64) * 1e3
    v = v[np.isfinite(v)]
    if len(v) == 0:
        return {"p50": float("nan"), "p99": float("nan"), "max": float("nan")}
    return {"p50": float(np.percentile(v, 50)), "p99": float(np.percentile(v, 99)), "max": float(v.max())}


def fell(log: BridgeLog, mask: np.ndarray) -> tuple[bool, float]:
    """(fell, min root height) over ``mask``."""
    if not mask.any():
        return False, float("nan")
    z = log.root_pos[mask, 2]
    return bool(metrics.is_fallen(z).any()), float(z.min())


def first_damping_after(log: BridgeLog, t: float) -> float | None:
    """Monotonic time at which the motors first received damping at or after ``t``."""
    damped = np.isin(log.drive_mode, (int(DriveMode.DAMPING), int(DriveMode.TIMEOUT_DAMPING)))
    return log.first_time(damped & (log.wall_time >= t))


def realtime_factor(log: BridgeLog, mask: np.ndarray) -> float | None:
    """Simulated seconds per wall-clock second over the rows of ``mask`` (None with under two rows).
    The bridge's whole-life figure hides a slow stretch: under load a run averaged 0.96x while
    one second of it ran at 0.35x, and once the pacer is far behind it resyncs for good."""
    idx = np.flatnonzero(mask)
    if idx.size < 2:
        return None
    wall = float(log.wall_time[idx[-1]] - log.wall_time[idx[0]])
    return float(log.sim_time[idx[-1]] - log.sim_time[idx[0]]) / wall if wall > 0 else None


# The bridge's counters of commands it refused or obeyed only in part (bcg_sim_bridge.interfaces).
REJECTION_COUNTERS = ("bad_crc", "bad_mode_machine", "ab_ankle_mode", "malformed", "disabled_motor_cmds", "nonfinite")


def rejected_commands(counters: dict[str, int], injected_bad_crc: int = 0) -> dict[str, int]:
    """The counters of :data:`REJECTION_COUNTERS` that moved, beyond the ``injected_bad_crc``
    commands a scenario corrupted on purpose: a node whose commands the robot drops (wrong
    mode_machine, bad CRC) or obeys with a motor disabled is not running the policy it tests."""
    out = {}
    for name in REJECTION_COUNTERS:
        n = int(counters.get(name, 0)) - (injected_bad_crc if name == "bad_crc" else 0)
        if n > 0:
            out[name] = n
    return out
