"""Gradient statistics of the diagnostics API (pure numpy part)."""

import numpy as np
import pytest

from bcg_train.bcg.diagnostics import sample_statistics


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
