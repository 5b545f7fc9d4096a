"""A preset is merged over the config: an experiment file's own setting that the preset would
silently replace is refused, in one line naming the file, the key and both values."""

from pathlib import Path

import pytest

from bcg_robot.errors import ConfigError
from bcg_robot.paths import share_file
from bcg_train.learn.config import PRESETS, TRAIN_CONFIG_DIR, experiment_settings, load_train_config


def _experiment(tmp_path: Path, body: str, name: str = "exp.yaml") -> Path:
    path = tmp_path / name
    path.write_text(f"extends: {share_file('config/train/jump.yaml')}\n{body}")
    return path


def test_a_preset_that_would_replace_an_experiment_setting_is_refused(tmp_path):
    exp = _experiment(tmp_path, "shac:\n  horizon: 64\n")
    assert load_train_config(exp).shac.horizon == 64  # without a preset the file's value is used
    with pytest.raises(ConfigError, match=r"exp\.yaml: sets shac\.horizon: 64, but preset 'cpu-small' sets 32"):
        load_train_config(exp, "cpu-small")
    # the setting may come from further up the experiment's chain: the error names that file
    child = tmp_path / "child.yaml"
    child.write_text("extends: exp.yaml\nseed: 3\n")
    with pytest.raises(ConfigError, match=r"exp\.yaml: sets shac\.horizon"):
        load_train_config(child, "cpu-small")
    assert experiment_settings(child) == {"shac.horizon": (64, exp.resolve()), "seed": (3, child.resolve())}


def test_equal_values_and_keys_the_command_line_sets_pass(tmp_path):
    same = _experiment(tmp_path, "shac:\n  horizon: 32\n  env_gradient_cap: 1.0\n", "same.yaml")
    cfg = load_train_config(same, "cpu-small")
    assert cfg.shac.horizon == 32 and cfg.shac.env_gradient_cap == 1.0  # a key the preset does not set is kept
    longer = _experiment(tmp_path, "shac:\n  iterations: 600\n", "longer.yaml")
    with pytest.raises(ConfigError, match="shac.iterations: 600"):
        load_train_config(longer, "cpu-small")
    assert load_train_config(longer, "cpu-small", {"shac": {"iterations": 900}}).shac.iterations == 900


@pytest.mark.parametrize("preset", PRESETS)
def test_the_package_task_configs_are_what_presets_are_merged_over(preset):
    for task in sorted(TRAIN_CONFIG_DIR.glob("*.yaml")):
        assert experiment_settings(task) == {}
        load_train_config(task, preset)


def test_bcg_train_refuses_the_conflict_in_one_line_before_jax(tmp_path, bcg_train_exit):
    exp = _experiment(tmp_path, "shac:\n  horizon: 64\n")
    code, jax_imported, stderr = bcg_train_exit(["--task", "jump", "--config", str(exp), "--preset", "cpu-small",
                                                 "--run-dir", str(tmp_path / "run")])
    assert (code, jax_imported) == (2, False), stderr
    lines = stderr.strip().splitlines()
    assert len(lines) == 1 and "exp.yaml: sets shac.horizon: 64, but preset 'cpu-small' sets 32" in lines[0], stderr
    assert not (tmp_path / "run").exists()


def test_a_preset_merged_over_a_section_that_is_not_a_mapping_is_refused(tmp_path):
    """``task: [1, 2]`` under a preset's ``task:`` was replaced by the preset's mapping, and the task
    trained at its defaults; without a preset it was refused."""
    listed = _experiment(tmp_path, "task: [1, 2]\n", "listed.yaml")
    with pytest.raises(ConfigError) as info:
        load_train_config(listed)
    assert str(info.value) == f"{listed}: key 'task': expected a mapping, got list"
    with pytest.raises(ConfigError) as info:
        load_train_config(listed, "cpu-tiny")
    assert str(info.value) == f"{listed}: key 'task': expected a mapping, got list"
    nested = _experiment(tmp_path, "task:\n  bcg: 5\n", "nested.yaml")
    with pytest.raises(ConfigError) as info:
        load_train_config(nested, "cpu-tiny")
    assert str(info.value) == f"{nested}: key 'task.bcg': expected a mapping, got int"
    with pytest.raises(ConfigError, match=r"listed\.yaml: key 'task': expected a mapping, got list"):  # --motion's override
        load_train_config(listed, None, {"task": {"motion": "clip.csv"}})
