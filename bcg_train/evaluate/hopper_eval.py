"""Evaluating hopper policies: in the training simulator (MJX) and in MuJoCo C (transfer).

Both run the deterministic policy and report the same figures (:class:`HopperScore`):
falls, the task error (mean apex error over completed hop cycles,
:func:`bcg_train.tasks.hopper.task_error`) and the mean foot penetration over the steps
with the foot in contact; the training-simulator evaluation also reports the mean reward
per step (the return the learner maximizes, undiscounted).

* :func:`train_sim_evaluator`: a jitted MJX rollout of a batch in the training model
  (its contact preset), plain dynamics (no bundles: BCG shapes gradients, the policy is
  judged on the simulator), episodes auto-reset as in training.
* :func:`evaluate_in_mujoco`: the ``eval`` variant (implicitfast + Newton, 500 Hz,
  stiff contact) in MuJoCo C, the PD law every physics step, as the sim bridge runs the
  G1. One episode from standing at phase 0; a fall ends it.
"""

from __future__ import annotations

import dataclasses
from typing import Any, Callable

import jax
import jax.numpy as jnp
import mujoco
import numpy as np

from bcg_robot.pd import pd_torque
from bcg_train.bcg.config import Estimator
from bcg_train.sim.hopper_model import ACTUATED, ROOT_Z, build_hopper, hopper_drive, model_info, standing_qpos
from bcg_train.tasks.hopper import HopperConfig, HopperTask, hopper_fell, hopper_observation


@dataclasses.dataclass(frozen=True)
class HopperScore:
    falls: int
    episodes: int
    task_error: float  # m, mean apex error over completed cycles (NaN if none)
    cycles: int
    foot_penetration_m: float  # mean over steps in contact (NaN if never in contact)
    mean_reward: float = float("nan")  # per environment step (training simulator only)


def train_sim_evaluator(cfg: HopperConfig, apply: Callable[[Any, jax.Array], jax.Array], num_envs: int = 8, steps: int = 250):
    """``evaluate(params, rng) -> HopperScore`` in the training model, compiled once."""
    task = HopperTask(dataclasses.replace(cfg, bcg=dataclasses.replace(cfg.bcg, mode=Estimator.PLAIN)))

    @jax.jit
    def rollout(params, rng):
        state = task.reset(rng, num_envs)

        def body(s, _):
            s, out = task.step(s, apply(params, task.observe(s)))
            m = out.metrics
            in_contact = m["foot_penetration_m"] > 0
            return s, (m["apex_error_sum"], m["apex_count"], out.terminated, m["foot_penetration_m"], in_contact, out.reward)

        _, (err, count, fell, depth, contact, reward) = jax.lax.scan(body, state, None, length=steps)
        return jnp.sum(err), jnp.sum(count), jnp.sum(fell), jnp.sum(depth), jnp.sum(contact), jnp.mean(reward)

    def evaluate(params, rng) -> HopperScore:
        err, count, fell, depth, contact, reward = (float(x) for x in jax.device_get(rollout(params, rng)))
        return HopperScore(
            falls=int(fell), episodes=num_envs + int(fell), task_error=err / count if count else float("nan"),
            cycles=int(count), foot_penetration_m=depth / contact if contact else float("nan"), mean_reward=reward,
        )

    return evaluate


def evaluate_in_mujoco(cfg: HopperConfig, policy: Callable[[np.ndarray], np.ndarray], duration_s: float = 10.0) -> HopperScore:
    """One episode of ``policy`` (obs (13,) -> raw action (2,)) in the ``eval`` variant."""
    model = build_hopper("eval")
    info = model_info(model)
    drive = hopper_drive()
    data = mujoco.MjData(model)
    data.qpos[:] = standing_qpos()
    mujoco.mj_forward(model, data)
    substeps = int(round(cfg.control_dt / model.opt.timestep))
    period = int(round(cfg.hop_period_s / cfg.control_dt))
    apex = cfg.apex_height
    last_action = np.zeros(2)
    peak, errors, depths, fell = float(data.qpos[ROOT_Z]), [], [], False
    feet = set(info.foot_geoms)
    act = np.asarray(ACTUATED)
    for t in range(int(round(duration_s / cfg.control_dt))):
        phase = (t % period) / period
        obs = hopper_observation(data.qpos, data.qvel, last_action, np.float64(phase)).astype(np.float32)
        action = np.asarray(policy(obs), dtype=np.float64).reshape(2)
        q_target = drive.default_pose + drive.action_scale * action
        step_depth = 0.0
        for _ in range(substeps):
            data.ctrl[:] = pd_torque(q_target, data.qpos[act], 0.0, data.qvel[act], drive.kp, drive.kd, 0.0, drive.effort_limit)
            mujoco.mj_step(model, data)
            for c in data.contact[: data.ncon]:
                if c.geom1 in feet or c.geom2 in feet:
                    step_depth = max(step_depth, -float(c.dist))
        last_action = action
        if step_depth > 0:
            depths.append(step_depth)
        if not np.all(np.isfinite(data.qpos)) or hopper_fell(cfg, data.qpos):
            fell = True
            break
        peak = max(peak, float(data.qpos[ROOT_Z]))
        if (t + 1) % period == 0:
            errors.append(abs(peak - apex))
            peak = float(data.qpos[ROOT_Z])
    return HopperScore(
        falls=int(fell), episodes=1, task_error=float(np.mean(errors)) if errors else float("nan"), cycles=len(errors),
        foot_penetration_m=float(np.mean(depths)) if depths else float("nan"),
    )
