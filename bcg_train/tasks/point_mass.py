"""A differentiable 2-D point mass that must come to rest at the origin.

Pure JAX and cheap to compile: the learner's unit tests and the data-parallel check
run on it, while the G1 imitation task exercises the same code paths slowly. It has
the task interface SHAC expects (``reset`` / ``observe`` / ``step``).
"""

from __future__ import annotations

import dataclasses
import functools

import jax
import jax.numpy as jnp

from bcg_train.tasks.imitation import StepOutput


@functools.partial(jax.tree_util.register_dataclass, data_fields=["pos", "vel", "t", "rng"], meta_fields=[])
@dataclasses.dataclass(frozen=True)
class PointMassState:
    pos: jax.Array  # (K, 2)
    vel: jax.Array  # (K, 2)
    t: jax.Array  # (K,)
    rng: jax.Array


@dataclasses.dataclass(frozen=True)
class PointMassTask:
    dt: float = 0.05
    episode_steps: int = 40
    max_distance: float = 3.0
    obs_size: int = 4
    action_size: int = 2

    def _fresh(self, rng: jax.Array, k: int) -> tuple[jax.Array, jax.Array]:
        return jax.random.uniform(rng, (k, 2), minval=-1.0, maxval=1.0), jnp.zeros((k, 2))

    def reset(self, rng: jax.Array, num_envs: int) -> PointMassState:
        k_env, k_next = jax.random.split(rng)
        pos, vel = self._fresh(k_env, num_envs)
        return PointMassState(pos, vel, jnp.zeros((num_envs,), jnp.int32), k_next)

    def observe(self, state: PointMassState) -> jax.Array:
        return jnp.concatenate([state.pos, state.vel], axis=-1)

    def step(self, state: PointMassState, action: jax.Array) -> tuple[PointMassState, StepOutput]:
        rng, k_reset = jax.random.split(state.rng)
        vel = state.vel + self.dt * action
        pos = state.pos + self.dt * vel
        t = state.t + 1
        reward = -jnp.sum(pos**2, axis=-1) - 0.1 * jnp.sum(vel**2, axis=-1) - 0.01 * jnp.sum(action**2, axis=-1)
        term = jnp.linalg.norm(pos, axis=-1) > self.max_distance
        trunc = (t >= self.episode_steps) & ~term
        stepped = PointMassState(pos, vel, t, rng)
        done = term | trunc
        fresh_pos, fresh_vel = self._fresh(k_reset, pos.shape[0])
        after = PointMassState(
            jnp.where(done[:, None], fresh_pos, pos), jnp.where(done[:, None], fresh_vel, vel), jnp.where(done, 0, t), rng
        )
        metrics = {"distance": jnp.linalg.norm(pos, axis=-1)}
        return after, StepOutput(self.observe(after), reward, term, trunc, self.observe(stepped), metrics)
