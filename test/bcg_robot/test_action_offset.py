"""Policies relative to the reference motion (bcg_robot.action_offset): lookup, graph, contract."""

import dataclasses

import numpy as np
import onnxruntime as ort
import pytest

from bcg_robot.action_offset import reference_joint_targets
from bcg_robot.config import load_robot_config
from bcg_robot.contract import OUTPUT_NAMES, PolicyContract
from bcg_robot.errors import ContractError
from bcg_robot.observation import raw_input_sizes
from bcg_robot.onnx_graph import PolicyWeights, default_pose_weights, forward_numpy, save_policy_onnx
from bcg_robot.onnx_policy import OnnxPolicy

ROBOT = load_robot_config()
N = ROBOT.num_joints


def _table(frames=7, seed=0):
    rng = np.random.default_rng(seed)
    return ROBOT.default_q + rng.uniform(-0.2, 0.2, size=(frames, N))


def test_lookup_is_the_next_row_at_a_frame_and_wraps_at_the_end():
    table = _table(7)
    for i in range(7):
        got = reference_joint_targets(table, np.array([[i / 7]]))
        np.testing.assert_allclose(got[0], table[(i + 1) % 7], atol=1e-12)


def test_lookup_interpolates_between_rows():
    table = _table(5)
    got = reference_joint_targets(table, np.array([[(4 + 0.25) / 5]]))  # between row 0 (wrapped) and row 1
    np.testing.assert_allclose(got[0], 0.75 * table[0] + 0.25 * table[1], atol=1e-12)


def _reference_policy(tmp_path, table, weights=None):
    contract = PolicyContract.for_robot(ROBOT, motion_id="clip", motion_length_s=table.shape[0] * ROBOT.control_dt, action_offset="reference")
    weights = weights or default_pose_weights(contract)
    weights = dataclasses.replace(weights, reference_joint_pos=table)
    return contract, weights, save_policy_onnx(tmp_path / "ref.onnx", contract, weights)


def test_a_zero_action_reference_policy_outputs_the_clip_in_the_graph_as_in_numpy(tmp_path):
    table = _table(50)
    contract, weights, path = _reference_policy(tmp_path, table)
    session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    rng = np.random.default_rng(1)
    raw = {k: rng.normal(size=(6, v)) for k, v in raw_input_sizes(N).items()}
    raw["phase"] = np.array([[0.0], [0.1], [0.5], [0.98], [0.999], [0.2345]])
    targets, action = session.run(list(OUTPUT_NAMES), {k: v.astype(np.float32) for k, v in raw.items()})
    ref_targets, _ = forward_numpy(contract, weights, raw)
    np.testing.assert_allclose(targets, ref_targets, atol=1e-5)
    np.testing.assert_allclose(targets[0], table[1], atol=1e-6)
    assert not action.any()
    # the loader reads the contract back with its offset
    assert OnnxPolicy.load(path, ROBOT).contract.action_offset == "reference"


def test_contract_and_weights_must_agree_on_the_offset(tmp_path):
    contract = PolicyContract.for_robot(ROBOT, motion_id="clip", motion_length_s=1.0, action_offset="reference")
    with pytest.raises(ValueError, match="without a reference table"):
        save_policy_onnx(tmp_path / "a.onnx", contract, default_pose_weights(contract))
    plain = PolicyContract.for_robot(ROBOT)
    with pytest.raises(ValueError, match="with a reference table"):
        save_policy_onnx(tmp_path / "b.onnx", plain, dataclasses.replace(default_pose_weights(plain), reference_joint_pos=_table()))
    with pytest.raises(ValueError, match="shape"):
        save_policy_onnx(tmp_path / "c.onnx", contract, dataclasses.replace(default_pose_weights(contract), reference_joint_pos=_table()[:, :5]))


def test_contract_rejects_an_unknown_offset_and_a_reference_without_motion():
    base = PolicyContract.for_robot(ROBOT)
    with pytest.raises(ContractError, match="unknown action_offset 'clip'"):
        dataclasses.replace(base, action_offset="clip").validate("p.onnx")
    with pytest.raises(ContractError, match="needs a motion"):
        dataclasses.replace(base, action_offset="reference").validate("p.onnx")


def test_a_contract_without_the_field_reads_as_default_pose():
    meta = PolicyContract.for_robot(ROBOT).to_metadata()
    del meta["action_offset"]
    assert PolicyContract.from_metadata(meta, "old.onnx").action_offset == "default_pose"
