"""A clip at the control rate: positions, velocities and key-body positions.

:func:`reference_from_clip` resamples a :class:`MotionClip` to the control period
(linear interpolation for positions and joint angles, slerp for the root
orientation), differentiates it (central differences; the root angular velocity is
expressed in the root frame, like MuJoCo's free-joint velocity and the pelvis IMU's
gyro) and computes key-body positions by forward kinematics in plain MuJoCo on the
``train`` model variant, i.e. on the same kinematic tree the trainer simulates.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import mujoco
import numpy as np

from bcg_robot.config import RobotConfig
from bcg_robot.metrics import TRACKED_BODIES
from bcg_robot.model import build_model, joint_dof_indices, joint_qpos_indices
from bcg_robot.motion_csv import CSV_FPS, MotionClip, MotionError, load_motion_csv

# Bodies whose world positions the trainer tracks: the pelvis and the bodies of E_track
# (torso, knees, feet, elbows, hands; see bcg_robot.metrics).
KEY_BODIES = ("pelvis",) + TRACKED_BODIES


@dataclasses.dataclass(frozen=True)
class ReferenceMotion:
    """A motion sampled every ``dt`` seconds (T frames); see the module docstring."""

    name: str
    dt: float
    root_pos: np.ndarray  # (T, 3) world
    root_quat: np.ndarray  # (T, 4) w x y z
    joint_pos: np.ndarray  # (T, n)
    root_lin_vel: np.ndarray  # (T, 3) world frame
    root_ang_vel: np.ndarray  # (T, 3) root frame
    joint_vel: np.ndarray  # (T, n)
    key_body_names: tuple[str, ...]
    key_body_pos: np.ndarray  # (T, K, 3) world

    @property
    def num_frames(self) -> int:
        return self.root_pos.shape[0]

    @property
    def length_s(self) -> float:
        """Motion length used for the phase: ``num_frames * dt`` (phase = t / length)."""
        return self.num_frames * self.dt

    def qpos(self, frame: int, model: mujoco.MjModel, cfg: RobotConfig) -> np.ndarray:
        """Full MuJoCo qpos of ``frame`` for ``model`` (free root first)."""
        q = model.qpos0.copy()
        q[:3], q[3:7] = self.root_pos[frame], self.root_quat[frame]
        q[joint_qpos_indices(model, cfg)] = self.joint_pos[frame]
        return q

    def qvel(self, frame: int, model: mujoco.MjModel, cfg: RobotConfig) -> np.ndarray:
        v = np.zeros(model.nv)
        v[:3], v[3:6] = self.root_lin_vel[frame], self.root_ang_vel[frame]
        v[joint_dof_indices(model, cfg)] = self.joint_vel[frame]
        return v


def quat_mul(a: Any, b: Any, xp: Any = np) -> Any:
    """Hamilton product ``a b`` of quaternions ``w x y z`` (leading axes broadcast; numpy or jax.numpy)."""
    aw, ax, ay, az = xp.moveaxis(a, -1, 0)
    bw, bx, by, bz = xp.moveaxis(b, -1, 0)
    return xp.stack(
        [
            aw * bw - ax * bx - ay * by - az * bz,
            aw * bx + ax * bw + ay * bz - az * by,
            aw * by - ax * bz + ay * bw + az * bx,
            aw * bz + ax * by - ay * bx + az * bw,
        ],
        axis=-1,
    )


def quat_conj(q: np.ndarray) -> np.ndarray:
    return q * np.array([1.0, -1.0, -1.0, -1.0])


def resample_times(clip: MotionClip, dt: float) -> np.ndarray:
    return np.arange(0.0, clip.duration_s + 1e-9, dt)


def _interpolate(clip: MotionClip, times: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    sample = clip.sample(times)  # the codec's one interpolation (bcg_robot.motion_csv)
    return sample.root_pos, sample.root_quat, sample.joint_pos


def angular_velocity_body(quat: np.ndarray, dt: float) -> np.ndarray:
    """Root-frame angular velocity from a quaternion sequence: 2 vec(q^* dq/dt)."""
    dq = np.gradient(quat, dt, axis=0)
    return 2.0 * quat_mul(quat_conj(quat), dq)[:, 1:]


def key_body_positions(
    model: mujoco.MjModel, cfg: RobotConfig, root_pos: np.ndarray, root_quat: np.ndarray, joint_pos: np.ndarray,
    bodies: tuple[str, ...] = KEY_BODIES,
) -> np.ndarray:
    """World positions (T, K, 3) of ``bodies`` by forward kinematics in plain MuJoCo."""
    data = mujoco.MjData(model)
    qi = joint_qpos_indices(model, cfg)
    ids = [model.body(b).id for b in bodies]
    out = np.zeros((root_pos.shape[0], len(ids), 3))
    for t in range(root_pos.shape[0]):
        data.qpos[:3], data.qpos[3:7] = root_pos[t], root_quat[t]
        data.qpos[qi] = joint_pos[t]
        mujoco.mj_kinematics(model, data)
        out[t] = data.xpos[ids]
    return out


def reference_from_clip(clip: MotionClip, cfg: RobotConfig, model: mujoco.MjModel | None = None) -> ReferenceMotion:
    """Resample ``clip`` to ``cfg.control_dt`` and add velocities and key-body positions."""
    dt = cfg.control_dt
    model = model if model is not None else build_model(cfg, "train")
    times = resample_times(clip, dt)
    if times.size < 2:  # no velocity from one frame (np.gradient's ValueError, naming no file)
        raise MotionError(clip.source, f"lasts {clip.duration_s:g} s, shorter than one control step ({dt:g} s): "
                                       "a reference needs two")
    root_pos, root_quat, joint_pos = _interpolate(clip, times)
    return ReferenceMotion(
        name=clip.name,
        dt=dt,
        root_pos=root_pos,
        root_quat=root_quat,
        joint_pos=joint_pos,
        root_lin_vel=np.gradient(root_pos, dt, axis=0),
        root_ang_vel=angular_velocity_body(root_quat, dt),
        joint_vel=np.gradient(joint_pos, dt, axis=0),
        key_body_names=KEY_BODIES,
        key_body_pos=key_body_positions(model, cfg, root_pos, root_quat, joint_pos),
    )


def load_reference_motion(path: str | Path, cfg: RobotConfig, fps: float = CSV_FPS, model: mujoco.MjModel | None = None) -> ReferenceMotion:
    return reference_from_clip(load_motion_csv(path, cfg, fps), cfg, model)
