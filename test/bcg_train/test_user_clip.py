"""A user's own clip: ``bcg-train --motion`` config resolution and clip errors (no JAX compile,
no training), and ``bcg-motion preview`` (frame strip PNG and GIF, rendered offscreen)."""

import dataclasses
import sys
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from bcg_robot.config import load_robot_config
from bcg_robot.paths import share_file
from bcg_robot.yaml_dataclass import dump_dataclass, load_dataclass
from bcg_train.cli.motion import main as motion_main
from bcg_train.cli.train import main as train_main
from bcg_train.learn.config import TrainConfig, TrainRequest, motion_id, resolve_train_config, train_overrides, default_run_dir
from bcg_train.motion import preview
from bcg_train.motion.loader import load_motion_csv, write_motion_csv
from bcg_train.motion.preview import (
    LABEL_HEIGHT,
    clip_summary,
    gif_frame_indices,
    joint_limit_report,
    strip_frame_indices,
)
from bcg_train.motion.reference import load_reference_motion

ROBOT = load_robot_config()
SQUAT = share_file("models/motions/squat.csv")


def shallow_squat(path: Path, depth: float = 0.6, frames: int | None = None) -> Path:
    """squat.csv with every joint angle and root position ``depth`` of the way from the first
    frame to the clip's own (a shallower squat), optionally cut to its first ``frames``."""
    clip = load_motion_csv(SQUAT, ROBOT)
    cut = slice(0, frames)
    joints = clip.joint_pos[0] + depth * (clip.joint_pos[cut] - clip.joint_pos[0])
    root = clip.root_pos[0] + depth * (clip.root_pos[cut] - clip.root_pos[0])
    variant = dataclasses.replace(clip, joint_pos=joints, root_pos=root, root_quat=clip.root_quat[cut])
    return write_motion_csv(path, variant, comment=f"squat at {depth:g} of its depth")


@pytest.fixture
def no_training(monkeypatch):
    """Make reaching the trainer an ImportError, so a test sees where bcg-train stopped."""
    monkeypatch.setitem(sys.modules, "bcg_train.learn.train", None)


def test_a_clip_outside_models_motions_resolves_to_a_config(tmp_path, monkeypatch):
    clip = shallow_squat(tmp_path / "clips" / "my_squat.csv")
    monkeypatch.chdir(tmp_path)
    cfg = resolve_train_config(TrainRequest(motion=Path("clips/my_squat.csv")))
    assert cfg.task.motion == str(clip.resolve()) and Path(cfg.task.motion).is_absolute()
    assert motion_id(cfg) == "my_squat"
    assert cfg.run_dir == "runs/my_squat-default"
    assert cfg.task.episode_length_s == 10.0  # the stand task supplies the rest
    squat = resolve_train_config(TrainRequest(task="squat", motion=clip, preset="cpu-tiny", seed=3, iterations=7))
    assert squat.task.episode_length_s == 8.0 and squat.task.motion == str(clip.resolve())
    assert squat.run_dir == "runs/my_squat-cpu-tiny" and squat.seed == 3 and squat.shac.iterations == 7
    assert default_run_dir(TrainRequest(task="squat")) == "runs/squat-default"
    assert "run_dir" not in train_overrides(TrainRequest(task="squat"))  # the default depends on the config file
    # the run dir's config.yaml keeps the absolute path; the clip's name is the exported motion id
    saved = load_dataclass(TrainConfig, dump_dataclass(cfg, tmp_path / "run" / "config.yaml"))
    assert saved.task.motion == str(clip.resolve())
    assert load_reference_motion(saved.task.motion, ROBOT, saved.task.motion_fps).name == "my_squat"


def test_run_dir_comes_from_the_flag_then_the_config_file_then_the_task_and_preset(tmp_path):
    experiment = tmp_path / "experiment.yaml"
    experiment.write_text(f"extends: {share_file('config/train/squat.yaml')}\nrun_dir: runs/my-experiment\n")
    assert resolve_train_config(TrainRequest(task="squat", config=experiment)).run_dir == "runs/my-experiment"
    flagged = resolve_train_config(TrainRequest(task="squat", config=experiment, run_dir="elsewhere"))
    assert flagged.run_dir == "elsewhere"
    # the shipped task configs name no run directory: runs/<task>-<preset>
    assert resolve_train_config(TrainRequest(task="jump", preset="cpu-small")).run_dir == "runs/jump-cpu-small"
    # a run's saved config.yaml resumes into the directory it names
    saved = dump_dataclass(resolve_train_config(TrainRequest(task="squat", run_dir="runs/a")), tmp_path / "run" / "config.yaml")
    assert resolve_train_config(TrainRequest(task="squat", config=saved)).run_dir == "runs/a"


def test_train_cli_accepts_the_clip_up_to_training(tmp_path, no_training):
    clip = shallow_squat(tmp_path / "my_squat.csv", frames=40)
    with pytest.raises(ImportError):  # validated config and clip; stopped at the trainer's import
        train_main(["--motion", str(clip), "--task", "squat", "--run-dir", str(tmp_path / "run")])
    assert not (tmp_path / "run").exists()


def test_train_cli_needs_a_task_or_a_motion(capsys):
    assert train_main([]) == 2
    assert capsys.readouterr().err.strip() == "bcg-train: error: --task is required unless --motion is given"


def _break(clip: Path, line: int, col: int, value: str | None) -> Path:
    """``clip`` with cell ``col`` (0-based) of file line ``line`` (1-based) set to ``value``, or removed."""
    lines = clip.read_text().splitlines()
    cells = lines[line - 1].split(",")
    if value is None:
        del cells[col]
    else:
        cells[col] = value
    lines[line - 1] = ",".join(cells)
    bad = clip.with_name("bad_clip.csv")
    bad.write_text("\n".join(lines) + "\n")
    clip.unlink()
    return bad


BAD_CELLS = [
    (5, 10, "nan", "row 5, column 11 (left_knee): non-finite value nan"),
    (7, 1, "abc", "row 7, column 2 (root_y): not a number: 'abc'"),
    (4, 35, None, "row 4: expected 36 columns (root pos 3, quat xyzw 4, 29 joints), got 35: column 36 (right_wrist_yaw) is missing"),
]


@pytest.mark.parametrize("line,col,value,problem", BAD_CELLS, ids=["nan", "non-numeric", "column-count"])
def test_train_cli_rejects_a_bad_clip_in_one_line(tmp_path, capsys, no_training, line, col, value, problem):
    bad = _break(shallow_squat(tmp_path / "clip.csv", frames=20), line, col, value)
    with pytest.raises(SystemExit) as exc:
        train_main(["--motion", str(bad), "--run-dir", str(tmp_path / "run")])
    assert exc.value.code == 2
    assert capsys.readouterr().err == f"bcg-train: error: {bad.resolve()}: {problem}\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bad_clip.csv"]  # nothing written


def test_a_bad_clip_stops_bcg_train_before_jax_is_imported(tmp_path, bcg_train_exit):
    bad = _break(shallow_squat(tmp_path / "clip.csv", frames=20), 5, 10, "nan")
    code, jax_imported, stderr = bcg_train_exit(["--motion", str(bad), "--run-dir", str(tmp_path / "run")])
    assert (code, jax_imported) == (2, False), stderr
    assert "non-finite value nan" in stderr.strip().splitlines()[-1]
    assert not (tmp_path / "run").exists()


def test_a_run_directory_blocked_by_a_file_stops_bcg_train_before_jax_is_imported(tmp_path, bcg_train_exit):
    """train() made the run directory after building the task: a FileExistsError traceback."""
    blocker = tmp_path / "taken"
    blocker.write_text("")
    code, jax_imported, stderr = bcg_train_exit(["--task", "stand", "--run-dir", str(blocker)])
    assert (code, jax_imported) == (2, False), stderr
    assert stderr.strip().splitlines()[-1] == f"bcg-train: error: {blocker}: exists and is not a directory (run directory)"
    code, jax_imported, stderr = bcg_train_exit(["--task", "stand", "--run-dir", str(blocker / "run")])
    assert (code, jax_imported) == (2, False), stderr
    assert stderr.strip().splitlines()[-1] == (
        f"bcg-train: error: {blocker / 'run'}: cannot create this directory (run directory): {blocker} is a file")


def test_frame_selection_and_joint_limit_report(tmp_path):
    assert strip_frame_indices(31, 6).tolist() == [0, 6, 12, 18, 24, 30]
    assert gif_frame_indices(31, 30.0, 10.0).tolist() == [0, 3, 6, 9, 12, 15, 18, 21, 24, 27, 30]
    clip = load_motion_csv(shallow_squat(tmp_path / "s.csv", frames=31), ROBOT)
    summary = clip_summary(clip, ROBOT)
    assert summary.num_frames == 31 and summary.duration_s == pytest.approx(1.0) and summary.limits.frames_outside == 0
    assert 0.5 < summary.root_height_min_m <= summary.root_height_max_m < 1.0
    knee = ROBOT.joint_names.index("left_knee")
    joints = clip.joint_pos.copy()
    joints[[3, 4], knee] = ROBOT.upper[knee] + 0.02  # inside the loader's margin: accepted, reported
    report = joint_limit_report(dataclasses.replace(clip, joint_pos=joints), ROBOT)
    assert (report.frames_outside, report.worst_joint) == (2, "left_knee")
    assert report.worst_excess_rad == pytest.approx(0.02)


def test_preview_writes_a_strip_and_a_gif(tmp_path, capsys):
    clip = shallow_squat(tmp_path / "my_squat.csv", depth=0.8, frames=31)  # 1.00 s
    out = tmp_path / "preview"
    argv = ["preview", str(clip), "--out", str(out), "--frames", "6", "--gif-fps", "10", "--width", "160", "--height", "120"]
    rc = motion_main(argv)
    captured = capsys.readouterr()
    assert rc == 0, captured.err  # exit 1 here: no offscreen GL backend (egl, osmesa) works on this machine
    line = captured.out.strip()
    assert "\n" not in line and "31 frames, 1.00 s at 30 fps, root height" in line and "joint limits ok" in line
    strip = np.asarray(Image.open(out / "my_squat_strip.png").convert("RGB"))
    assert strip.shape == (120 + LABEL_HEIGHT, 6 * 160, 3)
    tiles = [strip[:120, k * 160:(k + 1) * 160].astype(float) for k in range(6)]
    assert all(tile.var() > 0 for tile in tiles)  # rendered, not blank
    assert not np.array_equal(tiles[0], tiles[3])  # the squat moves between frames
    with Image.open(out / "my_squat.gif") as gif:
        assert gif.n_frames == 11  # 0.0, 0.1, ..., 1.0 s


def test_preview_rejects_a_bad_clip_in_one_line(tmp_path, capsys):
    bad = _break(shallow_squat(tmp_path / "clip.csv", frames=20), 7, 1, "abc")
    with pytest.raises(SystemExit) as exc:
        motion_main(["preview", str(bad), "--out", str(tmp_path / "preview")])
    assert exc.value.code == 2
    assert capsys.readouterr().err == f"bcg-motion: error: {bad}: row 7, column 2 (root_y): not a number: 'abc'\n"
    assert not (tmp_path / "preview").exists()


def test_preview_refuses_a_file_where_its_folder_goes_before_rendering(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr("bcg_train.cli.motion.render_preview_offscreen", lambda *a, **k: pytest.fail("rendered before checking --out"))
    clip = shallow_squat(tmp_path / "clip.csv", frames=10)
    blocker = tmp_path / "taken"
    blocker.write_text("")
    with pytest.raises(SystemExit) as exc:
        motion_main(["preview", str(clip), "--out", str(blocker)])
    assert exc.value.code == 2
    assert capsys.readouterr().err == f"bcg-motion: error: {blocker}: exists and is not a directory (--out)\n"


def test_preview_refuses_a_folder_where_its_strip_goes_before_rendering(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr("bcg_train.cli.motion.render_preview_offscreen", lambda *a, **k: pytest.fail("rendered before checking --out"))
    clip = shallow_squat(tmp_path / "clip.csv", frames=10)
    (tmp_path / "preview" / "clip_strip.png").mkdir(parents=True)
    with pytest.raises(SystemExit) as exc:
        motion_main(["preview", str(clip), "--out", str(tmp_path / "preview")])
    assert exc.value.code == 2
    assert capsys.readouterr().err == (f"bcg-motion: error: {tmp_path / 'preview' / 'clip_strip.png'}: "
                                       "is a directory, where --out gets this file\n")


def test_preview_says_in_one_line_when_no_gl_backend_works(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(preview, "GL_BACKENDS", ("disable",))  # MuJoCo without any GL context
    clip = shallow_squat(tmp_path / "clip.csv", frames=10)
    assert motion_main(["preview", str(clip), "--out", str(tmp_path / "preview"), "--frames", "2"]) == 1
    err = capsys.readouterr().err
    assert err.startswith("bcg-motion: error: offscreen rendering is not available (disable: ") and err.count("\n") == 1


@pytest.mark.parametrize("broken", ["missing", "malformed"])
def test_a_bad_clip_named_by_the_config_stops_bcg_train_before_jax_is_imported(tmp_path, bcg_train_exit, broken):
    """Only --motion's clip was checked before JAX; the config's own ``task.motion`` was read when
    the task was built, after the JAX import."""
    clip = tmp_path / "clip.csv"
    if broken == "malformed":
        clip = _break(shallow_squat(clip, frames=20), 5, 10, "nan")
    config = tmp_path / "experiment.yaml"
    config.write_text(f"extends: {share_file('config/train/stand.yaml')}\ntask:\n  motion: {clip}\n")
    code, jax_imported, stderr = bcg_train_exit(["--task", "stand", "--config", str(config), "--run-dir", str(tmp_path / "run")])
    assert (code, jax_imported) == (2, False), stderr
    problem = "cannot read: No such file or directory" if broken == "missing" else "row 5, column 11 (left_knee): non-finite value nan"
    assert stderr.strip().splitlines() == [f"bcg-train: error: {clip}: {problem}"], stderr
    assert not (tmp_path / "run").exists()
