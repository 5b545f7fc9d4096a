"""ONNX export of a SHAC actor + normalizer: onnxruntime matches the JAX policy within 1e-5."""

import jax
import jax.numpy as jnp
import numpy as np
import onnx
import onnxruntime as ort
import pytest

from bcg_robot.config import load_robot_config
from bcg_robot.contract import PolicyContract
from bcg_robot.observation import observation_size, raw_input_sizes
from bcg_train.export.policy import export_onnx, jax_policy_on_raw, policy_contract
from bcg_train.learn.config import motion_sha256, source_commit
from bcg_train.learn.config import SHACConfig, TrainConfig, config_hash
from bcg_train.learn.networks import RunningStats, init_mlp

ROBOT = load_robot_config()


def _trained_like(seed: int = 0):
    cfg = TrainConfig(shac=SHACConfig(actor_hidden=(64, 32), obs_clip=5.0, action_clip=2.0))
    n_obs = observation_size(cfg.task.observation_spec, ROBOT.num_joints)
    k1, k2, k3, k4 = jax.random.split(jax.random.PRNGKey(seed), 4)
    actor = init_mlp(k1, (n_obs, 64, 32, ROBOT.num_joints), output_scale=1.0)
    # non-trivial LayerNorm parameters and normalizer statistics
    actor[0]["ln_scale"] = 1.0 + 0.1 * jax.random.normal(k2, (64,))
    actor[1]["ln_bias"] = 0.1 * jax.random.normal(k3, (32,))
    stats = RunningStats.create(n_obs).update(jax.random.normal(k4, (256, n_obs)) * 2.0 + 0.5)
    return cfg, actor, stats


def _raw_batch(rng: np.random.Generator, batch: int) -> dict[str, np.ndarray]:
    sizes = raw_input_sizes(ROBOT.num_joints)
    raw = {name: rng.normal(size=(batch, size)).astype(np.float32) for name, size in sizes.items()}
    q = rng.normal(size=(batch, 4))
    raw["imu_quat"] = (q / np.linalg.norm(q, axis=1, keepdims=True)).astype(np.float32)
    raw["joint_pos"] = (ROBOT.default_q + 0.3 * rng.normal(size=(batch, ROBOT.num_joints))).astype(np.float32)
    raw["phase"] = rng.uniform(0, 1, size=(batch, 1)).astype(np.float32)
    return raw


def test_onnx_matches_jax_policy(tmp_path):
    cfg, actor, stats = _trained_like()
    path = export_onnx(tmp_path / "p.onnx", cfg, ROBOT, actor, stats, "squat", 8.02)
    session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    contract = policy_contract(cfg, ROBOT, "squat", 8.02)
    raw = _raw_batch(np.random.default_rng(1), 64)
    targets_onnx, action_onnx = session.run(["joint_targets", "action"], raw)
    targets_jax, action_jax = jax_policy_on_raw(contract, actor, stats, cfg.shac.obs_clip, cfg.shac.action_clip, raw)
    np.testing.assert_allclose(action_onnx, np.asarray(action_jax), atol=1e-5, rtol=0)
    np.testing.assert_allclose(targets_onnx, np.asarray(targets_jax), atol=1e-5, rtol=0)
    assert np.abs(action_onnx).max() > 0.1  # the policy is not trivially zero
    assert (np.abs(action_onnx) <= cfg.shac.action_clip + 1e-6).all()


def test_contract_metadata(tmp_path):
    cfg, actor, stats = _trained_like()
    path = export_onnx(tmp_path / "p.onnx", cfg, ROBOT, actor, stats, "squat", 8.02)
    model = onnx.load(str(path))
    meta = {p.key: p.value for p in model.metadata_props}
    contract = PolicyContract.from_metadata(meta, str(path))
    contract.check_against(ROBOT, str(path))
    assert contract.motion_id == "squat" and contract.motion_length_s == pytest.approx(8.02)
    assert contract.config_hash == config_hash(cfg) and len(contract.config_hash) == 16
    assert contract.source_commit == source_commit() and len(contract.source_commit) >= 40
    assert contract.motion_sha256 == motion_sha256(cfg) and len(contract.motion_sha256) == 64
    # exported from a checkpoint that recorded its training's commit: that commit, not the exporter's
    trained = export_onnx(tmp_path / "t.onnx", cfg, ROBOT, actor, stats, "squat", 8.02, trained_at="f" * 40)
    assert {p.key: p.value for p in onnx.load(str(trained)).metadata_props}["source_commit"] == "f" * 40
    assert contract.joint_names == ROBOT.joint_names
    assert model.opset_import[0].version >= 17
    assert [i.name for i in model.graph.input] == ["imu_quat", "imu_gyro", "joint_pos", "joint_vel", "last_action", "phase"]
    assert [o.name for o in model.graph.output] == ["joint_targets", "action"]
    assert not any(init.data_location == onnx.TensorProto.EXTERNAL for init in model.graph.initializer)


def test_onnx_matches_jax_policy_relative_to_the_reference(tmp_path):
    import dataclasses

    cfg, actor, stats = _trained_like(1)
    cfg = dataclasses.replace(cfg, task=dataclasses.replace(cfg.task, action_offset="reference"))
    table = ROBOT.default_q + 0.2 * np.random.default_rng(3).normal(size=(401, ROBOT.num_joints))
    with pytest.raises(ValueError, match="without a reference table"):
        export_onnx(tmp_path / "missing.onnx", cfg, ROBOT, actor, stats, "squat", 8.02)
    path = export_onnx(tmp_path / "p.onnx", cfg, ROBOT, actor, stats, "squat", 8.02, table)
    session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    contract = policy_contract(cfg, ROBOT, "squat", 8.02)
    assert contract.action_offset == "reference"
    raw = _raw_batch(np.random.default_rng(2), 64)
    targets_onnx, action_onnx = session.run(["joint_targets", "action"], raw)
    targets_jax, action_jax = jax_policy_on_raw(contract, actor, stats, cfg.shac.obs_clip, cfg.shac.action_clip, raw, table)
    np.testing.assert_allclose(action_onnx, np.asarray(action_jax), atol=1e-5, rtol=0)
    np.testing.assert_allclose(targets_onnx, np.asarray(targets_jax), atol=2e-5, rtol=0)
    # the offset is the table, not the default pose
    assert np.abs(targets_onnx - (ROBOT.default_q + np.asarray(contract.action_scale) * action_onnx)).max() > 0.1
