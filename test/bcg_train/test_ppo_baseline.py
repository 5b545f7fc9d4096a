"""The PPO baseline: our task behind brax's Env interface, and brax's PPO trainer on it."""

import dataclasses

import jax
import jax.numpy as jnp
import numpy as np

from bcg_train.learn.ppo_baseline import BraxTaskEnv, PPOConfig, train_ppo
from bcg_train.tasks.point_mass import PointMassTask

K = 8


def _env(episode_steps: int = 5) -> BraxTaskEnv:
    return BraxTaskEnv(PointMassTask(episode_steps=episode_steps), action_clip=1.0)


def test_adapter_reset_and_step_shapes_and_episode_bookkeeping():
    env = _env(episode_steps=5)
    assert (env.observation_size, env.action_size) == (4, 2)
    reset, step = jax.jit(env.reset), jax.jit(env.step)
    state = reset(jax.random.split(jax.random.PRNGKey(0), K))  # brax passes one key per environment
    assert state.obs.shape == (K, 4) and state.reward.shape == (K,) and state.done.shape == (K,)
    assert state.pipeline_state.pos.shape == (K, 2)
    assert set(state.metrics) == {"reward_per_step", "distance_per_step"}
    assert not np.any(state.done) and not np.any(state.info["truncation"])

    zero = jnp.zeros((K, 2))
    rewards = []
    for t in range(1, 6):
        state = step(state, zero)
        rewards.append(np.asarray(state.reward))
        np.testing.assert_array_equal(state.info["steps"], t)
        if t < 5:
            assert not np.any(state.done) and not np.any(state.info["episode_done"])
    # The time limit: done and truncation together, the episode sums cover all 5 steps,
    # and the observation is already the reset one (fresh environments start at rest).
    np.testing.assert_array_equal(state.done, 1.0)
    np.testing.assert_array_equal(state.info["truncation"], 1.0)
    np.testing.assert_array_equal(state.info["episode_done"], 1.0)
    np.testing.assert_array_equal(state.info["episode_metrics"]["length"], 5.0)
    np.testing.assert_allclose(state.info["episode_metrics"]["sum_reward"], np.sum(rewards, axis=0), rtol=1e-5)
    np.testing.assert_allclose(state.info["episode_metrics"]["reward_per_step"], np.sum(rewards, axis=0), rtol=1e-5)
    np.testing.assert_array_equal(state.obs[:, 2:], 0.0)
    state = step(state, zero)  # counters restart on the step after done
    np.testing.assert_array_equal(state.info["steps"], 1.0)
    np.testing.assert_array_equal(state.info["episode_metrics"]["length"], 1.0)
    assert not np.any(state.done) and not np.any(state.info["truncation"])


def test_adapter_maps_termination_to_done_without_truncation():
    env = _env(episode_steps=100)
    state = env.reset(jax.random.split(jax.random.PRNGKey(1), K))
    ps = state.pipeline_state
    leaving = jnp.arange(K) < K // 2  # half the environments fly past max_distance (3 m)
    pos = jnp.where(leaving[:, None], jnp.array([2.99, 0.0]), ps.pos)
    vel = jnp.where(leaving[:, None], jnp.array([10.0, 0.0]), ps.vel)
    state = state.replace(pipeline_state=dataclasses.replace(ps, pos=pos, vel=vel))
    nxt = env.step(state, jnp.zeros((K, 2)))
    np.testing.assert_array_equal(nxt.done, np.asarray(leaving, np.float32))
    np.testing.assert_array_equal(nxt.info["truncation"], 0.0)


def test_adapter_clips_actions_and_cuts_physics_gradients():
    env = _env()
    state = env.reset(jax.random.split(jax.random.PRNGKey(2), K))
    big = jnp.full((K, 2), 100.0)
    np.testing.assert_allclose(env.step(state, big).obs, env.step(state, jnp.ones((K, 2))).obs)

    a = jnp.full((K, 2), 0.5)
    task_grad = jax.grad(lambda x: env.task.step(state.pipeline_state, x)[1].reward.sum())(a)
    assert np.abs(task_grad).max() > 0  # the task itself is differentiable ...
    env_grad = jax.grad(lambda x: env.step(state, x).reward.sum())(a)
    np.testing.assert_array_equal(env_grad, 0.0)  # ... the adapter hands brax none of it


def test_brax_ppo_improves_the_point_mass_reward():
    cfg = PPOConfig(num_envs=64, rollout_steps=20, iterations=150, actor_hidden=(32, 32), critic_hidden=(32, 32), lr=3e-3)
    rows = []
    make_policy, params, history = train_ppo(PointMassTask(), cfg, seed=0, progress_fn=rows.append)
    assert rows == history and len(history) == cfg.iterations
    steps = np.array([h["env_steps"] for h in history])
    np.testing.assert_array_equal(steps, cfg.num_envs * cfg.rollout_steps * np.arange(1, cfg.iterations + 1))
    wall = np.array([h["wall_s"] for h in history])
    assert wall[0] == 0.0 and np.all(np.diff(wall) >= 0)
    reward = np.array([h["reward"] for h in history])
    distance = np.array([h["distance"] for h in history])
    finite = np.isfinite(reward)
    assert finite[-1] and np.array_equal(finite, np.isfinite(distance))
    # The first rows report the first finished episodes of the initial policy (about -0.9
    # per step); a policy that brings the mass to rest near the origin gets about -0.3.
    first, last = reward[finite][:3].mean(), reward[-5:].mean()
    assert last > first + 0.3, (first, last)
    assert distance[-5:].mean() < 0.7 * distance[finite][:3].mean()
    # brax's policy acts on our observations.
    obs = PointMassTask().observe(PointMassTask().reset(jax.random.PRNGKey(3), 4))
    action, _ = make_policy(params, deterministic=True)(obs, jax.random.PRNGKey(4))
    assert action.shape == (4, 2)


def test_restore_params_starts_from_the_given_networks_and_normalizer():
    cfg = PPOConfig(num_envs=8, rollout_steps=5, iterations=2, actor_hidden=(8,), critic_hidden=(8,))
    _, trained, _ = train_ppo(PointMassTask(), cfg, seed=0)
    seen = []
    train_ppo(PointMassTask(), dataclasses.replace(cfg, iterations=1), seed=1, restore_params=trained,
              policy_params_fn=lambda step, make_policy, params: seen.append((step, jax.device_get(params))))
    step, first = seen[0]  # brax's call before its first iteration: the restored parameters
    assert step == 0
    for got, want in zip(jax.tree_util.tree_leaves(first), jax.tree_util.tree_leaves(jax.device_get(trained))):
        np.testing.assert_array_equal(got, want)
    assert np.abs(np.asarray(first[0].std) - 1.0).max() > 1e-3  # the normalizer's statistics came along (not its init)
    _, fresh, _ = train_ppo(PointMassTask(), dataclasses.replace(cfg, iterations=0), seed=1)
    assert not np.array_equal(jax.tree_util.tree_leaves(fresh[1])[0], jax.tree_util.tree_leaves(first[1])[0])
