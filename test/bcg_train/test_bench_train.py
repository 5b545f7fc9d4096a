"""bcg-bench-train: ratios from one run, the table, and its argument checks (the timed
workers themselves are measured by running the benchmark, see the README)."""

import json
from pathlib import Path

import pytest

from bcg_train.cli.bench_train import ROW_KEYS, add_means, format_table, main, ratios, solver_ratios


def _row(n, estimator, s, compile_s=10.0, rss=2.0):
    return {"task": "squat", "num_envs": n, "estimator": estimator, "compile_s": compile_s, "peak_rss_gb": rss,
            "s_per_iteration": s, "env_steps_per_s": n * 32 / s, "bundled_fraction": 0.2 if estimator == "bcg" else 0.0,
            "s_rollout_backward": 0.8 * s, "s_critic_update": 0.2 * s}


def test_ratios_pair_bcg_with_plain_at_the_same_batch_size_only():
    rows = [_row(8, "plain", 2.0), _row(8, "bcg", 5.0, compile_s=30.0, rss=3.0), _row(32, "bcg", 9.0)]
    (only,) = ratios(rows)  # x32 has no plain row: no ratio
    assert only == {"task": "squat", "num_envs": 8, "bcg_over_plain_s_per_iteration": 2.5, "bcg_over_plain_compile_s": 3.0,
                    "bcg_over_plain_peak_rss_gb": 1.5}
    table = format_table(rows, [only])
    assert "squat x8: BCG / plain = 2.50x per iteration" in table and len(table.splitlines()) == 2 + 3 + 1


def test_a_burst_of_bundles_shows_in_the_mean_and_its_ratio_where_the_median_hides_it():
    plain = add_means({**_row(8, "plain", 2.0), "horizon": 32, "s_each_iteration": [2.0, 2.0, 2.0, 2.0, 2.0]})
    bcg = add_means({**_row(8, "bcg", 2.1), "horizon": 32, "s_each_iteration": [2.1, 2.1, 9.1, 2.1, 2.1]})
    assert (bcg["s_per_iteration_mean"], bcg["env_steps_per_s_mean"]) == (3.5, round(256 / 3.5, 1))
    (ratio,) = ratios([plain, bcg])
    assert (ratio["bcg_over_plain_s_per_iteration"], ratio["bcg_over_plain_s_per_iteration_mean"]) == (1.05, 1.75)
    assert "squat x8: BCG / plain = 1.05x per iteration (median; 1.75x by the mean)" in format_table([plain, bcg], [ratio])


def test_each_trigger_threshold_gets_its_ratio_to_the_one_plain_row():
    rows = [_row(8, "plain", 2.0), {**_row(8, "bcg", 8.0), "force_threshold": 400.0}, {**_row(8, "bcg", 3.0), "force_threshold": 800.0}]
    low, high = ratios(rows)
    assert (low["force_threshold"], low["bcg_over_plain_s_per_iteration"]) == (400.0, 4.0)
    assert (high["force_threshold"], high["bcg_over_plain_s_per_iteration"]) == (800.0, 1.5)
    table = format_table(rows, [low, high])
    assert "squat x8 (tau 400 N): BCG / plain = 4.00x" in table and "squat x8 (tau 800 N): BCG / plain = 1.50x" in table


def test_solver_iteration_counts_pair_bcg_with_plain_at_the_same_count_and_get_their_own_ratios():
    rows = [{**_row(8, est, s), "solver_iterations": n} for n, est, s in
            ((3, "plain", 2.0), (3, "bcg", 5.0), (10, "plain", 5.0), (10, "bcg", 10.0))]
    three, ten = ratios(rows)
    assert (three["solver_iterations"], three["bcg_over_plain_s_per_iteration"]) == (3, 2.5)
    assert (ten["solver_iterations"], ten["bcg_over_plain_s_per_iteration"]) == (10, 2.0)
    plain, bcg = solver_ratios(rows, [3, 10])
    assert (plain["estimator"], plain["s_per_iteration_ratio"], bcg["estimator"], bcg["s_per_iteration_ratio"]) == ("plain", 2.5, "bcg", 2.0)
    assert solver_ratios(rows, [3]) == [] and solver_ratios(rows, None) == []
    table = format_table(rows, [three, ten], [plain, bcg])
    assert "squat x8 (10 solver iterations): BCG / plain = 2.00x" in table
    assert "squat x8 plain: 10 / 3 solver iterations = 2.50x per iteration" in table


def test_the_committed_throughput_run_has_the_promised_shape_and_its_own_ratios():
    data = json.loads((Path(__file__).resolve().parents[2] / "docs/results/train-throughput/throughput.json").read_text())
    assert {(r["num_envs"], r["estimator"]) for r in data["rows"]} == {(8, "plain"), (8, "bcg"), (32, "plain"), (32, "bcg")}
    assert all(set(ROW_KEYS) <= set(r) and r["task"] == "squat" for r in data["rows"])
    assert data["ratios"] == ratios(data["rows"]) and not data["failed"]


@pytest.mark.parametrize("argv, message", [(["--iterations", "3"], "--iterations must be >= 5"), (["--num-envs", "0"], "--num-envs must be >= 1"),
    (["--num-envs", "8", "32", "--bundle-slots", "1", "2", "3"], "--bundle-slots takes one value"),
    (["--solver-iterations", "3", "0"], "--solver-iterations must be >= 1"),
    (["--task", "hopper", "--physics-dt", "0.004"], "--physics-dt and --solver-iterations are for G1 tasks")])
def test_bad_arguments_are_one_line_errors(argv, message, tmp_path, capsys):
    with pytest.raises(SystemExit) as exit_:
        main(argv + ["--out", str(tmp_path / "t.json")])
    assert exit_.value.code == 2  # bad input, as argparse's own errors (was 1)
    err = capsys.readouterr().err.strip().splitlines()[-1]
    assert err.startswith("bcg-bench-train: error: ") and message in err, err


@pytest.mark.parametrize("argv, message", [
    (["--preset", "bogus"], "argument --preset: invalid choice: 'bogus'"),
    (["--horizon", "-1"], "argument --horizon: must be an integer >= 1, got '-1'"),
    (["--physics-dt", "nan"], "argument --physics-dt: must be a finite number > 0, got 'nan'"),
    (["--tau", "800", "-1"], "argument --tau: must be a finite number >= 0, got '-1'"),
    (["--tau", "nan"], "argument --tau: must be a finite number >= 0, got 'nan'"),  # passed, and every BCG row measured nothing
    (["--task", "nonexist"], "nonexist.yaml"),
])
def test_a_task_preset_or_setting_no_worker_could_run_is_refused_before_any_is_spawned(argv, message, tmp_path, capsys, monkeypatch):
    """Found only in each worker before: a FAILED row per configuration, an empty table, exit 1."""
    import bcg_train.cli.bench_train as cli

    monkeypatch.setattr(cli, "_spawn", lambda spec: pytest.fail("a worker was spawned"))
    with pytest.raises(SystemExit) as exit_:
        main(argv + ["--out", str(tmp_path / "t.json")])
    assert exit_.value.code == 2
    err = capsys.readouterr().err.strip().splitlines()[-1]  # argparse's usage lines come before it
    assert err.startswith("bcg-bench-train: error: ") and message in err, err
    with pytest.raises(SystemExit) as exit_:
        main(["--physics-dt", "0.001", "--out", str(tmp_path / "t.json")])
    assert exit_.value.code == 2
    assert "--physics-dt: train physics_dt 0.001 outside [0.004, 0.005] s" in capsys.readouterr().err


def test_an_output_directory_is_refused_before_anything_runs(tmp_path, capsys):
    with pytest.raises(SystemExit) as exit_:
        main(["--out", str(tmp_path)])
    assert exit_.value.code == 2
    assert capsys.readouterr().err.strip() == f"bcg-bench-train: error: {tmp_path}: is a directory (--out names the file to write)"


def test_an_output_folder_blocked_by_a_file_is_one_line_before_anything_runs(tmp_path, capsys, monkeypatch):
    import bcg_train.cli.bench_train as cli

    monkeypatch.setattr(cli, "_spawn", lambda spec: pytest.fail("measured before checking --out"))
    (tmp_path / "taken").write_text("")
    with pytest.raises(SystemExit) as exit_:
        main(["--out", str(tmp_path / "taken" / "t.json"), "--num-envs", "1"])
    err = capsys.readouterr().err.strip()
    assert exit_.value.code == 2 and len(err.splitlines()) == 1 and "taken" in err and "--out" in err
