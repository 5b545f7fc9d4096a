"""Hold the G1 at its default pose under PD in plain MuJoCo: the simplest check of a model."""

from __future__ import annotations

import dataclasses

import mujoco
import numpy as np

from bcg_robot.config import RobotConfig
from bcg_robot.metrics import is_fallen
from bcg_robot.model import joint_dof_indices, joint_qpos_indices
from bcg_robot.pd import pd_torque


@dataclasses.dataclass(frozen=True)
class StandResult:
    duration_s: float
    min_root_height: float
    final_root_height: float
    max_joint_error: float
    finite: bool

    @property
    def fell(self) -> bool:
        """A fall as :mod:`bcg_robot.metrics` defines it, at the lowest root height reached."""
        return bool(is_fallen(self.min_root_height, self.finite))


def stand_at_default_pose(model: mujoco.MjModel, cfg: RobotConfig, duration_s: float = 2.0) -> StandResult:
    data = mujoco.MjData(model)
    mujoco.mj_resetDataKeyframe(model, data, model.key("default").id)
    qi, di = joint_qpos_indices(model, cfg), joint_dof_indices(model, cfg)
    q_des = cfg.default_q
    min_height, max_err, finite = np.inf, 0.0, True
    for _ in range(int(round(duration_s / model.opt.timestep))):
        data.ctrl[:] = pd_torque(q_des, data.qpos[qi], 0.0, data.qvel[di], cfg.kp_array, cfg.kd_array, 0.0, cfg.effort)
        mujoco.mj_step(model, data)
        if not (np.isfinite(data.qpos).all() and np.isfinite(data.qvel).all()):
            finite = False
            break
        min_height = min(min_height, float(data.qpos[2]))
        max_err = max(max_err, float(np.abs(data.qpos[qi] - q_des).max()))
    return StandResult(duration_s, min_height, float(data.qpos[2]), max_err, finite)
