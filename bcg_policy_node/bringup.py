"""The deployment's processes as plain data: policy node and sentinel, for launch files and sim-to-sim.

``launch/g1_real.launch.py`` (policy node on the ``unitree_sdk`` transport + sentinel, on
the robot) builds its nodes from :func:`g1_real_nodes_from_launch`; the simulator side
(:mod:`bcg_sim_bridge.node_list`: ``launch/sim2sim.launch.py`` and ``bcg-sim2sim``) adds
the sim bridge to the same :func:`policy_node_spec` and :func:`sentinel_spec`, so the
robot and the simulator start the node and the sentinel alike. Nothing here imports ROS,
launch, the sim bridge or MuJoCo: the real launch file runs on a robot PC without them.

Transport names are :data:`bcg_robot.wire.TRANSPORTS` (``ros2``, ``unitree_sdk``): the
node's and the sentinel's ``kind`` parameter and the bridge's ``interface`` take the same
name for the same transport.
"""

from __future__ import annotations

import dataclasses
import difflib
import sys
from collections.abc import Iterable, Sequence
from typing import Any, Literal

from bcg_policy_node.config.safety_config import DEFAULT_SAFETY_CONFIG
from bcg_policy_node.sentinel.sentinel_watch import DEFAULT_TIMEOUT_S, sentinel_timeout_for
from bcg_robot.config import DEFAULT_ROBOT_CONFIG
from bcg_robot.paths import PACKAGE, resolve_share_path, share_dir
from bcg_robot.wire import TRANSPORT_UNITREE_SDK, TRANSPORTS

Role = Literal["bridge", "policy", "sentinel"]
REAL_SDK_DOMAIN = 0  # the robot's DDS domain (the simulator convention is 1)


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
        return [python, "-m", self.module, "--ros-args", "-r", f"__node:={self.name}",
                *parameter_args(self.parameter_dict())]


def parameter_args(params: dict[str, Any]) -> list[str]:
    """``-p key:=value`` for each parameter (after ``--ros-args``)."""
    argv = []
    for key, value in params.items():
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


def merged_parameters(params: dict[str, Any], extra: dict[str, Any] | None) -> tuple[tuple[str, Any], ...]:
    """``params`` with ``extra`` on top, as NodeSpec.parameters."""
    merged = {**params, **(extra or {})}
    return tuple(merged.items())


def check_transport(transport: str) -> None:
    if transport not in TRANSPORTS:
        raise ValueError(f"unknown interface '{transport}' ({' | '.join(TRANSPORTS)})")


def policy_node_spec(transport: str, policy: str, robot_config: str, sdk_domain: int, network_interface: str,
                     release_sport_mode: bool, extra: dict[str, Any] | None = None) -> NodeSpec:
    check_transport(transport)
    params = {
        "policy_path": policy,
        "robot_config": robot_config,
        "kind": transport,
        "domain_id": sdk_domain,
        "network_interface": network_interface,
        "release_sport_mode": release_sport_mode,
    }
    return NodeSpec("policy", "policy_node", "policy_node", "bcg_policy_node.node.policy_node",
                    merged_parameters(params, extra), lifecycle=True)


def sentinel_spec(transport: str, robot_config: str, sdk_domain: int, network_interface: str,
                  extra: dict[str, Any] | None = None) -> NodeSpec:
    check_transport(transport)
    params = {
        "robot_config": robot_config,
        "kind": transport,
        "domain_id": sdk_domain,
        "network_interface": network_interface,
    }
    return NodeSpec("sentinel", "policy_sentinel", "sentinel", "bcg_policy_node.sentinel.sentinel_node",
                    merged_parameters(params, extra))


def g1_real_nodes(
    network_interface: str,
    policy: str,
    robot_config: str = str(DEFAULT_ROBOT_CONFIG),
    sdk_domain: int = REAL_SDK_DOMAIN,
    safety_config: str = str(DEFAULT_SAFETY_CONFIG),
    deadman_timeout_s: float = 0.0,
) -> list[NodeSpec]:
    """Policy node on the ``unitree_sdk`` transport plus its sentinel, on the robot's network
    interface, with the same robot and safety configs."""
    if not network_interface.strip():
        raise ValueError("the G1's network interface is required (e.g. eth0 on the 192.168.123.x subnet)")
    safety = {"safety_config": safety_config}
    # a safety config with a long stale limit needs a slower sentinel (it refuses to start
    # otherwise, and the node then waits in PASSIVE for a sentinel that never comes)
    timeout = _sentinel_timeout(robot_config, safety_config)
    return [
        policy_node_spec(TRANSPORT_UNITREE_SDK, policy, robot_config, sdk_domain, network_interface,
                         release_sport_mode=True, extra={**safety, "deadman_timeout_s": deadman_timeout_s}),
        sentinel_spec(TRANSPORT_UNITREE_SDK, robot_config, sdk_domain, network_interface,
                      extra={**safety, **({} if timeout == DEFAULT_TIMEOUT_S else {"timeout_s": timeout})}),
    ]


def _sentinel_timeout(robot_config: str, safety_config: str) -> float:
    from bcg_policy_node.config.safety_config import load_safety_config
    from bcg_robot.config import load_robot_config

    control_dt = load_robot_config(robot_config, check_model=False).control_dt
    return sentinel_timeout_for(load_safety_config(safety_config).stale_after(control_dt), control_dt)


@dataclasses.dataclass(frozen=True)
class LaunchArgument:
    name: str
    default: str
    description: str


G1_REAL_LAUNCH_ARGUMENTS = (
    LaunchArgument("network_interface", "", "the NIC on the G1's 192.168.123.x subnet (required)"),
    LaunchArgument("policy", "", "policy ONNX file"),
    LaunchArgument("robot_config", str(DEFAULT_ROBOT_CONFIG), "robot config YAML"),
    LaunchArgument("safety_config", str(DEFAULT_SAFETY_CONFIG), "safety config YAML (node and sentinel)"),
    LaunchArgument("domain_id", str(REAL_SDK_DOMAIN), "Unitree DDS domain id (0 on the robot)"),
    LaunchArgument("deadman_timeout_s", "0.0", "DAMP when the operator's policy_node/deadman is silent this long "
                                               "(0: no deadman; the node checks the range)"),
)


def check_launch_argument_names(given: Iterable[str], declared: Sequence[LaunchArgument], launch_file: str) -> None:
    """Refuse a launch argument that is not declared but close to one that is: launch
    ignores undeclared names, so ``polcy:=mine.onnx`` would run the default policy, and
    ``deadman:=0.5`` the robot without a deadman. Close: a near spelling, or a name that is a
    declared one shortened or lengthened at a word (``deadman``, ``safety``, ``policy_path``).
    Other undeclared names pass (an including launch file's own arguments reach us too)."""
    names = [a.name for a in declared]
    for name in sorted(set(given) - set(names)):
        close = difflib.get_close_matches(name, names, n=1, cutoff=0.75) or [
            n for n in names if n.startswith(name + "_") or name.startswith(n + "_")]
        if close:
            raise ValueError(f"{launch_file}: unknown launch argument '{name}' (did you mean '{close[0]}'?)")


def int_launch_argument(args: dict[str, str], name: str, launch_file: str) -> int:
    return _number_launch_argument(args, name, launch_file, int)


def float_launch_argument(args: dict[str, str], name: str, launch_file: str) -> float:
    return _number_launch_argument(args, name, launch_file, float)


def _number_launch_argument(args: dict[str, str], name: str, launch_file: str, kind: type):
    try:
        return kind(args[name])
    except ValueError:
        raise ValueError(f"{launch_file}: launch argument {name}:='{args[name]}' is not "
                         f"{'an integer' if kind is int else 'a number'}") from None


def file_launch_argument(args: dict[str, str], name: str, launch_file: str) -> str:
    """The file a launch argument names, as an absolute path: as given (absolute, or relative to
    the working directory), else the installed file of that name (``models/g1_squat.onnx``).
    Checked here, at launch, rather than by a node's configure minutes later."""
    path = resolve_share_path(args[name]).resolve()
    if not path.is_file():
        raise ValueError(f"{launch_file}: launch argument {name}:='{args[name]}' is not a file "
                         f"(looked in the working directory and in {share_dir()})")
    return str(path)


def g1_real_nodes_from_launch(args: dict[str, str]) -> list[NodeSpec]:
    """``g1_real.launch.py``: the node list from its (string) launch arguments."""
    launch_file = "g1_real.launch.py"
    if not args["policy"]:
        raise ValueError(f"{launch_file} needs policy:=<ONNX file>")
    files = {name: file_launch_argument(args, name, launch_file) for name in ("policy", "robot_config", "safety_config")}
    return g1_real_nodes(args["network_interface"], files["policy"], files["robot_config"],
                         int_launch_argument(args, "domain_id", launch_file), files["safety_config"],
                         float_launch_argument(args, "deadman_timeout_s", launch_file))
