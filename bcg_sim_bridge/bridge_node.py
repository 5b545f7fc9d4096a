"""``sim_bridge``: the MuJoCo G1 behind the robot's interfaces (console script and ROS 2 node).

The physics loop runs in a thread of its own, paced against a monotonic deadline (or as
fast as possible with simulated time on ``/clock``); an executor thread serves the
command subscription (``ros2``) and the simulator-control topics. Parameters: ``config``
(YAML, see ``config/sim_bridge.yaml``) and every scalar key of that file, which
overrides it. On exit it writes the run's trajectory log if ``log_path`` is set.

The process is the policy node's (:func:`bcg_policy_node.node.spin.run_node`): ROS
arguments rcl cannot parse, a parameter of the wrong type, a bad input file or a network
interface the Unitree SDK cannot open are a one-line error and exit status 2, before any
state is published; SIGINT or SIGTERM, or the end of a ``duration_s`` run, stop it. A
simulation that diverges stops it too, before the diverged state is published, with a
one-line error and exit status 1 (its log, with the diverged last row, is still written).

Tests and benchmarks use the same process as their robot: state faults on ``sim/inject``
(:mod:`bcg_sim_bridge.state_faults`), counters on ``sim/status``, and with
``echo_commands`` every command the drives got on ``sim/received``.
"""

from __future__ import annotations

import dataclasses
import json
import threading
import time

import numpy as np
from rclpy.callback_groups import MutuallyExclusiveCallbackGroup
from rclpy.node import Node
from rclpy.time import Time
from rosgraph_msgs.msg import Clock
from std_msgs.msg import Bool, Float64, Float64MultiArray, String, UInt16

from bcg_robot.config import load_robot_config
from bcg_robot.wire import TRANSPORT_ROS2, LowCommand
from bcg_robot.yaml_dataclass import from_mapping, read_yaml_mapping
from bcg_policy_node.node.parameters import declare_startup_parameter, reject_undeclared_parameters
from bcg_policy_node.node.spin import run_node
from bcg_policy_node.node.steady_timer import steady_timer
from bcg_sim_bridge.config import DEFAULT_BRIDGE_CONFIG, BridgeConfig
from bcg_sim_bridge.pacing import PacingStats, RealtimePacer, StateThinning
from bcg_sim_bridge.physics import BridgePhysics, BridgeState
from bcg_sim_bridge.recorder import TrajectoryRecorder
from bcg_sim_bridge.state_faults import StateFaultInjector
from bcg_sim_bridge.topics import (
    SIM_BAND_TOPIC, SIM_CORRUPT_CRC_TOPIC, SIM_DROPOUT_TOPIC, SIM_INJECT_TOPIC, SIM_PUSH_TOPIC, SIM_RECEIVED_TOPIC,
    SIM_REMOTE_TOPIC, SIM_STATUS_TOPIC,
)

SCALAR_PARAMETERS = tuple(
    f.name for f in dataclasses.fields(BridgeConfig) if f.name != "elastic_band"
)


class SimBridgeNode(Node):
    def __init__(self, stop_event: threading.Event | None = None):
        super().__init__("sim_bridge")
        self.stop_event = stop_event or threading.Event()
        path = declare_startup_parameter(self, "config", str(DEFAULT_BRIDGE_CONFIG))
        data = read_yaml_mapping(path)
        defaults = from_mapping(BridgeConfig, data, str(path))
        for name in SCALAR_PARAMETERS:
            data[name] = declare_startup_parameter(self, name, getattr(defaults, name))
        reject_undeclared_parameters(self)
        self.cfg: BridgeConfig = from_mapping(BridgeConfig, data, f"{path} (+ node parameters)")
        self.robot = load_robot_config(self.cfg.robot_config_path())
        self.physics = BridgePhysics(self.robot, self.cfg)
        self._faults_lock = threading.Lock()
        self._dropout_until = -1.0
        self._corrupt_until = -1.0
        self.injector = StateFaultInjector(self.robot, self.cfg.interface)
        self._echo_pub = self.create_publisher(Float64MultiArray, SIM_RECEIVED_TOPIC, 100) if self.cfg.echo_commands else None
        self._status_pub = self.create_publisher(String, SIM_STATUS_TOPIC, 10)
        on_command = self._on_command if self.cfg.echo_commands else self.physics.set_command
        group = MutuallyExclusiveCallbackGroup()
        self._echo_lock = threading.Lock()
        self._echoes: list[list[float]] = []
        if self._echo_pub is not None:
            steady_timer(self, 0.005, self._publish_echoes, callback_group=group)
        if self.cfg.interface == TRANSPORT_ROS2:
            from bcg_sim_bridge.ros2_interface import Ros2Interface

            self.interface = Ros2Interface(self, self.robot.joint_names, on_command, group)
        else:
            from bcg_sim_bridge.unitree_interface import UnitreeSdkBridgeInterface

            self.interface = UnitreeSdkBridgeInterface(
                self.cfg.domain_id, self.cfg.network_interface, self.robot.num_joints, on_command, self.cfg.mode_machine
            )
        self._clock_pub = self.create_publisher(Clock, "/clock", 10) if self.cfg.publish_clock else None
        self.create_subscription(Bool, SIM_BAND_TOPIC, lambda m: self.physics.set_band(m.data), 10, callback_group=group)
        self.create_subscription(Float64MultiArray, SIM_PUSH_TOPIC, self._on_push, 10, callback_group=group)
        self.create_subscription(Float64, SIM_DROPOUT_TOPIC, self._on_dropout, 10, callback_group=group)
        self.create_subscription(Float64, SIM_CORRUPT_CRC_TOPIC, self._on_corrupt, 10, callback_group=group)
        self.create_subscription(UInt16, SIM_REMOTE_TOPIC, lambda m: self.interface.set_remote_buttons(m.data), 10,
                                 callback_group=group)
        self.create_subscription(String, SIM_INJECT_TOPIC, self._on_inject, 10, callback_group=group)
        steady_timer(self, 0.2, self._publish_status, callback_group=group)
        self.recorder = TrajectoryRecorder() if self.cfg.log_path else None
        self.pacer: RealtimePacer | None = None  # made when the loop starts
        self.diverged = False
        self.step_compute_s: list[float] = []
        self.events: list[tuple[float, str]] = []
        self._physics_thread: threading.Thread | None = None
        self._physics_failure: BaseException | None = None
        self.get_logger().info(
            f"G1 '{self.robot.name}' at {1 / self.cfg.physics_dt:.0f} Hz, interface {self.cfg.interface}, "
            f"state {self.cfg.state_rate_hz:.0f} Hz, realtime factor {self.cfg.realtime_factor}, "
            f"band {'on' if self.physics.band_engaged else 'off'}, "
            f"command timeout {self.cfg.command_timeout_s or 'off (last command stays applied)'}"
        )

    # ------------------------------------------------------------- control topics
    def _event(self, text: str) -> None:
        with self._faults_lock:
            self.events.append((self.physics.sim_time, text))
        self.get_logger().info(text)

    def _on_push(self, msg: Float64MultiArray) -> None:
        if len(msg.data) != 4 or not np.isfinite(msg.data).all():
            self.get_logger().warn("sim/push needs [fx, fy, fz, duration_s]")
            return
        self.physics.push(np.asarray(msg.data[:3]), float(msg.data[3]))
        self._event(f"push {list(msg.data[:3])} N for {msg.data[3]} s")

    def _on_dropout(self, msg: Float64) -> None:
        with self._faults_lock:
            self._dropout_until = self.physics.sim_time + msg.data
        self._event(f"state dropout for {msg.data * 1e3:.0f} ms")

    def _on_corrupt(self, msg: Float64) -> None:
        if self.cfg.interface == TRANSPORT_ROS2:  # refused, not recorded as a fault that never happened
            self.get_logger().error("sim/corrupt_crc refused: the ros2 transport's state carries no CRC")
            return
        with self._faults_lock:
            self._corrupt_until = self.physics.sim_time + msg.data
        self._event(f"corrupted lowstate CRC for {msg.data * 1e3:.0f} ms")

    def _on_command(self, cmd: LowCommand) -> None:
        """The drives get ``cmd``; its echo says when (``echo_commands``). This may run in the
        Unitree SDK's DDS listener thread: the echo is published later, by the executor."""
        t = time.monotonic()
        self.physics.set_command(cmd)
        with self._echo_lock:
            self._echoes.append([t, *cmd.as_matrix().reshape(-1).tolist()])

    def _publish_echoes(self) -> None:
        with self._echo_lock:
            echoes, self._echoes = self._echoes, []
        for data in echoes:
            self._echo_pub.publish(Float64MultiArray(data=data))

    def _on_inject(self, msg: String) -> None:
        error = self.injector.request(msg.data)
        if error:
            self.get_logger().error(error)
            return
        buttons = self.injector.remote_buttons(msg.data)
        if buttons is not None:
            self.interface.set_remote_buttons(buttons)
        self._event(f"inject: {msg.data}")

    def status(self) -> dict:
        """What ``sim/status`` says: the command counters, the injection, the tick, the band, pacing."""
        status = {**self.interface.counters.snapshot(), **self.injector.status(), "tick": self.physics.tick,
                  "band_engaged": self.physics.band_engaged}
        if self.pacer is not None:  # how far the loop runs behind real time
            stats, lag_s = self.pacer.snapshot()
            status["pacing"] = {"lag_ms": round(max(lag_s, 0.0) * 1e3, 3), "max_lag_ms": round(stats.max_lag_s * 1e3, 3),
                                "overruns": stats.overruns, "resyncs": stats.resyncs,
                                "realtime_factor": round(stats.realtime_factor, 4)}
        return status

    def _publish_status(self) -> None:
        self._status_pub.publish(String(data=json.dumps(self.status())))

    # ------------------------------------------------------------------- loop
    def _publish_state(self, snapshot: BridgeState) -> None:
        """The robot's state (``snapshot``, of this step) as the interface sends it, with the injected state faults."""
        physics = self.physics
        with self._faults_lock:
            dropped = physics.sim_time < self._dropout_until
            corrupt = physics.sim_time < self._corrupt_until
        state, injected_corrupt = self.injector.apply(snapshot, time.monotonic())
        if state is not None and not dropped:
            self.interface.publish_state(state, corrupt_crc=corrupt or injected_corrupt)
            self.injector.published(state, time.monotonic())

    def run(self) -> None:
        cfg, physics = self.cfg, self.physics
        pacer = RealtimePacer(cfg.physics_dt, cfg.realtime_factor, stop_event=self.stop_event)
        self.pacer = pacer
        total = int(round(cfg.duration_s / cfg.physics_dt)) if cfg.duration_s > 0 else None
        clock = Clock()
        thinning = StateThinning(max_lag_s=2 * cfg.physics_dt)  # behind by more than two physics steps
        k = 0
        while not self.stop_event.is_set() and (total is None or k < total):
            t0 = time.perf_counter()
            physics.step()
            k += 1
            diverged = not physics.is_finite()  # before anything leaves: no reader may get a diverged state
            snapshot = None  # this step's state, taken once (its sensors are refreshed for it) for the interface and the log
            if not diverged and k % cfg.state_decimation == 0:
                if thinning.skip(pacer.lag_s):  # lag_s stays 0 when unpaced
                    self.interface.counters.add("states_skipped_behind")
                else:
                    snapshot = physics.snapshot()
                    self._publish_state(snapshot)
            if not diverged and self._clock_pub is not None:
                clock.clock = Time(nanoseconds=int(physics.sim_time * 1e9)).to_msg()
                self._clock_pub.publish(clock)
            if self.recorder is not None and (diverged or k % cfg.log_decimation == 0):  # the log keeps the last state
                cmd = physics.applied_command  # what the drives applied, not the latest received
                zero = np.zeros(self.robot.num_joints)
                self.recorder.record(
                    snapshot if snapshot is not None else physics.snapshot(), time.monotonic(), *((cmd.q, cmd.kp, cmd.kd) if cmd is not None else (zero,) * 3)
                )
            if diverged:
                self.get_logger().error(f"{self.divergence_message()}; stopping")
                self.diverged = True
                break
            if self.recorder is not None:  # kept only for the log: a long run without one must not grow
                self.step_compute_s.append(time.perf_counter() - t0)
            pacer.wait_next()

    def start_physics(self) -> None:
        """Run :meth:`run` in a thread of its own (run_node's ``start``; it spins the executor meanwhile)."""
        self._physics_thread = threading.Thread(target=self._run_physics, name="physics", daemon=True)
        self._physics_thread.start()

    def _run_physics(self) -> None:
        try:
            self.run()
        except BaseException as err:  # noqa: BLE001 - re-raised in the main thread by finish()
            self._physics_failure = err
        self.stop_event.set()  # the run ended by itself (duration_s, divergence, an error): the process stops

    def divergence_message(self) -> str:
        return f"the simulation diverged at {self.physics.sim_time:.3f} s (MuJoCo: unstable step / NaN state)"

    def finish(self) -> str | None:
        """Stop the physics loop, write the trajectory log, close the interface (run_node's ``close``).
        Returns the error the process exits with (status 1): a diverged simulation is a failed run."""
        self.stop_event.set()
        if self._physics_thread is not None:
            self._physics_thread.join()
        try:
            if self._physics_failure is not None:
                raise self._physics_failure
            self.save_log()
        finally:
            self.interface.close()
        return self.divergence_message() if self.diverged else None

    def save_log(self) -> None:
        if self.recorder is None:
            return
        stats, _ = self.pacer.snapshot() if self.pacer is not None else (PacingStats(), 0.0)
        counters = self.interface.counters.snapshot()
        with self._faults_lock:
            events = list(self.events)
        path = self.recorder.save(
            self.cfg.log_path,
            physics_dt=self.cfg.physics_dt,
            diverged=self.diverged,
            interface=self.cfg.interface,
            step_compute_s=np.asarray(self.step_compute_s, dtype=np.float32),
            pacing=np.array([stats.steps, stats.overruns, stats.resyncs, stats.max_lag_s, stats.wall_s, stats.sim_s]),
            counters_names=np.asarray(list(counters)), counters=np.asarray(list(counters.values())),
            event_times=np.asarray([t for t, _ in events], dtype=np.float64),
            event_texts=np.asarray([e for _, e in events], dtype=str),
        )
        self.get_logger().info(f"trajectory log ({len(self.recorder)} rows) written to {path}; counters {counters}")


def main(args=None) -> int:
    stop = threading.Event()  # SIGINT, SIGTERM, or the physics loop's own end
    return run_node("sim_bridge", lambda: SimBridgeNode(stop), args, start=lambda node: node.start_physics(),
                    close=lambda node: node.finish(), stop=stop)


if __name__ == "__main__":
    raise SystemExit(main())
