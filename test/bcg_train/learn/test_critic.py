"""The critic's pure functions: TD(lambda) targets, explained variance, the diagnostics of the
critics before they fit a window."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from bcg_train.learn.config import SHACConfig
from bcg_train.learn.critic import critic_diagnostics, explained_variance, td_lambda_returns
from bcg_train.learn.shac import SHAC
from bcg_train.tasks.point_mass import PointMassTask

TINY = SHACConfig(num_envs=8, horizon=8, iterations=20, actor_hidden=(16, 16), critic_hidden=(16,), critic_iterations=2,
                  critic_minibatches=2)


def test_td_lambda_returns_limits():
    r = jnp.array([[1.0], [2.0], [3.0]])
    v = jnp.array([[10.0], [20.0], [30.0]])  # value of the state after each step
    c = jnp.ones((3, 1))
    g = 0.9
    # lambda 0: one-step TD targets
    np.testing.assert_allclose(td_lambda_returns(r, v, c, g, 0.0), r + g * v, rtol=1e-6)
    # lambda 1: discounted return bootstrapped with the last value
    mc = np.array([1 + g * 2 + g**2 * 3 + g**3 * 30, 2 + g * 3 + g**2 * 30, 3 + g * 30])
    np.testing.assert_allclose(td_lambda_returns(r, v, c, g, 1.0)[:, 0], mc, rtol=1e-6)
    # an episode end at step 0 stops the return there (its next value is given explicitly)
    c0 = jnp.array([[0.0], [1.0], [1.0]])
    np.testing.assert_allclose(td_lambda_returns(r, v, c0, g, 1.0)[0, 0], 1 + g * 10, rtol=1e-6)


def test_explained_variance_limits():
    target = jnp.array([1.0, 4.0, 2.0, 7.0])
    assert float(explained_variance(target, target)) == pytest.approx(1.0)
    assert float(explained_variance(jnp.full(4, 3.0), target)) == pytest.approx(0.0, abs=1e-6)  # any constant
    assert float(explained_variance(-target, target)) == pytest.approx(-3.0)  # residual 2*target: 1 - 4


def test_critic_diagnostics_score_the_critics_before_they_fit():
    shac = SHAC(PointMassTask(), TINY)
    critics = shac.init(0).critics
    # every critic of the ensemble outputs the constant 5: zero last-layer weights, bias 5
    *hidden, last = critics
    critics = [*hidden, {"w": jnp.zeros_like(last["w"]), "b": jnp.full_like(last["b"], 5.0)}]
    x = jax.random.normal(jax.random.PRNGKey(1), (6, PointMassTask().obs_size))
    y = jnp.array([1.0, 2.0, 3.0, 4.0, 5.0, 9.0])
    d = critic_diagnostics(critics, x, y)
    assert float(d["critic_loss_fresh"]) == pytest.approx(float(jnp.mean((5.0 - y) ** 2)))
    assert float(d["critic_explained_variance"]) == pytest.approx(0.0, abs=1e-6)
    assert float(d["value_target_mean"]) == pytest.approx(4.0)
