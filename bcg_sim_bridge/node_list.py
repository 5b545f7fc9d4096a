"""The sim-to-sim process list: the sim bridge next to the policy node and sentinel of the bringup.

``launch/sim2sim.launch.py`` (bridge + policy node + sentinel) and ``bcg-sim2sim`` (which
starts the same processes without launch_ros) build their nodes from the functions here;
the policy node and the sentinel come from :mod:`bcg_policy_node.bringup`, the description
``launch/g1_real.launch.py`` uses on the robot, so the three cannot drift. Nothing here
imports ROS or launch.

The bridge's ``interface`` and the node's ``kind`` take the same transport name
(:data:`bcg_robot.wire.TRANSPORTS`).
"""

from __future__ import annotations

import dataclasses
from typing import Any

from bcg_policy_node.bringup import (LaunchArgument, NodeSpec, check_transport, file_launch_argument, int_launch_argument,
                                     merged_parameters, policy_node_spec, sentinel_spec)
from bcg_robot.config import DEFAULT_ROBOT_CONFIG
from bcg_robot.wire import TRANSPORT_ROS2, TRANSPORTS
from bcg_sim_bridge.config import DEFAULT_BRIDGE_CONFIG

SIM_SDK_DOMAIN = 1  # the simulator convention (the robot uses 0)
SIM_NETWORK_INTERFACE = "lo"


def bridge_spec(interface: str, robot_config: str, bridge_config: str, sdk_domain: int,
                extra: dict[str, Any] | None = None) -> NodeSpec:
    params = {
        "config": bridge_config,
        "robot_config": robot_config,
        "interface": interface,
        "domain_id": sdk_domain,
        "network_interface": SIM_NETWORK_INTERFACE,
    }
    return NodeSpec("bridge", "sim_bridge", "sim_bridge", "bcg_sim_bridge.bridge_node", merged_parameters(params, extra))


def sim2sim_nodes(
    interface: str = TRANSPORT_ROS2,
    policy: str = "",
    robot_config: str = str(DEFAULT_ROBOT_CONFIG),
    bridge_config: str = str(DEFAULT_BRIDGE_CONFIG),
    sdk_domain: int = SIM_SDK_DOMAIN,
    bridge_extra: dict[str, Any] | None = None,
    policy_extra: dict[str, Any] | None = None,
    sentinel_extra: dict[str, Any] | None = None,
) -> list[NodeSpec]:
    """Bridge, policy node and sentinel talking over ``interface`` (``ros2`` | ``unitree_sdk``) on loopback."""
    check_transport(interface)
    return [
        bridge_spec(interface, robot_config, bridge_config, sdk_domain, bridge_extra),
        policy_node_spec(interface, policy, robot_config, sdk_domain, SIM_NETWORK_INTERFACE, release_sport_mode=False,
                         extra=policy_extra),
        sentinel_spec(interface, robot_config, sdk_domain, SIM_NETWORK_INTERFACE, sentinel_extra),
    ]


SIM2SIM_LAUNCH_ARGUMENTS = (
    LaunchArgument("interface", TRANSPORT_ROS2, f"{' | '.join(TRANSPORTS)}: the transport between bridge and policy node"),
    LaunchArgument("policy", "", "policy ONNX file (empty: the shipped policy in models/)"),
    LaunchArgument("robot_config", str(DEFAULT_ROBOT_CONFIG), "robot config YAML"),
    LaunchArgument("bridge_config", str(DEFAULT_BRIDGE_CONFIG), "sim bridge config YAML"),
    LaunchArgument("sdk_domain", str(SIM_SDK_DOMAIN), "Unitree DDS domain of the emulation (unitree_sdk)"),
)


# the simulation's ROS traffic stays on this machine: on the robot's network, its sentinel's
# heartbeat and an operator's RUN would reach a real robot's node of the same names
SIM_ROS_ENV = (("ROS_AUTOMATIC_DISCOVERY_RANGE", "LOCALHOST"),)


def sim2sim_nodes_from_launch(args: dict[str, str]) -> list[NodeSpec]:
    """``sim2sim.launch.py``: the node list from its (string) launch arguments. Files are resolved
    and checked at launch, as ``g1_real``'s (a missing one stopped single processes, the launch
    running on); every process discovers only this machine's (:data:`SIM_ROS_ENV`)."""
    launch_file = "sim2sim.launch.py"
    files = {name: file_launch_argument(args, name, launch_file) for name in ("policy", "robot_config", "bridge_config")}
    specs = sim2sim_nodes(args["interface"], files["policy"], files["robot_config"], files["bridge_config"],
                          int_launch_argument(args, "sdk_domain", launch_file))
    return [dataclasses.replace(spec, env=spec.env + SIM_ROS_ENV) for spec in specs]


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
