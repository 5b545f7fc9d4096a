"""One description of the deployment's processes for both launch files and bcg-sim2sim."""

import ast
import importlib.util
from pathlib import Path

import pytest

from bcg_robot.paths import share_file
from bcg_sim_bridge import node_list
from bcg_sim_bridge.node_list import (
    G1_REAL_LAUNCH_ARGUMENTS, SIM2SIM_LAUNCH_ARGUMENTS, g1_real_nodes_from_launch, sim2sim_nodes,
    sim2sim_nodes_from_launch,
)

LAUNCH = Path(__file__).resolve().parents[2] / "launch"


def _defaults(arguments):
    return {a.name: a.default for a in arguments}


@pytest.mark.parametrize("interface,backend", [("ros2", "ros2"), ("unitree_dds", "unitree_sdk")])
def test_sim2sim_has_bridge_node_and_sentinel_on_matching_interfaces(interface, backend):
    specs = sim2sim_nodes(interface, "/p.onnx", sdk_domain=7)
    assert [s.role for s in specs] == ["bridge", "policy", "sentinel"]
    bridge, policy, sentinel = (s.parameter_dict() for s in specs)
    assert bridge["interface"] == interface and bridge["domain_id"] == 7
    assert policy["kind"] == sentinel["kind"] == backend
    assert policy["domain_id"] == sentinel["domain_id"] == 7
    assert policy["policy_path"] == "/p.onnx"
    assert policy["release_sport_mode"] is False  # the bridge has no motion switcher
    assert specs[1].lifecycle and not specs[0].lifecycle and not specs[2].lifecycle
    # every console script named here is installed by setup.py
    setup_py = (Path(__file__).resolve().parents[2] / "setup.py").read_text()
    for spec in specs:
        assert f'"{spec.executable} = ' in setup_py
        assert importlib.util.find_spec(spec.module.rsplit(".", 1)[0]) is not None


def test_g1_real_is_node_and_sentinel_on_the_sdk_with_sport_mode_release():
    args = {**_defaults(G1_REAL_LAUNCH_ARGUMENTS), "network_interface": "eth0", "policy": "/p.onnx"}
    specs = g1_real_nodes_from_launch(args)
    assert [s.role for s in specs] == ["policy", "sentinel"]
    for spec in specs:
        p = spec.parameter_dict()
        assert (p["kind"], p["network_interface"], p["domain_id"]) == ("unitree_sdk", "eth0", 0)
    assert specs[0].parameter_dict()["release_sport_mode"] is True
    with pytest.raises(ValueError, match="network interface"):
        g1_real_nodes_from_launch({**args, "network_interface": ""})
    with pytest.raises(ValueError, match="policy"):
        g1_real_nodes_from_launch({**args, "policy": ""})


def test_launch_defaults_give_the_same_list_as_sim2sim():
    args = {**_defaults(SIM2SIM_LAUNCH_ARGUMENTS), "policy": "/p.onnx"}
    assert sim2sim_nodes_from_launch(args) == sim2sim_nodes("ros2", "/p.onnx")
    with pytest.raises(ValueError, match="interface"):
        sim2sim_nodes_from_launch({**args, "interface": "serial"})


def test_command_line_of_a_bare_process():
    spec = sim2sim_nodes("unitree_dds", "/p.onnx")[0]
    argv = spec.command("python")
    assert argv[:3] == ["python", "-m", "bcg_sim_bridge.bridge_node"]
    assert "interface:=unitree_dds" in argv and "__node:=sim_bridge" in argv


@pytest.mark.parametrize("name,builder", [("sim2sim.launch.py", "sim2sim_nodes_from_launch"),
                                          ("g1_real.launch.py", "g1_real_nodes_from_launch")])
def test_launch_files_build_their_nodes_from_the_shared_description(name, builder):
    """Checked without launch_ros (not installable here): the file imports and calls the shared builder."""
    tree = ast.parse((LAUNCH / name).read_text())
    imported = {a.name for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and n.module == "bcg_sim_bridge.node_list"
                for a in n.names}
    called = {n.func.id for n in ast.walk(tree) if isinstance(n, ast.Call) and isinstance(n.func, ast.Name)}
    assert builder in imported and builder in called
    assert "generate_launch_description" in {n.name for n in tree.body if isinstance(n, ast.FunctionDef)}
    launch_ros_imports = {n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)}
    assert "launch_ros.actions" in launch_ros_imports  # the real launch_ros API


def test_launch_files_are_installed():
    assert (share_file("launch") / "sim2sim.launch.py").is_file()
    assert node_list.PACKAGE == "bcg_policy_node"


def test_launch_files_load_with_launch_ros():
    """Runs only where launch_ros is importable (a ROS 2 install); reported as skipped elsewhere."""
    pytest.importorskip("launch_ros", reason="launch_ros is not installable from PyPI: launch test NOT RUN here")
    from launch.launch_description_sources import PythonLaunchDescriptionSource

    for name in ("sim2sim.launch.py", "g1_real.launch.py"):
        description = PythonLaunchDescriptionSource(str(LAUNCH / name)).get_launch_description(None)
        assert description.entities
