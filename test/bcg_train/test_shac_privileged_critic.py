"""An asymmetric actor-critic in SHAC: critic-only (privileged) task inputs reach the critics in
the window, the end-of-window value and the truncation bootstrap, never the actor; a warm start
whose critics' inputs changed takes the actor and starts the critics fresh."""

import dataclasses
import json
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from bcg_train.learn.config import SHACConfig, TrainConfig
from bcg_train.learn.critic import critic_input, ensemble_values
from bcg_train.learn.shac import SHAC
from bcg_train.learn.train import CheckpointError, train
from bcg_train.tasks.config import ImitationConfig
from bcg_train.tasks.point_mass import PointMassTask

TINY = SHACConfig(num_envs=8, horizon=8, iterations=20, actor_hidden=(16, 16), critic_hidden=(16,), critic_iterations=2,
                  critic_minibatches=2, actor_output_scale=0.5)


@dataclasses.dataclass(frozen=True)
class BlindPointMass(PointMassTask):
    """The point mass whose actor sees its position only; with ``privileged_size`` 2 the critics
    also see its velocity."""

    obs_size: int = 2
    privileged_size: int = 0

    def observe(self, state):
        return state.pos

    def privileged(self, state):
        return 10.0 * state.vel  # scaled, so that it cannot be mistaken for the position

    def step(self, state, action):
        after, out = super().step(state, action)
        if not self.privileged_size:
            return after, out
        return after, out._replace(terminal_privileged=10.0 * (state.vel + self.dt * action))


def test_the_critics_see_the_privileged_inputs_the_actor_does_not():
    task = BlindPointMass(privileged_size=2, episode_steps=5)  # truncations inside an 8-step window
    shac = SHAC(task, TINY)
    assert shac.actor_sizes[0] == 2 and shac.critic_sizes[0] == 4
    state = shac.init(0)
    noise = shac.exploration_noise(jax.random.PRNGKey(1))
    _, (env, records, _) = shac._rollout(state.actor, state, noise)
    (obs, privileged), rewards, next_values, continues, _, (done, _) = records
    assert obs.shape == (8, 8, 2) and privileged.shape == (8, 8, 2)
    np.testing.assert_allclose(privileged[0], 10.0 * np.asarray(state.env.vel))  # the state the step started from
    np.testing.assert_allclose(obs[0], np.asarray(state.env.pos))

    # the next value of a truncated step is the critics' at the terminal observation AND its
    # privileged inputs; replay the window to find the terminal states
    stats, cfg = state.obs_stats, TINY
    value = lambda o, p: np.asarray(jnp.mean(ensemble_values(state.target_critics, critic_input(stats, o, p, cfg.obs_clip)), axis=0))
    env_t, truncated_seen = state.env, 0
    from bcg_train.learn.networks import policy_action

    for t in range(cfg.horizon):
        action = jnp.clip(policy_action(state.actor, stats, task.observe(env_t), cfg.obs_clip, cfg.action_clip) + noise[t], -cfg.action_clip, cfg.action_clip)
        env_t, out = task.step(env_t, action)
        trunc = np.asarray(out.truncated)
        if trunc.any():
            truncated_seen += int(trunc.sum())
            expected = value(out.terminal_obs, out.terminal_privileged)[trunc]
            np.testing.assert_allclose(np.asarray(next_values[t])[trunc], expected, rtol=1e-5, atol=1e-6)
            blind = value(out.terminal_obs, jnp.zeros_like(out.terminal_privileged))[trunc]
            assert not np.allclose(expected, blind, atol=1e-4)  # the privileged inputs changed the bootstrap
        live = ~np.asarray(out.terminated | out.truncated)
        np.testing.assert_allclose(np.asarray(next_values[t])[live], value(out.obs, task.privileged(env_t))[live], rtol=1e-5, atol=1e-6)
    assert truncated_seen > 0


def test_critics_fit_a_value_only_the_privileged_inputs_explain():
    cfg = dataclasses.replace(TINY, critic_iterations=40, critic_lr=1e-2)
    shac = SHAC(BlindPointMass(privileged_size=2), cfg)
    state = shac.init(0)
    rng = np.random.default_rng(0)
    obs = np.zeros((8, 8, 2), np.float32)
    privileged = rng.normal(size=(8, 8, 2)).astype(np.float32)
    targets = 3.0 * privileged[..., 0] - privileged[..., 1]
    fit = jax.jit(shac._critic_update)
    _, _, seeing, _ = fit(state, obs, privileged, targets, jax.random.PRNGKey(0))
    _, _, blind, _ = fit(state, obs, np.zeros_like(privileged), targets, jax.random.PRNGKey(0))
    assert float(blind) > 0.8 * float(np.var(targets))  # nothing to fit on: about the targets' variance
    assert float(seeing) < 0.2 * float(blind)


def _cfg(tmp_path: Path, name: str, privileged: tuple[str, ...] = ()) -> TrainConfig:
    return TrainConfig(shac=TINY, task=ImitationConfig(critic_privileged=privileged), run_dir=str(tmp_path / name), devices=1)


def test_a_warm_start_with_other_critic_inputs_takes_the_actor_and_fresh_critics(tmp_path):
    _, source, _ = train(_cfg(tmp_path, "source"), task=BlindPointMass(), iterations=2, progress=False)
    ckpt = tmp_path / "source" / "checkpoints" / "000002.pkl"
    warm_cfg = dataclasses.replace(_cfg(tmp_path, "warm", ("root_lin_vel",)), init_from=str(ckpt))
    task = BlindPointMass(privileged_size=2)
    _, warm, _ = train(warm_cfg, task=task, iterations=0, progress=False)
    for a, b in zip(jax.tree_util.tree_leaves(warm.actor), jax.tree_util.tree_leaves(source.actor)):
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))
    fresh = SHAC(task, TINY).init(warm_cfg.seed).critics
    for a, b in zip(jax.tree_util.tree_leaves(warm.critics), jax.tree_util.tree_leaves(fresh)):
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))
    assert warm.critics[0]["w"].shape == (TINY.num_critics, 4, 16)  # position and velocity in
    record = json.loads((tmp_path / "warm" / "warm_start.json").read_text())
    assert record["critics"].startswith("fresh: critic_privileged ['root_lin_vel'], the source's []")
    # trains on
    _, stepped, history = train(warm_cfg, task=task, iterations=1, progress=False)
    assert np.isfinite(history[-1]["critic_loss"])
    # the config says the critics' inputs are the source's, but their sizes differ: an error, as before
    same = dataclasses.replace(_cfg(tmp_path, "same"), init_from=str(ckpt))
    with pytest.raises(CheckpointError, match="cannot warm-start from it: critics.*shape"):
        train(same, task=task, iterations=0, progress=False)
