"""PPO baseline on the same task interface as SHAC (optax, plain JAX; no gradients through physics).

brax's PPO trainer is not installed on the build machines, so the comparison uses this
compact PPO: Gaussian policy (the same LayerNorm + ELU actor as SHAC, state-independent
log std), GAE(lambda), clipped surrogate, value loss, entropy bonus, several epochs of
minibatches per rollout, the same observation normalizer. Rollouts run under
``jax.lax.scan`` with ``stop_gradient`` physics (PPO needs no simulator gradients).
Published PPO baseline settings: 4096 environments, 24-step rollouts.
"""

from __future__ import annotations

import dataclasses
import functools
from typing import Any

import jax
import jax.numpy as jnp
import optax

from bcg_train.learn.networks import RunningStats, init_mlp, mlp_apply
from bcg_train.learn.shac import linear_decay_schedule, make_optimizer


@dataclasses.dataclass(frozen=True)
class PPOConfig:
    num_envs: int = 4096
    rollout_steps: int = 24
    iterations: int = 3000
    actor_hidden: tuple[int, ...] = (512, 256, 128)
    critic_hidden: tuple[int, ...] = (256, 256)
    lr: float = 3e-4
    lr_end: float = 1e-5
    betas: tuple[float, float] = (0.9, 0.999)
    gamma: float = 0.99
    gae_lambda: float = 0.95
    clip_ratio: float = 0.2
    epochs: int = 4
    minibatches: int = 4
    value_coef: float = 0.5
    entropy_coef: float = 0.0
    max_grad_norm: float = 1.0
    init_log_std: float = -1.0
    obs_clip: float = 10.0
    action_clip: float = 5.0


@functools.partial(
    jax.tree_util.register_dataclass, data_fields=["params", "opt", "obs_stats", "env", "rng", "iteration"], meta_fields=[]
)
@dataclasses.dataclass(frozen=True)
class PPOState:
    params: Any  # {"actor": [...], "critic": [...], "log_std": (nu,)}
    opt: Any
    obs_stats: RunningStats
    env: Any
    rng: jax.Array
    iteration: jax.Array


def gae_advantages(rewards, values, next_values, continues, gamma: float, lam: float):
    """GAE over (T, K) arrays; ``continues[t]`` 0 where the episode ended at step t."""

    def back(adv_next, x):
        r, v, nv, c = x
        delta = r + gamma * nv - v
        adv = delta + gamma * lam * c * adv_next
        return adv, adv

    _, adv = jax.lax.scan(back, jnp.zeros_like(rewards[0]), (rewards, values, next_values, continues), reverse=True)
    return adv


def _log_prob(mean, log_std, action):
    return jnp.sum(-0.5 * ((action - mean) / jnp.exp(log_std)) ** 2 - log_std - 0.5 * jnp.log(2 * jnp.pi), axis=-1)


class PPO:
    def __init__(self, task: Any, cfg: PPOConfig):
        self.task, self.cfg = task, cfg
        updates = cfg.iterations * cfg.epochs * cfg.minibatches
        self.tx = make_optimizer(linear_decay_schedule(cfg.lr, cfg.lr_end, updates), cfg.betas, cfg.max_grad_norm)

    def init(self, seed: int) -> PPOState:
        k_a, k_c, k_env, k_next = jax.random.split(jax.random.PRNGKey(seed), 4)
        t = self.task
        params = {
            "actor": init_mlp(k_a, (t.obs_size, *self.cfg.actor_hidden, t.action_size), 0.01),
            "critic": init_mlp(k_c, (t.obs_size, *self.cfg.critic_hidden, 1)),
            "log_std": jnp.full((t.action_size,), self.cfg.init_log_std, jnp.float32),
        }
        env = jax.jit(t.reset, static_argnums=1)(k_env, self.cfg.num_envs)
        return PPOState(params, self.tx.init(params), RunningStats.create(t.obs_size), env, k_next, jnp.zeros((), jnp.int32))

    def _heads(self, params, stats, obs):
        x = stats.normalize(obs, self.cfg.obs_clip)
        return mlp_apply(params["actor"], x), mlp_apply(params["critic"], x)[..., 0]

    def iteration(self, state: PPOState) -> tuple[PPOState, dict]:
        cfg, task = self.cfg, self.task
        rng, k_roll, k_epochs = jax.random.split(state.rng, 3)
        params = state.params

        def body(env, key):
            obs = task.observe(env)
            mean, value = self._heads(params, state.obs_stats, obs)
            action = mean + jnp.exp(params["log_std"]) * jax.random.normal(key, mean.shape)
            logp = _log_prob(mean, params["log_std"], action)
            env, out = task.step(env, jnp.clip(action, -cfg.action_clip, cfg.action_clip))
            _, v_next = self._heads(params, state.obs_stats, out.obs)
            _, v_term = self._heads(params, state.obs_stats, out.terminal_obs)
            next_value = jnp.where(out.terminated, 0.0, jnp.where(out.truncated, v_term, v_next))
            done = out.terminated | out.truncated
            return env, (obs, action, logp, value, out.reward, next_value, (~done).astype(jnp.float32), out.metrics)

        env, batch = jax.lax.scan(body, state.env, jax.random.split(k_roll, cfg.rollout_steps))
        env = jax.lax.stop_gradient(env)
        batch = jax.lax.stop_gradient(batch)
        obs, actions, logp_old, values, rewards, next_values, continues, step_metrics = batch
        adv = gae_advantages(rewards, values, next_values, continues, cfg.gamma, cfg.gae_lambda)
        returns = adv + values
        flat = lambda x: x.reshape((-1,) + x.shape[2:])
        data = tuple(map(flat, (obs, actions, logp_old, adv, returns)))
        n = data[0].shape[0]
        mb = n // cfg.minibatches

        def loss_fn(p, o, a, lp_old, ad, ret):
            mean, v = self._heads(p, state.obs_stats, o)
            lp = _log_prob(mean, p["log_std"], a)
            ratio = jnp.exp(lp - lp_old)
            ad = (ad - ad.mean()) / (ad.std() + 1e-8)
            pg = -jnp.mean(jnp.minimum(ratio * ad, jnp.clip(ratio, 1 - cfg.clip_ratio, 1 + cfg.clip_ratio) * ad))
            vf = jnp.mean((v - ret) ** 2)
            ent = jnp.sum(p["log_std"] + 0.5 * jnp.log(2 * jnp.pi * jnp.e))
            return pg + cfg.value_coef * vf - cfg.entropy_coef * ent, (pg, vf)

        def epoch(carry, key):
            p, opt = carry
            perm = jax.random.permutation(key, n).reshape(cfg.minibatches, mb)

            def minibatch(carry, idx):
                p, opt = carry
                (loss, aux), grads = jax.value_and_grad(loss_fn, has_aux=True)(p, *(d[idx] for d in data))
                updates, opt = self.tx.update(grads, opt, p)
                return (optax.apply_updates(p, updates), opt), (loss, *aux)

            (p, opt), losses = jax.lax.scan(minibatch, (p, opt), perm)
            return (p, opt), losses

        (params, opt), (loss, pg, vf) = jax.lax.scan(epoch, (params, state.opt), jax.random.split(k_epochs, cfg.epochs))
        new = PPOState(params, opt, state.obs_stats.update(obs), env, rng, state.iteration + 1)
        metrics = {name: jnp.mean(v) for name, v in step_metrics.items()}
        metrics.update(reward=jnp.mean(rewards), policy_loss=jnp.mean(pg), value_loss=jnp.mean(vf))
        return new, metrics
