"""G1 model variants built with ``mujoco.MjSpec`` from the official description.

Two variants, one builder:

``train``
    For MJX and its gradients: primitive colliders only (meshes removed), each foot
    as 4 contact spheres, Euler integrator, Newton solver with 4 iterations by default (run by
    :mod:`bcg_train.sim.solver` under ``scan`` so reverse mode works; with 1 iteration
    MJX lets the G1 diverge), physics step 200-250 Hz, contact stiffness
    from a preset. Only feet, pelvis, torso and head touch the floor; no self-collision.

``bridge``
    For sim-to-sim in MuJoCo C: the description's own colliders (capsule feet) with stiff
    contact, implicitfast + Newton, 500 Hz-1 kHz, visual meshes, IMU sensors.

Both get one motor actuator per joint in motor order (``ctrlrange`` = +-effort limit,
named like the config's joints), joint armature from the robot config and a keyframe
``default`` standing at the default pose with the feet touching the floor. The PD law
itself lives in :mod:`bcg_robot.pd` and is applied by whoever steps the model, so gains
can change per command exactly as on the robot.

Contact stiffness and REFSAFE. MuJoCo's contact model is a spring-damper with time
constant ``solref[0]``. With the REFSAFE flag enabled (the default) MuJoCo and MJX
silently raise any time constant below ``2 * timestep``. Presets say explicitly whether
they keep REFSAFE: the ``stiff`` preset disables it, so its time constant (7.5 ms, 1.5
physics steps at 200 Hz, below REFSAFE's floor of 10 ms) is really used. At 5 ms (one
step) explicit Euler makes the G1 bounce off the floor within 2 s, so 1.5 steps is the
stiffest contact this integrator holds; :func:`effective_contact_timeconst` reports what the
compiled model will apply.
"""

from __future__ import annotations

import dataclasses
from typing import Literal

import mujoco
import numpy as np

from bcg_robot.config import RobotConfig
from bcg_robot.metrics import FootFloorGeoms

Variant = Literal["train", "bridge"]
ContactName = Literal["soft", "default", "stiff"]


@dataclasses.dataclass(frozen=True)
class ContactPreset:
    timeconst: float  # solref[0], s
    dampratio: float  # solref[1]
    solimp: tuple[float, float, float, float, float]
    refsafe: bool  # keep MuJoCo's clamp timeconst >= 2 * timestep


CONTACT_PRESETS: dict[str, ContactPreset] = {
    "soft": ContactPreset(0.04, 1.0, (0.8, 0.95, 0.002, 0.5, 2.0), refsafe=True),
    "default": ContactPreset(0.02, 1.0, (0.9, 0.95, 0.001, 0.5, 2.0), refsafe=True),
    "stiff": ContactPreset(0.0075, 1.0, (0.95, 0.99, 0.001, 0.5, 2.0), refsafe=False),
}

TRAIN_DT_RANGE = (1 / 250, 1 / 200)
# Newton and line-search iterations of the train variant (defaults; a task may set others).
# One Newton iteration lets the G1 in MJX go NaN (float32) under 0.05 rad action noise; 2-20
# keep it finite (measured on the standing G1). But finite is not faithful: with 3 a squat
# policy's MJX episodes end 3-6x as often as in MuJoCo C on the same model, with 4, 6 or 10
# as often (docs/results/mjx-vs-c-2026-12-04/; MuJoCo C itself is fine with 3). 4 also made
# a SHAC+BCG iteration 2.7x cheaper: the unconverged solve's force spikes triggered bundles
# (docs/results/solver-iterations-cost-2026-12-04/).
TRAIN_SOLVER_ITERATIONS = 4
TRAIN_LS_ITERATIONS = 4
BRIDGE_DT_RANGE = (1 / 1000, 1 / 500)

# Foot contact spheres in the ankle-roll frame (x forward, y left, z up), metres.
FOOT_SPHERE_RADIUS = 0.015
FOOT_SPHERE_XY = ((0.12, 0.025), (0.12, -0.025), (-0.05, 0.025), (-0.05, -0.025))
FOOT_SPHERE_Z = -0.02
TRAIN_BODY_COLLIDERS = ("pelvis_collision", "torso_collision", "head_collision")

FLOOR_NAME = "floor"
# MuJoCo warnings after which it has reset the simulation itself (mj_checkPos, mj_checkVel,
# mj_checkAcc), or zeroed every actuator's control because one was not finite (BADCTRL: all
# motors limp for the step while the state stays finite and upright)
UNSTABLE_WARNINGS = (mujoco.mjtWarning.mjWARN_BADQPOS, mujoco.mjtWarning.mjWARN_BADQVEL, mujoco.mjtWarning.mjWARN_BADQACC,
                     mujoco.mjtWarning.mjWARN_BADCTRL)


def simulation_diverged(data: mujoco.MjData) -> bool:
    """The state is NaN, or MuJoCo reported an unstable step since ``data`` was made: bad
    accelerations, or positions or velocities past its limits (MuJoCo then resets the data
    itself, to the model's initial pose: an upright, finite robot that no fall or NaN check
    would notice), or a non-finite control (MuJoCo zeroes every control: all motors limp, no
    state check would notice). The sim bridge and ``bcg-eval`` both ask this."""
    unstable = any(data.warning[w].number > 0 for w in UNSTABLE_WARNINGS)
    return bool(unstable or not (np.isfinite(data.qpos).all() and np.isfinite(data.qvel).all()))


def refresh_sensors(model: mujoco.MjModel, data: mujoco.MjData) -> None:
    """Recompute the kinematics and the position and velocity sensors (IMU quaternion and gyro)
    on the current state. ``mj_step`` computes them in its forward pass, before it integrates:
    read after it, they (and ``xpos``) are one physics step older than the joints beside them,
    where the training model's observation reads the pelvis' orientation and rate off the
    current state. Only kinematics: the next ``mj_step`` recomputes all of it from ``qpos`` and
    ``qvel``, so the trajectory is unchanged. The accelerometer stays the last step's: an
    acceleration is only known from a step. The sim bridge and ``bcg-eval`` both read their
    robot's sensors through this."""
    mujoco.mj_kinematics(model, data)
    mujoco.mj_comPos(model, data)
    mujoco.mj_sensorPos(model, data)
    mujoco.mj_comVel(model, data)
    mujoco.mj_subtreeVel(model, data)  # mj_sensorVel would reuse mj_step's (its flag is still set)
    mujoco.mj_sensorVel(model, data)


def foot_sphere_name(foot_body: str, k: int) -> str:
    return f"{foot_body}_sphere{k}"


def check_physics_dt(variant: str, dt: float, name: str | None = None) -> None:
    """A ValueError unless ``dt`` lies in the variant's physics step range (``TRAIN_DT_RANGE``,
    ``BRIDGE_DT_RANGE``); CLIs and configs that take a physics step check it with this before
    any work. ``name``: what the message calls the value (default ``<variant> physics_dt``)."""
    lo, hi = TRAIN_DT_RANGE if variant == "train" else BRIDGE_DT_RANGE
    if not lo - 1e-12 <= dt <= hi + 1e-12:
        raise ValueError(f"{name or variant + ' physics_dt'} {dt} outside [{lo:.4g}, {hi:.4g}] s")


def _contact_geoms(spec: mujoco.MjSpec) -> list:
    return [g for g in spec.geoms if g.contype or g.conaffinity]


def _apply_contact(spec: mujoco.MjSpec, preset: ContactPreset, dt: float) -> None:
    for geom in _contact_geoms(spec):
        geom.solref = [preset.timeconst, preset.dampratio]
        geom.solimp = list(preset.solimp)
    if not preset.refsafe:
        spec.option.disableflags |= mujoco.mjtDisableBit.mjDSBL_REFSAFE


def effective_contact_timeconst(model: mujoco.MjModel, geom_id: int) -> float:
    """The contact time constant MuJoCo will really use for ``geom_id`` (REFSAFE applied)."""
    tc = float(model.geom_solref[geom_id, 0])
    if not model.opt.disableflags & mujoco.mjtDisableBit.mjDSBL_REFSAFE:
        tc = max(tc, 2 * model.opt.timestep)
    return tc


def _add_floor(spec: mujoco.MjSpec, visual: bool) -> None:
    floor = spec.worldbody.add_geom(
        name=FLOOR_NAME, type=mujoco.mjtGeom.mjGEOM_PLANE, size=[0, 0, 0.05], contype=1, conaffinity=0
    )
    floor.friction = [1.0, 0.005, 0.0001]
    if visual:
        tex = spec.add_texture(
            name="grid", type=mujoco.mjtTexture.mjTEXTURE_2D, builtin=mujoco.mjtBuiltin.mjBUILTIN_CHECKER,
            rgb1=[0.25, 0.3, 0.35], rgb2=[0.15, 0.2, 0.25], width=300, height=300,
        )
        spec.add_material(name="grid", texrepeat=[8, 8], reflectance=0.1).textures[mujoco.mjtTextureRole.mjTEXROLE_RGB] = tex.name
        floor.material = "grid"
        spec.worldbody.add_light(pos=[0, 0, 3.5], dir=[0, 0, -1], castshadow=False)


def _set_robot_collision_filter(spec: mujoco.MjSpec, keep: set[str] | None) -> None:
    """Robot colliders touch the floor only (contype 0, conaffinity 1); no self-collision."""
    for geom in spec.geoms:
        if geom.name == FLOOR_NAME or not (geom.contype or geom.conaffinity):
            continue
        touches = keep is None or geom.name in keep
        geom.contype = 0
        geom.conaffinity = 1 if touches else 0


def _strip_meshes(spec: mujoco.MjSpec) -> None:
    for geom in [g for g in spec.geoms if g.type == mujoco.mjtGeom.mjGEOM_MESH]:
        spec.delete(geom)
    for mesh in list(spec.meshes):
        spec.delete(mesh)


def _replace_feet_with_spheres(spec: mujoco.MjSpec, cfg: RobotConfig) -> list[str]:
    names = []
    for foot in cfg.feet:
        body = spec.body(foot)
        for geom in [g for g in spec.geoms if g.parent.name == foot and (g.contype or g.conaffinity)]:
            spec.delete(geom)
        for k, (x, y) in enumerate(FOOT_SPHERE_XY):
            name = foot_sphere_name(foot, k)
            body.add_geom(
                name=name, type=mujoco.mjtGeom.mjGEOM_SPHERE, size=[FOOT_SPHERE_RADIUS, 0, 0],
                pos=[x, y, FOOT_SPHERE_Z], contype=0, conaffinity=1, group=3, rgba=[0.8, 0.2, 0.2, 1],
            )
            names.append(name)
    return names


def _add_actuators(spec: mujoco.MjSpec, cfg: RobotConfig) -> None:
    for name, mjcf_name, effort, armature in zip(
        cfg.joint_names, cfg.mjcf_joint_names, cfg.effort_limits, cfg.armature
    ):
        spec.joint(mjcf_name).armature = armature
        spec.add_actuator(
            name=name, target=mjcf_name, trntype=mujoco.mjtTrn.mjTRN_JOINT,
            ctrllimited=True, ctrlrange=[-effort, effort],
        )


def _add_imu_sensors(spec: mujoco.MjSpec, cfg: RobotConfig) -> None:
    site = cfg.imu_site
    spec.add_sensor(name="imu_quat", type=mujoco.mjtSensor.mjSENS_FRAMEQUAT, objtype=mujoco.mjtObj.mjOBJ_SITE, objname=site)
    spec.add_sensor(name="imu_gyro", type=mujoco.mjtSensor.mjSENS_GYRO, objtype=mujoco.mjtObj.mjOBJ_SITE, objname=site)
    spec.add_sensor(name="imu_acc", type=mujoco.mjtSensor.mjSENS_ACCELEROMETER, objtype=mujoco.mjtObj.mjOBJ_SITE, objname=site)


def _standing_height(spec: mujoco.MjSpec, cfg: RobotConfig) -> float:
    """Root height at which the lowest foot collider just touches the floor at the default pose."""
    model = spec.compile()
    data = mujoco.MjData(model)
    data.qpos[:] = model.qpos0
    data.qpos[2] = 0.0
    for name, q in zip(cfg.mjcf_joint_names, cfg.default_pose):
        data.qpos[model.jnt_qposadr[model.joint(name).id]] = q
    mujoco.mj_kinematics(model, data)
    lowest = np.inf
    foot_ids = {model.body(f).id for f in cfg.feet}
    for g in range(model.ngeom):
        if model.geom_bodyid[g] not in foot_ids or not model.geom_conaffinity[g]:
            continue
        z, size = data.geom_xpos[g, 2], model.geom_size[g]
        if model.geom_type[g] == mujoco.mjtGeom.mjGEOM_SPHERE:
            lowest = min(lowest, z - size[0])
        elif model.geom_type[g] == mujoco.mjtGeom.mjGEOM_CAPSULE:
            lowest = min(lowest, z - abs(data.geom_xmat[g, 8]) * size[1] - size[0])
    if not np.isfinite(lowest):
        raise ValueError("no foot colliders found")
    return float(-lowest)


def default_qpos(model: mujoco.MjModel) -> np.ndarray:
    return model.key("default").qpos.copy()


def build_spec(
    cfg: RobotConfig,
    variant: Variant = "train",
    physics_dt: float | None = None,
    contact: ContactName | None = None,
    solver_iterations: int | None = None,
    ls_iterations: int | None = None,
) -> mujoco.MjSpec:
    if variant not in ("train", "bridge"):
        raise ValueError(f"unknown model variant '{variant}' (train | bridge)")
    if variant == "bridge" and (solver_iterations is not None or ls_iterations is not None):
        raise ValueError("solver_iterations / ls_iterations are settings of the train variant (the bridge runs MuJoCo's defaults)")
    for name, value in (("solver_iterations", solver_iterations), ("ls_iterations", ls_iterations)):
        if value is not None and value < 1:
            raise ValueError(f"{name} must be >= 1, got {value}")
    dt = physics_dt if physics_dt is not None else (0.005 if variant == "train" else 0.002)
    check_physics_dt(variant, dt)
    preset_name = contact if contact is not None else ("default" if variant == "train" else "stiff")
    if preset_name not in CONTACT_PRESETS:
        raise ValueError(f"unknown contact preset '{preset_name}' ({' | '.join(CONTACT_PRESETS)})")
    preset = CONTACT_PRESETS[preset_name]

    spec = mujoco.MjSpec.from_file(str(cfg.mjcf_path()))
    spec.modelname = f"{cfg.name}_{variant}"
    spec.option.timestep = dt
    if variant == "train":
        _strip_meshes(spec)
        feet = _replace_feet_with_spheres(spec, cfg)
        _set_robot_collision_filter(spec, set(feet) | set(TRAIN_BODY_COLLIDERS))
        spec.option.integrator = mujoco.mjtIntegrator.mjINT_EULER
        spec.option.solver = mujoco.mjtSolver.mjSOL_NEWTON
        spec.option.iterations = TRAIN_SOLVER_ITERATIONS if solver_iterations is None else solver_iterations
        spec.option.ls_iterations = TRAIN_LS_ITERATIONS if ls_iterations is None else ls_iterations
        # sparse mass matrix: MJX factors it in plain JAX, no batched LAPACK kernel
        # (those deadlock XLA's thread pool on 2-core CPUs; see bcg_train/sim/linalg.py)
        spec.option.jacobian = mujoco.mjtJacobian.mjJAC_SPARSE
    else:
        _set_robot_collision_filter(spec, None)
        spec.option.integrator = mujoco.mjtIntegrator.mjINT_IMPLICITFAST
        spec.option.solver = mujoco.mjtSolver.mjSOL_NEWTON
        _add_imu_sensors(spec, cfg)
    _add_floor(spec, visual=variant == "bridge")
    _apply_contact(spec, preset, dt)
    _add_actuators(spec, cfg)

    height = _standing_height(spec, cfg)
    qpos = np.concatenate([[0.0, 0.0, height, 1.0, 0.0, 0.0, 0.0], cfg.default_pose])
    spec.add_key(name="default", qpos=qpos.tolist(), ctrl=[0.0] * cfg.num_joints)
    return spec


def build_model(
    cfg: RobotConfig,
    variant: Variant = "train",
    physics_dt: float | None = None,
    contact: ContactName | None = None,
    solver_iterations: int | None = None,
    ls_iterations: int | None = None,
) -> mujoco.MjModel:
    """Compile a model variant. See the module docstring for what each variant is.
    ``solver_iterations`` / ``ls_iterations``: the train variant's Newton and line-search
    iterations (default :data:`TRAIN_SOLVER_ITERATIONS` / :data:`TRAIN_LS_ITERATIONS`)."""
    return build_spec(cfg, variant, physics_dt, contact, solver_iterations, ls_iterations).compile()


def joint_qpos_indices(model: mujoco.MjModel, cfg: RobotConfig) -> np.ndarray:
    """qpos addresses of the configured joints, in motor order."""
    return np.array([model.jnt_qposadr[model.joint(n).id] for n in cfg.mjcf_joint_names])


def joint_dof_indices(model: mujoco.MjModel, cfg: RobotConfig) -> np.ndarray:
    """qvel/dof addresses of the configured joints, in motor order."""
    return np.array([model.jnt_dofadr[model.joint(n).id] for n in cfg.mjcf_joint_names])


def foot_floor_geoms(model: mujoco.MjModel, cfg: RobotConfig) -> FootFloorGeoms:
    """The floor and the colliders of the configured foot bodies (for foot penetration)."""
    feet = {model.body(f).id for f in cfg.feet}
    foot_geoms = np.array([g for g in range(model.ngeom) if model.geom_bodyid[g] in feet], dtype=np.int64)
    return FootFloorGeoms(floor=model.geom(FLOOR_NAME).id, feet=foot_geoms)
