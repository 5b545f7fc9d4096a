"""Policy contract metadata round trip and robot checks, observation layout, wire and remote codecs."""

import dataclasses

import numpy as np
import pytest

from bcg_robot.config import load_robot_config
from bcg_robot.contract import PolicyContract
from bcg_robot.errors import ContractError
from bcg_robot.observation import build_observation, observation_size, projected_gravity, raw_input_sizes, raw_inputs
from bcg_robot.remote import RemoteState, decode_remote, encode_remote
from bcg_robot.wire import LowCommand, command_from_flat, command_to_flat


@pytest.fixture(scope="module")
def robot():
    return load_robot_config()


def test_metadata_round_trip(robot):
    contract = PolicyContract.for_robot(robot, motion_id="squat", motion_length_s=4.0, config_hash="abc")
    assert PolicyContract.from_metadata(contract.to_metadata(), "p.onnx") == contract


@pytest.mark.parametrize(
    "change, message",
    [
        (lambda c, r: dataclasses.replace(c, joint_names=c.joint_names[::-1]), "joint 0 is 'right_wrist_yaw' in the policy"),
        (lambda c, r: dataclasses.replace(c, joint_names=c.joint_names[:23], default_pose=c.default_pose[:23],
                                          kp=c.kp[:23], kd=c.kd[:23], action_scale=c.action_scale[:23]),
         "policy has 23 joints, robot 'g1_29dof' has 29"),
        (lambda c, r: dataclasses.replace(c, control_dt=0.005), "policy control_dt 0.005 s != robot control_dt 0.02 s"),
        (lambda c, r: dataclasses.replace(c, observation_spec=("joint_pos_rel", "base_lin_vel")), "unknown observation feature 'base_lin_vel'"),
        (lambda c, r: dataclasses.replace(c, observation_spec=()), "policy observation_spec: observation spec is empty"),
        (lambda c, r: dataclasses.replace(c, kp=c.kp[:5]), "policy 'kp' has 5 values for 29 joints"),
        (lambda c, r: dataclasses.replace(c, default_pose=(9.0,) + c.default_pose[1:]), "default pose of 'left_hip_pitch'"),
        (lambda c, r: dataclasses.replace(c, motion_length_s=float("nan")), "policy motion_length_s nan is not a number >= 0"),
        (lambda c, r: dataclasses.replace(c, motion_length_s=-2.0), "policy motion_length_s -2.0 is not a number >= 0"),
        (lambda c, r: dataclasses.replace(c, action_scale=c.action_scale[:-1] + (100.0,)),
         "policy action_scale of 'right_wrist_yaw' is 100, robot config has 0.25"),
    ],
)
def test_contract_mismatches_are_named(robot, change, message):
    contract = change(PolicyContract.for_robot(robot), robot)
    with pytest.raises(ContractError, match=message.replace("(", r"\(").replace(")", r"\)")) as info:
        contract.check_against(robot, "policy.onnx")
    assert str(info.value).startswith("policy.onnx: ")


@pytest.mark.parametrize("gain, joint", [("kp", "left_knee"), ("kd", "right_ankle_roll")])
def test_a_policy_gain_that_differs_from_the_robot_config_is_refused(robot, gain, joint):
    j = robot.joint_names.index(joint)
    wrong = list(getattr(robot, gain))
    wrong[j] = 1.5 * wrong[j] + 1.0
    contract = PolicyContract.for_robot(robot, **{gain: tuple(wrong)})
    with pytest.raises(ContractError) as info:
        contract.check_against(robot, "policy.onnx")
    message = str(info.value)
    assert "\n" not in message and message.startswith("policy.onnx: ")
    assert f"policy {gain} of '{joint}' is {wrong[j]:g}, robot config has {getattr(robot, gain)[j]:g}" in message


def test_the_robot_config_gains_pass_the_contract_check(robot):
    PolicyContract.for_robot(robot).check_against(robot, "policy.onnx")


def test_missing_metadata_is_an_error(robot):
    meta = PolicyContract.for_robot(robot).to_metadata()
    del meta["joint_names"]
    with pytest.raises(ContractError, match="lacks 'joint_names'"):
        PolicyContract.from_metadata(meta, "x.onnx")
    meta = PolicyContract.for_robot(robot).to_metadata()
    meta["kp"] = "[1, 2"
    with pytest.raises(ContractError, match="'kp' is malformed"):
        PolicyContract.from_metadata(meta, "x.onnx")
    meta["kp"] = "[" + ", ".join(["1" + "0" * 400] * robot.num_joints) + "]"  # float() of it: OverflowError
    with pytest.raises(ContractError, match="x.onnx: policy metadata 'kp' is malformed: int too large"):
        PolicyContract.from_metadata(meta, "x.onnx")
    meta["kp"] = "[" * 100_000 + "]" * 100_000  # json.loads recurses once per level: RecursionError
    with pytest.raises(ContractError, match="^x.onnx: policy metadata 'kp' is malformed: nested too deeply$"):
        PolicyContract.from_metadata(meta, "x.onnx")


def test_projected_gravity_of_known_orientations():
    np.testing.assert_allclose(projected_gravity(np.array([1.0, 0, 0, 0])), [0, 0, -1], atol=1e-12)
    # pitched forward by 90 degrees about y: gravity points along body +x... rotated frame sees (1, 0, 0)
    q = np.array([np.cos(np.pi / 4), 0, np.sin(np.pi / 4), 0])
    np.testing.assert_allclose(projected_gravity(q), [1, 0, 0], atol=1e-12)


def _random_raw(rng, n, batch=4):
    raw = {k: rng.normal(size=(batch, v)) for k, v in raw_input_sizes(n).items()}
    raw["imu_quat"] /= np.linalg.norm(raw["imu_quat"], axis=1, keepdims=True)
    raw["phase"] = rng.uniform(size=(batch, 1))
    return raw


def test_observation_layout_in_graph_matches_builder(robot):
    """Feature order and offsets: a policy reading one feature sees exactly the builder's values."""
    rng = np.random.default_rng(1)
    contract = PolicyContract.for_robot(robot)
    raw = _random_raw(rng, 29, batch=1)
    obs = build_observation(contract.observation_spec, raw, np.asarray(contract.default_pose))
    assert obs.shape == (1, observation_size(contract.observation_spec, 29))
    # joint_pos_rel starts after gravity (3) and gyro (3)
    np.testing.assert_allclose(obs[0, 6:35], raw["joint_pos"][0] - np.asarray(contract.default_pose))


def test_raw_inputs_are_keyed_by_the_onnx_input_names(robot):
    n = robot.num_joints
    arrays = [np.full(size, float(i)) for i, size in enumerate(raw_input_sizes(n).values())]
    raw = raw_inputs(*arrays)
    assert tuple(raw) == tuple(raw_input_sizes(n))
    for i, (name, size) in enumerate(raw_input_sizes(n).items()):
        assert raw[name].shape == (size,) and (raw[name] == i).all()


def test_command_wire_round_trip():
    rng = np.random.default_rng(3)
    cmd = LowCommand(*(rng.normal(size=29) for _ in range(5)))
    back = command_from_flat(command_to_flat(cmd), 29)
    for a, b in zip(cmd.as_matrix(), back.as_matrix()):
        np.testing.assert_array_equal(a, b)
    with pytest.raises(ValueError, match="expected 145"):
        command_from_flat([0.0] * 10, 29)
    assert LowCommand.damping(np.full(29, 2.0)).is_damping()
    assert not LowCommand.position(np.zeros(29), np.ones(29), np.ones(29)).is_damping()


def test_remote_round_trip():
    state = RemoteState(frozenset({"L2", "B"}), lx=0.5, rx=-0.25, ry=1.0, ly=-1.0)
    raw = encode_remote(state)
    assert len(raw) == 40 and raw[2] == 1 << 5 and raw[3] == 1 << 1
    assert decode_remote(raw) == state
    assert decode_remote(raw).pressed("L2", "B")
