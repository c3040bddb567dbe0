"""Is the judge fair to both sides? The order report of ``--orders both`` (docs/orders.md).

With ``Settings.orders == "both"`` every pair the judge sees (compare: single and multi gates; residual_match)
is asked a second time with the sides swapped, and each answer is mapped back to model/reference wording
through ``gavel.core.vocab`` (``relation_of``, ``matching_of``). Every judgment of every repeat and order is a
row of ``judgments.csv`` (:data:`gavel.runs.pipeline.JUDGMENT_COLUMNS` and ``repeat``); from it and the runs'
``compare`` tables :func:`report` makes

``order.csv``          per stage, item and gate: position consistency (share of pairs whose two verdicts agree
                       after mapping), first-position preference (share of containment verdicts that name the
                       side shown first as the container), each with a bootstrap interval; ``position_bias``
                       where that interval excludes 1/2; the majority analysis summarised per item
``order_swaps.csv``    the swap matrix per stage and item: verdict in order 1 x verdict in order 2 (the four
                       relations and ``unusable``), count and share with an interval
``order_summaries.csv`` per summary and repeat: S_checklist under order 1, under order 2, and order-aware
                       (best, low, high)
``order_models.csv``   the same per model, with intervals over cases and repeats
``order_majority.csv`` per judged unit: its judgments over repeats x orders, the majority verdict and the
                       smallest k whose majority agrees with it with probability 0.95, exactly (``stable_k``)

An unusable answer is its own outcome (``unusable``): a pair with one is counted apart, never as a flip or
a 0; in the order-aware score it is bounded by 0 and 1 as everywhere else.
"""

from __future__ import annotations

import functools
import json
import math
from collections import Counter
from pathlib import Path

import numpy as np
import pandas as pd

from gavel.core import stats
from gavel.core.items import titled
from gavel.ref.tables import read_report as read_named_report
from gavel.runs.judgments import UNUSABLE, outcome
from gavel.runs.stability import repeat_interval

NAMES = ("order", "order_swaps", "order_summaries", "order_models", "order_majority")
SINGLE_OUTCOMES = ("relation:equal", "relation:model_contains_reference", "relation:reference_contains_model",
                   "relation:different", UNUSABLE)
STABLE_SHARE = 0.95  # a majority is stable at k when k judgments' majority agrees with it this often
MAX_K = 51           # stable_k is searched up to this many judgments (beyond: NaN, "no stable majority")


def first_container(table: pd.DataFrame) -> pd.Series:
    """Per judgment: 1.0 where the side shown first (A) is called the container, 0.0 where the second is,
    NaN otherwise (equal, different, unusable). A list matching calls A the container when every value of B
    is matched and some value of A is not (and the other way round)."""
    out = pd.Series(np.nan, index=table.index)
    ok = table["status"] == "ok"
    single = ok & (table["gate"] == "single")
    out[single & (table["answer_ab"] == "a_contains_b")] = 1.0
    out[single & (table["answer_ab"] == "b_contains_a")] = 0.0
    lists = table[ok & (table["gate"] != "single")]
    if len(lists):
        model_a = np.array([_true(x) for x in lists["model_is_a"]])
        n_a = np.where(model_a, lists["n_model"], lists["n_reference"]).astype(int)
        n_b = np.where(model_a, lists["n_reference"], lists["n_model"]).astype(int)
        first = []
        for answer, na, nb in zip(lists["answer_ab"], n_a, n_b):
            common = json.loads(answer)["common"]
            left_a, left_b = na - len({a for a, _ in common}), nb - len({b for _, b in common})
            first.append(1.0 if left_a > 0 and left_b == 0 else 0.0 if left_b > 0 and left_a == 0 else math.nan)
        out[lists.index] = first
    return out


def _true(x) -> bool:
    return x is True or str(x) == "True"


@functools.lru_cache(maxsize=8)
def _resamples(size: int, seed: int) -> np.ndarray:
    """``stats.resamples`` from a fresh generator of ``seed`` (the same draw for every item of one size)."""
    return stats.resamples(size, np.random.default_rng(seed))


def _ratio_interval(num: np.ndarray, den: np.ndarray, seed: int) -> tuple[float, float]:
    """Percentile 95% interval of sum(num) / sum(den) over resamples of the clusters (rows)."""
    keep = den > 0
    num, den = num[keep], den[keep]
    if not len(den):
        return math.nan, math.nan
    picks = _resamples(len(den), seed)
    with np.errstate(invalid="ignore", divide="ignore"):
        ratios = num[picks].sum(axis=1) / den[picks].sum(axis=1)
    return float(np.nanpercentile(ratios, 2.5)), float(np.nanpercentile(ratios, 97.5))


def _share(g: pd.DataFrame, value: str, cluster: list[str], seed: int) -> tuple[float, float, float, int]:
    """Share (mean of ``value`` where known), its cluster bootstrap interval, and how many were known."""
    known = g[g[value].notna()]
    if not len(known):
        return math.nan, math.nan, math.nan, 0
    per = known.groupby(cluster, sort=False)[value].agg(["sum", "count"])
    lo, hi = _ratio_interval(per["sum"].to_numpy(float), per["count"].to_numpy(float), seed)
    return float(known[value].mean()), lo, hi, len(known)


def order_pairs(judgments: pd.DataFrame) -> pd.DataFrame:
    """One row per judged pair and repeat: its verdict in each order (``order_1``, ``order_2``), whether both
    are usable, and whether they agree after mapping."""
    j = judgments.assign(outcome=[outcome(*x) for x in zip(judgments["status"], judgments["gate"],
                                                            judgments["relation"], judgments["pairs"])])
    keys = ["stage", "subject", "case_id", "item", "repeat"]
    if not len(j):
        return pd.DataFrame(columns=[*keys, "order_1", "order_2", "gate", "usable", "agree"])
    wide = j.pivot_table(index=keys, columns="order", values="outcome", aggfunc="first")
    gate = j[j["order"] == 1].set_index(keys)["gate"]
    wide = wide.reindex(columns=[1, 2]).dropna().rename(columns={1: "order_1", 2: "order_2"}).reset_index()
    wide["gate"] = gate.reindex(wide.set_index(keys).index).to_numpy()
    usable = (wide["order_1"] != UNUSABLE) & (wide["order_2"] != UNUSABLE)
    wide["usable"] = usable
    wide["agree"] = (wide["order_1"] == wide["order_2"]).where(usable).astype(float)
    return wide


def report(judgments: pd.DataFrame, runs: list[dict], seed: int = 0) -> dict[str, pd.DataFrame]:
    """The order report (see the module) of the judgments of an evaluation with ``--orders both``."""
    j = judgments.copy()
    j["case_id"] = j["case_id"].astype(str)
    j["first"] = first_container(j)
    pairs = order_pairs(j)
    majority = majority_table(j, seed)
    rows = []
    by = ["stage", "item", "gate"]
    pair_groups, majority_groups = dict(list(pairs.groupby(by))), dict(list(majority.groupby(by)))
    for (stage, item, gate), g in j.groupby(by, sort=True):
        p = pair_groups.get((stage, item, gate), pairs.iloc[:0])
        cons, c_lo, c_hi, n_usable = _share(p, "agree", ["subject", "case_id"], seed)
        pref, p_lo, p_hi, n_cont = _share(g, "first", ["subject", "case_id"], seed)
        m = majority_groups.get((stage, item, gate), majority.iloc[:0])
        rows.append({
            "stage": stage, "item": item, "gate": gate, "pairs": len(p), "usable_pairs": n_usable,
            "unusable_pairs": len(p) - n_usable, "consistency": cons, "consistency_ci_low": c_lo,
            "consistency_ci_high": c_hi, "judgments": len(g), "containment_verdicts": n_cont,
            "first_is_container": int(g["first"].eq(1.0).sum()), "second_is_container": int(g["first"].eq(0.0).sum()),
            "first_preference": pref, "first_preference_ci_low": p_lo, "first_preference_ci_high": p_hi,
            "position_bias": position_bias(int(g["first"].eq(1.0).sum()), n_cont, p_lo, p_hi),
            "majority_units": len(m), "majority_unanimous": int((m["majority_share"] == 1.0).sum()),
            "stable_k_median": float(m["stable_k"].median()) if m["stable_k"].notna().any() else math.nan,
            "no_stable_majority": int(m["stable_k"].isna().sum())})
    order = pd.DataFrame(rows, columns=ORDER_COLUMNS)
    summaries = summary_scores(j, runs)
    majority = with_cost(majority, runs)
    return {"order": order, "order_swaps": swap_matrix(pairs, seed), "order_summaries": summaries,
            "order_models": model_scores(summaries, len(runs), seed), "order_majority": majority}


def sign_test_p(first: int, n: int) -> float:
    """Two-sided exact binomial test (scipy's ``binomtest``) of ``first`` of ``n`` containment verdicts naming
    the side shown first, against 1/2; NaN without a verdict."""
    from scipy.stats import binomtest

    return float(binomtest(first, n, 0.5).pvalue) if n else math.nan


#: the fewest containment verdicts whose sign test can reach ``BIAS_ALPHA`` (n of n: 2 x 0.5^n < 0.05)
BIAS_ALPHA = 0.05
MIN_VERDICTS = next(n for n in range(1, 64) if 2 * 0.5 ** n < BIAS_ALPHA)


def position_bias(first: int, n: int, low: float, high: float) -> bool:
    """A position bias: the exact sign test on the counts rejects 1/2 at ``BIAS_ALPHA`` (needs at least
    ``MIN_VERDICTS`` verdicts) and the cluster bootstrap interval excludes 1/2 (the cases hold the verdicts
    of one summary together, which the sign test does not know)."""
    return bool(n >= MIN_VERDICTS and sign_test_p(first, n) < BIAS_ALPHA and (low > 0.5 or high < 0.5))


ORDER_COLUMNS = ["stage", "item", "gate", "pairs", "usable_pairs", "unusable_pairs", "consistency",
                 "consistency_ci_low", "consistency_ci_high", "judgments", "containment_verdicts",
                 "first_is_container", "second_is_container", "first_preference", "first_preference_ci_low",
                 "first_preference_ci_high", "position_bias", "majority_units", "majority_unanimous",
                 "stable_k_median", "no_stable_majority"]


def biased_items(order: pd.DataFrame) -> list[tuple[str, str]]:
    """(stage, item) of every row the report marks ``position_bias``."""
    flagged = order[order["position_bias"].astype(str) == "True"]
    return sorted(set(zip(flagged["stage"], flagged["item"])))


def swap_matrix(pairs: pd.DataFrame, seed: int = 0) -> pd.DataFrame:
    """Per stage and item of the single gate: the count and share of each (order 1, order 2) verdict, with
    a bootstrap interval over pairs; every cell of the 5 x 5 matrix (four relations and ``unusable``)."""
    rows = []
    single = pairs[pairs["gate"] == "single"]
    for (stage, item), g in single.groupby(["stage", "item"], sort=True):
        cells = [(a, b) for a in SINGLE_OUTCOMES for b in SINGLE_OUTCOMES]
        code = {c: i for i, c in enumerate(cells)}
        which = np.array([code[(a, b)] for a, b in zip(g["order_1"], g["order_2"])])
        drawn = which[_resamples(len(which), seed)]  # resamples x pairs: each drawn pair's cell
        per_draw = np.bincount((drawn + len(cells) * np.arange(len(drawn))[:, None]).ravel(),
                               minlength=len(drawn) * len(cells)).reshape(len(drawn), len(cells)) / len(which)
        lo, hi = np.percentile(per_draw, 2.5, axis=0), np.percentile(per_draw, 97.5, axis=0)
        counts = np.bincount(which, minlength=len(cells))
        for i, (a, b) in enumerate(cells):
            rows.append({"stage": stage, "item": item, "order_1": a.removeprefix("relation:"),
                         "order_2": b.removeprefix("relation:"), "count": int(counts[i]),
                         "share": float(counts[i] / len(which)), "share_ci_low": float(lo[i]),
                         "share_ci_high": float(hi[i])})
    return pd.DataFrame(rows, columns=["stage", "item", "order_1", "order_2", "count", "share", "share_ci_low",
                                       "share_ci_high"])


# ---------- S_checklist under each order, and order-aware ----------
def _item_bounds(status: pd.Series, score: pd.Series) -> tuple[pd.Series, pd.Series, pd.Series]:
    """Best, low, high of each item's score: unusable -> (NaN, 0, 1), as ``score.checklist_scores``."""
    usable = status.isin(["ok", "gated"])
    best = score.where(usable).astype(float)
    return best, best.where(usable, 0.0), best.where(usable, 1.0)


def summary_scores(judgments: pd.DataFrame, runs: list[dict]) -> pd.DataFrame:
    """Per summary and repeat: S_checklist under order 1 (today's score), under order 2, and order-aware: a
    pair whose two verdicts disagree enters as [lower, higher of its two scores] (best estimate: their mean);
    an unusable verdict enters as [0, 1] and is left out of the best estimate. ``disagreeing_items``: usable
    verdicts that differ after mapping (two containments differ but score alike: their bounds stay a point)."""
    keys = ["subject", "case_id", "item"]
    second = judgments[(judgments["stage"] == "compare") & (judgments["order"] == 2)]
    frames = []
    for r, t in enumerate(runs, 1):
        c = t["compare"]
        if not len(c):
            continue
        c = c[c["gate"] != "not_applicable"].assign(case_id=lambda d: d["case_id"].astype(str), repeat=r)
        s2 = second[second["repeat"] == r].set_index(keys)
        idx = c.set_index(keys).index
        judged = idx.isin(s2.index)
        status2 = pd.Series(np.where(judged, s2["status"].reindex(idx).to_numpy(), c["status"].to_numpy()), index=c.index)
        score2 = pd.Series(np.where(judged, s2["score"].reindex(idx).to_numpy(), c["score"].to_numpy()), index=c.index)
        b1, l1, h1 = _item_bounds(c["status"], c["score"])
        b2, l2, h2 = _item_bounds(status2, score2.astype(float))
        verdict1 = [outcome(*x) for x in zip(c["status"], c["gate"], c["relation"], c["pairs"])]
        verdict2 = [outcome(st, g, rel, pr) if j else v for st, g, rel, pr, j, v in zip(
            s2["status"].reindex(idx), c["gate"], s2["relation"].reindex(idx), s2["pairs"].reindex(idx), judged,
            verdict1)]
        differ = pd.Series([a != b for a, b in zip(verdict1, verdict2)], index=c.index)
        frames.append(c[["repeat", "subject", "case_id"]].assign(
            best_1=b1, best_2=b2, low_1=l1, low_2=l2, aware=pd.concat([b1, b2], axis=1).mean(axis=1),
            aware_low=np.fmin(l1, l2), aware_high=np.fmax(h1, h2),
            disagree=(b1.notna() & b2.notna() & differ).astype(int),
            unusable=(b1.isna() | b2.isna()).astype(int)))
    cols = ["repeat", "subject", "case_id", "s_checklist_order_1", "s_checklist_order_2", "s_checklist_order_aware",
            "s_checklist_order_aware_low", "s_checklist_order_aware_high", "items", "disagreeing_items",
            "unusable_items"]
    if not frames:
        return pd.DataFrame(columns=cols)
    g = pd.concat(frames, ignore_index=True).groupby(["repeat", "subject", "case_id"], sort=True)
    out = pd.DataFrame({"s_checklist_order_1": 100 * g["best_1"].mean(), "s_checklist_order_2": 100 * g["best_2"].mean(),
                        "s_checklist_order_aware": 100 * g["aware"].mean(),
                        "s_checklist_order_aware_low": 100 * g["aware_low"].mean(),
                        "s_checklist_order_aware_high": 100 * g["aware_high"].mean(), "items": g["aware"].size(),
                        "disagreeing_items": g["disagree"].sum(), "unusable_items": g["unusable"].sum()}).reset_index()
    return out[cols]


def model_scores(summaries: pd.DataFrame, repeats: int, seed: int = 0) -> pd.DataFrame:
    """Per model: the mean of each score over cases and repeats, with a 95% interval that resamples cases and,
    per case, a repeat (``stability.repeat_interval``); the bounds' interval from the low and high scores."""
    rows = []
    for subject, g in summaries.groupby("subject", sort=True):
        row = {"subject": subject, "cases": g["case_id"].nunique(), "repeats": repeats}

        def matrix(col, g=g):  # cases x repeats
            wide = g.pivot_table(index="case_id", columns="repeat", values=col, aggfunc="first", dropna=False)
            return wide.reindex(columns=range(1, repeats + 1)).to_numpy(float)
        for col in ("s_checklist_order_1", "s_checklist_order_2", "s_checklist_order_aware"):
            row[col] = float(g[col].mean())
            row[f"{col}_ci_low"], row[f"{col}_ci_high"] = repeat_interval(matrix(col), seed)
        row["s_checklist_order_aware_low"] = float(g["s_checklist_order_aware_low"].mean())
        row["s_checklist_order_aware_high"] = float(g["s_checklist_order_aware_high"].mean())
        row["bounds_ci_low"] = repeat_interval(matrix("s_checklist_order_aware_low"), seed)[0]
        row["bounds_ci_high"] = repeat_interval(matrix("s_checklist_order_aware_high"), seed)[1]
        row["disagreeing_items"] = int(g["disagreeing_items"].sum())
        row["unusable_items"] = int(g["unusable_items"].sum())
        rows.append(row)
    return pd.DataFrame(rows, columns=MODEL_COLUMNS)


MODEL_COLUMNS = ["subject", "cases", "repeats"] + [
    f"s_checklist_{o}{x}" for o in ("order_1", "order_2", "order_aware") for x in ("", "_ci_low", "_ci_high")] + [
    "s_checklist_order_aware_low", "s_checklist_order_aware_high", "bounds_ci_low", "bounds_ci_high",
    "disagreeing_items", "unusable_items"]


# ---------- majority over repeats x orders ----------
def majority_probability(counts: tuple[int, ...], k: int) -> float:
    """Exactly: the chance that k judgments drawn with replacement from ones with these outcome ``counts``
    (largest first) have the overall majority strictly ahead of every other outcome (a tie is not that
    majority). Sum over the majority's count t of P(t) x P(every other outcome < t among the other k - t),
    the latter a coefficient of the product of truncated exponential series (no resampling)."""
    counts = tuple(sorted((c for c in counts if c > 0), reverse=True))
    if not counts or k < 1:
        return math.nan
    if len(counts) == 1:
        return 1.0
    n = sum(counts)
    top = counts[0] / n
    others = [c / (n - counts[0]) for c in counts[1:]]
    total = 0.0
    for t in range(1, k + 1):
        rest = k - t
        series = np.zeros(rest + 1)
        series[0] = 1.0
        c = np.arange(min(t, rest + 1))
        log_fact = np.array([math.lgamma(x + 1) for x in c])
        for q in others:  # each other outcome appears fewer than t times
            series = np.convolve(series, np.exp(c * math.log(q) - log_fact))[:rest + 1]
        inner = series[rest] * math.exp(math.lgamma(rest + 1)) if rest < len(series) else 0.0
        total += math.comb(k, t) * top ** t * (1 - top) ** rest * inner
    return min(total, 1.0)


def stable_k(counts: tuple[int, ...], seed: int | None = None) -> float:
    """The smallest k (1..MAX_K) whose majority is the overall majority with probability at least
    ``STABLE_SHARE`` (``majority_probability``, exact). NaN when the overall counts tie or no k up to MAX_K
    suffices. ``seed`` is accepted for old callers and unused: nothing is drawn."""
    counts = tuple(sorted((c for c in counts if c > 0), reverse=True))
    if len(counts) == 1:
        return 1.0
    if not counts or counts[0] == counts[1]:
        return math.nan
    for k in range(1, MAX_K + 1):
        if majority_probability(counts, k) >= STABLE_SHARE:
            return float(k)
    return math.nan


def majority_curve(counts: tuple[int, ...], ks=range(1, MAX_K + 1)) -> list[float]:
    """``majority_probability`` at each k: the curve a unit's ``stable_k`` is read from."""
    return [majority_probability(counts, k) for k in ks]


def majority_table(judgments: pd.DataFrame, seed: int = 0) -> pd.DataFrame:
    """Per judged unit (stage, subject, case, item): how many judgments over repeats x orders, the majority
    verdict (None on a tie), its share, the outcomes with their counts, and ``stable_k``."""
    j = judgments.assign(outcome=[outcome(*x) for x in zip(judgments["status"], judgments["gate"],
                                                            judgments["relation"], judgments["pairs"])])
    units: dict = {}
    for key, gate, outcome_ in zip(zip(j["stage"], j["subject"], j["case_id"], j["item"]), j["gate"], j["outcome"]):
        unit = units.setdefault(key, (Counter(), Counter()))
        unit[0][outcome_] += 1
        unit[1][gate] += 1
    memo: dict = {}
    rows = []
    for (stage, subject, case_id, item), (votes, gates) in sorted(units.items()):
        ranked = votes.most_common()
        n = sum(votes.values())
        tie = len(ranked) > 1 and ranked[0][1] == ranked[1][1]
        key = tuple(sorted(votes.values(), reverse=True))
        if key not in memo:
            memo[key] = stable_k(key)
        rows.append({"stage": stage, "subject": subject, "case_id": case_id, "item": item,
                     "gate": gates.most_common(1)[0][0], "judgments": n, "majority": None if tie else ranked[0][0],
                     "majority_share": ranked[0][1] / n, "outcomes": json.dumps(dict(ranked)),
                     "unusable": int(votes.get(UNUSABLE, 0)), "stable_k": memo[key]})
    return pd.DataFrame(rows, columns=["stage", "subject", "case_id", "item", "gate", "judgments", "majority",
                                       "majority_share", "outcomes", "unusable", "stable_k"])


def with_cost(majority: pd.DataFrame, runs: list[dict]) -> pd.DataFrame:
    """``majority`` with what its judgments cost at the run's prices (every repeat's ``cost.csv``): the
    price of one judgment of the unit's stage (``usd_when_answered`` / requests, both orders), ``stable_k``
    judgments at that price, and what the judgments still missing (``stable_k`` - ``judgments``) would cost."""
    costs = [t["cost"] for t in runs if len(t.get("cost", ()))]
    price = {}
    if costs:
        c = pd.concat(costs, ignore_index=True)
        per = c.groupby("stage")[["usd_when_answered", "requests"]].sum()
        price = {st: float(u) / r for st, (u, r) in per.iterrows() if r > 0}
    each = majority["stage"].map(price).astype(float)
    more = (majority["stable_k"] - majority["judgments"]).clip(lower=0)
    return majority.assign(usd_per_judgment=each, stable_k_usd=majority["stable_k"] * each, more_judgments=more,
                           more_usd=more * each)


def majority_curves(majority: pd.DataFrame, ks=range(1, MAX_K + 1)) -> pd.DataFrame:
    """Per stage and item: the chance that k judgments' majority is the unit's majority
    (``majority_probability``), averaged over the item's units that have one, for each k."""
    rows = []
    for (stage, item), g in majority.groupby(["stage", "item"], sort=True):
        curves = [majority_curve(tuple(json.loads(o).values()), ks) for o, m in zip(g["outcomes"], g["majority"])
                  if isinstance(m, str) and m]
        if curves:
            mean = np.mean(curves, axis=0)
            rows += [{"stage": stage, "item": item, "k": k, "probability": float(p), "units": len(curves)}
                     for k, p in zip(ks, mean)]
    return pd.DataFrame(rows, columns=["stage", "item", "k", "probability", "units"])


def majority_figure(majority: pd.DataFrame, title: str = "How many judgments settle the verdict?"):
    """One curve per item: the chance that a majority of k judgments is the unit's majority, against k (odd
    k only: an even k can tie); the dashed line is the 95% that ``stable_k`` asks for."""
    import matplotlib.pyplot as plt

    curves = majority_curves(majority, range(1, MAX_K + 1, 2))
    fig, ax = plt.subplots(figsize=(8, 4.5))
    for (stage, item), g in curves.groupby(["stage", "item"], sort=True):
        ax.plot(g["k"], g["probability"], marker=".", label=item if stage == "compare" else stage)
    ax.axhline(STABLE_SHARE, color="#888888", linestyle="--")
    ax.set_xlabel("judgments k")
    ax.set_ylabel("P(majority of k = the majority)")
    ax.set_ylim(0, 1.02)
    if len(curves):
        ax.legend(fontsize="small", loc="lower right")
    fig.suptitle(titled(title, majority))
    fig.tight_layout()
    return fig


# ---------- reading, the command line, the figure ----------
def read_report(out: str | Path) -> dict[str, pd.DataFrame]:
    """The order report written to ``out`` (a clear error when the run was not asked in both orders)."""
    return read_named_report(out, NAMES, "order report", '--orders both (notebooks: orders = "both")')


def summary_line(result: dict, out: str | Path | None = None) -> str:
    """One paragraph for the command line: consistency by stage, the items with a position bias, and the
    order-aware S_checklist per model."""
    t = result["order"]
    parts = []
    for stage, g in t.groupby("stage", sort=False):
        agree = (g["consistency"] * g["usable_pairs"]).sum()
        parts.append(f"{stage}: {int(round(agree))}/{int(g['usable_pairs'].sum())} pairs agree in both orders"
                     f" ({int(g['unusable_pairs'].sum())} with an unusable answer)")
    biased = biased_items(t)
    m = result["order_models"]
    scores = "; ".join(f"{r.subject}: S_checklist {r.s_checklist_order_1:.1f} (order 1), {r.s_checklist_order_2:.1f} "
                       f"(order 2), order-aware {r.s_checklist_order_aware:.1f} [{r.s_checklist_order_aware_low:.1f}, "
                       f"{r.s_checklist_order_aware_high:.1f}]" for r in m.itertuples())
    few = sorted(set(t.loc[t["containment_verdicts"] < MIN_VERDICTS, "item"]))
    return (f"orders: {'; '.join(parts)}\n  position bias: "
            + (", ".join(f"{item} ({stage})" for stage, item in biased) if biased
               else f"none found (sign test and interval, {BIAS_ALPHA:g})")
            + (f"; not tested (fewer than {MIN_VERDICTS} containment verdicts): {', '.join(few)}" if few else "")
            + f"\n  {scores}" + (f"\n  report: {Path(out) / 'order.csv'} (and order_swaps, _summaries, _models, "
                                 f"_majority; every judgment in judgments.csv)" if out else ""))


def order_figure(order: pd.DataFrame, title: str = "Is the judge fair to both sides?"):
    """Per item (single and multi gates): left, the position consistency (share of pairs whose two verdicts
    agree after mapping); right, the first-position preference (1/2 = no preference; red: the interval
    excludes 1/2). Bars and dots carry their 95% intervals."""
    import matplotlib.pyplot as plt

    t = order.sort_values(["stage", "item", "gate"]).reset_index(drop=True)
    labels = [f"{i} ({g})" if s == "compare" else f"{s} ({g})" for s, i, g in zip(t["stage"], t["item"], t["gate"])]
    y = np.arange(len(t))
    fig, (left, right) = plt.subplots(1, 2, sharey=True, figsize=(10, max(2.5, 0.3 * len(t) + 1.2)))

    def err(col):
        v, lo, hi = t[col], t[f"{col}_ci_low"], t[f"{col}_ci_high"]
        return np.vstack([(v - lo).clip(lower=0).fillna(0), (hi - v).clip(lower=0).fillna(0)])
    left.barh(y, t["consistency"].fillna(0), xerr=err("consistency"), color="#4c72b0", ecolor="#333333")
    left.set_xlim(0, 1)
    left.set_xlabel("position consistency (pairs that agree after mapping)")
    left.set_yticks(y, labels)
    colors = ["#c44e52" if str(b) == "True" else "#55a868" for b in t["position_bias"]]
    right.errorbar(t["first_preference"], y, xerr=err("first_preference"), fmt="none", ecolor="#333333")
    right.scatter(t["first_preference"], y, c=colors, zorder=3)
    right.axvline(0.5, color="#888888", linestyle="--")
    right.set_xlim(-0.03, 1.03)
    right.set_xlabel("first-position preference (first side called the container)")
    left.invert_yaxis()
    fig.suptitle(titled(title, order))
    fig.tight_layout()
    return fig
