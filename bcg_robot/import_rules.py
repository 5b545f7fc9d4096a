"""Which package may import which: the architecture as a checkable rule.

::

    bcg_train ─────────┐
                       ▼
    bcg_sim_bridge ─► bcg_robot ◄─ bcg_policy_node
          └──────────────────────────────┘ (the bridge starts the node's processes)

* ``bcg_robot``: the robot's one source of truth (config, models, PD law, codecs, ONNX
  graph and loader, observation, metrics). Imports no other BCG package.
* ``bcg_policy_node``: the product on the robot PC (node, safety layer, sentinel).
  Imports ``bcg_robot`` only.
* ``bcg_sim_bridge``: the simulated robot and sim-to-sim. Imports ``bcg_robot`` and
  ``bcg_policy_node`` (bringup, to start the node as the robot would).
* ``bcg_train``: the offline trainer. Imports ``bcg_robot`` only; deployment never
  imports it (its policies travel as ONNX files).
* ``launch/g1_real.launch.py`` (the real robot) imports neither the simulator nor the trainer.

Deployment code also never imports JAX, torch or the other training-only libraries.
:func:`import_violations` reads every module's imports from its syntax tree (imports
inside functions included), so a rule breaks in the test suite, not on the robot.
``bcg_robot.deploy_check`` proves the same at run time on a robot-PC install.
"""

from __future__ import annotations

import ast
import dataclasses
from pathlib import Path

TRAINING_ONLY = ("jax", "jaxlib", "torch", "optax", "flax", "brax", "tensorboardX")


@dataclasses.dataclass(frozen=True)
class ImportRule:
    """Sources (a package directory or one file) and what they may import of ours / must not import."""

    source: str  # a path relative to the repository root
    allowed: tuple[str, ...]  # BCG packages it may import (itself always)
    forbidden_libraries: tuple[str, ...] = ()


BCG_PACKAGES = ("bcg_robot", "bcg_policy_node", "bcg_sim_bridge", "bcg_train")

RULES = (
    ImportRule("bcg_robot", (), TRAINING_ONLY),
    ImportRule("bcg_policy_node", ("bcg_robot",), TRAINING_ONLY),
    ImportRule("bcg_sim_bridge", ("bcg_robot", "bcg_policy_node"), TRAINING_ONLY),
    ImportRule("bcg_train", ("bcg_robot",)),
    ImportRule("launch/g1_real.launch.py", ("bcg_robot", "bcg_policy_node"), TRAINING_ONLY + ("mujoco",)),
)


def imported_modules(source: str) -> list[tuple[int, str]]:
    """(line, absolute module name) of every import in ``source``; relative imports are skipped
    (they stay inside their package)."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found.extend((node.lineno, alias.name) for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            found.append((node.lineno, node.module))
    return found


def file_violations(path: Path, rule: ImportRule, own_package: str | None, display: str) -> list[str]:
    """The imports of one file that break ``rule``, one line each."""
    problems = []
    for line, module in imported_modules(path.read_text()):
        top = module.split(".")[0]
        if top in BCG_PACKAGES and top != own_package and top not in rule.allowed:
            problems.append(f"{display}:{line}: imports {module} ({rule.source} may import {', '.join(rule.allowed) or 'no other BCG package'})")
        elif top in rule.forbidden_libraries:
            problems.append(f"{display}:{line}: imports {module} (training-only or simulator library)")
    return problems


def import_violations(root: Path, rules: tuple[ImportRule, ...] = RULES) -> list[str]:
    """Every import under ``root`` that breaks a rule (empty when the architecture holds)."""
    problems = []
    for rule in rules:
        base = root / rule.source
        files = sorted(base.rglob("*.py")) if base.is_dir() else [base]
        own = rule.source if base.is_dir() else None
        for path in files:
            problems.extend(file_violations(path, rule, own, str(path.relative_to(root))))
    return problems
