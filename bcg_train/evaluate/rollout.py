"""Roll an ONNX policy in plain MuJoCo with onnxruntime, under domain randomization.

The policy sees exactly what the robot node gives it (raw IMU quaternion and gyro,
joint positions and velocities in motor order, its previous action, the phase
``time / motion length`` wrapped to [0, 1)) at the contract's control rate; the
PD law (:func:`bcg_robot.pd.pd_torque`) runs every physics step with the contract's
gains. Each seed draws friction, pelvis mass, gain scale, a 0/1-step action latency
and push times/velocities from the task's domain-randomization config; the pushes
applied are returned with the result (a fall can be read against the push before it).

Measured per seed, as defined in :mod:`bcg_robot.metrics`: whether and when the robot
fell, its longest flight (time with no foot on the floor), the tracking error E_track against the reference (cm, tracked bodies in the pelvis
frame, once per control step), the root-height error against the reference's pelvis height
(cm, once per control step; the reference shifted by the same start offset as the robot)
and the foot penetration (mm, every physics step).
"""

from __future__ import annotations

import copy
import dataclasses
from typing import Callable

import mujoco
import numpy as np

from bcg_robot import metrics
from bcg_robot.config import RobotConfig
from bcg_robot.model import foot_floor_geoms, joint_dof_indices, joint_qpos_indices, refresh_sensors, simulation_diverged
from bcg_robot.observation import raw_inputs
from bcg_robot.onnx_policy import OnnxPolicy
from bcg_robot.pd import pd_torque
from bcg_train.motion.reference import ReferenceMotion
from bcg_train.tasks.config import DomainRandomizationConfig


@dataclasses.dataclass(frozen=True)
class RolloutResult:
    seed: int
    fell: bool
    survived_s: float
    tracking_error_cm: float
    foot_penetration_mm: float
    longest_flight_s: float  # longest time with no foot on the floor (bcg_robot.metrics.longest_flight_s)
    time: np.ndarray
    root_height: np.ndarray
    root_height_error_cm: float  # mean |z - z_ref| (bcg_robot.metrics.root_height_error_cm)
    root_height_error_max_cm: float
    ref_root_height: np.ndarray  # the reference's, per control step
    tracking_error: np.ndarray  # m per control step, mean over the tracked bodies
    domain: dict
    pushes: tuple[tuple[float, float, float], ...] = ()  # (time s, dvx, dvy m/s) of every push applied
    # the simulation diverged (bcg_robot.model.simulation_diverged): counted as a fall, and the
    # step whose state MuJoCo replaced with its initial pose is in no metric
    diverged: bool = False


def reference_tracked_positions(reference: ReferenceMotion) -> np.ndarray:
    """(T, K, 3) positions of :data:`bcg_robot.metrics.TRACKED_BODIES` in the reference's pelvis frame."""
    idx = [reference.key_body_names.index(b) for b in metrics.TRACKED_BODIES]
    return metrics.root_frame_positions(reference.key_body_pos[:, idx], reference.root_pos, reference.root_quat)


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
    policy: OnnxPolicy,
    model: mujoco.MjModel,
    robot: RobotConfig,
    reference: ReferenceMotion,
    seed: int,
    duration_s: float,
    dr: DomainRandomizationConfig,
    on_frame: Callable[[mujoco.MjData, float], None] | None = None,
) -> RolloutResult:
    contract = policy.contract
    rng = np.random.default_rng(seed)
    domain = sample_domain(rng, dr)
    model = _randomized_copy(model, robot, domain)
    data = mujoco.MjData(model)
    qi, di = joint_qpos_indices(model, robot), joint_dof_indices(model, robot)
    tracked_ids = [model.body(b).id for b in metrics.TRACKED_BODIES]
    root_id = model.body(robot.root_body).id
    ref_tracked = reference_tracked_positions(reference)
    foot_floor = foot_floor_geoms(model, robot)
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
    length = contract.motion_length_s  # 0: no motion, and the phase stays 0 (as the node feeds it)
    n = contract.num_joints
    last_action = np.zeros(n)
    targets = np.asarray(contract.default_pose, np.float64)
    pending = targets.copy()
    push_lo, push_hi = (int(round(x / contract.control_dt)) for x in dr.push_interval_s)
    next_push = int(rng.integers(push_lo, push_hi + 1)) if dr.enabled else steps + 1

    heights, ref_heights, errors, penetrations, touching, pushes = [], [], [], [], [], []
    fell_at, diverged = None, False
    for k in range(steps):
        t = k * contract.control_dt
        if has_imu is not None:
            quat = data.sensor("imu_quat").data.copy()
            gyro = data.sensor("imu_gyro").data.copy()
        else:
            quat, gyro = data.qpos[3:7].copy(), data.qvel[3:6].copy()
        phase = np.array([(t / length) % 1.0 if length > 0 else 0.0])
        new_targets, last_action = policy.run(raw_inputs(quat, gyro, data.qpos[qi], data.qvel[di], last_action, phase))
        targets, pending = (pending, new_targets) if domain["late"] else (new_targets, new_targets)
        if k == next_push:
            dv = rng.uniform(-1.0, 1.0, 2) * dr.push_velocity
            data.qvel[:2] += dv
            pushes.append((t, float(dv[0]), float(dv[1])))
            next_push += int(rng.integers(push_lo, push_hi + 1))
        for _ in range(n_sub):
            data.ctrl[:] = pd_torque(targets, data.qpos[qi], 0.0, data.qvel[di], kp, kd, 0.0, robot.effort)
            mujoco.mj_step(model, data)
            penetrations.append(foot_floor.deepest_penetration_of(data.contact))
            touching.append(foot_floor.touching_of(data.contact))
        if simulation_diverged(data):  # MuJoCo reset it to an upright pose: no survival, and no metric of that state
            fell_at, diverged = (k + 1) * contract.control_dt, True
            break
        # the IMU the next step's observation reads and the bodies E_track measures: of this state,
        # not of the last physics step's start (as the bridge and the trainer read them)
        refresh_sensors(model, data)
        if on_frame is not None:
            on_frame(data, t)
        frame = (k + 1) % reference.num_frames
        tracked = metrics.root_frame_positions(data.xpos[tracked_ids], data.xpos[root_id], data.xquat[root_id])
        errors.append(metrics.body_position_errors(tracked, ref_tracked[frame]))
        heights.append(float(data.qpos[2]))
        ref_heights.append(float(reference.root_pos[frame, 2] + height_offset))
        if metrics.is_fallen(data.qpos[2], np.isfinite(data.qpos).all()):
            fell_at = (k + 1) * contract.control_dt
            break
    times = np.arange(1, len(heights) + 1) * contract.control_dt
    z_mean, z_max = metrics.root_height_error_cm(heights, ref_heights)
    return RolloutResult(
        seed=seed,
        fell=fell_at is not None,
        survived_s=fell_at if fell_at is not None else steps * contract.control_dt,
        tracking_error_cm=metrics.summarize_tracking(np.asarray(errors)).mean_cm,
        foot_penetration_mm=metrics.summarize_foot_penetration(np.asarray(penetrations)).mean_mm,
        longest_flight_s=metrics.longest_flight_s(touching, model.opt.timestep),
        time=times,
        root_height=np.asarray(heights),
        root_height_error_cm=z_mean,
        root_height_error_max_cm=z_max,
        ref_root_height=np.asarray(ref_heights),
        tracking_error=np.mean(errors, axis=-1) if errors else np.zeros(0),  # one per measured step
        domain=domain,
        pushes=tuple(pushes),
        diverged=diverged,
    )


def _has_sensor(model: mujoco.MjModel, name: str) -> bool:
    return any(model.sensor(i).name == name for i in range(model.nsensor))


def _randomized_copy(model: mujoco.MjModel, robot: RobotConfig, domain: dict) -> mujoco.MjModel:
    model = copy.copy(model)
    if domain["friction"] is not None:
        model.geom_friction[:, 0] = domain["friction"]
    model.body_mass[model.body(robot.root_body).id] += domain["mass_delta"]
    return model
