"""The G1 landing problem (a drop from a height, open loop): the gradient benchmark's task.

All contact presets of the ``train`` model share one compiled gradient: they differ only
in per-geom ``solref`` / ``solimp`` (passed as arguments) and in the REFSAFE flag, which
is disabled in the ``stiff`` model and a no-op for the other presets as long as their
time constants are >= 2 * physics dt (checked here).
"""

from __future__ import annotations

import dataclasses

import jax.numpy as jnp
import mujoco
import numpy as np

from bcg_robot.config import RobotConfig
from bcg_robot.model import build_model, default_qpos, effective_contact_timeconst
from bcg_train.sim import JointDrive, MjxSim, SimConfig, SimState

PRESETS = ("soft", "default", "stiff")


@dataclasses.dataclass(frozen=True)
class LandingProblem:
    sim: MjxSim
    contact_params: dict  # preset -> (geom_solref, geom_solimp) as numpy arrays
    standing_height: float
    default_pose: np.ndarray


def build_landing_problem(
    cfg: RobotConfig, drop_height: float, physics_dt: float = 0.005, float64: bool = False,
    solver_iterations: int | None = None,
) -> LandingProblem:
    """``solver_iterations``: the train model's Newton iterations (None: its default)."""
    models = {name: build_model(cfg, "train", physics_dt=physics_dt, contact=name, solver_iterations=solver_iterations)
              for name in PRESETS}
    base = models["stiff"]
    for name, m in models.items():
        if m.ngeom != base.ngeom or m.nq != base.nq:
            raise ValueError(f"contact preset {name} changes the model structure")
        if not m.opt.disableflags & mujoco.mjtDisableBit.mjDSBL_REFSAFE:
            for g in range(m.ngeom):
                if effective_contact_timeconst(m, g) != float(m.geom_solref[g, 0]):
                    raise ValueError(f"preset {name}: REFSAFE changes geom {g}, it needs its own compile")
    qpos = default_qpos(base)
    standing = float(qpos[2])
    qpos[2] += drop_height
    sim = MjxSim(base, JointDrive.from_robot_config(cfg), SimConfig(cfg.control_dt, float64), initial_qpos=qpos)
    params = {name: (m.geom_solref.copy(), m.geom_solimp.copy()) for name, m in models.items()}
    return LandingProblem(sim, params, standing, np.asarray(cfg.default_pose, dtype=np.float64))


def landing_cost(problem: LandingProblem):
    """Per-step cost: base height error, base velocity and posture deviation."""
    standing = problem.standing_height
    q_index = problem.sim.actuated_qposadr
    pose = jnp.asarray(problem.default_pose, problem.sim.dtype)

    def cost(state: SimState, action):
        qpos, qvel = state.data.qpos, state.data.qvel
        return (
            (qpos[2] - standing) ** 2
            + 0.1 * jnp.sum(qvel[:3] ** 2)
            + 0.01 * jnp.sum((qpos[q_index] - pose) ** 2)
            + 1e-3 * jnp.sum(action**2)
        )

    return cost
