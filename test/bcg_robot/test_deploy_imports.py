"""Deployment code never imports JAX or torch."""

import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def test_deployment_packages_import_without_jax_or_torch():
    proc = subprocess.run(
        [sys.executable, "-m", "bcg_robot.deploy_check"], capture_output=True, text=True, cwd=REPO, timeout=300
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "deployment modules import without" in proc.stdout


def test_the_check_catches_a_training_import(tmp_path):
    (tmp_path / "leaky_pkg").mkdir()
    (tmp_path / "leaky_pkg" / "__init__.py").write_text("")
    (tmp_path / "leaky_pkg" / "uses_jax.py").write_text("import jax\n")
    code = "from bcg_robot.deploy_check import import_deployment_modules as f; f(('leaky_pkg',))"
    proc = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO,
        env={"PYTHONPATH": f"{REPO}:{tmp_path}", "PATH": "/usr/bin:/bin"}, timeout=120,
    )
    assert proc.returncode != 0
    assert "deployment code imported 'jax'" in proc.stderr
