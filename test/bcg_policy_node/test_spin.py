"""run_node: the process shell of every node (policy node, sentinel, bridge)."""

import subprocess
import sys
import textwrap
import threading
import time

import rclpy
import pytest
from rclpy.exceptions import InvalidHandle
from rclpy.node import Node

from bcg_policy_node.node.spin import run_node


def test_a_shutdown_that_races_the_executors_wait_still_ends_the_spin():
    """rclpy's Executor.shutdown triggers its guard condition and then destroys it. A spin that
    gathers its wait set between the two waits without it: with no timer on the node (an
    unconfigured lifecycle node has only services) the process never ended on SIGTERM. The race
    is forced here: the spin's gathering is held until the executor's guard is gone."""
    from rclpy.executors import SingleThreadedExecutor
    from std_srvs.srv import Trigger

    from bcg_policy_node.node.spin import spin_until_stopped

    hold = threading.Event()

    class RacingExecutor(SingleThreadedExecutor):
        def can_execute(self, entity):
            if hold.is_set():
                hold.clear()
                while self._guard is not None:  # until shutdown has destroyed it
                    time.sleep(0.001)
            return super().can_execute(entity)

    rclpy.init()  # the default context: spin_until_stopped also ends when it shuts down
    try:
        node = rclpy.create_node("spin_race", enable_rosout=False, start_parameter_services=False)
        node.create_service(Trigger, "spin_race/noop", lambda request, response: response)
        kick = node.create_guard_condition(lambda: None)
        executor = RacingExecutor()
        executor.add_node(node)
        stop = threading.Event()
        spinner = threading.Thread(target=spin_until_stopped, args=(executor, stop), daemon=True)
        spinner.start()
        time.sleep(0.3)  # the spin waits on its wait set
        hold.set()
        kick.trigger()  # it wakes, runs the kick, and gathers its next wait set: held there
        time.sleep(0.2)
        assert not hold.is_set()  # the spin is held inside its gathering
        stop.set()
        spinner.join(5.0)
        assert not spinner.is_alive(), "the spin never saw the shutdown"
        node.destroy_node()
    finally:
        rclpy.try_shutdown()


def test_a_close_that_raises_still_destroys_the_node_and_shuts_ros_down():
    """The bridge's close re-raises its physics loop's failure: the node must still be
    destroyed and rclpy shut down (the exception then ends the process)."""
    made = []

    def make():
        made.append(Node("spin_close_raises"))
        return made[0]

    def close(node):
        raise RuntimeError("physics loop failed")

    # start returns an error: run_node does not spin, and goes straight to its cleanup
    with pytest.raises(RuntimeError, match="physics loop failed"):
        run_node("spin_test", make, args=[], start=lambda node: "stop at once", close=close)
    assert not rclpy.ok()
    with pytest.raises(InvalidHandle):  # destroy_node() released it
        made[0].get_name()


def test_a_close_that_reports_a_failed_run_exits_1_with_a_one_line_error(capfd):
    """The bridge's run ends by itself when its simulation diverges: that run failed, and the
    process said so only in its log while it exited 0."""
    stop = threading.Event()

    def start(node):
        stop.set()  # the run ends by itself at once

    code = run_node("spin_test", lambda: Node("spin_close_fails"), args=[], start=start,
                    close=lambda node: "the simulation diverged", stop=stop)
    assert code == 1
    assert "spin_test: error: the simulation diverged" in capfd.readouterr().out
    assert not rclpy.ok()


def test_a_teardown_that_hangs_ends_with_the_stacks_and_exit_1():
    """A hang in destroying the node (CI once saw one in DDS teardown, after a one-line
    error) ends at the deadline with every thread's stack, instead of never. The hang here is
    native code that holds the GIL, as a binding that does not release it would (libc's sleep
    through ctypes.PyDLL): faulthandler's watchdog thread needs no GIL."""
    script = textwrap.dedent("""
        import ctypes
        from rclpy.node import Node
        from bcg_policy_node.node import spin

        class HangingNode(Node):
            def destroy_node(self):
                ctypes.PyDLL(None).sleep(120)

        spin.TEARDOWN_DEADLINE_S = 1.0
        raise SystemExit(spin.run_node("hang_test", lambda: HangingNode("spin_hang"), args=[],
                                       start=lambda node: "stop at once"))
    """)
    t0 = time.monotonic()
    run = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60)
    elapsed = time.monotonic() - t0
    assert run.returncode == 1, (run.returncode, run.stdout, run.stderr)
    assert "hang_test: error: stop at once" in run.stdout
    assert "Timeout (0:00:01)!" in run.stderr and "in destroy_node" in run.stderr, run.stderr
    assert elapsed < 30, elapsed
