"""Where the package's shared files are found: the source tree, the ament index, else the install prefix."""

import os
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_an_installed_copy_without_a_sourced_ros_setup_falls_back_to_the_install_prefix(tmp_path):
    """ament_index_python raises OSError when AMENT_PREFIX_PATH is unset: every command and node of
    a pip-installed copy died importing bcg_robot.config (its default paths are made at import)."""
    shutil.copytree(ROOT / "bcg_robot", tmp_path / "bcg_robot")  # no package.xml beside it: not a source tree
    env = {k: v for k, v in os.environ.items() if k not in ("AMENT_PREFIX_PATH", "PYTHONPATH")}
    code = "import sys; from bcg_robot.paths import share_dir; print(share_dir()); print(sys.prefix)"
    run = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, env={**env, "PYTHONPATH": str(tmp_path)},
                         capture_output=True, text=True, timeout=60)
    assert run.returncode == 0, run.stderr[-2000:]
    found, prefix = run.stdout.split()
    assert Path(found) == Path(prefix) / "share" / "bcg_policy_node"
