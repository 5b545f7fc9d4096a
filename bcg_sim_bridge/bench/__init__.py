"""Benchmarks: timed runs of the deployment against the sim bridge that print figures and write JSON.

``bench`` names exactly this in the repository: code that measures and reports numbers
(here, :mod:`.node_timing` for ``bcg-bench-node`` and :mod:`.bridge_speed` for
``bcg-bench-bridge``; the trainer's are in ``bcg_train.bench``). They live in the bridge
package because the bridge is the robot they run against, and they start it, the policy
node and the sentinel through the one process harness (:mod:`bcg_sim_bridge.harness`).
Their command lines are in :mod:`bcg_sim_bridge.cli`. No JAX: a robot-PC install runs them.
"""
