"""Bundle slots: only M environments of a batch run branches; the rest take the plain step, counted.

On the stiff hopper under random actions (landings in several environments at once).
"""

import dataclasses
import functools
import re

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from bcg_train.bcg.bundle import slot_assignment
from bcg_train.bcg.config import Estimator
from bcg_train.sim.jax_setup import enable_compilation_cache
from bcg_train.tasks.hopper import HopperConfig, HopperTask

pytestmark = pytest.mark.slow  # compiles MJX programs

enable_compilation_cache()
K, T = 8, 30


def test_slot_assignment_puts_running_bundles_first_then_triggers_in_order():
    active = jnp.array([False, True, False, False, True, False])
    need = jnp.array([True, True, False, True, True, False])
    np.testing.assert_array_equal(slot_assignment(active, need, 3), [1, 4, 0])
    np.testing.assert_array_equal(slot_assignment(active, need, 5), [1, 4, 0, 3, 2])


@functools.lru_cache(maxsize=None)  # two tests roll the 2-slot batch: compile it once per process
def rollout(slots):
    """Per step: qpos, bundled and overflowed environments, and the task state after the step."""
    cfg = HopperConfig(contact="stiff", bcg=dataclasses.replace(HopperConfig().bcg, bundle_slots=slots))
    task = HopperTask(cfg)
    actions = 0.6 * jax.random.normal(jax.random.PRNGKey(1), (T, K, 2))
    start = task.reset(jax.random.PRNGKey(0), K)

    @jax.jit
    def roll(state):
        def body(s, a):
            s, out = task.step(s, a)
            return s, (s.sim.sim.data.qpos, s.sim.bundle.bundled, s.sim.bundle.overflowed, s)

        return jax.lax.scan(body, state, actions)[1]

    return start, jax.device_get(roll(start))


def test_enough_slots_reproduce_the_unslotted_rollout_and_too_few_are_counted():
    q_all, bundled_all, _, _ = rollout(0)[1]
    q_7, bundled_7, overflow_7, _ = rollout(K - 1)[1]
    q_2, bundled_2, overflow_2, _ = rollout(2)[1]
    need = bundled_all.sum(axis=1)
    assert need.max() <= K - 1 and need.sum() > 0  # bundles ran, never in all 8 at once
    assert not overflow_7.any()
    np.testing.assert_array_equal(bundled_7, bundled_all)
    # the same computation on a gathered batch of 7: XLA's float32 rounding differs by ulps,
    # which the stiff contacts amplify to 3e-4 over the 30 steps (measured)
    np.testing.assert_allclose(q_7[:3], q_all[:3], atol=1e-5)
    np.testing.assert_allclose(q_7, q_all, atol=2e-3)
    assert bundled_2.sum(axis=1).max() <= 2  # never more than M environments branch
    assert overflow_2.any() and not (overflow_2 & bundled_2).any()


def multiplications_in_step_gradient(mode: Estimator) -> int:
    """``stablehlo.multiply`` ops in the lowered gradient of one hopper task step (no compile)."""
    cfg = HopperConfig(contact="stiff")
    cfg = dataclasses.replace(cfg, bcg=dataclasses.replace(cfg.bcg, mode=mode, bundle_slots=2))
    task = HopperTask(cfg)
    state = task.reset(jax.random.PRNGKey(0), K)
    grad = jax.grad(lambda a, s: jnp.sum(task.step(s, a)[1].reward))
    text = jax.jit(grad).lower(jnp.zeros((K, 2)), state).as_text()
    return len(re.findall(r"stablehlo\.multiply", text))


def test_the_bcg_step_holds_the_physics_step_once():
    """Nominal rows and branch rows go through one control step (chunks under ``scan``):
    the BCG program's arithmetic is the plain program's plus the bundle's bookkeeping, not
    a second physics step (a nominal step beside a bundled ``cond`` measured 1.9x)."""
    plain = multiplications_in_step_gradient(Estimator.PLAIN)
    bcg = multiplications_in_step_gradient(Estimator.BCG)
    print(f"multiplications in the step's gradient: plain {plain}, BCG {bcg} ({bcg / plain:.2f}x)")
    assert bcg < 1.25 * plain


def test_an_overflowing_step_passes_its_plain_gradient_or_with_cut_none():
    """``overflow: cut``: the environment that needed a bundle and found no slot sends no
    gradient back across that step; the forward pass and every other environment's gradient
    are those of ``overflow: plain``."""
    start, (_, bundled, overflowed, after_each_step) = rollout(2)
    t = int(np.argmax(overflowed.any(axis=1)))  # the first step with an overflow
    assert overflowed[t].any()
    env = int(np.argmax(overflowed[t]))
    other = int(np.argmax(bundled[t]))  # a bundled environment of the same step
    assert bundled[t, other]
    actions = 0.6 * jax.random.normal(jax.random.PRNGKey(1), (T, K, 2))

    def task_with(rule):
        return HopperTask(HopperConfig(contact="stiff", bcg=dataclasses.replace(HopperConfig().bcg, bundle_slots=2, overflow=rule)))

    # the rule changes only the backward pass, so the state before the overflowing step is the
    # 2-slot rollout's (its forward pass is either rule's), and only the step's gradient is
    # compiled per rule
    before = start if t == 0 else jax.tree_util.tree_map(lambda x: x[t - 1], after_each_step)

    def step_gradients(rule):
        task = task_with(rule)

        @jax.jit
        def run(state, action):
            def both_velocities(a):  # environments are independent: row e of the gradient is env e's
                after = task.step(state, a)[0]
                return jnp.sum(after.sim.sim.data.qvel[jnp.array([env, other])]), after

            # one forward and one backward pass of the step (the program's size sets this test's cost)
            grad, after = jax.grad(both_velocities, has_aux=True)(action)
            return after.sim.sim.data.qpos, after.sim.bundle.overflowed, grad[env], grad[other]

        return jax.device_get(run(before, actions[t]))

    q_plain, over_plain, g_plain, g_other_plain = step_gradients("plain")
    q_cut, over_cut, g_cut, g_other_cut = step_gradients("cut")
    np.testing.assert_array_equal(q_cut, q_plain)
    assert over_plain[env] and over_cut[env]
    assert np.abs(g_plain).max() > 0 and np.all(g_cut == 0)
    np.testing.assert_allclose(g_other_cut, g_other_plain, rtol=1e-6)


def test_one_environments_bundle_sends_no_gradient_into_another_environments_state():
    """Branch rows past the first chunk took the fields a chunk does not fill in (the applied
    forces) from the environment at the row's position: env 1's branch sensitivity landed on
    env 0's ``qfrc_applied``. Every env-0 leaf of the start state must get an exactly zero
    gradient from a loss on env 1 alone, and env 1's own state a non-zero one."""
    bcg = dataclasses.replace(HopperConfig().bcg, mode=Estimator.GLOBAL_SMOOTHING, num_branches=2)
    task = HopperTask(HopperConfig(contact="stiff", bcg=bcg))
    start = task.reset(jax.random.PRNGKey(3), 2).sim
    actions = 0.3 * jnp.ones((2, 2))

    def loss(state):
        after = task.bsim.step(state, actions)
        return jnp.sum(after.sim.data.qpos[1]) + jnp.sum(after.sim.data.qvel[1])

    grad = jax.jit(jax.grad(loss, allow_int=True))(start)
    assert bool(task.bsim.step(start, actions).bundle.bundled.all())  # both environments ran branches
    floats = [(jax.tree_util.keystr(path), np.asarray(leaf)) for path, leaf in jax.tree_util.tree_leaves_with_path(grad)
              if hasattr(leaf, "dtype") and np.issubdtype(leaf.dtype, np.floating) and leaf.ndim >= 1 and leaf.shape[0] == 2]
    leaked = [name for name, g in floats if np.any(g[0] != 0)]
    assert not leaked, leaked
    assert any(np.abs(g[1]).sum() > 0 for name, g in floats if name.endswith(".qvel"))
