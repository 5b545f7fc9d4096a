"""A reset without the forward pass (``MjxSim.reset_to(..., forward=False)``) steps exactly
like one with it: the tasks' in-step resets rely on that."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from bcg_train.sim.config import SimConfig
from bcg_train.sim.env import MjxSim
from bcg_train.sim.hopper_model import KNEE, ROOT_Z, build_hopper, hopper_drive, standing_qpos
from bcg_train.sim.jax_setup import enable_compilation_cache

pytestmark = pytest.mark.slow  # compiles MJX programs

enable_compilation_cache()


def test_a_reset_without_forward_steps_bit_identically_and_only_its_derived_fields_differ():
    sim = MjxSim(build_hopper("train", "stiff"), hopper_drive(), SimConfig(control_dt=0.02))
    qpos = jnp.asarray(standing_qpos(), jnp.float32).at[KNEE].add(0.1).at[ROOT_Z].add(0.005)  # knee bent, 5 mm up
    qvel = jnp.zeros_like(qpos).at[ROOT_Z].set(-0.3)
    target = sim.position_targets(jnp.asarray([0.2, -0.1]))

    def two_steps():
        """Both resets, then two control steps of each, one batch of two rows (one compiled
        control step: the rows are the same program, so they can differ only by their data)."""
        fresh = [sim.reset_to(qpos, qvel, jax.random.PRNGKey(0), forward=f).data for f in (True, False)]
        batch = jax.tree_util.tree_map(lambda a, b: jnp.stack([a, b]), *fresh)
        step = jax.vmap(lambda d: sim.control_step(d, target))

        def body(data, _):
            data, contact = step(data)
            return data, contact.force_peak

        after, peaks = jax.lax.scan(body, batch, None, length=2)  # peaks: (step, row, contact)
        rows = [jax.tree_util.tree_map(lambda x, i=i: x[i], after) for i in (0, 1)]
        return (*fresh, *rows, peaks[:, 0], peaks[:, 1])

    fresh_fwd, fresh_raw, after_fwd, after_raw, peaks_fwd, peaks_raw = jax.jit(two_steps)()
    peak1_fwd, peak2_fwd = peaks_fwd
    peak1_raw, peak2_raw = peaks_raw
    # the reset states differ in their derived fields only (the test would be empty otherwise)
    assert float(jnp.max(jnp.abs(fresh_fwd.xpos - fresh_raw.xpos))) > 0.1
    np.testing.assert_array_equal(fresh_fwd.qpos, fresh_raw.qpos)
    # two control steps (8 physics steps, landing) are bit-identical
    assert float(jnp.max(peak1_fwd)) > 0 or float(jnp.max(peak2_fwd)) > 0
    for name in ("qpos", "qvel", "qacc", "qacc_warmstart", "xpos"):
        np.testing.assert_array_equal(getattr(after_fwd, name), getattr(after_raw, name), err_msg=name)
    np.testing.assert_array_equal(peak1_fwd, peak1_raw)
    np.testing.assert_array_equal(peak2_fwd, peak2_raw)
