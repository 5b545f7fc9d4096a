"""How the window's action gradient spreads over the environments, and the per-environment cap
(pure functions of arrays; the iteration's own use of them is tested in test_shac.py)."""

import jax.numpy as jnp
import numpy as np
import pytest

from bcg_train.learn.action_gradients import action_gradient_spread, cap_environment_gradients


def test_action_gradient_spread_names_the_environment_that_carries_the_gradient():
    t, k, a = 4, 3, 2
    even = jnp.ones((t, k, a))
    done = jnp.zeros((t, k), bool).at[2, 1].set(True).at[1, 2].set(True)
    terminated = jnp.zeros((t, k), bool).at[2, 1].set(True)  # environment 2 only reached the time limit
    bundled = jnp.zeros((t, k)).at[:3, 1].set(1.0)
    spread = action_gradient_spread(even, done, terminated, bundled)
    assert float(spread["action_grad_norm"]) == pytest.approx(np.sqrt(t * k * a))
    assert float(spread["action_grad_top_env_share"]) == pytest.approx(1 / k)
    # environment 1 carries 9x the others' squared norm: share 9 / 11, and it is the one that
    # ended its episode by a termination and bundled 3 of its 4 steps
    one = even.at[:, 1].multiply(3.0)
    spread = action_gradient_spread(one, done, terminated, bundled)
    assert float(spread["action_grad_top_env_share"]) == pytest.approx(9 / 11)
    assert float(spread["action_grad_top_env_ended"]) == 1.0 and float(spread["action_grad_top_env_terminated"]) == 1.0
    assert float(spread["action_grad_top_env_bundled"]) == 0.75
    spread = action_gradient_spread(even.at[:, 2].multiply(3.0), done, terminated)  # truncated only; no bundle metric
    assert float(spread["action_grad_top_env_ended"]) == 1.0 and float(spread["action_grad_top_env_terminated"]) == 0.0
    assert "action_grad_top_env_bundled" not in spread
    spread = action_gradient_spread(even.at[:, 0].multiply(3.0), done, terminated)  # the largest did not end
    assert float(spread["action_grad_top_env_ended"]) == 0.0 and float(spread["action_grad_top_env_terminated"]) == 0.0
    assert float(action_gradient_spread(jnp.zeros((t, k, a)), done, terminated)["action_grad_top_env_share"]) == 0.0


def test_environment_gradient_cap_scales_the_largest_windows_to_the_cap():
    t, k, a = 3, 4, 2
    g = jnp.ones((t, k, a)).at[:, 1].multiply(10.0).at[:, 3].multiply(2.0)  # window norms 1, 10, 1, 2 (x sqrt 6)
    capped = np.asarray(cap_environment_gradients(g, 1.0))
    norms = np.sqrt((capped**2).sum(axis=(0, 2))) / np.sqrt(t * a)
    np.testing.assert_allclose(norms, [1.0, 1.5, 1.0, 1.5], rtol=1e-6)  # the median of 1, 10, 1, 2 is 1.5
    np.testing.assert_allclose(capped[:, 1] / np.asarray(g)[:, 1], 0.15, rtol=1e-6)  # direction kept
    np.testing.assert_array_equal(np.asarray(cap_environment_gradients(g, 100.0)), np.asarray(g))  # a loose cap: unchanged
    broken = np.asarray(cap_environment_gradients(g.at[0, 2, 0].set(jnp.nan), 1.0))
    assert np.isnan(broken[:, 2]).any() and np.isfinite(broken[:, [0, 1, 3]]).all()  # the median of the finite windows
