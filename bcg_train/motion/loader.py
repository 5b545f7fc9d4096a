"""The G1 reference-motion CSV format: the codec lives in :mod:`bcg_robot.motion_csv`.

Deployment (``bcg-sim2sim``) reads the same clips, so the format, its validation and
the writer are defined once, in the robot package; this module keeps the trainer's
import path (``bcg_train.motion.loader``).
"""

from bcg_robot.motion_csv import (
    CSV_FPS,
    JOINT_LIMIT_MARGIN,
    QUAT_NORM_TOLERANCE,
    ROOT_COLUMNS,
    VELOCITY_LIMIT_FACTOR,
    ClipSample,
    MotionClip,
    MotionError,
    column_names,
    load_motion_csv,
    write_motion_csv,
)

__all__ = [
    "CSV_FPS",
    "JOINT_LIMIT_MARGIN",
    "QUAT_NORM_TOLERANCE",
    "ROOT_COLUMNS",
    "VELOCITY_LIMIT_FACTOR",
    "ClipSample",
    "MotionClip",
    "MotionError",
    "column_names",
    "load_motion_csv",
    "write_motion_csv",
]
