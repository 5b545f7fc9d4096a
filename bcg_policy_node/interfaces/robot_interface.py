"""The one protocol every robot interface implements (``ros2`` and ``unitree_sdk``)."""

from __future__ import annotations

from typing import Protocol

from bcg_robot.wire import TRANSPORTS, LowCommand, Transport

from bcg_policy_node.interfaces.robot_state import RobotState, SeenCommand

InterfaceKind = Transport
INTERFACE_KINDS: tuple[str, ...] = TRANSPORTS


class RobotInterface(Protocol):
    """State in, commands out. Thread-safe: state arrives on the transport's threads."""

    kind: str

    def latest_state(self, wait_s: float = 0.0) -> RobotState | None:
        """The newest state sample, or None before the first one. With ``wait_s`` > 0, wait up
        to that long for the next sample to arrive first (a tick aligned to state arrival)."""

    def send(self, command: LowCommand) -> None:
        """Send one command for all motors (motor order)."""

    def take_commands(self) -> list[SeenCommand]:
        """Commands other writers sent to the motors since the last call, each with its writer
        (``watch_commands`` at construction; empty otherwise)."""

    def close(self) -> None:
        """Stop the transport's threads and release its endpoints."""
