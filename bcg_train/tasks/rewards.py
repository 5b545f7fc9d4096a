"""Imitation reward terms and termination tests as pure functions of robot and reference state.

Tracking terms are ``weight * exp(-error / sigma)`` with

``joint_pos``    sum of squared joint-angle errors (rad^2)
``joint_vel``    sum of squared joint-velocity errors ((rad/s)^2)
``root_pos``     squared root-position error (m^2)
``root_orient``  squared rotation angle between root and reference orientation (rad^2)
``root_vel``     squared linear (world) plus angular (root frame) velocity error
``key_body``     mean squared key-body position error (m^2)
``root_height``  squared root-height error alone (m^2; off by default: a jump's flight is a few
                 centimetres of height that ``root_pos`` weighs like any horizontal drift)
``root_vel_z``   squared vertical root-velocity error alone ((m/s)^2; off by default: it differs
                 from the reference's only where the reference moves up or down, so it pays for
                 a jump's push-off speed where ``root_height`` pays over the whole clip)
``feet_height``  sum over the feet of the squared world-height error (m^2; off by default: zero
                 wherever the robot's and the reference's feet are both on the floor, so it pays
                 for the feet leaving it where the reference's do: a jump's flight)

and penalties are ``weight * error`` with ``action_rate`` the sum of squared action
changes and ``alive`` a constant 1 (positive weight: a bonus per step alive). Every
function works on one environment or a batch (leading axes) with ``xp`` numpy or jax.numpy.

The reference is compared in the world frame, or (task ``reference_frame: heading``)
re-anchored every step onto the robot's root: moved horizontally to the robot's root and
turned about the vertical to its heading (:func:`anchor_to_heading`). Then a push that
moves or turns the robot is not a tracking error, as it is not for E_track; the root's
height, tilt, velocities and the posture still are.
"""

from __future__ import annotations

import dataclasses
import functools
import operator
from typing import Any

import numpy as np

from bcg_train.motion.reference import quat_mul
from bcg_train.tasks.config import REFERENCE_FRAMES, PushRecoveryConfig, RewardConfig, TerminationConfig


@dataclasses.dataclass(frozen=True)
class TrackedState:
    """What the reward compares: one robot (or reference) state, leading batch axes allowed."""

    root_pos: Any  # (..., 3) world
    root_quat: Any  # (..., 4) w x y z
    root_lin_vel: Any  # (..., 3) world
    root_ang_vel: Any  # (..., 3) root frame
    joint_pos: Any  # (..., n)
    joint_vel: Any  # (..., n)
    key_body_pos: Any  # (..., K, 3) world


def rotation_angle_sq(q: Any, q_ref: Any, xp: Any = np) -> Any:
    """Squared angle of the rotation between unit quaternions, via 2 acos|<q, q_ref>|,
    approximated smoothly as 4 (1 - <q, q_ref>^2) (exact to second order, differentiable at 0)."""
    dot = xp.sum(q * q_ref, axis=-1)
    return 4.0 * (1.0 - dot * dot)


def feet_key_index(key_body_names: tuple[str, ...], robot: Any) -> tuple[int, ...]:
    """Where the robot config's feet (``RobotConfig.feet``) sit among the key bodies."""
    missing = [f for f in robot.feet if f not in key_body_names]
    if missing:
        raise ValueError(f"feet {missing} are not key bodies ({', '.join(key_body_names)})")
    return tuple(key_body_names.index(f) for f in robot.feet)


def tracking_errors(robot: TrackedState, ref: TrackedState, feet: tuple[int, ...] = (), xp: Any = np) -> dict[str, Any]:
    """Each tracking term's error; ``feet`` indexes the feet among the key bodies."""
    sq = lambda a, b: xp.sum((a - b) ** 2, axis=-1)
    feet_z = lambda s: s.key_body_pos[..., list(feet), 2]
    return {
        "joint_pos": sq(robot.joint_pos, ref.joint_pos),
        "joint_vel": sq(robot.joint_vel, ref.joint_vel),
        "root_pos": sq(robot.root_pos, ref.root_pos),
        "root_orient": rotation_angle_sq(robot.root_quat, ref.root_quat, xp),
        "root_vel": sq(robot.root_lin_vel, ref.root_lin_vel) + sq(robot.root_ang_vel, ref.root_ang_vel),
        "key_body": xp.mean(sq(robot.key_body_pos, ref.key_body_pos), axis=-1),
        "root_height": (robot.root_pos[..., 2] - ref.root_pos[..., 2]) ** 2,
        "root_vel_z": (robot.root_lin_vel[..., 2] - ref.root_lin_vel[..., 2]) ** 2,
        "feet_height": sq(feet_z(robot), feet_z(ref)),
    }


def yaw(quat_wxyz: Any, xp: Any = np) -> Any:
    """Heading (rad) of orientations ``w x y z``: the angle about world z of the body x axis."""
    w, x, y, z = (quat_wxyz[..., i] for i in range(4))
    return xp.arctan2(2.0 * (w * z + x * y), 1.0 - 2.0 * (y * y + z * z))


def anchor_to_heading(ref: TrackedState, robot: TrackedState, xp: Any = np) -> TrackedState:
    """The reference moved horizontally onto the robot's root and turned about world z by the
    robot's heading minus its own; its height, tilt, joints and root-frame angular velocity are
    kept. Key bodies turn about the reference's root; the world linear velocity turns too."""
    d = yaw(robot.root_quat, xp) - yaw(ref.root_quat, xp)
    c, s = xp.cos(d), xp.sin(d)

    def turn(v: Any, c: Any, s: Any) -> Any:  # world vectors (..., 3) rotated about z
        return xp.stack([c * v[..., 0] - s * v[..., 1], s * v[..., 0] + c * v[..., 1], v[..., 2]], axis=-1)

    root = reference_root_in_frame("heading", ref.root_pos, robot.root_pos, xp)
    key = turn(ref.key_body_pos - ref.root_pos[..., None, :], c[..., None], s[..., None]) + root[..., None, :]
    zero = xp.zeros_like(d)
    q_turn = xp.stack([xp.cos(0.5 * d), zero, zero, xp.sin(0.5 * d)], axis=-1)
    return dataclasses.replace(ref, root_pos=root, root_quat=quat_mul(q_turn, ref.root_quat, xp),
                               root_lin_vel=turn(ref.root_lin_vel, c, s), key_body_pos=key)


def reference_root_in_frame(frame: str, ref_root_pos: Any, robot_root_pos: Any, xp: Any = np) -> Any:
    """The reference's root position (..., 3) as :func:`reference_in_frame` places it: as it is
    (``world``), or moved horizontally onto the robot's root (``heading``: only its height is kept)."""
    shape = xp.broadcast_shapes(xp.shape(ref_root_pos), xp.shape(robot_root_pos))
    if frame == "world":
        return xp.broadcast_to(ref_root_pos, shape)
    if frame == "heading":
        return xp.concatenate([xp.broadcast_to(robot_root_pos, shape)[..., :2], xp.broadcast_to(ref_root_pos, shape)[..., 2:]], axis=-1)
    raise ValueError(f"reference_frame: unknown '{frame}' ({' | '.join(REFERENCE_FRAMES)})")


def reference_in_frame(frame: str, ref: TrackedState, robot: TrackedState, xp: Any = np) -> TrackedState:
    """The reference the reward and termination compare against: as it is (``world``) or
    :func:`anchor_to_heading` (``heading``)."""
    if frame == "world":
        return ref
    if frame == "heading":
        return anchor_to_heading(ref, robot, xp)
    raise ValueError(f"reference_frame: unknown '{frame}' ({' | '.join(REFERENCE_FRAMES)})")


def reward_terms(
    cfg: RewardConfig, robot: TrackedState, ref: TrackedState, action: Any, last_action: Any, feet: tuple[int, ...] = (),
    xp: Any = np,
) -> dict[str, Any]:
    """Weighted value of every named term (sum them for the reward); ``feet`` indexes the feet
    among the key bodies (``feet_height``)."""
    if cfg.feet_height.weight != 0.0 and not feet:  # no feet: a zero error, the full weight every step
        raise ValueError("rewards.feet_height is weighed but no feet were given")
    errors = tracking_errors(robot, ref, feet, xp)
    terms = {name: getattr(cfg, name).weight * xp.exp(-err / getattr(cfg, name).sigma) for name, err in errors.items()}
    terms["action_rate"] = cfg.action_rate.weight * xp.sum((action - last_action) ** 2, axis=-1)
    terms["alive"] = cfg.alive.weight * xp.ones_like(terms["joint_pos"])
    return terms


def relax_after_push(cfg: PushRecoveryConfig, terms: dict[str, Any], recovering: Any, xp: Any = np) -> dict[str, Any]:
    """``terms`` (:func:`reward_terms`) with those named in ``cfg.terms`` multiplied by
    ``cfg.scale`` where ``recovering`` (bool, the batch's shape) holds: within ``cfg.window_s``
    of a push (:class:`bcg_train.tasks.config.PushRecoveryConfig`)."""
    return {name: xp.where(recovering, cfg.scale * value, value) if name in cfg.terms else value for name, value in terms.items()}


def key_body_error(robot: TrackedState, ref: TrackedState, xp: Any = np) -> Any:
    """Mean Euclidean world key-body position error (m): the trainer's ``tracking_error_m`` and
    termination test (evaluations report E_track, :mod:`bcg_robot.metrics`, instead)."""
    return xp.mean(xp.sqrt(xp.sum((robot.key_body_pos - ref.key_body_pos) ** 2, axis=-1) + 1e-12), axis=-1)


def tilt_cos(root_quat: Any) -> Any:
    """Cosine of the angle between the root z axis and world z: 1 - 2 (x^2 + y^2)."""
    x, y = root_quat[..., 1], root_quat[..., 2]
    return 1.0 - 2.0 * (x * x + y * y)


TERMINATION_REASONS = ("low", "tilted", "lost")
# step metrics ``terminated/<reason>``: 1 where an episode ended for that reason (summed per iteration)
TERMINATION_METRIC_PREFIX = "terminated/"


def termination_reasons(cfg: TerminationConfig, robot: TrackedState, ref: TrackedState, xp: Any = np) -> dict[str, Any]:
    """Each test of :func:`terminated` by name (:data:`TERMINATION_REASONS`): the root below
    ``min_root_height`` (``low``), tilted past ``max_tilt`` (``tilted``), the key bodies
    farther than ``max_key_body_error`` from the reference on average (``lost``)."""
    return {
        "low": robot.root_pos[..., 2] < cfg.min_root_height,
        "tilted": tilt_cos(robot.root_quat) < np.cos(cfg.max_tilt),
        "lost": key_body_error(robot, ref, xp) > cfg.max_key_body_error,
    }


def any_reason(reasons: dict[str, Any]) -> Any:
    """Whether any of :func:`termination_reasons`' tests hit."""
    return functools.reduce(operator.or_, reasons.values())


def terminated(cfg: TerminationConfig, robot: TrackedState, ref: TrackedState, xp: Any = np) -> Any:
    """Fell (root below ``min_root_height``), tilted past ``max_tilt`` or lost the motion."""
    return any_reason(termination_reasons(cfg, robot, ref, xp))
