"""The sim-to-sim process list: sim2sim.launch.py and bcg-sim2sim start the same bridge, node and sentinel."""

import ast
import dataclasses
import importlib.util
from pathlib import Path

import pytest

from bcg_policy_node.bringup import policy_node_spec, sentinel_spec
from bcg_robot.config import DEFAULT_ROBOT_CONFIG
from bcg_sim_bridge.config import DEFAULT_BRIDGE_CONFIG
from bcg_sim_bridge.node_list import SIM2SIM_LAUNCH_ARGUMENTS, sim2sim_nodes, sim2sim_nodes_from_launch

LAUNCH = Path(__file__).resolve().parents[2] / "launch"


def _defaults(arguments):
    return {a.name: a.default for a in arguments}


@pytest.mark.parametrize("interface", ["ros2", "unitree_sdk"])
def test_sim2sim_has_bridge_node_and_sentinel_on_one_transport_name(interface):
    specs = sim2sim_nodes(interface, "/p.onnx", sdk_domain=7)
    assert [s.role for s in specs] == ["bridge", "policy", "sentinel"]
    bridge, policy, sentinel = (s.parameter_dict() for s in specs)
    assert bridge["interface"] == policy["kind"] == sentinel["kind"] == interface
    assert bridge["domain_id"] == policy["domain_id"] == sentinel["domain_id"] == 7
    assert policy["policy_path"] == "/p.onnx"
    assert policy["release_sport_mode"] is False  # the bridge has no motion switcher
    assert specs[1].lifecycle and not specs[0].lifecycle and not specs[2].lifecycle
    # every console script named here is installed by setup.py
    setup_py = (Path(__file__).resolve().parents[2] / "setup.py").read_text()
    for spec in specs:
        assert f'"{spec.executable} = ' in setup_py
        assert importlib.util.find_spec(spec.module.rsplit(".", 1)[0]) is not None


def test_node_and_sentinel_are_the_bringups():
    specs = sim2sim_nodes("unitree_sdk", "/p.onnx", sdk_domain=1)
    assert specs[1] == policy_node_spec("unitree_sdk", "/p.onnx", specs[1].parameter_dict()["robot_config"], 1, "lo",
                                        release_sport_mode=False)
    assert specs[2] == sentinel_spec("unitree_sdk", specs[2].parameter_dict()["robot_config"], 1, "lo")


def test_launch_defaults_give_the_same_list_as_sim2sim_on_this_machine_only(tmp_path, monkeypatch):
    """The launch's processes discovered the whole network: on a robot's, the simulation's sentinel
    heartbeat and an operator's RUN reached the real node of the same names. Its files are resolved
    and checked at launch, as g1_real's (a missing one stopped single processes, the launch running on)."""
    from bcg_robot.paths import share_file

    policy = str(share_file("models/g1_squat.onnx"))
    args = {**_defaults(SIM2SIM_LAUNCH_ARGUMENTS), "policy": policy}
    specs = sim2sim_nodes_from_launch(args)
    assert [dataclasses.replace(s, env=()) for s in specs] == sim2sim_nodes("ros2", policy, str(DEFAULT_ROBOT_CONFIG),
                                                                            str(DEFAULT_BRIDGE_CONFIG))
    assert all(s.env_dict()["ROS_AUTOMATIC_DISCOVERY_RANGE"] == "LOCALHOST" for s in specs)
    monkeypatch.chdir(tmp_path)  # a relative name from elsewhere: the installed file
    assert sim2sim_nodes_from_launch({**args, "policy": "models/g1_squat.onnx"})[1].parameter_dict()["policy_path"] == policy
    for name in ("policy", "robot_config", "bridge_config"):
        with pytest.raises(ValueError, match=rf"sim2sim.launch.py: launch argument {name}:='nothere.yaml' is not a file"):
            sim2sim_nodes_from_launch({**args, name: "nothere.yaml"})
    with pytest.raises(ValueError, match="interface"):
        sim2sim_nodes_from_launch({**args, "interface": "serial"})
    with pytest.raises(ValueError, match="interface 'unitree_dds'"):  # one name per transport: no alias
        sim2sim_nodes_from_launch({**args, "interface": "unitree_dds"})


def test_command_line_of_a_bare_process():
    spec = sim2sim_nodes("unitree_sdk", "/p.onnx")[0]
    argv = spec.command("python")
    assert argv[:3] == ["python", "-m", "bcg_sim_bridge.bridge_node"]
    assert "interface:=unitree_sdk" in argv and "__node:=sim_bridge" in argv


def test_sim2sim_launch_file_builds_its_nodes_from_the_shared_description():
    """Checked without launch_ros (not installable here): the file imports and calls the shared builder."""
    tree = ast.parse((LAUNCH / "sim2sim.launch.py").read_text())
    imported = {a.name for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and n.module == "bcg_sim_bridge.node_list"
                for a in n.names}
    called = {n.func.id for n in ast.walk(tree) if isinstance(n, ast.Call) and isinstance(n.func, ast.Name)}
    assert "sim2sim_nodes_from_launch" in imported and "sim2sim_nodes_from_launch" in called
    assert "check_launch_argument_names" in called  # a misspelled policy:= would run the shipped policy
    assert "generate_launch_description" in {n.name for n in tree.body if isinstance(n, ast.FunctionDef)}
    launch_ros_imports = {n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)}
    assert "launch_ros.actions" in launch_ros_imports  # the real launch_ros API
