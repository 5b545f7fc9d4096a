"""The sim bridge's typed config (``config/sim_bridge.yaml``), loaded with unknown keys rejected."""

from __future__ import annotations

import dataclasses
from pathlib import Path

from bcg_robot.model import check_physics_dt
from bcg_robot.paths import share_file
from bcg_robot.wire import TRANSPORTS, UNITREE_MODE_MACHINE_29DOF, Transport
from bcg_robot.yaml_dataclass import load_dataclass

DEFAULT_BRIDGE_CONFIG = share_file("config/sim_bridge.yaml")
INTERFACES: tuple[str, ...] = TRANSPORTS  # the bridge's ``interface``: the transport it speaks


@dataclasses.dataclass(frozen=True)
class ElasticBandConfig:
    """A spring-damper holding the pelvis up, as in Unitree's simulator: start hanging, then release."""

    enabled: bool = True
    stiffness: float = 10000.0  # N/m, pulls the pelvis toward the anchor
    damping: float = 1000.0  # N s/m
    angular_stiffness: float = 500.0  # N m/rad, keeps the hanging pelvis upright
    angular_damping: float = 2.0  # N m s/rad (explicit: above ~5 it destabilises the light pelvis at 500 Hz)
    lift: float = 0.0  # anchor height above the default standing root height, m
    release_after_s: float = 0.0  # release automatically after this much simulated time; 0: only on request

    def validate(self) -> None:
        for key, high in BAND_LIMITS.items():
            value = getattr(self, key)
            if not 0 <= value <= high:  # NaN too
                raise ValueError(f"key 'elastic_band.{key}': {value} not in [0, {high:g}]")


# Upper bounds of the band's settings: 5x the defaults or more, checked all at once to hold a limp
# G1 without diverging at 500 Hz and 1 kHz (test_bridge_physics; 1e6 N/m with 1e4 N s/m diverged
# at 500 Hz). Unbounded, a 1e300 N/m spring diverged in the first step, naming neither file nor key.
BAND_LIMITS = {
    "stiffness": 1e5,  # N/m
    "damping": 1e4,  # N s/m
    "angular_stiffness": 1e4,  # N m/rad
    "angular_damping": 10.0,  # N m s/rad
    "lift": 1.0,  # m: the band holds the robot up, it does not press it down
    "release_after_s": 1e6,  # s
}


@dataclasses.dataclass(frozen=True)
class BridgeConfig:
    robot_config: str = "config/g1_29dof.yaml"  # relative paths resolve against the package share dir
    interface: Transport = "ros2"
    physics_dt: float = 0.002  # s, 500 Hz .. 1 kHz
    state_rate_hz: float = 250.0  # state messages per second (robot: 500)
    realtime_factor: float = 1.0  # 1: wall-clock pacing; 0: as fast as possible (use /clock)
    publish_clock: bool = False  # publish simulated time on /clock
    command_timeout_s: float = 0.0  # > 0: damping when no command for this long (unattended runs); 0: off, like the G1
    timeout_damping_kd: float = 2.0  # kd of the bridge's own timeout damping, N m s/rad
    # extra passive damping on every joint, N m s/rad, added to the robot model's own (which the
    # training model shares). 0: the joints as the policy trained on them. A value > 0 helps a
    # policy with damping it never trained with; sim2sim's report says how much was added
    joint_damping: float = 0.0
    domain_id: int = 1  # unitree_sdk: DDS domain (1 and 'lo' is the simulator convention)
    network_interface: str = "lo"
    log_path: str = ""  # write the run's trajectory (npz) here at exit; empty: no log
    log_rate_hz: float = 100.0
    duration_s: float = 0.0  # stop after this much simulated time; 0: run until shut down
    frozen_pose: bool = False  # the robot stays at its default pose (time runs, no physics): a stand-in for node tests
    echo_commands: bool = False  # publish every command the drives got on sim/received (tests, benchmarks)
    mode_machine: int = UNITREE_MODE_MACHINE_29DOF  # unitree_sdk: reported in LowState, required in every LowCmd
    elastic_band: ElasticBandConfig = dataclasses.field(default_factory=ElasticBandConfig)

    def validate(self) -> None:
        check_physics_dt("bridge", self.physics_dt, name="key 'physics_dt':")
        for key in ("state_rate_hz", "log_rate_hz"):
            rate = getattr(self, key)
            if not 0 < rate <= 1.0 / self.physics_dt + 1e-9:
                raise ValueError(f"key '{key}': {rate} not in (0, physics rate]")
            steps = 1.0 / (self.physics_dt * rate)  # a rate between was rounded to another, and reported as given
            if abs(steps - round(steps)) > 1e-6 * steps:
                raise ValueError(f"key '{key}': {rate:g} Hz is not the physics rate {1.0 / self.physics_dt:g} Hz divided "
                                 f"by a whole number of steps ({steps:.4g})")
        for key in ("realtime_factor", "command_timeout_s", "duration_s", "timeout_damping_kd", "joint_damping"):
            if getattr(self, key) < 0:
                raise ValueError(f"key '{key}': must be >= 0")
        if not 0 <= self.domain_id <= 232:
            raise ValueError(f"key 'domain_id': {self.domain_id} not in 0..232")
        # one byte of the LowState / LowCmd; 0 is what a command that moves nothing carries (g1.md):
        # a bridge reporting it would accept commands the robot drops
        if not 1 <= self.mode_machine <= 255:
            raise ValueError(f"key 'mode_machine': {self.mode_machine} not in 1..255")
        if self.log_path and Path(self.log_path).is_dir():  # found only at exit, the run's log lost
            raise ValueError(f"key 'log_path': {self.log_path} is a directory, not a file to write")
        self.elastic_band.validate()

    @property
    def state_decimation(self) -> int:
        return max(1, round(1.0 / (self.physics_dt * self.state_rate_hz)))

    @property
    def log_decimation(self) -> int:
        return max(1, round(1.0 / (self.physics_dt * self.log_rate_hz)))

    def robot_config_path(self) -> Path:
        path = Path(self.robot_config)
        return path if path.is_absolute() or path.exists() else share_file(self.robot_config)


def load_bridge_config(path: str | Path = DEFAULT_BRIDGE_CONFIG, overrides: dict | None = None) -> BridgeConfig:
    return load_dataclass(BridgeConfig, path, overrides)
