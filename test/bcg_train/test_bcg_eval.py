"""bcg-eval smoke: rolls the shipped policy (or, if none ships, a default-pose export) in the bridge model."""

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from bcg_robot.config import load_robot_config
from bcg_robot.contract import PolicyContract
from bcg_sim_bridge.policies import shipped_policy
from bcg_train.cli.evaluate import main as eval_main
from bcg_robot.onnx_graph import default_pose_weights, save_policy_onnx


def _policy(tmp_path: Path) -> Path:
    shipped = shipped_policy()
    if shipped is not None:
        return shipped
    robot = load_robot_config()
    contract = PolicyContract.for_robot(robot, motion_id="stand", motion_length_s=10.02)
    return save_policy_onnx(tmp_path / "default_stand.onnx", contract, default_pose_weights(contract))


def test_eval_smoke(tmp_path, capsys):
    policy = _policy(tmp_path)
    out = tmp_path / "eval"
    assert eval_main([str(policy), "--seeds", "2", "--duration", "1.0", "--out", str(out)]) == 0
    text = capsys.readouterr().out
    assert "falls 0/2" in text and "E_track" in text and "foot penetration" in text
    summary = json.loads((out / "summary.json").read_text())
    assert summary["falls"] == 0 and summary["seeds"] == 2
    assert 0.0 < summary["tracking_error_cm_mean"] < 10.0
    # root height against the reference's (stand: the default pose's pelvis height), next to E_track
    assert "root height error" in text and "root z err cm" in text
    z = summary["root_height_error_cm"]
    assert 0.0 <= z["mean"] <= z["max"] < 10.0
    assert all(0.0 <= s["root_height_error_cm"]["mean"] <= s["root_height_error_cm"]["max"] for s in summary["per_seed"])
    # by default bcg-eval reports on seeds held out from bcg-select-checkpoint's default selection seeds
    assert {s["seed"] for s in summary["per_seed"]} == {100, 101} and summary["first_seed"] == 100
    assert summary["per_seed"][0]["foot_penetration_bridge_mm"] > 0.0
    # standing is never airborne: at most the physics step or two before the start pose's feet settle onto the floor
    assert summary["longest_flight_s_mean"] < 0.01 and "longest flight" in text
    assert (out / "eval.png").stat().st_size > 1000
    # held-out seeds: the same domain draws as seed 7 of a longer run
    assert eval_main([str(policy), "--seeds", "1", "--first-seed", "7", "--duration", "0.2", "--out", str(tmp_path / "late")]) == 0
    late = json.loads((tmp_path / "late" / "summary.json").read_text())
    assert [s["seed"] for s in late["per_seed"]] == [7] and late["first_seed"] == 7
    assert summary["held_out"] and not late["held_out"]  # 7 is a selection seed: in-sample, and said so
    assert "note: seeds from 7 are selection seeds" in capsys.readouterr().out
    # judged under another training config's DR: the summary names it and the ranges it used
    judge = tmp_path / "judge.train.yaml"
    judge.write_text("task:\n  domain:\n    push_velocity: 0.7\n")
    assert eval_main([str(policy), "--seeds", "1", "--duration", "0.2", "--out", str(tmp_path / "judged"), "--train-config", str(judge)]) == 0
    judged = json.loads((tmp_path / "judged" / "summary.json").read_text())
    assert judged["train_config"] == str(judge) and judged["domain"]["push_velocity"] == 0.7
    # a judging config may extend another, as a training config does: its own keys over the base's
    child = tmp_path / "child.train.yaml"
    child.write_text("extends: judge.train.yaml\ntask:\n  domain:\n    push_interval_s: [1.0, 2.0]\n")
    assert eval_main([str(policy), "--seeds", "1", "--duration", "0.2", "--out", str(tmp_path / "child"), "--train-config", str(child)]) == 0
    extended = json.loads((tmp_path / "child" / "summary.json").read_text())["domain"]
    assert extended["push_velocity"] == 0.7 and list(extended["push_interval_s"]) == [1.0, 2.0]
    # every push applied is recorded with its time and velocity (a fall is read against the push before it)
    pushy = tmp_path / "pushy.train.yaml"
    pushy.write_text("task:\n  domain:\n    push_velocity: 0.2\n    push_interval_s: [0.1, 0.2]\n")
    assert eval_main([str(policy), "--seeds", "1", "--duration", "0.6", "--out", str(tmp_path / "pushy"), "--train-config", str(pushy)]) == 0
    pushes = json.loads((tmp_path / "pushy" / "summary.json").read_text())["per_seed"][0]["pushes"]
    assert len(pushes) >= 2 and all(0.1 - 1e-9 <= b["t_s"] - a["t_s"] <= 0.2 + 1e-9 for a, b in zip(pushes, pushes[1:]))
    assert all(0.0 < p["t_s"] < 0.6 and max(abs(v) for v in p["dv"]) <= 0.2 and any(v != 0.0 for v in p["dv"]) for p in pushes)
    assert all(s["pushes"] == [] for s in summary["per_seed"])  # 1 s: before the first push (3-6 s)
    assert summary["domain"]["push_velocity"] != 0.7


def test_eval_rejects_a_malformed_policy(tmp_path, capsys):
    bad = tmp_path / "bad.onnx"
    bad.write_bytes(b"garbage")
    with pytest.raises(SystemExit) as exc:
        eval_main([str(bad), "--seeds", "1", "--duration", "0.1"])
    assert exc.value.code == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("bcg-eval: error:") and "bad.onnx" in err and "\n" not in err


def test_eval_rejects_a_missing_training_config(tmp_path, capsys):
    """A --train-config that is not there is an error, not a silent fall-back to default DR ranges."""
    with pytest.raises(SystemExit) as exc:
        eval_main([str(_policy(tmp_path)), "--seeds", "1", "--duration", "0.1", "--train-config", str(tmp_path / "gone.yaml"),
                   "--out", str(tmp_path / "out")])
    assert exc.value.code == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("bcg-eval: error:") and "gone.yaml" in err and "no such training config" in err and "\n" not in err
    assert not (tmp_path / "out").exists()  # nothing rolled, nothing written


@pytest.mark.parametrize("physics_dt, problem", [
    (0.0033, "train physics_dt 0.0033 outside [0.004, 0.005] s"),  # the model builder's traceback, after --out was made
    (0.0045, "physics_dt 0.0045: the robot's control_dt 0.02 s is not a multiple of it"),  # rolled at 4 steps of 4.5 ms
])
def test_eval_refuses_a_training_config_whose_physics_step_the_train_model_cannot_take(tmp_path, capsys, physics_dt, problem):
    judge = tmp_path / "judge.train.yaml"
    judge.write_text(f"task:\n  physics_dt: {physics_dt}\n")
    with pytest.raises(SystemExit) as exc:
        eval_main([str(_policy(tmp_path)), "--seeds", "1", "--duration", "0.1", "--train-config", str(judge),
                   "--out", str(tmp_path / "out")])
    assert exc.value.code == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith(f"bcg-eval: error: {judge}: {problem}") and "\n" not in err, err
    assert not (tmp_path / "out").exists()


def test_eval_refuses_bad_numbers_before_it_imports_jax(tmp_path):
    """No seed, a negative seed or a NaN duration is argparse's error (exit 2, naming the option) in
    a fresh process that has not imported JAX yet, not a traceback after the rollouts start."""
    code = ("import sys\nfrom bcg_train.cli.evaluate import main\n"
            "for bad in (['--seeds', '0'], ['--first-seed', '-1'], ['--duration', 'nan'], ['--duration', '1e308']):\n"
            "    try:\n        main([sys.argv[1], '--seeds', '1', '--duration', '0.1', '--out', sys.argv[2], *bad])\n"
            "    except SystemExit as exc:\n        print(bad[0], exc.code, 'jax' in sys.modules)\n")
    proc = subprocess.run([sys.executable, "-c", code, str(_policy(tmp_path)), str(tmp_path / "out")],
                          cwd=Path(__file__).resolve().parents[2], capture_output=True, text=True, timeout=300)
    assert proc.stdout.splitlines() == ["--seeds 2 False", "--first-seed 2 False", "--duration 2 False", "--duration 2 False"], \
        proc.stdout + proc.stderr
    errors = [line for line in proc.stderr.splitlines() if line.startswith("bcg-eval: error:")]
    assert errors == ["bcg-eval: error: argument --seeds: must be an integer >= 1, got '0'",
                      "bcg-eval: error: argument --first-seed: must be an integer >= 0, got '-1'",
                      "bcg-eval: error: argument --duration: must be a finite number > 0, got 'nan'",
                      # 1e308 s overflowed the step count: a traceback after the models had loaded
                      "bcg-eval: error: argument --duration: must be at most 3600, got '1e308'"]
    assert not (tmp_path / "out").exists()


def test_eval_out_that_is_a_file_is_one_line_and_exit_2(tmp_path, capsys):
    existing = tmp_path / "out"
    existing.write_text("")
    with pytest.raises(SystemExit) as exc:
        eval_main([str(_policy(tmp_path)), "--seeds", "1", "--duration", "0.1", "--out", str(existing)])
    assert exc.value.code == 2
    assert capsys.readouterr().err.strip() == f"bcg-eval: error: {existing}: exists and is not a directory (--out)"


@pytest.mark.parametrize("blocked", ["summary.json", "eval.png"])
def test_eval_into_a_folder_where_its_file_goes_is_one_line_and_exit_2_before_the_rollouts(tmp_path, capsys, monkeypatch, blocked):
    """Was IsADirectoryError's traceback after every rollout had run."""
    import bcg_train.evaluate.rollout as rollout_module

    out = tmp_path / "out"
    (out / blocked).mkdir(parents=True)
    monkeypatch.setattr(rollout_module, "rollout", lambda *a, **k: pytest.fail("rolled out before refusing"))
    with pytest.raises(SystemExit) as exc:
        eval_main([str(_policy(tmp_path)), "--seeds", "1", "--duration", "0.1", "--out", str(out)])
    assert exc.value.code == 2
    assert capsys.readouterr().err.strip() == f"bcg-eval: error: {out / blocked}: is a directory, where --out gets this file"


def test_eval_video_comes_with_a_frame_strip(tmp_path):
    """As a user runs it: its own process, where bcg-eval picks the GL backend before MuJoCo
    loads (in this pytest process other tests have loaded MuJoCo already)."""
    import subprocess
    import sys

    out = tmp_path / "video"
    done = subprocess.run(
        [sys.executable, "-m", "bcg_train.cli.evaluate", str(_policy(tmp_path)), "--seeds", "1", "--duration", "0.5", "--video",
         "--out", str(out)], capture_output=True, text=True, timeout=300,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert "frame strip" in done.stdout, done.stdout  # "video skipped (...)" here: offscreen rendering failed
    from PIL import Image

    strip = Image.open(out / "seed100_frames.png")  # the first (default, held-out) seed
    assert strip.width == 8 * 320 and strip.height > 240  # 8 tiles of 320 x 240 with their time labels


def _squat_policy(tmp_path: Path):
    """A policy with random weights, trained-style: relative to the squat clip."""
    import numpy as np

    from bcg_robot.action_offset import REFERENCE
    from bcg_robot.onnx_graph import DenseLayer, PolicyWeights
    from bcg_robot.observation import observation_size
    from bcg_robot.paths import share_file
    from bcg_train.motion.reference import load_reference_motion

    robot = load_robot_config()
    reference = load_reference_motion(share_file("models/motions/squat.csv"), robot)
    contract = PolicyContract.for_robot(robot, motion_id="squat", motion_length_s=reference.length_s, action_offset=REFERENCE)
    n_obs = observation_size(contract.observation_spec, contract.num_joints)
    rng = np.random.default_rng(3)
    layer = DenseLayer(rng.normal(0.0, 0.1, (n_obs, contract.num_joints)), rng.normal(0.0, 0.1, contract.num_joints), elu=False)
    weights = PolicyWeights(np.zeros(n_obs), np.ones(n_obs), (layer,), reference_joint_pos=reference.joint_pos)
    return save_policy_onnx(tmp_path / "squat_random.onnx", contract, weights), contract, reference, robot


def test_baselines_are_the_policy_with_a_zero_correction(tmp_path):
    """default-pose holds the default pose; playback's targets are the policy's own offset
    (its targets less action_scale * action), i.e. the clip one step ahead."""
    import numpy as np

    from bcg_robot.action_offset import reference_joint_targets
    from bcg_robot.onnx_policy import OnnxPolicy
    from bcg_robot.observation import raw_inputs
    from bcg_train.evaluate.baselines import write_baseline_policy

    path, contract, reference, robot = _squat_policy(tmp_path)
    policy = OnnxPolicy.load(path, robot)
    hold = OnnxPolicy.load(write_baseline_policy("default-pose", contract, reference.joint_pos, tmp_path / "hold.onnx"), robot)
    play = OnnxPolicy.load(write_baseline_policy("playback", contract, reference.joint_pos, tmp_path / "play.onnx"), robot)
    assert (hold.contract.motion_id, play.contract.motion_id) == ("squat", "squat")
    assert hold.contract.motion_length_s == play.contract.motion_length_s == contract.motion_length_s
    rng = np.random.default_rng(0)
    n = contract.num_joints
    for phase in (0.0, 0.13, 0.5, 0.97):
        quat = rng.normal(size=4)
        raw = raw_inputs(quat / np.linalg.norm(quat), rng.normal(size=3), np.asarray(robot.default_q) + rng.normal(0, 0.2, n),
                         rng.normal(size=n), rng.normal(size=n), np.array([phase]))
        targets, action = policy.run(raw)
        hold_targets, hold_action = hold.run(raw)
        play_targets, play_action = play.run(raw)
        assert np.abs(action).max() > 1e-3  # the policy itself corrects
        assert np.all(hold_action == 0.0) and np.all(play_action == 0.0)
        np.testing.assert_allclose(hold_targets, contract.default_pose, atol=1e-6)
        np.testing.assert_allclose(play_targets, targets - np.asarray(contract.action_scale) * action, atol=1e-5)
        np.testing.assert_allclose(play_targets, reference_joint_targets(reference.joint_pos, np.array([phase])), atol=1e-5)
    with pytest.raises(ValueError, match="unknown baseline"):
        write_baseline_policy("nothing", contract, reference.joint_pos, tmp_path / "x.onnx")
    # a clip a frame longer than the policy's (bcg-eval accepts one): playback's phase runs over what it plays
    longer = np.concatenate([reference.joint_pos, reference.joint_pos[-1:]])
    play_longer = OnnxPolicy.load(write_baseline_policy("playback", contract, longer, tmp_path / "longer.onnx"), robot)
    assert play_longer.contract.motion_length_s == pytest.approx(len(longer) * contract.control_dt)


def test_eval_baseline_flag(tmp_path, capsys):
    path, *_ = _squat_policy(tmp_path)
    out = tmp_path / "play"
    assert eval_main([str(path), "--baseline", "playback", "--seeds", "1", "--duration", "0.4", "--no-dr", "--out", str(out)]) == 0
    text = capsys.readouterr().out
    assert "baseline 'playback' of" in text and "falls 0/1" in text
    summary = json.loads((out / "summary.json").read_text())
    assert summary["baseline"] == "playback" and summary["motion"] == "squat"
    assert (out / "baseline_playback.onnx").is_file()


def _stand_policy(tmp_path, robot, **contract_changes):
    from bcg_robot.onnx_policy import OnnxPolicy

    contract = PolicyContract.for_robot(robot, **contract_changes)
    return OnnxPolicy.load(save_policy_onnx(tmp_path / "stand.onnx", contract, default_pose_weights(contract)), robot)


def test_a_simulation_that_diverges_is_a_fall_and_its_reset_state_no_metric(tmp_path):
    """MuJoCo resets a diverged simulation to its initial, upright pose: scored as survival
    before, with the teleported standing pose in E_track and the height."""
    from bcg_robot.model import build_model
    from bcg_robot.paths import share_file
    from bcg_train.evaluate.rollout import rollout
    from bcg_train.motion.reference import load_reference_motion
    from bcg_train.tasks.config import DomainRandomizationConfig

    robot = load_robot_config()
    reference = load_reference_motion(share_file("models/motions/stand.csv"), robot)
    policy = _stand_policy(tmp_path, robot, motion_id="stand", motion_length_s=reference.length_s)
    model = build_model(robot, "bridge")
    calm = rollout(policy, model, robot, reference, 0, 0.5, DomainRandomizationConfig(enabled=False))
    assert not calm.fell and not calm.diverged and len(calm.root_height) == 25

    def blow_up(data, t):  # after the 10th control step: a joint at 1e12 rad/s
        if abs(t - 0.18) < 1e-9:
            data.qvel[6] = 1e12

    result = rollout(policy, model, robot, reference, 0, 0.5, DomainRandomizationConfig(enabled=False), on_frame=blow_up)
    assert result.fell and result.diverged and result.survived_s == pytest.approx(0.22)
    assert len(result.root_height) == 10  # the 11th step's state was MuJoCo's reset pose: not measured


def test_a_policy_without_a_motion_sees_phase_zero_as_on_the_robot(tmp_path):
    """motion_length_s 0: the node holds the phase at 0; the rollout cycled it over the stand clip."""
    from bcg_robot.model import build_model
    from bcg_robot.paths import share_file
    from bcg_train.evaluate.rollout import rollout
    from bcg_train.motion.reference import load_reference_motion
    from bcg_train.tasks.config import DomainRandomizationConfig

    robot = load_robot_config()
    reference = load_reference_motion(share_file("models/motions/stand.csv"), robot)
    policy = _stand_policy(tmp_path, robot)
    assert policy.contract.motion_length_s == 0
    phases = []
    run = policy.run
    policy.run = lambda raw: (phases.append(float(raw["phase"][0])), run(raw))[1]
    rollout(policy, build_model(robot, "bridge"), robot, reference, 0, 0.2, DomainRandomizationConfig(enabled=False))
    assert len(phases) == 10 and set(phases) == {0.0}


def test_eval_scores_against_the_clip_the_policy_trained_on(tmp_path, capsys):
    """The clip and its frame rate come from the policy's own training config; a clip whose
    length is not the policy's motion_length_s is refused (it was scored against silently)."""
    import shutil

    from bcg_robot.paths import share_file

    policy = tmp_path / "g1_jump.onnx"
    shutil.copy(share_file("models/g1_jump.onnx"), policy)
    shutil.copy(share_file("models/g1_jump.train.yaml"), policy.with_suffix(".train.yaml"))
    text = policy.with_suffix(".train.yaml").read_text()
    assert "motion_fps: 30.0" in text
    policy.with_suffix(".train.yaml").write_text(text.replace("motion_fps: 30.0", "motion_fps: 60.0"))
    for duration, problem in (("0.1", "jump.csv: reference clip lasts 1.52 s, the policy was trained on one of 3.02 s "
                                      "(its motion_length_s): not the clip it learned"),
                              ("0.01", "--duration 0.01 s is shorter than one control step (0.02 s)")):
        with pytest.raises(SystemExit) as exc:
            eval_main([str(policy), "--seeds", "1", "--duration", duration, "--out", str(tmp_path / "o")])
        err = capsys.readouterr().err.strip()
        assert exc.value.code == 2 and err.startswith("bcg-eval: error: ") and err.endswith(problem) and "\n" not in err, err
    assert not (tmp_path / "o").exists()


def test_eval_refuses_a_training_config_beside_the_policy_that_is_not_its_own(tmp_path, capsys):
    """The .train.yaml beside a policy chooses the clip, DR ranges and contact model that judge it.
    Another run's config on the same clip (here one whose policy saw no last action) judged the
    policy without a word; a config of another clip is named as such before its length is."""
    import shutil

    from bcg_robot.paths import share_file

    policy = tmp_path / "g1_jump.onnx"
    shutil.copy(share_file("models/g1_jump.onnx"), policy)
    own = share_file("models/g1_jump.train.yaml").read_text()
    assert "  - last_action\n" in own
    for text, problem in ((own.replace("  - last_action\n", ""), "its observation_spec is ("),
                          (share_file("models/g1_squat.train.yaml").read_text(),
                           "its motion_id is 'squat', the policy's contract says 'jump'")):
        policy.with_suffix(".train.yaml").write_text(text)
        with pytest.raises(SystemExit) as exc:
            eval_main([str(policy), "--seeds", "1", "--duration", "0.1", "--out", str(tmp_path / "o")])
        err = capsys.readouterr().err.strip()
        assert exc.value.code == 2 and "\n" not in err, err
        assert "g1_jump.train.yaml: not the training config of g1_jump.onnx: " + problem in err, err
    assert not (tmp_path / "o").exists()


def test_a_seed_that_diverges_at_its_first_step_has_no_figures_and_the_summary_stays_json(tmp_path, capsys):
    """A policy whose output is NaN diverges the simulation in its first control step (MuJoCo
    zeroes the controls): no tracking sample, and the summary said E_track NaN (``NaN`` in
    summary.json, which strict JSON readers refuse; the selection ranked a NaN anywhere)."""
    from bcg_sim_bridge.harness.sample_policies import write_policy

    robot = load_robot_config()
    policy = write_policy(tmp_path / "nan.onnx", robot, kind="nan", motion_id="stand", motion_length_s=10.02)
    out = tmp_path / "eval"
    assert eval_main([str(policy), "--seeds", "2", "--duration", "0.2", "--no-dr", "--out", str(out)]) == 0
    assert "E_track n/a +- n/a cm (2 seed(s) diverged before a measurement)" in capsys.readouterr().out
    summary = json.loads((out / "summary.json").read_text(), parse_constant=lambda c: pytest.fail(f"{c} in summary.json"))
    assert summary["falls"] == summary["diverged"] == 2 and summary["measured_seeds"] == 0
    assert summary["tracking_error_cm_mean"] is None and summary["root_height_error_cm"] == {"mean": None, "max": None}
    assert all(s["tracking_error_cm"] is None for s in summary["per_seed"])


def test_eval_refuses_a_clip_of_the_right_length_that_is_not_the_one_trained_on(tmp_path, capsys):
    """Only the clip's length was checked: an edited clip of the same length (here the first
    frame's root 1 cm higher) scored the policy against motion it never saw."""
    import hashlib

    from bcg_robot.paths import share_file

    robot = load_robot_config()
    clip = share_file("models/motions/stand.csv")
    contract = PolicyContract.for_robot(robot, motion_id="stand", motion_length_s=10.02,
                                        motion_sha256=hashlib.sha256(clip.read_bytes()).hexdigest())
    policy = save_policy_onnx(tmp_path / "stand.onnx", contract, default_pose_weights(contract))
    lines = clip.read_text().splitlines(keepends=True)
    first = next(i for i, line in enumerate(lines) if not line.startswith("#"))
    cells = lines[first].split(",")
    cells[2] = f"{float(cells[2]) + 0.01:.6f}"
    lines[first] = ",".join(cells)
    edited = tmp_path / "stand.csv"
    edited.write_text("".join(lines))
    with pytest.raises(SystemExit) as exc:
        eval_main([str(policy), "--motion", str(edited), "--seeds", "1", "--duration", "0.1", "--out", str(tmp_path / "o")])
    err = capsys.readouterr().err.strip()
    assert exc.value.code == 2 and "\n" not in err, err
    assert f"{edited}: not the clip policy stand.onnx was trained on (sha256 " in err, err
    assert not (tmp_path / "o").exists()
    assert eval_main([str(policy), "--motion", str(clip), "--seeds", "1", "--duration", "0.1", "--out", str(tmp_path / "ok")]) == 0


def test_the_policy_reads_the_imu_of_the_current_state_as_on_the_bridge(tmp_path):
    """mj_step computes sensors before it integrates: read after it, the IMU quaternion and gyro
    were one physics step older than the joints beside them (the bridge and the trainer read the
    current state's)."""
    import copy

    import mujoco

    from bcg_robot.model import build_model
    from bcg_robot.onnx_policy import OnnxPolicy
    from bcg_robot.paths import share_file
    from bcg_sim_bridge.harness.sample_policies import write_policy
    from bcg_train.evaluate.rollout import rollout
    from bcg_train.motion.reference import load_reference_motion
    from bcg_train.tasks.config import DomainRandomizationConfig

    robot = load_robot_config()
    reference = load_reference_motion(share_file("models/motions/stand.csv"), robot)
    policy = OnnxPolicy.load(write_policy(tmp_path / "random.onnx", robot, kind="random", motion_id="stand",
                                          motion_length_s=reference.length_s), robot)
    fed, current = [], []
    run = policy.run

    def recording_run(raw):
        fed.append(np.concatenate([raw["imu_quat"].ravel(), raw["imu_gyro"].ravel()]))
        return run(raw)

    policy.run = recording_run
    model = build_model(robot, "bridge")

    def sensors_now(data, t):  # what an IMU of this state reads, from a fresh forward pass
        fresh = copy.copy(data)
        mujoco.mj_forward(model, fresh)  # DR off: the rollout's model copy has the same values
        current.append(np.concatenate([fresh.sensor("imu_quat").data, fresh.sensor("imu_gyro").data]))

    rollout(policy, model, robot, reference, 0, 0.3, DomainRandomizationConfig(enabled=False), on_frame=sensors_now)
    assert len(fed) > 5 and len(current) >= len(fed) - 1  # a frame per step (the last one's state is not fed)
    moving = max(float(np.abs(c[4:]).max()) for c in current)
    assert moving > 0.05, moving  # the pelvis turns: a stale gyro would differ
    np.testing.assert_allclose(np.asarray(fed[1:]), np.asarray(current[:len(fed) - 1]), atol=1e-9)
