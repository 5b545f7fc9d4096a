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


def test_a_solver_iteration_count_below_one_is_refused(capsys):
    with pytest.raises(SystemExit):
        parse_args(["--solver-iterations", "0"])
    assert "--solver-iterations must be >= 1, got 0" in capsys.readouterr().err


def test_an_unknown_estimator_is_refused():
    with pytest.raises(SystemExit):
        parse_args(["--estimators", "finite_differences"])
