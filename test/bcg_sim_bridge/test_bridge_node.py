"""The bridge node in this process (real rclpy, no peer): what its loop does when the simulation diverges."""

import numpy as np
import rclpy

from bcg_sim_bridge.bridge_node import SimBridgeNode


def test_a_diverged_state_is_never_published_and_the_run_fails(tmp_path):
    """The loop published the step's state before it checked it, so one diverged state (here
    MuJoCo's reset to the initial pose, which looks healthy) reached the node; the process then
    exited 0 as if the run had ended well."""
    log = tmp_path / "bridge.npz"
    rclpy.init(args=["--ros-args", "-p", "state_rate_hz:=500.0", "-p", "realtime_factor:=0.0",
                     "-p", "duration_s:=0.1", "-p", f"log_path:={log}"])
    try:
        node = SimBridgeNode()
        try:
            node.physics.step(5)
            node.physics.data.qvel[8] = np.nan
            node.run()
            assert node.diverged
            assert node.interface.counters.snapshot()["states_sent"] == 0
            error = node.finish()
            assert error is not None and "diverged" in error
        finally:
            node.destroy_node()
    finally:
        rclpy.try_shutdown()
    with np.load(log) as saved:
        assert bool(saved["diverged"])
