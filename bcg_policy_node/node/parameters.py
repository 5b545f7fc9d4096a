"""Node parameters: read once at start-up, and none the node did not declare.

rclpy drops an override whose name the node does not declare, so a typo
(``deadman_timout_s:=0.5``) would run with the default (here: no deadman). Every node
of this package refuses them after declaring its own, with a one-line error (exit 2).

The nodes read their parameters once, when they start, and validate them there. A
parameter changed at run time (``ros2 param set``) would be reported as set and never be
used (a new policy path, a NaN deadman timeout): so every parameter is declared read-only,
and rclpy refuses the change ("read-only parameter"). Restart the node to change one.
"""

from __future__ import annotations

import difflib

from rcl_interfaces.msg import ParameterDescriptor
from rclpy.node import Node

from bcg_robot.errors import BCGInputError

# consumed when a publisher or subscription is created (rclpy's QoS overrides), not declared up front
_CONSUMED_LATER = ("qos_overrides.",)


def declare_startup_parameter(node: Node, name: str, default):
    """Declare ``name`` read-only with ``default`` (its type is the parameter's) and return its value."""
    descriptor = ParameterDescriptor(read_only=True, description="read once at start-up: restart the node to change it")
    return node.declare_parameter(name, default, descriptor).value


def undeclared_parameters(node: Node) -> list[str]:
    """Names set for ``node`` (``-p``, a params file, launch) that it has not declared."""
    overrides = getattr(node, "_parameter_overrides", {})  # rclpy keeps them here for declare_parameter
    return sorted(name for name in overrides
                  if not node.has_parameter(name) and not name.startswith(_CONSUMED_LATER))


def reject_undeclared_parameters(node: Node) -> None:
    """Raise :class:`BCGInputError` naming the first undeclared parameter (call after declaring all)."""
    unknown = undeclared_parameters(node)
    if not unknown:
        return
    declared = sorted(node.list_parameters([], 0).names)
    close = difflib.get_close_matches(unknown[0], declared, n=1)
    hint = f" (did you mean '{close[0]}'?)" if close else f"; it takes: {', '.join(declared)}"
    more = f" (and {len(unknown) - 1} more: {', '.join(unknown[1:])})" if len(unknown) > 1 else ""
    raise BCGInputError(node.get_name(), f"unknown parameter '{unknown[0]}'{hint}{more}")
