"""The robot config loads, agrees with the MJCF, and rejects bad input with one-line errors."""

import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from bcg_robot.config import DEFAULT_ROBOT_CONFIG, load_robot_config
from bcg_robot.errors import ConfigError

G1_MOTOR_ORDER = [
    "left_hip_pitch", "left_hip_roll", "left_hip_yaw", "left_knee", "left_ankle_pitch", "left_ankle_roll",
    "right_hip_pitch", "right_hip_roll", "right_hip_yaw", "right_knee", "right_ankle_pitch", "right_ankle_roll",
    "waist_yaw", "waist_roll", "waist_pitch",
    "left_shoulder_pitch", "left_shoulder_roll", "left_shoulder_yaw", "left_elbow",
    "left_wrist_roll", "left_wrist_pitch", "left_wrist_yaw",
    "right_shoulder_pitch", "right_shoulder_roll", "right_shoulder_yaw", "right_elbow",
    "right_wrist_roll", "right_wrist_pitch", "right_wrist_yaw",
]


def test_joint_order_is_the_g1_motor_order():
    cfg = load_robot_config()
    assert list(cfg.joint_names) == G1_MOTOR_ORDER
    assert cfg.num_joints == 29


def test_limits_agree_with_the_mjcf():
    import mujoco

    cfg = load_robot_config()
    model = mujoco.MjModel.from_xml_path(str(cfg.mjcf_path()))
    for i, name in enumerate(cfg.mjcf_joint_names):
        lo, hi = model.jnt_range[model.joint(name).id]
        assert lo == pytest.approx(cfg.position_lower[i], abs=1e-4)
        assert hi == pytest.approx(cfg.position_upper[i], abs=1e-4)
    assert cfg.effort_limits[3] == 139 and cfg.velocity_limits[3] == 20  # knee: 7520-22


def _write_variant(tmp_path: Path, **changes) -> Path:
    data = yaml.safe_load(DEFAULT_ROBOT_CONFIG.read_text())
    for key, value in changes.items():
        if value is None:
            data.pop(key)
        else:
            data[key] = value
    path = tmp_path / "robot.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


def _names_with(index: int, name: str) -> list[str]:
    names = list(G1_MOTOR_ORDER)
    names[index] = name
    return names


@pytest.mark.parametrize(
    "changes, message",
    [
        ({"max_torque": 5}, "unknown key 'max_torque'"),
        ({"kp": [100.0] * 28}, "key 'kp': expected 29 values (one per joint), got 28"),
        ({"default_pose": [0.0] * 30}, "key 'default_pose': expected 29 values"),
        ({"joint_names": _names_with(3, "left_knee_typo")}, "'left_knee_typo' (left_knee_typo_joint) is not a hinge joint"),
        ({"joint_names": _names_with(0, "left_hip_roll")}, "key 'joint_names': 'left_hip_roll' appears twice"),
        ({"effort_limits": [0.0] + [10.0] * 28}, "key 'effort_limits': must be > 0 for joint 'left_hip_pitch'"),
        ({"kd": "fast"}, "key 'kd': expected a list"),
        ({"kd": [0.0] + [2.0] * 28}, "key 'kd': must be > 0 for joint 'left_hip_pitch'"),  # DAMP would be limp
        ({"control_dt": None}, None),  # default applies; not an error
        ({"position_upper": [3.0] + [2.8798] * 28}, "key 'position_upper': 3.0 for 'left_hip_pitch' disagrees with MJCF"),
        ({"joint_names": None}, "missing key 'joint_names'"),
        ({"imu_site": "imu_in_pelvs"}, "key 'imu_site': 'imu_in_pelvs' is not a site in"),  # was a traceback in build_model
        ({"feet": ["left_ankle_roll_link", "right_ankle_rol_link"]}, "key 'feet': 'right_ankle_rol_link' is not a body of"),
        ({"feet": ["world"]}, "key 'feet': 'world' is not a body of the robot in"),  # was a traceback in the bridge
        ({"feet": ["left_ankle_roll_link", "left_ankle_roll_link"]}, "key 'feet': 'left_ankle_roll_link' appears twice"),
        ({"feet": ["left_ankle_roll_link", "left_ankle_pitch_link"]}, "key 'feet': 'left_ankle_pitch_link' has no collision geom in"),
        ({"kd": [1e300] + [2.0] * 28}, "key 'kd': 1e+300 for joint 'left_hip_pitch' is beyond float32"),  # the SDK's pack raised
        ({"policy_gain_ratio": 1e9}, "key 'policy_gain_ratio': must be in [1, 10], got 1000000000.0"),
        ({"feet": []}, "key 'feet': empty"),
        ({"root_body": "pelv"}, "key 'root_body': 'pelv' is not a body of the robot in"),
        ({"action_scale": float("nan")}, "key 'action_scale': expected a finite number, got nan"),  # passed 'x <= 0'
        ({"control_dt": float("inf")}, "key 'control_dt': expected a finite number, got inf"),
        # an integer beyond the float range: was an OverflowError traceback from math.isfinite
        ({"control_dt": 10 ** 400}, "key 'control_dt': expected a finite number, got an integer too large"),
        ({"kp": [10 ** 400] + [100.0] * 28}, "key 'kp[0]': expected a finite number, got an integer too large"),
        # importlib.metadata refuses '' with a bare ValueError
        ({"mjcf": {"distribution": "", "path": "g1.xml"}}, "key 'mjcf.distribution': empty"),
        ({"mjcf": {"distribution": "no_such_robot_package", "path": "g1.xml"}},
         "robot description package 'no_such_robot_package' is not installed"),
    ],
)
def test_config_errors_name_file_and_key(tmp_path, changes, message):
    path = _write_variant(tmp_path, **changes)
    if message is None:
        assert load_robot_config(path).control_dt == 0.02
        return
    with pytest.raises(ConfigError) as info:
        load_robot_config(path)
    text = str(info.value)
    assert text.startswith(str(path) + ": ")
    assert message in text
    assert "\n" not in text


@pytest.mark.parametrize("value, problem", [("nan", "must be a finite number > 0"), ("0", "must be a finite number > 0"),
                                            ("-2", "must be a finite number > 0"),
                                            ("1e308", "must be at most 60")])  # an OverflowError after the table
def test_robot_info_refuses_a_standing_time_that_is_not_positive_or_past_a_minute(value, problem, capsys):
    from bcg_robot.cli.robot_info import main

    with pytest.raises(SystemExit) as exc:
        main(["--stand-seconds", value])
    assert exc.value.code == 2
    assert capsys.readouterr().err.splitlines()[-1] == (
        f"bcg-robot-info: error: argument --stand-seconds: {problem}, got '{value}'")


def test_invalid_yaml_and_missing_file(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text("joint_names: [a, b\n")
    with pytest.raises(ConfigError, match="invalid YAML"):
        load_robot_config(bad)
    with pytest.raises(ConfigError, match="cannot read"):
        load_robot_config(tmp_path / "nope.yaml")
    twice = tmp_path / "twice.yaml"  # PyYAML keeps the last of two equal keys
    twice.write_text(DEFAULT_ROBOT_CONFIG.read_text() + "\naction_scale: 2.5\n")
    with pytest.raises(ConfigError, match="invalid YAML at line .*: key 'action_scale' given twice"):
        load_robot_config(twice)
    for key in ("[a]", "{a: 1}"):  # a list or mapping as a key: was a TypeError traceback
        unhashable = tmp_path / "unhashable.yaml"
        unhashable.write_text(DEFAULT_ROBOT_CONFIG.read_text() + f"\n? {key}\n: 1\n")
        with pytest.raises(ConfigError, match="unhashable.yaml: invalid YAML at line .*: a (list|dict) cannot be a key"):
            load_robot_config(unhashable)
    latin1 = tmp_path / "latin1.yaml"
    latin1.write_bytes(b"# caf\xe9\n" + DEFAULT_ROBOT_CONFIG.read_bytes())
    with pytest.raises(ConfigError, match="latin1.yaml: not UTF-8 text"):
        load_robot_config(latin1)
    huge = tmp_path / "huge.yaml"  # PyYAML's int() refuses over 4300 digits with a bare ValueError
    text = DEFAULT_ROBOT_CONFIG.read_text()
    assert "\ncontrol_dt: 0.02\n" in text
    huge.write_text(text.replace("\ncontrol_dt: 0.02\n", "\ncontrol_dt: 1" + "0" * 5000 + "\n"))
    with pytest.raises(ConfigError, match=r"huge.yaml: invalid YAML: Exceeds the limit \(4300 digits\)") as info:
        load_robot_config(huge)
    assert "\n" not in str(info.value)
    named = tmp_path / "named.yaml"  # the loader sets 'source' (the file's path): a file's own was dropped silently
    named.write_text(DEFAULT_ROBOT_CONFIG.read_text() + "\nsource: other.yaml\n")
    with pytest.raises(ConfigError, match="^.*named.yaml: unknown key 'source' \\(set by the loader, not by a config file\\)$"):
        load_robot_config(named)
    deep = tmp_path / "deep.yaml"  # PyYAML's constructor recurses once per level: RecursionError
    deep.write_text("kp: " + "[" * 5000 + "]" * 5000 + "\n")
    with pytest.raises(ConfigError, match="^.*deep.yaml: invalid YAML: nested too deeply$"):
        load_robot_config(deep)


def test_unknown_keys_of_mixed_types_are_named(tmp_path):
    """YAML keys need not be strings: 'nmae: x' and '1: 2' could not be sorted together (TypeError)."""
    path = tmp_path / "robot.yaml"
    path.write_text(DEFAULT_ROBOT_CONFIG.read_text() + "\nnmae: x\n1: 2\n")
    with pytest.raises(ConfigError) as info:
        load_robot_config(path)
    text = str(info.value)
    assert text.startswith(f"{path}: unknown key '1' (allowed: ") and "\n" not in text


def test_cli_prints_one_line_and_exits_nonzero(tmp_path):
    path = _write_variant(tmp_path, kp=[1.0] * 3)
    proc = subprocess.run(
        [sys.executable, "-m", "bcg_robot.cli.robot_info", "--robot-config", str(path)],
        capture_output=True, text=True, cwd=Path(__file__).resolve().parents[2],
    )
    assert proc.returncode == 2
    assert proc.stdout == ""
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and str(path) in lines[0] and "key 'kp'" in lines[0]
