"""One control tick, pure: state + operator inputs in, the command for the motors out.

Order inside a tick: evaluate every watchdog; trip to DAMP on any fault (so the command
of this very tick is already damping); handle the remote's START; run the state's
controller (ramp, hold, policy); shape the targets; build the command. The ROS node only
calls :meth:`ControlLoop.tick` from its 50 Hz timer and hands the command to the robot
interface. Operator requests come through :meth:`request_run` / :meth:`request_stop` /
:meth:`request_reset` (the caller serializes them with ticks).
"""

from __future__ import annotations

import dataclasses
from typing import Protocol

import numpy as np

from bcg_robot.config import RobotConfig
from bcg_robot.errors import ConfigError, ContractError
from bcg_robot.contract import PolicyContract
from bcg_robot.observation import raw_inputs
from bcg_robot.wire import LowCommand

from bcg_policy_node.config.safety_config import SafetyConfig
from bcg_policy_node.interfaces.robot_state import RobotState, SeenCommand
from bcg_policy_node.operator_api import REMOTE_RUN_BUTTONS, ControlState
from bcg_policy_node.safety.commander_lease import CommanderLease
from bcg_policy_node.safety.faults import Fault
from bcg_policy_node.safety.state_machine import ControlStateMachine, Transition
from bcg_policy_node.safety.state_watchdog import StateWatchdog
from bcg_policy_node.safety.target_shaping import ShapedTargets, ShapingCounts, TargetLimits, shape_targets


class Policy(Protocol):
    contract: PolicyContract

    def run(self, raw: dict[str, np.ndarray]) -> tuple[np.ndarray, np.ndarray]: ...


@dataclasses.dataclass
class OperatorInputs:
    estop_pulse: bool = False  # an assertion since the last tick: latched, so a pulse shorter than a tick trips
    deadman_at: float | None = None  # time of the last deadman heartbeat (same clock as ticks)
    sentinel_at: float | None = None  # time of the sentinel's last heartbeat (same clock as ticks)
    sentinel_state: str | None = None  # the sentinel's state as last received (WAITING, WATCHING, TAKEN_OVER)
    # each e-stop station's last level, by its writer's id (b'': a writer the middleware does not
    # name): one station's periodic "released" must not clear another's "pressed"
    estop_stations: dict[bytes, bool] = dataclasses.field(default_factory=dict)

    @property
    def estop(self) -> bool:
        """Asserted by any e-stop station, each at the level it last sent."""
        return any(self.estop_stations.values())

    def set_estop(self, asserted: bool, station: bytes = b"") -> None:
        """The e-stop callback: the station's level, and the latch the next tick consumes."""
        self.estop_stations[station] = asserted
        self.estop_pulse = self.estop_pulse or asserted

    def forget_estop_stations(self, present: set[bytes]) -> None:
        """Stations gone from the e-stop topic no longer hold it (a station restarted under a new
        id would otherwise block every reset with its old self's level); a station still there
        holds its level until it sends another. Writers with no id are kept."""
        for station in [s for s in self.estop_stations if s and s not in present]:
            del self.estop_stations[station]


@dataclasses.dataclass(frozen=True)
class TickResult:
    command: LowCommand | None  # None: no state yet, nothing to send
    state: ControlState
    faults: tuple[Fault, ...]
    transitions: tuple[Transition, ...]
    shaped: ShapedTargets | None
    ran_policy: bool


_LATCHED_NOTE = " (latched before the node was deactivated)"
_ENERGIZED = (ControlState.RAMP, ControlState.HOLD, ControlState.RUN)  # position commands go to the motors
_NOW_FAULT_KINDS = ("estop", "deadman", "sentinel_missing", "foreign_commander")  # re-evaluated at a reset request
# present in PASSIVE they keep it there; they trip outside it
_ENERGIZED_ONLY = ("deadman", "sentinel_missing", "state_unconfirmed")


class ControlLoop:
    def __init__(self, robot: RobotConfig, policy: Policy, config: SafetyConfig, deadman_timeout: float = 0.0,
                 sentinel_timeout: float = 0.0, latched: Fault | None = None):
        """``latched``: a DAMP the previous loop of this node had not been reset from (a lifecycle
        deactivate and activate): this loop starts in DAMP with that fault, and only a reset
        leaves it, as if the node had never stopped ticking."""
        contract = policy.contract
        self.robot, self.policy, self.config = robot, policy, config
        self.dt = contract.control_dt
        self.kp = np.asarray(contract.kp, dtype=np.float64)
        self.kd = np.asarray(contract.kd, dtype=np.float64)
        self.default_pose = np.asarray(contract.default_pose, dtype=np.float64)
        config.check_against(robot)
        self.damping_kd = config.damping_kd(robot)
        if np.any(self.damping_kd <= 0):  # a robot config's kd is > 0 (RobotConfig.validate)
            raise ConfigError(robot.source, "damping needs kd > 0 on every joint")
        self.limits = TargetLimits.for_robot(robot, config)
        outside = np.flatnonzero((self.default_pose < self.limits.soft_lower) | (self.default_pose > self.limits.soft_upper))
        if outside.size:  # RAMP and HOLD would silently aim at the clamped pose instead
            j = outside[0]
            raise ContractError(getattr(policy, "source", "<policy>"),
                                f"policy default pose of '{robot.joint_names[j]}' ({self.default_pose[j]:g}) is outside the "
                                f"soft limits [{self.limits.soft_lower[j]:g}, {self.limits.soft_upper[j]:g}] (joint_limit_margin)")
        self.watchdog = StateWatchdog(robot, config, self.dt)
        self.machine = ControlStateMachine(config.ramp_duration)
        if latched is not None:
            message = latched.message if latched.message.endswith(_LATCHED_NOTE) else latched.message + _LATCHED_NOTE
            self.machine.trip(Fault(latched.kind, message), 0.0)
        self.deadman_timeout = deadman_timeout
        self.sentinel_timeout = sentinel_timeout  # 0: no sentinel required
        self.lease = CommanderLease(config.foreign_commander_window_s)
        self.last_faults: list[Fault] = []
        self.shaping = ShapingCounts()  # over the ticks the policy ran (a stall found by confirm_send still counts)
        self._last_target: np.ndarray | None = None
        self._ramp_from: np.ndarray | None = None
        self._last_action = np.zeros(contract.num_joints)
        # the phase clock's origin: the first RUN tick, so that its phase is 0 as in a training
        # episode's first step however the RUN request fell between ticks (None: not yet)
        self._run_started: float | None = None
        self._start_was_pressed = True  # a START held since before HOLD does not count
        self._position_sent_at: float | None = None  # when the last position command went out (confirm_send)
        self._command_state_at: float | None = None  # received_at of the state the last tick's command was built on
        self._tick_at = 0.0  # the last tick's time (the node passes its due time): confirm_send's split of a state's age

    @property
    def state(self) -> ControlState:
        return self.machine.state

    # operator requests -------------------------------------------------------------
    def request_run(self, now: float) -> tuple[bool, str]:
        ok, message = self.machine.request_run(now)
        if ok:
            self._last_action[:] = 0.0
            self._run_started = None
        return ok, message

    def request_stop(self, now: float, reason: str = "operator stop") -> tuple[bool, str]:
        self.machine.trip(Fault("operator_stop", reason), now)
        return True, "DAMP"

    def request_reset(self, now: float, inputs: OperatorInputs) -> tuple[bool, str]:
        """Refused while a fault is present: the state watchdogs as of the last tick, the
        operator inputs and other writers as of now (an e-stop released since the last
        tick no longer blocks it; a pulse not yet seen by a tick does)."""
        present = [f for f in self.last_faults if f.kind not in _NOW_FAULT_KINDS]
        present += self._operator_faults(now, inputs, consume=False) + self._lease_faults(now)
        return self.machine.request_reset(now, present)

    # the tick ----------------------------------------------------------------------
    def _operator_faults(self, now: float, inputs: OperatorInputs, consume: bool = True) -> list[Fault]:
        faults = []
        if inputs.estop or inputs.estop_pulse:
            held = "asserted" if inputs.estop else "pulse (asserted and released within one tick)"
            faults.append(Fault("estop", f"e-stop {held} on the e-stop topic"))
        if consume:
            inputs.estop_pulse = False
        if self.deadman_timeout > 0:
            if inputs.deadman_at is None:
                faults.append(Fault("deadman", "no operator deadman heartbeat yet"))
            elif now - inputs.deadman_at > self.deadman_timeout:
                faults.append(Fault("deadman", f"operator deadman silent for {(now - inputs.deadman_at) * 1e3:.0f} ms"))
        if self.sentinel_timeout > 0:
            if inputs.sentinel_at is None:
                faults.append(Fault("sentinel_missing", "no sentinel heartbeat yet: start the sentinel (nobody would damp a frozen node)"))
            elif now - inputs.sentinel_at > self.sentinel_timeout:
                faults.append(Fault("sentinel_missing", f"sentinel heartbeat silent for {(now - inputs.sentinel_at) * 1e3:.0f} ms"))
            elif inputs.sentinel_state != "WATCHING":
                faults.append(Fault("sentinel_missing", f"sentinel is {inputs.sentinel_state or 'in an unknown state'}, not WATCHING"))
        return faults

    def _lease_faults(self, now: float) -> list[Fault]:
        fault = self.lease.fault(now)
        return [fault] if fault is not None else []

    def _stall_faults(self, tick_gap: float | None) -> list[Fault]:
        """The node's own stall: after a gap longer than the stale limit its motors went
        that long on an old command, and the sentinel may have taken over meanwhile (its
        damping not yet read), so this tick must not send the policy's targets."""
        limit = self.watchdog.stale_after
        if tick_gap is None or not tick_gap > limit:
            return []
        return [Fault("loop_stalled", f"this tick started {tick_gap * 1e3:.0f} ms after the previous one "
                                      f"(limit {limit * 1e3:.0f} ms): the node itself stalled")]

    def tick(self, now: float, state: RobotState | None, inputs: OperatorInputs,
             foreign: tuple[SeenCommand, ...] | list[SeenCommand] = (), tick_gap: float | None = None) -> TickResult:
        """One tick; ``foreign``: commands other writers sent since the last tick;
        ``tick_gap``: s since the previous tick started (None: not known, e.g. the first).
        Consumes the e-stop pulse latched in ``inputs``."""
        m = self.machine
        self.lease.observe(foreign)
        energized = m.state in _ENERGIZED
        # the causes first: the node's own stall explains what follows it (a stale state, the sentinel's
        # damping; in PASSIVE and DAMP it left nothing on the motors to worry about), and another
        # writer's commands what the robot did on them since (a joint too fast, a tilt)
        faults = self._stall_faults(tick_gap) if energized else []
        faults += self._lease_faults(now) + self.watchdog.check(now, state) + self._operator_faults(now, inputs)
        if m.state is ControlState.PASSIVE and state is not None and not self.watchdog.tick_advanced:
            # the first sample read is dated when it is read, however old it is: a stream that died
            # before activation would have ramped on it, at full gains, until it went stale
            faults.append(Fault("state_unconfirmed", f"one robot state so far (tick {state.tick}): waiting for the "
                                                     f"stream to advance before ramping"))
        self.last_faults = faults
        tripping = [f for f in faults if f.kind not in _ENERGIZED_ONLY or energized]
        if tripping:
            m.trip(tripping[0], now)
        self._command_state_at = None if state is None else state.received_at
        self._tick_at = now
        if state is None:
            return TickResult(None, m.state, tuple(faults), tuple(m.drain_transitions()), None, False)

        start = state.remote is not None and state.remote.pressed(*REMOTE_RUN_BUTTONS)
        if start and not self._start_was_pressed and m.state is ControlState.HOLD:
            self.request_run(now)
        self._start_was_pressed = start

        if m.state is ControlState.PASSIVE and not faults:
            m.start_ramp(now)
            self._ramp_from = state.q.copy()
            self._last_target = state.q.copy()
        m.advance(now)

        ran_policy, desired = False, None
        if m.state is ControlState.RAMP:
            a = m.ramp_fraction(now)
            a = a * a * (3.0 - 2.0 * a)  # smoothstep: zero velocity at both ends
            desired = (1.0 - a) * self._ramp_from + a * self.default_pose
        elif m.state is ControlState.HOLD:
            desired = self.default_pose
        elif m.state is ControlState.RUN:
            desired, fault = self._run_policy(now, state)
            ran_policy = True
            if fault is not None:
                m.trip(fault, now)

        shaped = None
        if m.state is ControlState.DAMP:
            command = LowCommand.damping(self.damping_kd)
        elif m.state is ControlState.PASSIVE:
            command = LowCommand.zero_torque(self.robot.num_joints)
        else:
            shaped = shape_targets(desired, self._last_target, state.q, state.dq, self.kp, self.kd, self.limits)
            self._last_target = shaped.targets
            if ran_policy:
                self.shaping.add(shaped)
            command = LowCommand.position(shaped.targets, self.kp, self.kd)
        return TickResult(command, m.state, tuple(faults), tuple(m.drain_transitions()), shaped, ran_policy)

    def confirm_send(self, result: TickResult, now: float) -> TickResult:
        """The last check before ``result.command`` goes out, at ``now``. The stall check at the
        tick's start sees only the gap between tick starts; a stall inside the tick (garbage
        collection, descheduling, an inference that hangs) leaves the motors just as long on the
        previous position command, builds this one on a state as old as the stall, and the
        sentinel may have taken over meanwhile. A position command more than the stale limit
        after the previous one, or built on a robot state older than that limit by now, trips
        ``loop_stalled`` and goes out as damping instead: the sentinel waits longer than that
        limit (``stall_order_error``). The second rule covers the first position command after
        PASSIVE or DAMP (the ramp's), which has no previous one; zero torque and damping are
        never held back. A state that crossed the limit during the tick mostly by its age when
        the tick was due is the stream's fault, not the node's: it trips ``stale_state``, as the
        next tick would."""
        limit, previous = self.watchdog.stale_after, self._position_sent_at
        energized = result.command is not None and result.state in _ENERGIZED
        fault = None
        if energized and previous is not None and now - previous > limit:
            fault = Fault("loop_stalled", f"this tick's command was ready {(now - previous) * 1e3:.0f} ms after the previous "
                                          f"one (limit {limit * 1e3:.0f} ms): the node itself stalled inside the tick")
        elif energized and self._command_state_at is not None and now - self._command_state_at > limit:
            # the state's age by now is the stream's share (its age at the tick's time, which the
            # watchdog passed) plus the node's (from the tick's time, its due time in the node, to
            # now: a late start and the tick's own work). The larger share names the cause
            age, stream, node = now - self._command_state_at, self._tick_at - self._command_state_at, now - self._tick_at
            if node >= stream:
                fault = Fault("loop_stalled", f"this tick's command was ready {node * 1e3:.0f} ms after the tick was due, on "
                                              f"a robot state {age * 1e3:.0f} ms old by then (limit {limit * 1e3:.0f} ms): "
                                              "the node itself stalled inside the tick")
            else:
                fault = Fault("stale_state", f"no new robot state for {age * 1e3:.0f} ms when this tick's command was ready, "
                                             f"{node * 1e3:.0f} ms after the tick was due (limit {limit * 1e3:.0f} ms)")
        if fault is not None:
            self.machine.trip(fault, now)
            result = dataclasses.replace(
                result, command=LowCommand.damping(self.damping_kd), state=self.machine.state, faults=(*result.faults, fault),
                transitions=(*result.transitions, *self.machine.drain_transitions()), shaped=None)
        self._position_sent_at = now if result.command is not None and result.state in _ENERGIZED else None
        return result

    def _run_policy(self, now: float, state: RobotState) -> tuple[np.ndarray | None, Fault | None]:
        """The policy's joint targets, or the fault that stops it: an inference that raises or
        returns another shape than one row of joints (``OnnxPolicy.run``), or NaN/Inf."""
        contract = self.policy.contract
        if self._run_started is None:
            self._run_started = now
        phase = 0.0
        if contract.motion_length_s > 0:
            phase = ((now - self._run_started) / contract.motion_length_s) % 1.0
        raw = raw_inputs(state.quat_wxyz, state.gyro, state.q, state.dq, self._last_action, np.array([phase]))
        try:
            targets, action = self.policy.run(raw)
        except Exception as err:  # onnxruntime's errors and ContractError: the motors must not wait on them
            return None, Fault("policy_error", f"policy inference failed: {str(err).strip()[:200] or type(err).__name__}")
        n = self.robot.num_joints
        if np.shape(targets) != (n,) or np.shape(action) != (n,):
            return None, Fault("policy_error", f"policy returned shapes {np.shape(targets)} and {np.shape(action)}, expected ({n},)")
        if not (np.isfinite(targets).all() and np.isfinite(action).all()):
            return None, Fault("nonfinite_action", "policy produced NaN/Inf")
        self._last_action = action
        return targets, None
