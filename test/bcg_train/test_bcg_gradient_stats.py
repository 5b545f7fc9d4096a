"""Gradient statistics of the diagnostics API (pure numpy part)."""

import numpy as np
import pytest

from bcg_train.bcg.diagnostics import paired_variance_ratio_interval, sample_statistics


def test_identical_gradients_have_no_variance_and_full_alignment():
    g = np.tile(np.array([[1.0, -2.0, 0.5]]), (5, 1))
    mean, trace, cv, cosine = sample_statistics(g)
    np.testing.assert_allclose(mean, [1.0, -2.0, 0.5])
    assert trace == 0.0 and cv == 0.0
    assert cosine == pytest.approx(1.0)


def test_statistics_match_their_definitions():
    rng = np.random.default_rng(0)
    g = rng.normal(size=(6, 2, 3))  # (K, T, nu) is flattened per sample
    mean, trace, cv, cosine = sample_statistics(g)
    flat = g.reshape(6, -1)
    np.testing.assert_allclose(mean, flat.mean(0))
    assert trace == pytest.approx(np.trace(np.cov(flat.T, ddof=1)))
    norms = np.linalg.norm(flat, axis=1)
    assert cv == pytest.approx(norms.std(ddof=1) / norms.mean())
    expected_cos = np.mean([f @ flat.mean(0) / (np.linalg.norm(f) * np.linalg.norm(flat.mean(0))) for f in flat])
    assert cosine == pytest.approx(expected_cos)


def test_opposite_gradients_cancel():
    g = np.array([[1.0, 0.0], [-1.0, 0.0], [0.0, 1.0], [0.0, -1.0]])
    mean, trace, cv, cosine = sample_statistics(g)
    np.testing.assert_allclose(mean, 0.0)
    assert trace == pytest.approx(4.0 / 3.0)
    with pytest.raises(ValueError):
        sample_statistics(g[:1])


def test_paired_interval_of_a_scaled_copy_is_exact():
    # other = reference / 10 on every start: every paired resample has ratio exactly 100;
    # resampling the two independently would spread it
    rng = np.random.default_rng(1)
    reference = rng.standard_cauchy(size=(32, 4, 3))
    low, high = paired_variance_ratio_interval(reference, reference / 10.0)
    assert low == pytest.approx(100.0) and high == pytest.approx(100.0)


def test_one_outlier_start_makes_the_interval_wide_and_it_holds_the_point_estimate():
    rng = np.random.default_rng(2)
    reference = rng.normal(size=(32, 6))
    reference[7] *= 100.0  # one start carries the trace, as at stiff contact
    other = rng.normal(size=(32, 6))
    point = sample_statistics(reference)[1] / sample_statistics(other)[1]
    low, high = paired_variance_ratio_interval(reference, other)
    assert low < point < high
    assert high / low > 10  # the draws with and without start 7 disagree by orders of magnitude
    calm_low, calm_high = paired_variance_ratio_interval(np.delete(reference, 7, 0), np.delete(other, 7, 0))
    assert calm_high / calm_low < 4


def test_paired_interval_leaves_out_starts_not_finite_in_either():
    rng = np.random.default_rng(3)
    reference = rng.normal(size=(10, 3))
    other = 0.5 * reference
    other[4, 1] = np.nan
    reference[6, 0] = np.inf
    low, high = paired_variance_ratio_interval(reference, other)
    assert low == pytest.approx(4.0) and high == pytest.approx(4.0)
    with pytest.raises(ValueError, match="same starts"):
        paired_variance_ratio_interval(reference, other[:9])
