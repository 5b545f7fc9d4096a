"""`bcg-train --task squat|jump --preset cpu-small` trains the recipe of the shipped policy: the package's
task config resolves to the shipped `models/<policy>.train.yaml` in every setting that file names, but the
run directory and the seed (the command line's). A recipe change that does not ship fails here."""

import pytest
import yaml

from bcg_robot.paths import share_file
from bcg_robot.yaml_dataclass import to_plain
from bcg_train.learn.config import leaf_settings, load_train_config

# task, the shipped policy's resolved training config, the iterations its run was given (models/README.md)
SHIPPED = [("squat", "models/g1_squat.train.yaml", 1200), ("jump", "models/g1_jump.train.yaml", 2000)]
NOT_PART_OF_THE_RECIPE = {"run_dir", "seed", "init_from"}


@pytest.mark.parametrize(("task", "shipped", "iterations"), SHIPPED)
def test_the_task_config_is_the_shipped_recipe(task, shipped, iterations):
    package = leaf_settings(to_plain(load_train_config(share_file(f"config/train/{task}.yaml"), "cpu-small",
                                                       {"shac": {"iterations": iterations}})))
    recipe = leaf_settings(yaml.safe_load(share_file(shipped).read_text()))
    differ = {key: (package.get(key), value) for key, value in recipe.items()
              if key not in NOT_PART_OF_THE_RECIPE and package.get(key) != value}
    assert differ == {}, f"config/train/{task}.yaml with cpu-small differs from {shipped} (package, shipped)"
    # the recipe's load-bearing choices, named so a reader of a failure sees what moved
    assert package["task.contact"] == "stiff" and package["task.physics_dt"] == 0.004
    assert package["task.solver_iterations"] == 4 and package["task.action_offset"] == "reference"
