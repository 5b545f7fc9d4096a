"""The architecture's import rules hold for the repository, and the checker catches a break."""

from pathlib import Path

from bcg_robot.import_rules import RULES, import_violations, imported_modules

REPO = Path(__file__).resolve().parents[2]


def test_the_repository_follows_the_import_rules():
    assert import_violations(REPO) == []


def test_every_package_and_the_real_launch_file_has_a_rule():
    sources = {rule.source for rule in RULES}
    assert {"bcg_robot", "bcg_policy_node", "bcg_sim_bridge", "bcg_train", "launch/g1_real.launch.py"} <= sources
    for source in sources:
        assert (REPO / source).exists(), source


def _tree(tmp_path: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return tmp_path


def test_a_deployment_module_that_imports_the_trainer_breaks_the_rules(tmp_path):
    root = _tree(tmp_path, {
        "bcg_sim_bridge/__init__.py": "",
        "bcg_sim_bridge/ok.py": "from bcg_robot.config import load_robot_config\nfrom . import ok\n",
        "bcg_sim_bridge/leaky.py": "import numpy\n\ndef f():\n    from bcg_train.export.policy import export\n",
        "bcg_policy_node/uses_jax.py": "import jax.numpy as jnp\n",
        "bcg_policy_node/uses_bridge.py": "import bcg_sim_bridge.physics\n",
        "bcg_train/fine.py": "import jax\nfrom bcg_robot import pd\n",
    })
    rules = tuple(r for r in RULES if r.source != "launch/g1_real.launch.py")
    (root / "bcg_robot").mkdir()
    problems = import_violations(root, rules)
    assert len(problems) == 3, problems
    assert any(p.startswith("bcg_sim_bridge/leaky.py:4: imports bcg_train.export.policy") for p in problems)
    assert any(p.startswith("bcg_policy_node/uses_jax.py:1: imports jax.numpy") for p in problems)
    assert any(p.startswith("bcg_policy_node/uses_bridge.py:1: imports bcg_sim_bridge.physics") for p in problems)


def test_imports_are_read_from_the_syntax_tree():
    source = "import os, bcg_robot.pd\nfrom bcg_robot import config\nfrom . import sibling\n\ndef lazy():\n    import bcg_train\n"
    assert imported_modules(source) == [(1, "os"), (1, "bcg_robot.pd"), (2, "bcg_robot"), (6, "bcg_train")]
