"""Test-wide isolation: DDS traffic stays on this machine in a domain of its own."""

import os

os.environ.setdefault("ROS_AUTOMATIC_DISCOVERY_RANGE", "LOCALHOST")
# One DDS domain per pytest process, so parallel runs (CI, colcon, a developer) never
# see each other's nodes. Fast DDS accepts 0..232; 0 and 1 are left to robot and sim.
os.environ.setdefault("ROS_DOMAIN_ID", str(2 + os.getpid() % 200))
os.environ.setdefault("JAX_PLATFORMS", "cpu")
os.environ.setdefault("MPLBACKEND", "Agg")
