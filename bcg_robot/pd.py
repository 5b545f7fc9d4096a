"""The joint-space PD law the G1's drives apply, shared by the trainer and the sim bridge.

``tau = tau_ff + kp (q_des - q) + kd (dq_des - dq)``, clipped to the effort limits.
Written against the array API so it runs on numpy (bridge) and jax.numpy (trainer).
"""

from __future__ import annotations

from typing import Any

import numpy as np


def pd_torque(q_des: Any, q: Any, dq_des: Any, dq: Any, kp: Any, kd: Any, tau_ff: Any, effort: Any, xp: Any = np) -> Any:
    tau = tau_ff + kp * (q_des - q) + kd * (dq_des - dq)
    return xp.clip(tau, -effort, effort)
