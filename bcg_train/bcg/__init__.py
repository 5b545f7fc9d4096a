"""Bundled Contact Gradients (BCG) and its baselines on the MJX environment core.

The configuration (:mod:`bcg_train.bcg.config`) is plain Python; the simulator classes
(:mod:`bcg_train.bcg.bundle`) load JAX and are imported on first use, so reading a
training config does not import JAX.
"""

from __future__ import annotations

import importlib
from typing import Any

from bcg_train.bcg.config import BCGConfig, BundleForward, Estimator

_LAZY = {"BundledSim": "bcg_train.bcg.bundle", "BundledState": "bcg_train.bcg.bundle", "BundleState": "bcg_train.bcg.bundle"}

__all__ = ["BCGConfig", "BundleForward", "BundleState", "BundledSim", "BundledState", "Estimator"]


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
