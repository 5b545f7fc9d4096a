"""Training curves: every panel drawn from metrics.csv, non-finite gradient norms marked."""

import math

from bcg_train.learn.curves import plot_training_curves, read_metrics, trailing_mean


def test_curves_from_a_metrics_file(tmp_path):
    csv = tmp_path / "metrics.csv"
    lines = ["iteration,reward,tracking_error_m,actor_grad_norm,env_steps"]
    lines += [f"{i},{0.5 + 0.01 * i},{0.05 - 0.001 * i},{'inf' if i == 3 else 10.0 * i},{256 * i}" for i in range(1, 11)]
    csv.write_text("\n".join(lines) + "\n")
    data = read_metrics(csv)
    assert data["actor_grad_norm"][2] == float("inf") and len(data["reward"]) == 10
    out = plot_training_curves(csv, tmp_path / "curves.png")
    assert out.stat().st_size > 10_000


def test_trailing_mean_skips_non_finite_values():
    assert trailing_mean([1.0, 3.0, 5.0, 7.0], 2) == [1.0, 2.0, 4.0, 6.0]
    out = trailing_mean([math.nan, 2.0, math.inf, 4.0], 3)
    assert math.isnan(out[0]) and out[1:] == [2.0, 2.0, 3.0]
