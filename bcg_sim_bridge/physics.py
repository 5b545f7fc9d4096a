"""The bridge's physics core: the G1 ``bridge`` model variant stepped in plain MuJoCo (no ROS).

:class:`BridgePhysics` applies :func:`bcg_robot.pd.pd_torque` on EVERY physics step from
the latest :class:`~bcg_robot.wire.LowCommand`, like the G1's motor drivers. When
commands stop, the last one keeps being applied (that is why the policy node needs a
sentinel); an optional bridge-side timeout switches to damping for unattended runs.
Before the first command the drives output zero torque. With ``frozen_pose`` the robot
stays at its default pose: time and the drives' torques run, the body does not move.

Commands, pushes and band requests may arrive from other threads (DDS callbacks); they
go through one lock. Stepping and snapshots belong to the thread that owns the loop.
"""

from __future__ import annotations

import dataclasses
import enum
import threading

import mujoco
import numpy as np

from bcg_robot.config import RobotConfig
from bcg_robot.model import (build_model, foot_floor_geoms, joint_dof_indices, joint_qpos_indices, refresh_sensors,
                             simulation_diverged)
from bcg_robot.pd import pd_torque
from bcg_robot.wire import LowCommand
from bcg_sim_bridge.config import BridgeConfig, ElasticBandConfig

TICK_PER_SECOND = 1000  # LowState.tick counts milliseconds of (simulated) robot time


class DriveMode(enum.IntEnum):
    """What the simulated drives applied on the last step (recorded for reports)."""

    ZERO_TORQUE = 0  # nothing received yet, or a zero-torque command
    COMMAND = 1  # any other command: stiffness (kp > 0 somewhere), or feed-forward torque / a joint without kd
    DAMPING = 2  # a damping command (LowCommand.is_damping: kp 0, kd > 0 on every joint, no tau or dq) from the node or the sentinel
    TIMEOUT_DAMPING = 3  # the bridge's own command timeout


@dataclasses.dataclass(frozen=True)
class BridgeState:
    """One snapshot of the simulated robot, in motor order."""

    tick: int
    sim_time: float
    imu_quat: np.ndarray  # w x y z
    imu_gyro: np.ndarray
    imu_acc: np.ndarray
    q: np.ndarray
    dq: np.ndarray
    tau: np.ndarray  # torque the drives applied on the last step
    root_pos: np.ndarray
    root_quat: np.ndarray  # w x y z
    foot_penetration: float  # deepest foot-floor penetration, m (>= 0)
    drive_mode: DriveMode
    band_engaged: bool
    motor_fault: np.ndarray | None = None  # per motor fault code (None: no faults)
    motor_temperature: np.ndarray | None = None  # per motor, deg C (None: the transport's default)


@dataclasses.dataclass
class _Push:
    force: np.ndarray
    until: float


class BridgePhysics:
    def __init__(self, robot: RobotConfig, cfg: BridgeConfig):
        self.robot = robot
        self.cfg = cfg
        self.model = build_model(robot, "bridge", physics_dt=cfg.physics_dt)
        self.data = mujoco.MjData(self.model)
        self.dt = float(self.model.opt.timestep)
        self._qi = joint_qpos_indices(self.model, robot)
        self._di = joint_dof_indices(self.model, robot)
        self.model.dof_damping[self._di] += cfg.joint_damping
        self._effort = robot.effort
        self._root_body = self.model.body(robot.root_body).id
        self._foot_floor = foot_floor_geoms(self.model, robot)
        self._sensor = {name: self._sensor_slice(name) for name in ("imu_quat", "imu_gyro", "imu_acc")}
        self._rotvec = np.zeros(3)
        self._omega_world = np.zeros(3)
        self._lock = threading.Lock()
        self._command: LowCommand | None = None
        self._command_time = 0.0
        self._commands_received = 0
        self._push: _Push | None = None
        self._band: ElasticBandConfig = cfg.elastic_band
        self._band_engaged = cfg.elastic_band.enabled
        self.drive_mode = DriveMode.ZERO_TORQUE
        # the command the drives applied in the last step (the timeout's damping, not the stale
        # command it replaced; None: zero torque): what the log records
        self.applied_command: LowCommand | None = None
        self.tau = np.zeros(robot.num_joints)
        self.steps = 0
        self.reset()

    def _sensor_slice(self, name: str) -> slice:
        sid = self.model.sensor(name).id
        adr, dim = int(self.model.sensor_adr[sid]), int(self.model.sensor_dim[sid])
        return slice(adr, adr + dim)

    # ------------------------------------------------------------------ setup
    def reset(self) -> None:
        mujoco.mj_resetDataKeyframe(self.model, self.data, self.model.key("default").id)
        self._anchor = self.data.qpos[:3].copy()
        self._anchor[2] += self._band.lift
        mujoco.mj_forward(self.model, self.data)
        self.steps = 0
        self._band_auto_released = False

    # ------------------------------------------------- inputs (any thread)
    def set_command(self, cmd: LowCommand) -> None:
        if cmd.num_joints != self.robot.num_joints:
            raise ValueError(f"command for {cmd.num_joints} joints, robot has {self.robot.num_joints}")
        with self._lock:
            self._command = cmd
            self._command_time = self.data.time
            self._commands_received += 1

    @property
    def commands_received(self) -> int:
        with self._lock:
            return self._commands_received

    def push(self, force: np.ndarray, duration_s: float) -> None:
        """Apply ``force`` (N, world frame) at the pelvis for ``duration_s`` of simulated time."""
        with self._lock:
            self._push = _Push(np.asarray(force, dtype=np.float64).reshape(3), self.data.time + duration_s)

    def set_band(self, engaged: bool) -> None:
        with self._lock:
            self._band_engaged = bool(engaged)

    @property
    def band_engaged(self) -> bool:
        with self._lock:
            return self._band_engaged

    # --------------------------------------------------- stepping (loop thread)
    def _drive_command(self) -> tuple[LowCommand | None, DriveMode]:
        with self._lock:
            cmd, since = self._command, self._command_time
        if cmd is None:
            return None, DriveMode.ZERO_TORQUE
        timeout = self.cfg.command_timeout_s
        if timeout > 0 and self.data.time - since > timeout:
            kd = np.full(self.robot.num_joints, self.cfg.timeout_damping_kd)
            return LowCommand.damping(kd), DriveMode.TIMEOUT_DAMPING
        if cmd.is_zero_torque():
            return cmd, DriveMode.ZERO_TORQUE
        if cmd.is_damping():
            return cmd, DriveMode.DAMPING
        return cmd, DriveMode.COMMAND

    def _external_forces(self) -> None:
        xfrc = self.data.xfrc_applied[self._root_body]
        xfrc[:] = 0.0
        with self._lock:
            band, push = self._band_engaged, self._push
            if push is not None and self.data.time >= push.until:
                self._push = push = None
        if self._release_due():
            self._band_auto_released = True  # once: a band engaged again later stays engaged
            if band:
                self.set_band(False)
                band = False
        if band:
            pos = self.data.qpos[:3]  # the root's free joint: the current state, as its velocity and tilt
            vel = self.data.qvel[:3]
            xfrc[:3] = self._band.stiffness * (self._anchor - pos) - self._band.damping * vel
            mujoco.mju_quat2Vel(self._rotvec, self.data.qpos[3:7], 1.0)  # axis * angle from upright
            # the free joint's angular velocity is in the body frame, the applied torque in the world's
            mujoco.mju_rotVecQuat(self._omega_world, self.data.qvel[3:6], self.data.qpos[3:7])
            xfrc[3:] = -self._band.angular_stiffness * self._rotvec - self._band.angular_damping * self._omega_world
        if push is not None:
            xfrc[:3] += push.force

    def _release_due(self) -> bool:
        """Whether the band's automatic release (``release_after_s``) is due in this step."""
        after = self._band.release_after_s
        return after > 0 and not self._band_auto_released and self.data.time >= after

    def step(self, n: int = 1) -> None:
        for _ in range(n):
            cmd, mode = self._drive_command()
            if cmd is None:
                self.tau[:] = 0.0
            else:
                q, dq = self.data.qpos[self._qi], self.data.qvel[self._di]
                self.tau[:] = pd_torque(cmd.q, q, cmd.dq, dq, cmd.kp, cmd.kd, cmd.tau, self._effort)
            self.drive_mode, self.applied_command = mode, cmd
            self.data.ctrl[:] = self.tau
            if self.cfg.frozen_pose:
                self.data.time += self.dt
            else:
                self._external_forces()
                mujoco.mj_step(self.model, self.data)
            self.steps += 1

    # ----------------------------------------------------------- outputs
    @property
    def sim_time(self) -> float:
        return float(self.data.time)

    @property
    def tick(self) -> int:
        return int(round(self.data.time * TICK_PER_SECOND))

    def foot_penetration(self) -> float:
        """Deepest foot-floor penetration now, m (see bcg_robot.metrics)."""
        return self._foot_floor.deepest_penetration_of(self.data.contact)

    def is_finite(self) -> bool:
        """False once the simulation diverged (:func:`bcg_robot.model.simulation_diverged`)."""
        return not simulation_diverged(self.data)

    def snapshot(self) -> BridgeState:
        refresh_sensors(self.model, self.data)  # the IMU of the current state, not of the last step's start
        s = self.data.sensordata
        return BridgeState(
            tick=self.tick,
            sim_time=self.sim_time,
            imu_quat=s[self._sensor["imu_quat"]].copy(),
            imu_gyro=s[self._sensor["imu_gyro"]].copy(),
            imu_acc=s[self._sensor["imu_acc"]].copy(),
            q=self.data.qpos[self._qi].copy(),
            dq=self.data.qvel[self._di].copy(),
            tau=self.tau.copy(),
            root_pos=self.data.qpos[:3].copy(),
            root_quat=self.data.qpos[3:7].copy(),
            foot_penetration=self.foot_penetration(),
            drive_mode=self.drive_mode,
            band_engaged=self.band_engaged,
        )

    def body_positions(self, names: tuple[str, ...]) -> np.ndarray:
        return np.stack([self.data.xpos[self.model.body(n).id] for n in names])


def default_pose_command(robot: RobotConfig) -> LowCommand:
    """Hold the robot's default pose with its configured gains."""
    return LowCommand.position(robot.default_q, robot.kp_array, robot.kd_array)
