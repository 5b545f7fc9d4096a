"""Smoke test of the shipped task configs whose settings no other test runs through the G1 task.

The jump is compiled and trained end to end (test_gpu_train_script.py) and the stand's
defaults stepped (test_imitation_task.py); the squat's heading reference frame and the
step-in-place clip reached the task's step only in training. Here each is built from its
YAML with the cpu-tiny preset, and its reset and step are traced (``jax.eval_shape``): every
config-specific path of the step runs in Python and every shape is checked. Tracing costs
about 13 s a config; compiling a G1 step would cost minutes."""

import jax
import jax.numpy as jnp
import pytest

from bcg_robot.observation import observation_size
from bcg_train.learn.config import TRAIN_CONFIG_DIR, load_train_config
from bcg_train.learn.train import make_task

pytestmark = pytest.mark.slow  # traces the G1 task (MJX)

K = 3


@pytest.mark.parametrize("name", ["squat", "step_in_place"])
def test_a_shipped_task_config_builds_resets_and_steps(name):
    cfg = load_train_config(TRAIN_CONFIG_DIR / f"{name}.yaml", preset="cpu-tiny")
    task = make_task(cfg)
    robot_joints = task.action_size
    state = jax.eval_shape(lambda key: task.reset(key, K), jax.random.PRNGKey(0))
    after, out = jax.eval_shape(task.step, state, jnp.zeros((K, robot_joints), jnp.float32))
    n_obs = observation_size(cfg.task.observation_spec, robot_joints)
    assert out.obs.shape == out.terminal_obs.shape == (K, n_obs)
    assert out.reward.shape == out.terminated.shape == out.truncated.shape == (K,)
    assert out.terminated.dtype == jnp.bool_ and out.reward.dtype == jnp.float32
    rewards = {f"reward/{term}" for term in ("joint_pos", "root_pos", "root_orient", "key_body", "action_rate")}
    assert {"sim_failures", "tracking_error_m", "bundled", "terminated/lost"} | rewards <= set(out.metrics), sorted(out.metrics)
    assert all(m.shape == (K,) for m in out.metrics.values())
    assert jax.tree_util.tree_structure(after) == jax.tree_util.tree_structure(state)
    assert all(a.shape == b.shape and a.dtype == b.dtype
               for a, b in zip(jax.tree_util.tree_leaves(after), jax.tree_util.tree_leaves(state)))
