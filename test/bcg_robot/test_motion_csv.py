"""The G1 motion CSV codec (bcg_robot.motion_csv): validation errors name file, row and column;
write/load round trip; the clip sampled at any time (joints lerp, root orientation slerp)."""

from pathlib import Path

import numpy as np
import pytest

from bcg_robot.config import load_robot_config
from bcg_robot.motion_csv import MotionClip, MotionError, load_motion_csv, slerp, write_motion_csv
from bcg_robot.paths import share_file

CFG = load_robot_config(check_model=False)
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


def test_shipped_clips_load():
    for name in ("stand", "squat", "step_in_place", "jump"):
        clip = load_motion_csv(share_file(f"models/motions/{name}.csv"), CFG)
        assert clip.name == name and clip.fps == 30.0 and clip.joint_pos.shape[1] == CFG.num_joints
        np.testing.assert_allclose(np.linalg.norm(clip.root_quat, axis=1), 1.0)


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


@pytest.mark.parametrize("row,column,value,message", [
    (4, 2, "78.4", r"row 5, column 3 \(root_z\): 78.4 m is not a pelvis height"),  # centimetres
    (4, 0, "2.0", r"row 5, columns 1-3 \(root position\): the root moves at 60.0 m/s"),  # a teleport
])
def test_a_root_that_is_no_pelvis_in_metres_or_teleports_is_refused(tmp_path, row, column, value, message):
    with pytest.raises(MotionError, match=message):
        load_motion_csv(_write(tmp_path, _edit(_rows(STAND), row, column, value)), CFG)


def test_a_first_frame_upside_down_is_refused(tmp_path):
    """The identity written w, x, y, z reads as x=1: 180 degrees about x, the pelvis pointing down."""
    rows = _rows(STAND)
    for r in range(len(rows)):
        for column, value in zip(range(3, 7), ("1", "0", "0", "0")):
            rows = _edit(rows, r, column, value)
    with pytest.raises(MotionError, match="row 1, columns 4-7 .*: the first frame's pelvis points down"):
        load_motion_csv(_write(tmp_path, rows), CFG)


def test_a_file_that_is_not_utf8_is_one_error(tmp_path):
    path = tmp_path / "latin1.csv"
    path.write_bytes("\n".join(_rows(STAND)).encode() + b"\n# caf\xe9\n")
    with pytest.raises(MotionError, match=r"latin1\.csv: not UTF-8 text"):
        load_motion_csv(path, CFG)


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
    with pytest.raises(MotionError, match=r"row \d+, column \d+ \(\w+\): joint moves at .* at 1000 fps, over 1.0 x its limit .*wrong frame rate"):
        load_motion_csv(jump, CFG, fps=1000)


def test_a_clip_faster_than_a_motor_is_refused(tmp_path):
    """The node trips joint_velocity at the motor's limit: a clip moving a joint faster (up to 1.5x
    was accepted) trains a policy that trips it mid-motion on the robot."""
    knee = CFG.joint_names.index("left_knee")
    limit = CFG.velocity[knee]
    column = 7 + knee
    base = float(_rows(STAND)[0].split(",")[column])

    def clip(*speeds):  # the knee moves at these multiples of its limit for one frame each (30 fps), then stays
        rows, value = _rows(STAND), base
        for r in range(len(rows)):
            if 1 <= r <= len(speeds):
                value += speeds[r - 1] * limit / 30.0
            rows = _edit(rows, r, column, f"{value:.6f}")
        return _write(tmp_path, rows)

    load_motion_csv(clip(0.9, 0.95), CFG)
    with pytest.raises(MotionError, match=r"row \d+, column \d+ \(left_knee\): joint moves at .* over 1.0 x its limit"):
        load_motion_csv(clip(0.9, 1.2), CFG)


def test_bad_quaternion_and_short_file(tmp_path):
    with pytest.raises(MotionError, match=r"row 2, columns 4-7 \(root quaternion x,y,z,w\): norm 2.000"):
        load_motion_csv(_write(tmp_path, _edit(_rows(STAND), 1, 6, "2.0")), CFG)
    with pytest.raises(MotionError, match="needs at least 2 frames, has 1"):
        load_motion_csv(_write(tmp_path, _rows(STAND)[:1]), CFG)
    with pytest.raises(MotionError, match="cannot read"):
        load_motion_csv(tmp_path / "missing.csv", CFG)


def test_write_then_load_round_trips(tmp_path):
    clip = load_motion_csv(share_file("models/motions/squat.csv"), CFG)
    again = load_motion_csv(write_motion_csv(tmp_path / "copy.csv", clip, comment="a copy\nof squat"), CFG)
    assert (tmp_path / "copy.csv").read_text().startswith("# a copy\n# of squat\n")
    for field in ("root_pos", "root_quat", "joint_pos"):
        np.testing.assert_allclose(getattr(again, field), getattr(clip, field), atol=1e-6)


def _yawing_clip(frames: int = 4, fps: float = 10.0) -> MotionClip:
    """Joint 0 at 0, 1, 2, ... rad; root z 0.7, 0.8, ...; root yawing 90 degrees per frame."""
    k = np.arange(frames, dtype=np.float64)
    yaw = k * np.pi / 2
    quat = np.stack([np.cos(yaw / 2), 0 * k, 0 * k, np.sin(yaw / 2)], axis=1)
    joints = np.zeros((frames, CFG.num_joints))
    joints[:, 0] = k
    root = np.stack([0 * k, 0 * k, 0.7 + 0.1 * k], axis=1)
    return MotionClip("yaw", fps, root, quat, joints)


def test_sample_interpolates_joints_linearly_and_the_root_orientation_by_slerp():
    clip = _yawing_clip()
    s = clip.sample(np.array([0.0, 0.05, 0.125, 0.3]))
    np.testing.assert_allclose(s.joint_pos[:, 0], [0.0, 0.5, 1.25, 3.0])
    np.testing.assert_allclose(s.root_pos[:, 2], [0.7, 0.75, 0.825, 1.0])
    # halfway between yaw 0 and 90 degrees: 45 degrees, a unit quaternion (slerp, not a plain lerp's 0.707 norm)
    np.testing.assert_allclose(s.root_quat[1], [np.cos(np.pi / 8), 0, 0, np.sin(np.pi / 8)], atol=1e-12)
    np.testing.assert_allclose(np.linalg.norm(s.root_quat, axis=1), 1.0)
    # a quarter of the way from 90 to 180 degrees
    np.testing.assert_allclose(s.root_quat[2], [np.cos(np.radians(112.5) / 2), 0, 0, np.sin(np.radians(112.5) / 2)], atol=1e-12)
    # times outside the clip are its first / last frame
    out = clip.sample(np.array([-1.0, 5.0]))
    np.testing.assert_allclose(out.joint_pos[:, 0], [0.0, 3.0])


def test_slerp_takes_the_short_way_and_handles_equal_quaternions():
    q = np.array([[1.0, 0.0, 0.0, 0.0]])
    np.testing.assert_allclose(slerp(q, q, np.array([0.3])), q)
    # -q is the same rotation: interpolating to it stays put
    np.testing.assert_allclose(np.abs(slerp(q, -q, np.array([0.5]))), q, atol=1e-12)


def test_the_trained_clip_check_names_the_file_for_other_content_and_for_a_file_it_cannot_read(tmp_path):
    import hashlib

    from bcg_robot.motion_csv import check_trained_clip

    clip = tmp_path / "c.csv"
    clip.write_text("0,0,0.78\n")
    digest = hashlib.sha256(clip.read_bytes()).hexdigest()
    check_trained_clip(clip, digest, "p.onnx")  # its own clip
    check_trained_clip(clip, "", "p.onnx")  # no digest recorded: not checked
    with pytest.raises(MotionError, match=r"c.csv: not the clip policy p.onnx was trained on \(sha256 "):
        check_trained_clip(clip, "0" * 64, "p.onnx")
    with pytest.raises(MotionError, match="proc/self/mem: cannot read"):  # a read error (as permission denied): was a traceback
        check_trained_clip(Path("/proc/self/mem"), digest, "p.onnx")
