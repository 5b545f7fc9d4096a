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
