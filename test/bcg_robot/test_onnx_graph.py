"""The deployable ONNX graph (bcg_robot.onnx_graph) against its numpy reference."""

import numpy as np
import onnxruntime as ort
import pytest

from bcg_robot.config import load_robot_config
from bcg_robot.contract import INPUT_NAMES, OUTPUT_NAMES, PolicyContract
from bcg_robot.observation import observation_size, raw_input_sizes
from bcg_robot.onnx_graph import DenseLayer, PolicyWeights, default_pose_weights, forward_numpy, save_policy_onnx


@pytest.fixture(scope="module")
def robot():
    return load_robot_config()


def _random_weights(rng, n_obs, n_act):
    layers = (
        DenseLayer(rng.normal(size=(n_obs, 32)) * 0.2, rng.normal(size=32), rng.normal(size=32), rng.normal(size=32)),
        DenseLayer(rng.normal(size=(32, 16)) * 0.2, rng.normal(size=16)),
        DenseLayer(rng.normal(size=(16, n_act)) * 0.2, rng.normal(size=n_act), elu=False),
    )
    return PolicyWeights(rng.normal(size=n_obs), rng.uniform(0.5, 2.0, size=n_obs), layers, obs_clip=3.0, action_clip=2.0)


def _random_raw(rng, n, batch=4):
    raw = {k: rng.normal(size=(batch, v)) for k, v in raw_input_sizes(n).items()}
    raw["imu_quat"] /= np.linalg.norm(raw["imu_quat"], axis=1, keepdims=True)
    raw["phase"] = rng.uniform(size=(batch, 1))
    return raw


def test_onnx_graph_matches_numpy_reference(robot, tmp_path):
    rng = np.random.default_rng(0)
    contract = PolicyContract.for_robot(robot)
    weights = _random_weights(rng, observation_size(contract.observation_spec, 29), 29)
    path = save_policy_onnx(tmp_path / "policy.onnx", contract, weights)
    session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    assert [i.name for i in session.get_inputs()] == list(INPUT_NAMES)
    assert [o.name for o in session.get_outputs()] == list(OUTPUT_NAMES)
    assert PolicyContract.from_metadata(session.get_modelmeta().custom_metadata_map, str(path)) == contract
    raw = _random_raw(rng, 29)
    targets, action = session.run(list(OUTPUT_NAMES), {k: v.astype(np.float32) for k, v in raw.items()})
    ref_targets, ref_action = forward_numpy(contract, weights, raw)
    np.testing.assert_allclose(action, ref_action, atol=1e-5)
    np.testing.assert_allclose(targets, ref_targets, atol=1e-5)
    assert np.abs(action).max() <= 2.0 + 1e-6  # action clip is in the graph


def test_default_pose_policy_holds_the_default_pose(robot, tmp_path):
    contract = PolicyContract.for_robot(robot)
    path = save_policy_onnx(tmp_path / "hold.onnx", contract, default_pose_weights(contract))
    session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    raw = _random_raw(np.random.default_rng(2), 29, batch=1)
    targets, action = session.run(None, {k: v.astype(np.float32) for k, v in raw.items()})
    np.testing.assert_allclose(targets[0], robot.default_pose, atol=1e-6)
    assert not action.any()
