"""Node parameters given on the command line or by launch that the node never declared.

rclpy drops an override whose name the node does not declare, so a typo
(``deadman_timout_s:=0.5``) would run with the default (here: no deadman). Every node
of this package refuses them after declaring its own, with a one-line error (exit 2).
"""

from __future__ import annotations

import difflib

from rclpy.node import Node

from bcg_robot.errors import BCGInputError

# consumed when a publisher or subscription is created (rclpy's QoS overrides), not declared up front
_CONSUMED_LATER = ("qos_overrides.",)


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
