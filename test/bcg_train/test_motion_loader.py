"""Motion clips in the trainer: the shipped clips match their synthesis; resampling and kinematics.

The CSV format and its validation are tested with the codec, test/bcg_robot/test_motion_csv.py."""

import numpy as np
import pytest

from bcg_robot.config import load_robot_config
from bcg_robot.paths import share_file
from bcg_train.motion import MotionError, load_motion_csv, load_reference_motion, reference_from_clip
from bcg_train.motion.synthesize import MOTIONS, synthesize

CFG = load_robot_config()
STAND = share_file("models/motions/stand.csv")


def test_shipped_clips_load_and_match_synthesis():
    for name in MOTIONS:
        clip = load_motion_csv(share_file(f"models/motions/{name}.csv"), CFG)
        fresh = synthesize(name, CFG)
        assert clip.num_frames == fresh.num_frames
        np.testing.assert_allclose(clip.joint_pos, fresh.joint_pos, atol=1e-6)
        np.testing.assert_allclose(clip.root_pos, fresh.root_pos, atol=1e-6)


def test_make_motions_checks_every_name_before_it_writes_a_clip(tmp_path, capsys):
    """``bcg-make-motions stand typo`` rewrote stand.csv (with the default --out, the shipped clip) before
    it refused the typo."""
    from bcg_train.cli.make_motions import main

    with pytest.raises(SystemExit) as exc:
        main(["--out", str(tmp_path), "stand", "typo"])
    assert exc.value.code == 2
    assert capsys.readouterr().err.splitlines()[-1].startswith("bcg-make-motions: error: unknown motion 'typo' (known: ")
    assert list(tmp_path.iterdir()) == []


def test_make_motions_refuses_a_file_where_its_folder_goes(tmp_path, capsys):
    """A file at --out was a traceback from the first clip's write."""
    from bcg_train.cli.make_motions import main

    blocker = tmp_path / "taken"
    blocker.write_text("")
    with pytest.raises(SystemExit) as exc:
        main(["--out", str(blocker), "stand"])
    assert exc.value.code == 2
    assert capsys.readouterr().err.strip() == f"bcg-make-motions: error: {blocker}: exists and is not a directory (--out)"


def test_make_motions_refuses_a_folder_where_a_clip_goes_before_writing_any(tmp_path, capsys):
    """A folder named like a clip was IsADirectoryError's traceback, with the clips before it rewritten."""
    from bcg_train.cli.make_motions import main

    (tmp_path / "squat.csv").mkdir()
    with pytest.raises(SystemExit) as exc:
        main(["--out", str(tmp_path), "stand", "squat"])
    assert exc.value.code == 2
    assert capsys.readouterr().err.strip() == f"bcg-make-motions: error: {tmp_path / 'squat.csv'}: is a directory, where --out gets this file"
    assert [p.name for p in tmp_path.iterdir()] == ["squat.csv"]  # stand.csv not written


def test_the_trainer_uses_the_robot_packages_codec():
    # one codec: bcg_train.motion and its loader module re-export bcg_robot.motion_csv (format, checks, writer)
    from bcg_robot import motion_csv
    from bcg_train.motion import loader

    for name in ("MotionClip", "MotionError", "load_motion_csv", "write_motion_csv", "column_names", "CSV_FPS",
                 "JOINT_LIMIT_MARGIN", "VELOCITY_LIMIT_FACTOR", "ROOT_COLUMNS"):
        assert getattr(loader, name) is getattr(motion_csv, name), name
    assert MotionError is motion_csv.MotionError and load_motion_csv is motion_csv.load_motion_csv


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


def test_the_jump_clip_reaches_its_take_off_speed_before_it_leaves_the_floor():
    """The jump's pelvis speeds up through the push-off to the flight's speed (the clip once
    slowed to 0.13 m/s at full extension and then flew off at 1.4 m/s), lands at that speed and
    brakes into the crouch, with every joint within its speed limit."""
    from bcg_train.motion.synthesize import JUMP

    ref = reference_from_clip(load_motion_csv(share_file("models/motions/jump.csv"), CFG), CFG)
    t = np.arange(ref.num_frames) * ref.dt
    vz = ref.root_lin_vel[:, 2]
    push = (t > JUMP.takeoff - 0.06) & (t < JUMP.takeoff)  # the last frames on the floor
    brake = (t > JUMP.land) & (t < JUMP.land + 0.06)
    assert push.any() and brake.any()
    assert vz[push].max() >= 0.8 * JUMP.takeoff_speed
    assert vz[brake].min() <= -0.8 * JUMP.takeoff_speed
    # no jump in vertical speed between control steps beyond what the push-off or gravity give
    assert np.abs(np.diff(vz)).max() / ref.dt < 2.0 * 9.81
    assert np.all(np.abs(ref.joint_vel) <= CFG.velocity)


def test_a_clip_shorter_than_one_control_step_is_one_line_naming_the_file(tmp_path):
    """Two frames at 100 fps resample to one control-rate frame: np.gradient's ValueError ('Shape of
    array too small') named no file."""
    from bcg_robot.motion_csv import write_motion_csv

    clip = load_motion_csv(STAND, CFG)
    short = type(clip)(clip.name, 100.0, clip.root_pos[:2], clip.root_quat[:2], clip.joint_pos[:2])
    path = tmp_path / "short.csv"
    write_motion_csv(path, short)
    with pytest.raises(MotionError) as err:
        load_reference_motion(path, CFG, 100.0)
    assert str(err.value).startswith(f"{path}: lasts 0.01 s, shorter than one control step (0.02 s)"), str(err.value)
