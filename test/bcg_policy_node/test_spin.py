"""run_node: the process shell of every node (policy node, sentinel, bridge)."""

import rclpy
import pytest
from rclpy.exceptions import InvalidHandle
from rclpy.node import Node

from bcg_policy_node.node.spin import run_node


def test_a_close_that_raises_still_destroys_the_node_and_shuts_ros_down():
    """The bridge's close re-raises its physics loop's failure: the node must still be
    destroyed and rclpy shut down (the exception then ends the process)."""
    made = []

    def make():
        made.append(Node("spin_close_raises"))
        return made[0]

    def close(node):
        raise RuntimeError("physics loop failed")

    # start returns an error: run_node does not spin, and goes straight to its cleanup
    with pytest.raises(RuntimeError, match="physics loop failed"):
        run_node("spin_test", make, args=[], start=lambda node: "stop at once", close=close)
    assert not rclpy.ok()
    with pytest.raises(InvalidHandle):  # destroy_node() released it
        made[0].get_name()
