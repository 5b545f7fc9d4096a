"""Training and evaluating each method of the claim protocol, seed by seed.

One compile per method serves all its seeds (same shapes, the seed only changes the
initial state). Wall time counts training only: compiles are timed apart (SHAC compiles
ahead of time; PPO's first iteration, which compiles, is left out as brax reports it),
and so are the curve evaluations.
"""

from __future__ import annotations

import dataclasses
import time
from typing import Any, Callable

import jax
import jax.numpy as jnp
import numpy as np
from tqdm import tqdm

from bcg_train.claim.protocol import ClaimProtocol, Method
from bcg_train.evaluate.hopper_eval import HopperScore, evaluate_in_mujoco, train_sim_evaluator
from bcg_train.learn.networks import policy_action
from bcg_train.learn.shac import SHAC
from bcg_train.tasks.hopper import HopperTask


@dataclasses.dataclass
class SeedResult:
    seed: int
    curve: list[dict[str, float]]  # env_steps, wall_s, task_error, falls, (reward)
    final: HopperScore  # training model, deterministic
    transfer: HopperScore  # MuJoCo C eval variant
    bundled_fraction: float | None = None
    nonfinite_actor_gradients: int = 0  # updates skipped for a non-finite actor gradient
    sim_failures: int = 0  # environment steps whose simulation failed (bcg_train.sim.failure)


@dataclasses.dataclass
class MethodResult:
    method: Method
    seeds: list[SeedResult]
    compile_s: float
    gradient_variance: float | None = None
    gradient_samples_finite: int | None = None


def _curve_point(env_steps: int, wall_s: float, score: HopperScore, **extra) -> dict[str, float]:
    return {"env_steps": float(env_steps), "wall_s": float(wall_s), "task_error": score.task_error, "falls": float(score.falls), **extra}


def gradient_variance(samples: np.ndarray) -> tuple[float | None, int]:
    """Trace of the covariance of the finite gradient samples (rows); None if < 2 are finite."""
    finite = samples[np.all(np.isfinite(samples), axis=1)]
    if finite.shape[0] < 2:
        return None, int(finite.shape[0])
    return float(np.sum(np.var(finite, axis=0, ddof=1))), int(finite.shape[0])


def run_shac(method: Method, protocol: ClaimProtocol, log: Callable[[str], None] = print) -> MethodResult:
    cfg = protocol.method_task(method)
    task = HopperTask(cfg)
    shac_cfg = protocol.shac
    shac = SHAC(task, shac_cfg, num_devices=1)
    apply = lambda params, obs: policy_action(params[0], params[1], obs, shac_cfg.obs_clip, shac_cfg.action_clip)  # noqa: E731
    evaluator = train_sim_evaluator(cfg, apply, protocol.eval_envs, protocol.eval_steps)
    act = jax.jit(apply)
    eval_key = jax.random.PRNGKey(protocol.eval_seed)
    steps_per_iteration = shac_cfg.num_envs * shac_cfg.horizon
    eval_every = max(1, protocol.eval_every_steps // steps_per_iteration)

    t0 = time.perf_counter()
    first = shac.init(protocol.seeds[0])
    step = shac.jit_iteration(first, with_gradient=True).lower(first).compile()
    compile_s = time.perf_counter() - t0
    log(f"{method.name}: compiled in {compile_s:.0f} s")

    # gradient variance at the initialization of the first seed: exploration-noise draws
    draws = [np.asarray(step(dataclasses.replace(first, rng=k))[1]["actor_gradient"]) for k in jax.random.split(jax.random.PRNGKey(7), protocol.gradient_samples)]
    variance, finite = gradient_variance(np.stack(draws))

    seeds = []
    for seed in protocol.seeds:
        state = first if seed == protocol.seeds[0] else shac.init(seed)
        score = evaluator((state.actor, state.obs_stats), eval_key)
        curve = [_curve_point(0, 0.0, score)]
        wall, bundled, nonfinite, failures = 0.0, [], 0, 0
        bar = tqdm(range(shac_cfg.iterations), desc=f"{method.name} seed {seed}", dynamic_ncols=True, leave=False)
        for it in bar:
            t = time.perf_counter()
            state, metrics = step(state)
            metrics = jax.device_get(metrics)
            wall += time.perf_counter() - t
            bundled.append(float(metrics["bundled"]))
            nonfinite += int(metrics["skipped_actor_updates"])
            failures += int(metrics["sim_failures"])
            if (it + 1) % eval_every == 0 or it + 1 == shac_cfg.iterations:
                score = evaluator((state.actor, state.obs_stats), eval_key)
                curve.append(_curve_point((it + 1) * steps_per_iteration, wall, score, reward=float(metrics["reward"])))
                bar.set_postfix(err_cm=f"{100 * score.task_error:.1f}", falls=score.falls)
        policy = lambda obs, s=state: np.asarray(act((s.actor, s.obs_stats), jnp.asarray(obs)))  # noqa: E731
        transfer = evaluate_in_mujoco(cfg, policy, protocol.transfer_duration_s)
        seeds.append(SeedResult(seed, curve, score, transfer, float(np.mean(bundled)), nonfinite, failures))
        log(f"{method.name} seed {seed}: task error {100 * score.task_error:.1f} cm (train model), "
            f"{100 * transfer.task_error:.1f} cm and {'a fall' if transfer.falls else 'no fall'} in MuJoCo C, {wall:.0f} s")
    return MethodResult(method, seeds, compile_s, variance, finite)


def run_ppo(method: Method, protocol: ClaimProtocol, log: Callable[[str], None] = print) -> MethodResult:
    from bcg_train.learn.ppo_baseline import train_ppo

    cfg = protocol.method_task(method)
    task = HopperTask(cfg)
    ppo_cfg = protocol.ppo
    clip = ppo_cfg.action_clip
    eval_key = jax.random.PRNGKey(protocol.eval_seed)
    steps_per_iteration = ppo_cfg.num_envs * ppo_cfg.rollout_steps
    eval_every = max(1, round(protocol.eval_every_steps * 3 / steps_per_iteration))  # PPO: a point every ~3 SHAC points
    holder: dict[str, Any] = {}

    def apply(params, obs):
        action, _ = holder["make_policy"](params, deterministic=True)(obs, jax.random.PRNGKey(0))
        return jnp.clip(action, -clip, clip)

    seeds, compile_s = [], 0.0
    for seed in protocol.seeds:
        points: list[tuple[int, HopperScore]] = []
        calls = [0]

        def on_params(env_steps, make_policy, params):
            if "make_policy" not in holder:
                holder["make_policy"] = make_policy
                holder["evaluate"] = train_sim_evaluator(cfg, apply, protocol.eval_envs, protocol.eval_steps)
            if calls[0] % eval_every == 0 or env_steps >= protocol.ppo_env_steps():
                points.append((int(env_steps), holder["evaluate"](params, eval_key)))
            calls[0] += 1
            holder["params"] = params

        bar = tqdm(total=ppo_cfg.iterations, desc=f"{method.name} seed {seed}", dynamic_ncols=True, leave=False)
        t0 = time.perf_counter()
        _, params, history = train_ppo(task, ppo_cfg, seed=seed, progress_fn=lambda row: bar.update(1), policy_params_fn=on_params)
        bar.close()
        total = time.perf_counter() - t0
        wall_at = {int(h["env_steps"]): h["wall_s"] for h in history}
        wall_at[0] = 0.0
        if seed == protocol.seeds[0]:
            compile_s = max(0.0, total - history[-1]["wall_s"])  # first iteration (compile) + evaluations
        curve = [_curve_point(s, wall_at.get(s, float("nan")), score) for s, score in points]
        final = points[-1][1]
        act = jax.jit(apply)
        policy = lambda obs, p=params: np.asarray(act(p, jnp.asarray(obs)))  # noqa: E731
        transfer = evaluate_in_mujoco(cfg, policy, protocol.transfer_duration_s)
        seeds.append(SeedResult(seed, curve, final, transfer))
        log(f"{method.name} seed {seed}: task error {100 * final.task_error:.1f} cm (train model), "
            f"{100 * transfer.task_error:.1f} cm and {'a fall' if transfer.falls else 'no fall'} in MuJoCo C, {history[-1]['wall_s']:.0f} s")
    return MethodResult(method, seeds, compile_s)


def run_method(method: Method, protocol: ClaimProtocol, log: Callable[[str], None] = print) -> MethodResult:
    return run_ppo(method, protocol, log) if method.is_ppo else run_shac(method, protocol, log)
