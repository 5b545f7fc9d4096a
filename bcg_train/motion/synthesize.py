"""The project's own reference clips, written in the public G1 CSV format (30 fps).

The LAFAN1 retargets are not reachable from the build machines, so the project
synthesizes its clips: ``stand``, ``squat``, ``step_in_place`` and ``jump`` (vertical
jump landing on both feet). Each is a joint-space trajectory around the robot's
default pose; the root height of every frame is set by forward kinematics on the
``train`` model so that the lowest foot collider touches the floor (plus the ballistic
flight height for the jump), so the clips are physically consistent with the model.

Run ``bcg-make-motions`` (or ``python -m bcg_train.cli.make_motions``) to rewrite
``models/motions/*.csv``.
"""

from __future__ import annotations

from typing import Callable

import mujoco
import numpy as np

from bcg_robot.config import RobotConfig
from bcg_robot.model import build_model, joint_qpos_indices
from bcg_robot.paths import share_file
from bcg_train.motion.loader import CSV_FPS, MotionClip

GRAVITY = 9.81
MOTIONS_DIR = share_file("models/motions")

JointOffsets = Callable[[float], dict[str, float]]


def _smooth_step(x: float) -> float:
    x = min(max(x, 0.0), 1.0)
    return x * x * (3 - 2 * x)


def _leg_bend(side: str, depth: float) -> dict[str, float]:
    """Hip, knee and ankle offsets that lower the pelvis while keeping the foot flat."""
    return {f"{side}_hip_pitch": -0.5 * depth, f"{side}_knee": depth, f"{side}_ankle_pitch": -0.5 * depth}


def stand(t: float) -> dict[str, float]:
    return {}


def squat(t: float, period: float = 4.0, depth: float = 0.9) -> dict[str, float]:
    d = depth * 0.5 * (1 - np.cos(2 * np.pi * t / period))
    return {**_leg_bend("left", d), **_leg_bend("right", d)}


def step_in_place(t: float, period: float = 1.2, lift: float = 0.7) -> dict[str, float]:
    """Alternate foot lifts; arms swing opposite to the legs."""
    s = np.sin(2 * np.pi * t / period)
    ramp = _smooth_step(t / 0.6)
    left, right = ramp * lift * max(s, 0.0), ramp * lift * max(-s, 0.0)
    out = {**_leg_bend("left", left), **_leg_bend("right", right)}
    out["left_hip_pitch"] = -0.8 * left
    out["right_hip_pitch"] = -0.8 * right
    out["left_shoulder_pitch"] = 0.3 * ramp * s
    out["right_shoulder_pitch"] = -0.3 * ramp * s
    return out


JUMP_CROUCH = (0.5, 1.1)  # crouch down, then extend until takeoff (s)
JUMP_TAKEOFF_SPEED = 1.4  # m/s: flight time 2 v/g = 0.29 s, apex 0.10 m


def _jump_flight_time() -> float:
    return 2 * JUMP_TAKEOFF_SPEED / GRAVITY


def jump(t: float, depth: float = 0.8) -> dict[str, float]:
    """Stand, crouch, extend, fly with extended legs, land into a crouch, stand up."""
    t0, t1 = JUMP_CROUCH
    t_land = t1 + _jump_flight_time()
    if t < t0:
        d = 0.0
    elif t < 0.9:
        d = depth * _smooth_step((t - t0) / 0.4)
    elif t < t1:
        d = depth * (1 - _smooth_step((t - 0.9) / (t1 - 0.9)))
    elif t < t_land:
        d = 0.0
    else:
        d = depth * 0.8 * np.sin(np.pi * min((t - t_land) / 0.8, 1.0)) if t < t_land + 0.8 else 0.0
    arms = -0.6 * d / depth
    return {**_leg_bend("left", d), **_leg_bend("right", d), "left_shoulder_pitch": arms, "right_shoulder_pitch": arms}


def jump_flight_height(t: float) -> float:
    t1 = JUMP_CROUCH[1]
    tau = t - t1
    if 0 <= tau <= _jump_flight_time():
        return JUMP_TAKEOFF_SPEED * tau - 0.5 * GRAVITY * tau * tau
    return 0.0


MOTIONS: dict[str, tuple[float, JointOffsets, Callable[[float], float]]] = {
    "stand": (10.0, stand, lambda t: 0.0),
    "squat": (8.0, squat, lambda t: 0.0),
    "step_in_place": (7.2, step_in_place, lambda t: 0.0),
    "jump": (3.0, jump, jump_flight_height),
}


def _lowest_foot_point(model: mujoco.MjModel, data: mujoco.MjData, cfg: RobotConfig) -> float:
    foot_ids = {model.body(f).id for f in cfg.feet}
    zs = [
        data.geom_xpos[g, 2] - model.geom_size[g, 0]
        for g in range(model.ngeom)
        if model.geom_bodyid[g] in foot_ids and model.geom_conaffinity[g] and model.geom_type[g] == mujoco.mjtGeom.mjGEOM_SPHERE
    ]
    return float(min(zs))


def synthesize(name: str, cfg: RobotConfig, model: mujoco.MjModel | None = None, fps: float = CSV_FPS) -> MotionClip:
    """Frames of motion ``name`` with feet on the floor (see module docstring)."""
    duration, offsets, flight = MOTIONS[name]
    model = model if model is not None else build_model(cfg, "train")
    data = mujoco.MjData(model)
    qi = joint_qpos_indices(model, cfg)
    index = {j: i for i, j in enumerate(cfg.joint_names)}
    n = int(round(duration * fps)) + 1
    root_pos, joint_pos = np.zeros((n, 3)), np.zeros((n, cfg.num_joints))
    for k in range(n):
        t = k / fps
        q = cfg.default_q.copy()
        for joint, dq in offsets(t).items():
            q[index[joint]] += dq
        q = np.clip(q, cfg.lower, cfg.upper)
        data.qpos[:] = model.qpos0
        data.qpos[:3] = 0.0
        data.qpos[3:7] = (1, 0, 0, 0)
        data.qpos[qi] = q
        mujoco.mj_kinematics(model, data)
        root_pos[k, 2] = -_lowest_foot_point(model, data, cfg) + flight(t)
        joint_pos[k] = q
    quat = np.tile([1.0, 0.0, 0.0, 0.0], (n, 1))
    return MotionClip(name=name, fps=fps, root_pos=root_pos, root_quat=quat, joint_pos=joint_pos)
