"""gavel.core.draws: every bootstrap draw's Pearson, Spearman and Kendall tau-b from counts of its groups equal
scipy's on the draw written out row by row (ties, repeated rows, degenerate draws that give NaN)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from gavel.core import draws


def _expanded(groups: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """The rows of one draw: each group's rows as often as the group is drawn."""
    return np.concatenate([np.flatnonzero(groups == g) for g in range(len(counts)) for _ in range(counts[g])]
                          + [np.zeros(0, dtype=int)]).astype(int)


def _scipy(x: np.ndarray, y: np.ndarray) -> tuple[float, float, float]:
    if len(x) < 2 or np.all(x == x[0]) or np.all(y == y[0]):
        return math.nan, math.nan, math.nan
    return (stats.pearsonr(x, y).statistic, stats.spearmanr(x, y).statistic,
            stats.kendalltau(x, y, variant="b").statistic)


@pytest.mark.parametrize("seed", range(6))
def test_every_draw_equals_scipy_on_the_expanded_rows(seed):
    rng = np.random.default_rng(seed)
    n, k = int(rng.integers(2, 40)), int(rng.integers(1, 9))
    if seed % 2:  # heavy ties on both sides, several rows with the same (x, y)
        x = rng.integers(0, 4, n) / 3
        y = rng.integers(0, 3, n) * 0.1
    else:
        x = rng.normal(50, 20, n)
        y = x / 100 + rng.normal(0, 0.2, n)
    groups = rng.integers(0, k, n)
    counts = rng.integers(0, 3, (120, k))
    counts[0] = 0                      # nothing drawn
    counts[1] = 0
    counts[1, groups[0]] = 1           # one group only: maybe a single row
    got = draws.group_correlations(x, y, groups, counts)
    assert got.shape == (120, 3)
    degenerate = 0
    for b in range(120):
        idx = _expanded(groups, counts[b])
        want = np.array(_scipy(x[idx], y[idx]))
        assert np.array_equal(np.isnan(want), np.isnan(got[b])), (b, want, got[b])
        degenerate += bool(np.isnan(want).all())
        assert got[b] == pytest.approx(want, abs=1e-12, nan_ok=True), (b, want, got[b])
    assert degenerate >= 1  # the empty draw at least


def test_spearman_and_kendall_are_bitwise_the_ones_results_used_before():
    """np.corrcoef of scipy's average ranks, and scipy's tau-b: the integer sums give them to the bit, so the
    committed interval endpoints cannot move."""
    rng = np.random.default_rng(7)
    x, y = rng.integers(0, 6, 50) / 7, rng.integers(0, 5, 50) / 3
    groups = rng.integers(0, 10, 50)
    counts = rng.integers(0, 3, (60, 10))
    got = draws.group_correlations(x, y, groups, counts)
    for b in range(60):
        idx = _expanded(groups, counts[b])
        xs, ys = x[idx], y[idx]
        if len(xs) < 2 or np.all(xs == xs[0]) or np.all(ys == ys[0]):
            continue
        assert got[b, 1] == float(np.corrcoef(stats.rankdata(xs), stats.rankdata(ys))[0, 1])
        assert got[b, 2] == float(stats.kendalltau(xs, ys).statistic)


def test_constant_sides_and_single_rows_are_nan_and_others_are_not():
    x = np.array([1.0, 1.0, 2.0, 3.0])
    y = np.array([5.0, 6.0, 6.0, 7.0])
    counts = np.array([[1, 1, 0, 0],   # x constant
                       [0, 1, 1, 0],   # y constant
                       [0, 0, 3, 0],   # one row, three times
                       [0, 0, 0, 1],   # one row
                       [1, 0, 1, 1]])  # defined
    got = draws.group_correlations(x, y, np.arange(4), counts)
    assert np.isnan(got[:4]).all()
    assert not np.isnan(got[4]).any()


def test_draw_counts_and_bad_input():
    d = np.array([[0, 0, 2], [1, 2, 2]])
    assert draws.draw_counts(d, 4).tolist() == [[2, 0, 1, 0], [0, 1, 2, 0]]
    with pytest.raises(ValueError, match="NaN"):
        draws.group_correlations([1.0, math.nan], [1.0, 2.0], [0, 1], np.ones((1, 2)))
    with pytest.raises(ValueError, match="groups"):
        draws.group_correlations([1.0, 2.0], [1.0, 2.0], [0, 2], np.ones((1, 2)))
