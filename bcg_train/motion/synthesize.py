"""The project's own reference clips, written in the public G1 CSV format (30 fps).

The LAFAN1 retargets are not reachable from the build machines, so the project
synthesizes its clips: ``stand``, ``squat``, ``step_in_place`` and ``jump`` (vertical
jump landing on both feet). Each is a joint-space trajectory around the robot's
default pose; the root height of every frame is set by forward kinematics on the
``train`` model so that the lowest foot collider touches the floor (plus the ballistic
flight height for the jump), so the clips are physically consistent with the model. The
jump is written as a pelvis height profile whose velocity is continuous through take-off
and landing (:class:`JumpProfile`), turned into leg bends by :class:`LegDrop`.

Run ``bcg-make-motions`` (or ``python -m bcg_train.cli.make_motions``) to rewrite
``models/motions/*.csv``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import mujoco
import numpy as np

from bcg_robot.config import RobotConfig
from bcg_robot.model import build_model, joint_qpos_indices
from bcg_robot.paths import share_file
from bcg_train.motion.loader import CSV_FPS, MotionClip

GRAVITY = 9.81
MOTIONS_DIR = share_file("models/motions")


def _smooth_step(x: float) -> float:
    x = min(max(x, 0.0), 1.0)
    return x * x * (3 - 2 * x)


def _leg_bend(side: str, depth: float) -> dict[str, float]:
    """Hip, knee and ankle offsets that lower the pelvis while keeping the foot flat."""
    return {f"{side}_hip_pitch": -0.5 * depth, f"{side}_knee": depth, f"{side}_ankle_pitch": -0.5 * depth}


def _lowest_foot_point(model: mujoco.MjModel, data: mujoco.MjData, cfg: RobotConfig) -> float:
    foot_ids = {model.body(f).id for f in cfg.feet}
    zs = [
        data.geom_xpos[g, 2] - model.geom_size[g, 0]
        for g in range(model.ngeom)
        if model.geom_bodyid[g] in foot_ids and model.geom_conaffinity[g] and model.geom_type[g] == mujoco.mjtGeom.mjGEOM_SPHERE
    ]
    return float(min(zs))


def _pose(cfg: RobotConfig, offsets: dict[str, float]) -> np.ndarray:
    """Joint angles in motor order: the default pose plus ``offsets`` (joint name -> rad),
    clipped to the joint limits."""
    q = cfg.default_q.copy()
    for joint, dq in offsets.items():
        q[cfg.joint_names.index(joint)] += dq
    return np.clip(q, cfg.lower, cfg.upper)


class _StandingHeight:
    """The root height (m) at which joint angles ``q`` (motor order, upright root) put the lowest
    foot collider on the floor, by forward kinematics on ``model``."""

    def __init__(self, model: mujoco.MjModel, cfg: RobotConfig):
        self.model, self.cfg = model, cfg
        self.data = mujoco.MjData(model)
        self.qi = joint_qpos_indices(model, cfg)

    def __call__(self, q: np.ndarray) -> float:
        self.data.qpos[:] = self.model.qpos0
        self.data.qpos[:3] = 0.0
        self.data.qpos[3:7] = (1, 0, 0, 0)
        self.data.qpos[self.qi] = q
        mujoco.mj_kinematics(self.model, self.data)
        return -_lowest_foot_point(self.model, self.data, self.cfg)


class LegDrop:
    """How far the pelvis drops below standing (m) for a bend ``d`` of both legs
    (:func:`_leg_bend`, feet flat on the floor), tabulated by forward kinematics on the model,
    and its inverse. The jump is written as a pelvis height profile and turned into bends with it."""

    def __init__(self, height: _StandingHeight, cfg: RobotConfig, max_bend: float = 1.6, samples: int = 161):
        self.bends = np.linspace(0.0, max_bend, samples)
        heights = np.array([height(_pose(cfg, {**_leg_bend("left", d), **_leg_bend("right", d)})) for d in self.bends])
        self.drops = heights[0] - heights
        if np.any(np.diff(self.drops) <= 0):
            raise ValueError("LegDrop: the pelvis does not drop monotonically with the leg bend")

    def bend(self, drop: float) -> float:
        """The leg bend (rad) whose pelvis drop is ``drop`` (m)."""
        return float(np.interp(drop, self.drops, self.bends))


JointOffsets = Callable[[float, LegDrop], dict[str, float]]


def stand(t: float, legs: LegDrop) -> dict[str, float]:
    return {}


def squat(t: float, legs: LegDrop, period: float = 4.0, depth: float = 0.9) -> dict[str, float]:
    d = depth * 0.5 * (1 - np.cos(2 * np.pi * t / period))
    return {**_leg_bend("left", d), **_leg_bend("right", d)}


def step_in_place(t: float, legs: LegDrop, period: float = 1.2, lift: float = 0.7) -> dict[str, float]:
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


# The jump as a pelvis height profile (drop below standing, m), so that its velocity is
# continuous through take-off and landing: crouch, push off with a constant upward
# acceleration that reaches the take-off speed at the take-off drop, fly ballistically with
# the legs held, land at that speed and brake with a constant deceleration into the landing
# crouch, hold, stand up. The take-off is with the legs still a little bent (drop 2 cm): near
# full extension the pelvis rises only 0.047 m per radian of bend, so 1.2 m/s there would need
# the knee at ~25 rad/s, past its 20 rad/s limit; at 2 cm it is ~13 rad/s.
@dataclass(frozen=True)
class JumpProfile:
    """The jump's timing and depths (s, m, m/s)."""

    start: float = 0.5  # the crouch starts
    crouch_s: float = 0.4  # time to crouch
    crouch_drop: float = 0.15  # the take-off crouch
    takeoff_drop: float = 0.02  # legs still bent at take-off (and touch-down)
    takeoff_speed: float = 1.2  # flight 2 v / g = 0.245 s, apex 7.3 cm
    land_drop: float = 0.15  # the landing crouch
    hold_s: float = 0.2  # time in the landing crouch
    stand_s: float = 0.6  # time to stand up

    @property
    def push_s(self) -> float:  # constant acceleration from rest over crouch_drop - takeoff_drop
        return 2 * (self.crouch_drop - self.takeoff_drop) / self.takeoff_speed

    @property
    def push_accel(self) -> float:  # m/s^2 above gravity's support
        return self.takeoff_speed**2 / (2 * (self.crouch_drop - self.takeoff_drop))

    @property
    def brake_s(self) -> float:  # constant deceleration to rest over land_drop - takeoff_drop
        return 2 * (self.land_drop - self.takeoff_drop) / self.takeoff_speed

    @property
    def brake_accel(self) -> float:
        return self.takeoff_speed**2 / (2 * (self.land_drop - self.takeoff_drop))

    @property
    def flight_s(self) -> float:
        return 2 * self.takeoff_speed / GRAVITY

    @property
    def takeoff(self) -> float:  # s
        return self.start + self.crouch_s + self.push_s

    @property
    def land(self) -> float:  # s
        return self.takeoff + self.flight_s

    @property
    def stand_start(self) -> float:
        return self.land + self.brake_s + self.hold_s

    def pelvis_drop(self, t: float) -> float:
        """The pelvis drop below standing (m) with the feet on the floor, flight excluded."""
        push_start = self.start + self.crouch_s
        if t < self.start:
            return 0.0
        if t < push_start:
            return self.crouch_drop * _smooth_step((t - self.start) / self.crouch_s)
        if t < self.takeoff:
            return self.crouch_drop - 0.5 * self.push_accel * (t - push_start) ** 2
        if t < self.land:
            return self.takeoff_drop
        if t < self.land + self.brake_s:
            tau = t - self.land
            return self.takeoff_drop + self.takeoff_speed * tau - 0.5 * self.brake_accel * tau * tau
        if t < self.stand_start:
            return self.land_drop
        return self.land_drop * (1 - _smooth_step((t - self.stand_start) / self.stand_s))

    def flight_height(self, t: float) -> float:
        """The root's height above its standing height in flight (m), zero on the floor."""
        tau = t - self.takeoff
        if 0 <= tau <= self.flight_s:
            return self.takeoff_speed * tau - 0.5 * GRAVITY * tau * tau
        return 0.0


JUMP = JumpProfile()


def jump(t: float, legs: LegDrop, profile: JumpProfile = JUMP) -> dict[str, float]:
    """Stand, crouch, push off, fly with the legs held, land into a crouch, stand up
    (:meth:`JumpProfile.pelvis_drop`); the arms swing back with the crouch."""
    drop = profile.pelvis_drop(t)
    d = legs.bend(drop)
    arms = -0.6 * drop / profile.crouch_drop
    return {**_leg_bend("left", d), **_leg_bend("right", d), "left_shoulder_pitch": arms, "right_shoulder_pitch": arms}


MOTIONS: dict[str, tuple[float, JointOffsets, Callable[[float], float]]] = {
    "stand": (10.0, stand, lambda t: 0.0),
    "squat": (8.0, squat, lambda t: 0.0),
    "step_in_place": (7.2, step_in_place, lambda t: 0.0),
    "jump": (3.0, jump, JUMP.flight_height),
}


def synthesize(name: str, cfg: RobotConfig, model: mujoco.MjModel | None = None, fps: float = CSV_FPS) -> MotionClip:
    """Frames of motion ``name`` with feet on the floor (see module docstring)."""
    duration, offsets, flight = MOTIONS[name]
    model = model if model is not None else build_model(cfg, "train")
    height = _StandingHeight(model, cfg)
    legs = LegDrop(height, cfg)
    n = int(round(duration * fps)) + 1
    root_pos, joint_pos = np.zeros((n, 3)), np.zeros((n, cfg.num_joints))
    for k in range(n):
        t = k / fps
        q = _pose(cfg, offsets(t, legs))
        root_pos[k, 2] = height(q) + flight(t)
        joint_pos[k] = q
    quat = np.tile([1.0, 0.0, 0.0, 0.0], (n, 1))
    return MotionClip(name=name, fps=fps, root_pos=root_pos, root_quat=quat, joint_pos=joint_pos)
