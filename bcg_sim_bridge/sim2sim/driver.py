"""The operator side of a sim-to-sim run: one rclpy node that drives the policy node and the bridge.

Lifecycle configure/activate, the operator's RUN/STOP, e-stop, and the simulator's
controls (band, push, dropout, corrupted CRC, remote buttons). Every state change,
fault and sentinel state it hears is kept on a timeline (``time.monotonic()``, which is
system-wide and so comparable with the bridge's log).
"""

from __future__ import annotations

import dataclasses
import threading
import time

import rclpy
from lifecycle_msgs.msg import Transition
from lifecycle_msgs.srv import ChangeState
from rclpy.executors import SingleThreadedExecutor
from rclpy.node import Node
from std_msgs.msg import Bool, Float64, Float64MultiArray, String, UInt16

from bcg_policy_node import operator_api as api
from bcg_sim_bridge.topics import (
    SIM_BAND_TOPIC, SIM_CORRUPT_CRC_TOPIC, SIM_DROPOUT_TOPIC, SIM_PUSH_TOPIC, SIM_REMOTE_TOPIC,
)


@dataclasses.dataclass(frozen=True)
class TimelineEvent:
    t: float  # time.monotonic()
    source: str  # "node_state", "node_fault", "sentinel", "sentinel_fault", "driver"
    text: str


class DriverError(RuntimeError):
    pass


def shaping_counts(msg) -> dict[str, int]:
    """The policy node's target-shaping counts in a DiagnosticArray (``operator_api.SHAPING_PREFIX``
    values of its control status); empty when the message holds none."""
    for status in msg.status:
        if status.name == api.DIAGNOSTICS_STATUS_NAME:
            return {kv.key[len(api.SHAPING_PREFIX):]: int(kv.value) for kv in status.values
                    if kv.key.startswith(api.SHAPING_PREFIX)}
    return {}


class Sim2SimDriver(Node):
    def __init__(self) -> None:
        super().__init__("sim2sim_driver")
        self._lock = threading.Lock()
        self._changed = threading.Condition(self._lock)
        self.timeline: list[TimelineEvent] = []
        self.node_state = ""
        self.last_fault = ""
        self.sentinel_state = ""
        self.timing: list[tuple[float, ...]] = []
        self.shaping: dict[str, int] = {}  # the node's target-shaping counts, as its latest diagnostics gave them
        latched = api.latched_qos()
        self.create_subscription(String, api.STATE_TOPIC, self._on_state, latched)
        self.create_subscription(String, api.FAULT_TOPIC, self._on_fault, latched)
        self.create_subscription(String, api.SENTINEL_STATE_TOPIC, self._on_sentinel, latched)
        self.create_subscription(String, api.SENTINEL_FAULT_TOPIC, self._on_sentinel_fault, latched)
        self.create_subscription(Float64MultiArray, api.TIMING_TOPIC, self._on_timing, 50)
        self.create_subscription(api.DIAGNOSTICS_TYPE, api.DIAGNOSTICS_TOPIC, self._on_diagnostics, 10)
        self._lifecycle = self.create_client(ChangeState, f"{api.NODE_NAME}/change_state")
        self._operator = {name: self.create_client(api.COMMAND_SERVICE_TYPE, srv) for name, srv in
                          (("run", api.RUN_SERVICE), ("stop", api.STOP_SERVICE), ("reset", api.RESET_SERVICE))}
        self._estop = self.create_publisher(Bool, api.ESTOP_TOPIC, 10)
        self._band = self.create_publisher(Bool, SIM_BAND_TOPIC, 10)
        self._push = self.create_publisher(Float64MultiArray, SIM_PUSH_TOPIC, 10)
        self._dropout = self.create_publisher(Float64, SIM_DROPOUT_TOPIC, 10)
        self._corrupt = self.create_publisher(Float64, SIM_CORRUPT_CRC_TOPIC, 10)
        self._remote = self.create_publisher(UInt16, SIM_REMOTE_TOPIC, 10)
        self._executor = SingleThreadedExecutor()
        self._executor.add_node(self)
        self._spinner = threading.Thread(target=self._executor.spin, name="sim2sim_driver", daemon=True)
        self._spinner.start()

    def close(self) -> None:
        self._executor.shutdown()
        self._spinner.join(timeout=5.0)
        self.destroy_node()

    # ---------------------------------------------------------------- listening
    def _record(self, source: str, text: str) -> None:
        self.timeline.append(TimelineEvent(time.monotonic(), source, text))
        self._changed.notify_all()

    def _on_state(self, msg: String) -> None:
        with self._lock:
            if msg.data != self.node_state:
                self.node_state = msg.data
                self._record("node_state", msg.data)

    def _on_fault(self, msg: String) -> None:
        with self._lock:
            self.last_fault = msg.data
            self._record("node_fault", msg.data)

    def _on_sentinel(self, msg: String) -> None:
        with self._lock:
            if msg.data != self.sentinel_state:
                self.sentinel_state = msg.data
                self._record("sentinel", msg.data)

    def _on_sentinel_fault(self, msg: String) -> None:
        with self._lock:
            self._record("sentinel_fault", msg.data)

    def _on_timing(self, msg: Float64MultiArray) -> None:
        with self._lock:
            self.timing.append(tuple(msg.data))

    def _on_diagnostics(self, msg) -> None:
        counts = shaping_counts(msg)
        if counts:
            with self._lock:
                self.shaping = counts

    def note(self, text: str) -> float:
        with self._lock:
            self._record("driver", text)
            return self.timeline[-1].t

    def wait_for_state(self, state: str, timeout_s: float) -> bool:
        with self._lock:
            return self._changed.wait_for(lambda: self.node_state == state, timeout_s)

    def wait_for_sentinel(self, state: str, timeout_s: float) -> bool:
        with self._lock:
            return self._changed.wait_for(lambda: self.sentinel_state == state, timeout_s)

    def events(self) -> list[TimelineEvent]:
        with self._lock:
            return list(self.timeline)

    # ------------------------------------------------------------------- acting
    def wait_for_bridge(self, timeout_s: float) -> None:
        deadline = time.monotonic() + timeout_s
        pubs = (self._band, self._push, self._dropout, self._corrupt, self._remote)
        while not all(p.get_subscription_count() > 0 for p in pubs):
            if time.monotonic() > deadline:
                raise DriverError(f"sim bridge not up after {timeout_s:.0f} s (no subscriber on {SIM_BAND_TOPIC})")
            with self._lock:
                self._changed.wait(0.05)

    def lifecycle(self, transition: str, timeout_s: float) -> None:
        ids = {"configure": Transition.TRANSITION_CONFIGURE, "activate": Transition.TRANSITION_ACTIVATE}
        if not self._lifecycle.wait_for_service(timeout_sec=timeout_s):
            raise DriverError(f"policy node's lifecycle service not available after {timeout_s:.0f} s")
        request = ChangeState.Request()
        request.transition.id = ids[transition]
        result = self._call(self._lifecycle, request, timeout_s)
        self.note(f"lifecycle {transition}: {'ok' if result.success else 'FAILED'}")
        if not result.success:
            raise DriverError(f"policy node refused lifecycle '{transition}' (see its log)")

    def operator(self, what: str, timeout_s: float = 5.0) -> tuple[bool, str]:
        client = self._operator[what]
        if not client.wait_for_service(timeout_sec=timeout_s):
            self.note(f"operator {what}: service unavailable")
            return False, "service unavailable"
        result = self._call(client, api.COMMAND_SERVICE_TYPE.Request(), timeout_s)
        self.note(f"operator {what}: {'ok' if result.success else 'refused'} ({result.message})")
        return bool(result.success), str(result.message)

    def _call(self, client, request, timeout_s: float):
        future = client.call_async(request)
        done = threading.Event()
        future.add_done_callback(lambda _f: done.set())
        if not done.wait(timeout_s):
            raise DriverError(f"no answer from {client.srv_name} within {timeout_s:.0f} s")
        return future.result()

    def set_band(self, engaged: bool) -> float:
        self._band.publish(Bool(data=engaged))
        return self.note(f"elastic band {'engaged' if engaged else 'released'}")

    def push(self, force: tuple[float, float, float], duration_s: float) -> float:
        self._push.publish(Float64MultiArray(data=[*force, duration_s]))
        return self.note(f"push {force} N for {duration_s} s")

    def state_dropout(self, duration_s: float) -> float:
        self._dropout.publish(Float64(data=duration_s))
        return self.note(f"state dropout {duration_s * 1e3:.0f} ms")

    def corrupt_crc(self, duration_s: float) -> float:
        self._corrupt.publish(Float64(data=duration_s))
        return self.note(f"lowstate CRC corrupted for {duration_s * 1e3:.0f} ms")

    def estop(self) -> float:
        self._estop.publish(Bool(data=True))
        return self.note("e-stop asserted (topic)")

    def remote_buttons(self, mask: int, label: str) -> float:
        self._remote.publish(UInt16(data=mask))
        return self.note(f"remote buttons {label}")


def init_ros() -> None:
    if not rclpy.ok():
        rclpy.init()
