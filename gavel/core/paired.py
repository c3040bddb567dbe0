"""Which differences between models are real: every pair of models compared on the cases both have.

The input of one score is a ``models x cases x cells`` array (NaN where there is no value). A *cell* is one
verdict of the judge on one summary: one repeat in one order (``--repeats N``, ``--orders both``); a run with
neither has one cell per case. A case's score is the mean of its cells; a model's score the mean of its cases.

- **Draws** (:func:`cell_draws`): each bootstrap draw resamples the cases (``stats.resamples``; the same cases
  for every model, so the comparison is paired and a case's items stay together) and, per drawn case and
  model, one of its cells with a value. With one cell per case (or cells that always agree) this is the
  cases-only bootstrap; where the judge is noisy the draws carry its noise too. It is the one two-level
  interval (``gavel.runs.stability.repeat_interval`` draws through it).
- **Pairs** (:func:`compare`), ``model_a`` ranked above ``model_b`` by the means: the difference of the means on the common cases with its percentile 95%
  interval over the draws, a paired t-test on the case scores (scipy), Holm's adjustment over all pairs of
  the score (:func:`holm_adjusted`, equal to statsmodels'), the verdict at ``ALPHA`` after adjustment; power (normal approximation, two-sided
  ``ALPHA``, one comparison): the smallest difference detectable at ``POWER`` with these cases, and the cases
  needed to detect the observed difference.
- **Models**: mean, the two-level interval, rank (1 = highest) and its 95% interval over the draws, the groups
  of neighbours in the ranking whose every pairwise difference is not significant (letters), and the share of
  the variance of one cell's score that lies between cases and within a case (the judge).

Memory and time (issue 48): with cells the draws come a block of ``stats.RESAMPLE_CELLS`` cases x models at a
time (:func:`cell_draw_blocks`: the same generator numbers in the same order, so the same values whatever the
block); with one cell per case the draws are case counts, drawn in blocks into one draws x cases matrix, and
each mean is one matrix product over all draws (BLAS rounds a draw's sum differently in a product of fewer
rows, which moves an endpoint lying on a half, so that product is not split), on one BLAS thread. The
columns of a score are computed together, each value as numpy gives it alone (tests/test_comparisons.py).
"""

from __future__ import annotations

import copy
import functools
import math
import string
from collections.abc import Iterator, Sequence

import numpy as np
import pandas as pd

from gavel.core import stats

#: the error rate of every verdict (after Holm's adjustment) and of the power analysis
ALPHA = 0.05
#: the power the smallest detectable difference is given at
POWER = 0.8

PAIR_COLUMNS = ["model_a", "model_b", "cases", "mean_a", "mean_b", "difference", "ci_low", "ci_high", "p_value",
                "p_holm", "verdict", "family", "holm_level", "sd_a", "sd_b", "correlation", "sd_difference",
                "detectable_difference", "cases_needed", "resolution_ratio", "neighbours"]
#: the columns computed once the family's p-values are known
POWER_COLUMNS = ("p_holm", "verdict", "family", "holm_level", "detectable_difference", "cases_needed",
                 "resolution_ratio")
VERDICT_COLUMNS = ["model_a", "model_b", "cases", "difference", "p_value", "p_holm", "verdict"]
MODEL_COLUMNS = ["model", "cases", "cells", "mean", "ci_low", "ci_high", "rank", "rank_low", "rank_high",
                 "group", "variance_cases_share", "variance_within_share"]


def cell_draws(values, rng: np.random.Generator, n: int = stats.BOOTSTRAP_RESAMPLES) -> np.ndarray:
    """(draws x cases x models): each draw's resampled cases (``stats.resamples``, shared by the models) and,
    per drawn case and model, one of its cells with a value (NaN where the model has none for that case);
    all of :func:`cell_draw_blocks` at once."""
    blocks = list(cell_draw_blocks(values, rng, n))
    v = np.asarray(values, dtype=float)
    return np.concatenate(blocks) if blocks else np.zeros((0, v.shape[1], v.shape[0]))


def cell_draw_blocks(values, rng: np.random.Generator, n: int = stats.BOOTSTRAP_RESAMPLES) -> Iterator[np.ndarray]:
    """:func:`cell_draws`' rows a block at a time (at most ``stats.RESAMPLE_CELLS`` cases x models each; the
    last may be shorter), the same values whatever the split. The draws take every case pick first, then
    every cell choice (``rng``'s order, one stream): the picks come from a copy of ``rng`` taken before them,
    ``rng`` itself skips them a block at a time and then draws the cells, so it ends where one draw of all
    would leave it (once every block is taken)."""
    v = np.asarray(values, dtype=float)
    if v.ndim != 3:
        raise ValueError(f"values must be models x cases x cells, got shape {v.shape}")
    m, c, cells = v.shape
    rows = max(1, stats.RESAMPLE_CELLS // max(1, c * m))
    spans = [(lo, min(rows, n - lo)) for lo in range(0, n, rows)]
    have = ~np.isnan(v)
    packed = np.take_along_axis(v, np.argsort(~have, axis=2, kind="stable"), axis=2)  # valued cells first
    if cells == 1:
        for _, k in spans:
            yield np.moveaxis(packed[:, stats.resamples(c, rng, k), 0], 0, 2)
        return
    counts_t = have.sum(axis=2).T                                   # cases x models
    picker = copy.deepcopy(rng)
    for _, k in spans:
        stats.resamples(c, rng, k)
    for _, k in spans:
        picks = stats.resamples(c, picker, k)
        which = (rng.random((k, c, m)) * counts_t[picks]).astype(int)
        yield packed[np.arange(m)[None, None, :], picks[:, :, None], which]


def one_model_means(values, rng: np.random.Generator, n: int = stats.BOOTSTRAP_RESAMPLES) -> np.ndarray:
    """(draws): the mean over the drawn cases of each of :func:`cell_draws`' draws of one model (``values``:
    1 x cases x cells, every case with a value), a block at a time."""
    blocks = [b[:, :, 0].mean(axis=1) for b in cell_draw_blocks(values, rng, n)]
    return np.concatenate(blocks) if blocks else np.empty(0)


def _nanmean(x: np.ndarray, axis: int) -> np.ndarray:
    with np.errstate(invalid="ignore", divide="ignore"):
        total, count = np.nansum(x, axis=axis), (~np.isnan(x)).sum(axis=axis)
        return np.where(count > 0, total / np.where(count > 0, count, 1), np.nan)


def _pair_draws(draws: np.ndarray, a: np.ndarray, b: np.ndarray, chunk: int = 16) -> np.ndarray:
    """(draws x pairs): each draw's mean difference of model ``a[k]`` and ``b[k]`` over the drawn cases both
    have (a few pairs at a time: memory stays draws x cases x chunk)."""
    out = np.full((draws.shape[0], len(a)), np.nan)
    for lo in range(0, len(a), chunk):
        out[:, lo:lo + chunk] = _nanmean(draws[:, :, a[lo:lo + chunk]] - draws[:, :, b[lo:lo + chunk]], 1)
    return out


def _endpoints(draws: np.ndarray, qs: Sequence[float] = (2.5, 97.5)) -> list[np.ndarray]:
    """``stats.endpoint`` of every column of ``draws`` (the same values) at each ``q`` of ``qs``, all columns at
    once, each over its own draws that are numbers: one sort (a row per column, NaN last), then
    ``np.percentile``'s linear interpolation and ``stats.endpoint_digits``' order statistics at each column's
    own count, as those compute them."""
    n = (~np.isnan(draws)).sum(axis=0)
    cols = np.flatnonzero(n > 0)
    x, n, at = np.sort(draws[:, cols].T, axis=1), n[cols], np.arange(len(cols))
    found = []
    for q in qs:
        out = np.full(draws.shape[1], math.nan)
        p = q / 100
        virtual = (n - 1) * p                 # np.percentile (linear): (n - 1) q, the floor and the next
        below = np.floor(virtual)
        last = virtual >= n - 1               # at or past the last: the last value (numpy's index -1)
        a = x[at, np.where(last, n - 1, below).astype(np.intp)]
        b = x[at, np.where(last, n - 1, below + 1).astype(np.intp)]
        gamma, diff = virtual - np.where(last, -1, below), b - a
        value = np.where(gamma >= 0.5, b - diff * (1 - gamma), a + diff * gamma)  # numpy's _lerp
        half = np.sqrt(n * p * (1 - p))       # stats.endpoint_digits: the order statistics around it
        lo = np.minimum(n - 1, np.maximum(0, np.floor(p * (n - 1) - half))).astype(np.intp)
        hi = np.minimum(n - 1, np.maximum(0, np.ceil(p * (n - 1) + half))).astype(np.intp)
        error = (x[at, hi] - x[at, lo]) / 2
        with np.errstate(divide="ignore", invalid="ignore"):
            digits = np.where((error <= 0) | (n < 2), stats.MAX_ENDPOINT_DIGITS,
                              np.clip(np.floor(-np.log10(2 * error)), 0, stats.MAX_ENDPOINT_DIGITS))
        out[cols] = [round(v, int(d)) + 0.0 for v, d in zip(value.tolist(), digits.tolist())]
        found.append(out)
    return found


def variance_shares(values) -> tuple[float, float]:
    """(cases, judge): the variance of one cell's score split into its variance between case means and the
    mean variance of the cells around their case mean (the law of total variance, each case weighted alike);
    NaN, NaN when there is no variance."""
    v = np.asarray(values, dtype=float)
    v = v[~np.isnan(v).all(axis=1)]
    if not len(v):
        return math.nan, math.nan
    between = float(np.var(_nanmean(v, 1)))
    # every row has a value (the empty ones are gone); one cell per case: each varies by 0.0 around itself
    within = 0.0 if v.shape[1] == 1 else float(np.mean(np.nanvar(v, axis=1)))
    total = between + within
    return (math.nan, math.nan) if total <= 0 else (between / total, within / total)


def power_multiple(cases, alpha=ALPHA, power: float = POWER):
    """t_(1 - alpha/2, cases - 1) + t_(power, cases - 1): the multiple of a difference's standard error
    (sd of the case differences / sqrt(cases)) a true difference must reach to be detected with probability
    ``power`` by the two-sided paired t-test at level ``alpha`` (Student's t at the pair's degrees of freedom;
    arrays broadcast; NaN below two cases)."""
    from scipy.special import stdtrit  # what scipy.stats.t.ppf computes, without importing scipy.stats (~1 s)

    df = np.asarray(cases, dtype=float) - 1
    with np.errstate(invalid="ignore"):
        out = stdtrit(df, 1 - np.asarray(alpha, dtype=float) / 2) + stdtrit(df, power)
    out = np.where(df >= 1, out, np.nan)
    return float(out) if np.ndim(out) == 0 else out


def detectable_difference(sd_difference: float, cases: int, alpha: float = ALPHA, power: float = POWER) -> float:
    """The smallest true difference a paired comparison over ``cases`` detects with probability ``power`` at
    level ``alpha``: :func:`power_multiple` x ``sd_difference`` / sqrt(``cases``); NaN below two cases."""
    if cases < 2 or not np.isfinite(sd_difference):
        return math.nan
    return power_multiple(cases, alpha, power) * sd_difference / math.sqrt(cases)


#: the most cases :func:`cases_needed` counts to (2**40, about 1.1e12)
MOST_CASES = float(2**40)


def cases_needed(sd_difference, difference, alpha=ALPHA, power: float = POWER):
    """The fewest cases n >= 2 whose :func:`detectable_difference` at ``alpha`` is at most ``|difference|``
    (the t quantiles change with n: found by bisection on the integers, bracketed from the normal
    approximation's count; arrays broadcast). NaN where the difference is 0 or either is not a number, or
    where not even ``MOST_CASES`` cases would do (a difference that small is float noise, and past 2**40 the
    bisection's integers are no longer exact steps); 2 where the case differences do not vary."""
    sd, d, a = np.broadcast_arrays(*(np.asarray(x, dtype=float) for x in (sd_difference, difference, alpha)))
    shape = sd.shape
    sd, d, a = sd.ravel(), d.ravel(), a.ravel()
    out = np.full(sd.shape, np.nan)
    ok = np.isfinite(sd) & np.isfinite(d) & (d != 0) & np.isfinite(a)
    sd, d, a = sd[ok], np.abs(d[ok]), a[ok]

    from scipy.special import ndtri  # the normal quantile

    def detects(n):
        return power_multiple(n, a, power) * sd / np.sqrt(n) <= d
    # the normal approximation's count (t quantiles exceed the normal ones, so fewer never do) brackets the
    # answer in a few steps; a guess that does not bracket falls back to the count of 1 (no test: never enough)
    with np.errstate(over="ignore", divide="ignore"):
        hi = np.clip(np.ceil(((ndtri(1 - a / 2) + ndtri(power)) * sd / d) ** 2), 2, MOST_CASES)
    lo = np.where((hi > 2) & ~detects(hi - 1), hi - 1, 1.0)
    while (grow := ~detects(hi) & (hi < MOST_CASES)).any():
        lo, hi = np.where(grow, hi, lo), np.where(grow, np.minimum(2 * hi - lo, MOST_CASES), hi)
    within = detects(hi)                                # the others: not even MOST_CASES do (NaN)
    ok[ok] = within
    sd, d, a, lo, hi = sd[within], d[within], a[within], lo[within], hi[within]
    while (open_ := hi - lo > 1).any():
        mid = np.floor((lo + hi) / 2)
        yes = detects(mid)
        hi = np.where(open_ & yes, mid, hi)
        lo = np.where(open_ & ~yes, mid, lo)
    out[ok] = hi
    return float(out[0]) if not shape else out.reshape(shape)


def holm_levels(p: np.ndarray, alpha: float = ALPHA) -> np.ndarray:
    """The level Holm's step-down compares each p-value with: ``alpha / (m - r + 1)`` for the r-th smallest of
    the ``m`` p-values that are numbers (ties in the order given); NaN where p is NaN."""
    p = np.asarray(p, dtype=float)
    out = np.full(len(p), math.nan)
    known = np.flatnonzero(~np.isnan(p))
    order = known[np.argsort(p[known], kind="stable")]
    out[order] = alpha / np.arange(len(order), 0, -1)
    return out


def _paired_p(d: np.ndarray) -> float:
    """Two-sided paired t-test of the case differences ``d`` (scipy); all differences alike: 1 when they are
    0, 0 otherwise; NaN for fewer than two cases."""
    if len(d) < 2:
        return math.nan
    if np.ptp(d) == 0:
        return 1.0 if d[0] == 0 else 0.0
    from scipy.stats import ttest_1samp

    return float(ttest_1samp(d, 0.0).pvalue)


def _paired_ps(gaps: np.ndarray) -> np.ndarray:
    """:func:`_paired_p` of every row of ``gaps`` (pairs x cases, NaN where a case is not common) at once:
    the same t statistic and scipy's t distribution (``scipy.stats.t.sf`` is ``stdtr(df, -t)``)."""
    from scipy.special import stdtr

    have = ~np.isnan(gaps)
    n = have.sum(axis=1)
    out = np.full(len(gaps), math.nan)
    with np.errstate(invalid="ignore", divide="ignore"):
        mean = np.where(n > 0, np.nansum(gaps, axis=1) / np.maximum(n, 1), np.nan)
        sd = np.sqrt(np.nansum((gaps - mean[:, None]) ** 2, axis=1) / (n - 1))
        t_stat = mean / (sd / np.sqrt(n))
    two = n >= 2
    same = two & ~(sd > 0)  # every common case differs alike: 1 when by 0, else 0
    out[same] = np.where(mean[same] == 0, 1.0, 0.0)
    test = two & (sd > 0)
    out[test] = 2 * stdtr(n[test] - 1, -np.abs(t_stat[test]))
    return out


def holm_adjusted(p: np.ndarray) -> np.ndarray:
    """Holm's step-down adjusted p-values, as statsmodels' ``multipletests(p, method="holm")[1]`` gives them
    (tests/test_comparisons.py checks they are equal): that call runs a full ``gc.collect()`` every time,
    which in a process as large as `make results` costs more than all the comparisons together."""
    p = np.asarray(p, dtype=float)
    order = np.argsort(p, kind="stable")
    stepped = np.maximum.accumulate(p[order] * np.arange(len(p), 0, -1))
    out = np.empty(len(p))
    out[order] = np.minimum(stepped, 1.0)
    return out


def groups(order: Sequence[str], significant: dict[frozenset, bool]) -> dict[str, str]:
    """Letters per model: each maximal run of neighbours in ``order`` (best first) whose every pair is not
    significantly different shares a letter; a model may carry several."""
    runs, start = [], 0
    for i in range(len(order)):
        while any(significant.get(frozenset((order[k], order[i])), False) for k in range(start, i)):
            start += 1
        if not runs or start > runs[-1][0]:
            runs.append((start, i))
        else:
            runs[-1] = (runs[-1][0], i)
    letters = {m: "" for m in order}
    for n, (lo, hi) in enumerate(runs):
        for m in order[lo:hi + 1]:
            letters[m] += string.ascii_lowercase[n % 26] * (1 + n // 26)
    return letters


def _ranked_pairs(means: np.ndarray, models: Sequence[str]):
    """(order best first, model index, pairs of ranks, model a of each pair, model b of each pair): every
    pair of models, ``a`` ranked above ``b`` by ``means`` (NaN last, ties in the order given)."""
    order = [models[i] for i in np.argsort(-np.where(np.isnan(means), -np.inf, means), kind="stable")]
    index = {m: i for i, m in enumerate(models)}
    pair_list = [(pa, pb) for pa in range(len(order)) for pb in range(pa + 1, len(order))]  # a ranked above b
    a_of = np.array([index[order[pa]] for pa, _ in pair_list], dtype=int)
    b_of = np.array([index[order[pb]] for _, pb in pair_list], dtype=int)
    return order, index, pair_list, a_of, b_of


def _holm_verdicts(p: np.ndarray, differences, alpha: float) -> tuple[np.ndarray, list[str]]:
    """(Holm's adjusted p over the p-values that are numbers, each pair's verdict at ``alpha``)."""
    holm = np.full(len(p), math.nan)
    if (~np.isnan(p)).any():
        holm[~np.isnan(p)] = holm_adjusted(p[~np.isnan(p)])
    return holm, ["too few cases" if np.isnan(q) else "indistinguishable" if q >= alpha
                  else "a better" if diff > 0 else "b better" for q, diff in zip(holm, differences)]


def verdicts(values, models: Sequence[str], alpha: float = ALPHA) -> pd.DataFrame:
    """The columns ``model_a, model_b, cases, difference, p_value, p_holm, verdict`` of :func:`compare`'s
    pairs (the same values, in the same order), without the draws, intervals, power or model table: what a
    comparison under another choice of cells needs (``gavel.paper.results.release_comparisons``)."""
    return verdicts_many([values], models, alpha)[0]


def verdicts_many(scores, models: Sequence[str], alpha: float = ALPHA) -> tuple[pd.DataFrame, list[int]]:
    """:func:`verdicts` of each of ``scores`` (each models x cases x cells, its own family) as one table, the
    scores' rows one after the other, and how many rows each has: the same values as a call per score."""
    parts = [_verdict_columns(values, models, alpha) for values in scores]
    return _frame(parts, VERDICT_COLUMNS), [len(p["model_a"]) for p in parts]


def _verdict_columns(values, models: Sequence[str], alpha: float) -> dict:
    v = np.asarray(values, dtype=float)
    if v.shape[0] != len(models):
        raise ValueError(f"{len(models)} model names for {v.shape[0]} models of values")
    case_means = _nanmean(v, 2)
    _, _, _, a_of, b_of = _ranked_pairs(_nanmean(case_means, 1), models)
    gaps = case_means[a_of] - case_means[b_of]
    cases = (~np.isnan(gaps)).sum(axis=1)
    difference = np.full(len(gaps), math.nan)
    for ks, common in _same_cases(~np.isnan(gaps)):  # each row's mean alone, the rows of like cases at once
        difference[ks] = np.ascontiguousarray(gaps[np.ix_(ks, common)]).mean(axis=1)
    p = _paired_ps(gaps)
    holm, verdict = _holm_verdicts(p, difference, alpha)
    return {"model_a": [models[a] for a in a_of], "model_b": [models[b] for b in b_of],
            "cases": cases.astype(int), "difference": difference, "p_value": p, "p_holm": holm, "verdict": verdict}


def _frame(parts: list[dict], columns: list[str], integers: tuple[str, ...] = ()) -> pd.DataFrame:
    """One table of the column dicts ``parts`` (numpy arrays or lists), each column put together once: one
    DataFrame, not one per score and a concat (pandas' construction was a fifth of `make results`'
    comparisons). ``integers``: float columns (NaN where none) made nullable integers (``Int64``)."""
    out = {}
    for c in columns:
        cells = [p[c] for p in parts]
        if cells and all(isinstance(x, np.ndarray) for x in cells):
            out[c] = np.concatenate(cells)
        else:
            out[c] = [x for cell in cells for x in (cell.tolist() if isinstance(cell, np.ndarray) else cell)]
        if c in integers:
            out[c] = pd.array(np.asarray(out[c], dtype=float), dtype="Int64")
    return pd.DataFrame(out, columns=columns)


def _count_matrix(cases: int, seed: int, n: int) -> np.ndarray:
    """``stats.draw_counts(cases, seed, n)`` as floats, drawn a block at a time into the one matrix."""
    counts = np.empty((n, cases))
    lo = 0
    for block in stats.count_blocks(cases, np.random.default_rng(seed), n):
        counts[lo:lo + len(block)] = block
        lo += len(block)
    return counts


@functools.lru_cache(maxsize=2)
def _case_counts(cases: int, seed: int, n: int) -> np.ndarray:
    """:func:`_count_matrix` kept for the next score of as many cases (every score of the release has 100;
    only matrices of at most ``stats.RESAMPLE_CELLS`` cells are kept), read-only."""
    counts = _count_matrix(cases, seed, n)
    counts.flags.writeable = False
    return counts


@functools.cache
def _blas():
    """threadpoolctl's handle on the BLAS numpy loaded (found once). The products of the draws run on one BLAS
    thread: they are small (2,000 draws x 100 cases x 12 models in the release), and on a busy machine BLAS's
    threads waiting for a core cost more than they save (`make results`' comparisons took 1.68 s with two
    threads, 0.76 s with one, at a load of 4.5 on 2 cores). The values do not depend on the threads: BLAS
    gives each thread rows or columns of a product, never part of one sum."""
    from threadpoolctl import ThreadpoolController

    return ThreadpoolController()


def _drawn_cases(counts: np.ndarray, have: np.ndarray) -> np.ndarray:
    """(draws x rows of ``have``): how many drawn cases each row has a value for (``counts @ have.T``, sums of
    integers, exact in any order), one product per distinct row."""
    first: dict[bytes, int] = {}
    keys = [first.setdefault(row.tobytes(), i) for i, row in enumerate(have)]
    column = {row: j for j, row in enumerate(first.values())}
    return (counts @ have[list(first.values())].T.astype(float))[:, [column[k] for k in keys]]


def _drawn(v: np.ndarray, case_means: np.ndarray, a_of: np.ndarray, b_of: np.ndarray, seed: int,
           n: int) -> tuple[np.ndarray, np.ndarray]:
    """(draws x models, draws x pairs): each draw's mean of every model and difference of every pair over the
    drawn cases they have. Cells: a block of draws at a time (:func:`cell_draw_blocks`; memory one block,
    never draws x cases x models). One cell per case: the draws as case counts (``stats.count_blocks``), every
    mean a matrix product: over all draws at once where the count matrix is one block (up to
    ``stats.RESAMPLE_CELLS`` cells: the release's 2,000 x 100), since BLAS rounds a draw's sum differently in
    a product of fewer rows (by ~1e-15, enough to move an endpoint that lies on a half, e.g. -5.5, to the
    other side of its rounding); a product per block of draws beyond that (memory one block)."""
    if v.shape[2] == 1:
        gap = case_means[a_of] - case_means[b_of]

        def means(counts):
            with np.errstate(invalid="ignore", divide="ignore"), _blas().limit(limits=1, user_api="blas"):
                return ((counts @ np.nan_to_num(case_means).T) / _drawn_cases(counts, ~np.isnan(case_means)),
                        (counts @ np.nan_to_num(gap).T) / _drawn_cases(counts, ~np.isnan(gap)))
        if n * v.shape[1] <= stats.RESAMPLE_CELLS:  # the release's scores (2,000 x 100 cases): one product
            return means(_case_counts(v.shape[1], seed, n))
        # more cases than one block holds: a product per block of draws, so memory is one block whatever the
        # cases (a draw's sum may round differently from one product of all draws, by ~1e-15; the blocks
        # are fixed, so a run gives the same values every time)
        drawn_means, all_diffs = np.empty((n, len(case_means))), np.empty((n, len(a_of)))
        lo = 0
        for block in stats.count_blocks(v.shape[1], np.random.default_rng(seed), n):
            k = len(block)
            drawn_means[lo:lo + k], all_diffs[lo:lo + k] = means(block.astype(float))
            lo += k
        return drawn_means, all_diffs
    drawn_means, all_diffs = np.empty((n, len(case_means))), np.empty((n, len(a_of)))
    lo = 0
    for block in cell_draw_blocks(v, np.random.default_rng(seed), n):
        k = len(block)
        drawn_means[lo:lo + k], all_diffs[lo:lo + k] = _nanmean(block, 1), _pair_draws(block, a_of, b_of)
        lo += k
    return drawn_means, all_diffs


def _min_ranks(x: np.ndarray) -> np.ndarray:
    """Each row's ranks, highest first, ties at their best rank (scipy's ``rankdata(-x, method="min")``):
    1 + how many of the row are higher."""
    return 1 + (x[:, None, :] > x[:, :, None]).sum(axis=2)


def _same_cases(have: np.ndarray) -> list[tuple[list[int], np.ndarray]]:
    """The rows of ``have`` (pairs x cases) grouped by the cases they have: (rows, those cases), for every
    group with at least one case."""
    same: dict[bytes, list[int]] = {}
    for k, row in enumerate(have):
        same.setdefault(row.tobytes(), []).append(k)
    return [(ks, have[ks[0]]) for ks in same.values() if have[ks[0]].any()]


def _correlation(xa: np.ndarray, xb: np.ndarray) -> float:
    """``np.corrcoef(xa, xb)[0, 1]`` computed as numpy computes it (the same product and divisions, so the
    same value), without its checks and weights: it is called for most pairs of every score."""
    x = np.empty((2, len(xa)))
    x[0], x[1] = xa, xb
    x -= x.mean(axis=1)[:, None]
    (aa, ab), (_, bb) = np.dot(x, x.T.conj()).tolist()
    f = 1 / (x.shape[1] - 1)
    r = ab * f / math.sqrt(aa * f) / math.sqrt(bb * f)
    return -1.0 if r < -1 else 1.0 if r > 1 else r  # np.clip's bounds (NaN stays NaN)


def _pair_values(case_means: np.ndarray, a_of: np.ndarray, b_of: np.ndarray) -> dict[str, np.ndarray]:
    """Each pair's ``cases, mean_a, mean_b, difference, sd_a, sd_b, correlation, sd_difference`` on the cases
    both models have: the pairs with the same common cases at once (a row per model or pair, each row's mean
    and sd the value numpy gives that row alone)."""
    out = {k: np.full(len(a_of), math.nan) for k in ("mean_a", "mean_b", "difference", "sd_a", "sd_b",
                                                      "correlation", "sd_difference")}
    valued = ~np.isnan(case_means)
    both = valued[a_of] & valued[b_of]                            # pairs x cases
    out = {"cases": both.sum(axis=1).astype(int), **out}
    for ks, cases in _same_cases(both):
        rows = np.unique(np.concatenate([a_of[ks], b_of[ks]]))
        x = np.ascontiguousarray(case_means[rows][:, cases])      # models of these pairs x common cases:
        # rows in one piece, so each row's sums are numpy's pairwise sums of that row alone
        at = {r: i for i, r in enumerate(rows.tolist())}
        ia, ib = np.array([at[a] for a in a_of[ks].tolist()]), np.array([at[b] for b in b_of[ks].tolist()])
        mean, d = x.mean(axis=1), x[ia] - x[ib]
        out["mean_a"][ks], out["mean_b"][ks], out["difference"][ks] = mean[ia], mean[ib], d.mean(axis=1)
        if x.shape[1] < 2:
            continue
        sd, varies = np.std(x, axis=1, ddof=1), np.ptp(x, axis=1) > 0
        out["sd_a"][ks], out["sd_b"][ks], out["sd_difference"][ks] = sd[ia], sd[ib], np.std(d, axis=1, ddof=1)
        out["correlation"][ks] = [_correlation(x[i], x[j]) if varies[i] and varies[j] else math.nan
                                  for i, j in zip(ia.tolist(), ib.tolist())]
    return out


def compare(values, models: Sequence[str], seed: int = 0, n: int = stats.BOOTSTRAP_RESAMPLES,
            alpha: float = ALPHA) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(pairs, models) tables of one score (see the module); ``values``: models x cases x cells."""
    pairs, table, _ = compare_many([values], models, seed, n, alpha)
    return pairs, table


def compare_many(scores, models: Sequence[str], seed: int = 0, n: int = stats.BOOTSTRAP_RESAMPLES,
                 alpha: float = ALPHA) -> tuple[pd.DataFrame, pd.DataFrame, list[tuple[int, int]]]:
    """:func:`compare` of each of ``scores`` (each models x cases x cells, its own family and draws from
    ``seed``) as one pairs table and one models table, the scores' rows one after the other, and how many
    rows (pairs, models) each score has: the same values as a call per score."""
    parts = [_compare_columns(values, models, seed, n, alpha) for values in scores]
    return (_frame([p for p, _ in parts], PAIR_COLUMNS),
            _frame([m for _, m in parts], MODEL_COLUMNS, ("rank", "rank_low", "rank_high")),
            [(len(p["model_a"]), len(m["model"])) for p, m in parts])


def _compare_columns(values, models: Sequence[str], seed: int, n: int, alpha: float) -> tuple[dict, dict]:
    v = np.asarray(values, dtype=float)
    if v.shape[0] != len(models):
        raise ValueError(f"{len(models)} model names for {v.shape[0]} models of values")
    case_means = _nanmean(v, 2)                                   # models x cases
    means = _nanmean(case_means, 1)
    order, index, pair_list, a_of, b_of = _ranked_pairs(means, models)
    drawn_means, all_diffs = _drawn(v, case_means, a_of, b_of, seed, n)
    ranked = np.where(np.isnan(drawn_means), -np.inf, drawn_means)
    rank_draws = _min_ranks(ranked)
    point_rank = _min_ranks(np.where(np.isnan(means), -np.inf, means)[None, :])[0]
    p_values = _paired_ps(case_means[a_of] - case_means[b_of])
    diff_low, diff_high = _endpoints(all_diffs)
    mean_low, mean_high = _endpoints(drawn_means)
    values_ = _pair_values(case_means, a_of, b_of)
    holm, verdict = _holm_verdicts(p_values, values_["difference"], alpha)
    level = holm_levels(p_values, alpha)
    n_cases, sd_d = values_["cases"].astype(float), values_["sd_difference"]
    with np.errstate(invalid="ignore"):
        detectable = np.where(np.isfinite(sd_d) & (n_cases >= 2), power_multiple(
            np.maximum(n_cases, 2), np.nan_to_num(level, nan=alpha)) * sd_d / np.sqrt(np.maximum(n_cases, 1)), np.nan)
    needed = cases_needed(sd_d, values_["difference"], level) if len(a_of) else np.empty(0)
    columns = {"model_a": [models[a] for a in a_of], "model_b": [models[b] for b in b_of], **values_,
               "ci_low": diff_low, "ci_high": diff_high, "p_value": p_values, "p_holm": holm, "verdict": verdict,
               "family": np.full(len(a_of), int((~np.isnan(p_values)).sum())), "holm_level": level,
               "detectable_difference": detectable, "cases_needed": needed, "resolution_ratio": n_cases / needed,
               "neighbours": np.array([pb == pa + 1 for pa, pb in pair_list], dtype=bool)}
    letters = groups([o for o in order if not np.isnan(means[index[o]])],
                     {frozenset((a, b)): v != "indistinguishable"
                      for a, b, v in zip(columns["model_a"], columns["model_b"], verdict)})
    rank_low, rank_high = (np.quantile(rank_draws, [0.025, 0.975], axis=0, method="inverted_cdf") if len(rank_draws)
                           else np.zeros((2, len(models))))
    none = np.isnan(means)  # no case: no rank, no group (never rank 1 or last by default)
    shares = [variance_shares(v[i]) for i in range(len(models))]
    table = {"model": list(models), "cases": (~np.isnan(case_means)).sum(axis=1).astype(int),
             "cells": (~np.isnan(v)).sum(axis=(1, 2)).astype(int), "mean": means, "ci_low": mean_low,
             "ci_high": mean_high,
             **{c: np.where(none, np.nan, x).astype(float)  # made Int64 (NA where none) by _frame
                for c, x in (("rank", point_rank), ("rank_low", rank_low), ("rank_high", rank_high))},
             "group": [letters.get(m, "") for m in models], "variance_cases_share": [a for a, _ in shares],
             "variance_within_share": [b for _, b in shares]}
    # by rank, then name; a model without a rank last (what sort_values(["rank", "model"]) gave)
    at = sorted(range(len(models)), key=lambda i: (bool(none[i]), 0 if none[i] else int(point_rank[i]), models[i]))
    table = {c: x[at] if isinstance(x, np.ndarray) else [x[i] for i in at] for c, x in table.items()}
    return columns, table
