"""The policy node's operator API: every name and message type an operator, a launch
file, the sentinel or the sim-to-sim driver needs. Import it; never spell names twice.

Topic and service names are relative, so they resolve under the namespace of whoever
uses them (put node and driver in the same namespace); ``/diagnostics`` alone is absolute,
as ROS's diagnostics convention has it.

The policy node's topics and services below exist from its lifecycle configure to its
cleanup (none while unconfigured); heartbeat, timing and joint states (and on ``ros2``
the motor commands) carry messages only while it is active.

Commands (``std_srvs/Trigger``; ``success`` false and a ``message`` saying why when refused)
    ``RUN_SERVICE``    HOLD -> RUN. The only way into RUN (besides the remote's START on
                       hardware). Refused in any other state.
    ``STOP_SERVICE``   any state -> DAMP (kp 0, kd > 0), latched.
    ``RESET_SERVICE``  DAMP -> PASSIVE; refused while a fault is still present (e-stop
                       asserted, stale state, ...). From PASSIVE an active node ramps to
                       the default pose again (RAMP, 2 s) and holds it (HOLD).

Inputs
    ``ESTOP_TOPIC``    ``std_msgs/Bool``; ``True`` trips DAMP within one control period and
                       blocks reset until that station sends ``False`` or leaves the topic
                       (each writer's level is kept: one station's "released" does not clear
                       another's "pressed"). Latched at arrival: a pulse
                       shorter than a control period still trips. The subscription exists
                       from configure on, volatile and best effort (:func:`operator_input_qos`:
                       it hears reliable and best-effort stations alike): an e-stop station
                       should publish its level periodically (an assertion sent before the
                       node configured is not seen); on hardware the remote's L2+B is read
                       from every state.
    ``DEADMAN_TOPIC``  ``std_msgs/Empty``; only when the node's ``deadman_timeout_s``
                       parameter is > 0: outside PASSIVE/DAMP a gap longer than that trips DAMP.

A second writer of motor commands (another program on ``rt/lowcmd`` or ``lowcmd``) trips
DAMP with reason ``foreign_commander`` and blocks reset until it has been quiet for
``foreign_commander_window_s``.

Outputs
    ``STATE_TOPIC``      ``std_msgs/String``: the control state name (``ControlState``),
                         every tick, transient-local so a late subscriber sees the last one.
    ``FAULT_TOPIC``      ``std_msgs/String``: the reason of the latest trip (transient-local).
    ``HEARTBEAT_TOPIC``  ``std_msgs/UInt64``: tick counter, every control tick (the sentinel
                         watches it).
    ``TIMING_TOPIC``     ``std_msgs/Float64MultiArray`` ``TIMING_FIELDS`` per tick, in ms:
                         timer period, state age when the command left (state-to-command
                         latency), compute from the state in hand to the command sent.
    ``JOINT_STATES_TOPIC`` ``sensor_msgs/JointState`` of the robot as the node saw it.
    ``DIAGNOSTICS_TOPIC``  ``diagnostic_msgs/DiagnosticArray``, 1 Hz and on every state change.
                         Among its values, since the node's activation (``SHAPING_PREFIX``):
                         the ticks the policy ran, and those where the safety layer's target
                         shaping (soft joint limits, step limit, torque window) moved a target:
                         the training simulation has none of it.
    ``SENTINEL_STATE_TOPIC`` ``std_msgs/String`` of the sentinel process (latched).
    ``SENTINEL_FAULT_TOPIC`` ``std_msgs/String``: a second writer of motor commands the
                         sentinel heard (``foreign_commander: ...``, latched).
    ``SENTINEL_HEARTBEAT_TOPIC`` ``std_msgs/UInt64`` of the sentinel, 20 Hz: the node's
                         ``sentinel_timeout_s`` (default 1 s; 0: no sentinel required) keeps
                         it in PASSIVE until the sentinel's heartbeat is fresh and its state
                         is WATCHING, and trips DAMP outside PASSIVE/DAMP when either stops
                         (fault ``sentinel_missing``): nobody would damp a frozen node.

Remote (unitree_sdk interface, real G1): START = run (from HOLD), L2+B = e-stop (DAMP).
"""

from __future__ import annotations

import enum

from diagnostic_msgs.msg import DiagnosticArray
from sensor_msgs.msg import JointState
from std_msgs.msg import Bool, Empty, Float64MultiArray, String, UInt64
from std_srvs.srv import Trigger

NODE_NAME = "policy_node"
SENTINEL_NODE_NAME = "policy_sentinel"
# on ros2, the role of a lowcmd publisher by its node's name (bcg_robot.wire.CommandWriter); any other is foreign
WRITER_ROLES = {NODE_NAME: "node", SENTINEL_NODE_NAME: "sentinel"}
# on ros2, how long the sentinel holds back the commands of a lowcmd publisher whose node the graph cannot
# name yet (its data can come before its discovery information), s; the node does not wait
SENTINEL_IDENTIFY_WITHIN_S = 0.5

RUN_SERVICE = "policy_node/run"
STOP_SERVICE = "policy_node/stop"
RESET_SERVICE = "policy_node/reset"
COMMAND_SERVICE_TYPE = Trigger

ESTOP_TOPIC = "policy_node/estop"
ESTOP_TYPE = Bool
DEADMAN_TOPIC = "policy_node/deadman"
DEADMAN_TYPE = Empty

STATE_TOPIC = "policy_node/state"
STATE_TYPE = String
FAULT_TOPIC = "policy_node/fault"
FAULT_TYPE = String
HEARTBEAT_TOPIC = "policy_node/heartbeat"
HEARTBEAT_TYPE = UInt64
TIMING_TOPIC = "policy_node/timing"
TIMING_TYPE = Float64MultiArray
TIMING_FIELDS = ("period_ms", "state_age_ms", "compute_ms")
JOINT_STATES_TOPIC = "joint_states"
JOINT_STATES_TYPE = JointState
DIAGNOSTICS_TOPIC = "/diagnostics"
DIAGNOSTICS_TYPE = DiagnosticArray
DIAGNOSTICS_STATUS_NAME = f"{NODE_NAME}: control"  # the node's status in each DiagnosticArray
SHAPING_PREFIX = "shaping_"  # its values shaping_policy_ticks, shaping_shaped, ... (target_shaping.ShapingCounts)

SENTINEL_STATE_TOPIC = "policy_sentinel/state"  # std_msgs/String: WAITING, WATCHING, TAKEN_OVER (latched)
SENTINEL_STATE_TYPE = String
SENTINEL_FAULT_TOPIC = "policy_sentinel/fault"  # std_msgs/String: a second commander it heard (latched)
SENTINEL_FAULT_TYPE = String
SENTINEL_HEARTBEAT_TOPIC = "policy_sentinel/heartbeat"  # std_msgs/UInt64: a counter, every SENTINEL_HEARTBEAT_PERIOD_S
SENTINEL_HEARTBEAT_TYPE = UInt64
SENTINEL_HEARTBEAT_PERIOD_S = 0.05

# Remote buttons (bcg_robot.remote names) on hardware.
REMOTE_RUN_BUTTONS = ("start",)
REMOTE_ESTOP_BUTTONS = ("L2", "B")


class ControlState(str, enum.Enum):
    """PASSIVE -> RAMP -> HOLD -> RUN (operator only); any -> DAMP (latched until reset)."""

    PASSIVE = "PASSIVE"  # zero torque (kp = kd = 0)
    RAMP = "RAMP"  # interpolating to the default pose
    HOLD = "HOLD"  # holding the default pose, waiting for the operator
    RUN = "RUN"  # policy in control
    DAMP = "DAMP"  # kp 0, kd > 0; latched until reset


# The node's log line, every 2 s while faults hold it in PASSIVE, then the faults ("; "-joined).
PASSIVE_HELD_LOG = "PASSIVE until these clear: "
# The sentinel's log line at a takeover, then its reason ("policy node heartbeat silent for 221 ms").
TAKEOVER_LOG = "TAKEOVER: "


def operator_input_qos():
    """QoS of the e-stop and deadman subscriptions: best effort, volatile, depth 10. A best-effort
    reader matches reliable and best-effort writers alike; a reliable one never hears a station
    that publishes best effort (``qos_profile_sensor_data``, common for joystick and e-stop
    bridges), and its e-stop would do nothing. A lost message is made up by the next one: a
    station publishes its level periodically."""
    from rclpy.qos import HistoryPolicy, QoSProfile, ReliabilityPolicy

    return QoSProfile(depth=10, reliability=ReliabilityPolicy.BEST_EFFORT, history=HistoryPolicy.KEEP_LAST)


def latched_qos():
    """QoS of state and fault topics: reliable, transient-local, depth 1."""
    from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy

    return QoSProfile(depth=1, reliability=ReliabilityPolicy.RELIABLE, durability=DurabilityPolicy.TRANSIENT_LOCAL)
