"""The bringup: the process description g1_real.launch.py uses, without the simulator, and its install."""

import ast
import importlib.util
import os
import runpy
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path
from unittest import mock

import pytest

from bcg_policy_node import bringup
from bcg_policy_node.bringup import G1_REAL_LAUNCH_ARGUMENTS, g1_real_nodes_from_launch

ROOT = Path(__file__).resolve().parents[2]
LAUNCH = ROOT / "launch"


def _defaults(arguments):
    return {a.name: a.default for a in arguments}


@pytest.fixture(scope="module")
def setup_kwargs():
    """What setup.py hands to setuptools.setup (run for real, with setup() captured)."""
    cwd = os.getcwd()
    os.chdir(ROOT)  # setup.py globs its data files relative to the package root
    try:
        with mock.patch("setuptools.setup") as setup:
            runpy.run_path(str(ROOT / "setup.py"), run_name="__main__")
    finally:
        os.chdir(cwd)
    assert setup.call_count == 1
    return setup.call_args.kwargs


POLICY = str(ROOT / "models" / "g1_policy.onnx")


def test_g1_real_is_node_and_sentinel_on_the_sdk_with_sport_mode_release(setup_kwargs):
    args = {**_defaults(G1_REAL_LAUNCH_ARGUMENTS), "network_interface": "eth0", "policy": POLICY}
    specs = g1_real_nodes_from_launch(args)
    assert [s.role for s in specs] == ["policy", "sentinel"]
    for spec in specs:
        p = spec.parameter_dict()
        assert (p["kind"], p["network_interface"], p["domain_id"]) == ("unitree_sdk", "eth0", 0)
    assert specs[0].parameter_dict()["release_sport_mode"] is True
    assert specs[0].lifecycle and not specs[1].lifecycle
    with pytest.raises(ValueError, match="network interface"):
        g1_real_nodes_from_launch({**args, "network_interface": ""})
    with pytest.raises(ValueError, match="policy"):
        g1_real_nodes_from_launch({**args, "policy": ""})
    # every console script named here is installed by setup.py, and its module exists
    scripts = {line.split("=")[0].strip() for line in setup_kwargs["entry_points"]["console_scripts"]}
    for spec in specs:
        assert spec.executable in scripts and spec.package == setup_kwargs["name"]
        assert importlib.util.find_spec(spec.module) is not None


def test_g1_real_gives_node_and_sentinel_the_same_existing_files(tmp_path, monkeypatch):
    """A safety config given at launch reaches both (it was not a launch argument, and was dropped
    without a word); a file argument is resolved at launch, against the installed share folder
    too, and one that does not exist stops the launch."""
    safety = tmp_path / "strict.yaml"
    safety.write_text("torque_fraction: 0.5\n")
    args = {**_defaults(G1_REAL_LAUNCH_ARGUMENTS), "network_interface": "eth0", "policy": POLICY,
            "safety_config": str(safety)}
    specs = g1_real_nodes_from_launch(args)
    for key in ("safety_config", "robot_config"):
        assert len({spec.parameter_dict()[key] for spec in specs}) == 1, key
    assert specs[1].parameter_dict()["safety_config"] == str(safety)
    assert specs[0].parameter_dict()["policy_path"] == POLICY
    monkeypatch.chdir(tmp_path)  # a relative name: the installed file (here the repository's share folder)
    monkeypatch.setattr(bringup, "share_dir", lambda: ROOT)
    monkeypatch.setattr("bcg_robot.paths.share_dir", lambda: ROOT)
    relative = g1_real_nodes_from_launch({**args, "policy": "models/g1_squat.onnx"})
    assert relative[0].parameter_dict()["policy_path"] == str(ROOT / "models" / "g1_squat.onnx")
    for name in ("policy", "robot_config", "safety_config"):
        with pytest.raises(ValueError, match=rf"g1_real.launch.py: launch argument {name}:='nothere.yaml' is not a file"):
            g1_real_nodes_from_launch({**args, name: "nothere.yaml"})



def test_g1_real_gives_the_sentinel_a_timeout_past_a_long_stale_limit(tmp_path):
    """The sentinel refuses a timeout within the node's stale limit: with stale_periods 6 (120 ms,
    allowed) it exited at start-up on its 100 ms default, and the node waited in PASSIVE for ever."""
    from bcg_policy_node.sentinel.sentinel_watch import stall_order_error

    relaxed = tmp_path / "relaxed.yaml"
    relaxed.write_text("stale_periods: 6\n")
    args = {**_defaults(G1_REAL_LAUNCH_ARGUMENTS), "network_interface": "eth0", "policy": POLICY}
    node, sentinel = g1_real_nodes_from_launch({**args, "safety_config": str(relaxed)})
    assert sentinel.parameter_dict()["timeout_s"] == pytest.approx(0.14)  # 120 ms + one control period
    assert stall_order_error(sentinel.parameter_dict()["timeout_s"], 0.12) is None
    assert "timeout_s" not in g1_real_nodes_from_launch(args)[1].parameter_dict()  # the default config: the default


def test_g1_real_can_arm_the_operator_deadman():
    """Off by default, as before; the real launch could not turn it on."""
    args = {**_defaults(G1_REAL_LAUNCH_ARGUMENTS), "network_interface": "eth0", "policy": POLICY}
    assert g1_real_nodes_from_launch(args)[0].parameter_dict()["deadman_timeout_s"] == 0.0
    armed = g1_real_nodes_from_launch({**args, "deadman_timeout_s": "0.5"})
    assert armed[0].parameter_dict()["deadman_timeout_s"] == 0.5 and "deadman_timeout_s" not in armed[1].parameter_dict()
    with pytest.raises(ValueError, match="launch argument deadman_timeout_s:='half' is not a number"):
        g1_real_nodes_from_launch({**args, "deadman_timeout_s": "half"})


def test_the_node_specs_refuse_an_unknown_transport():
    with pytest.raises(ValueError, match="interface 'unitree_dds'"):
        bringup.policy_node_spec("unitree_dds", "/p.onnx", "r.yaml", 0, "eth0", release_sport_mode=True)
    with pytest.raises(ValueError, match="interface 'serial'"):
        bringup.sentinel_spec("serial", "r.yaml", 0, "eth0")


def test_a_misspelled_or_malformed_launch_argument_is_refused():
    """launch ignores undeclared names: a typo would have run the default policy or robot config."""
    args = bringup.G1_REAL_LAUNCH_ARGUMENTS
    with pytest.raises(ValueError, match=r"g1_real.launch.py: unknown launch argument 'polcy' \(did you mean 'policy'\?\)"):
        bringup.check_launch_argument_names(["network_interface", "polcy", "robot_config"], args, "g1_real.launch.py")
    with pytest.raises(ValueError, match="'robot_confg'"):
        bringup.check_launch_argument_names(["robot_confg"], args, "g1_real.launch.py")
    # a declared name shortened or lengthened at a word: 'deadman:=0.5' ran the robot with no deadman
    for short, meant in (("deadman", "deadman_timeout_s"), ("safety", "safety_config"), ("policy_path", "policy"),
                         ("robot", "robot_config")):
        with pytest.raises(ValueError, match=rf"unknown launch argument '{short}' \(did you mean '{meant}'\?\)"):
            bringup.check_launch_argument_names([short], args, "g1_real.launch.py")
    bringup.check_launch_argument_names(["policy", "use_sim_time", "my_world"], args, "g1_real.launch.py")  # an includer's own
    values = {a.name: a.default for a in args} | {"network_interface": "eth0", "policy": POLICY, "domain_id": "zero"}
    with pytest.raises(ValueError, match="launch argument domain_id:='zero' is not an integer"):
        bringup.g1_real_nodes_from_launch(values)
    with pytest.raises(ValueError, match="network interface is required"):
        bringup.g1_real_nodes_from_launch(values | {"network_interface": " ", "domain_id": "0"})


def test_g1_real_launch_file_builds_its_nodes_from_the_bringup():
    """Checked without launch_ros (not installable here): the file imports and calls the bringup's builder."""
    tree = ast.parse((LAUNCH / "g1_real.launch.py").read_text())
    modules = {n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)}
    modules |= {a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
    imported = {a.name for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and n.module == "bcg_policy_node.bringup"
                for a in n.names}
    called = {n.func.id for n in ast.walk(tree) if isinstance(n, ast.Call) and isinstance(n.func, ast.Name)}
    assert "g1_real_nodes_from_launch" in imported and "g1_real_nodes_from_launch" in called
    assert "check_launch_argument_names" in imported and "check_launch_argument_names" in called
    assert "generate_launch_description" in {n.name for n in tree.body if isinstance(n, ast.FunctionDef)}
    assert "launch_ros.actions" in modules  # the real launch_ros API
    ours = {m.split(".")[0] for m in modules} - {"launch", "launch_ros"}
    assert ours == {"bcg_policy_node"}, f"g1_real.launch.py imports {sorted(ours)}"


def test_the_bringup_imports_without_the_simulator():
    """What g1_real.launch.py needs loads on a robot PC without the sim bridge, MuJoCo or the trainer."""
    code = (
        "import sys\n"
        "class Block:\n"
        "    def find_spec(self, name, path=None, target=None):\n"
        "        if name.split('.')[0] in ('bcg_sim_bridge', 'mujoco', 'bcg_train', 'jax', 'torch', 'rclpy'):\n"
        "            raise ImportError('bringup imported ' + name)\n"
        "sys.meta_path.insert(0, Block())\n"
        "from bcg_policy_node.bringup import G1_REAL_LAUNCH_ARGUMENTS, g1_real_nodes_from_launch\n"
        "args = {a.name: a.default for a in G1_REAL_LAUNCH_ARGUMENTS}\n"
        "args.update(network_interface='eth0', policy='models/g1_policy.onnx')\n"
        "print(len(g1_real_nodes_from_launch(args)))\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.strip().splitlines()[-1] == "2"


def test_launch_files_are_installed(setup_kwargs):
    """setup.py's data_files install every file of launch/ into the package's share/launch."""
    package = setup_kwargs["name"]
    assert package == bringup.PACKAGE == ET.parse(ROOT / "package.xml").getroot().findtext("name")
    installed = {(dest, Path(src).name) for dest, sources in setup_kwargs["data_files"] for src in sources}
    launch_files = sorted(p.name for p in LAUNCH.iterdir() if p.is_file() and p.suffix == ".py")
    assert "g1_real.launch.py" in launch_files and "sim2sim.launch.py" in launch_files
    missing = [name for name in launch_files if (f"share/{package}/launch", name) not in installed]
    assert not missing, f"launch files not in setup.py's data_files: {missing}"
    assert ("share/ament_index/resource_index/packages", package) in installed  # ros2 launch finds the package


def test_launch_files_load_with_launch_ros():
    """Runs only where launch_ros is importable (a ROS 2 install); reported as skipped elsewhere."""
    pytest.importorskip("launch_ros", reason="launch_ros is not installable from PyPI: launch test NOT RUN here")
    from launch.launch_description_sources import PythonLaunchDescriptionSource

    for name in ("sim2sim.launch.py", "g1_real.launch.py"):
        description = PythonLaunchDescriptionSource(str(LAUNCH / name)).get_launch_description(None)
        assert description.entities
