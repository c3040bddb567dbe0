"""Pearson, Spearman (average ranks) and Kendall tau-b of many bootstrap draws at once.

A bootstrap draw of grouped rows (cases that bring all their summaries, or models) is a multiset of the
original rows: each row is taken as many times as its group was drawn. ``group_correlations`` takes the
draws as a count matrix (draw x group) and computes every draw's three correlations in a few array
operations over the original rows, never expanding a draw into its rows:

- Kendall tau-b from integer counts, exact in float64: C - D = c' S c / 2 where S sums
  sign(x_i - x_j) * sign(y_i - y_j) over the rows of two groups; the tied pairs of x (of y) from the draw's
  weight of every distinct value; then scipy's own formula, so the value is scipy's to the bit.
- Spearman from the average ranks of the multiset: the cumulative weights of the distinct values, the rank of
  a value being the weight below it plus (its own weight + 1) / 2; then Pearson of the ranks, all integer or
  half-integer sums, exact, in the order numpy's ``corrcoef`` divides (its value to the bit).
- Pearson from per-group sums of the centred values (equal to ``np.corrcoef`` of the expanded draw up to
  float rounding, ~1e-15).

A correlation is NaN where it is undefined, as for the expanded draw: fewer than two rows, or x or y constant.
"""

from __future__ import annotations

import numpy as np

#: draws computed together (memory: a few arrays of CHUNK x rows float64)
CHUNK = 256


def draw_counts(draws: np.ndarray, k: int) -> np.ndarray:
    """draws x k: how often each of ``k`` indices occurs in each draw (a row of ``stats.resamples``)."""
    out = np.zeros((len(draws), k), dtype=np.int64)
    np.add.at(out, (np.arange(len(draws))[:, None], draws), 1)
    return out


def _distinct(values: np.ndarray) -> tuple[np.ndarray, int]:
    """Index of each value among the sorted distinct values, and their number."""
    _, inverse = np.unique(values, return_inverse=True)
    return inverse.ravel(), int(inverse.max()) + 1 if len(values) else 0


def _value_weights(w: np.ndarray, codes: np.ndarray, g: int) -> np.ndarray:
    """draws x distinct values: each draw's weight of each value (the row weights ``w`` summed per value)."""
    order = np.argsort(codes, kind="stable")
    starts = np.searchsorted(codes[order], np.arange(g))
    return np.add.reduceat(w[:, order], starts, axis=1)


def _ranks(weights: np.ndarray) -> np.ndarray:
    """Average ranks of the distinct values (columns, ascending) given each draw's weight of each."""
    below = np.cumsum(weights, axis=1) - weights
    return below + (weights + 1) / 2


def _pairs(weights: np.ndarray) -> np.ndarray:
    """Tied pairs: sum over values of w (w - 1) / 2."""
    return (weights * (weights - 1)).sum(axis=1) / 2


def _corrcoef(n: np.ndarray, sab: np.ndarray, saa: np.ndarray, sbb: np.ndarray) -> np.ndarray:
    """Pearson from the centred sums of products (``np.corrcoef``'s roundings from there: times 1 / (n - 1),
    divided by each standard deviation in turn, clipped to [-1, 1])."""
    with np.errstate(divide="ignore", invalid="ignore"):
        inv = np.true_divide(1, n - 1)
        return np.clip(sab * inv / np.sqrt(saa * inv) / np.sqrt(sbb * inv), -1.0, 1.0)


def group_correlations(x, y, groups, counts) -> np.ndarray:
    """(draws x 3) Pearson, Spearman and Kendall tau-b of each draw. ``x``, ``y``: the rows' values (no
    NaN); ``groups``: each row's group (0 .. k-1); ``counts``: draws x k, how often each group is drawn
    (a group's rows come with it). NaN where fewer than two rows are drawn or x or y is constant."""
    x, y = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    groups = np.asarray(groups, dtype=np.int64)
    counts = np.asarray(counts, dtype=float)
    if not (len(x) == len(y) == len(groups)) or counts.ndim != 2:
        raise ValueError("x, y and groups need one entry per row, counts one row per draw")
    if np.isnan(x).any() or np.isnan(y).any():
        raise ValueError("x and y must not hold NaN")
    k = counts.shape[1]
    if len(groups) and (groups.min() < 0 or groups.max() >= k):
        raise ValueError(f"groups must lie in 0 .. {k - 1} (the columns of counts)")
    out = np.full((len(counts), 3), np.nan)
    if not len(x):
        return out
    cx, gx = _distinct(x)
    cy, gy = _distinct(y)
    # Pearson: per-group sums of the values centred on their overall means, then per draw (one pass)
    xc, yc = x - x.mean(), y - y.mean()
    sums = np.stack([np.bincount(groups, weights=v, minlength=k)
                     for v in (np.ones_like(xc), xc, yc, xc * yc, xc * xc, yc * yc)], axis=1)
    # Kendall: sign(dx) * sign(dy) summed over the rows of each pair of groups (integers, exact)
    small = np.int16 if max(gx, gy) < 2 ** 15 else np.int64  # the value codes order the values (and are small)
    ix, iy = cx.astype(small), cy.astype(small)
    s = (np.sign(np.subtract.outer(ix, ix)) * np.sign(np.subtract.outer(iy, iy))).ravel()
    sk = np.bincount((groups[:, None] * k + groups[None, :]).ravel(), weights=s, minlength=k * k).reshape(k, k)
    for lo in range(0, len(counts), CHUNK):
        c = counts[lo:lo + CHUNK]
        n, sx, sy, sxy, sxx, syy = (c @ sums).T
        w = c[:, groups]
        wx, wy = _value_weights(w, cx, gx), _value_weights(w, cy, gy)
        tot = n * (n - 1) / 2
        xtie, ytie = _pairs(wx), _pairs(wy)
        ok = (n >= 2) & (xtie < tot) & (ytie < tot)  # xtie == tot: every drawn x is the same
        cmd = (np.einsum("bk,kl->bl", c, sk) * c).sum(axis=1) / 2  # concordant - discordant pairs (einsum: no
        # threads spun up for a small product)
        with np.errstate(divide="ignore", invalid="ignore"):
            kendall = np.clip(cmd / np.sqrt(tot - xtie) / np.sqrt(tot - ytie), -1.0, 1.0)
            pearson = _corrcoef(n, sxy - sx * sy / n, sxx - sx * sx / n, syy - sy * sy / n)
        # Spearman: ranks are half-integers, every sum below is exact (so one pass equals numpy's centring)
        rx, ry = _ranks(wx), _ranks(wy)
        mid = n * ((n + 1) / 2) ** 2
        spearman = _corrcoef(n, (w * rx[:, cx] * ry[:, cy]).sum(axis=1) - mid,
                             (wx * rx * rx).sum(axis=1) - mid, (wy * ry * ry).sum(axis=1) - mid)
        block = np.stack([pearson, spearman, kendall], axis=1)
        block[~ok] = np.nan
        out[lo:lo + CHUNK] = block
    return out
