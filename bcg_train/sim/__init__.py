"""Batched, differentiable MJX environment core (PD control at 50 Hz)."""

from bcg_train.sim.config import JointDrive, SimConfig
from bcg_train.sim.env import ContactSummary, MjxSim, SimState

__all__ = ["ContactSummary", "JointDrive", "MjxSim", "SimConfig", "SimState"]
