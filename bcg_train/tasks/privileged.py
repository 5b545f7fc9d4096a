"""Privileged critic inputs: what the simulator knows and the robot's sensors do not.

The actor sees only what the robot reports (:mod:`bcg_robot.observation`); the critics
may see more (an asymmetric actor-critic), since they never run on the robot. SHAC
differentiates the critics' value at the window end with respect to the state, so a
critic that sees the root's linear velocity can tell the actor, through the simulator,
that a backward drift after a push is worth correcting, which one fed only the IMU and
joints has to infer.

Every feature is scaled to order one by construction (no running normalizer, so adding
features changes no training state): named in ``task.critic_privileged``, concatenated in
that order after the actor's normalized observation.

``root_lin_vel``  the root's linear velocity (m/s) in its heading frame (world turned by
                  the root's yaw): forward, left, up
``root_height``   the root's height minus the reference's, in decimetres
``domain``        the sampled friction, pelvis mass offset and PD gain scale, each mapped
                  from its DR range to [-1, 1], and the 0/1 action latency (zeros without DR)
"""

from __future__ import annotations

from typing import Any

import numpy as np

from bcg_train.tasks.config import PRIVILEGED_FEATURES, DomainRandomizationConfig, check_privileged
from bcg_train.tasks.rewards import TrackedState, yaw


def privileged_size(names: tuple[str, ...] | list[str]) -> int:
    check_privileged(names)
    return sum(PRIVILEGED_FEATURES[n] for n in names)


def _to_unit(x: Any, bounds: tuple[float, float]) -> Any:
    lo, hi = bounds
    return (x - 0.5 * (lo + hi)) / max(0.5 * (hi - lo), 1e-6)


def privileged_features(
    names: tuple[str, ...] | list[str],
    robot: TrackedState,
    ref: TrackedState,
    friction: Any,
    mass_delta: Any,
    gain_scale: Any,
    late: Any,
    dr: DomainRandomizationConfig,
    xp: Any = np,
) -> Any:
    """(..., privileged_size(names)) for a batch of robot states (leading axes as ``robot``'s);
    the domain draws are scalars or per environment."""
    batch = robot.root_pos.shape[:-1]
    parts = []
    for name in names:
        if name == "root_lin_vel":
            h = yaw(robot.root_quat, xp)
            c, s = xp.cos(h), xp.sin(h)
            v = robot.root_lin_vel
            parts.append(xp.stack([c * v[..., 0] + s * v[..., 1], -s * v[..., 0] + c * v[..., 1], v[..., 2]], axis=-1))
        elif name == "root_height":
            parts.append(10.0 * (robot.root_pos[..., 2:3] - ref.root_pos[..., 2:3]))
        elif name == "domain":
            if dr.enabled:
                cols = [_to_unit(friction, dr.friction), _to_unit(mass_delta, dr.base_mass_delta), _to_unit(gain_scale, dr.gain_scale),
                        xp.asarray(late, dtype=robot.root_pos.dtype)]
                parts.append(xp.stack([xp.broadcast_to(xp.asarray(col, dtype=robot.root_pos.dtype), batch) for col in cols], axis=-1))
            else:
                parts.append(xp.zeros(batch + (4,), dtype=robot.root_pos.dtype))
        else:
            check_privileged([name])
    if not parts:
        return xp.zeros(batch + (0,), dtype=robot.root_pos.dtype)
    return xp.concatenate(parts, axis=-1)
