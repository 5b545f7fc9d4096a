"""``ros2`` robot interface: the sim bridge's standard-message topics (bcg_robot.wire).

State: ``sensor_msgs/JointState`` (names in motor order, tick in ``header.frame_id`` as
``tick:N``) plus the latest ``sensor_msgs/Imu``; a JointState whose names are not the
robot's joints in motor order is rejected (and the state goes stale, which trips DAMP).
Command: ``std_msgs/Float64MultiArray`` 5 x n (q, dq, tau, kp, kd), see bcg_robot.wire.

QoS: state subscriptions are best-effort (they match reliable and best-effort
publishers), the command publisher is reliable (it matches either kind of subscriber).
With ``lifecycle_command`` (the node is a ``LifecycleNode``) the command publisher is a
lifecycle publisher: it carries commands only while the node is active.

State is polled, not called back: its subscriptions (depth 1) live on a helper node that
no executor spins, and :meth:`latest_state` takes the newest JointState and Imu when a
tick asks (dated to the older of the JointState's and the Imu's receptions,
:mod:`bcg_policy_node.interfaces.arrival`: either stream stopping makes the state stale), so
the 500 Hz stream costs no Python work between ticks. With ``wait_s`` > 0
it first waits (rclpy wait set, GIL released) for the next JointState to arrive, so the
tick computes on a fresh sample; when none comes in time it uses the newest it has.

Commands of other writers (``watch_commands``): every ``lowcmd`` message is attributed to
its publisher through the publisher GID in the message info. The interface's own publisher is
known by its GID: the one publisher of this node's name that the ROS graph gained when the
interface created it (local endpoints enter the graph at once). Its node name would not do: a
second node of the same name, started twice by mistake, would pass for it; such a publisher is
foreign. Every other publisher is named through the ROS graph (node name), and gets the role
``writer_roles`` gives that name. A publisher with a role is a writer of its own, named with its
GID too: to the sentinel, whose command stream is that of the first ``node`` publisher it hears,
a second node of the policy node's name is another writer (a second commander, whose commands do
not keep the sentinel from taking over when the real node dies), as unitree_sdk's session stamps
tell two node processes apart. Messages of the own publisher are skipped; :meth:`take_commands`
returns the others since the last call, oldest first.

A publisher's messages can arrive before its node's discovery information: the graph knows the
endpoint but not its node's name yet. With ``identify_within_s`` > 0 (the sentinel) such a
publisher's commands are held back for that long from its first message, for the graph to name
it, and are then returned with its writer (with their reception times); past it, unnamed, they are
an unidentified foreign writer's. Without, the sentinel reported the policy node's first commands
as a foreign commander's, and did not count them as the node's. The node keeps 0: a writer it
cannot name trips DAMP at once.
"""

from __future__ import annotations

import collections
import threading
import time

import numpy as np
import rclpy
from rclpy.callback_groups import CallbackGroup
from rclpy.node import Node
from rclpy.qos import QoSProfile, ReliabilityPolicy
from sensor_msgs.msg import Imu, JointState
from std_msgs.msg import Float64MultiArray, MultiArrayDimension

from bcg_robot.wire import (COMMAND_FIELDS, COMMAND_TOPIC, STATE_IMU_TOPIC, STATE_JOINTS_TOPIC, TICK_FRAME_PREFIX, CommandWriter,
                            LowCommand, command_to_flat)

from bcg_policy_node.interfaces.arrival import ArrivalClock
from bcg_policy_node.interfaces.robot_state import RobotState, SeenCommand

STATE_QOS = QoSProfile(depth=1, reliability=ReliabilityPolicy.BEST_EFFORT)
COMMAND_QOS = QoSProfile(depth=1, reliability=ReliabilityPolicy.RELIABLE)
# Watching lowcmd for other writers: every sample until it is taken (as the SDK reader's KeepLast(64)).
# At depth 1, the node's own command, published at the end of a tick, replaced a foreign one that
# had arrived during the tick, before the executor could take it: a writer in that phase of every
# tick went unseen for good.
COMMAND_WATCH_QOS = QoSProfile(depth=64, reliability=ReliabilityPolicy.BEST_EFFORT)
UNKNOWN_NODE_NAME = "_NODE_NAME_UNKNOWN_"  # what the graph reports before the publisher's node is discovered
SEEN_COMMANDS_KEPT = 1024  # commands of other writers kept between two take_commands (the newest)


def command_message(command: LowCommand) -> Float64MultiArray:
    msg = Float64MultiArray()
    n = command.num_joints
    msg.layout.dim = [
        MultiArrayDimension(label="field", size=len(COMMAND_FIELDS), stride=len(COMMAND_FIELDS) * n),
        MultiArrayDimension(label="joint", size=n, stride=n),
    ]
    msg.data = command_to_flat(command)
    return msg


def gid_text(gid: bytes) -> str:
    """An endpoint GID as rclpy's ``TopicEndpointInfo`` (and so ``ros2 topic info -v``) prints it."""
    return ".".join(f"{b:02x}" for b in gid)


def publisher_gids(node: Node, topic: str) -> set[bytes]:
    """The GIDs of every publisher on ``topic`` the ROS graph of ``node`` knows."""
    return {bytes(info.endpoint_gid) for info in node.get_publishers_info_by_topic(topic)}


def created_publisher_gid(node: Node, topic: str, before: set[bytes]) -> bytes | None:
    """The GID of the publisher on ``topic`` that ``node`` has just created: the one publisher of
    its name and namespace that was not there ``before`` (:func:`publisher_gids`; a node's own
    endpoints enter its graph at once); None when the graph shows not exactly one. A node of the
    same name elsewhere has a publisher of the same name, so the name alone cannot tell."""
    new = [bytes(info.endpoint_gid) for info in node.get_publishers_info_by_topic(topic)
           if bytes(info.endpoint_gid) not in before and info.node_name == node.get_name()
           and info.node_namespace == node.get_namespace()]
    return new[0] if len(new) == 1 else None


def parse_tick(frame_id: str, stamp_ns: int) -> int:
    """The bridge's tick from ``frame_id`` (``tick:N``); the stamp in ns when absent."""
    if frame_id.startswith(TICK_FRAME_PREFIX):
        try:
            return int(frame_id[len(TICK_FRAME_PREFIX):])
        except ValueError:
            pass
    return stamp_ns


class Ros2RobotInterface:
    kind = "ros2"

    def __init__(self, node: Node, joint_names: tuple[str, ...], callback_group: CallbackGroup | None = None,
                 subscribe_state: bool = True, watch_commands: bool = False,
                 writer_roles: dict[str, str] | None = None, lifecycle_command: bool = False,
                 identify_within_s: float = 0.0):
        from rclpy.impl.implementation_singleton import rclpy_implementation as _rclpy

        self._node = node
        self._names = list(joint_names)
        self._n = len(joint_names)
        self._lock = threading.Lock()
        self._imu: Imu | None = None
        self._imu_at = 0.0  # when the IMU sample in use arrived (monotonic)
        self._imu_arrival = ArrivalClock()
        self._state: RobotState | None = None
        self._arrival = ArrivalClock()
        self._rejected = 0
        self._state_node = None
        self._joint_sub = self._imu_sub = None
        if subscribe_state:
            self._state_node = rclpy.create_node(f"{node.get_name()}_state", namespace=node.get_namespace(),
                                                 context=node.context, enable_rosout=False,
                                                 start_parameter_services=False)
            self._joint_sub = self._state_node.create_subscription(JointState, STATE_JOINTS_TOPIC, lambda _m: None, STATE_QOS)
            self._imu_sub = self._state_node.create_subscription(Imu, STATE_IMU_TOPIC, lambda _m: None, STATE_QOS)
            self._waitset = _rclpy.WaitSet(1, 0, 0, 0, 0, 0, node.context.handle)
        self._lifecycle_command = lifecycle_command
        create_publisher = node.create_lifecycle_publisher if lifecycle_command else node.create_publisher
        before = publisher_gids(node, COMMAND_TOPIC)
        self._pub = create_publisher(Float64MultiArray, COMMAND_TOPIC, COMMAND_QOS)
        self._own_gid = created_publisher_gid(node, COMMAND_TOPIC, before)
        self._command_sub = None
        # bounded: when nothing takes them (a node whose executor does not run its idle poll, a starved
        # process) the sentinel's damping at 50 Hz grew it by 180,000 an hour, and the first tick walked
        # them all; the newest are kept
        self._seen: collections.deque[SeenCommand] = collections.deque(maxlen=SEEN_COMMANDS_KEPT)
        self._writers: dict[bytes, CommandWriter] = {}
        self._roles = dict(writer_roles or {})
        self._identify_within = identify_within_s
        self._unnamed_since: dict[bytes, float] = {}  # first message of a publisher the graph could not name
        self._held: collections.deque[tuple[bytes, float]] = collections.deque(maxlen=SEEN_COMMANDS_KEPT)
        if self._own_gid is not None:
            self._writers[self._own_gid] = CommandWriter("own", node.get_name())
            self._roles.pop(node.get_name(), None)  # any other publisher of this name is foreign
        else:  # the graph did not show the new publisher: known by this node's name, as before
            node.get_logger().warning(f"could not find this node's own {COMMAND_TOPIC} publisher in the ROS graph: a second "
                                      f"node named '{node.get_name()}' writing commands would go unnoticed")
            self._roles[node.get_name()] = "own"
        if watch_commands:
            self._command_sub = node.create_subscription(Float64MultiArray, COMMAND_TOPIC, self._on_command, COMMAND_WATCH_QOS,
                                                         callback_group=callback_group, raw=True)

    @property
    def rejected_samples(self) -> int:
        return self._rejected

    # state -------------------------------------------------------------------------------
    @staticmethod
    def _take(sub, msg_type):
        """(newest message, its reception time on the system clock in s), or (None, None)."""
        newest = None
        with sub.handle:
            while (taken := sub.handle.take_message(msg_type, False)) is not None:
                newest = taken
        if newest is None:
            return None, None
        return newest[0], newest[1]["received_timestamp"] * 1e-9

    def latest_state(self, wait_s: float = 0.0) -> RobotState | None:
        """The newest state; with ``wait_s`` > 0 the next JointState to arrive within it."""
        if self._joint_sub is None:
            return None
        with self._lock:
            if wait_s > 0:
                self._take_state()  # what is there now is the fallback
                with self._joint_sub.handle:
                    self._waitset.clear_entities()
                    self._waitset.add_subscription(self._joint_sub.handle)
                    self._waitset.wait(int(wait_s * 1e9))
            self._take_state()
            return self._state

    def _take_state(self) -> None:
        taken = time.monotonic()  # before the take: decoding counts toward the state's age
        imu, imu_received = self._take(self._imu_sub, Imu)
        imu_at = self._imu_arrival.took(taken, None if imu_received is None else imu_received - time.time() + taken)
        if imu is not None:
            self._imu, self._imu_at = imu, imu_at
        msg, received = self._take(self._joint_sub, JointState)
        # the reception time is on the system clock: mapped onto this monotonic clock
        now = self._arrival.took(taken, None if received is None else received - time.time() + taken)
        if msg is None:
            return
        if list(msg.name) != self._names or len(msg.position) != self._n or len(msg.velocity) != self._n:
            self._rejected += 1
            self._node.get_logger().error(
                f"rejected JointState on '{STATE_JOINTS_TOPIC}': names/lengths are not the robot's {self._n} joints "
                "in motor order", throttle_duration_sec=1.0)
            return
        if self._imu is None:
            return
        o, w = self._imu.orientation, self._imu.angular_velocity
        effort = np.asarray(msg.effort, dtype=np.float64) if len(msg.effort) == self._n else np.zeros(self._n)
        self._state = RobotState(
            tick=parse_tick(msg.header.frame_id, msg.header.stamp.sec * 1_000_000_000 + msg.header.stamp.nanosec),
            # as old as its older part: an IMU stream that stopped makes the state stale
            # (the tilt watchdog and the policy would read its last sample forever)
            received_at=min(now, self._imu_at),
            q=np.asarray(msg.position, dtype=np.float64),
            dq=np.asarray(msg.velocity, dtype=np.float64),
            tau_est=effort,
            quat_wxyz=np.array([o.w, o.x, o.y, o.z]),
            gyro=np.array([w.x, w.y, w.z]),
        )

    # commands ----------------------------------------------------------------------------
    def send(self, command: LowCommand) -> None:
        self._pub.publish(command_message(command))

    def _writer(self, gid: bytes) -> CommandWriter:
        """Who published: looked up in the ROS graph once per publisher (again while the
        graph does not know its node's name yet: then it is an unidentified foreign writer, named
        by its GID as ``ros2 topic info --verbose`` prints it)."""
        writer = self._writers.get(gid)
        if writer is None:
            writer = CommandWriter("foreign", f"unidentified publisher {gid_text(gid)}")
            for info in self._node.get_publishers_info_by_topic(COMMAND_TOPIC):
                if bytes(info.endpoint_gid) == gid:
                    name = info.node_name
                    if name and name != UNKNOWN_NODE_NAME:
                        role = self._roles.get(name, "foreign")
                        if name == self._node.get_name() and role == "foreign":
                            name = f"{name} (another node of this node's name, publisher {gid_text(gid)})"
                        elif role != "foreign":  # one writer per publisher: see the module docstring
                            name = f"{name} (publisher {gid_text(gid)})"
                        writer = self._writers[gid] = CommandWriter(role, name)
                    break
        return writer

    def _held_back(self, gid: bytes, now: float) -> bool:
        """Whether a command of ``gid``, which the graph has not named (yet), waits for its name."""
        if gid in self._writers:
            self._unnamed_since.pop(gid, None)
            return False
        return now - self._unnamed_since.setdefault(gid, now) < self._identify_within

    def _on_command(self, _raw: bytes, info: dict) -> None:
        gid, now = bytes(info["publisher_gid"]["data"]), time.monotonic()
        with self._lock:
            writer = self._writer(gid)
            if writer.role == "own":
                return
            if self._held_back(gid, now):
                self._held.append((gid, now))
            else:
                self._seen.append(SeenCommand(now, writer))

    def take_commands(self) -> list[SeenCommand]:
        now = time.monotonic()
        with self._lock:
            seen = list(self._seen)
            self._seen.clear()
            held = list(self._held)
            self._held.clear()
            named = {gid: self._writer(gid) for gid, _ in held}  # the graph may know their node now: once per publisher
            waiting = {gid for gid in named if self._held_back(gid, now)}
            for gid, t in held:
                if gid in waiting:
                    self._held.append((gid, t))
                elif named[gid].role != "own":
                    seen.append(SeenCommand(t, named[gid]))
        return sorted(seen, key=lambda c: c.t) if held else seen

    def close(self) -> None:
        with self._lock:
            if self._command_sub is not None:
                self._node.destroy_subscription(self._command_sub)
                self._command_sub = None
            if self._state_node is not None:
                self._state_node.destroy_node()
                self._state_node = self._joint_sub = self._imu_sub = None
            if self._pub is not None:
                destroy = self._node.destroy_lifecycle_publisher if self._lifecycle_command else self._node.destroy_publisher
                destroy(self._pub)
                self._pub = None
