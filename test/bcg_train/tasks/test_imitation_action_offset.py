"""The imitation task's drive action under each action offset (no MJX compile: plain jnp)."""

import jax.numpy as jnp
import numpy as np

from bcg_robot.config import load_robot_config
from bcg_train.tasks.config import ImitationConfig
from bcg_train.tasks.imitation import ImitationTask

ROBOT = load_robot_config()


def _task(offset):
    return ImitationTask(ImitationConfig(motion="models/motions/squat.csv", action_offset=offset), ROBOT)


def test_a_zero_action_relative_to_the_reference_drives_to_the_next_frame_of_the_clip():
    task = _task("reference")
    table = np.asarray(task.ref_tracked.joint_pos)
    frames = jnp.asarray([0, 100, task.num_frames - 1])
    action = jnp.zeros((3, ROBOT.num_joints)).at[1, 3].set(0.4)
    targets = task.default_pose + task.action_scale * task.drive_action(action, frames)
    expected = table[[1, 101, 0]].copy()
    expected[1, 3] += task.action_scale * 0.4
    np.testing.assert_allclose(np.asarray(targets), expected, atol=1e-5)
    # a fresh episode (what a late first step applies) holds the pose of its own frame
    held = task.default_pose + task.action_scale * task._held_targets(frames)
    np.testing.assert_allclose(np.asarray(held), table[[0, 100, task.num_frames - 1]], atol=1e-5)


def test_relative_to_the_default_pose_the_action_is_the_drive_action():
    task = _task("default_pose")
    action = jnp.asarray(np.random.default_rng(0).normal(size=(2, ROBOT.num_joints)), jnp.float32)
    assert task.reference_table is None
    np.testing.assert_array_equal(np.asarray(task.drive_action(action, jnp.asarray([0, 5]))), np.asarray(action))
    assert not np.asarray(task._held_targets(jnp.asarray([0, 5]))).any()
