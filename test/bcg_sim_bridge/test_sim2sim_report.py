"""The sim-to-sim report's account of the node's target shaping: read from the node's diagnostics
(real diagnostic_msgs messages, no DDS), then shown per run in the table and the scenario's lines."""

from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus, KeyValue

from bcg_policy_node import operator_api as api
from bcg_sim_bridge.sim2sim.driver import shaping_counts
from bcg_sim_bridge.sim2sim.report import HEADER, markdown, summary_rows


def _diagnostics(name: str, values: dict[str, str]) -> DiagnosticArray:
    status = DiagnosticStatus(name=name, values=[KeyValue(key=k, value=v) for k, v in values.items()])
    return DiagnosticArray(status=[status])


def test_the_shaping_counts_are_read_from_the_nodes_control_status_only():
    values = {"state": "RUN", "ticks": "900", "shaping_policy_ticks": "250", "shaping_shaped": "12",
              "shaping_joint_limits": "0", "shaping_rate": "12", "shaping_torque": "3"}
    assert shaping_counts(_diagnostics(api.DIAGNOSTICS_STATUS_NAME, values)) == {
        "policy_ticks": 250, "shaped": 12, "joint_limits": 0, "rate": 12, "torque": 3}
    assert shaping_counts(_diagnostics("another_node: motors", values)) == {}  # /diagnostics is shared
    assert shaping_counts(_diagnostics(api.DIAGNOSTICS_STATUS_NAME, {"state": "HOLD"})) == {}


def _result(**changes) -> dict:
    result = {"interface": "ros2", "scenario": "none", "passed": True, "injects": "nothing", "expected": "DAMP on stop",
              "observed": "operator_stop; motors damping", "timeline": []}
    return {**result, **changes}


def test_the_report_shows_how_often_the_safety_layer_changed_the_policys_targets():
    shaping = {"policy_ticks": 250, "shaped": 12, "joint_limits": 0, "rate": 12, "torque": 3}
    (row,) = summary_rows([_result(target_shaping=shaping)])
    assert row[HEADER.index("policy ticks shaped")] == "12/250"
    text = markdown([_result(target_shaping=shaping)], {"policy": "p.onnx"})
    assert ("- target shaping: of 250 policy ticks the safety layer changed targets in 12 (soft joint limits 0, "
            "step limit 12, torque window 3)") in text
    # a run without the counts (the node never reported them): a dash, and no line
    (row,) = summary_rows([_result()])
    assert row[HEADER.index("policy ticks shaped")] == "-" and "target shaping" not in markdown([_result()], {})
