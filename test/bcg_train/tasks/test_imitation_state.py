"""The imitation task's state as checkpoints hold it: one saved before a field existed still loads."""

import pickle
from pathlib import Path

import jax
import numpy as np

from bcg_train.learn.train import load_checkpoint
from bcg_train.tasks.imitation import ImitationState

ROOT = Path(__file__).resolve().parents[3]
# saved on 2026-12-04 before ImitationState had recovery_left (task.push_recovery)
OLD_CHECKPOINT = ROOT / "docs/results/squat-mirror-loss-2026-12-04/checkpoint_000300.pkl"


def test_a_checkpoint_saved_before_push_recovery_resumes_with_no_window_open():
    env = load_checkpoint(OLD_CHECKPOINT).state.env
    assert isinstance(env, ImitationState)
    np.testing.assert_array_equal(np.asarray(env.recovery_left), np.zeros(np.shape(env.t), np.int32))
    # a whole pytree again, recovery_left among its leaves
    assert any(leaf is env.recovery_left for leaf in jax.tree_util.tree_leaves(env))
    # a state with the field keeps its values through a pickle round trip
    open_window = ImitationState(**{**vars(env), "recovery_left": np.full(np.shape(env.t), 7, np.int32)})
    np.testing.assert_array_equal(pickle.loads(pickle.dumps(open_window)).recovery_left, 7)
