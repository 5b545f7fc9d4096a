"""A planar one-legged hopper, built in code: the trainer's fast stiff-contact test bench.

A torso on a planar base (slide x, slide z, hinge pitch) with an actuated hip and knee
and a foot of two spheres (toe and heel, like the G1's sphere feet) rigid on the shank,
flat on the floor at the default pose. Only the foot and the torso touch the floor. The actuators are
plain motors, so the PD law runs in whoever steps the model (:class:`MjxSim` in
training, :mod:`bcg_train.evaluate.hopper_eval` in MuJoCo C), as for the G1.

Two variants, as for the G1 (:mod:`bcg_robot.model`):

``train``
    For MJX: Euler, Newton with :data:`HOPPER_SOLVER_ITERATIONS` iterations, sparse
    Jacobian (no batched LAPACK kernel), 200 Hz physics, contact from one of the G1's
    presets (``soft`` / ``default`` / ``stiff``: the same solref and solimp, REFSAFE as
    the preset says).
``eval``
    For MuJoCo C, in the role the sim bridge plays for the G1: implicitfast, Newton
    with MuJoCo's default iterations, 500 Hz physics, ``stiff`` contact.

``qpos0`` is all zeros, so the base height joint is absolute (``qpos[rootz]`` is the hip's
height above the floor); the keyframe ``default`` (:func:`standing_qpos`) stands on the foot.
"""

from __future__ import annotations

import dataclasses
from typing import Literal

import mujoco
import numpy as np

from bcg_robot.model import CONTACT_PRESETS
from bcg_train.sim.config import JointDrive

HopperVariant = Literal["train", "eval"]

THIGH_LENGTH = 0.22  # m
SHANK_LENGTH = 0.22  # m
FOOT_RADIUS = 0.02  # m, the toe and heel spheres
TOE_X, HEEL_X = 0.06, -0.04  # m ahead of the ankle, at the default pose
TORSO_HALF_LENGTH = 0.08  # m, capsule above the hip
TORSO_RADIUS = 0.05  # m
MASSES = {"torso": 3.0, "thigh": 0.5, "shank": 0.3, "foot": 0.05}  # kg
ARMATURE = 0.01  # kg m^2, hip and knee
JOINT_DAMPING = 0.05  # N m s / rad, hip and knee

# qpos / qvel layout (hinge and slide joints only, so both are the same)
ROOT_X, ROOT_Z, ROOT_PITCH, HIP, KNEE = range(5)
ACTUATED = (HIP, KNEE)

DEFAULT_POSE = (0.5, -1.0)  # rad: foot under the hip, knee bent
JOINT_SPEED_LIMIT = (30.0, 30.0)  # rad/s, hip and knee: what its motors would be rated for
# With 1 Newton and 1 line-search iteration the standing hopper chatters on stiff contact
# (100-270 N peaks, 37 N is its weight) and falls within 0.5-1.5 s under zero action in MJX;
# with 3 and 4 it stands as in MuJoCo C. The claim's results were measured with 3 (the G1's
# count until 2026-12-04, when the G1 went to 4: docs/results/mjx-vs-c-2026-12-04/).
HOPPER_SOLVER_ITERATIONS = 3
HOPPER_LS_ITERATIONS = 4
TRAIN_DT = 0.005
EVAL_DT = 0.002


def foot_point(x: float, shank_length: float) -> tuple[float, float]:
    """(x, z) in the shank frame of the foot point ``x`` metres ahead of the ankle, placed so
    the foot is flat on the floor at the default pose (the foot has no joint of its own)."""
    angle = -(DEFAULT_POSE[0] + DEFAULT_POSE[1])
    return x * np.cos(angle), -shank_length - x * np.sin(angle)


def hopper_drive() -> JointDrive:
    """PD gains, effort limits and action scale of the hopper's hip and knee."""
    return JointDrive(
        kp=np.array([60.0, 60.0]),
        kd=np.array([1.5, 1.5]),
        effort_limit=np.array([40.0, 40.0]),
        default_pose=np.array(DEFAULT_POSE),
        action_scale=0.5,
    )


def leg_height(hip: float, knee: float) -> float:
    """Hip height above the floor with the foot sphere touching it (torso upright)."""
    return THIGH_LENGTH * np.cos(hip) + SHANK_LENGTH * np.cos(hip + knee) + FOOT_RADIUS


def standing_qpos() -> np.ndarray:
    """Standing on the foot at the default pose, torso upright."""
    hip, knee = DEFAULT_POSE
    q = np.zeros(5)
    q[ROOT_Z] = leg_height(hip, knee)
    q[HIP], q[KNEE] = hip, knee
    return q


@dataclasses.dataclass(frozen=True)
class HopperModelInfo:
    floor_geom: int
    foot_geoms: tuple[int, int]
    torso_geom: int


def hopper_xml(variant: HopperVariant = "train", contact: str | None = None, physics_dt: float | None = None) -> str:
    if variant not in ("train", "eval"):
        raise ValueError(f"unknown hopper variant '{variant}' (train | eval)")
    preset_name = contact if contact is not None else ("default" if variant == "train" else "stiff")
    if preset_name not in CONTACT_PRESETS:
        raise ValueError(f"unknown contact preset '{preset_name}' ({' | '.join(CONTACT_PRESETS)})")
    preset = CONTACT_PRESETS[preset_name]
    dt = physics_dt if physics_dt is not None else (TRAIN_DT if variant == "train" else EVAL_DT)
    if variant == "train":
        option = (f'<option timestep="{dt}" integrator="Euler" solver="Newton" iterations="{HOPPER_SOLVER_ITERATIONS}" '
                  f'ls_iterations="{HOPPER_LS_ITERATIONS}" jacobian="sparse">')
    else:
        option = f'<option timestep="{dt}" integrator="implicitfast" solver="Newton">'
    flags = '<flag refsafe="disable"/>' if not preset.refsafe else ""
    solref = f"{preset.timeconst} {preset.dampratio}"
    solimp = " ".join(f"{v:g}" for v in preset.solimp)
    l1, l2 = THIGH_LENGTH, SHANK_LENGTH
    toe, heel = (foot_point(x, l2) for x in (TOE_X, HEEL_X))
    return f"""
<mujoco model="hopper_{variant}_{preset_name}">
  <compiler angle="radian" autolimits="true"/>
  {option}{flags}</option>
  <default>
    <geom contype="0" conaffinity="0" friction="0.9 0.02 0.001" solref="{solref}" solimp="{solimp}"/>
    <joint armature="{ARMATURE}" damping="{JOINT_DAMPING}"/>
  </default>
  <worldbody>
    <geom name="floor" type="plane" size="20 2 0.1" contype="1" conaffinity="1"/>
    <body name="torso" pos="0 0 0">
      <joint name="rootx" type="slide" axis="1 0 0" armature="0" damping="0"/>
      <joint name="rootz" type="slide" axis="0 0 1" armature="0" damping="0"/>
      <joint name="rooty" type="hinge" axis="0 1 0" armature="0" damping="0"/>
      <geom name="torso" type="capsule" fromto="0 0 0 0 0 {2 * TORSO_HALF_LENGTH}" size="{TORSO_RADIUS}"
            mass="{MASSES['torso']}" contype="1" conaffinity="1"/>
      <body name="thigh">
        <joint name="hip" type="hinge" axis="0 1 0" range="-1.5 1.5"/>
        <geom type="capsule" fromto="0 0 0 0 0 {-l1}" size="0.025" mass="{MASSES['thigh']}"/>
        <body name="shank" pos="0 0 {-l1}">
          <joint name="knee" type="hinge" axis="0 1 0" range="-2.5 0"/>
          <geom type="capsule" fromto="0 0 0 0 0 {-l2}" size="0.02" mass="{MASSES['shank']}"/>
          <geom name="toe" type="sphere" pos="{toe[0]:.6f} 0 {toe[1]:.6f}" size="{FOOT_RADIUS}" mass="{MASSES['foot'] / 2}"
                contype="1" conaffinity="1"/>
          <geom name="heel" type="sphere" pos="{heel[0]:.6f} 0 {heel[1]:.6f}" size="{FOOT_RADIUS}" mass="{MASSES['foot'] / 2}"
                contype="1" conaffinity="1"/>
        </body>
      </body>
    </body>
  </worldbody>
  <contact>
    <exclude body1="torso" body2="shank"/>
  </contact>
  <actuator>
    <motor name="hip" joint="hip"/>
    <motor name="knee" joint="knee"/>
  </actuator>
  <keyframe>
    <key name="default" qpos="{' '.join(f'{v:.6f}' for v in standing_qpos())}"/>
  </keyframe>
</mujoco>"""


def build_hopper(variant: HopperVariant = "train", contact: str | None = None, physics_dt: float | None = None) -> mujoco.MjModel:
    """Compile a hopper variant (see the module docstring)."""
    return mujoco.MjModel.from_xml_string(hopper_xml(variant, contact, physics_dt))


def model_info(model: mujoco.MjModel) -> HopperModelInfo:
    return HopperModelInfo(model.geom("floor").id, (model.geom("toe").id, model.geom("heel").id), model.geom("torso").id)
