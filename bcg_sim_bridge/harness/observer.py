"""The watching side of a test or benchmark: one rclpy node next to the bridge, policy node and sentinel.

:class:`Observer` records what the policy node and the sentinel publish and what the
robot's drives received (the bridge's ``sim/received`` echo; start the bridge with
``echo_commands``), calls the operator services and injects the bridge's state faults.
:func:`enter_run` and :func:`back_to_hold` bring the node to RUN or HOLD, retrying what a
starved process on a loaded machine spoils.
"""

from __future__ import annotations

import json
import threading
import time
from typing import Callable

import numpy as np
from rclpy.executors import SingleThreadedExecutor
from rclpy.node import Node
from rclpy.qos import qos_profile_sensor_data
from diagnostic_msgs.msg import DiagnosticArray
from lifecycle_msgs.msg import Transition
from lifecycle_msgs.srv import ChangeState
from sensor_msgs.msg import JointState
from std_msgs.msg import Bool, Empty, Float64MultiArray, String, UInt64
from std_srvs.srv import Trigger

from bcg_robot.wire import LowCommand

from bcg_policy_node import operator_api as api
from bcg_policy_node.node.steady_timer import steady_timer
from bcg_sim_bridge.harness.processes import ProcessGroup
from bcg_sim_bridge.topics import SIM_INJECT_TOPIC, SIM_RECEIVED_TOPIC, SIM_STATUS_TOPIC


class Observer(Node):
    """Everything a test or the benchmark watches, thread-safe behind one condition."""

    def __init__(self, num_joints: int):
        super().__init__("bcg_observer")
        self.n = num_joints
        self.cond = threading.Condition()
        self.states: list[tuple[float, str]] = []
        self.faults: list[tuple[float, str]] = []
        self.sentinel_states: list[tuple[float, str]] = []
        self.sentinel_faults: list[tuple[float, str]] = []
        self.received: list[tuple[float, LowCommand]] = []
        self.timing: list[tuple[float, float, float]] = []
        self.heartbeats: list[float] = []
        self.robot_status: dict = {}
        self.joint_states: list[JointState] = []
        self.diagnostics: list[DiagnosticArray] = []
        self.deadman_enabled = threading.Event()
        self.deadman_sent_at = 0.0
        sub = self.create_subscription
        sub(String, api.STATE_TOPIC, lambda m: self._add(self.states, m.data), api.latched_qos())
        sub(String, api.FAULT_TOPIC, lambda m: self._add(self.faults, m.data), api.latched_qos())
        sub(String, api.SENTINEL_STATE_TOPIC, lambda m: self._add(self.sentinel_states, m.data), api.latched_qos())
        sub(String, api.SENTINEL_FAULT_TOPIC, lambda m: self._add(self.sentinel_faults, m.data), api.latched_qos())
        sub(Float64MultiArray, SIM_RECEIVED_TOPIC, self._on_received, 100)
        sub(Float64MultiArray, api.TIMING_TOPIC, lambda m: self._add(self.timing, tuple(m.data), stamp=False), 100)
        sub(UInt64, api.HEARTBEAT_TOPIC, lambda m: self._add(self.heartbeats, time.monotonic(), stamp=False), 100)
        sub(String, SIM_STATUS_TOPIC, self._on_status, 10)
        sub(JointState, api.JOINT_STATES_TOPIC, lambda m: self._add(self.joint_states, m, stamp=False), 10)
        sub(DiagnosticArray, api.DIAGNOSTICS_TOPIC, lambda m: self._add(self.diagnostics, m, stamp=False), 10)
        self.inject_pub = self.create_publisher(String, SIM_INJECT_TOPIC, 10)
        # as a joystick or e-stop bridge publishes: best effort (the node must hear it)
        self.estop_pub = self.create_publisher(Bool, api.ESTOP_TOPIC, qos_profile_sensor_data)
        self.deadman_pub = self.create_publisher(Empty, api.DEADMAN_TOPIC, qos_profile_sensor_data)
        self._trigger_clients = {name: self.create_client(Trigger, name)
                        for name in (api.RUN_SERVICE, api.STOP_SERVICE, api.RESET_SERVICE)}
        self.change_state = self.create_client(ChangeState, f"{api.NODE_NAME}/change_state")
        steady_timer(self, 0.05, self._on_deadman_timer)
        self._executor = SingleThreadedExecutor()
        self._executor.add_node(self)
        self._thread = threading.Thread(target=self._spin, daemon=True)
        self._stop = threading.Event()
        self._thread.start()

    def _spin(self) -> None:
        while not self._stop.is_set():
            self._executor.spin_once(timeout_sec=0.02)

    def close(self) -> None:
        self._stop.set()
        self._thread.join()
        self._executor.shutdown()
        self.destroy_node()

    def _on_deadman_timer(self) -> None:
        if self.deadman_enabled.is_set():
            self.deadman_pub.publish(Empty())
            self.deadman_sent_at = time.monotonic()

    def _add(self, target: list, value, stamp: bool = True) -> None:
        with self.cond:
            target.append((time.monotonic(), value) if stamp else value)
            self.cond.notify_all()

    def _on_received(self, msg: Float64MultiArray) -> None:
        data = np.asarray(msg.data)
        self._add(self.received, (float(data[0]), LowCommand.from_matrix(data[1:].reshape(5, self.n))), stamp=False)

    def _on_status(self, msg: String) -> None:
        with self.cond:
            self.robot_status = json.loads(msg.data)
            self.cond.notify_all()

    # waiting ---------------------------------------------------------------------------
    def wait_for(self, predicate: Callable[[], object], timeout: float, what: str):
        deadline = time.monotonic() + timeout
        with self.cond:
            while True:
                value = predicate()
                if value:
                    return value
                left = deadline - time.monotonic()
                if left <= 0:
                    raise TimeoutError(f"timed out after {timeout:.0f} s waiting for {what}")
                self.cond.wait(min(left, 0.05))

    def state(self) -> str | None:
        with self.cond:
            return self.states[-1][1] if self.states else None

    def wait_state(self, name: str, timeout: float = 20.0) -> float:
        """Wait until the node's latest reported state is ``name``; returns the time it arrived."""
        return self.wait_for(lambda: self.states[-1][0] if self.states and self.states[-1][1] == name else None,
                             timeout, f"state {name} (last: {self.state()})")

    def received_since(self, t: float) -> list[tuple[float, LowCommand]]:
        with self.cond:
            return [(tr, c) for tr, c in self.received if tr >= t]

    def wait_received(self, predicate: Callable[[LowCommand], bool], since: float, timeout: float, what: str):
        """The first command received after ``since`` that satisfies ``predicate``: (t, command)."""
        def find():
            return next(((t, c) for t, c in self.received if t >= since and predicate(c)), None)
        return self.wait_for(find, timeout, what)

    def call(self, service: str, timeout: float = 15.0) -> Trigger.Response:
        client = self._trigger_clients[service]
        if not client.wait_for_service(timeout_sec=timeout):
            raise TimeoutError(f"service {service} not available")
        return self._answer(client, Trigger.Request(), timeout)

    def transition(self, transition_id: int, timeout: float = 30.0) -> bool:
        """Ask the policy node for a lifecycle transition (``lifecycle_msgs/Transition`` id);
        whether it succeeded."""
        if not self.change_state.wait_for_service(timeout_sec=timeout):
            raise TimeoutError(f"service {self.change_state.srv_name} not available")
        return self._answer(self.change_state, ChangeState.Request(transition=Transition(id=transition_id)), timeout).success

    @staticmethod
    def _answer(client, request, timeout: float):
        future = client.call_async(request)
        done = threading.Event()
        future.add_done_callback(lambda _f: done.set())
        if not done.wait(timeout):
            raise TimeoutError(f"service {client.srv_name} did not answer")
        return future.result()

    def inject(self, what: str) -> None:
        self.inject_pub.publish(String(data=what))

    def wait_subscribers(self, publisher, timeout: float = 20.0) -> None:
        self.wait_for(lambda: publisher.get_subscription_count() > 0, timeout, f"a subscriber on {publisher.topic_name}")


def back_to_hold(obs: Observer, timeout: float = 30.0) -> None:
    """Clear injections and e-stop, stop and reset the node unless it holds, wait for HOLD."""
    obs.inject("clear")
    obs.estop_pub.publish(Bool(data=False))
    deadline = time.monotonic() + timeout
    while obs.state() != "HOLD":
        if time.monotonic() > deadline:
            raise TimeoutError(f"node did not return to HOLD (state {obs.state()}, faults {obs.faults[-1:]})")
        if obs.state() == "RUN":
            obs.call(api.STOP_SERVICE)
        if obs.state() == "DAMP":
            obs.call(api.RESET_SERVICE)  # refused while the fault is still present; retried
        time.sleep(0.1)


# Faults a starved process can cause on a loaded machine (the node, robot or driver
# descheduled for longer than a watchdog window); scenarios spoiled by them are retried.
LOAD_FAULTS = ("stale_state", "tick_stalled", "loop_stalled", "deadman", "sentinel_missing")


def enter_run(obs: Observer, tries: int = 5) -> float:
    """HOLD, then the operator's run; retried when a load fault spoils it. Returns t(RUN)."""
    last = ""
    for _ in range(tries):
        back_to_hold(obs)
        response = obs.call(api.RUN_SERVICE)
        if response.success:
            try:
                return obs.wait_state("RUN", 10)
            except TimeoutError as err:
                last = str(err)
        else:
            last = response.message
    raise RuntimeError(f"could not enter RUN in {tries} tries: {last}; faults {obs.faults[-3:]}")


def wait_first_hold(obs: Observer, procs: ProcessGroup, timeout: float = 90.0) -> None:
    """After start-up: the node's first state (discovery is slow under load), then HOLD
    (a load fault during the first ramp is reset); the node's log is in the error."""
    try:
        obs.wait_for(lambda: obs.states, timeout, "the node's first state report")
        back_to_hold(obs, timeout)
    except TimeoutError as err:
        log = procs.log("node")[-1500:] if "node" in procs.nodes else ""
        raise TimeoutError(f"{err}\n--- node log ---\n{log}") from None


def robot_parameters(**params) -> dict:
    """The bridge's ROS parameters as the robot an :class:`Observer` watches: every command
    the drives get is echoed on ``sim/received``; ``params`` (e.g. ``frozen_pose``) on top."""
    return {"echo_commands": True, **params}
