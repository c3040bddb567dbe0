"""Does the order of the answer options sway the judge? The label-order report of ``--label-orders K``.

With ``Settings.label_orders`` = K > 1 every single-value pair (compare stage, ``single`` gate, the sides as the
seed drew them) is asked K times, its four relation options listed in K rows of a Latin square
(``gavel.core.vocab.LABEL_ORDER_ROWS``; row 0 is today's request and its answer today's verdict). The judge
answers with the option's words, so each answer is read and mapped to model/reference wording exactly as any
other (``relation_of``); where the chosen option stood in the list it saw is ``answer_position``
(``gavel.ref.stages.compare.answer_position``). From the judgments of every row and repeat :func:`report` makes

``label_judgments.csv``   every single-value judgment of every row 0..K-1 and repeat (row 0's are the compare
                          rows of ``judgments.csv`` again) with ``label_order`` and ``answer_position``
``label_order.csv``       per item, the three position-bias measures of Shi et al. (arXiv 2406.07791) read
                          for option order: repetition stability, position consistency, preference fairness
                          (the first and the last option chosen more often than the pair's own verdicts
                          predict), with intervals; ``option_order_bias`` and a one-line ``verdict``
``label_order_models.csv`` per model: S_checklist with each row's verdicts, and ``label_order_change`` (the
                          largest minus the smallest) with a 95% interval over cases

An unusable answer is its own outcome: it is left out of consistency and fairness (counted in
``unusable_judgments``) and out of the row's S_checklist, never scored as a 0.
"""

from __future__ import annotations

import math
import warnings
from collections import Counter
from fractions import Fraction
from pathlib import Path

import numpy as np
import pandas as pd

from gavel.core import stats
from gavel.core.vocab import LABEL_ORDER_ROWS, label_order
from gavel.ref.stages.compare import answer_position
from gavel.ref.tables import read_report as read_named_report
from gavel.runs.judgments import JUDGMENT_COLUMNS

NAMES = ("label_judgments", "label_order", "label_order_models")
PAIR = ["subject", "case_id", "item"]
MIN_CASES = 2  # an option-order bias is claimed only from an interval over at least this many cases
ITEM_COLUMNS = ["stage", "item", "label_orders", "pairs", "units", "usable_units", "judgments", "unusable_judgments",
                "repetition_stability", "position_consistency", "position_consistency_ci_low",
                "position_consistency_ci_high", "first_option_chosen", "first_option_expected", "first_option_excess",
                "first_option_excess_ci_low", "first_option_excess_ci_high", "last_option_chosen",
                "last_option_expected", "last_option_excess", "last_option_excess_ci_low", "last_option_excess_ci_high",
                "preference_fairness", "option_order_bias", "verdict"]


def label_judgments(judgments: pd.DataFrame, runs: list[dict]) -> pd.DataFrame:
    """Every single-value judgment of every label-order row and repeat: row 0 from ``judgments`` (compare,
    single gate, order 1), rows > 0 from each run's ``label_judgments``; with ``answer_position``."""
    first = judgments[(judgments["stage"] == "compare") & (judgments["gate"] == "single")
                      & (judgments["order"].astype(int) == 1)].assign(label_order=0)
    more = [t["label_judgments"].assign(repeat=r) for r, t in enumerate(runs, 1)
            if len(t.get("label_judgments", ()))]
    j = pd.concat([first, *more], ignore_index=True) if more else first.copy()
    j = j[["repeat", *JUDGMENT_COLUMNS, "label_order"]].copy()
    j["case_id"] = j["case_id"].astype(str)
    j["label_order"] = j["label_order"].astype(int)
    j["answer_position"] = [answer_position(a, r) if s == "ok" else math.nan
                            for a, r, s in zip(j["answer_ab"], j["label_order"], j["status"])]
    return j.sort_values(["repeat", "subject", "case_id", "item", "label_order"], kind="stable").reset_index(drop=True)


def _cluster_interval(num: np.ndarray, den: np.ndarray, seed: int) -> tuple[float, float]:
    """Percentile 95% interval of sum(num) / sum(den) over resamples of the clusters (one entry each)."""
    keep = den > 0
    num, den = num[keep], den[keep]
    if not len(den):
        return math.nan, math.nan
    ratio = np.concatenate([num[picks].sum(axis=1) / den[picks].sum(axis=1)  # a block of resamples at a time
                            for picks in stats.resample_blocks(len(den), np.random.default_rng(seed))])
    return float(np.percentile(ratio, 2.5)), float(np.percentile(ratio, 97.5))


def _expected(j: pd.DataFrame) -> pd.DataFrame:
    """Per usable judgment: whether it chose the first / last option shown, and how often it would have if the
    option order did not matter: the share of the pair's own usable verdicts (every row and repeat) that are
    the option this row lists first / last, as the integer numerator ``*_expected_count`` over the pair's
    usable verdicts ``pair_verdicts`` (exact: no float noise decides a bias)."""
    ok = j[j["status"] == "ok"].copy()
    counts: dict = {}
    for key, answers in ok.groupby(PAIR, sort=False)["answer_ab"]:
        counts[key] = (Counter(answers), len(answers))
    keys = list(zip(ok["subject"], ok["case_id"], ok["item"]))
    ok["pair_verdicts"] = [counts[k][1] for k in keys]
    ok["first_chosen"] = (ok["answer_position"] == 1).astype(int)
    ok["last_chosen"] = (ok["answer_position"] == 4).astype(int)
    ok["first_expected_count"] = [counts[k][0].get(label_order(r)[0], 0) for k, r in zip(keys, ok["label_order"])]
    ok["last_expected_count"] = [counts[k][0].get(label_order(r)[-1], 0) for k, r in zip(keys, ok["label_order"])]
    return ok


def _excess(o: pd.DataFrame, side: str, seed: int) -> dict:
    """Chosen minus expected for the option listed ``side``, exactly: every judgment's excess is
    ``chosen - expected_count / pair_verdicts``; over the least common multiple ``L`` of the pairs' verdict
    counts it is the integer ``chosen * L - expected_count * L / pair_verdicts``. The point value and every
    resample's ratio are sums of those integers over ``L`` x judgments, so an excess that is 0 is exactly 0.
    ``tested``: the interval comes from at least two cases (fewer: no bias can be claimed)."""
    if not len(o):
        return {"chosen": 0, "expected": 0.0, "excess": math.nan, "lo": math.nan, "hi": math.nan, "cases": 0}
    n = o["pair_verdicts"].to_numpy(int)
    lcm = math.lcm(*map(int, set(n)))
    num = o[f"{side}_chosen"].to_numpy(np.int64) * lcm - o[f"{side}_expected_count"].to_numpy(np.int64) * (lcm // n)
    per = pd.DataFrame({"num": num, "subject": o["subject"].to_numpy(), "case_id": o["case_id"].to_numpy()}) \
        .groupby(["subject", "case_id"])["num"].agg(["sum", "count"])
    lo, hi = _cluster_interval(per["sum"].to_numpy(np.int64), per["count"].to_numpy(np.int64) * lcm, seed)
    expected = sum(Fraction(int(c), int(k)) for c, k in zip(o[f"{side}_expected_count"], n))
    return {"chosen": int(o[f"{side}_chosen"].sum()), "expected": float(expected),
            "excess": float(Fraction(int(num.sum()), lcm * len(o))), "lo": lo, "hi": hi, "cases": len(per)}


def item_table(j: pd.DataFrame, k: int, seed: int = 0) -> pd.DataFrame:
    """``label_order.csv`` from ``label_judgments`` (see the module)."""
    rows = []
    ok = _expected(j)
    for item, g in j.groupby("item", sort=True):
        o = ok[ok["item"] == item]
        units = g.groupby([*PAIR, "repeat"], sort=False)
        usable = units.filter(lambda u: (u["status"] == "ok").all() and u["label_order"].nunique() == k)
        agree = usable.groupby([*PAIR, "repeat"], sort=False)["relation"].nunique().eq(1)
        per = agree.groupby(level=["subject", "case_id"]).agg(["sum", "count"])
        cons = float(agree.mean()) if len(agree) else math.nan
        c_lo, c_hi = _cluster_interval(per["sum"].to_numpy(float), per["count"].to_numpy(float), seed)
        reps = o.groupby([*PAIR, "label_order"], sort=False)["relation"]
        modal = [v.value_counts().iloc[0] / len(v) for _, v in reps if len(v) > 1]
        row = {"stage": "compare", "item": item, "label_orders": k, "pairs": g.groupby(PAIR).ngroups,
               "units": units.ngroups, "usable_units": len(agree), "judgments": len(g),
               "unusable_judgments": int((g["status"] != "ok").sum()),
               "repetition_stability": float(np.mean(modal)) if modal else math.nan,
               "position_consistency": cons, "position_consistency_ci_low": c_lo, "position_consistency_ci_high": c_hi}
        bias, cases = False, 0
        for side in ("first", "last"):
            e = _excess(o, side, seed)
            cases = e["cases"]
            row.update({f"{side}_option_chosen": e["chosen"], f"{side}_option_expected": e["expected"],
                        f"{side}_option_excess": e["excess"],
                        f"{side}_option_excess_ci_low": e["lo"], f"{side}_option_excess_ci_high": e["hi"]})
            bias = bias or bool(e["cases"] >= MIN_CASES and (e["lo"] > 0 or e["hi"] < 0))
        row["preference_fairness"] = row["last_option_excess"] - row["first_option_excess"]
        row["option_order_bias"] = bias
        row["verdict"] = verdict(row, len(o), cases)
        rows.append(row)
    return pd.DataFrame(rows, columns=ITEM_COLUMNS)


def verdict(row: dict, usable: int, cases: int = MIN_CASES) -> str:
    """One line for a reader: "no bias found", or which option position the judge favours, with counts;
    "not tested" where there was nothing (or too little) to test."""
    if not usable:
        return "not tested (no usable answer)"
    if cases < MIN_CASES:
        return (f"not tested ({usable} usable answers from {cases} case; the interval needs at least "
                f"{MIN_CASES} cases)")
    if not row["option_order_bias"]:
        return f"no option-order bias found ({usable} usable answers, {cases} cases)"
    side = "first" if abs(row["first_option_excess"]) >= abs(row["last_option_excess"]) else "last"
    more = "prefers" if row[f"{side}_option_excess"] > 0 else "avoids"
    return (f"{more} the option listed {side}: chosen {row[f'{side}_option_chosen']} of {usable} times, "
            f"{row[f'{side}_option_expected']:.1f} expected if the order did not matter")


def model_table(j: pd.DataFrame, runs: list[dict], k: int, seed: int = 0) -> pd.DataFrame:
    """``label_order_models.csv``: per model, S_checklist with each row's single-value verdicts (the other
    items as the run scored them), and the change the option order causes (largest minus smallest row), its
    interval from resampling cases (a case's value: its mean over repeats)."""
    rows_in = LABEL_ORDER_ROWS[k]
    per_case = []
    for r, t in enumerate(runs, 1):
        c = t["compare"]
        c = c[c["gate"] != "not_applicable"].assign(case_id=lambda d: d["case_id"].astype(str))
        base = c.set_index(PAIR)
        for row in rows_in:
            sel = j[(j["repeat"] == r) & (j["label_order"] == row)].set_index(PAIR)
            hit = base.index.isin(sel.index) & (base["gate"] == "single").to_numpy()
            status = np.where(hit, sel["status"].reindex(base.index).to_numpy(), base["status"].to_numpy())
            score = np.where(hit, sel["score"].reindex(base.index).to_numpy(), base["score"].to_numpy())
            usable = pd.Series(status).isin(["ok", "gated"]).to_numpy()
            frame = base.reset_index()[["subject", "case_id"]].assign(score=np.where(usable, score, np.nan).astype(float))
            s = frame.groupby(["subject", "case_id"])["score"].mean() * 100
            per_case.append(s.rename("s").reset_index().assign(repeat=r, label_order=row))
    cols = ["subject", "cases", "repeats", *(f"s_checklist_label_order_{row}" for row in range(4)),
            "label_order_change", "label_order_change_ci_low", "label_order_change_ci_high"]
    if not per_case:
        return pd.DataFrame(columns=cols)
    t = pd.concat(per_case, ignore_index=True)
    out = []
    for subject, g in t.groupby("subject", sort=True):
        wide = g.groupby(["case_id", "label_order"])["s"].mean().unstack("label_order").reindex(columns=list(rows_in))
        means = wide.mean()
        m = wide.to_numpy(float)
        with warnings.catch_warnings():  # a resample without a value in some row: NaN, left out
            warnings.simplefilter("ignore", RuntimeWarning)
            drawn = np.concatenate([np.nanmean(m[picks], axis=1)  # resamples x rows, a block at a time
                                    for picks in stats.resample_blocks(len(m), np.random.default_rng(seed),
                                                                       width=m.shape[1])])
            spread = np.nanmax(drawn, axis=1) - np.nanmin(drawn, axis=1)
        tested = bool((j["subject"] == subject).any())  # no single-value pair: nothing was asked in another order
        row = {"subject": subject, "cases": len(wide), "repeats": len(runs),
               **{f"s_checklist_label_order_{r}": float(means[r]) if r in means else math.nan for r in range(4)},
               "label_order_change": float(means.max() - means.min()) if tested else math.nan,
               "label_order_change_ci_low": float(np.nanpercentile(spread, 2.5)) if tested else math.nan,
               "label_order_change_ci_high": float(np.nanpercentile(spread, 97.5)) if tested else math.nan}
        out.append(row)
    return pd.DataFrame(out, columns=cols)


def report(judgments: pd.DataFrame, runs: list[dict], k: int, seed: int = 0) -> dict[str, pd.DataFrame]:
    """The label-order report (see the module) of an evaluation with ``--label-orders k``."""
    j = label_judgments(judgments, runs)
    return {"label_judgments": j, "label_order": item_table(j, k, seed), "label_order_models": model_table(j, runs, k, seed)}


def read_report(out: str | Path) -> dict[str, pd.DataFrame]:
    """The label-order report written to ``out`` (a clear error when the run was not asked in K > 1 orders)."""
    return read_named_report(out, NAMES, "label-order report", "--label-orders 4 (notebooks: label_orders = 4)")


def biased_items(table: pd.DataFrame) -> list[str]:
    """The items ``label_order.csv`` marks ``option_order_bias``."""
    return sorted(table.loc[table["option_order_bias"].astype(str) == "True", "item"])


def summary_line(result: dict, out: str | Path | None = None) -> str:
    """One paragraph for the command line: consistency, the items with an option-order bias, the change in
    S_checklist per model; "not tested (no single-value pair)" where nothing was asked in another order."""
    t, m = result["label_order"], result["label_order_models"]
    where = f"\n  report: {Path(out) / 'label_order.csv'} (and label_order_models, label_judgments)" if out else ""
    if not len(t) or not int(t["judgments"].sum()):
        return ("label orders: not tested (no single-value pair)\n  option-order bias: not tested (no single-value"
                " pair)" + where)
    usable = int(t["usable_units"].sum())
    agree = int(round((t["position_consistency"].fillna(0) * t["usable_units"]).sum()))
    biased = biased_items(t)
    untested = sorted(t.loc[t["verdict"].astype(str).str.startswith("not tested"), "item"])
    changes = "; ".join(
        f"{r.subject}: " + (f"S_checklist changes by {r.label_order_change:.2f} with the option order "
                            f"[{r.label_order_change_ci_low:.2f}, {r.label_order_change_ci_high:.2f}]"
                            if r.label_order_change == r.label_order_change else "not tested (no single-value pair)")
        for r in m.itertuples())
    found = ", ".join(biased) if biased else f"none found at the {MIN_CASES}-case 95% interval"
    return (f"label orders: {agree}/{usable} single-value pairs give one verdict in every option order\n"
            f"  option-order bias: {found}" + (f"; not tested: {', '.join(untested)}" if untested else "")
            + f"\n  {changes}" + where)
