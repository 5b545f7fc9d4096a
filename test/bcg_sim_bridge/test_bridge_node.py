"""The bridge node in this process (real rclpy, no peer): what its loop does when the simulation
diverges, which fault requests it refuses."""

import threading

import numpy as np
import rclpy
from std_msgs.msg import Float64

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


def test_a_crc_fault_is_refused_on_the_ros2_transport():
    """Its state has no CRC: the request was logged as an injected fault (in the run's events) that
    changed nothing, so a test relying on it would have read a fault that never happened."""
    rclpy.init(args=["--ros-args", "-p", "interface:=ros2"])
    try:
        node = SimBridgeNode()
        try:
            node._on_corrupt(Float64(data=0.5))
            assert node.events == [] and node._corrupt_until < 0
        finally:
            node.interface.close()
            node.destroy_node()
    finally:
        rclpy.try_shutdown()


def test_the_status_reports_how_far_the_loop_runs_behind_real_time():
    """A bridge falling behind real time showed it only in the log it writes at exit."""
    rclpy.init(args=["--ros-args", "-p", "realtime_factor:=1.0", "-p", "duration_s:=0.02"])
    try:
        node = SimBridgeNode()
        try:
            assert "pacing" not in node.status()
            step = node.physics.step

            def slow_step(n=1):  # 10 ms of compute per 2 ms physics step
                threading.Event().wait(0.01)
                step(n)

            node.physics.step = slow_step
            node.run()
            pacing = node.status()["pacing"]
            assert pacing["overruns"] >= 5 and pacing["max_lag_ms"] > 8.0 and pacing["lag_ms"] > 8.0, pacing
            assert pacing["realtime_factor"] < 0.5
        finally:
            node.interface.close()
            node.destroy_node()
    finally:
        rclpy.try_shutdown()
