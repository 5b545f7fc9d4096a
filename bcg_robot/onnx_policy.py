"""Load a BCG ONNX policy with onnxruntime (one thread), checking its signature and contract.

Used by the policy node, ``bcg-sim2sim`` and ``bcg-eval``. Inputs and outputs must have
the contract's names and the robot's sizes (checked first); the contract comes from the
file's metadata (``custom_metadata_map``) and must match the robot config (joint names
and order, count, control dt, observation spec, default pose, gains within
``policy_gain_ratio``). Any problem is a :class:`ContractError`: one line naming the file.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from bcg_robot.config import RobotConfig
from bcg_robot.contract import INPUT_NAMES, OUTPUT_NAMES, PolicyContract
from bcg_robot.errors import ContractError
from bcg_robot.observation import raw_input_sizes


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
        meta = dict(session.get_modelmeta().custom_metadata_map)
        contract = PolicyContract.from_metadata(meta, source)
        contract.check_against(robot, source)
        return cls(session, contract, source)

    @staticmethod
    def _check_signature(session, num_joints: int, source: str) -> None:
        sizes = raw_input_sizes(num_joints)
        inputs = {i.name: i.shape for i in session.get_inputs()}
        outputs = {o.name: o.shape for o in session.get_outputs()}
        for name in OUTPUT_NAMES:
            if name not in outputs:
                raise ContractError(source, f"policy graph lacks output '{name}'")
            last = outputs[name][-1]
            if isinstance(last, int) and last != num_joints:
                raise ContractError(source, f"policy output '{name}' has {last} values, the robot has {num_joints} joints")
        for name in INPUT_NAMES:
            if name not in inputs:
                raise ContractError(source, f"policy graph lacks input '{name}'")
            last = inputs[name][-1]
            if isinstance(last, int) and last != sizes[name]:
                raise ContractError(source, f"policy input '{name}' has {last} values, the robot needs {sizes[name]}")

    def run(self, raw: dict[str, np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
        feeds = {name: np.asarray(raw[name], dtype=np.float32).reshape(1, -1) for name in INPUT_NAMES}
        targets, action = self.session.run(self._outputs, feeds)
        return targets[0].astype(np.float64), action[0].astype(np.float64)
