"""Who wrote a ``lowcmd`` message, as the sentinel's ros2 interface tells it: each publisher is a
writer of its own, so a second node bearing the policy node's name (started twice by mistake)
is not the node's command stream to the sentinel. In this process, over DDS."""

import itertools
import os
import time

import numpy as np
import rclpy
from rclpy.executors import SingleThreadedExecutor
from std_msgs.msg import Float64MultiArray

from bcg_robot.config import load_robot_config
from bcg_robot.wire import COMMAND_TOPIC, LowCommand

from bcg_policy_node import operator_api as api
from bcg_policy_node.interfaces.ros2_interface import (COMMAND_QOS, Ros2RobotInterface, command_message,
                                                       created_publisher_gid, gid_text, publisher_gids)
from bcg_policy_node.sentinel.sentinel_watch import SentinelState, SentinelWatch

NAMESPACES = (f"/ros2_interface_writers_{os.getpid()}_{i}" for i in itertools.count())


def test_two_nodes_of_the_policy_nodes_name_are_two_writers_and_the_second_cannot_keep_the_sentinel_off():
    robot = load_robot_config(check_model=False)
    context = rclpy.Context()
    rclpy.init(context=context)
    namespace = next(NAMESPACES)
    nodes = {name: rclpy.create_node(node_name, namespace=namespace, context=context, enable_rosout=False,
                                     start_parameter_services=False)
             for name, node_name in (("sentinel", api.SENTINEL_NODE_NAME), ("real", api.NODE_NAME), ("twin", api.NODE_NAME))}
    executor = SingleThreadedExecutor(context=context)
    executor.add_node(nodes["sentinel"])
    try:
        interface = Ros2RobotInterface(nodes["sentinel"], robot.joint_names, subscribe_state=False, watch_commands=True,
                                       writer_roles=api.WRITER_ROLES)  # as the sentinel opens it
        publishers, gids = {}, {}
        for name in ("real", "twin"):
            before = publisher_gids(nodes[name], COMMAND_TOPIC)
            publishers[name] = nodes[name].create_publisher(Float64MultiArray, COMMAND_TOPIC, COMMAND_QOS)
            gids[name] = gid_text(created_publisher_gid(nodes[name], COMMAND_TOPIC, before))
        message = command_message(LowCommand.damping(np.ones(robot.num_joints)))
        writers = {}
        deadline = time.monotonic() + 20
        while len(writers) < 2:  # discovery: until the graph names both publishers' node
            assert time.monotonic() < deadline, writers
            for publisher in publishers.values():  # one at a time: the sentinel reads lowcmd at depth 1
                publisher.publish(message)
                executor.spin_once(timeout_sec=0.02)
                for seen in interface.take_commands():
                    if seen.writer.role != "foreign":
                        writers[seen.writer.ident] = seen.writer
        by_gid = {name: [w for ident, w in writers.items() if gids[name] in ident] for name in gids}
        assert all(len(found) == 1 and found[0].role == "node" for found in by_gid.values()), (gids, writers)
        real, twin = by_gid["real"][0], by_gid["twin"][0]
        assert api.NODE_NAME in real.ident and api.NODE_NAME in twin.ident
        interface.close()
    finally:
        executor.shutdown()
        for node in nodes.values():
            node.destroy_node()
        rclpy.shutdown(context=context)

    # the sentinel's decision with these two writers: the first node publisher heard is the node
    watch = SentinelWatch(0.1)
    t = 0.0
    for _ in range(40):  # both write; the node heartbeats
        watch.on_heartbeat(t)
        assert watch.on_command(t, real) is None
        report = watch.on_command(t, twin)
        if t == 0.0:
            assert report == f"foreign_commander: {twin.ident} writes motor commands; the node's commands come from {real.ident}"
        watch.check(t)
        t += 0.005
    assert watch.state is SentinelState.WATCHING
    for _ in range(40):  # the real node's commands stop; its twin writes on (and a heartbeat still comes)
        watch.on_heartbeat(t)
        watch.on_command(t, twin)
        watch.check(t)
        t += 0.005
    assert watch.state is SentinelState.TAKEN_OVER and watch.reason.startswith("policy node command stream silent")


def test_the_nodes_own_command_does_not_displace_a_foreign_one_that_arrived_during_its_tick():
    """A foreign command that arrives while the node's executor is busy in its tick waits in the
    reader; the node's own command, published at the end of that tick, arrives behind it. At depth
    1 it replaced the foreign one, and a writer in that phase of every tick was never seen."""
    robot = load_robot_config(check_model=False)
    context = rclpy.Context()
    rclpy.init(context=context)
    namespace = next(NAMESPACES)
    node = rclpy.create_node(api.NODE_NAME, namespace=namespace, context=context, enable_rosout=False,
                             start_parameter_services=False)
    other = rclpy.create_node("teleop_writer", namespace=namespace, context=context, enable_rosout=False,
                              start_parameter_services=False)
    executor = SingleThreadedExecutor(context=context)
    executor.add_node(node)
    try:
        interface = Ros2RobotInterface(node, robot.joint_names, subscribe_state=False, watch_commands=True,
                                       writer_roles=api.WRITER_ROLES)  # as the policy node opens it
        foreign = other.create_publisher(Float64MultiArray, COMMAND_TOPIC, COMMAND_QOS)
        message = command_message(LowCommand.damping(np.ones(robot.num_joints)))
        own = LowCommand.zero_torque(robot.num_joints)
        deadline = time.monotonic() + 20
        while True:  # discovery: until the graph names the foreign publisher
            assert time.monotonic() < deadline
            foreign.publish(message)
            executor.spin_once(timeout_sec=0.02)
            if any(c.writer.role == "foreign" and "teleop_writer" in c.writer.ident for c in interface.take_commands()):
                break
        for _ in range(20):
            executor.spin_once(timeout_sec=0.01)
        interface.take_commands()
        for _ in range(3):  # a tick: the foreign command arrives, then the node sends, then the executor runs
            foreign.publish(message)
            time.sleep(0.1)
            interface.send(own)
            time.sleep(0.1)
            for _ in range(5):
                executor.spin_once(timeout_sec=0.01)
            seen = interface.take_commands()
            assert [c.writer.role for c in seen] == ["foreign"] and "teleop_writer" in seen[0].writer.ident, seen
        interface.close()
    finally:
        executor.shutdown()
        other.destroy_node()
        node.destroy_node()
        rclpy.shutdown(context=context)


def inject(interface, gid: bytes) -> float:
    """A lowcmd message of publisher ``gid`` as the subscription hands it to the interface
    (the GID is all the interface reads of it); returns about when it arrived."""
    t = time.monotonic()
    interface._on_command(b"", {"publisher_gid": {"data": list(gid)}})
    return t


def test_a_publisher_the_graph_cannot_name_yet_is_held_back_for_the_sentinel_and_not_for_the_node():
    robot = load_robot_config(check_model=False)
    context = rclpy.Context()
    rclpy.init(context=context)
    try:
        node = rclpy.create_node(api.SENTINEL_NODE_NAME, namespace=next(NAMESPACES), context=context, enable_rosout=False,
                                 start_parameter_services=False)
        unknown = bytes(range(1, 17))  # no publisher anywhere has this GID
        # the node (0): an unknown writer at once
        interface = Ros2RobotInterface(node, robot.joint_names, subscribe_state=False, watch_commands=True,
                                       writer_roles=api.WRITER_ROLES)
        t = inject(interface, unknown)
        [seen] = interface.take_commands()
        assert seen.writer.role == "foreign" and seen.writer.ident == f"unidentified publisher {gid_text(unknown)}"
        assert t <= seen.t <= time.monotonic()
        interface.close()
        # the sentinel: held back for identify_within_s from its first message, then an unknown writer
        interface = Ros2RobotInterface(node, robot.joint_names, subscribe_state=False, watch_commands=True,
                                       writer_roles=api.WRITER_ROLES, identify_within_s=0.3)
        first = inject(interface, unknown)
        time.sleep(0.1)
        second = inject(interface, unknown)
        assert interface.take_commands() == []
        time.sleep(max(0.0, first + 0.35 - time.monotonic()))
        third = inject(interface, unknown)  # past the wait: not held
        seen = interface.take_commands()
        assert [c.writer.ident for c in seen] == [f"unidentified publisher {gid_text(unknown)}"] * 3
        assert [c.writer.role for c in seen] == ["foreign"] * 3
        assert first <= seen[0].t < second <= seen[1].t < third <= seen[2].t  # oldest first, when they came
        interface.close()
        node.destroy_node()
    finally:
        rclpy.shutdown(context=context)


def test_the_sentinel_names_the_node_whose_first_commands_come_before_its_discovery():
    """The policy node's first commands, heard before the graph names their publisher's node,
    are the node's once it does (they were a foreign commander's, and not the node's stream).
    The sentinel's DDS participant starts after the node's publisher exists: until discovery
    between the two participants has run, its graph knows neither the endpoint nor its node."""
    robot = load_robot_config(check_model=False)
    namespace = next(NAMESPACES)
    node_context = rclpy.Context()
    rclpy.init(context=node_context)
    try:
        node = rclpy.create_node(api.NODE_NAME, namespace=namespace, context=node_context, enable_rosout=False,
                                 start_parameter_services=False)
        before = publisher_gids(node, COMMAND_TOPIC)
        node.create_publisher(Float64MultiArray, COMMAND_TOPIC, COMMAND_QOS)
        gid = created_publisher_gid(node, COMMAND_TOPIC, before)
        assert gid is not None
        for _ in range(10):  # a fresh sentinel each: discovery can beat the look (loaded: 4 of 8 runs, at most 2 in a row)
            context = rclpy.Context()
            rclpy.init(context=context)
            try:
                sentinel = rclpy.create_node(api.SENTINEL_NODE_NAME, namespace=namespace, context=context,
                                             enable_rosout=False, start_parameter_services=False)
                interface = Ros2RobotInterface(sentinel, robot.joint_names, subscribe_state=False, watch_commands=True,
                                               writer_roles=api.WRITER_ROLES, identify_within_s=10.0)
                if gid in publisher_gids(sentinel, COMMAND_TOPIC):
                    continue
                t = inject(interface, gid)
                early = interface.take_commands()
                if early:  # discovery ran between the look and the message: named already, try again
                    assert [c.writer.role for c in early] == ["node"], early
                    continue
                deadline = time.monotonic() + 20
                while not (seen := interface.take_commands()):
                    assert time.monotonic() < deadline, "the graph never named the node's publisher"
                    time.sleep(0.02)
                [command] = seen
                assert command.writer.role == "node"
                assert command.writer.ident == f"{api.NODE_NAME} (publisher {gid_text(gid)})"
                assert t <= command.t < t + 0.1  # dated when it came, not when named
                break
            finally:
                rclpy.shutdown(context=context)
        else:
            raise AssertionError("every fresh sentinel knew the publisher at once: the hold was never exercised")
        node.destroy_node()
    finally:
        rclpy.shutdown(context=node_context)
