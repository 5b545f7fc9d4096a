"""Bundled Contact Gradients (BCG) and its baselines on the MJX environment core."""

from bcg_train.bcg.bundle import BundledSim, BundledState, BundleState
from bcg_train.bcg.config import BCGConfig, BundleForward, Estimator

__all__ = ["BCGConfig", "BundleForward", "BundleState", "BundledSim", "BundledState", "Estimator"]
