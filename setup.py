"""bcg_policy_node: one ament_python package holding trainer, node, bridge and robot model."""

from glob import glob
from os.path import dirname, isfile

from setuptools import find_packages, setup

PACKAGE = "bcg_policy_node"


def data_tree(folder: str) -> list[tuple[str, list[str]]]:
    """Install ``folder`` under share/<package>/ keeping its sub-folders."""
    entries: dict[str, list[str]] = {}
    for path in glob(f"{folder}/**/*", recursive=True):
        if "__pycache__" in path or path.endswith(".pyc"):
            continue
        if isfile(path):
            entries.setdefault(f"share/{PACKAGE}/{dirname(path)}", []).append(path)
    return sorted(entries.items())


# Every target is a ``<package>/cli/`` module, except the ROS node executables (sim_bridge,
# policy_node, sentinel), whose ``main`` stays in their node module.
CONSOLE_SCRIPTS = [
    "bcg-robot-info = bcg_robot.cli.robot_info:main",
    "sim_bridge = bcg_sim_bridge.bridge_node:main",
    "bcg-sim2sim = bcg_sim_bridge.cli.sim2sim:main",
    "bcg-bench-bridge = bcg_sim_bridge.cli.bench_bridge:main",
    "policy_node = bcg_policy_node.node.policy_node:main",
    "sentinel = bcg_policy_node.sentinel.sentinel_node:main",
    "bcg-bench-node = bcg_sim_bridge.cli.bench_node:main",
    "bcg-make-motions = bcg_train.cli.make_motions:main",
    "bcg-train = bcg_train.cli.train:main",
    "bcg-motion = bcg_train.cli.motion:main",
    "bcg-export = bcg_train.cli.export:main",
    "bcg-eval = bcg_train.cli.evaluate:main",
    "bcg-select-checkpoint = bcg_train.cli.select_checkpoint:main",
    "bcg-benchmark = bcg_train.cli.benchmark:main",
    "bcg-claim = bcg_train.cli.claim:main",
    "bcg-bench-gradients = bcg_train.cli.bench_gradients:main",
    "bcg-bench-train = bcg_train.cli.bench_train:main",
]

setup(
    name=PACKAGE,
    version="0.1.0",
    packages=find_packages(exclude=["test", "test.*"]),
    data_files=[
        ("share/ament_index/resource_index/packages", [f"resource/{PACKAGE}"]),
        (f"share/{PACKAGE}", ["package.xml"]),
        *data_tree("launch"),
        *data_tree("config"),
        *data_tree("models"),
    ],
    install_requires=["setuptools"],
    extras_require={"test": ["pytest"]},
    zip_safe=True,
    maintainer="BCG developers",
    maintainer_email="bcg@example.com",
    description="Bundled Contact Gradients for the Unitree G1",
    license="Apache-2.0",
    entry_points={"console_scripts": CONSOLE_SCRIPTS},
)
