"""The physics cost a rollout reports: whole chunks of K rows, as the bundled step runs them."""

import types

import jax.numpy as jnp

from bcg_train.bcg.rollout import simulated_substeps


def test_a_bundled_step_costs_the_nominal_chunk_and_the_branch_chunks_of_the_slots_in_use():
    bsim = types.SimpleNamespace(sim=types.SimpleNamespace(n_substeps=5), config=types.SimpleNamespace(num_branches=10))
    k = 8
    # per step: no bundle; one environment (10 rows: 2 chunks); two (20 rows: 3 chunks); all 8 (80 rows: 10 chunks)
    bundled = jnp.array([0, 1, 2, 8])
    chunks = 4 + (0 + 2 + 3 + 10)
    assert int(simulated_substeps(bsim, k, bundled)) == chunks * k * 5
    assert int(simulated_substeps(bsim, k, jnp.zeros(6, jnp.int32))) == 6 * k * 5  # plain: the nominal chunk only
