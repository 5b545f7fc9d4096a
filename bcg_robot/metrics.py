"""Evaluation metrics of a G1 rollout: E_track, root-height error, foot penetration, flight and falls (numpy only).

One definition of each, used by ``bcg-eval`` (policy rollouts in plain MuJoCo) and
``bcg-sim2sim`` (the bridge's trajectory log):

E_track (cm)
    Mean per-body position error of the :data:`TRACKED_BODIES` (torso, knees, feet =
    ankle-roll links, elbows, hands = wrist-yaw links) relative to the root (pelvis) and
    expressed in the root frame, i.e. the root-relative MPJPE of motion-imitation work:
    ``mean over samples t and bodies b of || R_t^T (p_b,t - p_root,t) - Rref_t^T (pref_b,t - pref_root,t) ||``
    in cm. Root translation and orientation are taken out on both sides, so E_track
    measures the posture; drifting or turning is not an error (falling is a fall). It is
    reported with its maximum over samples and bodies.
root-height error (cm)
    ``mean over samples t of |z_root,t - zref_root,t|`` (and its maximum): the pelvis height
    above the floor against the reference's. E_track is root-relative and cannot tell a
    jump from a crouch (the same posture in the air or on the floor); this figure can.
    For a policy without a reference motion the reference is the default pose standing
    (the model's ``default`` keyframe height).
foot penetration (mm)
    Per physics step (or logged sample), the deepest penetration of a contact between the
    floor and a geom of a foot body (``RobotConfig.feet``), ``max(-dist, 0)``, 0 without
    such a contact; summarized as the mean over the samples in which a foot penetrates
    the floor (0 if none does) and the maximum.
longest flight (s)
    The longest run of consecutive physics steps (or samples) in which no foot-floor
    contact touches (``dist <= 0``): how long the robot was in the air. A jump that
    leaves the ground has one; a crouch-and-extend that never takes off has 0. E_track
    cannot tell the two apart, the root-height error only in part.
fall
    The root (pelvis) height above the floor drops below :data:`FALL_HEIGHT_M` (0.3 m; the
    G1's pelvis stands at about 0.79 m), or the simulated state is no longer finite.

Positions are in metres, quaternions ``w x y z``. Forward kinematics (MuJoCo) stays with
the callers; this module takes arrays.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np

# Bodies whose root-relative positions E_track compares (names of the G1 MJCF bodies).
TRACKED_BODIES = (
    "torso_link",
    "left_knee_link",
    "right_knee_link",
    "left_ankle_roll_link",
    "right_ankle_roll_link",
    "left_elbow_link",
    "right_elbow_link",
    "left_wrist_yaw_link",
    "right_wrist_yaw_link",
)
FALL_HEIGHT_M = 0.3  # root height (m) below which the robot has fallen


# -- E_track ----------------------------------------------------------------------------
def rotate_into_frame(quat_wxyz: np.ndarray, vectors: np.ndarray) -> np.ndarray:
    """``R(q)^T v``: world vectors (..., K, 3) in the frame of orientation ``quat_wxyz`` (..., 4)."""
    q = np.asarray(quat_wxyz, dtype=np.float64)
    q = q / np.linalg.norm(q, axis=-1, keepdims=True)
    w = q[..., None, :1]
    u = -q[..., None, 1:]  # the conjugate's vector part: rotate by q^-1
    v = np.asarray(vectors, dtype=np.float64)
    uv = np.cross(u, v)
    return v + 2.0 * w * uv + 2.0 * np.cross(u, uv)


def root_frame_positions(body_pos: np.ndarray, root_pos: np.ndarray, root_quat: np.ndarray) -> np.ndarray:
    """World body positions (..., K, 3) relative to the root (..., 3), in the root frame (..., 4)."""
    rel = np.asarray(body_pos, dtype=np.float64) - np.asarray(root_pos, dtype=np.float64)[..., None, :]
    return rotate_into_frame(root_quat, rel)


def body_position_errors(body_pos: np.ndarray, ref_body_pos: np.ndarray) -> np.ndarray:
    """Euclidean error (..., K) in m between root-frame positions (..., K, 3) and the reference's."""
    return np.linalg.norm(np.asarray(body_pos, dtype=np.float64) - np.asarray(ref_body_pos, dtype=np.float64), axis=-1)


@dataclasses.dataclass(frozen=True)
class TrackingSummary:
    mean_cm: float  # E_track
    max_cm: float


def summarize_tracking(errors_m: np.ndarray) -> TrackingSummary:
    """E_track of per-sample, per-body errors (T, K) in m; NaN without samples."""
    e = np.asarray(errors_m, dtype=np.float64)
    if e.size == 0:
        return TrackingSummary(float("nan"), float("nan"))
    return TrackingSummary(100.0 * float(e.mean()), 100.0 * float(e.max()))


def root_height_error_cm(root_z: Any, ref_root_z: Any) -> tuple[float, float]:
    """(mean, max) of ``|root_z - ref_root_z|`` in cm over samples (heights in m, broadcast);
    NaN without samples."""
    e = np.abs(np.asarray(root_z, dtype=np.float64) - np.asarray(ref_root_z, dtype=np.float64))
    if e.size == 0:
        return float("nan"), float("nan")
    return 100.0 * float(e.mean()), 100.0 * float(e.max())


# -- foot penetration ---------------------------------------------------------------------
@dataclasses.dataclass(frozen=True)
class FootFloorGeoms:
    """Geom ids of the floor and of the foot bodies' colliders in one model."""

    floor: int
    feet: np.ndarray
    # is_foot[g]: geom g is a foot collider (ids past the table are not). A table lookup, where
    # np.isin cost 26 us a call: the bridge's state snapshot spent 85 of its 103 us here.
    _is_foot: np.ndarray = dataclasses.field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        feet = np.asarray(self.feet, dtype=np.int64)
        if feet.size and feet.min() < 0:
            raise ValueError(f"foot geom ids must be >= 0, got {self.feet}")
        table = np.zeros(int(feet.max()) + 1 if feet.size else 1, dtype=bool)
        table[feet] = True
        object.__setattr__(self, "_is_foot", table)

    def foot_floor(self, geom1: np.ndarray, geom2: np.ndarray) -> np.ndarray:
        """Per contact: whether it is between the floor and a foot collider."""
        g1, g2 = np.asarray(geom1, dtype=np.int64), np.asarray(geom2, dtype=np.int64)
        other = np.where(g1 == self.floor, g2, np.where(g2 == self.floor, g1, -1))  # -1: no floor in it
        known = (other >= 0) & (other < self._is_foot.size)
        return known & self._is_foot[np.where(known, other, 0)]

    def deepest_penetration(self, dist: np.ndarray, geom1: np.ndarray, geom2: np.ndarray) -> float:
        """Deepest foot-floor penetration (m, >= 0) among contacts (``MjData.contact`` arrays)."""
        foot_floor = self.foot_floor(geom1, geom2)
        if not foot_floor.any():
            return 0.0
        return max(0.0, float(-np.min(np.asarray(dist)[foot_floor])))

    def deepest_penetration_of(self, contact: Any) -> float:
        """:meth:`deepest_penetration` of a MuJoCo contact list (``MjData.contact``)."""
        return self.deepest_penetration(contact.dist, contact.geom1, contact.geom2)

    def touching(self, dist: np.ndarray, geom1: np.ndarray, geom2: np.ndarray) -> bool:
        """Whether a foot collider touches the floor: a foot-floor contact at distance <= 0."""
        return bool(np.any(np.asarray(dist)[self.foot_floor(geom1, geom2)] <= 0.0))

    def touching_of(self, contact: Any) -> bool:
        """:meth:`touching` of a MuJoCo contact list (``MjData.contact``)."""
        return self.touching(contact.dist, contact.geom1, contact.geom2)


def longest_flight_s(touching: Any, dt: float) -> float:
    """Longest run of consecutive samples with no foot on the floor (``touching`` false), in seconds."""
    airborne = ~np.asarray(touching, dtype=bool)
    longest = run = 0
    for a in airborne:
        run = run + 1 if a else 0
        longest = max(longest, run)
    return longest * float(dt)


@dataclasses.dataclass(frozen=True)
class PenetrationSummary:
    mean_mm: float  # over the samples in which a foot penetrates the floor
    max_mm: float


def summarize_foot_penetration(depths_m: np.ndarray) -> PenetrationSummary:
    """Foot penetration of per-sample deepest penetrations (m); NaN without samples."""
    d = np.asarray(depths_m, dtype=np.float64)
    if d.size == 0:
        return PenetrationSummary(float("nan"), float("nan"))
    touching = d[d > 0]
    mean = float(touching.mean()) if touching.size else 0.0
    return PenetrationSummary(1000.0 * mean, 1000.0 * float(d.max()))


# -- falls --------------------------------------------------------------------------------
def is_fallen(root_height: Any, finite: Any = True) -> np.ndarray:
    """Per sample: root below :data:`FALL_HEIGHT_M`, a non-finite height, or ``finite`` false."""
    h = np.asarray(root_height, dtype=np.float64)
    return ~np.asarray(finite, dtype=bool) | ~np.isfinite(h) | (h < FALL_HEIGHT_M)
