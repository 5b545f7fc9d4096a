"""``policy_node``: the rclpy lifecycle node that runs a BCG ONNX policy on the G1.

construct  declare and validate the parameters; no publisher, subscription, service or
           timer of its own yet (only rclpy's lifecycle and parameter services).
configure  load robot config, safety config and policy; check the policy's contract
           against the robot (a mismatch is a one-line error and the node stays
           unconfigured); open the robot interface (``ros2`` or ``unitree_sdk``, which
           with ``release_sport_mode`` releases the G1's sport mode: the robot goes limp); create
           the operator services and topics (state, fault; heartbeat, timing and joint
           states as lifecycle publishers, live only while active) and the diagnostics
           publisher with its timer. On ``ros2`` the motor command publisher is a
           lifecycle publisher too; the ``unitree_sdk`` writer is a DDS writer, sent to
           only by the control timer and the damping of deactivate/shutdown. While not
           active, an idle timer takes other writers' commands as they come (every
           ``IDLE_COMMAND_POLL_S``) and keeps those of the last ``foreign_commander_window_s``
           for the next activation's lease: ``unitree_sdk`` dates a command when it is
           taken, and a backlog left from an inactive spell (a writer long gone) would
           read as current at the first tick and trip ``foreign_commander``.
activate   enable the lifecycle publishers, then start the 50 Hz control timer (own
           callback group) in PASSIVE, or in DAMP when the previous activation ended in a
           DAMP not reset (reactivating is no reset); the control loop
           (bcg_policy_node.safety.control_loop) ramps to the default pose once the
           sentinel's heartbeat is fresh and it watches (``sentinel_timeout_s``; 0: no
           sentinel required), holds it and runs the policy only after the operator's
           run request.
deactivate send damping, stop the timer, then disable the lifecycle publishers.
cleanup    close the interface, destroy every entity configure created (and forget a
           latched DAMP: configure starts over); configure can run again. Shutdown (from
           any state) and error processing do the same (error processing returns to
           unconfigured).

Threads: the executor runs transitions, operator callbacks, the diagnostics timer, the
idle poll (cancelled while active) and the control timer; every piece of state they share (control loop, inputs, counters,
timing, entities) is read and written under one lock, and the tick publishes its
outputs under it, so cleanup never destroys a publisher a tick is using. No DDS
listener waits on that lock (the interfaces poll their readers).

Operator API, topics and services: bcg_policy_node.operator_api. Parameter
``autostart`` configures and activates at start-up (sim-to-sim, benchmark); if that
fails the process prints the one-line reason and exits with status 2.
"""

from __future__ import annotations

import threading
import time
import traceback
from pathlib import Path

from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus, KeyValue
from rclpy.callback_groups import MutuallyExclusiveCallbackGroup
from rclpy.lifecycle import LifecycleNode, LifecycleState, TransitionCallbackReturn
from rclpy.subscription import MessageInfo
from sensor_msgs.msg import JointState
from std_msgs.msg import Bool, Empty, Float64MultiArray, String, UInt64
from std_srvs.srv import Trigger

from bcg_robot.config import DEFAULT_ROBOT_CONFIG, RobotConfig, load_robot_config
from bcg_robot.errors import BCGInputError
from bcg_robot.onnx_policy import OnnxPolicy
from bcg_robot.wire import LowCommand

from bcg_policy_node import operator_api as api
from bcg_policy_node.config.safety_config import DEFAULT_SAFETY_CONFIG, load_safety_config
from bcg_policy_node.interfaces.factory import InterfaceParams, open_interface
from bcg_policy_node.interfaces.robot_state import SeenCommand
from bcg_policy_node.node.parameters import declare_startup_parameter, reject_undeclared_parameters
from bcg_policy_node.node.spin import run_node
from bcg_policy_node.node.steady_timer import steady_timer
from bcg_policy_node.node.tick_timing import TickTiming
from bcg_policy_node.safety.control_loop import ControlLoop, OperatorInputs
from bcg_policy_node.safety.faults import Fault

IDLE_COMMAND_POLL_S = 0.05  # configured, not active: other writers' commands are taken (and dated) this often


class PolicyNode(LifecycleNode):
    def __init__(self, **kwargs):
        super().__init__(api.NODE_NAME, **kwargs)
        self.policy_path = declare_startup_parameter(self, "policy_path", "")
        self.robot_config_path = declare_startup_parameter(self, "robot_config", str(DEFAULT_ROBOT_CONFIG))
        self.safety_config_path = declare_startup_parameter(self, "safety_config", str(DEFAULT_SAFETY_CONFIG))
        self.interface_params = InterfaceParams.declare(self)
        self.deadman_timeout = float(declare_startup_parameter(self, "deadman_timeout_s", 0.0))
        # the sentinel (a second process) must be WATCHING with a fresh heartbeat before the node
        # leaves PASSIVE, and outside PASSIVE/DAMP its silence trips DAMP (0: not required)
        self.sentinel_timeout = float(declare_startup_parameter(self, "sentinel_timeout_s", 1.0))
        self.diagnostics_period = float(declare_startup_parameter(self, "diagnostics_period_s", 1.0))
        self.autostart = bool(declare_startup_parameter(self, "autostart", False))
        reject_undeclared_parameters(self)
        if not self.policy_path:
            raise BCGInputError("policy_node", "parameter 'policy_path' is required (an ONNX policy file)")
        if not 0 <= self.deadman_timeout <= 10:  # NaN included: it would have switched the deadman off
            raise BCGInputError("policy_node", f"parameter 'deadman_timeout_s' must be 0 (no deadman) or in (0, 10] s, "
                                               f"got {self.deadman_timeout}")
        if not (self.sentinel_timeout == 0 or 2 * api.SENTINEL_HEARTBEAT_PERIOD_S <= self.sentinel_timeout <= 10):
            raise BCGInputError("policy_node", f"parameter 'sentinel_timeout_s' must be 0 (no sentinel) or in "
                                               f"[{2 * api.SENTINEL_HEARTBEAT_PERIOD_S:g}, 10] s, got {self.sentinel_timeout}")
        if not 0.01 <= self.diagnostics_period <= 60:
            raise BCGInputError("policy_node", f"parameter 'diagnostics_period_s' must be in [0.01, 60] s, got {self.diagnostics_period}")

        self._lock = threading.Lock()  # serializes ticks, operator requests and transitions
        self.robot: RobotConfig | None = None
        self.safety = None
        self.configure_error = ""
        self.policy: OnnxPolicy | None = None
        self.interface = None
        self.loop: ControlLoop | None = None
        self.timing = TickTiming()
        self._inputs = OperatorInputs()
        self._timer = None
        self._tick_count = 0
        self._last_tick_start: float | None = None
        self._late_ticks = 0
        self._last_fault = ""
        self._latched_fault: Fault | None = None  # a DAMP not reset when control stopped (see on_activate)
        self._state_wait_s = 0.0
        self._autostarting = False
        self._idle_commands: list[SeenCommand] = []  # other writers' commands while not active (_on_idle_poll)

        self._operator_group = MutuallyExclusiveCallbackGroup()
        self._control_group = MutuallyExclusiveCallbackGroup()
        self._state_group = MutuallyExclusiveCallbackGroup()
        # The ROS entities: created by on_configure (_create_entities), destroyed by
        # on_cleanup / on_shutdown / on_error (_destroy_entities).
        self._entities: list[tuple[str, object]] = []
        self._diag_pub = self._state_pub = self._fault_pub = None
        self._heartbeat_pub = self._timing_pub = self._joint_pub = None
        self._idle_timer = None

    def destroy_node(self) -> None:
        super().destroy_node()
        # rclpy's LifecycleNode leaves its state machine to the garbage collector, and the
        # state machine holds the rcl node: after destroy_node the node stayed in the ROS graph
        # and was finalized whenever the collector ran, at interpreter exit after the context's
        # shutdown (a bad-parameter run hung there in CI, another crashed -11).
        state_machine = getattr(self, "_state_machine", None)  # absent if LifecycleNode.__init__ failed
        if state_machine is not None:
            state_machine.destroy_when_not_in_use()

    def _create_entities(self) -> None:
        """The operator API, the outputs and diagnostics (on_configure; caller holds the
        lock). The per-tick outputs are lifecycle publishers: they carry messages only
        while the node is active. Diagnostics report every configured state."""
        def keep(kind: str, entity):
            self._entities.append((kind, entity))
            return entity

        group = self._operator_group
        for name, handler in ((api.RUN_SERVICE, self._on_run), (api.STOP_SERVICE, self._on_stop),
                              (api.RESET_SERVICE, self._on_reset)):
            keep("service", self.create_service(Trigger, name, handler, callback_group=group))
        keep("subscription", self.create_subscription(Bool, api.ESTOP_TOPIC, self._on_estop, api.operator_input_qos(),
                                                      callback_group=group))
        keep("subscription", self.create_subscription(Empty, api.DEADMAN_TOPIC, self._on_deadman, api.operator_input_qos(),
                                                      callback_group=group))
        keep("subscription", self.create_subscription(UInt64, api.SENTINEL_HEARTBEAT_TOPIC, self._on_sentinel_heartbeat, 10,
                                                      callback_group=group))
        keep("subscription", self.create_subscription(String, api.SENTINEL_STATE_TOPIC, self._on_sentinel_state,
                                                      api.latched_qos(), callback_group=group))
        self._state_pub = keep("publisher", self.create_publisher(String, api.STATE_TOPIC, api.latched_qos()))
        self._fault_pub = keep("publisher", self.create_publisher(String, api.FAULT_TOPIC, api.latched_qos()))
        self._heartbeat_pub = keep("lifecycle_publisher", self.create_lifecycle_publisher(UInt64, api.HEARTBEAT_TOPIC, 10))
        self._timing_pub = keep("lifecycle_publisher",
                                self.create_lifecycle_publisher(Float64MultiArray, api.TIMING_TOPIC, 10))
        self._joint_pub = keep("lifecycle_publisher", self.create_lifecycle_publisher(JointState, api.JOINT_STATES_TOPIC, 10))
        self._diag_pub = keep("publisher", self.create_publisher(DiagnosticArray, api.DIAGNOSTICS_TOPIC, 10))
        keep("timer", steady_timer(self, self.diagnostics_period, self._on_diagnostics_timer, callback_group=group))
        self._idle_timer = keep("timer", steady_timer(self, IDLE_COMMAND_POLL_S, self._on_idle_poll,
                                                       callback_group=self._control_group))

    def _destroy_entities(self) -> None:
        """Destroy what _create_entities made, newest first (caller holds the lock)."""
        destroy = {"service": self.destroy_service, "subscription": self.destroy_subscription,
                   "publisher": self.destroy_publisher, "lifecycle_publisher": self.destroy_lifecycle_publisher,
                   "timer": self.destroy_timer}
        for kind, entity in reversed(self._entities):
            destroy[kind](entity)
        self._entities.clear()
        self._diag_pub = self._state_pub = self._fault_pub = None
        self._heartbeat_pub = self._timing_pub = self._joint_pub = None
        self._idle_timer = None

    # lifecycle -------------------------------------------------------------------
    def on_configure(self, state: LifecycleState) -> TransitionCallbackReturn:
        try:
            robot = load_robot_config(self.robot_config_path)
            safety = load_safety_config(self.safety_config_path)
            policy = OnnxPolicy.load(Path(self.policy_path), robot)
            ControlLoop(robot, policy, safety, self.deadman_timeout, self.sentinel_timeout)  # validates gains and soft limits
            interface = open_interface(self, self.interface_params, robot, self._state_group, role="node")
        except Exception as err:  # noqa: BLE001 - whatever stops configure, its reason is the operator's to read
            # An input error is one line naming the file. Anything else (an input no check
            # foresaw, a DDS failure, a defect) would reach rclpy, which logs only that the
            # transition raised: its type and message are the reason, and its stack is logged
            # (a defect needs it). The node stays unconfigured, as on_error would leave it:
            # neither releases what a failing interface opened before it raised (its own job).
            if isinstance(err, BCGInputError):
                self.configure_error = str(err)
            else:
                self.configure_error = f"{type(err).__name__}: {err}"
                self.get_logger().error(traceback.format_exc())
            if not self._autostarting:  # autostart prints it once, as the process's exit reason
                self.get_logger().error(f"configure failed: {self.configure_error}")
            return TransitionCallbackReturn.FAILURE
        with self._lock:
            self.robot, self.safety, self.policy, self.interface = robot, safety, policy, interface
            self._state_wait_s = safety.state_wait_periods * safety.state_period_s
            self._create_entities()
        c = policy.contract
        self.get_logger().info(
            f"policy {self.policy_path}: motion '{c.motion_id}', {c.num_joints} joints, dt {c.control_dt} s, "
            f"contract checked against '{robot.name}'; interface {interface.kind}; operator deadman "
            f"{f'{self.deadman_timeout:g} s' if self.deadman_timeout > 0 else 'off (deadman_timeout_s 0)'}")
        return TransitionCallbackReturn.SUCCESS

    def on_activate(self, state: LifecycleState) -> TransitionCallbackReturn:
        enabled = super().on_activate(state)  # the lifecycle publishers, before the first tick
        if enabled != TransitionCallbackReturn.SUCCESS:
            return enabled
        with self._lock:
            # a DAMP not reset before a deactivate stays latched: reactivating is no reset
            self.loop = ControlLoop(self.robot, self.policy, self.safety, self.deadman_timeout, self.sentinel_timeout,
                                    latched=self._latched_fault)
            self._latched_fault = None
            self._take_idle_commands()  # up to now (dated late by at most a poll period, when the executor keeps up)
            self.loop.lease.observe(self._idle_commands)
            self._idle_commands = []
            if self._idle_timer is not None:
                self._idle_timer.cancel()  # the ticks take them now
            self.timing = TickTiming()
            self._last_tick_start = None
            self._timer = steady_timer(self, self.policy.contract.control_dt, self._on_tick, callback_group=self._control_group)
            dt = self.policy.contract.control_dt
            control_state = self.loop.state.value
        self.get_logger().info(f"active: control timer at {1 / dt:.0f} Hz, state {control_state}")
        return TransitionCallbackReturn.SUCCESS

    def on_deactivate(self, state: LifecycleState) -> TransitionCallbackReturn:
        self._stop_control("deactivated")  # the damping goes out while the publishers are enabled
        return super().on_deactivate(state)

    def on_cleanup(self, state: LifecycleState) -> TransitionCallbackReturn:
        self._release()
        return TransitionCallbackReturn.SUCCESS

    def on_shutdown(self, state: LifecycleState) -> TransitionCallbackReturn:
        self._stop_control("shutting down")
        self._release()
        return TransitionCallbackReturn.SUCCESS

    def on_error(self, state: LifecycleState) -> TransitionCallbackReturn:
        """A transition callback raised: damp, release everything, back to unconfigured."""
        self.get_logger().error(f"transition from '{state.label}' raised; releasing the robot interface and entities")
        self._stop_control("transition error")
        self._release()
        return TransitionCallbackReturn.SUCCESS

    def _stop_control(self, why: str) -> None:
        """Stop ticking; a robot that was under position control is left damped."""
        with self._lock:
            if self._timer is not None:
                self.destroy_timer(self._timer)
                self._timer = None
            if self.loop is not None and self.interface is not None and self.interface.latest_state() is not None:
                self.interface.send(LowCommand.damping(self.loop.damping_kd))
                self.get_logger().warning(f"{why}: damping sent, control stopped")
            if self.loop is not None and self.loop.state is api.ControlState.DAMP:
                self._latched_fault = self.loop.machine.fault
            self.loop = None
            if self._idle_timer is not None:
                self._idle_timer.reset()  # not active: the idle poll takes other writers' commands again

    def _release(self) -> None:
        with self._lock:
            self._latched_fault = None  # a new configure starts over (the policy may be another)
            self._idle_commands = []
            if self.interface is not None:
                self.interface.close()
            self.interface, self.policy = None, None
            self._destroy_entities()

    # operator ----------------------------------------------------------------------
    def _request(self, what: str, response: Trigger.Response) -> Trigger.Response:
        with self._lock:
            if self.loop is None:
                response.success, response.message = False, f"{what} refused: node is not active"
            else:
                now = time.monotonic()
                if what == "reset":
                    self._lease_commands()
                    self._inputs.forget_estop_stations(self._estop_stations_present())
                    response.success, response.message = self.loop.request_reset(now, self._inputs)
                else:
                    method = {"run": self.loop.request_run, "stop": self.loop.request_stop}[what]
                    response.success, response.message = method(now)
        # rclpy binds a severity to each logging call site: one site per severity
        if response.success:
            self.get_logger().info(f"operator {what}: {response.message}")
        else:
            self.get_logger().warning(f"operator {what}: {response.message}")
        return response

    def _on_run(self, request, response):
        return self._request("run", response)

    def _on_stop(self, request, response):
        return self._request("stop", response)

    def _on_reset(self, request, response):
        return self._request("reset", response)

    def _on_estop(self, msg: Bool, info: MessageInfo) -> None:
        gid = info.get("publisher_gid")
        station = bytes(gid["data"]) if gid else b""
        with self._lock:
            before = self._inputs.estop
            self._inputs.set_estop(bool(msg.data), station)  # latched: the next tick trips however short the pulse
            after = self._inputs.estop
        if after != before:
            self.get_logger().warning(f"e-stop {'ASSERTED' if after else 'released'}")
        elif after and not msg.data:
            self.get_logger().warning("e-stop released by one station, still asserted by another",
                                      throttle_duration_sec=1.0)

    def _estop_stations_present(self) -> set[bytes]:
        """The writers on the e-stop topic now (graph query, no DDS write)."""
        topic = self.resolve_topic_name(api.ESTOP_TOPIC)
        return {bytes(info.endpoint_gid) for info in self.get_publishers_info_by_topic(topic)}

    def _on_deadman(self, msg: Empty) -> None:
        with self._lock:
            self._inputs.deadman_at = time.monotonic()

    def _on_sentinel_heartbeat(self, msg: UInt64) -> None:
        with self._lock:
            self._inputs.sentinel_at = time.monotonic()

    def _on_sentinel_state(self, msg: String) -> None:
        with self._lock:
            self._inputs.sentinel_state = msg.data

    # other writers' commands while not active ----------------------------------------
    def _on_idle_poll(self) -> None:
        with self._lock:
            if self.loop is None:  # cancelled while active; a call already queued then finds the ticks taking them
                self._take_idle_commands()

    def _take_idle_commands(self) -> None:
        """Take other writers' commands into ``_idle_commands``, keeping those of the last
        ``foreign_commander_window_s`` (caller holds the lock; not active)."""
        if self.interface is None:  # cleaned up (configure sets it and the safety config together)
            return
        seen = self.interface.take_commands()
        oldest = time.monotonic() - self.safety.foreign_commander_window_s
        self._idle_commands = [c for c in (*self._idle_commands, *seen) if c.t >= oldest]

    # control tick --------------------------------------------------------------------
    def _lease_commands(self) -> None:
        """Hand the commands other writers sent to the lease (caller holds the lock)."""
        self.loop.lease.observe(self.interface.take_commands())

    def _on_tick(self) -> None:
        start = time.monotonic()
        with self._lock:
            interface, wait_s = self.interface, self._state_wait_s
            if interface is None or self.loop is None:
                return
        # Aligned to state arrival: wait (GIL released, node lock not held) up to
        # state_wait_s for the next sample, so the command goes out on a state that is
        # fresh, not up to a period old.
        state = interface.latest_state(wait_s)
        ready = time.monotonic()
        with self._lock:
            if self.loop is None or self.interface is not interface:  # deactivated or cleaned up meanwhile
                return
            # A tick that starts late (this process was descheduled) runs before the state
            # messages queued meanwhile are taken, so freshness is judged at the tick's due
            # time: the node's own stall is not reported as stale robot state. The next tick
            # sees the queued states.
            gap = None if self._last_tick_start is None else start - self._last_tick_start
            due = start if gap is None else min(start, self._last_tick_start + self.loop.dt)
            if start - due > self.loop.dt:
                self._late_ticks += 1
                self.get_logger().warning(f"control tick {1e3 * (start - due):.0f} ms late", throttle_duration_sec=1.0)
            self._last_tick_start = start
            # A stall past the stale limit trips instead (loop_stalled): the sentinel may have
            # taken over, its damping still queued unread behind this tick.
            result = self.loop.tick(due, state, self._inputs, interface.take_commands(), tick_gap=gap)
            if result.command is not None:
                # a stall inside this tick trips too: damping goes out instead of a stale target
                result = self.loop.confirm_send(result, time.monotonic())
                interface.send(result.command)
            sent = time.monotonic()
            self._publish_tick_outputs(result, state, start, sent, ready)

    def _publish_tick_outputs(self, result, state, start: float, sent: float, ready: float) -> None:
        """State, fault, heartbeat, timing and joint states of one tick (caller holds the lock)."""
        self._tick_count += 1
        for t in result.transitions:
            if t.after is api.ControlState.DAMP:
                self.get_logger().error(f"{t.before.value} -> DAMP: {t.reason}")
                self._last_fault = t.reason
                self._fault_pub.publish(String(data=t.reason))
            else:
                self.get_logger().info(f"{t.before.value} -> {t.after.value}: {t.reason}")
        if result.state is api.ControlState.PASSIVE and result.faults:
            # what holds the node in PASSIVE (a sentinel not yet heard, ...): otherwise only
            # transitions are logged, and a node that never leaves PASSIVE says nothing
            self.get_logger().info(api.PASSIVE_HELD_LOG + "; ".join(str(f) for f in result.faults),
                                   throttle_duration_sec=2.0)
        self._state_pub.publish(String(data=result.state.value))
        self._heartbeat_pub.publish(UInt64(data=self._tick_count))
        period, age, compute = self.timing.record(start, sent, state.received_at if state is not None else None, ready)
        self._timing_pub.publish(Float64MultiArray(data=[period, age, compute]))
        if state is not None:
            js = JointState(name=list(self.robot.joint_names), position=state.q.tolist(), velocity=state.dq.tolist(),
                            effort=state.tau_est.tolist())
            js.header.stamp = self.get_clock().now().to_msg()
            self._joint_pub.publish(js)
        if result.transitions:
            self._publish_diagnostics()

    def _on_diagnostics_timer(self) -> None:
        with self._lock:
            self._publish_diagnostics()

    def _publish_diagnostics(self) -> None:
        """One DiagnosticArray of the control state (caller holds the lock)."""
        if self._diag_pub is None:  # cleaned up while the timer's callback waited for the lock
            return
        loop = self.loop
        state = loop.state.value if loop is not None else "INACTIVE"
        faults = [str(f) for f in loop.last_faults] if loop is not None else []
        summary = self.timing.summary(self.policy.contract.control_dt * 1e3) if self.policy is not None else {}
        status = DiagnosticStatus(name=api.DIAGNOSTICS_STATUS_NAME, hardware_id=self.interface_params.kind)
        status.level = DiagnosticStatus.ERROR if state == "DAMP" else DiagnosticStatus.OK
        status.message = f"{state}" + (f" ({self._last_fault})" if state == "DAMP" else "")
        values = {"state": state, "last_fault": self._last_fault, "present_faults": "; ".join(faults),
                  "policy": str(self.policy_path), "ticks": str(self._tick_count),
                  "late_ticks": str(self._late_ticks)}
        values.update({k: f"{v:.3f}" for k, v in summary.items()})
        if loop is not None:
            values.update({api.SHAPING_PREFIX + k: str(v) for k, v in loop.shaping.as_dict().items()})
        status.values = [KeyValue(key=k, value=v) for k, v in values.items()]
        msg = DiagnosticArray(status=[status])
        msg.header.stamp = self.get_clock().now().to_msg()
        self._diag_pub.publish(msg)


def _autostart(node: PolicyNode) -> str | None:
    """Configure and activate at once when the ``autostart`` parameter says so."""
    if not node.autostart:
        return None
    node._autostarting = True
    try:
        configured = node.trigger_configure()
    finally:
        node._autostarting = False
    if configured != TransitionCallbackReturn.SUCCESS:
        return node.configure_error or "configure failed"
    if node.trigger_activate() != TransitionCallbackReturn.SUCCESS:
        return "activate failed"
    return None


def _shut_down(node: PolicyNode) -> None:
    node._stop_control("stopping")
    node._release()


def main(args=None) -> int:
    # One thread (run_node): the robot state is polled by the tick (interfaces/), so the
    # executor only runs the timer, operator inputs and services. The timer still has its
    # own callback group and all shared state is locked, so a multi-threaded executor works too.
    return run_node("policy_node", PolicyNode, args, close=_shut_down, start=_autostart)


if __name__ == "__main__":
    raise SystemExit(main())
