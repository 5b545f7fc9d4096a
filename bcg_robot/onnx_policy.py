"""Load a BCG ONNX policy with onnxruntime (one thread), checking its signature and contract.

Used by the policy node, ``bcg-sim2sim`` and ``bcg-eval``. Inputs and outputs must have
the contract's names and shape ``[1 or batch, size]`` with the robot's sizes (checked first,
then by one inference on a neutral state: a size the graph leaves symbolic is checked
there, and an output that is not one row of the robot's joints never reaches the control
loop, which would broadcast it); the contract comes from the
file's metadata (``custom_metadata_map``) and must match the robot config (joint names
and order, count, control dt, a known observation spec, a default pose within the joint
limits, gains within ``policy_gain_ratio``, the action scale equal to the config's; the control
loop then wants the default pose within the soft limits), and the graph must apply the
metadata's default pose and action scale (in the trial run a default-pose policy's
``targets - action_scale * action`` is its default pose; a reference-offset policy's is the
same in two states at one phase, and its clip table lasts ``motion_length_s``). Any problem is a
:class:`ContractError`: one line naming the file.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from bcg_robot.action_offset import DEFAULT_POSE, REFERENCE
from bcg_robot.config import RobotConfig
from bcg_robot.contract import INPUT_NAMES, OUTPUT_NAMES, PolicyContract
from bcg_robot.errors import ContractError
from bcg_robot.observation import raw_input_sizes

OFFSET_TOLERANCE = 1e-4  # rad, relative to 1 + |target|: float32 arithmetic in the graph


class OnnxPolicy:
    """``run(raw) -> (joint_targets, action)`` on raw state (see bcg_robot.observation)."""

    def __init__(self, session, contract: PolicyContract, source: str):
        self.session = session
        self.contract = contract
        self.source = source
        self._outputs = list(OUTPUT_NAMES)

    @classmethod
    def load(cls, path: str | Path, robot: RobotConfig) -> "OnnxPolicy":
        import onnxruntime as ort

        source = str(path)
        if not Path(path).is_file():
            raise ContractError(source, "policy file not found")
        options = ort.SessionOptions()
        options.intra_op_num_threads = 1
        options.inter_op_num_threads = 1
        options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
        options.log_severity_level = 3
        try:
            session = ort.InferenceSession(source, sess_options=options, providers=["CPUExecutionProvider"])
        except Exception as err:  # onnxruntime raises several types for unreadable files
            first = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
            raise ContractError(source, f"not a loadable ONNX model: {first[:200]}") from None
        # The graph first: a graph that cannot drive this robot is reported as such, whatever
        # its metadata says (or lacks).
        cls._check_signature(session, robot.num_joints, source)
        policy = cls(session, None, source)
        targets, action = policy._check_trial_run(robot.num_joints)
        meta = dict(session.get_modelmeta().custom_metadata_map)
        contract = PolicyContract.from_metadata(meta, source)
        contract.check_against(robot, source)
        policy.contract = contract
        policy._check_offset_and_scale(targets, action)
        if contract.action_offset == REFERENCE:
            policy._check_reference_table()
            policy._check_reference_scale(targets, action)
        return policy

    @staticmethod
    def _check_signature(session, num_joints: int, source: str) -> None:
        sizes = raw_input_sizes(num_joints)
        inputs = {i.name: i.shape for i in session.get_inputs()}
        outputs = {o.name: o.shape for o in session.get_outputs()}
        for name in OUTPUT_NAMES:
            if name not in outputs:
                raise ContractError(source, f"policy graph lacks output '{name}'")
            _check_shape(source, "output", name, outputs[name], num_joints, f"the robot has {num_joints} joints")
        for name in INPUT_NAMES:
            if name not in inputs:
                raise ContractError(source, f"policy graph lacks input '{name}'")
            _check_shape(source, "input", name, inputs[name], sizes[name], f"the robot needs {sizes[name]}")

    def _check_trial_run(self, num_joints: int) -> tuple[np.ndarray, np.ndarray]:
        """One inference on a neutral state (identity attitude, zeros): the outputs' actual
        shapes. Returns its joint targets and action."""
        try:
            results = self._infer(_neutral_state(num_joints))
        except Exception as err:  # onnxruntime raises several types for a graph that cannot run
            first = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
            raise ContractError(self.source, f"policy graph fails on a neutral state: {first[:200]}") from None
        for name, value in zip(self._outputs, results):
            if np.shape(value) != (1, num_joints):
                raise ContractError(
                    self.source, f"policy output '{name}' has shape {list(np.shape(value))} for one state, expected [1, {num_joints}]"
                )
        return results[0][0].astype(np.float64), results[1][0].astype(np.float64)

    def _check_offset_and_scale(self, targets: np.ndarray, action: np.ndarray) -> None:
        """The metadata's default pose and action scale are the ones the graph applies: for a
        default-pose offset, ``targets - action_scale * action`` is the default pose in any
        state (here the trial run's). The node ramps to and holds the metadata's pose, and the
        policy acts around the graph's. A non-finite output is left to the control loop's
        watchdog (it trips on the first tick)."""
        contract = self.contract
        if contract.action_offset != DEFAULT_POSE:  # the reference's table inside the graph is the offset
            return
        q0 = np.asarray(contract.default_pose)
        if not (np.isfinite(targets).all() and np.isfinite(action).all()):
            return
        offset = targets - np.asarray(contract.action_scale) * action
        tolerance = OFFSET_TOLERANCE * (1.0 + np.abs(targets))  # float32 graph
        off = np.flatnonzero(np.abs(offset - q0) > tolerance)
        if off.size:
            j = off[0]
            raise ContractError(self.source, f"policy graph acts around {offset[j]:.4g} for '{contract.joint_names[j]}', its "
                                             f"metadata says default pose {q0[j]:.4g} (with action_scale {contract.action_scale[j]:g}): "
                                             f"metadata and graph disagree")

    def _check_reference_table(self) -> None:
        """A reference-offset graph carries the clip's joint positions, one row a control step; the
        node's phase runs over ``motion_length_s``. They must be the same clip length, or the node
        would step through the table at the wrong speed (a playback graph was once written from a
        clip a frame longer than its metadata said)."""
        import onnx

        from bcg_robot.onnx_graph import REFERENCE_TABLE_NAME

        try:
            graph = onnx.load(self.source, load_external_data=False).graph
        except Exception as err:  # noqa: BLE001 - onnx raises several types; onnxruntime loaded it
            raise ContractError(self.source, f"cannot read the graph's reference table: {str(err)[:200]}") from None
        tables = [list(init.dims) for init in graph.initializer if init.name.startswith(f"{REFERENCE_TABLE_NAME}_")]
        contract = self.contract
        if len(tables) != 1 or len(tables[0]) != 2 or tables[0][1] != contract.num_joints:
            raise ContractError(self.source, f"action_offset 'reference', but the graph has no reference table of "
                                             f"{contract.num_joints} joints (found {tables})")
        frames = tables[0][0]
        steps = contract.motion_length_s / contract.control_dt
        if abs(frames - steps) > 1e-3 * max(1.0, steps):
            raise ContractError(self.source, f"the graph's reference table has {frames} frames, its metadata's motion_length_s "
                                             f"{contract.motion_length_s:g} s is {steps:g} control steps: metadata and graph disagree")

    def _check_reference_scale(self, targets: np.ndarray, action: np.ndarray) -> None:
        """The metadata's action scale is the graph's: at one phase the offset ``targets -
        action_scale * action`` is the same whatever the state (the default-pose check does this
        for the other offset). A second trial run moves the joints; a policy whose action does not
        change with them, or is not finite, cannot tell and is left alone."""
        raw = {**_neutral_state(self.contract.num_joints), "joint_pos": np.full(self.contract.num_joints, 0.2)}
        targets2, action2 = (r[0].astype(np.float64) for r in self._infer(raw))
        if not all(np.isfinite(x).all() for x in (targets, action, targets2, action2)):
            return
        scale = np.asarray(self.contract.action_scale)
        moved = np.abs(action2 - action) > 1e-3
        gap = np.abs((targets2 - scale * action2) - (targets - scale * action))
        tolerance = OFFSET_TOLERANCE * (1.0 + np.abs(targets) + np.abs(targets2))
        off = np.flatnonzero(moved & (gap > tolerance))
        if off.size:
            j = off[0]
            implied = (targets2[j] - targets[j]) / (action2[j] - action[j])
            raise ContractError(self.source, f"policy graph scales '{self.contract.joint_names[j]}' by {implied:.4g}, its metadata "
                                             f"says action_scale {scale[j]:g}: metadata and graph disagree")

    def _infer(self, raw: dict[str, np.ndarray]) -> list[np.ndarray]:
        feeds = {name: np.asarray(raw[name], dtype=np.float32).reshape(1, -1) for name in INPUT_NAMES}
        return self.session.run(self._outputs, feeds)

    def run(self, raw: dict[str, np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
        """Joint targets and action of one state (the load's trial run checked their shape; the
        control loop checks them again on every tick before anything reaches a motor)."""
        targets, action = self._infer(raw)
        return targets[0].astype(np.float64), action[0].astype(np.float64)

def _neutral_state(num_joints: int) -> dict[str, np.ndarray]:
    """The trial runs' raw state: identity attitude, everything else zero (phase 0)."""
    raw = {name: np.zeros(size) for name, size in raw_input_sizes(num_joints).items()}
    raw["imu_quat"] = np.array([1.0, 0.0, 0.0, 0.0])
    return raw


def _check_shape(source: str, kind: str, name: str, shape, size: int, needs: str) -> None:
    """``[batch, size]``: rank 2, a batch of 1 or symbolic, and ``size`` values (when the graph fixes it)."""
    if len(shape) != 2:
        raise ContractError(source, f"policy {kind} '{name}' has shape {list(shape)}, expected [batch, {size}]")
    batch, last = shape
    if isinstance(batch, int) and batch != 1:
        raise ContractError(source, f"policy {kind} '{name}' has a fixed batch of {batch}, expected 1 or symbolic")
    if isinstance(last, int) and last != size:
        raise ContractError(source, f"policy {kind} '{name}' has {last} values, {needs}")
