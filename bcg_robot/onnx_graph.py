"""Build the deployable ONNX graph of a policy: raw robot state in, joint targets out.

The graph computes the observation exactly as :mod:`bcg_robot.observation` does,
normalizes it with the training statistics, runs the MLP (Linear, optional LayerNorm,
ELU) and scales the action around its offset (:mod:`bcg_robot.action_offset`): the
default pose, or the reference motion's joint table, looked up by phase inside the graph.
Everything the node needs is in one file; the contract travels as metadata (:meth:`PolicyContract.to_metadata`). Only
numpy and onnx are used here: the trainer's exporter, the sim bridge and the tests all
build their policies with :func:`save_policy_onnx`, without JAX or torch.

:func:`forward_numpy` is the reference implementation of the graph, and
:func:`_lower_feature` lowers each observation feature of :mod:`bcg_robot.observation`
to ONNX operators.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from bcg_robot.action_offset import REFERENCE, reference_joint_targets
from bcg_robot.contract import INPUT_NAMES, OUTPUT_NAMES, PolicyContract
from bcg_robot.observation import build_observation, observation_size, raw_input_sizes

OPSET = 17
LAYER_NORM_EPS = 1e-5

# The name (before the builder's "_<index>" suffix) of the initializer holding the reference's joint
# positions, one row a control step, in a graph with ``action_offset: reference``: the loader reads
# its frame count (OnnxPolicy)
REFERENCE_TABLE_NAME = "reference_joint_pos"


@dataclasses.dataclass(frozen=True)
class DenseLayer:
    weight: np.ndarray  # (in, out)
    bias: np.ndarray  # (out,)
    ln_scale: np.ndarray | None = None  # LayerNorm after the linear map, before ELU
    ln_bias: np.ndarray | None = None
    elu: bool = True


@dataclasses.dataclass(frozen=True)
class PolicyWeights:
    obs_mean: np.ndarray
    obs_std: np.ndarray
    layers: tuple[DenseLayer, ...]
    obs_clip: float = 10.0
    action_clip: float = 10.0
    # (F, n) reference joint positions, one row per control step: the action offset of a
    # contract with action_offset 'reference' (bcg_robot.action_offset); None otherwise
    reference_joint_pos: np.ndarray | None = None


def check_offset(contract: PolicyContract, weights: PolicyWeights) -> None:
    """The weights carry a reference table exactly when the contract says the action is relative to it."""
    table = weights.reference_joint_pos
    if (contract.action_offset == REFERENCE) != (table is not None):
        raise ValueError(f"action_offset '{contract.action_offset}' with{'' if table is not None else 'out'} a reference table")
    if table is not None and (np.ndim(table) != 2 or np.shape(table)[1] != contract.num_joints or np.shape(table)[0] < 2):
        raise ValueError(f"reference table of shape {np.shape(table)}, expected (frames >= 2, {contract.num_joints})")
    if table is not None and not np.all(np.isfinite(table)):
        raise ValueError("reference table has a non-finite value")


def default_pose_weights(contract: PolicyContract) -> PolicyWeights:
    """A policy whose action is always 0, i.e. it holds the default pose."""
    n_obs = observation_size(contract.observation_spec, contract.num_joints)
    layer = DenseLayer(np.zeros((n_obs, contract.num_joints)), np.zeros(contract.num_joints), elu=False)
    return PolicyWeights(np.zeros(n_obs), np.ones(n_obs), (layer,))


def _elu(x: np.ndarray) -> np.ndarray:
    return np.where(x > 0, x, np.expm1(np.minimum(x, 0)))


def forward_numpy(contract: PolicyContract, weights: PolicyWeights, raw: dict[str, np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """Reference implementation of the graph: returns (joint_targets, action)."""
    q0 = np.asarray(contract.default_pose)
    obs = build_observation(contract.observation_spec, raw, q0)
    x = np.clip((obs - weights.obs_mean) / weights.obs_std, -weights.obs_clip, weights.obs_clip)
    for layer in weights.layers:
        x = x @ layer.weight + layer.bias
        if layer.ln_scale is not None:
            mu = x.mean(-1, keepdims=True)
            var = ((x - mu) ** 2).mean(-1, keepdims=True)
            x = (x - mu) / np.sqrt(var + LAYER_NORM_EPS) * layer.ln_scale + layer.ln_bias
        if layer.elu:
            x = _elu(x)
    action = np.clip(x, -weights.action_clip, weights.action_clip)
    check_offset(contract, weights)
    offset = q0 if weights.reference_joint_pos is None else reference_joint_targets(np.asarray(weights.reference_joint_pos), np.asarray(raw["phase"]))
    return offset + np.asarray(contract.action_scale) * action, action


class _GraphBuilder:
    def __init__(self) -> None:
        self.nodes: list[onnx.NodeProto] = []
        self.inits: list[onnx.TensorProto] = []
        self._count = 0

    def const(self, name: str, value: np.ndarray) -> str:
        name = f"{name}_{len(self.inits)}"
        self.inits.append(numpy_helper.from_array(np.asarray(value, dtype=np.float32), name))
        return name

    def index(self, name: str, value: list[int]) -> str:
        name = f"{name}_{len(self.inits)}"
        self.inits.append(numpy_helper.from_array(np.asarray(value, dtype=np.int64), name))
        return name

    def op(self, op_type: str, inputs: list[str], output: str | None = None, **attrs) -> str:
        self._count += 1
        out = output or f"{op_type.lower()}_{self._count}"
        self.nodes.append(helper.make_node(op_type, inputs, [out], **attrs))
        return out


def _lower_feature(g: _GraphBuilder, name: str, q0: str) -> str:
    """The ONNX operators computing observation feature ``name`` from the raw graph inputs."""
    if name == "projected_gravity":
        w, x, y, z = (g.op("Gather", ["imu_quat", g.index(f"q{i}", [i])], axis=1) for i in range(4))
        two, one = g.const("two", np.array(2.0)), g.const("one", np.array(1.0))
        gx = g.op("Mul", [two, g.op("Sub", [g.op("Mul", [w, y]), g.op("Mul", [x, z])])])
        gy = g.op("Neg", [g.op("Mul", [two, g.op("Add", [g.op("Mul", [y, z]), g.op("Mul", [w, x])])])])
        gz = g.op("Sub", [g.op("Mul", [two, g.op("Add", [g.op("Mul", [x, x]), g.op("Mul", [y, y])])]), one])
        return g.op("Concat", [gx, gy, gz], axis=1)
    if name == "base_ang_vel":
        return "imu_gyro"
    if name == "joint_pos_rel":
        return g.op("Sub", ["joint_pos", q0])
    if name in ("joint_vel", "last_action"):
        return name
    if name == "phase_sin_cos":
        angle = g.op("Mul", ["phase", g.const("two_pi", np.array(2 * np.pi))])
        return g.op("Concat", [g.op("Sin", [angle]), g.op("Cos", [angle])], axis=1)
    raise ValueError(f"no ONNX lowering for observation feature '{name}'")


def _lower_reference_targets(g: _GraphBuilder, table: np.ndarray) -> str:
    """ONNX operators of :func:`bcg_robot.action_offset.reference_joint_targets` on input ``phase``."""
    frames, one = g.const("frames", np.array(float(table.shape[0]))), g.const("one", np.array(1.0))
    x = g.op("Add", [g.op("Mul", ["phase", frames]), one])
    base = g.op("Floor", [x])
    w = g.op("Sub", [x, base])  # (batch, 1)
    i0 = g.op("Mod", [base, frames], fmod=1)
    i1 = g.op("Mod", [g.op("Add", [i0, one]), frames], fmod=1)
    rows = g.const(REFERENCE_TABLE_NAME, table)
    squeeze = g.index("axis1", [1])
    r0 = g.op("Gather", [rows, g.op("Squeeze", [g.op("Cast", [i0], to=TensorProto.INT64), squeeze])], axis=0)
    r1 = g.op("Gather", [rows, g.op("Squeeze", [g.op("Cast", [i1], to=TensorProto.INT64), squeeze])], axis=0)
    return g.op("Add", [r0, g.op("Mul", [w, g.op("Sub", [r1, r0])])])


def build_policy_onnx(contract: PolicyContract, weights: PolicyWeights) -> onnx.ModelProto:
    check_offset(contract, weights)
    n = contract.num_joints
    g = _GraphBuilder()
    q0 = g.const("default_pose", np.asarray(contract.default_pose).reshape(1, n))
    obs = g.op("Concat", [_lower_feature(g, f, q0) for f in contract.observation_spec], axis=1)
    x = g.op("Div", [g.op("Sub", [obs, g.const("obs_mean", weights.obs_mean)]), g.const("obs_std", weights.obs_std)])
    x = g.op("Clip", [x, g.const("obs_lo", np.array(-weights.obs_clip)), g.const("obs_hi", np.array(weights.obs_clip))])
    for i, layer in enumerate(weights.layers):
        x = g.op("Add", [g.op("MatMul", [x, g.const(f"w{i}", layer.weight)]), g.const(f"b{i}", layer.bias)])
        if layer.ln_scale is not None:
            x = g.op(
                "LayerNormalization",
                [x, g.const(f"ln_s{i}", layer.ln_scale), g.const(f"ln_b{i}", layer.ln_bias)],
                axis=-1, epsilon=LAYER_NORM_EPS,
            )
        if layer.elu:
            x = g.op("Elu", [x], alpha=1.0)
    action = g.op(
        "Clip", [x, g.const("act_lo", np.array(-weights.action_clip)), g.const("act_hi", np.array(weights.action_clip))],
        output=OUTPUT_NAMES[1],
    )
    scale = g.const("action_scale", np.asarray(contract.action_scale).reshape(1, n))
    table = weights.reference_joint_pos
    offset = q0 if table is None else _lower_reference_targets(g, np.asarray(table, np.float64))
    g.op("Add", [offset, g.op("Mul", [action, scale])], output=OUTPUT_NAMES[0])

    sizes = raw_input_sizes(n)
    inputs = [helper.make_tensor_value_info(name, TensorProto.FLOAT, ["batch", sizes[name]]) for name in INPUT_NAMES]
    outputs = [helper.make_tensor_value_info(name, TensorProto.FLOAT, ["batch", n]) for name in OUTPUT_NAMES]
    graph = helper.make_graph(g.nodes, "bcg_policy", inputs, outputs, initializer=g.inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)], producer_name="bcg")
    model.ir_version = 9
    helper.set_model_props(model, contract.to_metadata())
    onnx.checker.check_model(model, full_check=True)
    return model


def save_policy_onnx(path: str | Path, contract: PolicyContract, weights: PolicyWeights) -> Path:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    onnx.save_model(build_policy_onnx(contract, weights), str(path))
    return path
