"""The joint-space PD law of the G1's drives: the one definition for trainer, sim bridge and node.

``tau = tau_ff + kp (q_des - q) + kd (dq_des - dq)``, clipped to the effort limits
(:func:`pd_torque`). The trainer applies it in MJX on every physics substep, the sim
bridge and the MuJoCo evaluations on every physics step; the policy node commands
``q_des`` with ``dq_des = tau_ff = 0`` and uses :func:`position_target_bounds` to keep
the torque of its targets within the effort limits.

The functions use only arithmetic operators and ``xp.clip`` / ``xp.where``, so they run
on numpy arrays (the default ``xp``) and on ``jax.numpy`` arrays (pass ``xp=jnp``) alike.
"""

from __future__ import annotations

from typing import Any

import numpy as np


def pd_torque(q_des: Any, q: Any, dq_des: Any, dq: Any, kp: Any, kd: Any, tau_ff: Any, effort: Any, xp: Any = np) -> Any:
    """``clip(tau_ff + kp (q_des - q) + kd (dq_des - dq), -effort, effort)``."""
    tau = tau_ff + kp * (q_des - q) + kd * (dq_des - dq)
    return xp.clip(tau, -effort, effort)


def position_target_bounds(q: Any, dq: Any, kp: Any, kd: Any, effort: Any, xp: Any = np) -> tuple[Any, Any]:
    """(lower, upper) position targets whose PD torque (``dq_des = tau_ff = 0``) is within ``effort``.

    ``|kp (t - q) - kd dq| <= E``  <=>  ``q + (kd dq - E) / kp <= t <= q + (kd dq + E) / kp``
    for ``kp > 0``; a joint with ``kp = 0`` has no bound (its target does not act).
    The window is never empty: it is centred on ``q + kd dq / kp``.
    """
    with np.errstate(divide="ignore", invalid="ignore"):
        lower = xp.where(kp > 0, q + (kd * dq - effort) / kp, -np.inf)
        upper = xp.where(kp > 0, q + (kd * dq + effort) / kp, np.inf)
    return lower, upper
