"""Training curves: every panel drawn from metrics.csv, non-finite values marked."""

import math

import matplotlib.pyplot as plt
import numpy as np
import pytest

from bcg_train.learn.curves import (PANELS, SMOOTHING_WINDOW, plot_training_curves, read_metrics, trailing_mean,
                                    training_curves_figure)

LOGGED = ("reward", "tracking_error_m", "actor_grad_norm")  # the other panels' columns are absent


@pytest.fixture
def metrics_csv(tmp_path):
    csv = tmp_path / "metrics.csv"
    lines = ["iteration,reward,tracking_error_m,actor_grad_norm,env_steps"]
    lines += [f"{i},{0.5 + 0.01 * i},{0.05 - 0.001 * i},{'inf' if i == 3 else 10.0 * i},{256 * i}" for i in range(1, 31)]
    csv.write_text("\n".join(lines) + "\n")
    return csv


@pytest.fixture
def figure(metrics_csv):
    fig = training_curves_figure(read_metrics(metrics_csv), "run")
    yield fig
    plt.close(fig)


def panels(fig):
    """{axis title: axis} of the figure's panels."""
    return {ax.get_title(): ax for ax in fig.axes}


def test_read_metrics_keeps_every_column_and_non_finite_values(metrics_csv):
    data = read_metrics(metrics_csv)
    assert set(data) == {"iteration", "reward", "tracking_error_m", "actor_grad_norm", "env_steps"}
    assert data["actor_grad_norm"][2] == math.inf and len(data["reward"]) == 30


def test_every_logged_column_is_plotted_raw_and_smoothed_against_env_steps(metrics_csv, figure):
    data = read_metrics(metrics_csv)
    axes = panels(figure)
    assert list(axes) == [label for _, label, _ in PANELS]  # one panel per entry, in order
    for key, label, log in PANELS:
        if key not in LOGGED:
            continue
        finite = [(x, v) for x, v in zip(data["env_steps"], data[key]) if math.isfinite(v)]
        xs, vs = (list(c) for c in zip(*finite))
        raw, smoothed = axes[label].lines[:2]
        assert np.array_equal(raw.get_xdata(), xs) and np.array_equal(raw.get_ydata(), vs), key
        assert np.array_equal(smoothed.get_xdata(), xs), key
        assert np.allclose(smoothed.get_ydata(), trailing_mean(vs, SMOOTHING_WINDOW)), key
        assert axes[label].get_yscale() == ("log" if log else "linear"), key


def test_non_finite_values_are_left_out_of_the_curve_and_marked(metrics_csv, figure):
    label = next(label for key, label, _ in PANELS if key == "actor_grad_norm")
    ax = panels(figure)[label]
    raw, _, marks = ax.lines
    assert 768.0 not in raw.get_xdata() and len(raw.get_xdata()) == 29  # iteration 3 (inf)
    assert list(marks.get_xdata()) == [768.0] and marks.get_marker() == "x"
    assert ax.get_legend().get_texts()[0].get_text() == "non-finite (1)"
    reward = panels(figure)[PANELS[0][1]]
    assert len(reward.lines) == 2 and reward.get_legend() is None  # nothing to mark


def test_a_column_that_is_not_logged_reads_so(figure):
    for key, label, _ in PANELS:
        ax = panels(figure)[label]
        texts = [t.get_text() for t in ax.texts]
        if key in LOGGED:
            assert ax.lines and "not logged" not in texts, key
        else:
            assert not ax.lines and texts == ["not logged"], key


def test_plot_training_curves_writes_a_png(metrics_csv, tmp_path):
    open_before = plt.get_fignums()
    out = plot_training_curves(metrics_csv, tmp_path / "plots" / "curves.png")
    assert out == tmp_path / "plots" / "curves.png"
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert plt.get_fignums() == open_before  # its figure was closed


def test_trailing_mean_skips_non_finite_values():
    assert trailing_mean([1.0, 3.0, 5.0, 7.0], 2) == [1.0, 2.0, 4.0, 6.0]
    out = trailing_mean([math.nan, 2.0, math.inf, 4.0], 3)
    assert math.isnan(out[0]) and out[1:] == [2.0, 2.0, 3.0]


def test_runs_are_compared_on_reward_and_on_the_selection_checkpoints(tmp_path):
    from bcg_train.learn.curves import plot_run_comparison, run_comparison_figure

    runs = {}
    for label, falls in (("a", [6, 2]), ("b", [5, 11])):
        run = tmp_path / label
        (run / "select").mkdir(parents=True)
        (run / "metrics.csv").write_text("iteration,reward,wall_s,episodes_ended\n" + "".join(
            f"{i},{0.5 + 0.01 * i},{60.0 * i},{2 * (i % 2)}\n" for i in range(1, 5)))
        (run / "select" / "checkpoints.csv").write_text(
            "iteration,falls,seeds,e_track_cm,root_z_cm\n" + "".join(f"{50 * (k + 1)},{f},20,1.9,2.0\n"
                                                                     for k, f in enumerate(falls)))
        runs[label] = run
    fig = run_comparison_figure(runs, smoothing=2)
    reward, by_wall, falls, e_track, ended = fig.axes
    assert [len(ax.lines) for ax in fig.axes] == [2, 2, 2, 2, 2]
    np.testing.assert_allclose(reward.lines[0].get_ydata(), [0.51, 0.515, 0.525, 0.535])  # trailing mean of 2
    np.testing.assert_allclose(by_wall.lines[0].get_xdata(), [1, 2, 3, 4])  # minutes
    assert list(falls.lines[1].get_ydata()) == [5, 11] and list(falls.lines[1].get_xdata()) == [50, 100]
    np.testing.assert_allclose(ended.lines[0].get_ydata(), [2, 1, 1, 1])  # episodes ended 2, 0, 2, 0
    plt.close(fig)
    assert plot_run_comparison(runs, tmp_path / "c.png").stat().st_size > 10_000


def test_run_comparison_says_when_episode_ends_were_not_logged(tmp_path):
    from bcg_train.learn.curves import run_comparison_figure

    run = tmp_path / "old"
    (run / "select").mkdir(parents=True)
    (run / "metrics.csv").write_text("iteration,reward,wall_s\n1,0.5,60\n2,0.6,120\n")
    (run / "select" / "checkpoints.csv").write_text("iteration,falls,seeds,e_track_cm,root_z_cm\n50,3,20,1.9,2.0\n")
    fig = run_comparison_figure({"old": run}, smoothing=2)
    ended = fig.axes[4]
    assert not ended.lines and [t.get_text() for t in ended.texts] == ["not logged"]
    plt.close(fig)
