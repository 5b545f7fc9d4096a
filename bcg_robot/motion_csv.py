"""The public G1 reference-motion CSV format: load, validate, write, sample (numpy only).

One row per frame, comma separated, no header, 36 columns:
root position x, y, z (m), root quaternion x, y, z, w, then the 29 joint angles (rad)
in motor order (``config/g1_29dof.yaml``). Public LAFAN1 retargets are 30 fps; the
frame rate is not in the file, so the loader takes it (default 30) and checks it
against the data: a joint moving faster than its velocity limit between two frames
means the clip is not at that rate (or is broken). Lines starting with ``#`` are
comments (this project's clips name their source there).

Every problem is a one-line :class:`MotionError` naming the file, the row (1-based
line number) and the column.

One codec for the trainer (``bcg_train.motion``, which re-exports it) and deployment
(``bcg-sim2sim`` scores a policy against the clip its contract names):
:meth:`MotionClip.sample` gives the clip at any times (joints and root position
linearly interpolated, the root orientation by slerp).
"""

from __future__ import annotations

import dataclasses
import hashlib
import math
from pathlib import Path

import numpy as np

from bcg_robot.config import RobotConfig
from bcg_robot.errors import BCGInputError

CSV_FPS = 30.0
FPS_RANGE = (1.0, 1000.0)  # the frame rates a clip may be read at
ROOT_COLUMNS = ("root_x", "root_y", "root_z", "root_qx", "root_qy", "root_qz", "root_qw")
# Joint angles may exceed the limits by this much (retargets clip loosely), rad.
JOINT_LIMIT_MARGIN = 0.05
# A joint may move at most this multiple of its velocity limit between frames: no faster than
# its motor. The node trips joint_velocity at the limit (safety velocity_fraction <= 1), so a
# faster clip trained a policy that trips it mid-motion on the robot (1.5 was accepted before).
VELOCITY_LIMIT_FACTOR = 1.0
QUAT_NORM_TOLERANCE = 0.05
# The root: a height in metres above the floor (a clip in cm is 100x off), at most this fast
# between frames (a G1 does not move 10 m/s; a teleport is a broken or concatenated clip),
# and upright in the first frame (the pelvis z axis above horizontal: a quaternion written
# w, x, y, z instead of x, y, z, w turns the identity upside down).
ROOT_HEIGHT_RANGE_M = (0.0, 3.0)
MAX_ROOT_SPEED = 10.0  # m/s


class MotionError(BCGInputError):
    """A motion file that does not validate."""


def check_trained_clip(path: Path, motion_sha256: str, policy: str) -> None:
    """A MotionError unless the clip file at ``path`` is the one a policy was trained on: the
    SHA-256 its contract records (``motion_sha256``; '' where none was recorded: not checked).
    Its length alone does not tell: an edited clip keeps it."""
    if not motion_sha256:
        return
    try:
        digest = hashlib.sha256(Path(path).read_bytes()).hexdigest()
    except OSError as err:
        raise MotionError(path, f"cannot read: {err.strerror or err}") from None
    if digest != motion_sha256:
        raise MotionError(path, f"not the clip policy {policy} was trained on (sha256 {digest[:12]}, its contract "
                                f"says {motion_sha256[:12]})")


def column_names(cfg: RobotConfig) -> tuple[str, ...]:
    return ROOT_COLUMNS + tuple(cfg.joint_names)


@dataclasses.dataclass(frozen=True)
class ClipSample:
    """A clip at given times: (T, 3) root position, (T, 4) root quaternion w x y z, (T, n) joints."""

    root_pos: np.ndarray
    root_quat: np.ndarray
    joint_pos: np.ndarray


@dataclasses.dataclass(frozen=True)
class MotionClip:
    """A validated clip as stored: frames at ``fps``; quaternions converted to w, x, y, z."""

    name: str
    fps: float
    root_pos: np.ndarray  # (T, 3)
    root_quat: np.ndarray  # (T, 4) w x y z, unit
    joint_pos: np.ndarray  # (T, n) motor order
    source: str = ""

    @property
    def num_frames(self) -> int:
        return self.root_pos.shape[0]

    @property
    def duration_s(self) -> float:
        return (self.num_frames - 1) / self.fps

    def sample(self, times: np.ndarray) -> ClipSample:
        """The clip at ``times`` (s from its first frame, clamped to ``[0, duration_s]``):
        root position and joints linearly interpolated between frames, the root orientation by slerp."""
        f = np.clip(np.asarray(times, dtype=np.float64).reshape(-1) * self.fps, 0.0, self.num_frames - 1)
        i0 = np.minimum(np.floor(f).astype(int), self.num_frames - 2)
        w = f - i0

        def lerp(x: np.ndarray) -> np.ndarray:
            return x[i0] * (1 - w)[:, None] + x[i0 + 1] * w[:, None]

        return ClipSample(lerp(self.root_pos), slerp(self.root_quat[i0], self.root_quat[i0 + 1], w), lerp(self.joint_pos))


def slerp(q0: np.ndarray, q1: np.ndarray, t: np.ndarray) -> np.ndarray:
    """Row-wise spherical interpolation of unit quaternions (w x y z)."""
    dot = np.sum(q0 * q1, axis=-1, keepdims=True)
    q1 = np.where(dot < 0, -q1, q1)
    dot = np.abs(dot)
    t = np.asarray(t, dtype=np.float64)[:, None]
    theta = np.arccos(np.clip(dot, -1.0, 1.0))
    small = theta < 1e-6
    sin = np.where(small, 1.0, np.sin(theta))
    w0 = np.where(small, 1 - t, np.sin((1 - t) * theta) / sin)
    w1 = np.where(small, t, np.sin(t * theta) / sin)
    out = w0 * q0 + w1 * q1
    return out / np.linalg.norm(out, axis=-1, keepdims=True)


def _parse_rows(path: Path, text: str, ncols: int, names: tuple[str, ...]) -> tuple[np.ndarray, list[int]]:
    rows, lines = [], []
    for lineno, line in enumerate(text.splitlines(), start=1):
        stripped = line.strip()
        if not stripped or stripped.startswith("#"):
            continue
        cells = stripped.split(",")
        if len(cells) != ncols:
            first = min(len(cells), ncols)  # the first column missing or extra, 0-based
            where = f"column {first + 1} ({names[first]}) is missing" if len(cells) < ncols else f"column {first + 1} is extra"
            raise MotionError(
                path, f"row {lineno}: expected {ncols} columns (root pos 3, quat xyzw 4, {ncols - 7} joints), got {len(cells)}: {where}"
            )
        values = []
        for col, cell in enumerate(cells):
            try:
                v = float(cell)
            except ValueError:
                raise MotionError(path, f"row {lineno}, column {col + 1} ({names[col]}): not a number: {cell.strip()!r}") from None
            if not math.isfinite(v):
                raise MotionError(path, f"row {lineno}, column {col + 1} ({names[col]}): non-finite value {cell.strip()}")
            values.append(v)
        rows.append(values)
        lines.append(lineno)
    if len(rows) < 2:
        raise MotionError(path, f"needs at least 2 frames, has {len(rows)}")
    return np.asarray(rows, dtype=np.float64), lines


def load_motion_csv(path: str | Path, cfg: RobotConfig, fps: float = CSV_FPS, name: str | None = None) -> MotionClip:
    """Load and validate a G1 motion CSV (see module docstring)."""
    path = Path(path)
    names = column_names(cfg)
    if not (math.isfinite(fps) and FPS_RANGE[0] <= fps <= FPS_RANGE[1]):
        raise MotionError(path, f"frame rate {fps} fps is not in [{FPS_RANGE[0]:g}, {FPS_RANGE[1]:g}]")
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as err:
        raise MotionError(path, f"cannot read: {err.strerror or err}") from None
    except UnicodeDecodeError as err:
        raise MotionError(path, f"not UTF-8 text (byte {err.start})") from None
    data, lines = _parse_rows(path, text, len(names), names)

    quat_xyzw = data[:, 3:7]
    norms = np.linalg.norm(quat_xyzw, axis=1)
    bad = np.flatnonzero(np.abs(norms - 1.0) > QUAT_NORM_TOLERANCE)
    if bad.size:
        raise MotionError(path, f"row {lines[bad[0]]}, columns 4-7 (root quaternion x,y,z,w): norm {norms[bad[0]]:.3f} is not 1")

    joints = data[:, 7:]
    lo, hi = cfg.lower - JOINT_LIMIT_MARGIN, cfg.upper + JOINT_LIMIT_MARGIN
    outside = (joints < lo) | (joints > hi)
    if outside.any():
        r, j = np.argwhere(outside)[0]
        raise MotionError(
            path,
            f"row {lines[r]}, column {8 + j} ({cfg.joint_names[j]}): {joints[r, j]:.4f} rad outside the joint limits "
            f"[{cfg.lower[j]:.4f}, {cfg.upper[j]:.4f}] plus margin {JOINT_LIMIT_MARGIN}",
        )
    speed = np.abs(np.diff(joints, axis=0)) * fps
    too_fast = speed > VELOCITY_LIMIT_FACTOR * cfg.velocity
    if too_fast.any():
        r, j = np.argwhere(too_fast)[0]
        raise MotionError(
            path,
            f"row {lines[r + 1]}, column {8 + j} ({cfg.joint_names[j]}): joint moves at {speed[r, j]:.1f} rad/s at {fps:g} fps, "
            f"over {VELOCITY_LIMIT_FACTOR} x its limit {cfg.velocity[j]:g} rad/s (wrong frame rate?)",
        )

    _check_root(path, data[:, :3], quat_xyzw / norms[:, None], lines, fps)
    quat = quat_xyzw[:, [3, 0, 1, 2]] / norms[:, None]
    quat = _continuous_sign(quat)
    return MotionClip(
        name=name or path.stem, fps=float(fps), root_pos=data[:, :3].copy(), root_quat=quat, joint_pos=joints.copy(), source=str(path)
    )


def _check_root(path: Path, pos: np.ndarray, quat_xyzw: np.ndarray, lines: list[int], fps: float) -> None:
    low, high = ROOT_HEIGHT_RANGE_M
    out = np.flatnonzero((pos[:, 2] <= low) | (pos[:, 2] > high))
    if out.size:
        r = out[0]
        raise MotionError(path, f"row {lines[r]}, column 3 (root_z): {pos[r, 2]:g} m is not a pelvis height in ({low:g}, {high:g}] m")
    speed = np.linalg.norm(np.diff(pos, axis=0), axis=1) * fps
    fast = np.flatnonzero(speed > MAX_ROOT_SPEED)
    if fast.size:
        r = fast[0]
        raise MotionError(path, f"row {lines[r + 1]}, columns 1-3 (root position): the root moves at {speed[r]:.1f} m/s at "
                                f"{fps:g} fps, over {MAX_ROOT_SPEED:g} m/s (a jump in the clip, or the wrong frame rate?)")
    x, y = quat_xyzw[0, 0], quat_xyzw[0, 1]
    up_z = 1.0 - 2.0 * (x * x + y * y)  # world z of the pelvis z axis
    if up_z <= 0.0:
        raise MotionError(path, f"row {lines[0]}, columns 4-7 (root quaternion x,y,z,w): the first frame's pelvis points "
                                f"down (z axis at {up_z:.2f} of vertical): is the quaternion written w,x,y,z?")


def _continuous_sign(quat: np.ndarray) -> np.ndarray:
    """Flip signs so consecutive quaternions lie in the same hemisphere (q and -q are one rotation)."""
    out = quat.copy()
    for i in range(1, len(out)):
        if np.dot(out[i], out[i - 1]) < 0:
            out[i] = -out[i]
    return out


def write_motion_csv(path: str | Path, clip: MotionClip, comment: str = "") -> Path:
    """Write ``clip`` in the G1 CSV format (quaternion back to x, y, z, w)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    quat_xyzw = clip.root_quat[:, [1, 2, 3, 0]]
    table = np.concatenate([clip.root_pos, quat_xyzw, clip.joint_pos], axis=1)
    header = "".join(f"# {line}\n" for line in comment.splitlines()) if comment else ""
    body = "\n".join(",".join(f"{v:.6f}" for v in row) for row in table)
    path.write_text(header + body + "\n")
    return path
