"""Roll an ONNX policy in plain MuJoCo with onnxruntime, under domain randomization.

The policy sees exactly what the robot node gives it (raw IMU quaternion and gyro,
joint positions and velocities in motor order, its previous action, the phase
``time / motion length`` wrapped to [0, 1)) at the contract's control rate; the
PD law (:func:`bcg_robot.pd.pd_torque`) runs every physics step with the contract's
gains. Each seed draws friction, pelvis mass, gain scale, a 0/1-step action latency
and push times/velocities from the task's domain-randomization config.

Measured per seed: whether and when the robot fell (root below 0.3 m), the tracking
error E_track (mean key-body position error against the reference, cm) and the foot
penetration (mean over physics steps with foot contact of the deepest foot contact, mm).
"""

from __future__ import annotations

import copy
import dataclasses
from typing import Callable

import mujoco
import numpy as np
import onnx
import onnxruntime as ort

from bcg_robot.config import RobotConfig
from bcg_robot.contract import PolicyContract
from bcg_robot.errors import ContractError
from bcg_robot.model import joint_dof_indices, joint_qpos_indices
from bcg_robot.pd import pd_torque
from bcg_train.motion.reference import ReferenceMotion
from bcg_train.tasks.config import DomainRandomizationConfig

FALL_HEIGHT = 0.3


@dataclasses.dataclass(frozen=True)
class RolloutResult:
    seed: int
    fell: bool
    survived_s: float
    tracking_error_cm: float
    foot_penetration_mm: float
    time: np.ndarray
    root_height: np.ndarray
    tracking_error: np.ndarray  # m per control step
    domain: dict


def load_policy(path: str) -> tuple[ort.InferenceSession, PolicyContract]:
    try:
        model = onnx.load(path)
    except Exception as err:  # protobuf DecodeError, OSError
        raise ContractError(path, f"not a readable ONNX model: {type(err).__name__}: {err}") from None
    contract = PolicyContract.from_metadata({p.key: p.value for p in model.metadata_props}, path)
    opts = ort.SessionOptions()
    opts.intra_op_num_threads = 1
    try:
        session = ort.InferenceSession(model.SerializeToString(), opts, providers=["CPUExecutionProvider"])
    except Exception as err:  # onnxruntime rejects the graph
        raise ContractError(path, f"onnxruntime cannot load the graph: {err}") from None
    return session, contract


def _foot_geoms(model: mujoco.MjModel, robot: RobotConfig) -> set[int]:
    feet = {model.body(f).id for f in robot.feet}
    return {g for g in range(model.ngeom) if model.geom_bodyid[g] in feet}


def _foot_penetration(data: mujoco.MjData, foot_geoms: set[int]) -> float | None:
    depth = None
    for c in data.contact[: data.ncon]:
        if c.geom1 in foot_geoms or c.geom2 in foot_geoms:
            d = max(-float(c.dist), 0.0)
            depth = d if depth is None else max(depth, d)
    return depth


def sample_domain(rng: np.random.Generator, dr: DomainRandomizationConfig) -> dict:
    if not dr.enabled:
        return {"friction": None, "mass_delta": 0.0, "gain_scale": 1.0, "late": False}
    return {
        "friction": float(rng.uniform(*dr.friction)),
        "mass_delta": float(rng.uniform(*dr.base_mass_delta)),
        "gain_scale": float(rng.uniform(*dr.gain_scale)),
        "late": bool(rng.random() < dr.latency_probability),
    }


def rollout(
    session: ort.InferenceSession,
    contract: PolicyContract,
    model: mujoco.MjModel,
    robot: RobotConfig,
    reference: ReferenceMotion,
    seed: int,
    duration_s: float,
    dr: DomainRandomizationConfig,
    on_frame: Callable[[mujoco.MjData, float], None] | None = None,
) -> RolloutResult:
    rng = np.random.default_rng(seed)
    domain = sample_domain(rng, dr)
    model = _randomized_copy(model, robot, domain)
    data = mujoco.MjData(model)
    qi, di = joint_qpos_indices(model, robot), joint_dof_indices(model, robot)
    key_ids = [model.body(b).id for b in reference.key_body_names]
    foot_geoms = _foot_geoms(model, robot)
    height_offset = model.key("default").qpos[2] - reference.root_pos[0, 2] if np.allclose(reference.joint_pos[0], robot.default_q) else 0.0
    data.qpos[:] = reference.qpos(0, model, robot)
    data.qpos[2] += height_offset
    data.qvel[:] = reference.qvel(0, model, robot)
    mujoco.mj_forward(model, data)

    has_imu = model.sensor("imu_quat").id if _has_sensor(model, "imu_quat") else None
    kp = np.asarray(contract.kp) * domain["gain_scale"]
    kd = np.asarray(contract.kd) * domain["gain_scale"]
    n_sub = int(round(contract.control_dt / model.opt.timestep))
    steps = int(round(duration_s / contract.control_dt))
    length = contract.motion_length_s or reference.length_s
    n = contract.num_joints
    last_action = np.zeros((1, n), np.float32)
    targets = np.asarray(contract.default_pose, np.float64)
    pending = targets.copy()
    push_lo, push_hi = (int(round(x / contract.control_dt)) for x in dr.push_interval_s)
    next_push = int(rng.integers(push_lo, push_hi + 1)) if dr.enabled else steps + 1

    heights, errors, penetrations = [], [], []
    fell_at = None
    for k in range(steps):
        t = k * contract.control_dt
        if has_imu is not None:
            quat = data.sensor("imu_quat").data.copy()
            gyro = data.sensor("imu_gyro").data.copy()
        else:
            quat, gyro = data.qpos[3:7].copy(), data.qvel[3:6].copy()
        inputs = {
            "imu_quat": quat[None].astype(np.float32),
            "imu_gyro": gyro[None].astype(np.float32),
            "joint_pos": data.qpos[qi][None].astype(np.float32),
            "joint_vel": data.qvel[di][None].astype(np.float32),
            "last_action": last_action,
            "phase": np.array([[(t / length) % 1.0 if length > 0 else 0.0]], np.float32),
        }
        joint_targets, action = session.run(["joint_targets", "action"], inputs)
        last_action = action.astype(np.float32)
        new_targets = joint_targets[0].astype(np.float64)
        targets, pending = (pending, new_targets) if domain["late"] else (new_targets, new_targets)
        if k == next_push:
            data.qvel[:2] += rng.uniform(-1.0, 1.0, 2) * dr.push_velocity
            next_push += int(rng.integers(push_lo, push_hi + 1))
        for _ in range(n_sub):
            data.ctrl[:] = pd_torque(targets, data.qpos[qi], 0.0, data.qvel[di], kp, kd, 0.0, robot.effort)
            mujoco.mj_step(model, data)
            depth = _foot_penetration(data, foot_geoms)
            if depth is not None:
                penetrations.append(depth)
        if on_frame is not None:
            on_frame(data, t)
        frame = (k + 1) % reference.num_frames
        ref_pos = reference.key_body_pos[frame] + np.array([0.0, 0.0, height_offset])
        errors.append(float(np.mean(np.linalg.norm(data.xpos[key_ids] - ref_pos, axis=-1))))
        heights.append(float(data.qpos[2]))
        if not np.isfinite(data.qpos).all() or data.qpos[2] < FALL_HEIGHT:
            fell_at = (k + 1) * contract.control_dt
            break
    times = np.arange(1, len(heights) + 1) * contract.control_dt
    return RolloutResult(
        seed=seed,
        fell=fell_at is not None,
        survived_s=fell_at if fell_at is not None else steps * contract.control_dt,
        tracking_error_cm=100.0 * float(np.mean(errors)),
        foot_penetration_mm=1000.0 * float(np.mean(penetrations)) if penetrations else 0.0,
        time=times,
        root_height=np.asarray(heights),
        tracking_error=np.asarray(errors),
        domain=domain,
    )


def _has_sensor(model: mujoco.MjModel, name: str) -> bool:
    return any(model.sensor(i).name == name for i in range(model.nsensor))


def _randomized_copy(model: mujoco.MjModel, robot: RobotConfig, domain: dict) -> mujoco.MjModel:
    model = copy.copy(model)
    if domain["friction"] is not None:
        model.geom_friction[:, 0] = domain["friction"]
    model.body_mass[model.body(robot.root_body).id] += domain["mass_delta"]
    return model
