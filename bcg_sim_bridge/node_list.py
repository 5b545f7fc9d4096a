"""The process list of a deployment, as plain data: ONE description for launch files and sim-to-sim.

``launch/g1_real.launch.py`` (policy node on the ``unitree_sdk`` backend + sentinel),
``launch/sim2sim.launch.py`` (bridge + policy node + sentinel) and ``bcg-sim2sim``
(which starts the same processes without launch_ros) all build their nodes from the
functions here, so the three cannot drift. Nothing here imports ROS or launch.

Interface names: the bridge speaks ``ros2`` or ``unitree_dds`` (its emulation of the
robot's DDS), the policy node's matching backends are ``ros2`` and ``unitree_sdk``.
"""

from __future__ import annotations

import dataclasses
import sys
from typing import Any, Literal

from bcg_robot.config import DEFAULT_ROBOT_CONFIG
from bcg_sim_bridge.config import DEFAULT_BRIDGE_CONFIG, INTERFACES

PACKAGE = "bcg_policy_node"
Role = Literal["bridge", "policy", "sentinel"]
NODE_BACKEND = {"ros2": "ros2", "unitree_dds": "unitree_sdk"}  # bridge interface -> policy node backend
SIM_SDK_DOMAIN = 1  # the simulator convention (the robot uses 0)
REAL_SDK_DOMAIN = 0


@dataclasses.dataclass(frozen=True)
class NodeSpec:
    """One process: what launch_ros needs (package, executable, name, parameters, env) and how to run it bare."""

    role: Role
    name: str
    executable: str  # console script (setup.py CONSOLE_SCRIPTS)
    module: str  # ``python -m module`` equivalent, for running without an install
    parameters: tuple[tuple[str, Any], ...] = ()
    env: tuple[tuple[str, str], ...] = ()
    lifecycle: bool = False
    package: str = PACKAGE

    def parameter_dict(self) -> dict[str, Any]:
        return dict(self.parameters)

    def env_dict(self) -> dict[str, str]:
        return dict(self.env)

    def command(self, python: str = sys.executable) -> list[str]:
        """argv to start this node as a plain process (what ``bcg-sim2sim`` does)."""
        argv = [python, "-m", self.module, "--ros-args", "-r", f"__node:={self.name}"]
        for key, value in self.parameters:
            argv += ["-p", f"{key}:={_ros_arg_value(value)}"]
        return argv


def _ros_arg_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return repr(value)
    if isinstance(value, str):
        return value if value else "''"
    return str(value)


def _with(params: dict[str, Any], extra: dict[str, Any] | None) -> tuple[tuple[str, Any], ...]:
    merged = {**params, **(extra or {})}
    return tuple(merged.items())


def policy_node_spec(backend: str, policy: str, robot_config: str, sdk_domain: int, network_interface: str,
                     release_sport_mode: bool, extra: dict[str, Any] | None = None) -> NodeSpec:
    params = {
        "policy_path": policy,
        "robot_config": robot_config,
        "kind": backend,
        "domain_id": sdk_domain,
        "network_interface": network_interface,
        "release_sport_mode": release_sport_mode,
    }
    return NodeSpec("policy", "policy_node", "policy_node", "bcg_policy_node.node.policy_node",
                    _with(params, extra), lifecycle=True)


def sentinel_spec(backend: str, robot_config: str, sdk_domain: int, network_interface: str,
                  extra: dict[str, Any] | None = None) -> NodeSpec:
    params = {
        "robot_config": robot_config,
        "kind": backend,
        "domain_id": sdk_domain,
        "network_interface": network_interface,
    }
    return NodeSpec("sentinel", "policy_sentinel", "sentinel", "bcg_policy_node.sentinel.sentinel_node",
                    _with(params, extra))


def bridge_spec(interface: str, robot_config: str, bridge_config: str, sdk_domain: int,
                extra: dict[str, Any] | None = None) -> NodeSpec:
    params = {
        "config": bridge_config,
        "robot_config": robot_config,
        "interface": interface,
        "domain_id": sdk_domain,
        "network_interface": "lo",
    }
    return NodeSpec("bridge", "sim_bridge", "sim_bridge", "bcg_sim_bridge.bridge_node", _with(params, extra))


def sim2sim_nodes(
    interface: str = "ros2",
    policy: str = "",
    robot_config: str = str(DEFAULT_ROBOT_CONFIG),
    bridge_config: str = str(DEFAULT_BRIDGE_CONFIG),
    sdk_domain: int = SIM_SDK_DOMAIN,
    bridge_extra: dict[str, Any] | None = None,
    policy_extra: dict[str, Any] | None = None,
    sentinel_extra: dict[str, Any] | None = None,
) -> list[NodeSpec]:
    """Bridge, policy node and sentinel talking over ``interface`` (``ros2`` | ``unitree_dds``) on loopback."""
    if interface not in INTERFACES:
        raise ValueError(f"unknown interface '{interface}' ({' | '.join(INTERFACES)})")
    backend = NODE_BACKEND[interface]
    return [
        bridge_spec(interface, robot_config, bridge_config, sdk_domain, bridge_extra),
        policy_node_spec(backend, policy, robot_config, sdk_domain, "lo", release_sport_mode=False, extra=policy_extra),
        sentinel_spec(backend, robot_config, sdk_domain, "lo", sentinel_extra),
    ]


def g1_real_nodes(
    network_interface: str,
    policy: str,
    robot_config: str = str(DEFAULT_ROBOT_CONFIG),
    sdk_domain: int = REAL_SDK_DOMAIN,
) -> list[NodeSpec]:
    """Policy node on the ``unitree_sdk`` backend plus its sentinel, on the robot's network interface."""
    if not network_interface:
        raise ValueError("the G1's network interface is required (e.g. eth0 on the 192.168.123.x subnet)")
    return [
        policy_node_spec("unitree_sdk", policy, robot_config, sdk_domain, network_interface, release_sport_mode=True),
        sentinel_spec("unitree_sdk", robot_config, sdk_domain, network_interface),
    ]


@dataclasses.dataclass(frozen=True)
class LaunchArgument:
    name: str
    default: str
    description: str


SIM2SIM_LAUNCH_ARGUMENTS = (
    LaunchArgument("interface", "ros2", "ros2 | unitree_dds: the transport between bridge and policy node"),
    LaunchArgument("policy", "", "policy ONNX file (empty: the shipped policy in models/)"),
    LaunchArgument("robot_config", str(DEFAULT_ROBOT_CONFIG), "robot config YAML"),
    LaunchArgument("bridge_config", str(DEFAULT_BRIDGE_CONFIG), "sim bridge config YAML"),
    LaunchArgument("sdk_domain", str(SIM_SDK_DOMAIN), "Unitree DDS domain of the emulation (unitree_dds)"),
)

G1_REAL_LAUNCH_ARGUMENTS = (
    LaunchArgument("network_interface", "", "the NIC on the G1's 192.168.123.x subnet (required)"),
    LaunchArgument("policy", "", "policy ONNX file"),
    LaunchArgument("robot_config", str(DEFAULT_ROBOT_CONFIG), "robot config YAML"),
    LaunchArgument("domain_id", str(REAL_SDK_DOMAIN), "Unitree DDS domain id (0 on the robot)"),
)


def sim2sim_nodes_from_launch(args: dict[str, str]) -> list[NodeSpec]:
    """``sim2sim.launch.py``: the node list from its (string) launch arguments."""
    return sim2sim_nodes(args["interface"], args["policy"], args["robot_config"], args["bridge_config"],
                         int(args["sdk_domain"]))


def g1_real_nodes_from_launch(args: dict[str, str]) -> list[NodeSpec]:
    """``g1_real.launch.py``: the node list from its (string) launch arguments."""
    if not args["policy"]:
        raise ValueError("g1_real.launch.py needs policy:=<ONNX file>")
    return g1_real_nodes(args["network_interface"], args["policy"], args["robot_config"], int(args["domain_id"]))


def resolve_launch_policy(policy: str, robot_config: str) -> str:
    """``sim2sim.launch.py``'s policy: as given, else the shipped one, else a default-pose export in the cache."""
    if policy:
        return policy
    from pathlib import Path

    from bcg_robot.config import load_robot_config
    from bcg_sim_bridge.policies import resolve_policy

    cache = Path.home() / ".cache" / "bcg"
    path, _ = resolve_policy("", load_robot_config(robot_config), cache)
    return str(path)
