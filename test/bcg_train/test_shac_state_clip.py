"""Gradient clipping through the simulator state (SHAC's per-step cap)."""

import jax
import jax.numpy as jnp
import numpy as np

from bcg_train.learn.shac import clip_state_gradient


def test_forward_is_identity_and_backward_caps_each_environment():
    state = {"q": jnp.ones((3, 2)), "v": jnp.ones((3,)), "count": jnp.arange(3)}
    weights = jnp.array([[100.0, 0.0], [0.3, 0.4], [jnp.inf, 1.0]])

    def loss(q, v):
        s = clip_state_gradient({"q": q, "v": v, "count": state["count"]}, 1.0, 3)
        assert s["count"] is not None
        return jnp.sum(s["q"] * weights) + jnp.sum(s["v"] * jnp.array([0.0, 0.0, 2.0]))

    out = clip_state_gradient(state, 1.0, 3)
    np.testing.assert_array_equal(out["q"], state["q"])
    gq, gv = jax.grad(loss, argnums=(0, 1))(state["q"], state["v"])
    np.testing.assert_allclose(gq[0], [1.0, 0.0])  # norm 100 -> 1
    np.testing.assert_allclose(gq[1], [0.3, 0.4])  # norm 0.5, untouched
    # env 2's cotangent is not finite: it stays so (the learner counts and skips such an
    # actor gradient), it is not zeroed into a plausible-looking one
    assert not np.isfinite(np.asarray(gq[2])).all()
    np.testing.assert_allclose(gv[:2], [0.0, 0.0])
