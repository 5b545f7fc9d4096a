"""bcg-benchmark's evaluated threshold: PPO leaves ONNX policies that bcg-select-checkpoint judges
like SHAC's checkpoints, and the report turns the selection tables into env steps, wall time and ratios."""

import csv
import dataclasses
import json
import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from brax.training.acme import running_statistics

from bcg_robot.config import load_robot_config
from bcg_robot.errors import BCGInputError
from bcg_robot.observation import observation_size
from bcg_robot.onnx_policy import OnnxPolicy
from bcg_train.cli.benchmark import evaluated_threshold, main, method_config, ppo_policy_writer, report
from bcg_train.cli.select_checkpoint import main as select_main
from bcg_train.learn.config import PRESETS, TRAIN_CONFIG_DIR, load_train_config
from bcg_train.learn.ppo_baseline import PPOConfig, make_networks

ROBOT = load_robot_config()


def _rows(*judged):
    return [{"iteration": it, "falls": f, "seeds": 20, "e_track_cm": e, "root_z_cm": 1.0} for it, f, e in judged]


def _history(iterations: int, per_iteration: int, s_per_iteration: float):
    return [{"env_steps": float((i + 1) * per_iteration), "wall_s": i * s_per_iteration, "tracking_error_m": 0.05, "reward": 0.5}
            for i in range(iterations)]


def test_evaluated_threshold_is_the_first_policy_within_both_limits():
    history = _history(200, 256, 5.0)
    rows = _rows((150, 1, 2.0), (50, 3, 1.0), (100, 2, 2.6), (200, 0, 1.0))  # out of order on purpose
    first = evaluated_threshold(history, rows, max_falls=2, max_e_track_cm=2.5, steps_per_iteration=256)
    assert first["iteration"] == 150 and first["env_steps"] == 150 * 256 and first["wall_s"] == 149 * 5.0
    assert evaluated_threshold(history, rows, max_falls=0, max_e_track_cm=2.5, steps_per_iteration=256)["iteration"] == 200
    assert evaluated_threshold(history, rows, max_falls=0, max_e_track_cm=0.5, steps_per_iteration=256) is None


def _write_method(out, method, per_iteration, iterations, judged):
    run = out / method
    (run / "select").mkdir(parents=True)
    (run / "history.json").write_text(json.dumps({"steps_per_iteration": per_iteration, "rows": _history(iterations, per_iteration, 2.0)}))
    with open(run / "select" / "checkpoints.csv", "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=["iteration", "falls", "seeds", "e_track_cm", "root_z_cm"])
        writer.writeheader()
        writer.writerows(_rows(*judged))


def test_report_gives_ratios_and_a_lower_bound_for_a_method_that_never_passes(tmp_path, capsys):
    _write_method(tmp_path, "shac_bcg", 256, 200, [(100, 5, 1.0), (200, 1, 1.2)])
    _write_method(tmp_path, "shac_stiff", 256, 400, [(200, 4, 1.0), (400, 2, 1.1)])
    _write_method(tmp_path, "ppo", 1536, 300, [(100, 20, 3.0), (200, 9, 2.0), (300, 6, 1.9)])
    verdict = report(tmp_path, threshold_cm=2.5, max_falls=2, max_e_track_cm=2.5)
    assert verdict["methods"]["shac_bcg"]["evaluated_threshold"]["env_steps"] == 200 * 256
    assert verdict["ratios"]["shac_stiff_to_shac_bcg_env_steps"] == pytest.approx(2.0)
    assert verdict["methods"]["ppo"]["evaluated_threshold"] is None
    assert verdict["ratios"]["ppo_to_shac_bcg_env_steps_at_least"] == pytest.approx(300 * 1536 / (200 * 256))
    assert json.loads((tmp_path / "benchmark.json").read_text())["ratios"] == verdict["ratios"]
    assert "not reached" in capsys.readouterr().out
    assert (tmp_path / "benchmark.png").stat().st_size > 10_000


def test_the_lower_bound_counts_only_judged_policies_and_every_method_is_judged_alike(tmp_path):
    """PPO judged only up to iteration 100 of its 300: the bound is what was judged (100 iterations'
    steps), not its whole budget; with no PPO policy judged there is no bound (it read 12x with
    policies_judged 0). A method judged on 5 seeds beside one on 20 is refused."""
    _write_method(tmp_path / "a", "shac_bcg", 256, 200, [(100, 5, 1.0), (200, 1, 1.2)])
    _write_method(tmp_path / "a", "ppo", 1536, 300, [(50, 20, 3.0), (100, 9, 2.0)])
    verdict = report(tmp_path / "a", threshold_cm=2.5, max_falls=2, max_e_track_cm=2.5)
    assert verdict["ratios"]["ppo_to_shac_bcg_env_steps_at_least"] == pytest.approx(100 * 1536 / (200 * 256))
    # these tables record the seed count only: the rest of the judging is said to be unchecked
    assert verdict["judged_alike"] == {"alike": {"seeds": 20}, "not_recorded": ["first_seed", "duration_s", "judged_with"]}
    _write_method(tmp_path / "b", "shac_bcg", 256, 200, [(100, 5, 1.0), (200, 1, 1.2)])
    _write_method(tmp_path / "b", "ppo", 1536, 300, [])
    verdict = report(tmp_path / "b", threshold_cm=2.5, max_falls=2, max_e_track_cm=2.5)
    assert verdict["methods"]["ppo"]["policies_judged"] == 0 and verdict["ratios"] == {}
    _write_method(tmp_path / "c", "shac_bcg", 256, 200, [(100, 5, 1.0), (200, 1, 1.2)])
    _write_method(tmp_path / "c", "ppo", 1536, 300, [(100, 1, 1.0)])
    table = tmp_path / "c" / "ppo" / "select" / "checkpoints.csv"
    table.write_text(table.read_text().replace("100,1,20,", "100,1,5,"))  # judged on 5 seeds
    with pytest.raises(BCGInputError, match="judged under different settings"):
        report(tmp_path / "c", threshold_cm=2.5, max_falls=2, max_e_track_cm=2.5)


def test_a_resumed_ppo_runs_first_row_without_metrics_is_left_out_of_the_report(tmp_path):
    """brax reports a resumed run's first evaluation before any episode ended: NaN metrics (the
    squat benchmark's PPO row 801). The report could not read the benchmark's own history."""
    _write_method(tmp_path, "shac_bcg", 256, 200, [(100, 5, 1.0), (200, 1, 1.2)])
    _write_method(tmp_path, "ppo", 1536, 300, [(100, 20, 3.0), (300, 6, 1.9)])
    history = tmp_path / "ppo" / "history.json"
    saved = json.loads(history.read_text())
    saved["rows"][150] = dict(saved["rows"][150], tracking_error_m=float("nan"), reward=float("nan"))
    history.write_text(json.dumps(saved))
    verdict = report(tmp_path, threshold_cm=2.5, max_falls=2, max_e_track_cm=2.5)
    assert verdict["methods"]["ppo"]["env_steps_total"] == 300 * 1536 and math.isfinite(verdict["methods"]["ppo"]["final_reward"])
    assert verdict["ratios"]["ppo_to_shac_bcg_env_steps_at_least"] == pytest.approx(300 * 1536 / (200 * 256))


def test_report_of_a_missing_directory_is_one_line_and_exit_2(tmp_path, capsys):
    with pytest.raises(SystemExit) as exc:
        main(["--report", "--out", str(tmp_path / "none")])
    assert exc.value.code == 2
    err = capsys.readouterr().err.strip()
    assert "none" in err and "no benchmark directory" in err and "\n" not in err


@pytest.mark.parametrize("option, value, problem", [
    ("--ppo-envs", "0", "must be an integer >= 1"),  # was brax's ZeroDivisionError after the setup
    ("--iterations", "0", "must be an integer >= 1"), ("--eval-max-falls", "-1", "must be an integer >= 0"),
    ("--threshold", "nan", "must be a finite number > 0"), ("--eval-max-etrack", "nan", "must be a finite number > 0"),
])
def test_counts_and_thresholds_that_make_no_sense_are_refused_by_the_parser(option, value, problem, capsys):
    with pytest.raises(SystemExit) as exc:
        main([option, value, "--report"])
    assert exc.value.code == 2
    assert capsys.readouterr().err.splitlines()[-1] == f"bcg-benchmark: error: argument {option}: {problem}, got '{value}'"


def test_claim_refuses_a_shac_iteration_count_below_one(capsys):
    from bcg_train.cli.claim import main as claim_main

    with pytest.raises(SystemExit) as exc:  # --shac-iterations 0 ran on without end
        claim_main(["--shac-iterations", "0"])
    assert exc.value.code == 2
    assert capsys.readouterr().err.splitlines()[-1] == "bcg-claim: error: argument --shac-iterations: must be an integer >= 1, got '0'"


def test_an_out_blocked_by_a_file_is_one_line_and_exit_2_before_training(tmp_path, capsys):
    """The first method's folder was made after it had trained: a FileExistsError traceback then."""
    blocker = tmp_path / "taken"
    blocker.write_text("")
    with pytest.raises(SystemExit) as exc:
        main(["--methods", "shac_bcg", "--iterations", "1", "--out", str(blocker)])
    assert exc.value.code == 2
    assert capsys.readouterr().err.strip() == f"bcg-benchmark: error: {blocker}: exists and is not a directory (--out)"


def test_report_of_a_directory_without_a_method_history_is_one_line_and_exit_2(tmp_path, capsys):
    """Not exit 0 with a benchmark.json of no method, which reads as a benchmark that ran nothing."""
    (tmp_path / "ppo").mkdir()  # a method folder without its history.json yet
    with pytest.raises(SystemExit) as exc:
        main(["--report", "--out", str(tmp_path)])
    assert exc.value.code == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith(f"bcg-benchmark: error: {tmp_path}: nothing to report") and "\n" not in err
    assert not (tmp_path / "benchmark.json").exists()


_METRICS_HEADER = "iteration,env_steps,wall_s,tracking_error_m,reward\n"


@pytest.mark.parametrize("method, name, text, problem", [
    ("shac_bcg", "history.json", '{"rows": [', "not readable as JSON"),  # cut short while it was written
    ("ppo", "history.json", "{}", "not a bcg-benchmark history"),
    ("ppo", "history.json", '{"steps_per_iteration": 256, "rows": []}', "no rows"),
    ("ppo", "history.json", '{"steps_per_iteration": 256, "rows": [{"env_steps": 256}]}', "row 1 has no finite number under wall_s"),
    ("ppo", "history.json", '{"steps_per_iteration": 256, "rows": [{"env_steps": 256, "wall_s": 1, "tracking_error_m": NaN, '
                            '"reward": 1}]}', "no row has a finite number under tracking_error_m"),  # was a report of NaNs, exit 0
    ("ppo", "history.json", '{"steps_per_iteration": 256, "rows": [{"env_steps": 256, "wall_s": 1, "tracking_error_m": 1' + "0" * 400
                            + ', "reward": 1}]}', "no row has a finite number under tracking_error_m"),  # an int no float holds
    ("shac_stiff", "metrics.csv", _METRICS_HEADER + "0,0,1,0.1,1\n", "row 1: iteration 0"),
    ("shac_stiff", "metrics.csv", _METRICS_HEADER + "1,256,x,0.1,1\n", "not a bcg-train metrics table"),
    ("shac_stiff", "metrics.csv", _METRICS_HEADER + "1,256,1,nan,1\n", "row 1 has no finite number under tracking_error_m"),
    ("shac_bcg", "select/checkpoints.csv", "iteration,falls,seeds,e_track_cm,root_z_cm\n50,abc,20,1.0,1.0\n",
     "line 2: column 'falls' is 'abc', not an integer"),
    ("shac_bcg", "select/checkpoints.csv", "iteration,falls,seeds,e_track_cm,root_z_cm\n50,1,20,nan,1.0\n",
     "line 2: column 'e_track_cm' is 'nan', not a finite number"),
], ids=["history_cut_short", "history_empty_object", "history_no_rows", "history_row_incomplete", "history_nan", "history_huge_int",
        "metrics_iteration_0", "metrics_not_a_number", "metrics_nan", "selection_table_not_a_number", "selection_table_nan"])
def test_report_of_an_unreadable_history_or_table_is_one_line_naming_the_file(tmp_path, capsys, method, name, text, problem):
    _write_method(tmp_path, "shac_bcg", 256, 10, [(5, 0, 1.0)])
    (tmp_path / method / name).parent.mkdir(parents=True, exist_ok=True)
    (tmp_path / method / name).write_text(text)
    with pytest.raises(SystemExit) as exc:
        main(["--report", "--out", str(tmp_path)])
    assert exc.value.code == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith(f"bcg-benchmark: error: {tmp_path / method / name}: ") and problem in err and "\n" not in err, err
    assert not (tmp_path / "benchmark.json").exists()


def test_methods_differ_only_in_the_estimator_and_all_train_on_stiff_contact(tmp_path):
    base = load_train_config(TRAIN_CONFIG_DIR / "squat.yaml", "cpu-small")
    cfgs = {m: method_config(base, m, tmp_path / m, 25) for m in ("shac_bcg", "shac_stiff", "ppo")}
    assert {c.task.contact for c in cfgs.values()} == {"stiff"}
    assert base.task.bcg.mode == "bcg"  # the task's own mode: only the BCG arm keeps it
    assert [cfgs[m].task.bcg.mode for m in ("shac_bcg", "shac_stiff", "ppo")] == ["bcg", "plain", "plain"]
    assert all(c.checkpoint_every == 25 for c in cfgs.values())
    assert cfgs["shac_bcg"].task.rewards == cfgs["ppo"].task.rewards == base.task.rewards
    assert "cpu-small" in PRESETS


def _ppo_arm(tmp_path):
    """The squat benchmark's PPO arm at a tiny size: (run dir, its config, PPO config, fresh brax params)."""
    base = load_train_config(TRAIN_CONFIG_DIR / "squat.yaml", "cpu-small")
    run = tmp_path / "ppo"
    cfg = method_config(base, "ppo", run, 2)
    ppo = PPOConfig(num_envs=4, rollout_steps=24, actor_hidden=(16,), critic_hidden=(8,))
    n_obs = observation_size(cfg.task.observation_spec, ROBOT.num_joints)
    nets = make_networks(ppo, n_obs, ROBOT.num_joints)
    params = (running_statistics.init_state(jax.ShapeDtypeStruct((n_obs,), jnp.float32)),
              jax.device_get(nets.policy_network.init(jax.random.PRNGKey(0))), None)
    return run, cfg, ppo, params


def test_a_diverged_ppo_iteration_writes_no_policy_and_the_run_goes_on(tmp_path, capsys):
    """A PPO iteration whose weights went non-finite is not exported (the node would damp on it at its
    first RUN tick): it is said so, and the next iteration's policy is written."""
    run, cfg, ppo, healthy = _ppo_arm(tmp_path)
    diverged = (healthy[0], jax.tree_util.tree_map(lambda x: np.full_like(x, np.nan), healthy[1]), None)
    write = ppo_policy_writer(cfg, ppo, 1, run / "policies")
    write(1 * 4 * 24, None, diverged)
    write(2 * 4 * 24, None, healthy)
    assert sorted(p.name for p in (run / "policies").glob("*.onnx")) == ["it000002.onnx"]
    assert not (run / "policies" / "it000001.params.pkl").exists()
    assert "bcg-benchmark: PPO iteration 1: " in capsys.readouterr().out


def test_ppo_policies_are_written_every_n_iterations_and_judged_by_select_checkpoint(tmp_path):
    """The PPO arm's writer exports brax's policy with its config; bcg-select-checkpoint judges the
    files directly (bridge model, DR on, a short rollout)."""
    run, cfg, ppo, params = _ppo_arm(tmp_path)
    write = ppo_policy_writer(cfg, ppo, 2, run / "policies")
    for iteration in range(5):  # brax calls it before training (0) and after every iteration
        write(iteration * 4 * 24, None, params)
    assert sorted(p.name for p in (run / "policies").glob("*.onnx")) == ["it000002.onnx", "it000004.onnx"]
    policy = OnnxPolicy.load(run / "policies" / "it000002.onnx", ROBOT)
    assert policy.contract.motion_id == "squat" and policy.contract.action_offset == cfg.task.action_offset
    assert (run / "policies" / "it000002.train.yaml").is_file()
    # its parameters resume a run of the same config, clip and environment count
    import pickle

    from bcg_train.cli.benchmark import ppo_resume_point, ppo_run_provenance
    from bcg_train.learn.config import config_hash, motion_sha256

    saved = pickle.loads((run / "policies" / "it000004.params.pkl").read_bytes())
    assert {key: saved[key] for key in ("config_hash", "motion_sha256", "num_envs")} == {
        "config_hash": config_hash(cfg), "motion_sha256": motion_sha256(cfg), "num_envs": 4}
    iteration, loaded = ppo_resume_point(run / "policies" / "it000004.params.pkl", ppo_run_provenance(cfg, 4))  # as --resume-ppo
    assert iteration == 4 and np.array_equal(loaded[0].mean, params[0].mean)

    assert select_main([str(run), "--every", "2", "--seeds", "1", "--duration", "0.3"]) == 0
    with open(run / "select" / "checkpoints.csv") as f:
        rows = list(csv.DictReader(f))
    assert [int(r["iteration"]) for r in rows] == [2, 4] and all(int(r["seeds"]) == 1 for r in rows)
    assert np.isfinite(float(rows[0]["e_track_cm"]))
    assert json.loads((run / "select" / "best.json").read_text())["iteration"] in (2, 4)


def test_ppo_resume_point_reads_what_the_writer_saved_and_history_continues(tmp_path, capsys):
    import pickle

    from bcg_robot.errors import BCGInputError
    from bcg_train.cli.benchmark import merge_history, ppo_provenance, ppo_resume_point

    params = ({"mean": np.arange(3.0)}, {"w": np.ones(2)}, {"v": np.zeros(1)})
    path = tmp_path / "it000150.params.pkl"
    path.write_bytes(pickle.dumps(params))
    iteration, loaded = ppo_resume_point(path, ppo_provenance("abc", "d1", 64))  # bare params: written before provenance
    assert iteration == 150 and np.array_equal(loaded[0]["mean"], params[0]["mean"])
    # a file written with its provenance resumes only a run that shares it
    path.write_bytes(pickle.dumps({"params": params, **ppo_provenance("abc", "d1", 64)}))
    iteration, loaded = ppo_resume_point(path, ppo_provenance("abc", "d1", 64))
    assert iteration == 150 and np.array_equal(loaded[1]["w"], params[1]["w"])
    for other, key in ((ppo_provenance("xyz", "d1", 64), "config_hash"), (ppo_provenance("abc", "d2", 64), "motion_sha256"),
                       (ppo_provenance("abc", "d1", 32), "num_envs")):
        with pytest.raises(BCGInputError, match=f"{path.name}: written by a run with another {key}"):
            ppo_resume_point(path, other)
    path.write_bytes(b"garbage")
    with pytest.raises(BCGInputError, match="cannot read PPO parameters"):
        ppo_resume_point(path)
    earlier = _history(200, 10, 1.0)  # part 1 ran on past its last saved policy
    later = [{"env_steps": 1500.0 + 10 * (i + 1), "wall_s": float(i), "tracking_error_m": 0.0, "reward": 0.0} for i in range(3)]
    merged = merge_history(earlier, later, steps_per_iteration=10, start_iteration=150)
    assert [h["env_steps"] for h in merged[148:]] == [1490.0, 1500.0, 1510.0, 1520.0, 1530.0]
    assert [h["wall_s"] for h in merged[149:]] == [149.0, 149.0, 150.0, 151.0]
    for bad, problem in ((tmp_path / "it000150.pkl", "not a PPO parameter file"), (tmp_path / "it000999.params.pkl", "not a PPO parameter file")):
        (tmp_path / "it000150.pkl").write_bytes(b"x")
        with pytest.raises(SystemExit) as exc:
            main(["--methods", "ppo", "--resume-ppo", str(bad), "--out", str(tmp_path / "b")])
        assert exc.value.code == 2
        err = capsys.readouterr().err.strip()
        assert problem in err and bad.name in err and "\n" not in err
    with pytest.raises(SystemExit) as exc:
        main(["--resume-ppo", str(path)])  # every method: refused
    assert exc.value.code == 2


def test_a_resumed_bcg_train_run_is_read_with_its_training_time_summed_over_parts(tmp_path):
    from bcg_train.cli.benchmark import history_from_metrics_csv

    run = tmp_path / "shac_bcg"
    run.mkdir()
    lines = ["iteration,reward,tracking_error_m,env_steps,wall_s"]
    # part 1: iterations 1-3, the first compiles (100 s), then 5 s each; part 2 resumes at 4, compiles again
    for it, wall in ((1, 100.0), (2, 105.0), (3, 110.0), (4, 90.0), (5, 95.0)):
        lines.append(f"{it},0.5,0.04,{256 * it},{wall}")
    (run / "metrics.csv").write_text("\n".join(lines) + "\n")
    rows, per_iteration = history_from_metrics_csv(run / "metrics.csv")
    assert per_iteration == 256
    assert [r["wall_s"] for r in rows] == [0.0, 5.0, 10.0, 10.0, 15.0]
    (run / "select").mkdir()
    (run / "select" / "checkpoints.csv").write_text("iteration,falls,seeds,e_track_cm,root_z_cm\n5,1,20,1.0,1.0\n")
    verdict = report(tmp_path, threshold_cm=2.5, max_falls=2, max_e_track_cm=2.5)
    assert verdict["methods"]["shac_bcg"]["evaluated_threshold"] == {
        "iteration": 5, "env_steps": 1280.0, "wall_s": 15.0, "falls": 1, "seeds": 20, "e_track_cm": 1.0}


def test_a_ppo_part_stops_at_its_time_limit_and_hands_over_its_rows_as_it_goes(tmp_path):
    from bcg_train.cli.benchmark import run_ppo
    from bcg_train.tasks.point_mass import PointMassTask

    base = load_train_config(TRAIN_CONFIG_DIR / "squat.yaml", "cpu-small")
    cfg = method_config(base, "ppo", tmp_path / "ppo", 10)
    cfg = dataclasses.replace(cfg, shac=dataclasses.replace(cfg.shac, actor_hidden=(8,), critic_hidden=(8,)))
    saved = []
    rows = run_ppo(cfg, iterations=50, num_envs=8, seed=0, resume=(7, None), max_train_s=1e-9,
                   on_rows=lambda r: saved.append(len(r)), task=PointMassTask())
    # the first row is the compiling iteration (0 s by definition); the second ends past the limit
    assert len(rows) == 2 and saved == [1, 2]
    assert [r["env_steps"] for r in rows] == [8 * 24 * 8.0, 8 * 24 * 9.0]  # counted on from iteration 7


@pytest.mark.parametrize("blocked", ["benchmark.json", "benchmark.png", "shac_bcg/select/checkpoints.csv"])
def test_report_into_a_folder_where_a_file_goes_is_one_line_and_exit_2(tmp_path, capsys, blocked):
    """A folder in the place of a file the report reads or writes: was IsADirectoryError's traceback, or a
    selection table silently read as empty."""
    _write_method(tmp_path, "shac_bcg", 256, 10, [(5, 0, 1.0)])
    (tmp_path / blocked).unlink(missing_ok=True)  # the method's own table, replaced by a folder
    (tmp_path / blocked).mkdir(parents=True)
    with pytest.raises(SystemExit) as exc:
        main(["--report", "--out", str(tmp_path)])
    assert exc.value.code == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith(f"bcg-benchmark: error: {tmp_path / blocked}: is a directory") and "\n" not in err, err
    assert not (tmp_path / "benchmark.json").is_file()
