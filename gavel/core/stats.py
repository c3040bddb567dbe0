"""Statistics used across gavel, defined once: agreement between raters (percent agreement, Cohen's and
Fleiss' kappa, Krippendorff's alpha), the majority/median aggregation of several raters, matching F1 of
pairs, and the bootstrap. Every statistic is a :class:`Stat` whose status says why a value is missing
(:data:`STATUSES`): degenerate input never becomes a silent 0, 1 or NaN. The computations are scikit-learn's, statsmodels' and krippendorff's."""

from __future__ import annotations

import itertools
import math
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field, replace

import numpy as np
import pandas as pd

# scikit-learn, statsmodels and krippendorff are imported where they are used: at the top they cost every gavel
# process that takes an interval from this module (the dry run, the pipeline) over a second

#: Why a statistic has no value: the one vocabulary of every table and page that shows one.
STATUSES = {
    "ok": "computed",
    "empty": "no answers yet",
    "one_rater": "no unit has two raters",
    "one_unit": "a single unit: chance agreement cannot be estimated from one unit",
    "too_few_raters": "no unit has as many raters as the statistic needs (three for the two-of-three share)",
    "no_variance": "every rating is the same (chance agreement is 1)",
    "unequal_raters": "units have different numbers of raters (Fleiss' κ needs the same number)",
    "no_pairs": "no matches on either side",
    "no_majority": "no label was given by two of three annotators",
}


@dataclass(frozen=True)
class Stat:
    value: float | None
    status: str = "ok"
    n: int = 0
    agreement: float | None = None  # percent agreement (0..1) beside a kappa/alpha
    low: float | None = None        # bootstrap 95% interval over cases
    high: float | None = None
    detail: str = ""
    extra: dict = field(default_factory=dict, compare=False, repr=False)

    @property
    def ok(self) -> bool:
        return self.status == "ok"

    def as_dict(self) -> dict:
        return {"value": self.value, "status": self.status, "n": self.n, "agreement": self.agreement,
                "low": self.low, "high": self.high, "detail": self.detail}


def unavailable(status: str, n: int = 0, detail: str = "") -> Stat:
    return Stat(None, status, n, detail=detail)


# --- agreement statistics -----------------------------------------------------------------------------

def percent_agreement(a: Sequence, b: Sequence) -> float | None:
    if len(a) != len(b):
        raise ValueError(f"percent agreement needs two equally long rating lists, got {len(a)} and {len(b)}")
    return None if not len(a) else float(np.mean([x == y for x, y in zip(a, b)]))


def cohen_kappa(a: Sequence, b: Sequence, weights: str | None = None, labels: Sequence | None = None) -> Stat:
    """Cohen's kappa of two raters (scikit-learn); ``weights`` None, 'linear' or 'quadratic'."""
    if len(a) != len(b):
        raise ValueError(f"Cohen's kappa needs paired ratings, got {len(a)} and {len(b)}")
    n = len(a)
    if n == 0:
        return unavailable("empty")
    agreement = percent_agreement(a, b)
    if len(set(a) | set(b)) < 2:
        return Stat(None, "no_variance", n, agreement, detail="both raters used one and the same category "
                    "throughout: chance agreement is 1 and kappa is undefined")
    if n < 2:
        return Stat(None, "one_unit", n, agreement, detail=STATUSES["one_unit"])
    from sklearn.metrics import cohen_kappa_score  # imported where used: ~1 s that `make results` never needs

    value = cohen_kappa_score(a, b, weights=weights, labels=labels)
    return Stat(float(value), "ok", n, agreement)


def fleiss_kappa(ratings: pd.DataFrame | Sequence[Sequence], categories: Sequence | None = None) -> Stat:
    """Fleiss' kappa (statsmodels) from a unit x rater table of labels (None/NaN = not rated). Every unit
    needs the same number of ratings, at least two."""
    df = pd.DataFrame(ratings)
    if df.empty:
        return unavailable("empty")
    counts_per_unit = df.notna().sum(axis=1)
    if counts_per_unit.max() < 2:
        return unavailable("one_rater", len(df), "no unit has two ratings")
    if counts_per_unit.nunique() != 1:
        return unavailable("unequal_raters", len(df), f"units have {sorted(counts_per_unit.unique())} ratings; "
                    "Fleiss' kappa needs the same number for every unit")
    cats = list(categories) if categories is not None else sorted({v for v in df.stack().tolist()}, key=str)
    table = np.array([[sum(1 for v in row if v == c) for c in cats] for row in df.itertuples(index=False)])
    if table.sum(axis=1).min() != counts_per_unit.iloc[0]:
        unknown = {v for v in df.stack().tolist()} - set(cats)
        raise ValueError(f"ratings outside the categories: {sorted(map(str, unknown))}")
    return fleiss_from_counts(table)


def fleiss_from_counts(table) -> Stat:
    """Fleiss' kappa from a unit x category count table; percent agreement = mean pairwise agreement."""
    t = np.asarray(table, dtype=float)
    if t.size == 0:
        return unavailable("empty")
    m = t.sum(axis=1)
    if m.min() < 2:
        return unavailable("one_rater", len(t))
    if len(set(m)) != 1:
        return unavailable("unequal_raters", len(t))
    agree = float(np.mean((np.sum(t * t, axis=1) - m) / (m * (m - 1))))
    p = t.sum(axis=0) / t.sum()
    if np.isclose(np.sum(p * p), 1.0):
        return Stat(None, "no_variance", len(t), agree, detail="every rating is in one category")
    if len(t) < 2:  # one unit: kappa is -1/(m-1) or so whatever the ratings, never a measure of agreement
        return Stat(None, "one_unit", 1, agree, detail=STATUSES["one_unit"])
    from statsmodels.stats.inter_rater import fleiss_kappa  # imported where used (as scikit-learn above)

    return Stat(float(fleiss_kappa(t, method="fleiss")), "ok", len(t), agree)


def krippendorff_alpha(reliability: pd.DataFrame | Sequence[Sequence], level: str = "ordinal") -> Stat:
    """Krippendorff's alpha (package ``krippendorff``) of a rater x unit table (NaN = missing)."""
    data = np.asarray(pd.DataFrame(reliability).astype(float))
    if data.size == 0:
        return unavailable("empty")
    pairable = (~np.isnan(data)).sum(axis=0) >= 2
    if data.shape[0] < 2 or not pairable.any():
        return unavailable("one_rater", int(data.shape[1]), "no unit was rated by two raters")
    cols = data[:, pairable]
    agree_pairs = total_pairs = 0
    for col in cols.T:
        vals = col[~np.isnan(col)]
        for x, y in itertools.combinations(vals, 2):
            total_pairs += 1
            agree_pairs += x == y
    agreement = agree_pairs / total_pairs
    if len(np.unique(cols[~np.isnan(cols)])) < 2:
        return Stat(None, "no_variance", int(pairable.sum()), agreement,
                    detail="all pairable ratings are the same value: alpha is undefined")
    if pairable.sum() < 2:  # one unit: alpha is 0 whatever the ratings
        return Stat(None, "one_unit", 1, agreement, detail=STATUSES["one_unit"])
    import krippendorff  # imported where used (as scikit-learn above)

    value = krippendorff.alpha(reliability_data=data, level_of_measurement=level)
    return Stat(float(value), "ok", int(pairable.sum()), agreement, detail=f"level={level}")


def mean_of(stats: Sequence[Stat], detail: str = "") -> Stat:
    """The mean of the statistics that have a value (e.g. alpha over style aspects); without any, the status
    most of them give (``empty`` when there are none)."""
    values = [s.value for s in stats if s.ok]
    if values:
        return Stat(float(np.mean(values)), "ok", len(values), detail=detail)
    statuses = Counter(s.status for s in stats if s.status != "empty")
    return unavailable(statuses.most_common(1)[0][0] if statuses else "empty")


def two_agree(ratings: pd.DataFrame | Sequence[Sequence]) -> Stat:
    """Share of units (rows, three raters each) where at least two raters gave the same rating; the share
    where all three differ is in ``detail`` and ``extra``."""
    df = pd.DataFrame(ratings).dropna()
    if df.empty:
        return unavailable("empty")
    if df.shape[1] != 3:
        return unavailable("too_few_raters" if df.shape[1] < 3 else "unequal_raters", len(df),
                           f"the two-agree share needs three ratings per unit, got {df.shape[1]}")
    any_two = float(np.mean([len(set(r)) < 3 for r in df.itertuples(index=False)]))
    return Stat(any_two, "ok", len(df), detail=f"all three differ: {1 - any_two:.3f}",
                extra={"all_differ": 1 - any_two})


#: The one bootstrap: resamples of the cases (rows of indices drawn with replacement) and percentile 95%
#: intervals over a statistic of each resample. Result tables, `gavel evaluate` and the meta-evaluation all
#: draw through :func:`resamples` with this many resamples.
BOOTSTRAP_RESAMPLES = 2000


def resamples(size: int, rng: np.random.Generator, n: int = BOOTSTRAP_RESAMPLES) -> np.ndarray:
    """``n`` resamples (rows) of ``size`` indices drawn with replacement."""
    return rng.integers(0, size, size=(n, size))


#: resampled indices drawn at once by :func:`bootstrap_means` (8 MB): 2,000 resamples of 10,000 cases at once
#: held 320 MB (the indices and the values they pick)
RESAMPLE_CELLS = 1 << 20


def bootstrap_means(values: np.ndarray, rng: np.random.Generator, n: int = BOOTSTRAP_RESAMPLES) -> np.ndarray:
    """The mean of each resample of ``values``, drawn a block of resamples at a time: the generator gives the
    same numbers in the same order however the draws are split, so the means are :func:`resamples`' own."""
    rows = max(1, RESAMPLE_CELLS // max(1, len(values)))
    return np.concatenate([values[resamples(len(values), rng, min(rows, n - i))].mean(axis=1)
                           for i in range(0, n, rows)]) if n > 0 else np.empty(0)


def mean_interval(values: Iterable, seed: int = 0, n: int = BOOTSTRAP_RESAMPLES) -> tuple[float, float]:
    """Percentile 95% interval of the mean over the values (None and NaN left out), each endpoint rounded to
    the decimals the resampling supports (:func:`round_interval`); NaN, NaN when none."""
    x = np.asarray([v for v in values if v is not None and not (isinstance(v, float) and math.isnan(v))], float)
    if len(x) == 0:
        return math.nan, math.nan
    return round_interval(bootstrap_means(x, np.random.default_rng(seed), n))


#: the most decimals an interval endpoint is given with (the result tables' precision)
MAX_ENDPOINT_DIGITS = 4


def endpoint_digits(draws, q: float) -> int:
    """Decimals the ``q``-th percentile of ``draws`` supports: its Monte-Carlo standard error (from the order
    statistics around it: ranks B*q/100 +- sqrt(B p (1-p)), half their spread) must not reach a unit of the
    last printed digit's half, i.e. 10**-digits >= 2 x the error; at most ``MAX_ENDPOINT_DIGITS``. With 2,000
    resamples a 95% interval of a mean over 100 cases gets one decimal on the 0-100 scale."""
    x = np.sort(np.asarray(draws, dtype=float))
    x = x[~np.isnan(x)]
    if len(x) < 2:
        return MAX_ENDPOINT_DIGITS
    p = q / 100
    half = math.sqrt(len(x) * p * (1 - p))
    lo = min(len(x) - 1, max(0, math.floor(p * (len(x) - 1) - half)))
    hi = min(len(x) - 1, max(0, math.ceil(p * (len(x) - 1) + half)))
    error = (x[hi] - x[lo]) / 2
    if error <= 0:
        return MAX_ENDPOINT_DIGITS
    return int(min(MAX_ENDPOINT_DIGITS, max(0, math.floor(-math.log10(2 * error)))))


def endpoint(draws, q: float) -> float:
    """The ``q``-th percentile of ``draws`` (NaN left out) rounded to the decimals it supports
    (:func:`endpoint_digits`); NaN for no draws."""
    x = np.asarray(draws, dtype=float)
    x = x[~np.isnan(x)]
    if not len(x):
        return math.nan
    return round(float(np.percentile(x, q)), endpoint_digits(x, q)) + 0.0  # + 0.0: no -0.0


def round_interval(draws, low: float = 2.5, high: float = 97.5) -> tuple[float, float]:
    """The percentile interval of ``draws``, each endpoint as :func:`endpoint` gives it."""
    return endpoint(draws, low), endpoint(draws, high)


def bootstrap(cases: Sequence, statistic: Callable[[list], float | None], n_resamples: int = BOOTSTRAP_RESAMPLES,
              seed: int = 0) -> tuple[float | None, float | None]:
    """Percentile 95% interval of ``statistic(list of cases)`` over resamples of the cases. Resamples where
    the statistic is undefined are left out; None when too few remain (fewer than half)."""
    cases = list(cases)
    if len(cases) < 2:
        return None, None
    values = []
    for pick in resamples(len(cases), np.random.default_rng(seed), n_resamples):
        v = statistic([cases[i] for i in pick])
        if v is not None and not (isinstance(v, float) and math.isnan(v)):
            values.append(v)
    if len(values) < n_resamples // 2:
        return None, None
    return float(np.percentile(values, 2.5)), float(np.percentile(values, 97.5))


def with_interval(stat: Stat, cases: Sequence, statistic: Callable[[list], float | None], **kw) -> Stat:
    if not stat.ok:
        return stat
    low, high = bootstrap(cases, statistic, **kw)
    return replace(stat, low=low, high=high)


# --- the bootstrap in one pass --------------------------------------------------------------------------
# The same resamples as :func:`bootstrap` (same seed, same draws), each given as how many times it holds
# each case; a statistic of all resamples is then one array computation instead of one call per resample.
# The values agree with :func:`bootstrap` over the scalar statistics above (tests/test_metaeval.py).

def draw_counts(size: int, seed: int = 0, n: int = BOOTSTRAP_RESAMPLES) -> np.ndarray:
    """(n, size): how many times each of ``size`` cases is in each resample of :func:`bootstrap`."""
    blocks = list(count_blocks(size, np.random.default_rng(seed), n))
    return np.concatenate(blocks) if blocks else np.zeros((0, size), dtype=np.int64)


def count_blocks(size: int, rng: np.random.Generator, n: int = BOOTSTRAP_RESAMPLES) -> Iterator[np.ndarray]:
    """:func:`draw_counts`' rows a block at a time (at most ``RESAMPLE_CELLS`` picks each; the last may be
    shorter): the generator gives the same numbers in the same order however the draws are split."""
    for picks in resample_blocks(size, rng, n):
        k = len(picks)
        yield np.bincount((np.arange(k)[:, None] * size + picks).ravel(), minlength=k * size).reshape(k, size)


def resample_blocks(size: int, rng: np.random.Generator, n: int = BOOTSTRAP_RESAMPLES,
                    width: int = 1) -> Iterator[np.ndarray]:
    """:func:`resamples`' rows a block at a time: at most ``RESAMPLE_CELLS`` picks times ``width`` (the
    values each pick brings along) per block, the last may be shorter; the same numbers in the same order as
    one draw of all."""
    rows = max(1, RESAMPLE_CELLS // max(1, size * width))
    for lo in range(0, n, rows):
        yield resamples(size, rng, min(rows, n - lo))


def with_draws(stat: Stat, size: int, draws: Callable[[np.ndarray], np.ndarray],
               n_resamples: int = BOOTSTRAP_RESAMPLES, seed: int = 0) -> Stat:
    """:func:`with_interval` over ``size`` cases with every resample at once: ``draws(counts)`` gets the
    (resamples x cases) count matrix of :func:`draw_counts` and returns the statistic of each resample (NaN
    where undefined). Undefined resamples are left out; no interval when fewer than half remain."""
    if not stat.ok:
        return stat
    if size < 2:
        return replace(stat, low=None, high=None)
    values = np.asarray(draws(draw_counts(size, seed, n_resamples)), dtype=float)
    values = values[~np.isnan(values)]
    if len(values) < n_resamples // 2:
        return replace(stat, low=None, high=None)
    return replace(stat, low=float(np.percentile(values, 2.5)), high=float(np.percentile(values, 97.5)))


def mean_draws(values: Sequence[float | None]) -> Callable[[np.ndarray], np.ndarray]:
    """The mean of each resample of ``values`` (None and NaN left out of each mean), for :func:`with_draws`."""
    x = np.array([math.nan if v is None else v for v in values], dtype=float)
    ok = ~np.isnan(x)

    def draws(counts: np.ndarray) -> np.ndarray:
        total, n = counts @ np.where(ok, x, 0.0), counts @ ok.astype(float)
        return np.divide(total, n, out=np.full(len(counts), math.nan), where=n > 0)
    return draws


def _codes(values: Sequence, labels: Sequence) -> np.ndarray:
    index = {v: i for i, v in enumerate(labels)}
    extra: dict = {}
    return np.array([index[v] if v in index else len(labels) + extra.setdefault(v, len(extra)) for v in values],
                    dtype=int)


def cohen_kappa_draws(a: Sequence, b: Sequence, units: Sequence[int], labels: Sequence,
                      weights: str | None = None) -> Callable[[np.ndarray], np.ndarray]:
    """:func:`cohen_kappa` of each resample, for :func:`with_draws`: rating pair i belongs to case
    ``units[i]`` (0..cases-1) and comes with it into a resample; ``labels`` as scikit-learn's (pairs with a
    rating outside them are left out of the kappa, not of the one-category check)."""
    codes = _codes(list(a) + list(b), labels)
    ca, cb = codes[:len(a)], codes[len(a):]
    units = np.asarray(units, dtype=int)
    n_units, n_lab, n_codes = int(units.max()) + 1 if len(units) else 0, len(labels), int(codes.max()) + 1
    conf = np.zeros((n_units, n_lab, n_lab))
    inside = (ca < n_lab) & (cb < n_lab)
    np.add.at(conf, (units[inside], ca[inside], cb[inside]), 1)
    seen = np.zeros((n_units, n_codes))
    np.add.at(seen, (units, ca), 1)
    np.add.at(seen, (units, cb), 1)
    grid = np.arange(n_lab)
    w = ((grid[:, None] != grid[None, :]).astype(float) if weights is None
         else np.abs(grid[:, None] - grid[None, :]).astype(float) if weights == "linear"
         else (grid[:, None] - grid[None, :]).astype(float) ** 2)

    def draws(counts: np.ndarray) -> np.ndarray:
        c = (counts @ conf.reshape(n_units, -1)).reshape(-1, n_lab, n_lab)
        total = c.sum(axis=(1, 2))
        expected = c.sum(axis=1)[:, :, None] * c.sum(axis=2)[:, None, :] / np.where(total > 0, total, 1)[:, None, None]
        num, den = (w * c).sum(axis=(1, 2)), (w * expected).sum(axis=(1, 2))
        kappa = 1 - np.divide(num, den, out=np.full(len(c), math.nan), where=den != 0)
        one_category = ((counts @ seen) > 0).sum(axis=1) < 2
        return np.where(one_category, math.nan, kappa)
    return draws


def fleiss_kappa_draws(ratings, categories: Sequence) -> Callable[[np.ndarray], np.ndarray]:
    """:func:`fleiss_kappa` of each resample of the units (rows) of a unit x rater table, for
    :func:`with_draws`."""
    df = pd.DataFrame(ratings)
    table = np.array([[sum(1 for v in row if v == c) for c in categories] for row in df.itertuples(index=False)],
                     dtype=float).reshape(len(df), len(categories))
    m = table.sum(axis=1)
    agree = np.divide((table * table).sum(axis=1) - m, m * (m - 1), out=np.zeros(len(m)), where=m >= 2)

    def draws(counts: np.ndarray) -> np.ndarray:
        picked = counts > 0
        low = np.where(picked, m, np.inf).min(axis=1)
        high = np.where(picked, m, -np.inf).max(axis=1)
        cat = counts @ table
        p = cat / np.where(cat.sum(axis=1) > 0, cat.sum(axis=1), 1)[:, None]
        p_exp = (p * p).sum(axis=1)
        p_mean = (counts @ agree) / counts.sum(axis=1)
        kappa = np.divide(p_mean - p_exp, 1 - p_exp, out=np.full(len(counts), math.nan), where=p_exp != 1)
        defined = (low == high) & (low >= 2) & ~np.isclose(p_exp, 1.0)
        return np.where(defined, kappa, math.nan)
    return draws


def krippendorff_alpha_draws(reliability, level: str = "ordinal") -> Callable[[np.ndarray], np.ndarray]:
    """:func:`krippendorff_alpha` of each resample of the units (columns) of a rater x unit table (NaN =
    missing), for :func:`with_draws`: the package's coincidence matrices, summed per resample."""
    data = np.asarray(pd.DataFrame(reliability).astype(float))
    domain = np.unique(data[~np.isnan(data)])
    n_val = len(domain)
    vc = (data.T[..., None] == domain[None, None, :]).sum(axis=1).astype(float)  # unit x value
    pairs = np.maximum(vc.sum(axis=1), 2) - 1
    pairable_unit = (vc.sum(axis=1) >= 2).astype(float)
    coinc = (vc[:, :, None] * vc[:, None, :] - vc[:, None, :] * np.eye(n_val)[None]) / pairs[:, None, None]
    idx = np.arange(n_val)
    lo, hi = np.minimum(idx[:, None], idx[None, :]), np.maximum(idx[:, None], idx[None, :])

    def distances(n_v: np.ndarray) -> np.ndarray:  # (draws, V, V)
        if level == "nominal":
            return np.broadcast_to((idx[:, None] != idx[None, :]).astype(float), (len(n_v), n_val, n_val))
        if level == "interval":
            return np.broadcast_to((domain[:, None] - domain[None, :]) ** 2, (len(n_v), n_val, n_val))
        if level == "ordinal":
            cum = np.concatenate([np.zeros((len(n_v), 1)), np.cumsum(n_v, axis=1)], axis=1)
            between = cum[:, hi + 1] - cum[:, lo]
            return (between - (n_v[:, idx[:, None]] + n_v[:, idx[None, :]]) / 2) ** 2
        raise ValueError(f"level of measurement {level!r}: nominal, ordinal or interval")

    def draws(counts: np.ndarray) -> np.ndarray:
        if data.shape[0] < 2 or n_val < 2:
            return np.full(len(counts), math.nan)
        o = (counts @ coinc.reshape(len(vc), -1)).reshape(-1, n_val, n_val)
        n_v = o.sum(axis=1)
        n = n_v.sum(axis=1)
        e = (n_v[:, :, None] * n_v[:, None, :] - n_v[:, None, :] * np.eye(n_val)[None]) / np.where(n > 1, n - 1, 1)[:, None, None]
        d = distances(n_v)
        num, den = (o * d).sum(axis=(1, 2)), (e * d).sum(axis=(1, 2))
        alpha = 1 - np.divide(num, den, out=np.full(len(counts), math.nan), where=den != 0)
        defined = ((n_v > 0).sum(axis=1) >= 2) & (counts @ pairable_unit >= 2)
        return np.where(defined, alpha, math.nan)
    return draws


# --- aggregation (section 2.3) ------------------------------------------------------------------------

def majority(labels: Iterable) -> tuple[object | None, str]:
    """The label given by at least two annotators (with three), or the only label of one annotator."""
    labels = [x for x in labels if x is not None]
    if not labels:
        return None, "empty"
    if len(labels) == 1:
        return labels[0], "one_rater"
    label, count = Counter(labels).most_common(1)[0]
    return (label, "ok") if count >= 2 else (None, "no_majority")


def majority_pairs(pair_sets: Sequence[Iterable]) -> set[tuple[int, int]]:
    """Matches kept by at least two annotators (all of them with a single annotator)."""
    sets = [{tuple(p) for p in s} for s in pair_sets]
    if len(sets) == 1:
        return sets[0]
    votes = Counter(p for s in sets for p in s)
    return {p for p, c in votes.items() if c >= 2}


def median_rating(ratings: Iterable[float]) -> float | None:
    r = [x for x in ratings if x is not None and not (isinstance(x, float) and math.isnan(x))]
    return float(np.median(r)) if r else None



def pair_f1(pred: Iterable, gold: Iterable) -> float | None:
    """F1 of predicted against gold matching pairs; None when both are empty (nothing to match)."""
    p, g = {tuple(x) for x in pred}, {tuple(x) for x in gold}
    if not p and not g:
        return None
    tp = len(p & g)
    return 0.0 if tp == 0 else 2 * tp / (len(p) + len(g))


