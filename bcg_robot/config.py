"""The robot config: the one source of truth for joint order, limits, pose and gains.

Loaded from ``config/g1_29dof.yaml`` (see that file for the fields), validated
(unknown keys, wrong lengths, non-finite values, a default pose outside the limits)
and checked against the MJCF it names: every joint must exist there and its range
must equal the config's position limits.
"""

from __future__ import annotations

import dataclasses
import math
from functools import cached_property
from pathlib import Path

import numpy as np

from bcg_robot.errors import ConfigError
from bcg_robot.paths import share_file
from bcg_robot.yaml_dataclass import load_dataclass

DEFAULT_ROBOT_CONFIG = share_file("config/g1_29dof.yaml")

# Tolerance for "the config's limits agree with the MJCF" (rad).
LIMIT_TOLERANCE = 1e-4
FLOAT32_MAX = float(np.finfo(np.float32).max)
MAX_POLICY_GAIN_RATIO = 10.0  # a policy's gains within 10x of the robot's either way, at most

PER_JOINT_KEYS = (
    "position_lower",
    "position_upper",
    "velocity_limits",
    "effort_limits",
    "default_pose",
    "kp",
    "kd",
    "armature",
)


@dataclasses.dataclass(frozen=True)
class MjcfSource:
    """Where the robot description comes from: a file inside an installed distribution."""

    distribution: str
    path: str


@dataclasses.dataclass(frozen=True)
class RobotConfig:
    name: str
    mjcf: MjcfSource
    joint_names: tuple[str, ...]
    position_lower: tuple[float, ...]
    position_upper: tuple[float, ...]
    velocity_limits: tuple[float, ...]
    effort_limits: tuple[float, ...]
    default_pose: tuple[float, ...]
    kp: tuple[float, ...]
    kd: tuple[float, ...]
    armature: tuple[float, ...]
    control_dt: float = 0.02
    action_scale: float = 0.25
    # A policy's kp and kd (ONNX contract) may differ from this config's by at most this
    # factor either way (1.0: equal); larger gains than the robot was tuned for are refused.
    policy_gain_ratio: float = 1.0
    imu_site: str = "imu_in_pelvis"
    root_body: str = "pelvis"
    feet: tuple[str, ...] = ("left_ankle_roll_link", "right_ankle_roll_link")
    source: str = dataclasses.field(default="<robot config>", compare=False)

    def validate(self) -> None:
        if not self.mjcf.distribution.strip():  # importlib.metadata refuses '' with a bare ValueError
            raise ConfigError(self.source, "key 'mjcf.distribution': empty (the package with the MJCF, e.g. 'mjlab')")
        n = len(self.joint_names)
        if n == 0:
            raise ConfigError(self.source, "key 'joint_names': empty")
        if len(set(self.joint_names)) != n:
            dup = next(j for j in self.joint_names if self.joint_names.count(j) > 1)
            raise ConfigError(self.source, f"key 'joint_names': '{dup}' appears twice")
        for key in PER_JOINT_KEYS:
            values = getattr(self, key)
            if len(values) != n:
                raise ConfigError(self.source, f"key '{key}': expected {n} values (one per joint), got {len(values)}")
            bad = [i for i, v in enumerate(values) if not math.isfinite(v)]
            if bad:
                raise ConfigError(self.source, f"key '{key}': non-finite value for joint '{self.joint_names[bad[0]]}'")
            # the G1's LowCmd carries targets, gains and torques as float32 (packing a larger one raises)
            bad = [i for i, v in enumerate(values) if abs(v) > FLOAT32_MAX]
            if bad:
                raise ConfigError(self.source, f"key '{key}': {values[bad[0]]:g} for joint '{self.joint_names[bad[0]]}' "
                                               f"is beyond float32, the motor command's format")
        for key in ("velocity_limits", "effort_limits"):
            bad = [i for i, v in enumerate(getattr(self, key)) if v <= 0]
            if bad:
                raise ConfigError(self.source, f"key '{key}': must be > 0 for joint '{self.joint_names[bad[0]]}'")
        for key in ("kp", "kd"):  # every joint is position controlled, and DAMP sends kd alone
            bad = [i for i, v in enumerate(getattr(self, key)) if not v > 0]
            if bad:
                raise ConfigError(self.source, f"key '{key}': must be > 0 for joint '{self.joint_names[bad[0]]}'")
        bad = [i for i, v in enumerate(self.armature) if not v >= 0]
        if bad:
            raise ConfigError(self.source, f"key 'armature': must be >= 0 for joint '{self.joint_names[bad[0]]}'")
        for i, name in enumerate(self.joint_names):
            lo, hi, q0 = self.position_lower[i], self.position_upper[i], self.default_pose[i]
            if lo >= hi:
                raise ConfigError(self.source, f"key 'position_lower': not below position_upper for joint '{name}'")
            if not lo <= q0 <= hi:
                raise ConfigError(self.source, f"key 'default_pose': {q0} outside [{lo}, {hi}] for joint '{name}'")
        if not 0 < self.control_dt <= 0.1:
            raise ConfigError(self.source, f"key 'control_dt': {self.control_dt} not in (0, 0.1] s")
        if self.action_scale <= 0:
            raise ConfigError(self.source, "key 'action_scale': must be > 0")
        if not (math.isfinite(self.policy_gain_ratio) and 1.0 <= self.policy_gain_ratio <= MAX_POLICY_GAIN_RATIO):
            raise ConfigError(self.source, f"key 'policy_gain_ratio': must be in [1, {MAX_POLICY_GAIN_RATIO:g}], "
                                           f"got {self.policy_gain_ratio}")

    @property
    def num_joints(self) -> int:
        return len(self.joint_names)

    @property
    def mjcf_joint_names(self) -> tuple[str, ...]:
        return tuple(f"{j}_joint" for j in self.joint_names)

    def array(self, key: str) -> np.ndarray:
        """A per-joint field as a float64 array in motor order."""
        if key not in PER_JOINT_KEYS:
            raise KeyError(key)
        return np.asarray(getattr(self, key), dtype=np.float64)

    @cached_property
    def lower(self) -> np.ndarray:
        return self.array("position_lower")

    @cached_property
    def upper(self) -> np.ndarray:
        return self.array("position_upper")

    @cached_property
    def default_q(self) -> np.ndarray:
        return self.array("default_pose")

    @cached_property
    def kp_array(self) -> np.ndarray:
        return self.array("kp")

    @cached_property
    def kd_array(self) -> np.ndarray:
        return self.array("kd")

    @cached_property
    def effort(self) -> np.ndarray:
        return self.array("effort_limits")

    @cached_property
    def velocity(self) -> np.ndarray:
        return self.array("velocity_limits")

    def mjcf_path(self) -> Path:
        from bcg_robot.assets import locate_distribution_file

        return locate_distribution_file(self.mjcf.distribution, self.mjcf.path, self.source)


def check_against_mjcf(cfg: RobotConfig) -> None:
    """Every configured joint exists in the MJCF as a hinge, with the same range."""
    import mujoco

    path = cfg.mjcf_path()
    try:
        model = mujoco.MjModel.from_xml_path(str(path))
    except ValueError as err:
        raise ConfigError(path, f"MuJoCo cannot load the robot description: {err}") from None
    hinge_names = [
        model.joint(i).name for i in range(model.njnt) if model.jnt_type[i] == mujoco.mjtJoint.mjJNT_HINGE
    ]
    for i, (name, mjcf_name) in enumerate(zip(cfg.joint_names, cfg.mjcf_joint_names)):
        if mjcf_name not in hinge_names:
            raise ConfigError(cfg.source, f"key 'joint_names': '{name}' ({mjcf_name}) is not a hinge joint in {path.name}")
        jid = model.joint(mjcf_name).id
        lo, hi = model.jnt_range[jid]
        if abs(lo - cfg.position_lower[i]) > LIMIT_TOLERANCE:
            raise ConfigError(cfg.source, f"key 'position_lower': {cfg.position_lower[i]} for '{name}' disagrees with MJCF {lo:.6g}")
        if abs(hi - cfg.position_upper[i]) > LIMIT_TOLERANCE:
            raise ConfigError(cfg.source, f"key 'position_upper': {cfg.position_upper[i]} for '{name}' disagrees with MJCF {hi:.6g}")
    if hinge_names != list(cfg.mjcf_joint_names):
        raise ConfigError(cfg.source, f"key 'joint_names': order differs from the MJCF hinge order of {path.name}")
    bodies = {model.body(i).name for i in range(model.nbody)}
    sites = {model.site(i).name for i in range(model.nsite)}
    if cfg.imu_site not in sites:
        raise ConfigError(cfg.source, f"key 'imu_site': '{cfg.imu_site}' is not a site in {path.name}")
    if not cfg.feet:
        raise ConfigError(cfg.source, "key 'feet': empty (the foot bodies the contact model and metrics use)")
    for key, names in (("root_body", (cfg.root_body,)), ("feet", cfg.feet)):
        for name in names:
            if name not in bodies or model.body(name).id == 0:
                raise ConfigError(cfg.source, f"key '{key}': '{name}' is not a body of the robot in {path.name}")
    if len(set(cfg.feet)) != len(cfg.feet):
        dup = next(f for f in cfg.feet if cfg.feet.count(f) > 1)
        raise ConfigError(cfg.source, f"key 'feet': '{dup}' appears twice")
    for name in cfg.feet:  # the contact model, the bridge's foot penetration and the metrics use its colliders
        body = model.body(name).id
        if not any(model.geom_bodyid[g] == body and (model.geom_contype[g] or model.geom_conaffinity[g])
                   for g in range(model.ngeom)):
            raise ConfigError(cfg.source, f"key 'feet': '{name}' has no collision geom in {path.name}")


def load_robot_config(path: str | Path = DEFAULT_ROBOT_CONFIG, check_model: bool = True) -> RobotConfig:
    """Load, validate and (by default) check the robot config against its MJCF."""
    cfg = load_dataclass(RobotConfig, path, overrides={"source": str(path)})
    if check_model:
        check_against_mjcf(cfg)
    return cfg
