"""Loading policies: the contract inside the ONNX file is checked against the robot."""

import dataclasses

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from bcg_robot.config import load_robot_config
from bcg_robot.contract import INPUT_NAMES, PolicyContract
from bcg_robot.errors import ContractError
from bcg_robot.observation import raw_input_sizes, raw_inputs
from bcg_robot.onnx_graph import forward_numpy
from bcg_robot.onnx_policy import OnnxPolicy

from bcg_sim_bridge.harness.sample_policies import random_weights, truncate, write_policy


@pytest.fixture(scope="module")
def robot():
    return load_robot_config(check_model=False)


def raw_state(robot, rng):
    n = robot.num_joints
    quat = rng.normal(size=4)
    return raw_inputs(quat / np.linalg.norm(quat), rng.normal(size=3), robot.default_q + 0.1 * rng.normal(size=n),
                      rng.normal(size=n), 0.3 * rng.normal(size=n), np.array([0.3]))


def test_policy_runs_like_the_reference_graph(robot, tmp_path):
    path = write_policy(tmp_path / "random.onnx", robot, "random")
    policy = OnnxPolicy.load(path, robot)
    assert policy.session.get_session_options().intra_op_num_threads == 1
    contract = PolicyContract.for_robot(robot)
    raw = raw_state(robot, np.random.default_rng(1))
    targets, action = policy.run(raw)
    ref_targets, ref_action = forward_numpy(contract, random_weights(contract), raw)
    assert np.allclose(targets, ref_targets, atol=1e-4) and np.allclose(action, ref_action, atol=1e-4)
    assert not np.allclose(targets, robot.default_q, atol=1e-3)


def bad_names(robot):
    names = list(robot.joint_names)
    names[0], names[6] = names[6], names[0]
    return tuple(names)


@pytest.mark.parametrize("case,match", [
    ("truncated", "not a loadable ONNX model"),
    ("joint_count", "policy output 'joint_targets' has 23 values, the robot has 29 joints"),
    ("joint_count_no_metadata", "policy output 'joint_targets' has 23 values, the robot has 29 joints"),
    ("kp_x10", "policy kp of 'left_hip_pitch' is 1000, robot config has 100 (must be equal to it: policy_gain_ratio)"),
    ("kd_half", "policy kd of 'left_hip_pitch' is 1, robot config has 2"),
    ("joint_names", "joint 0 is 'right_hip_pitch' in the policy but 'left_hip_pitch' on the robot"),
    ("control_dt", "policy control_dt 0.01 s != robot control_dt 0.02 s"),
    ("no_metadata", "policy metadata lacks 'robot'"),
    ("missing", "policy file not found"),
])
def test_bad_policies_are_one_line_errors_naming_the_file(robot, tmp_path, case, match):
    path = tmp_path / f"{case}.onnx"
    n23 = 23
    if case == "truncated":
        truncate(write_policy(tmp_path / "ok.onnx", robot), path)
    elif case == "joint_count":
        c = PolicyContract.for_robot(robot)
        write_policy(path, robot, joint_names=c.joint_names[:n23], default_pose=c.default_pose[:n23], kp=c.kp[:n23],
                     kd=c.kd[:n23], action_scale=c.action_scale[:n23])
    elif case == "joint_count_no_metadata":
        c = PolicyContract.for_robot(robot)
        model = onnx.load(str(write_policy(tmp_path / "ok23.onnx", robot, joint_names=c.joint_names[:n23],
                                           default_pose=c.default_pose[:n23], kp=c.kp[:n23], kd=c.kd[:n23],
                                           action_scale=c.action_scale[:n23])))
        del model.metadata_props[:]
        onnx.save(model, str(path))
    elif case == "kp_x10":
        write_policy(path, robot, kp=tuple(10 * k for k in robot.kp))
    elif case == "kd_half":
        write_policy(path, robot, kd=tuple(0.5 * k for k in robot.kd))
    elif case == "joint_names":
        write_policy(path, robot, joint_names=bad_names(robot))
    elif case == "control_dt":
        write_policy(path, robot, control_dt=0.01)
    elif case == "no_metadata":
        model = onnx.load(str(write_policy(tmp_path / "ok.onnx", robot)))
        del model.metadata_props[:]
        onnx.save(model, str(path))
    with pytest.raises(ContractError) as err:
        OnnxPolicy.load(path, robot)
    message = str(err.value)
    assert "\n" not in message and message.startswith(str(path)) and match in message


def _with_metadata(path, out, **changes):
    """The exported file with some metadata entries rewritten (the graph untouched)."""
    model = onnx.load(str(path))
    for prop in model.metadata_props:
        if prop.key in changes:
            prop.value = changes[prop.key]
    onnx.save(model, str(out))
    return out


def test_metadata_that_disagrees_with_the_graph_or_the_robot_is_refused(robot, tmp_path):
    """The node ramps to and holds the metadata's default pose; the graph acts around its own.
    A file whose metadata was edited after export must not load, whatever its action offset."""
    import json

    path = write_policy(tmp_path / "random.onnx", robot, "random")
    OnnxPolicy.load(path, robot)
    pose = list(robot.default_pose)
    j = robot.joint_names.index("left_knee")
    pose[j] += 0.2  # still inside the joint limits
    edited = _with_metadata(path, tmp_path / "pose.onnx", default_pose=json.dumps(pose))
    moved = rf"pose.onnx: policy default pose of 'left_knee' is {pose[j]:.6g}, robot config has {robot.default_pose[j]:.6g}"
    with pytest.raises(ContractError, match=moved):
        OnnxPolicy.load(edited, robot)
    # with a reference offset the graph holds the clip's table, so only the robot config can tell
    reference = _with_metadata(path, tmp_path / "pose.onnx", default_pose=json.dumps(pose), action_offset="reference",
                               motion_length_s="3.0")
    with pytest.raises(ContractError, match=moved):
        OnnxPolicy.load(reference, robot)
    # a graph built around another pose, its metadata giving the robot's
    around = write_policy(tmp_path / "around.onnx", robot, "random", default_pose=tuple(pose))
    relabelled = _with_metadata(around, tmp_path / "relabelled.onnx", default_pose=json.dumps(list(robot.default_pose)))
    with pytest.raises(ContractError, match=r"relabelled.onnx: policy graph acts around .* for 'left_knee', its metadata "
                                            r"says default pose .*: metadata and graph disagree"):
        OnnxPolicy.load(relabelled, robot)
    other = _with_metadata(path, tmp_path / "other.onnx", robot="h1")
    with pytest.raises(ContractError, match="other.onnx: policy was exported for robot 'h1', the robot config is 'g1_29dof'"):
        OnnxPolicy.load(other, robot)
    scaled = write_policy(tmp_path / "scaled.onnx", robot, "random", action_scale=(0.5,) * robot.num_joints)
    with pytest.raises(ContractError, match="policy action_scale of 'left_hip_pitch' is 0.5, robot config has 0.25"):
        OnnxPolicy.load(scaled, robot)
    # a NaN policy loads: the control loop's watchdog trips on its first output (sim2sim's nan scenario)
    assert OnnxPolicy.load(write_policy(tmp_path / "nan.onnx", robot, "nan"), robot).contract.num_joints == robot.num_joints


def _reference_policy(robot, path, frames=50, action_scale=None):
    """A random policy acting around a clip table of ``frames`` control steps (its metadata says so)."""
    from bcg_robot.onnx_graph import save_policy_onnx
    from bcg_sim_bridge.harness.sample_policies import random_weights

    contract = dataclasses.replace(PolicyContract.for_robot(robot), action_offset="reference",
                                   motion_length_s=frames * robot.control_dt,
                                   **({} if action_scale is None else {"action_scale": (action_scale,) * robot.num_joints}))
    table = np.asarray(robot.default_q) + 0.1 * np.sin(np.linspace(0, 6, frames))[:, None]
    weights = dataclasses.replace(random_weights(contract), reference_joint_pos=table)
    return save_policy_onnx(path, contract, weights)


def test_a_reference_policys_table_and_scale_must_be_its_metadatas(robot, tmp_path):
    """With a reference offset the graph's offset is the clip's table, so the default-pose check says
    nothing: a table of another length than motion_length_s (the node's phase would run through it at
    the wrong speed) or a graph scaling its action otherwise than the metadata loaded."""
    import json

    path = _reference_policy(robot, tmp_path / "ref.onnx")
    assert OnnxPolicy.load(path, robot).contract.motion_length_s == pytest.approx(1.0)
    longer = _with_metadata(path, tmp_path / "longer.onnx", motion_length_s="1.02")
    with pytest.raises(ContractError, match=r"longer.onnx: the graph's reference table has 50 frames, its metadata's "
                                            r"motion_length_s 1.02 s is 51 control steps: metadata and graph disagree"):
        OnnxPolicy.load(longer, robot)
    no_table = _with_metadata(write_policy(tmp_path / "plain.onnx", robot, "random"), tmp_path / "no_table.onnx",
                              action_offset="reference", motion_length_s="1.0")
    with pytest.raises(ContractError, match=r"no_table.onnx: action_offset 'reference', but the graph has no reference table"):
        OnnxPolicy.load(no_table, robot)
    doubled = _with_metadata(_reference_policy(robot, tmp_path / "half.onnx", action_scale=0.5), tmp_path / "doubled.onnx",
                             action_scale=json.dumps([robot.action_scale] * robot.num_joints))
    with pytest.raises(ContractError, match=r"doubled.onnx: policy graph scales '\w+' by 0.5, its metadata says action_scale "
                                            r"0.25: metadata and graph disagree"):
        OnnxPolicy.load(doubled, robot)


def test_policy_gains_within_the_configured_ratio_load(robot, tmp_path):
    relaxed = dataclasses.replace(robot, policy_gain_ratio=1.5)
    path = write_policy(tmp_path / "stiffer.onnx", robot, kp=tuple(1.4 * k for k in robot.kp))
    assert np.allclose(OnnxPolicy.load(path, relaxed).contract.kp, 1.4 * robot.kp_array)
    with pytest.raises(ContractError, match=r"within 1.5x of it"):
        OnnxPolicy.load(write_policy(tmp_path / "too_stiff.onnx", robot, kp=tuple(1.6 * k for k in robot.kp)), relaxed)


def write_reshaping_policy(path, robot, output_shape, keep):
    """A graph with the right names and metadata whose outputs are the default pose's first
    ``keep`` values (targets) and as many zeros (action) reshaped to ``output_shape``
    (declared as such, or symbolic)."""
    n, sizes = robot.num_joints, raw_input_sizes(robot.num_joints)
    contract = PolicyContract.for_robot(robot)
    inputs = [helper.make_tensor_value_info(name, TensorProto.FLOAT, ["batch", sizes[name]]) for name in INPUT_NAMES]
    pose = np.asarray(contract.default_pose[:keep], np.float32)
    constants = [numpy_helper.from_array(pose, "pose"), numpy_helper.from_array(np.zeros_like(pose), "zero")]
    if all(isinstance(d, int) for d in output_shape):
        constants.append(numpy_helper.from_array(np.array(output_shape, np.int64), "shape"))
        nodes = []
    else:  # reshaped to phase's runtime shape [batch, 1]: no size for shape inference to find
        nodes = [helper.make_node("Shape", ["phase"], ["shape"])]
    nodes += [helper.make_node("Reshape", [value, "shape"], [out]) for value, out in (("pose", "joint_targets"), ("zero", "action"))]
    outputs = [helper.make_tensor_value_info(out, TensorProto.FLOAT, output_shape) for out in ("joint_targets", "action")]
    model = helper.make_model(helper.make_graph(nodes, "reshaping", inputs, outputs, initializer=constants),
                              opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 9
    helper.set_model_props(model, contract.to_metadata())
    onnx.save(model, str(path))
    return path


@pytest.mark.parametrize("output_shape,keep,match", [
    # one row without its batch axis: run() took its first value and the loop broadcast it to every joint
    ([29], 29, "policy output 'joint_targets' has shape [29], expected [batch, 29]"),
    ([4, 29], 116, None),  # fails below on the fixed batch
    # sizes left symbolic: only an inference shows the one value per state
    (["batch", "n"], 1, "policy output 'joint_targets' has shape [1, 1] for one state, expected [1, 29]"),
])
def test_outputs_that_are_not_one_row_of_joints_per_state_are_refused_at_load(robot, tmp_path, output_shape, keep, match):
    if keep > robot.num_joints:  # a fixed batch of 4: the pose tiled
        path = tmp_path / "batch4.onnx"
        write_reshaping_policy(path, dataclasses.replace(robot), output_shape, robot.num_joints)
        model = onnx.load(str(path))
        tiled = np.tile(np.asarray(PolicyContract.for_robot(robot).default_pose, np.float32), 4)
        model.graph.initializer[0].CopyFrom(numpy_helper.from_array(tiled, "pose"))
        onnx.save(model, str(path))
        match = "policy output 'joint_targets' has a fixed batch of 4, expected 1 or symbolic"
    else:
        path = write_reshaping_policy(tmp_path / "misshapen.onnx", robot, output_shape, keep)
    with pytest.raises(ContractError) as err:
        OnnxPolicy.load(path, robot)
    message = str(err.value)
    assert "\n" not in message and message.startswith(str(path)) and match in message, message


def test_the_reshaping_graph_loads_when_its_outputs_are_one_row_of_joints(robot, tmp_path):
    """The graph of the test above is refused for its shapes alone."""
    path = write_reshaping_policy(tmp_path / "row.onnx", robot, [1, robot.num_joints], robot.num_joints)
    targets, action = OnnxPolicy.load(path, robot).run(raw_state(robot, np.random.default_rng(0)))
    np.testing.assert_allclose(targets, robot.default_q, atol=1e-6)
    assert action.shape == (robot.num_joints,)
