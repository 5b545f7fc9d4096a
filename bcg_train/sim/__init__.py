"""Batched, differentiable MJX environment core (PD control at 50 Hz).

:mod:`bcg_train.sim.config` and :mod:`bcg_train.sim.bounds` are plain Python; the
simulator (:mod:`bcg_train.sim.env`) loads JAX and is imported on first use, so reading a
training config does not import JAX.
"""

from __future__ import annotations

import importlib
from typing import Any

from bcg_train.sim.config import JointDrive, SimConfig

_LAZY = {"ContactSummary": "bcg_train.sim.env", "MjxSim": "bcg_train.sim.env", "SimState": "bcg_train.sim.env"}

__all__ = ["ContactSummary", "JointDrive", "MjxSim", "SimConfig", "SimState"]


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
