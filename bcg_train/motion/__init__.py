"""Reference motions: the G1 CSV format, validation, resampling and kinematics."""

from bcg_train.motion.loader import MotionClip, MotionError, load_motion_csv, write_motion_csv
from bcg_train.motion.reference import ReferenceMotion, load_reference_motion, reference_from_clip

__all__ = [
    "MotionClip",
    "MotionError",
    "ReferenceMotion",
    "load_motion_csv",
    "load_reference_motion",
    "reference_from_clip",
    "write_motion_csv",
]
