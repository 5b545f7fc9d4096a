"""Spin an executor until SIGINT/SIGTERM, then stop it and join its thread (all processes)."""

from __future__ import annotations

import faulthandler
import signal
import threading
from contextlib import contextmanager
from typing import Any, Callable, Iterator

import rclpy
from rclpy.exceptions import ParameterException
from rclpy.executors import SingleThreadedExecutor
from rclpy.signals import SignalHandlerOptions

from bcg_robot.errors import BCGInputError

# destroying the node and shutting rclpy down: past this, a process whose work is over is
# stuck in native code (DDS), and it exits 1 with every thread's stack on stderr
TEARDOWN_DEADLINE_S = 30.0


def install_stop_signals(stop: threading.Event | None = None) -> threading.Event:
    """SIGINT and SIGTERM set the returned event (``stop``, or a new one; rclpy's own handlers must be off)."""
    stop = stop if stop is not None else threading.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda *_: stop.set())
    return stop


def spin_until_stopped(executor, stop: threading.Event) -> None:
    """Spin in a thread until ``stop`` is set, ROS shuts down, or a callback raised (the
    exception is re-raised here, after the executor has been shut down)."""
    failure: list[BaseException] = []
    stopping = threading.Event()
    # rclpy's Executor.shutdown wakes the spin by its own guard condition and then destroys it:
    # a spin that gathered its wait set in between waits without it, for good where no timer
    # runs (an unconfigured lifecycle node has only services). This guard, gathered with the
    # nodes' entities, wakes it until it has seen the shutdown.
    nodes = executor.get_nodes()
    wake = nodes[0].create_guard_condition(lambda: None) if nodes else None

    def spin() -> None:
        try:
            executor.spin()
        except BaseException as err:  # noqa: BLE001 - re-raised in the main thread
            if not stopping.is_set():  # rclpy may raise InvalidHandle while shutting down
                failure.append(err)

    thread = threading.Thread(target=spin, name="executor", daemon=True)
    thread.start()
    while not stop.is_set() and thread.is_alive() and rclpy.ok():
        stop.wait(0.1)
    stopping.set()
    executor.shutdown()
    thread.join(0.1)
    while thread.is_alive():
        if wake is not None:
            wake.trigger()
        thread.join(0.1)
    if wake is not None:
        nodes[0].destroy_guard_condition(wake)
    if failure:
        raise failure[0]


@contextmanager
def teardown_deadline() -> Iterator[None]:
    """Bound a teardown that only native code can hang: faulthandler's watchdog needs no GIL."""
    faulthandler.dump_traceback_later(TEARDOWN_DEADLINE_S, exit=True)
    try:
        yield
    finally:
        faulthandler.cancel_dump_traceback_later()


def run_node(
    name: str,
    make_node: Callable[[], Any],
    args=None,
    close: Callable[[Any], str | None] | None = None,
    start: Callable[[Any], str | None] | None = None,
    stop: threading.Event | None = None,
) -> int:
    """``main()`` of a single-node process: init rclpy with our own stop signals, build the
    node (a bad parameter or input file is a one-line error and exit status 2), run
    ``start(node)`` (it returns an error message to exit with status 2, or None), spin in a
    single-threaded executor until SIGINT/SIGTERM, then ``close(node)`` (it returns an error
    message to exit with status 1, for a run that failed, or None), destroy, shut down.
    ``stop``: the event the signals set, for a process that also ends by itself (setting it)."""
    # a crash in native code (rclpy's or DDS's teardown once segfaulted after a one-line error,
    # under CI load) leaves the Python stack on stderr instead of only a -11
    faulthandler.enable()
    try:
        rclpy.init(args=args, signal_handler_options=SignalHandlerOptions.NO)
    except Exception as err:  # noqa: BLE001 - rcl's RCLError: arguments it cannot parse ('-p name:=')
        print(f"{name}: error: ROS arguments: {str(err).splitlines()[0]}", flush=True)
        return 2
    stop = install_stop_signals(stop)
    try:
        node = make_node()
    except (BCGInputError, ParameterException) as err:
        print(f"{name}: error: {err}", flush=True)
        with teardown_deadline():
            rclpy.try_shutdown()  # destroys the half-built node too
        return 2
    executor = SingleThreadedExecutor()
    executor.add_node(node)
    code = 0
    try:
        error = start(node) if start is not None else None
        if error:
            print(f"{name}: error: {error}", flush=True)
            code = 2
        else:
            spin_until_stopped(executor, stop)
    finally:
        executor.shutdown()
        try:
            # may raise (the bridge re-raises its physics loop's failure): clean up all the same
            failure = close(node) if close is not None else None
            if failure:
                print(f"{name}: error: {failure}", flush=True)
                code = code or 1
        finally:
            with teardown_deadline():
                node.destroy_node()
                rclpy.try_shutdown()
    return code
