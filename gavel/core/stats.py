"""Statistics used across gavel, defined once: agreement between raters (percent agreement, Cohen's and
Fleiss' kappa, Krippendorff's alpha), the majority/median aggregation of several raters, matching F1 of
pairs, and the bootstrap. Every statistic is a :class:`Stat` whose status says why a value is missing
(``empty``, ``one_rater``, ``no_variance``, ``unequal_raters``, ``no_pairs``): degenerate input never becomes
a silent 0, 1 or NaN. The computations are scikit-learn's, statsmodels' and krippendorff's."""

from __future__ import annotations

import itertools
import math
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field, replace

import krippendorff
import numpy as np
import pandas as pd
from sklearn.metrics import cohen_kappa_score
from statsmodels.stats.inter_rater import fleiss_kappa as _sm_fleiss


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
    return Stat(float(_sm_fleiss(t, method="fleiss")), "ok", len(t), agree)


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
    value = krippendorff.alpha(reliability_data=data, level_of_measurement=level)
    return Stat(float(value), "ok", int(pairable.sum()), agreement, detail=f"level={level}")


def two_agree(ratings: pd.DataFrame | Sequence[Sequence]) -> Stat:
    """Share of units (rows, three raters each) where at least two raters gave the same rating; the share
    where all three differ is in ``detail`` and ``extra``."""
    df = pd.DataFrame(ratings).dropna()
    if df.empty:
        return unavailable("empty")
    if df.shape[1] != 3:
        return unavailable("unequal_raters", len(df), f"the two-agree share needs three ratings per unit, got {df.shape[1]}")
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


def bootstrap_means(values: np.ndarray, rng: np.random.Generator, n: int = BOOTSTRAP_RESAMPLES) -> np.ndarray:
    """The mean of each resample of ``values``."""
    return values[resamples(len(values), rng, n)].mean(axis=1)


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


