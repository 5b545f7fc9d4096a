"""Policy-gradient diagnostics on the two-link leg (plain estimator, short horizon)."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from bcg_train.bcg import BCGConfig, BundledSim, Estimator
from bcg_train.bcg.diagnostics import perturbed_starts, policy_gradient_statistics
from bcg_train.sim import MjxSim
from bcg_train.sim.jax_setup import enable_compilation_cache
from bcg_train.sim.toy_models import two_link_leg

pytestmark = pytest.mark.slow  # compiles MJX programs

enable_compilation_cache()


def test_policy_gradient_statistics_over_perturbed_starts():
    model, drive = two_link_leg(height=1.5)
    sim = MjxSim(model, drive, initial_qpos=np.array([0.0, 0.0, 0.4, -0.8]))
    bsim = BundledSim(sim, BCGConfig(mode=Estimator.PLAIN))
    start = perturbed_starts(bsim, 4, 1e-2, jax.random.PRNGKey(0))
    params = {"w": jnp.zeros((2, 4)), "b": jnp.array([0.1, -0.1])}

    def policy(p, obs):
        return jnp.tanh(p["w"] @ obs + p["b"])

    def observe(state):
        return jnp.concatenate([state.data.qpos[2:], state.data.qvel[2:]])

    def cost(state, action):
        return jnp.sum((state.data.qpos[2:] - jnp.array([0.2, -0.4])) ** 2)

    stats = policy_gradient_statistics(bsim, start, policy, observe, params, 3, cost)
    assert stats.num_samples == 4 and stats.num_nonfinite == 0
    assert stats.mean_gradient.shape == (10,)
    assert float(np.linalg.norm(stats.mean_gradient)) > 0
    assert stats.covariance_trace > 0  # the starts differ
    assert 0.5 < stats.mean_cosine <= 1.0 + 1e-6
    assert stats.simulated_steps_per_gradient == 3 * sim.n_substeps
