"""Privileged critic inputs (bcg_train.tasks.privileged): each feature's value and scale, numpy and
JAX alike, and unknown or repeated names as config errors."""

import dataclasses

import jax.numpy as jnp
import numpy as np
import pytest

from bcg_robot.errors import ConfigError
from bcg_robot.paths import share_file
from bcg_train.learn.config import load_train_config
from bcg_train.tasks.config import DomainRandomizationConfig
from bcg_train.tasks.privileged import privileged_features, privileged_size
from bcg_train.tasks.rewards import TrackedState

ALL = ("root_lin_vel", "root_height", "domain")
DR = DomainRandomizationConfig(enabled=True, friction=(0.3, 1.2), base_mass_delta=(-3.0, 3.0), gain_scale=(0.9, 1.1))


def _state(yaw: float, lin_vel, height: float, batch: int = 2) -> TrackedState:
    quat = np.array([np.cos(yaw / 2), 0.0, 0.0, np.sin(yaw / 2)])
    return TrackedState(
        root_pos=np.tile([0.3, -0.2, height], (batch, 1)), root_quat=np.tile(quat, (batch, 1)),
        root_lin_vel=np.tile(lin_vel, (batch, 1)), root_ang_vel=np.zeros((batch, 3)),
        joint_pos=np.zeros((batch, 29)), joint_vel=np.zeros((batch, 29)), key_body_pos=np.zeros((batch, 5, 3)),
    )


def test_features_in_the_heading_frame_and_scaled_to_order_one():
    # facing world +y (yaw 90 deg), moving along world +y and -x: forward 1 m/s, left 0.5 m/s
    robot, ref = _state(np.pi / 2, [-0.5, 1.0, 0.2], 0.70), _state(0.0, [0.0, 0.0, 0.0], 0.75)
    f = privileged_features(ALL, robot, ref, friction=1.2, mass_delta=0.0, gain_scale=np.array([0.9, 1.0]), late=np.array([True, False]), dr=DR)
    assert f.shape == (2, privileged_size(ALL)) == (2, 8)
    np.testing.assert_allclose(f[:, :3], [[1.0, 0.5, 0.2]] * 2, atol=1e-12)
    np.testing.assert_allclose(f[:, 3], -0.5)  # 5 cm below the reference, in decimetres
    np.testing.assert_allclose(f[:, 4:], [[1.0, 0.0, -1.0, 1.0], [1.0, 0.0, 0.0, 0.0]], atol=1e-12)  # DR ranges -> [-1, 1]
    # in the order named; without DR the domain columns are zeros; none named: width 0
    g = privileged_features(("domain", "root_height"), robot, ref, 1.2, 0.0, 1.0, False, dataclasses.replace(DR, enabled=False))
    np.testing.assert_allclose(g, [[0, 0, 0, 0, -0.5]] * 2)
    assert privileged_features((), robot, ref, 1.0, 0.0, 1.0, False, DR).shape == (2, 0)


def test_numpy_and_jax_agree():
    robot, ref = _state(-2.1, [0.3, -0.4, 0.1], 0.6, batch=3), _state(0.4, [0.0, 0.1, 0.0], 0.7, batch=3)
    j = lambda s: TrackedState(**{f.name: jnp.asarray(getattr(s, f.name), jnp.float32) for f in dataclasses.fields(TrackedState)})
    a = privileged_features(ALL, robot, ref, 0.5, -1.0, 1.05, np.array([0, 1, 0]), DR)
    b = privileged_features(ALL, j(robot), j(ref), jnp.float32(0.5), jnp.float32(-1.0), jnp.float32(1.05), jnp.array([0, 1, 0]), DR, xp=jnp)
    np.testing.assert_allclose(np.asarray(b), a, atol=1e-5)
    # the speed is the world speed, turned
    np.testing.assert_allclose(np.linalg.norm(a[:, :3], axis=1), np.linalg.norm([0.3, -0.4, 0.1]), rtol=1e-12)


def test_unknown_or_repeated_features_are_config_errors(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text(f"extends: {share_file('config/train/squat.yaml')}\ntask:\n  critic_privileged: [root_lin_vel, base_mass]\n")
    with pytest.raises(ConfigError, match="critic_privileged: unknown feature 'base_mass'"):
        load_train_config(bad)
    bad.write_text(f"extends: {share_file('config/train/squat.yaml')}\ntask:\n  critic_privileged: [domain, domain]\n")
    with pytest.raises(ConfigError, match="listed twice"):
        load_train_config(bad)
    good = tmp_path / "good.yaml"
    good.write_text(f"extends: {share_file('config/train/squat.yaml')}\ntask:\n  critic_privileged: [root_lin_vel, domain]\n")
    assert load_train_config(good).task.critic_privileged == ("root_lin_vel", "domain")
