"""The one protocol every robot interface implements (``ros2`` and ``unitree_sdk``)."""

from __future__ import annotations

from typing import Callable, Literal, Protocol

from bcg_robot.wire import LowCommand

from bcg_policy_node.interfaces.robot_state import RobotState

InterfaceKind = Literal["ros2", "unitree_sdk"]
INTERFACE_KINDS: tuple[str, ...] = ("ros2", "unitree_sdk")


class RobotInterface(Protocol):
    """State in, commands out. Thread-safe: state arrives on the transport's threads."""

    kind: str

    def latest_state(self) -> RobotState | None:
        """The newest state sample, or None before the first one."""

    def send(self, command: LowCommand) -> None:
        """Send one command for all motors (motor order)."""

    def watch_commands(self, callback: Callable[[float], None]) -> None:
        """Call ``callback(monotonic_time)`` for every command any process sends (sentinel)."""

    def close(self) -> None:
        """Stop the transport's threads and release its endpoints."""
