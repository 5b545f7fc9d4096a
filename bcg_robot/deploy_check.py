"""Import every deployment module with JAX, torch and the trainer blocked: ``python -m bcg_robot.deploy_check``.

The robot PC installs only ``requirements/deploy.txt``; this proves the policy node,
sentinel, sim bridge and robot package never reach for the trainer's dependencies (nor
for the trainer itself: ``bcg_train`` is blocked too).
"""

from __future__ import annotations

import importlib
import pkgutil
import sys

DEPLOY_PACKAGES = ("bcg_robot", "bcg_policy_node", "bcg_sim_bridge")
TRAINING_ONLY = ("jax", "jaxlib", "torch", "optax", "flax", "bcg_train")


class _BlockTrainingImports:
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in TRAINING_ONLY:
            raise ImportError(f"deployment code imported '{name}'")
        return None


def import_deployment_modules(packages: tuple[str, ...] = DEPLOY_PACKAGES) -> list[str]:
    sys.meta_path.insert(0, _BlockTrainingImports())
    imported = []
    for name in packages:
        package = importlib.import_module(name)
        imported.append(name)
        for info in pkgutil.walk_packages(package.__path__, name + "."):
            importlib.import_module(info.name)
            imported.append(info.name)
    return imported


def main() -> int:
    modules = import_deployment_modules()
    print(f"deployment modules import without {', '.join(TRAINING_ONLY)}: {len(modules)} modules")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
