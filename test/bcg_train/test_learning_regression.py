"""Learning regression: SHAC+BCG on the stiff hopper improves a random policy in a few iterations.

The actor starts random (``actor_output_scale=1``: PD targets up to ~1 rad off the
default pose), so it falls often. 30 SHAC+BCG iterations must raise the return the
learner itself collects: the mean reward per step of its training windows, over the last
5 iterations against iterations 2-6. Iteration 1 is left out: the observation
normalizer first sees data there, which changes the policy by itself (the reward drops
over the next iterations with or without the actor gradient, measured).

The training windows are the measurement (no separate evaluation rollout): it costs no
second compiled program, and the gradient's own compile is most of the test's time.

Measured (this config, seed 0, 2026-12-02, physics substeps rematerialized), mean reward
per step, iterations 2-6 -> 26-30:
    with the actor gradient            0.554 -> 0.672 (+0.12); falls per window 7.6 -> 7.4
    actor gradient zeroed (mutation)   0.448 -> 0.427 (-0.02); falls per window 8.8 -> 7.4
so the margin below separates the two with room on both sides. The falls fall too, but
not by enough to separate the two within 30 iterations, so they are printed, not asserted.
"""

import dataclasses

import numpy as np
import pytest

from bcg_train.bcg.config import Estimator
from bcg_train.learn.config import SHACConfig
from bcg_train.learn.shac import SHAC
from bcg_train.sim.jax_setup import enable_compilation_cache
from bcg_train.tasks.hopper import HopperConfig, HopperTask

pytestmark = pytest.mark.slow  # compiles MJX programs

enable_compilation_cache()

ITERATIONS = 30
WINDOW = 5  # iterations averaged at each end
RETURN_GAIN = 0.05  # mean reward per step (rewards are <= 1)

SHORT = SHACConfig(
    num_envs=16, horizon=16, iterations=ITERATIONS, actor_hidden=(32, 32), critic_hidden=(32, 32), actor_lr=5e-3,
    critic_lr=2e-3, critic_iterations=4, critic_minibatches=2, actor_output_scale=1.0,
)


def train_short(shac_class=SHAC) -> tuple[np.ndarray, np.ndarray, float]:
    """Per iteration: mean reward per step and falls of the training window; and the bundled steps in all."""
    cfg = HopperConfig(contact="stiff")
    cfg = dataclasses.replace(cfg, bcg=dataclasses.replace(cfg.bcg, mode=Estimator.BCG, bundle_slots=4))
    shac = shac_class(HopperTask(cfg), SHORT, num_devices=1)
    state = shac.init(0)
    step = shac.jit_iteration(state)
    rewards, falls, bundled = [], [], 0.0
    for _ in range(ITERATIONS):
        state, metrics = step(state)
        rewards.append(float(metrics["reward"]))
        falls.append(float(metrics["fell"]) * SHORT.num_envs * SHORT.horizon)
        bundled += float(metrics["bundled"])
    return np.asarray(rewards), np.asarray(falls), bundled


def test_shac_bcg_raises_the_return_of_a_random_policy_within_a_few_iterations():
    rewards, falls, bundled = train_short()
    first, last = rewards[1 : 1 + WINDOW].mean(), rewards[-WINDOW:].mean()
    print(f"return {first:.3f} -> {last:.3f}, falls per window {falls[1 : 1 + WINDOW].mean():.1f} -> "
          f"{falls[-WINDOW:].mean():.1f}, bundled {bundled:.2f}")

    assert bundled > 0, "no step was bundled: this is not testing BCG"
    assert falls[1 : 1 + WINDOW].sum() >= 10, "the random policy should fall often"
    assert last >= first + RETURN_GAIN, (rewards.round(3).tolist(), falls.tolist())
