"""bcg-train / bcg-export argument and config errors (one line, exit 2, nothing trained),
and the benchmark's threshold arithmetic."""

import sys

import pytest

from bcg_train.cli.benchmark import steps_to_threshold
from bcg_train.cli.export import main as export_main
from bcg_train.cli.train import main as train_main


def _run(main, argv, capsys) -> str:
    with pytest.raises(SystemExit) as exc:
        main(argv)
    assert exc.value.code == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err
    return err


def test_train_rejects_unknown_task_and_bad_config(tmp_path, capsys):
    err = _run(train_main, ["--task", "moonwalk", "--run-dir", str(tmp_path / "r")], capsys)
    assert err.startswith("bcg-train: error:") and "moonwalk.yaml" in err and "cannot read" in err
    bad = tmp_path / "bad.yaml"
    bad.write_text("shac:\n  horizon: 0\n")
    err = _run(train_main, ["--task", "stand", "--config", str(bad), "--run-dir", str(tmp_path / "r")], capsys)
    assert "bad.yaml" in err and "shac.horizon must be >= 1" in err
    bad.write_text("shac:\n  num_env: 8\n")
    err = _run(train_main, ["--task", "stand", "--config", str(bad), "--run-dir", str(tmp_path / "r")], capsys)
    assert "unknown key 'shac.num_env'" in err
    assert train_main(["--task", "stand", "--max-train-s", "0", "--run-dir", str(tmp_path / "r")]) == 2
    err = capsys.readouterr().err.strip()
    assert err == "bcg-train: error: --max-train-s must be > 0, got 0.0"
    missing = tmp_path / "nope.pkl"
    assert train_main(["--task", "stand", "--init-from", str(missing), "--run-dir", str(tmp_path / "r")]) == 2
    err = capsys.readouterr().err.strip()
    assert err == f"bcg-train: error: {missing}: no such checkpoint (--init-from)"
    assert not (tmp_path / "r").exists()


@pytest.mark.parametrize("text,message", [
    ("checkpoint_every: 0\n", "checkpoint_every must be >= 1, got 0"),  # was a ZeroDivisionError after the compile
    ("shac:\n  actor_grad_clip: 0.0\n", "shac.actor_grad_clip must be > 0, got 0.0"),  # every update zeroed
    ("shac:\n  target_critic_alpha: 1.0\n", "shac.target_critic_alpha must be in [0, 1)"),
    ("shac:\n  betas: [1.5, -3.0]\n", "shac.betas must be two numbers in [0, 1), got [1.5, -3.0]"),  # accepted: Adam diverged
    ("task:\n  bcg:\n    force_threshold: -5.0\n", "force_threshold must be >= 0"),  # accepted: every contact triggered
    ("task:\n  rewards:\n    joint_pos:\n      weight: 0.5\n      sigma: 0.0\n", "rewards.joint_pos.sigma must be > 0, got 0.0"),
    ("task:\n  domain:\n    model_resample_steps: 0\n", "'model_resample_steps' >= 1"),
    # NaN passed every 'x <= 0' check: a crash after the compile, or termination switched off
    ("task:\n  episode_length_s: .nan\n", "key 'task.episode_length_s': expected a finite number, got nan"),
    ("task:\n  termination:\n    max_tilt: .inf\n", "key 'task.termination.max_tilt': expected a finite number"),
    ("task:\n  termination:\n    min_root_height: 5.0\n", "termination.min_root_height must be in [0, 2) m, got 5.0"),
    ("task:\n  domain:\n    friction: [-1.0, -0.5]\n", "'friction': bounds must be > 0, got [-1.0, -0.5]"),
    ("shac:\n  horizon: 8\n  horizon: 32\n", "key 'horizon' given twice"),
    ("shac:\n  actor_hidden: [64, 0]\n", "shac.actor_hidden must list layer widths >= 1, got [64, 0]"),  # constant outputs
    ("seed: 18446744073709551616\n", "seed must be in [0, 2**32), got 18446744073709551616"),  # an OverflowError in PRNGKey
    # a pelvis of -1.2 kg simulated on without a word (MuJoCo keeps stepping a negative mass)
    ("task:\n  domain:\n    base_mass_delta: [-5.0, 1.0]\n",
     "'base_mass_delta': lower bound -5 kg would leave the pelvis (3.813 kg) with no mass"),
    # rounded to 0 control steps: a push every step in training, one push in bcg-eval
    ("task:\n  domain:\n    push_interval_s: [0.005, 0.005]\n", "'push_interval_s': lower bound 0.005 s is shorter than one control step"),
    # a tracking term that rewards moving away from the reference, a penalty that rewards jerk
    ("task:\n  rewards:\n    key_body:\n      weight: -0.2\n", "rewards.key_body.weight must be >= 0 (a tracking term), got -0.2"),
    ("task:\n  rewards:\n    action_rate:\n      weight: 0.005\n", "rewards.action_rate.weight must be <= 0 (a penalty), got 0.005"),
])
def test_train_rejects_values_that_would_fail_or_train_nothing_after_the_compile(tmp_path, capsys, text, message):
    bad = tmp_path / "bad.yaml"
    bad.write_text(text)
    err = _run(train_main, ["--task", "stand", "--config", str(bad), "--run-dir", str(tmp_path / "r")], capsys)
    assert "bad.yaml" in err and message in err, err
    assert not (tmp_path / "r").exists()


def test_export_rejects_a_missing_checkpoint(tmp_path, capsys):
    (tmp_path / "run").mkdir()
    err = _run(export_main, [str(tmp_path / "run"), "--out", str(tmp_path / "p.onnx")], capsys)
    assert err.startswith("bcg-export: error:") and "no checkpoint" in err
    assert not (tmp_path / "p.onnx").exists()


def test_export_refuses_an_out_it_cannot_write_before_reading_the_checkpoint(tmp_path, capsys):
    """``--out models/`` (a folder) or a path under a file was a traceback from the ONNX writer,
    after the checkpoint was loaded and the graph built."""
    missing = str(tmp_path / "no_run")  # checked only after --out
    err = _run(export_main, [missing, "--out", str(tmp_path)], capsys)
    assert err == f"bcg-export: error: {tmp_path}: is a directory (--out names the file to write)"
    blocker = tmp_path / "file"
    blocker.write_text("")
    err = _run(export_main, [missing, "--out", str(blocker / "p.onnx")], capsys)
    assert err == f"bcg-export: error: {blocker}: exists and is not a directory (--out)"


def test_steps_to_threshold_uses_a_moving_window():
    history = [{"tracking_error_m": e, "env_steps": 100.0 * (i + 1), "wall_s": float(i)} for i, e in enumerate([0.2] * 5 + [0.01] * 10)]
    steps, wall = steps_to_threshold(history, 0.05)
    # the 5-iteration mean drops below 5 cm once 4 of the last 5 are 1 cm: (0.2 + 4 * 0.01) / 5 = 0.048
    assert steps == 900.0 and wall == 8.0
    assert steps_to_threshold(history, 0.001) == (None, None)


def test_export_refuses_checkpoints_it_cannot_read_and_policies_the_robot_must_not_run(tmp_path, capsys):
    import dataclasses
    import pickle

    import numpy as np

    from bcg_robot.config import load_robot_config
    from bcg_robot.contract import PolicyContract
    from bcg_sim_bridge.harness.sample_policies import random_weights
    from bcg_train.export.policy import ExportError, check_exportable
    from bcg_train.learn.train import CHECKPOINT_FORMAT

    lacking = tmp_path / "lacking.pkl"
    lacking.write_bytes(pickle.dumps({"format": CHECKPOINT_FORMAT, "state": None}))  # was a KeyError traceback
    err = _run(export_main, [str(lacking), "--out", str(tmp_path / "p.onnx")], capsys)
    assert f"{lacking}: checkpoint lacks 'config'" in err
    hand_made = tmp_path / "hand_made.pkl"  # the right format tag, the wrong contents: was an AttributeError traceback
    hand_made.write_bytes(pickle.dumps({"format": CHECKPOINT_FORMAT, "config": {}, "config_hash": "x", "state": [1, 2]}))
    err = _run(export_main, [str(hand_made), "--out", str(tmp_path / "p.onnx")], capsys)
    assert f"{hand_made}: checkpoint's 'state' is not a SHAC state (list)" in err
    gone = tmp_path / "gone.pkl"  # a pickle naming a module that no longer exists: a ModuleNotFoundError traceback
    gone.write_bytes(b"cnomodule\nX\n.")  # protocol 0: GLOBAL nomodule.X, STOP
    err = _run(export_main, [str(gone), "--out", str(tmp_path / "p.onnx")], capsys)
    assert f"{gone}: cannot read checkpoint: No module named 'nomodule'" in err
    garbled = tmp_path / "garbled.pkl"  # a protocol byte pickle does not know: a ValueError traceback
    garbled.write_bytes(b"\x80\x09rest")
    err = _run(export_main, [str(garbled), "--out", str(tmp_path / "p.onnx")], capsys)
    assert f"{garbled}: cannot read checkpoint: unsupported pickle protocol: 9" in err
    assert not (tmp_path / "p.onnx").exists()

    weights = random_weights(PolicyContract.for_robot(load_robot_config(check_model=False)))
    check_exportable(weights, "ckpt.pkl")
    layer = dataclasses.replace(weights.layers[1], bias=np.full_like(weights.layers[1].bias, np.nan))
    bad = dataclasses.replace(weights, layers=(weights.layers[0], layer, *weights.layers[2:]))
    with pytest.raises(ExportError, match="ckpt.pkl: policy layer 1 bias has non-finite values: refusing to export"):
        check_exportable(bad, "ckpt.pkl")
    with pytest.raises(ExportError, match="policy obs_std has values <= 0"):
        check_exportable(dataclasses.replace(weights, obs_std=np.zeros_like(weights.obs_std)), "ckpt.pkl")


def test_export_and_resume_refuse_a_clip_other_than_the_one_trained_on(tmp_path, capsys, monkeypatch):
    """The config holds the clip's path, and a relative one resolves against the working
    directory first: exported from a directory with its own ``models/motions/stand.csv`` (or
    after the clip was edited), the policy would carry another motion's timeline."""
    import pickle

    from bcg_robot.paths import share_file
    from bcg_train.learn.config import SHACConfig, TrainConfig
    from bcg_train.learn.shac import SHAC
    from bcg_train.learn.train import CheckpointError, check_checkpoint_motion, load_checkpoint, save_checkpoint, train
    from bcg_train.tasks.point_mass import PointMassTask

    shac_cfg = SHACConfig(num_envs=2, horizon=2, iterations=2, actor_hidden=(4,), critic_hidden=(4,), critic_iterations=1, critic_minibatches=1)
    cfg = TrainConfig(shac=shac_cfg, run_dir=str(tmp_path / "run"), devices=1)
    assert cfg.task.motion == "models/motions/stand.csv"  # relative: the shared clip from anywhere else
    task = PointMassTask()
    path = save_checkpoint(tmp_path / "c.pkl", cfg, SHAC(task, cfg.shac, 1).init(0))
    check_checkpoint_motion(load_checkpoint(path))  # the clip it was trained on: nothing to say

    other = tmp_path / "elsewhere"
    (other / "models" / "motions").mkdir(parents=True)
    (other / "models" / "motions" / "stand.csv").write_bytes(share_file("models/motions/stand.csv").read_bytes() + b"\n")
    monkeypatch.chdir(other)
    err = _run(export_main, [str(path), "--out", str(tmp_path / "p.onnx")], capsys)
    assert f"{path}: motion 'models/motions/stand.csv' resolves here to models/motions/stand.csv, which differs" in err
    assert "run from the training's directory or restore the clip" in err and not (tmp_path / "p.onnx").exists()
    with pytest.raises(CheckpointError, match="which differs from the clip trained on"):
        train(cfg, task=task, resume=path, progress=False)
    (other / "models" / "motions" / "stand.csv").unlink()
    check_checkpoint_motion(load_checkpoint(path))  # resolves to the shared clip again

    payload = pickle.loads(path.read_bytes())
    del payload["motion_sha256"]  # a checkpoint saved before checkpoints carried the digest
    (tmp_path / "old.pkl").write_bytes(pickle.dumps(payload))
    old = load_checkpoint(tmp_path / "old.pkl")
    assert old.motion_sha256 is None
    check_checkpoint_motion(old)


def test_a_warm_start_refuses_a_source_whose_actor_means_other_joints_and_takes_other_gains(tmp_path):
    """--init-from keeps the actor: a source trained with another default pose (or joint order, action
    scale, rate) would command the wrong targets, and is refused before the reset's compile and before
    anything is written; a source trained with other gains is a legitimate warm start."""
    import dataclasses

    from bcg_robot.config import load_robot_config
    from bcg_train.learn.config import SHACConfig, TrainConfig
    from bcg_train.learn.train import CheckpointError, train
    from bcg_train.tasks.point_mass import PointMassTask

    @dataclasses.dataclass(frozen=True)
    class RobotTask(PointMassTask):  # a task built from a robot config, as the imitation task is
        robot: object = None

    robot = load_robot_config()
    shac_cfg = SHACConfig(num_envs=2, horizon=2, iterations=2, actor_hidden=(4,), critic_hidden=(4,), critic_iterations=1, critic_minibatches=1)
    sources = {}
    for name, changes in (("pose", {"default_pose": (robot.default_pose[0] + 0.1, *robot.default_pose[1:])}),
                          ("gains", {"kp": tuple(2.0 * k for k in robot.kp)})):
        cfg = TrainConfig(shac=shac_cfg, run_dir=str(tmp_path / name), devices=1)
        train(cfg, task=RobotTask(robot=dataclasses.replace(robot, **changes)), iterations=1, progress=False)
        sources[name] = tmp_path / name / "checkpoints" / "000001.pkl"

    warm = TrainConfig(shac=shac_cfg, run_dir=str(tmp_path / "warm"), devices=1, init_from=str(sources["pose"]))
    with pytest.raises(CheckpointError, match=rf"trained with robot config default_pose\[{robot.joint_names[0]}\] = .*a warm start keeps the actor"):
        train(warm, task=RobotTask(robot=robot), iterations=0, progress=False)
    assert not (tmp_path / "warm").exists()
    _, state, _ = train(dataclasses.replace(warm, init_from=str(sources["gains"])), task=RobotTask(robot=robot), iterations=0,
                        progress=False)
    assert (tmp_path / "warm" / "warm_start.json").is_file() and int(state.iteration) == 0


def test_export_and_resume_refuse_a_robot_config_other_than_the_one_trained_on(tmp_path, capsys):
    """Training reads gains, default pose, action scale and rate from the robot config, and
    export writes the contract from the config it is given: after an edit of the robot config
    the ONNX would state values training never used, and the node, checking the contract
    against that same edited file, would accept it."""
    import dataclasses
    import pickle

    from bcg_robot.config import load_robot_config
    from bcg_train.learn.config import SHACConfig, TrainConfig
    from bcg_train.learn.shac import SHAC
    from bcg_train.learn.train import CheckpointError, check_checkpoint_robot, load_checkpoint, save_checkpoint, train
    from bcg_train.tasks.point_mass import PointMassTask

    robot = load_robot_config()
    shac_cfg = SHACConfig(num_envs=2, horizon=2, iterations=2, actor_hidden=(4,), critic_hidden=(4,), critic_iterations=1, critic_minibatches=1)
    cfg = TrainConfig(shac=shac_cfg, run_dir=str(tmp_path / "run"), devices=1)
    state = SHAC(PointMassTask(), cfg.shac, 1).init(0)
    check_checkpoint_robot(load_checkpoint(save_checkpoint(tmp_path / "same.pkl", cfg, state, robot=robot)), robot)
    # the node's gain tolerance and where the file was read from do not shape training
    check_checkpoint_robot(load_checkpoint(tmp_path / "same.pkl"), dataclasses.replace(robot, policy_gain_ratio=2.0, source="x.yaml"))

    kp = list(robot.kp)
    kp[3] *= 1.5  # trained with another gain on one joint: the shipped config is the edited one now
    path = save_checkpoint(tmp_path / "c.pkl", cfg, state, robot=dataclasses.replace(robot, kp=tuple(kp)))
    err = _run(export_main, [str(path), "--out", str(tmp_path / "p.onnx")], capsys)
    assert f"{path}: trained with robot config kp[{robot.joint_names[3]}] = {kp[3]}, but {robot.source} says {robot.kp[3]}" in err
    assert not (tmp_path / "p.onnx").exists()
    with pytest.raises(CheckpointError, match=r"trained with robot config action_scale = 0\.5"):
        check_checkpoint_robot(load_checkpoint(save_checkpoint(tmp_path / "a.pkl", cfg, state, robot=dataclasses.replace(robot, action_scale=0.5))), robot)

    @dataclasses.dataclass(frozen=True)
    class RobotTask(PointMassTask):  # a task built from a robot config, as the imitation task is
        robot: object = None

    train(cfg, task=RobotTask(robot=dataclasses.replace(robot, control_dt=0.01)), iterations=1, progress=False)
    config_yaml = (tmp_path / "run" / "config.yaml").read_text()
    with pytest.raises(CheckpointError, match=r"000001.pkl: trained with robot config control_dt = 0\.01, but .* says 0\.02"):
        train(cfg, task=RobotTask(robot=robot), resume=tmp_path / "run", progress=False)
    assert (tmp_path / "run" / "config.yaml").read_text() == config_yaml

    payload = pickle.loads(path.read_bytes())
    del payload["robot"]  # a checkpoint saved before checkpoints carried the robot config
    (tmp_path / "old.pkl").write_bytes(pickle.dumps(payload))
    check_checkpoint_robot(load_checkpoint(tmp_path / "old.pkl"), robot)


@pytest.mark.parametrize("physics_dt, problem", [
    (0.0033, "train physics_dt 0.0033 outside [0.004, 0.005] s"),  # was the model builder's traceback
    (0.0045, "physics_dt 0.0045: the robot's control_dt 0.02 s is not a multiple of it (4.444 physics steps)"),  # the simulator's
])
def test_a_physics_step_the_train_model_cannot_take_stops_bcg_train_before_jax(tmp_path, bcg_train_exit, physics_dt, problem):
    """Only (0, 0.05] was checked in the config; the real range and the control-step multiple
    were tracebacks (exit 1) after the JAX import."""
    bad = tmp_path / "bad.yaml"
    bad.write_text(f"task:\n  physics_dt: {physics_dt}\n")
    code, jax_imported, stderr = bcg_train_exit(["--task", "stand", "--config", str(bad), "--preset", "cpu-tiny",
                                                 "--run-dir", str(tmp_path / "r")])
    assert (code, jax_imported) == (2, False), stderr
    assert stderr.strip().splitlines() == [f"bcg-train: error: {bad} + preset cpu-tiny: {problem}"], stderr
    assert not (tmp_path / "r").exists()


@pytest.fixture
def no_training(monkeypatch):
    """Make reaching the trainer an ImportError: a config that passes is not trained on."""
    monkeypatch.setitem(sys.modules, "bcg_train.learn.train", None)


@pytest.mark.parametrize("text, problem", [
    # zero control steps an episode: accepted, and compiled
    ("task:\n  episode_length_s: 0.001\n", "episode_length_s 0.001 is shorter than one control step (0.02 s)"),
    # never checked: the clip's loader refused it, naming the CSV
    ("task:\n  motion_fps: 0.0\n", "motion_fps must be in [1, 1000] frames per second, got 0.0"),
])
def test_timing_a_task_cannot_run_is_a_config_error(tmp_path, capsys, no_training, text, problem):
    bad = tmp_path / "bad.yaml"
    bad.write_text(text)
    err = _run(train_main, ["--task", "stand", "--config", str(bad), "--run-dir", str(tmp_path / "r")], capsys)
    assert err == f"bcg-train: error: {bad}: {problem}"
    assert not (tmp_path / "r").exists()


def test_an_empty_run_dir_is_refused(tmp_path, capsys, monkeypatch, no_training):
    """``run_dir: ""`` is the working directory, whose metrics.csv a new run would replace."""
    monkeypatch.chdir(tmp_path)
    bad = tmp_path / "bad.yaml"
    bad.write_text('run_dir: ""\n')
    err = _run(train_main, ["--task", "stand", "--config", str(bad)], capsys)
    assert err == f"bcg-train: error: {bad}: run_dir must not be empty (it would name the working directory)"
    assert [p.name for p in tmp_path.iterdir()] == ["bad.yaml"]


def test_a_missing_resume_checkpoint_stops_bcg_train_before_jax(tmp_path, bcg_train_exit):
    missing = tmp_path / "nope.pkl"
    code, jax_imported, stderr = bcg_train_exit(["--task", "stand", "--resume", str(missing), "--run-dir", str(tmp_path / "r")])
    assert (code, jax_imported) == (2, False), stderr
    assert stderr.strip().splitlines() == [f"bcg-train: error: {missing}: no such checkpoint (--resume)"], stderr
    assert not (tmp_path / "r").exists()


def _checkpoint_with_policy(path, actor, mean, cfg=None, commit=None):
    """A checkpoint of ``cfg`` (default: the default config) whose state holds ``actor`` and a
    normalizer of ``mean``, saved by the code at ``commit`` (None: none recorded)."""
    import pickle

    import numpy as np

    from bcg_robot.yaml_dataclass import to_plain
    from bcg_train.learn.config import TrainConfig, plain_config_hash
    from bcg_train.learn.networks import RunningStats
    from bcg_train.learn.shac import SHACState
    from bcg_train.learn.train import CHECKPOINT_FORMAT

    config = to_plain(cfg if cfg is not None else TrainConfig())
    stats = RunningStats(np.asarray(mean, np.float32), np.ones(np.shape(mean), np.float32), np.asarray(1.0, np.float32))
    state = SHACState(actor=actor, critics=None, target_critics=None, actor_opt=None, critic_opt=None, obs_stats=stats, env=None,
                      rng=None, iteration=np.asarray(1))
    payload = {"format": CHECKPOINT_FORMAT, "config": config, "config_hash": plain_config_hash(config), "state": state}
    if commit is not None:
        payload["source_commit"] = commit
    path.write_bytes(pickle.dumps(payload))
    return path


@pytest.mark.parametrize("task", ["stand", "squat"])  # the default pose, and the clip, as the action's offset
def test_export_writes_a_policy_the_node_loads_with_its_contract_and_training_config(tmp_path, capsys, task):
    """bcg-export's working path, end to end: the ONNX file the node loads (its contract naming the
    clip, its length and digest, the checkpoint's config hash and commit), the network the checkpoint
    holds (onnxruntime against the JAX policy), and the .train.yaml beside it that bcg-eval reads."""
    import numpy as np
    import onnxruntime as ort

    from bcg_robot.config import load_robot_config
    from bcg_robot.onnx_policy import OnnxPolicy
    from bcg_robot.observation import observation_size, raw_input_sizes
    from bcg_robot.paths import resolve_share_path
    from bcg_robot.yaml_dataclass import to_plain
    from bcg_train.export.policy import contract_mismatch, jax_policy_on_raw
    from bcg_train.learn.config import TRAIN_CONFIG_DIR, load_train_config, motion_sha256, plain_config_hash
    from bcg_train.learn.networks import RunningStats
    from bcg_train.motion.reference import load_reference_motion

    robot = load_robot_config()
    cfg = load_train_config(TRAIN_CONFIG_DIR / f"{task}.yaml")
    a = robot.num_joints
    n = observation_size(cfg.task.observation_spec, a)
    rng = np.random.default_rng(3)
    actor = _actor([n, 16, a])
    for layer in actor:
        layer["w"] = (0.3 * rng.normal(size=layer["w"].shape)).astype(np.float32)
        layer["b"] = (0.1 * rng.normal(size=layer["b"].shape)).astype(np.float32)
    mean = (0.1 * rng.normal(size=n)).astype(np.float32)
    ckpt = _checkpoint_with_policy(tmp_path / "c.pkl", actor, mean, cfg, commit="c" * 40)
    out = tmp_path / "policy.onnx"
    assert export_main([str(ckpt), "--out", str(out)]) == 0
    assert f"bcg-export: {out} (iteration 1 of {ckpt}, motion '{task}'" in capsys.readouterr().out

    policy = OnnxPolicy.load(out, robot)  # the node's loader: signature, contract against the robot, a trial run
    contract = policy.contract
    ref = load_reference_motion(resolve_share_path(cfg.task.motion), robot, cfg.task.motion_fps)
    assert contract.motion_id == task and contract.motion_length_s == pytest.approx(ref.length_s)
    assert contract.motion_sha256 == motion_sha256(cfg) and contract.source_commit == "c" * 40
    assert contract.config_hash == plain_config_hash(to_plain(cfg)) and contract.action_offset == cfg.task.action_offset
    saved = load_train_config(out.with_suffix(".train.yaml"))
    assert saved == cfg and contract_mismatch(contract, saved) is None

    sizes = raw_input_sizes(a)
    raw = {name: rng.normal(size=(8, size)).astype(np.float32) for name, size in sizes.items()}
    raw["imu_quat"] = np.tile(np.array([0.98, 0.0, 0.199, 0.0], np.float32), (8, 1))
    raw["phase"] = np.linspace(0.05, 0.95, 8, dtype=np.float32)[:, None]
    targets, action = ort.InferenceSession(str(out), providers=["CPUExecutionProvider"]).run(["joint_targets", "action"], raw)
    stats = RunningStats(mean, np.ones(n, np.float32), np.asarray(1.0, np.float32))
    table = ref.joint_pos if cfg.task.action_offset == "reference" else None
    want_targets, want_action = jax_policy_on_raw(contract, actor, stats, cfg.shac.obs_clip, cfg.shac.action_clip, raw, table)
    assert np.abs(action).max() > 0.1  # not a trivial policy
    np.testing.assert_allclose(action, np.asarray(want_action), atol=1e-5)
    np.testing.assert_allclose(targets, np.asarray(want_targets), atol=1e-5)


def _actor(sizes):
    import numpy as np

    layers = [{"w": np.zeros((n_in, n_out), np.float32), "b": np.zeros(n_out, np.float32)} for n_in, n_out in zip(sizes, sizes[1:])]
    for layer in layers[:-1]:
        layer.update(ln_scale=np.ones(layer["b"].shape, np.float32), ln_bias=np.zeros(layer["b"].shape, np.float32))
    return layers


def _no_bias(layers):
    del layers[0]["b"]
    return layers


@pytest.mark.parametrize("actor, obs, problem", [
    (lambda n, a: _actor([3, 16, a]), None, "policy layer 0 weight has shape (3, 16), expected ({n}, outputs)"),
    (lambda n, a: [], None, "policy actor has no layers"),
    (lambda n, a: _no_bias(_actor([n, 16, a])), None, "policy layer 0 lacks 'b'"),
    (lambda n, a: None, None, "policy actor is not a list of layers (NoneType)"),
    (lambda n, a: _actor([n, 16, a]), 3, "policy obs_mean has shape (3,), expected ({n},) (the observation's size)"),
    (lambda n, a: _actor([n, 16, 7]), None, "policy actor outputs 7 values, expected {a} (one per joint)"),
], ids=["wrong-shape", "empty", "no-bias", "none", "short-normalizer", "wrong-output"])
def test_export_refuses_a_checkpoint_whose_policy_is_malformed_in_one_line(tmp_path, capsys, actor, obs, problem):
    """Tracebacks before: KeyError, TypeError, or ONNX shape inference failing inside the writer."""
    from bcg_robot.config import load_robot_config
    from bcg_robot.observation import DEFAULT_OBSERVATION_SPEC, observation_size

    a = load_robot_config(check_model=False).num_joints
    n = observation_size(DEFAULT_OBSERVATION_SPEC, a)
    path = _checkpoint_with_policy(tmp_path / "c.pkl", actor(n, a), [0.0] * (obs or n))
    err = _run(export_main, [str(path), "--out", str(tmp_path / "p.onnx")], capsys)
    assert err == f"bcg-export: error: {path}: {problem.format(n=n, a=a)}"
    assert not (tmp_path / "p.onnx").exists()


def test_export_refuses_a_pickle_that_fails_to_construct_in_one_line(tmp_path, capsys):
    """A TypeError from the unpickler (a class called with arguments it does not take) was a traceback."""
    bad = tmp_path / "typeerr.pkl"
    bad.write_bytes(b"cbuiltins\nlist\n(I1\nI2\ntR.")  # protocol 0: list(1, 2)
    err = _run(export_main, [str(bad), "--out", str(tmp_path / "p.onnx")], capsys)
    assert err.startswith(f"bcg-export: error: {bad}: cannot read checkpoint: ") and "list" in err
    assert not (tmp_path / "p.onnx").exists()
