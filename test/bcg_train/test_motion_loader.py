"""Motion CSV loader: validation errors name file, row and column; resampling and kinematics."""

from pathlib import Path

import numpy as np
import pytest

from bcg_robot.config import load_robot_config
from bcg_robot.paths import share_file
from bcg_train.motion import MotionError, load_motion_csv, load_reference_motion, reference_from_clip
from bcg_train.motion.synthesize import MOTIONS, synthesize

CFG = load_robot_config()
STAND = share_file("models/motions/stand.csv")


def _rows(path: Path) -> list[str]:
    return [line for line in path.read_text().splitlines() if not line.startswith("#")]


def _write(tmp_path: Path, rows: list[str]) -> Path:
    path = tmp_path / "clip.csv"
    path.write_text("\n".join(rows) + "\n")
    return path


def _edit(rows: list[str], row: int, col: int, value: str) -> list[str]:
    cells = rows[row].split(",")
    cells[col] = value
    return rows[:row] + [",".join(cells)] + rows[row + 1 :]


def test_shipped_clips_load_and_match_synthesis():
    for name in MOTIONS:
        clip = load_motion_csv(share_file(f"models/motions/{name}.csv"), CFG)
        fresh = synthesize(name, CFG)
        assert clip.num_frames == fresh.num_frames
        np.testing.assert_allclose(clip.joint_pos, fresh.joint_pos, atol=1e-6)
        np.testing.assert_allclose(clip.root_pos, fresh.root_pos, atol=1e-6)


def test_wrong_column_count_names_row(tmp_path):
    rows = _rows(STAND)
    rows[3] = ",".join(rows[3].split(",")[:-1])
    with pytest.raises(MotionError, match=r"clip\.csv: row 4: expected 36 columns .* got 35"):
        load_motion_csv(_write(tmp_path, rows), CFG)


def test_nan_names_row_and_column(tmp_path):
    path = _write(tmp_path, _edit(_rows(STAND), 5, 10, "nan"))
    with pytest.raises(MotionError, match=r"row 6, column 11 \(left_knee\): non-finite value nan") as err:
        load_motion_csv(path, CFG)
    assert "\n" not in str(err.value) and str(path) in str(err.value)


def test_text_cell_is_rejected(tmp_path):
    with pytest.raises(MotionError, match=r"row 1, column 2 \(root_y\): not a number: 'abc'"):
        load_motion_csv(_write(tmp_path, _edit(_rows(STAND), 0, 1, "abc")), CFG)


def test_joint_outside_limits_plus_margin(tmp_path):
    # left_knee lower limit -0.087; -0.2 is beyond the 0.05 margin, -0.1 within it
    load_motion_csv(_write(tmp_path, [_edit(_rows(STAND), r, 10, "-0.1")[r] for r in range(3)]), CFG)
    with pytest.raises(MotionError, match=r"row 3, column 11 \(left_knee\): -0.2000 rad outside the joint limits"):
        load_motion_csv(_write(tmp_path, _edit(_rows(STAND), 2, 10, "-0.2")), CFG)


def test_frame_rate_checked_against_joint_speed(tmp_path):
    jump = share_file("models/motions/jump.csv")
    load_motion_csv(jump, CFG, fps=30)
    with pytest.raises(MotionError, match=r"row \d+, column \d+ \(\w+\): joint moves at .* at 1000 fps, over 1.5 x its limit .*wrong frame rate"):
        load_motion_csv(jump, CFG, fps=1000)
    with pytest.raises(MotionError, match="frame rate 0 fps"):
        load_motion_csv(jump, CFG, fps=0)


def test_bad_quaternion_and_short_file(tmp_path):
    with pytest.raises(MotionError, match=r"row 2, columns 4-7 \(root quaternion x,y,z,w\): norm 2.000"):
        load_motion_csv(_write(tmp_path, _edit(_rows(STAND), 1, 6, "2.0")), CFG)
    with pytest.raises(MotionError, match="needs at least 2 frames, has 1"):
        load_motion_csv(_write(tmp_path, _rows(STAND)[:1]), CFG)
    with pytest.raises(MotionError, match="cannot read"):
        load_motion_csv(tmp_path / "missing.csv", CFG)


def test_resampling_velocities_and_key_bodies():
    clip = load_motion_csv(share_file("models/motions/squat.csv"), CFG)
    ref = reference_from_clip(clip, CFG)
    assert ref.dt == CFG.control_dt
    assert ref.num_frames == int(round(clip.duration_s / CFG.control_dt)) + 1
    # the 50 Hz samples at the 30 fps frame times equal the frames (every 3rd / 5th)
    np.testing.assert_allclose(ref.joint_pos[::5], clip.joint_pos[::3], atol=1e-9)
    # velocities: finite differences of the resampled positions
    np.testing.assert_allclose(ref.joint_vel[1:-1], (ref.joint_pos[2:] - ref.joint_pos[:-2]) / (2 * ref.dt), atol=1e-9)
    assert np.abs(ref.joint_vel).max() > 0.3
    np.testing.assert_allclose(ref.root_ang_vel, 0.0, atol=1e-9)
    # feet stay on the floor, the pelvis goes down in the squat
    feet = [ref.key_body_names.index(f) for f in CFG.feet]
    assert np.ptp(ref.key_body_pos[:, feet, 2]) < 1e-4  # 6-decimal CSV rounding
    pelvis = ref.key_body_pos[:, ref.key_body_names.index("pelvis"), 2]
    np.testing.assert_allclose(pelvis, ref.root_pos[:, 2], atol=1e-9)
    assert pelvis.max() - pelvis.min() > 0.05


def test_root_angular_velocity_in_root_frame(tmp_path):
    clip = load_motion_csv(STAND, CFG)
    yaw_rate = 0.5  # rad/s about z
    t = np.arange(clip.num_frames) / clip.fps
    quat = np.stack([np.cos(yaw_rate * t / 2), 0 * t, 0 * t, np.sin(yaw_rate * t / 2)], axis=1)
    spun = type(clip)(clip.name, clip.fps, clip.root_pos, quat, clip.joint_pos)
    ref = reference_from_clip(spun, CFG)
    np.testing.assert_allclose(ref.root_ang_vel[1:-1], [[0, 0, yaw_rate]] * (ref.num_frames - 2), atol=1e-4)
    assert ref.length_s == pytest.approx(ref.num_frames * CFG.control_dt)
    assert load_reference_motion(STAND, CFG).num_frames == 501
