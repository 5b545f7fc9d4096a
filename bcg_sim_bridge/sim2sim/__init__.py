"""Sim-to-sim validation over the real node, sentinel and bridge processes (CLI: :mod:`bcg_sim_bridge.cli.sim2sim`)."""
