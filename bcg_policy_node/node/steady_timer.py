"""Timers on the steady clock.

``Node.create_timer`` without a ``clock`` runs on the node's ROS clock: the system's wall
clock, or ``/clock`` under ``use_sim_time``. A wall clock stepped back by J seconds (NTP or
chrony stepping a robot PC that ran ahead, ``date -s``) stops such a timer for J seconds, and
a ``use_sim_time`` with no ``/clock`` stops it for good. For the 50 Hz control tick and the
sentinel's check and heartbeat that would be every watchdog, the e-stop and the takeover
gone at once, with the drives holding the last target. Every timer of the node, the
sentinel and the bridge therefore runs on the steady (monotonic) clock, the clock the
safety logic itself measures time with (``time.monotonic``).
"""

from __future__ import annotations

from typing import Callable

from rclpy.callback_groups import CallbackGroup
from rclpy.clock import Clock, ClockType
from rclpy.node import Node
from rclpy.timer import Timer


def steady_timer(node: Node, period_s: float, callback: Callable[[], None],
                 callback_group: CallbackGroup | None = None) -> Timer:
    """``node.create_timer`` on the steady clock."""
    return node.create_timer(period_s, callback, callback_group=callback_group, clock=Clock(clock_type=ClockType.STEADY_TIME))
