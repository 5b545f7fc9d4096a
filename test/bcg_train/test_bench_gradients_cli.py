"""bcg-bench-gradients' command line: the settings it builds (the benchmark itself is measured
by running it, see the README). Its parser once referenced a name its module no longer
imported, and every run died before it started."""

from pathlib import Path

import pytest

from bcg_train.cli.bench_gradients import parse_args


def test_the_defaults_parse():
    settings, out_dir = parse_args([])
    assert out_dir == Path("runs/bench_gradients") and settings.estimators and settings.presets


def test_arguments_reach_the_settings():
    settings, out_dir = parse_args(["--presets", "stiff", "--estimators", "plain", "bcg", "--tau", "1600", "--num-starts", "8",
                                    "--horizon", "8", "--solver-iterations", "3", "--out-dir", "out/g"])
    assert settings.presets == ("stiff",) and settings.estimators == ("plain", "bcg") and settings.solver_iterations == 3
    assert (settings.force_threshold, settings.num_starts, settings.horizon, out_dir) == (1600.0, 8, 8, Path("out/g"))


@pytest.mark.parametrize("argv, problem", [
    (["--solver-iterations", "0"], "argument --solver-iterations: must be an integer >= 1, got '0'"),
    # these were tracebacks from inside the benchmark, or (--num-starts 0) a run that never ended
    (["--horizon", "-1"], "argument --horizon: must be an integer >= 1, got '-1'"),
    (["--num-starts", "0"], "argument --num-starts: must be an integer >= 1, got '0'"),
    (["--num-starts", "1"], "--num-starts must be >= 2 (a variance needs two gradients), got 1"),
    (["--physics-dt", "nan"], "argument --physics-dt: must be a finite number > 0, got 'nan'"),
    (["--physics-dt", "0.001"], "argument --physics-dt: train physics_dt 0.001 outside [0.004, 0.005] s"),
    (["--qpos-noise=-0.001"], "argument --qpos-noise: must be a finite number >= 0, got '-0.001'"),
    # these passed parsing (a NaN force threshold: no contact ever triggers a bundle)
    (["--tau", "nan"], "argument --tau: must be a finite number >= 0, got 'nan'"),
    (["--seed", "-7"], "argument --seed: must be an integer >= 0, got '-7'"),
])
def test_settings_the_benchmark_cannot_run_are_one_line_errors(argv, problem, capsys):
    with pytest.raises(SystemExit) as exc:
        parse_args(argv)
    assert exc.value.code == 2
    assert capsys.readouterr().err.splitlines()[-1] == f"bcg-bench-gradients: error: {problem}"


def test_an_unknown_estimator_is_refused():
    with pytest.raises(SystemExit):
        parse_args(["--estimators", "finite_differences"])


def _stats(name, samples):
    import numpy as np

    from bcg_train.bcg.diagnostics import GradientStatistics, sample_statistics

    mean, trace, cv, cosine = sample_statistics(samples)
    norms = np.linalg.norm(samples, axis=1)
    return GradientStatistics(name, len(samples), 0, mean, trace, cv, cosine, 1.0, 1.0, 0.0, 0.0, 0.0,
                              float(np.median(norms)), float(norms.max() / np.median(norms)), samples)


def test_rows_carry_a_paired_interval_around_the_ratio_and_json_ready_scalars():
    import json

    import numpy as np

    from bcg_train.bench.gradient_variance import comparison_rows

    rng = np.random.default_rng(0)
    plain = rng.normal(size=(16, 5))
    plain[3] *= 50.0
    results = {"plain": {"stiff": _stats("plain", plain)}, "bcg": {"stiff": _stats("bcg", plain / 3.0)}}
    rows = {r["estimator"]: r for r in comparison_rows(results)}
    assert rows["bcg"]["variance_ratio_to_plain"] == pytest.approx(9.0)
    low, high = rows["bcg"]["variance_ratio_interval_90"]
    assert low == pytest.approx(9.0) and high == pytest.approx(9.0)  # same starts: paired, exact
    assert rows["plain"]["max_norm_over_median"] > 10
    assert "samples" not in rows["bcg"] and "mean_gradient" not in rows["bcg"]
    json.dumps(rows)  # the CLI writes them as they are


def test_an_output_folder_that_is_a_file_is_one_line_before_the_measurement(tmp_path, capsys, monkeypatch):
    import bcg_train.cli.bench_gradients as cli

    monkeypatch.setattr(cli, "run_benchmark", lambda *a: pytest.fail("measured before checking --out-dir"))
    (tmp_path / "taken").write_text("")
    with pytest.raises(SystemExit) as exit_:
        cli.main(["--out-dir", str(tmp_path / "taken")])
    err = capsys.readouterr().err.strip()
    assert exit_.value.code == 2 and err.splitlines() == [f"bcg-bench-gradients: error: {tmp_path / 'taken'}: exists and is not a directory (--out-dir)"]
