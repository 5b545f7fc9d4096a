"""Fault-injection scenarios of ``bcg-sim2sim --fault``: what is done, and what must follow.

Every scenario starts like the nominal run (hanging in the band, configure, activate,
ramp, hold, release, operator RUN), injects its fault ``fault_at_s`` into RUN, and must
end in DAMP with the reason reported. The nominal run ends with the operator's stop.
``expected`` says what the verdict checks. How soon damping reached the motors is reported
(``reaction_ms``), not judged: on a shared machine it measures the machine as much as the
node; ``bcg-bench-node`` measures each watchdog's reaction over many trials.
"""

from __future__ import annotations

import dataclasses

from bcg_robot.wire import TRANSPORT_UNITREE_SDK, TRANSPORTS


@dataclasses.dataclass(frozen=True)
class Scenario:
    name: str
    injects: str
    expected: str
    expected_reasons: tuple[str, ...]  # fault kinds (bcg_policy_node.safety.faults) or "sentinel"
    interfaces: tuple[str, ...] = TRANSPORTS
    fall_allowed: bool = False  # a fall after the trip is the expected outcome (push)


SCENARIOS: dict[str, Scenario] = {s.name: s for s in (
    Scenario("none", "nothing: the policy runs, then the operator stops",
             "no watchdog trip, no fall; operator stop -> DAMP", ("operator_stop",)),
    Scenario("dropout", "the bridge publishes no state for --dropout-ms",
             "stale-state watchdog -> DAMP", ("stale_state",)),  # no sample arrives: tick_stalled cannot trip
    Scenario("crc", "rt/lowstate sealed with a wrong CRC for --dropout-ms, plus 20 LowCmds with a corrupted CRC "
             "from a second SDK client",
             "bridge drops and counts every corrupted LowCmd (motors keep the node's command); the node discards "
             "corrupted LowStates -> stale state -> DAMP",
             ("stale_state",), interfaces=(TRANSPORT_UNITREE_SDK,)),
    Scenario("nan", "the policy outputs NaN (an ONNX policy with the robot's contract and a NaN bias)",
             "non-finite action watchdog -> DAMP", ("nonfinite_action",)),
    Scenario("kill", "SIGKILL of the policy node process",
             "the sentinel takes over and sends damping; motors damped", ("sentinel",)),
    Scenario("estop", "e-stop: std_msgs/Bool on ros2, remote L2+B in rt/lowstate on unitree_sdk",
             "e-stop watchdog -> DAMP", ("estop", "remote_estop")),
    Scenario("foreign", "a second program commands the motors: 100 valid default-pose commands at 100 Hz (an SDK "
             "client on rt/lowcmd, a ROS node on lowcmd)",
             "the node trips DAMP (foreign_commander) and the sentinel reports the writer", ("foreign_commander",),
             fall_allowed=True),
    Scenario("push", "a --push-force N push on the pelvis for 0.2 s",
             "tilt (or joint velocity) watchdog -> DAMP; the robot goes down damped", ("tilt", "joint_velocity"),
             fall_allowed=True),
)}
FAULTS = tuple(name for name in SCENARIOS if name != "none")
