"""Imitation reward terms and terminations on hand-built states (numpy and jax.numpy agree)."""

import dataclasses

import jax.numpy as jnp
import mujoco
import numpy as np
import pytest

from bcg_robot.errors import ConfigError
from bcg_robot.paths import share_file
from bcg_train.learn.config import load_train_config
from bcg_train.tasks.config import PushRecoveryConfig, RewardConfig, RewardTerm, TerminationConfig
from bcg_train.tasks.rewards import (TERMINATION_REASONS, TrackedState, anchor_to_heading, feet_key_index, key_body_error, reference_in_frame,
                                     reference_root_in_frame, relax_after_push, reward_terms, terminated, termination_reasons, tracking_errors, yaw)

N, K = 29, 10


def _state(**changes) -> TrackedState:
    base = TrackedState(
        root_pos=np.array([0.0, 0.0, 0.78]),
        root_quat=np.array([1.0, 0.0, 0.0, 0.0]),
        root_lin_vel=np.zeros(3),
        root_ang_vel=np.zeros(3),
        joint_pos=np.zeros(N),
        joint_vel=np.zeros(N),
        key_body_pos=np.tile([0.0, 0.0, 0.5], (K, 1)),
    )
    return dataclasses.replace(base, **changes)


def _quat_about_x(angle: float) -> np.ndarray:
    return np.array([np.cos(angle / 2), np.sin(angle / 2), 0.0, 0.0])


def test_perfect_tracking_gives_the_sum_of_tracking_weights():
    cfg = RewardConfig()
    ref = _state()
    terms = reward_terms(cfg, ref, ref, np.zeros(N), np.zeros(N))
    tracking = ("joint_pos", "joint_vel", "root_pos", "root_orient", "root_vel", "key_body")
    for name in tracking:
        assert terms[name] == pytest.approx(getattr(cfg, name).weight)
    assert terms["action_rate"] == 0.0


def test_each_term_reacts_to_its_own_error_only():
    cfg = RewardConfig()
    ref = _state()
    cases = {
        "joint_pos": _state(joint_pos=np.full(N, 0.1)),
        "joint_vel": _state(joint_vel=np.full(N, 1.0)),
        "root_pos": _state(root_pos=np.array([0.1, 0.0, 0.78])),
        "root_orient": _state(root_quat=_quat_about_x(0.2)),
        "root_vel": _state(root_ang_vel=np.array([0.0, 0.0, 1.0])),
        "key_body": _state(key_body_pos=np.tile([0.1, 0.0, 0.5], (K, 1))),
    }
    for name, robot in cases.items():
        terms = reward_terms(cfg, robot, ref, np.zeros(N), np.zeros(N))
        errors = tracking_errors(robot, ref)
        term = getattr(cfg, name)
        assert terms[name] == pytest.approx(term.weight * np.exp(-errors[name] / term.sigma))
        assert terms[name] < term.weight
        others = [n for n in cases if n != name and terms[n] < getattr(cfg, n).weight - 1e-12]
        assert others == [], f"{name} error changed {others}"
    # known values: joint_pos error 29 * 0.01 = 0.29; orientation 0.2 rad -> ~0.04 rad^2
    assert tracking_errors(cases["joint_pos"], ref)["joint_pos"] == pytest.approx(0.29)
    assert tracking_errors(cases["root_orient"], ref)["root_orient"] == pytest.approx(0.2**2, rel=0.01)


def test_root_height_term_sees_the_height_only_and_is_off_by_default():
    cfg = RewardConfig(root_height=RewardTerm(0.2, 0.05**2))
    ref = _state()
    drifted = _state(root_pos=np.array([0.3, -0.2, 0.78]))
    low = _state(root_pos=np.array([0.0, 0.0, 0.73]))  # 5 cm short of the apex: one sigma
    assert reward_terms(cfg, drifted, ref, np.zeros(N), np.zeros(N))["root_height"] == pytest.approx(0.2)
    assert reward_terms(cfg, low, ref, np.zeros(N), np.zeros(N))["root_height"] == pytest.approx(0.2 * np.exp(-1.0))
    default = reward_terms(RewardConfig(), low, ref, np.zeros(N), np.zeros(N))
    assert default["root_height"] == 0.0 and default["root_pos"] < RewardConfig().root_pos.weight


def test_vertical_velocity_term_sees_the_vertical_root_velocity_only_and_is_off_by_default():
    cfg = RewardConfig(root_vel_z=RewardTerm(0.3, 0.2**2))
    ref = _state(root_lin_vel=np.array([0.0, 0.0, 1.2]))  # pushing off
    sideways = _state(root_lin_vel=np.array([0.5, -0.4, 1.2]), root_ang_vel=np.array([0.0, 2.0, 0.0]))
    slow = _state(root_lin_vel=np.array([0.0, 0.0, 1.0]))  # 0.2 m/s short: one sigma
    assert reward_terms(cfg, sideways, ref, np.zeros(N), np.zeros(N))["root_vel_z"] == pytest.approx(0.3)
    assert reward_terms(cfg, slow, ref, np.zeros(N), np.zeros(N))["root_vel_z"] == pytest.approx(0.3 * np.exp(-1.0))
    default = reward_terms(RewardConfig(), slow, ref, np.zeros(N), np.zeros(N))
    assert default["root_vel_z"] == 0.0 and default["root_vel"] < RewardConfig().root_vel.weight


def test_feet_height_term_sees_the_feet_heights_only_and_is_off_by_default():
    cfg = RewardConfig(feet_height=RewardTerm(0.6, 0.0032))
    feet = (3, 7)
    flying = np.tile([0.0, 0.0, 0.5], (K, 1))
    flying[list(feet), 2] += 0.07  # the reference's feet 7 cm up in flight
    ref = _state(key_body_pos=flying)
    sideways = flying.copy()
    sideways[list(feet), :2] += [0.1, -0.2]  # feet at the right height, moved horizontally
    sideways[[0, 5], 2] -= 0.3  # other key bodies lower: not the feet
    short = flying.copy()
    short[list(feet), 2] -= 0.04  # each foot 4 cm short: 2 * 0.04^2 = one sigma
    assert reward_terms(cfg, _state(key_body_pos=sideways), ref, np.zeros(N), np.zeros(N), feet)["feet_height"] == pytest.approx(0.6)
    assert reward_terms(cfg, _state(key_body_pos=short), ref, np.zeros(N), np.zeros(N), feet)["feet_height"] == pytest.approx(0.6 * np.exp(-1.0))
    jax_terms = reward_terms(cfg, _state(key_body_pos=jnp.asarray(short)), _state(key_body_pos=jnp.asarray(flying)), jnp.zeros(N), jnp.zeros(N),
                             feet, xp=jnp)
    assert float(jax_terms["feet_height"]) == pytest.approx(0.6 * np.exp(-1.0), rel=1e-5)
    default = reward_terms(RewardConfig(), _state(key_body_pos=short), ref, np.zeros(N), np.zeros(N), feet)
    assert default["feet_height"] == 0.0 and default["key_body"] < RewardConfig().key_body.weight
    with pytest.raises(ValueError, match="no feet"):  # not a constant full weight
        reward_terms(cfg, _state(key_body_pos=short), ref, np.zeros(N), np.zeros(N))


def test_feet_are_found_among_the_key_bodies_by_name():
    from bcg_robot.config import load_robot_config
    from bcg_train.motion.reference import KEY_BODIES

    robot = load_robot_config()
    index = feet_key_index(KEY_BODIES, robot)
    assert [KEY_BODIES[i] for i in index] == list(robot.feet)
    with pytest.raises(ValueError, match="not key bodies"):
        feet_key_index(tuple(b for b in KEY_BODIES if b != robot.feet[0]), robot)


def test_action_rate_penalty_and_weights_scale_from_config():
    cfg = RewardConfig(action_rate=RewardTerm(-0.5), alive=RewardTerm(2.0), joint_pos=RewardTerm(3.0, 0.5))
    ref = _state()
    terms = reward_terms(cfg, ref, ref, np.full(N, 0.2), np.zeros(N))
    assert terms["action_rate"] == pytest.approx(-0.5 * N * 0.04)
    assert terms["alive"] == pytest.approx(2.0)
    assert terms["joint_pos"] == pytest.approx(3.0)


def test_numpy_and_jax_agree_on_a_batch():
    cfg = RewardConfig()
    rng = np.random.default_rng(0)
    base = _state()
    robot = TrackedState(*(getattr(base, f.name) + 0.1 * rng.normal(size=(4,) + np.shape(getattr(base, f.name))) for f in dataclasses.fields(TrackedState)))
    robot = dataclasses.replace(robot, root_quat=robot.root_quat / np.linalg.norm(robot.root_quat, axis=-1, keepdims=True))
    ref = _state()
    a, b = rng.normal(size=(4, N)), rng.normal(size=(4, N))
    t_np = reward_terms(cfg, robot, ref, a, b)
    robot_j = TrackedState(*(jnp.asarray(getattr(robot, f.name)) for f in dataclasses.fields(TrackedState)))
    t_jax = reward_terms(cfg, robot_j, ref, jnp.asarray(a), jnp.asarray(b), xp=jnp)
    for name in t_np:
        np.testing.assert_allclose(np.asarray(t_jax[name]), t_np[name], rtol=1e-5, atol=1e-6)


def test_terminations():
    cfg = TerminationConfig()
    ref = _state()
    assert not terminated(cfg, ref, ref)
    assert terminated(cfg, _state(root_pos=np.array([0.0, 0.0, 0.29]), key_body_pos=ref.key_body_pos), ref)
    assert not terminated(cfg, _state(root_quat=_quat_about_x(0.9)), ref)
    assert terminated(cfg, _state(root_quat=_quat_about_x(1.1)), ref)
    lost = _state(key_body_pos=ref.key_body_pos + np.array([0.6, 0.0, 0.0]))
    assert key_body_error(lost, ref) == pytest.approx(0.6)
    assert terminated(cfg, lost, ref)
    cases = {"low": _state(root_pos=np.array([0.0, 0.0, 0.29]), key_body_pos=ref.key_body_pos),
             "tilted": _state(root_quat=_quat_about_x(1.1)), "lost": lost}
    for reason, robot in cases.items():  # each case trips its own test and no other
        hits = termination_reasons(cfg, robot, ref)
        assert set(hits) == set(TERMINATION_REASONS) and [name for name in hits if hits[name]] == [reason]


def _quat_about_z(angle: float) -> np.ndarray:
    return np.array([np.cos(angle / 2), 0.0, 0.0, np.sin(angle / 2)])


def _moved_and_turned(state: TrackedState, shift_xy, angle: float) -> TrackedState:
    """``state`` turned by ``angle`` about world z around its root, then moved by ``shift_xy``."""
    c, s = np.cos(angle), np.sin(angle)
    rz = np.array([[c, -s, 0.0], [s, c, 0.0], [0.0, 0.0, 1.0]])
    root = state.root_pos + np.array([*shift_xy, 0.0])
    quat = np.zeros(4)
    mujoco.mju_mulQuat(quat, _quat_about_z(angle), state.root_quat)  # MuJoCo's product, not the one under test
    return dataclasses.replace(state, root_pos=root, root_quat=quat, root_lin_vel=rz @ state.root_lin_vel,
                               key_body_pos=(state.key_body_pos - state.root_pos) @ rz.T + root)


def _squatting_ref() -> TrackedState:
    rng = np.random.default_rng(0)
    return _state(root_quat=_quat_about_x(0.1), root_lin_vel=np.array([0.2, -0.1, 0.05]),
                  root_ang_vel=np.array([0.1, 0.2, 0.3]), key_body_pos=rng.normal([0.0, 0.0, 0.5], 0.2, (K, 3)))


def test_heading_frame_forgives_a_push_that_moves_and_turns_the_robot():
    ref = _squatting_ref()
    robot = _moved_and_turned(ref, (0.4, -0.3), 0.7)  # the same motion, elsewhere, facing elsewhere
    assert yaw(robot.root_quat) - yaw(ref.root_quat) == pytest.approx(0.7)
    world = tracking_errors(robot, reference_in_frame("world", ref, robot))
    assert world["root_pos"] > 0.2 and world["key_body"] > 0.05 and world["root_orient"] > 0.1
    anchored = reference_in_frame("heading", ref, robot)
    for name, err in tracking_errors(robot, anchored).items():
        assert err == pytest.approx(0.0, abs=1e-12), name
    assert key_body_error(robot, anchored) == pytest.approx(0.0, abs=1e-5)


def test_heading_frame_keeps_height_tilt_and_posture_errors():
    ref = _squatting_ref()
    robot = _moved_and_turned(ref, (0.4, -0.3), 0.7)
    lower = dataclasses.replace(robot, root_pos=robot.root_pos - [0.0, 0.0, 0.05])
    assert tracking_errors(lower, anchor_to_heading(ref, lower))["root_pos"] == pytest.approx(0.05**2)
    tilted = dataclasses.replace(robot, root_quat=_moved_and_turned(_state(root_quat=_quat_about_x(0.4)), (0, 0), 0.7).root_quat)
    assert tracking_errors(tilted, anchor_to_heading(ref, tilted))["root_orient"] == pytest.approx(
        tracking_errors(_state(root_quat=_quat_about_x(0.4)), _state(root_quat=_quat_about_x(0.1)))["root_orient"])
    bent = dataclasses.replace(robot, key_body_pos=robot.key_body_pos + [0.0, 0.0, 0.1])
    assert key_body_error(bent, anchor_to_heading(ref, bent)) == pytest.approx(0.1)
    fallen = dataclasses.replace(robot, root_pos=robot.root_pos * [1.0, 1.0, 0.3])
    assert terminated(TerminationConfig(), fallen, reference_in_frame("heading", ref, fallen))


def test_the_root_distance_bound_measures_in_the_reference_frame():
    """``sim_bounds.max_root_distance`` (ImitationTask.sim_failed): under ``heading`` the reference
    stands where the robot stands, so a robot pushed 5 m away is no simulation failure there; in
    the world frame it is. Its height still counts in both."""
    from bcg_train.sim.failure import SimBounds, state_failed

    ref_root = jnp.array([0.0, 0.0, 0.78])
    roots = jnp.array([[5.0, 0.0, 0.78], [0.1, 0.0, 0.78], [0.0, 0.0, 4.5]])  # pushed away; near; 3.7 m above
    qpos, qvel = jnp.concatenate([roots, jnp.zeros((3, 4))], axis=1), jnp.zeros((3, 6))
    bounds = SimBounds(max_root_height=0.0, max_root_distance=3.0)  # only the distance bound

    def failed(frame):
        reference = reference_root_in_frame(frame, ref_root, roots, jnp)
        return state_failed(bounds, qpos, qvel, roots, qvel[:, :3], jnp.zeros((3, 1)), [1.0], reference).tolist()

    assert failed("world") == [True, False, True]
    assert failed("heading") == [False, False, True]
    per_env = jnp.tile(ref_root, (3, 1))  # the task's reference: one row per environment
    for frame in ("world", "heading"):
        np.testing.assert_array_equal(reference_root_in_frame(frame, per_env, roots, jnp),
                                      reference_root_in_frame(frame, ref_root, roots, jnp))
        assert reference_root_in_frame(frame, per_env, roots[0], jnp).shape == (3, 3)
    np.testing.assert_array_equal(reference_root_in_frame("heading", ref_root, roots, jnp)[:, 2], jnp.full(3, ref_root[2]))
    with pytest.raises(ValueError, match="reference_frame"):
        reference_root_in_frame("body", ref_root, roots, jnp)


def test_heading_frame_numpy_and_jax_agree_and_unknown_frames_are_errors():
    ref = _squatting_ref()
    robot = dataclasses.replace(_moved_and_turned(ref, (0.1, 0.2), -2.5), joint_pos=np.full(N, 0.05))
    a = anchor_to_heading(ref, robot)
    b = anchor_to_heading(jax_tree(ref), jax_tree(robot), xp=jnp)
    for f in dataclasses.fields(TrackedState):
        np.testing.assert_allclose(np.asarray(getattr(b, f.name)), getattr(a, f.name), atol=1e-5)
    with pytest.raises(ValueError, match="reference_frame: unknown 'pelvis'"):
        reference_in_frame("pelvis", ref, robot)


def jax_tree(state: TrackedState) -> TrackedState:
    return TrackedState(**{f.name: jnp.asarray(getattr(state, f.name), jnp.float32) for f in dataclasses.fields(TrackedState)})


def test_train_config_rejects_unknown_keys_and_bad_values(tmp_path):
    good = share_file("config/train/stand.yaml")
    cfg = load_train_config(good, "cpu-small")
    assert cfg.shac.num_envs == 8 and cfg.shac.gamma == 0.99 and cfg.task.domain.friction == (0.3, 1.2)
    bad = tmp_path / "bad.yaml"
    bad.write_text(good.read_text().replace("    joint_pos:\n      weight: 0.3", "    joint_pos:\n      wieght: 0.3"))
    with pytest.raises(ConfigError, match=r"unknown key 'task.rewards.joint_pos.wieght'"):
        load_train_config(bad)
    bad.write_text(good.read_text().replace("friction:\n    - 0.3\n    - 1.2", "friction:\n    - 1.3\n    - 1.2"))
    with pytest.raises(ConfigError, match="friction': lower bound 1.3 above upper bound 1.2"):
        load_train_config(bad)
    with pytest.raises(ConfigError, match="unknown preset 'tpu'"):
        load_train_config(good, "tpu")


def test_solver_iterations_reach_the_train_model_and_bad_counts_are_errors(tmp_path):
    from bcg_robot.config import load_robot_config
    from bcg_robot.model import TRAIN_LS_ITERATIONS, TRAIN_SOLVER_ITERATIONS
    from bcg_train.tasks.imitation import training_model

    robot = load_robot_config()
    squat = load_train_config(share_file("config/train/squat.yaml"))
    model = training_model(squat.task, robot)
    assert (model.opt.iterations, model.opt.ls_iterations) == (TRAIN_SOLVER_ITERATIONS, TRAIN_LS_ITERATIONS)
    child = tmp_path / "child.yaml"
    child.write_text(f"extends: {share_file('config/train/squat.yaml')}\ntask:\n  solver_iterations: 10\n  ls_iterations: 8\n")
    model = training_model(load_train_config(child).task, robot)
    assert (model.opt.iterations, model.opt.ls_iterations) == (10, 8)
    child.write_text(f"extends: {share_file('config/train/squat.yaml')}\ntask:\n  solver_iterations: 0\n")
    with pytest.raises(ConfigError, match="solver_iterations must be >= 1, got 0"):
        load_train_config(child)


def test_train_config_extends_another_file(tmp_path):
    stand = load_train_config(share_file("config/train/stand.yaml"))
    plain = load_train_config(share_file("config/train/stand_plain.yaml"))
    squat = load_train_config(share_file("config/train/squat.yaml"))
    assert plain.task.bcg.mode.value == "plain" and stand.task.bcg.mode.value == "bcg"
    assert plain.task.rewards == stand.task.rewards and plain.shac == stand.shac  # the rest comes from stand.yaml
    assert squat.task.motion.endswith("squat.csv") and squat.task.episode_length_s == 8.0 and squat.task.domain == stand.task.domain
    child = tmp_path / "child.yaml"
    child.write_text(f"extends: {share_file('config/train/stand.yaml')}\ntask:\n  rewards:\n    joint_pos:\n      wieght: 1.0\n")
    with pytest.raises(ConfigError, match=r"unknown key 'task.rewards.joint_pos.wieght'"):
        load_train_config(child)
    (tmp_path / "a.yaml").write_text("extends: b.yaml\n")
    (tmp_path / "b.yaml").write_text("extends: a.yaml\n")
    with pytest.raises(ConfigError, match=r"a.yaml: 'extends: b.yaml' forms a cycle|b.yaml: 'extends: a.yaml' forms a cycle"):
        load_train_config(tmp_path / "a.yaml")
    (tmp_path / "c.yaml").write_text("extends: missing.yaml\n")
    with pytest.raises(ConfigError, match=r"c.yaml: 'extends: missing.yaml': no such file \("):  # names the file that wants it
        load_train_config(tmp_path / "c.yaml")


TASKS = sorted(p.stem for p in share_file("config/train").glob("*.yaml"))


def test_every_shipped_motion_has_a_task_config():
    assert {"stand", "stand_plain", "squat", "step_in_place", "jump"} <= set(TASKS)


@pytest.mark.parametrize("task", TASKS)
def test_every_task_config_loads_with_every_preset_and_fits_its_motion(task):
    from bcg_robot.config import load_robot_config
    from bcg_train.learn.config import PRESETS
    from bcg_train.motion.loader import load_motion_csv

    path = share_file(f"config/train/{task}.yaml")
    for preset in (None, *PRESETS):
        cfg = load_train_config(path, preset)
        cfg.validate()
    clip = load_motion_csv(share_file(cfg.task.motion), load_robot_config())
    # an episode covers the clip and does not run past its end (by more than a frame)
    assert clip.duration_s - 0.1 <= cfg.task.episode_length_s <= clip.duration_s + 1.0 / clip.fps


def test_push_recovery_scales_only_the_named_terms_of_recovering_environments():
    cfg = PushRecoveryConfig(window_s=1.0, scale=0.25, terms=("joint_pos", "key_body"))
    ref = _state()
    robot = _state(joint_pos=np.full(N, 0.1), root_pos=np.array([0.0, 0.0, 0.7]))
    terms = reward_terms(RewardConfig(), robot, ref, np.ones(N), np.zeros(N))
    batch = {name: np.stack([v, v]) for name, v in terms.items()}
    recovering = np.array([True, False])
    relaxed = relax_after_push(cfg, batch, recovering)
    for name, value in batch.items():
        factor = 0.25 if name in cfg.terms else 1.0
        np.testing.assert_allclose(relaxed[name], [factor * value[0], value[1]], err_msg=name)
    jax_relaxed = relax_after_push(cfg, {n: jnp.asarray(v) for n, v in batch.items()}, jnp.asarray(recovering), xp=jnp)
    for name in batch:
        np.testing.assert_allclose(np.asarray(jax_relaxed[name]), relaxed[name], rtol=1e-6)


def test_push_recovery_config_is_validated(tmp_path):
    good = share_file("config/train/stand.yaml").read_text()
    assert load_train_config(share_file("config/train/stand.yaml")).task.push_recovery.window_s == 0.0  # off by default
    cfg_file = tmp_path / "recovery.yaml"
    for block, message in (("window_s: -1.0", "push_recovery.window_s must be >= 0"),
                           ("scale: 1.5", r"push_recovery.scale must be in \[0, 1\]"),
                           ("terms: [joint_pos, posture]", "push_recovery.terms: unknown reward term 'posture'")):
        cfg_file.write_text(good.replace("task:\n", f"task:\n  push_recovery:\n    {block}\n", 1))
        with pytest.raises(ConfigError, match=message):
            load_train_config(cfg_file)
    cfg_file.write_text(good.replace("task:\n", "task:\n  push_recovery:\n    window_s: 1.0\n    scale: 0.2\n", 1))
    loaded = load_train_config(cfg_file).task.push_recovery
    assert loaded.window_s == 1.0 and loaded.scale == 0.2 and "key_body" in loaded.terms
