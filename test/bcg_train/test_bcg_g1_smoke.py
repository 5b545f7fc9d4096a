"""G1 smoke test: BCG gradient through a 3-step landing on the stiff train model."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from bcg_robot.config import load_robot_config
from bcg_train.bcg import BCGConfig, BundledSim
from bcg_train.tasks.g1_landing import build_landing_problem, landing_cost
from bcg_train.bcg.rollout import per_env_action_gradients
from bcg_train.sim.jax_setup import enable_compilation_cache

pytestmark = pytest.mark.slow  # compiles MJX programs (a G1 module: see conftest.G1_MODULES)

enable_compilation_cache()


def test_g1_bcg_gradient_through_landing_is_finite_and_bundles_fire():
    problem = build_landing_problem(load_robot_config(), drop_height=0.01)
    sim = problem.sim
    assert sim.n_substeps == 4 and sim.mj_model.nu == 29
    # tau above the standing load per foot sphere (~40 N), below the landing impact
    bsim = BundledSim(sim, BCGConfig(num_branches=2, force_threshold=60.0))
    start = bsim.reset(jax.random.split(jax.random.PRNGKey(0), 2))
    actions = jnp.zeros((2, 3, 29), sim.dtype).at[1].set(0.1)
    cost = landing_cost(problem)
    grads, (costs, substeps) = jax.jit(lambda a: per_env_action_gradients(bsim, start, a, cost))(actions)
    assert grads.shape == (2, 3, 29)
    assert np.all(np.isfinite(np.asarray(grads))) and np.all(np.isfinite(np.asarray(costs)))
    assert float(jnp.linalg.norm(grads)) > 0
    assert int(substeps) > 2 * 3 * 4  # branches ran: more than the nominal substeps
