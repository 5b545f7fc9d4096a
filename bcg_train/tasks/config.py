"""Typed configuration of the motion-imitation task (loaded from YAML, unknown keys rejected)."""

from __future__ import annotations

import dataclasses
import functools
import math

from bcg_robot.action_offset import check_action_offset
from bcg_robot.config import load_robot_config
from bcg_robot.model import TRAIN_LS_ITERATIONS, TRAIN_SOLVER_ITERATIONS, check_physics_dt
from bcg_robot.motion_csv import FPS_RANGE
from bcg_robot.observation import DEFAULT_OBSERVATION_SPEC, check_observation_spec
from bcg_train.bcg.config import BCGConfig
from bcg_train.sim.bounds import SimBounds


REFERENCE_FRAMES = ("world", "heading")  # what rewards compare against (bcg_train.tasks.rewards)
# privileged critic inputs and their sizes (bcg_train.tasks.privileged)
PRIVILEGED_FEATURES = {"root_lin_vel": 3, "root_height": 1, "domain": 4}


@functools.cache
def robot_control_dt() -> float:
    """The control period the imitation task steps at: the robot config's (the trainer builds
    the task on the default one, ``bcg_train.learn.train.make_task``), read once."""
    return load_robot_config(check_model=False).control_dt


@functools.cache
def robot_root_mass() -> tuple[str, float]:
    """The root body the domain randomization adds mass to, and its mass in the robot's model
    (kg; the train and bridge variants share it), read once."""
    from bcg_robot.model import build_model

    robot = load_robot_config()
    model = build_model(robot, "train")
    return robot.root_body, float(model.body_mass[model.body(robot.root_body).id])


def check_privileged(names: tuple[str, ...] | list[str]) -> None:
    for name in names:
        if name not in PRIVILEGED_FEATURES:
            raise ValueError(f"critic_privileged: unknown feature '{name}' ({' | '.join(PRIVILEGED_FEATURES)})")
    if len(set(names)) != len(names):
        raise ValueError(f"critic_privileged: a feature is listed twice in {list(names)}")


@dataclasses.dataclass(frozen=True)
class RewardTerm:
    """``weight * exp(-error / sigma)`` for tracking terms; ``weight * error`` for penalties."""

    weight: float
    sigma: float = 1.0


# the terms that are ``weight * error`` (bcg_train.tasks.rewards); the others track the reference
PENALTY_TERMS = ("action_rate", "alive")


@dataclasses.dataclass(frozen=True)
class RewardConfig:
    """Named reward terms (see :mod:`bcg_train.tasks.rewards` for each error)."""

    joint_pos: RewardTerm = RewardTerm(0.3, 0.5)
    joint_vel: RewardTerm = RewardTerm(0.1, 30.0)
    root_pos: RewardTerm = RewardTerm(0.15, 0.02)
    root_orient: RewardTerm = RewardTerm(0.15, 0.05)
    root_vel: RewardTerm = RewardTerm(0.1, 1.0)
    key_body: RewardTerm = RewardTerm(0.2, 0.01)
    root_height: RewardTerm = RewardTerm(0.0, 0.0025)  # off unless a config weighs it (the jump's flight)
    root_vel_z: RewardTerm = RewardTerm(0.0, 0.04)  # off unless a config weighs it (the jump's push-off)
    feet_height: RewardTerm = RewardTerm(0.0, 0.0032)  # off unless a config weighs it (the jump's feet in flight)
    action_rate: RewardTerm = RewardTerm(-0.005)
    alive: RewardTerm = RewardTerm(0.0)

    def names(self) -> tuple[str, ...]:
        return tuple(f.name for f in dataclasses.fields(self))


@dataclasses.dataclass(frozen=True)
class TerminationConfig:
    min_root_height: float = 0.3  # m
    max_tilt: float = 1.0  # rad between the pelvis z axis and the world z axis
    max_key_body_error: float = 0.5  # m, mean over key bodies

    def validate(self) -> None:
        # a bound that can never be crossed switches fall termination off without a word
        if not 0 <= self.min_root_height < 2.0:
            raise ValueError(f"termination.min_root_height must be in [0, 2) m, got {self.min_root_height}")
        if not 0 < self.max_tilt <= math.pi:
            raise ValueError(f"termination.max_tilt must be in (0, pi] rad, got {self.max_tilt}")
        if not self.max_key_body_error > 0:
            raise ValueError(f"termination.max_key_body_error must be > 0 m, got {self.max_key_body_error}")


@dataclasses.dataclass(frozen=True)
class DomainRandomizationConfig:
    """Sampled per environment at reset (latency, push timing) or per batch (model, gains)."""

    enabled: bool = True
    # sliding friction, uniform, set on every geom (floor and robot alike): MuJoCo gives a contact
    # the larger of its two geoms' frictions, so a floor-only value below the feet's would not apply
    friction: tuple[float, float] = (0.3, 1.2)
    base_mass_delta: tuple[float, float] = (-3.0, 3.0)  # kg added to the pelvis, uniform
    gain_scale: tuple[float, float] = (0.9, 1.1)  # multiplies kp and kd, uniform
    push_interval_s: tuple[float, float] = (3.0, 6.0)  # time between pushes, uniform
    push_velocity: float = 0.3  # m/s, max horizontal root velocity change per push
    latency_probability: float = 0.5  # chance that an environment acts one control step late
    model_resample_steps: int = 32  # control steps between batch-level model samples

    def validate(self) -> None:
        for name in ("friction", "base_mass_delta", "gain_scale", "push_interval_s"):
            lo, hi = getattr(self, name)
            if lo > hi:
                raise ValueError(f"domain randomization '{name}': lower bound {lo} above upper bound {hi}")
        for name in ("friction", "gain_scale", "push_interval_s"):  # a friction, a gain factor, an interval
            if not getattr(self, name)[0] > 0:
                raise ValueError(f"domain randomization '{name}': bounds must be > 0, got {list(getattr(self, name))}")
        if not 0.0 <= self.latency_probability <= 1.0:
            raise ValueError("domain randomization 'latency_probability' must be in [0, 1]")
        if self.push_velocity < 0 or self.model_resample_steps < 1:
            raise ValueError("domain randomization: 'push_velocity' must be >= 0 and 'model_resample_steps' >= 1")


@dataclasses.dataclass(frozen=True)
class PushRecoveryConfig:
    """For ``window_s`` after each push (the push's own step included) the tracking terms named
    in ``terms`` are multiplied by ``scale`` (:func:`bcg_train.tasks.rewards.relax_after_push`):
    the posture may give way (a hip strategy, a bent torso) while the robot catches itself, and
    what a fall costs (the episode's remaining return) then outweighs it. ``window_s`` 0: off."""

    window_s: float = 0.0
    scale: float = 1.0
    terms: tuple[str, ...] = ("joint_pos", "joint_vel", "root_orient", "key_body")

    def validate(self, reward_names: tuple[str, ...]) -> None:
        if self.window_s < 0:
            raise ValueError(f"push_recovery.window_s must be >= 0, got {self.window_s}")
        if not 0.0 <= self.scale <= 1.0:
            raise ValueError(f"push_recovery.scale must be in [0, 1], got {self.scale}")
        for name in self.terms:
            if name not in reward_names:
                raise ValueError(f"push_recovery.terms: unknown reward term '{name}' ({' | '.join(reward_names)})")


@dataclasses.dataclass(frozen=True)
class ImitationConfig:
    motion: str = "models/motions/stand.csv"  # relative to the package share dir or absolute
    motion_fps: float = 30.0
    contact: str = "default"  # contact preset of the train model (soft | default | stiff)
    physics_dt: float = 0.005
    # the train model's Newton and line-search iterations (bcg_robot.model, where the
    # defaults are measured and explained)
    solver_iterations: int = TRAIN_SOLVER_ITERATIONS
    ls_iterations: int = TRAIN_LS_ITERATIONS
    episode_length_s: float = 10.0
    # simulate in float64 (the physics and its backward pass; the networks stay float32).
    # Turns on jax_enable_x64 for the whole process (bcg_train.sim.jax_setup). In float32 the
    # largest stiff-landing gradients are dominated by rounding
    # (docs/results/bcg-variance-2026-12-05/)
    float64: bool = False
    reference_state_init: bool = True
    observation_spec: tuple[str, ...] = DEFAULT_OBSERVATION_SPEC
    # PD targets = offset + action_scale * action; offset: default_pose, or reference (the
    # clip's joint positions one step ahead: feed-forward, the policy learns the correction;
    # bcg_robot.action_offset)
    action_offset: str = "default_pose"
    # what the rewards and termination compare against: the reference as recorded (world), or
    # re-anchored each step onto the robot's root position and heading (heading: a push
    # that moves or turns the robot is no tracking error; bcg_train.tasks.rewards)
    reference_frame: str = "world"
    # privileged critic inputs (bcg_train.tasks.privileged), after the actor's observation;
    # empty: the critics see what the actor sees (the published SHAC)
    critic_privileged: tuple[str, ...] = ()
    bcg: BCGConfig = BCGConfig()
    rewards: RewardConfig = RewardConfig()
    termination: TerminationConfig = TerminationConfig()
    domain: DomainRandomizationConfig = DomainRandomizationConfig()
    push_recovery: PushRecoveryConfig = PushRecoveryConfig()  # posture terms relaxed after a push
    sim_bounds: SimBounds = SimBounds()  # beyond these the simulation has failed (bcg_train.sim.failure)

    def validate(self) -> None:
        check_observation_spec(self.observation_spec)
        check_action_offset(self.action_offset)
        if self.reference_frame not in REFERENCE_FRAMES:
            raise ValueError(f"reference_frame: unknown '{self.reference_frame}' ({' | '.join(REFERENCE_FRAMES)})")
        check_privileged(self.critic_privileged)
        self.sim_bounds.validate()
        if "phase_sin_cos" not in self.observation_spec:
            raise ValueError("observation_spec: an imitation policy needs 'phase_sin_cos'")
        if self.contact not in ("soft", "default", "stiff"):
            raise ValueError(f"contact: unknown preset '{self.contact}' (soft | default | stiff)")
        if self.episode_length_s <= 0:
            raise ValueError("episode_length_s must be > 0")
        for name in ("solver_iterations", "ls_iterations"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be >= 1, got {getattr(self, name)}")
        self.domain.validate()
        root, mass = robot_root_mass()
        if self.domain.enabled and mass + self.domain.base_mass_delta[0] <= 0:  # a body with negative mass simulated on
            raise ValueError(f"domain randomization 'base_mass_delta': lower bound {self.domain.base_mass_delta[0]:g} kg "
                             f"would leave the {root} ({mass:g} kg) with no mass")
        self.termination.validate()
        self.push_recovery.validate(self.rewards.names())
        for name in self.rewards.names():
            term = getattr(self.rewards, name)
            if not term.sigma > 0:  # exp(-error / 0): a term that is always 0, or NaN at zero error
                raise ValueError(f"rewards.{name}.sigma must be > 0, got {term.sigma}")
            if name not in PENALTY_TERMS and term.weight < 0:  # rewarded moving away from the reference
                raise ValueError(f"rewards.{name}.weight must be >= 0 (a tracking term), got {term.weight}")
        if self.rewards.action_rate.weight > 0:  # rewarded jerky actions
            raise ValueError(f"rewards.action_rate.weight must be <= 0 (a penalty), got {self.rewards.action_rate.weight}")
        lo, hi = FPS_RANGE  # the clip's loader refuses others
        if not lo <= self.motion_fps <= hi:  # found by the clip's loader otherwise, which blamed the CSV
            raise ValueError(f"motion_fps must be in [{lo:g}, {hi:g}] frames per second, got {self.motion_fps}")
        check_physics_dt("train", self.physics_dt)  # found after the JAX import otherwise, by the model builder
        self.check_timing(robot_control_dt())

    def check_timing(self, control_dt: float) -> None:
        """A control step of ``control_dt`` (the robot's) is a whole number of physics steps, and
        an episode lasts at least one control step."""
        ratio = control_dt / self.physics_dt
        if abs(ratio - round(ratio)) > 1e-6:  # the simulator refused it after the JAX import
            raise ValueError(f"physics_dt {self.physics_dt}: the robot's control_dt {control_dt} s is not a multiple of it "
                             f"({ratio:.4g} physics steps)")
        if self.episode_length_s < control_dt:  # zero control steps an episode
            raise ValueError(f"episode_length_s {self.episode_length_s} is shorter than one control step ({control_dt} s)")
        # a shorter interval rounds to 0 control steps: a push every step in training, one push in bcg-eval
        if self.domain.push_interval_s[0] < control_dt:
            raise ValueError(f"domain randomization 'push_interval_s': lower bound {self.domain.push_interval_s[0]:g} s is "
                             f"shorter than one control step ({control_dt} s)")
