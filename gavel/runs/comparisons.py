"""Which differences are real in a run: every pair of models compared on the cases both have (docs/gavel-ref.md).

``comparisons.csv``        per score and pair of models (``model_a`` ranked above ``model_b``): the difference on
                           their common cases, its 95% interval, the paired test, Holm's adjustment, the verdict,
                           and the power of the comparison (``gavel.core.paired``)
``comparison_models.csv``  per score and model: mean, 95% interval, rank and its 95% interval, the group of
                           models it is indistinguishable from, the variance shares of the cases and the judge

Scores: ``s_checklist``, ``s_gavel_ref`` and each checklist item (``score = "item"``, its key in ``item``), each
on 0-100. A case's cells are the judge's verdicts on it: one per repeat (``--repeats N``) and, for S_checklist
and the items, one per order (``--orders both``; S_GAVEL-REF is scored in order 1 only). Every interval draws
cases and, per case, one cell (``paired.cell_draws``): with ``--repeats`` or ``--orders both`` the intervals
carry the judge's noise, and :func:`leaderboard` puts the same interval into ``model_scores.csv``.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from gavel.core import config, paired, stats

SCORES = ("s_checklist", "s_gavel_ref")
LEADERBOARD_SCORES = ("s_checklist", "s_residual", "s_style", "s_gavel_ref")
NAMES = ("comparisons", "comparison_models")
CELL_COLUMNS = ["score", "item", "subject", "case_id", "cell", "value"]


def _usable_points(status: pd.Series, score: pd.Series) -> pd.Series:
    return 100 * score.where(status.isin(["ok", "gated"])).astype(float)


def cells(runs: list[dict], order_summaries: pd.DataFrame | None = None,
          judgments: pd.DataFrame | None = None) -> pd.DataFrame:
    """Every cell of every score (long: ``CELL_COLUMNS``): each repeat's scores and compare table (order 1),
    and with the order report's ``order_summaries`` and the ``judgments`` table the order-2 cells too."""
    frames = []
    both = order_summaries is not None and judgments is not None
    second = judgments[(judgments["stage"] == "compare") & (judgments["order"] == 2)] if both else None
    for r, t in enumerate(runs, 1):
        s = t["scores"].assign(case_id=lambda d: d["case_id"].astype(str))
        for col in LEADERBOARD_SCORES:
            frames.append(pd.DataFrame({"score": col, "item": "", "subject": s["subject"], "case_id": s["case_id"],
                                        "cell": f"r{r}o1", "value": s[col].astype(float)}))
        c = t["compare"]
        if not len(c):
            continue
        c = c[c["gate"] != "not_applicable"].assign(case_id=lambda d: d["case_id"].astype(str))
        first = _usable_points(c["status"], c["score"])
        frames.append(pd.DataFrame({"score": "item", "item": c["item"], "subject": c["subject"],
                                    "case_id": c["case_id"], "cell": f"r{r}o1", "value": first}))
        if both:
            o2 = second[second["repeat"] == r].assign(case_id=lambda d: d["case_id"].astype(str))
            o2 = o2.set_index(["subject", "case_id", "item"])
            idx = pd.MultiIndex.from_frame(c[["subject", "case_id", "item"]])
            judged = idx.isin(o2.index)
            again = _usable_points(o2["status"], o2["score"]).reindex(idx).to_numpy()
            frames.append(pd.DataFrame({"score": "item", "item": c["item"], "subject": c["subject"],
                                        "case_id": c["case_id"], "cell": f"r{r}o2",
                                        "value": np.where(judged, again, first.to_numpy())}))
    if both and len(order_summaries):
        o = order_summaries.assign(case_id=lambda d: d["case_id"].astype(str))
        frames.append(pd.DataFrame({"score": "s_checklist", "item": "", "subject": o["subject"],
                                    "case_id": o["case_id"], "cell": [f"r{r}o2" for r in o["repeat"]],
                                    "value": o["s_checklist_order_2"].astype(float)}))
    frames = [f for f in frames if len(f)]
    return pd.concat(frames, ignore_index=True)[CELL_COLUMNS] if frames else pd.DataFrame(columns=CELL_COLUMNS)


def _array(g: pd.DataFrame, models: list[str] | None = None) -> tuple[list[str], np.ndarray]:
    """models x cases x cells of one score's cells (NaN where there is none)."""
    cube = g.pivot_table(index=["subject", "case_id"], columns="cell", values="value", aggfunc="first",
                         dropna=False)
    models = models or sorted(g["subject"].unique())
    cases = sorted(g["case_id"].unique())
    full = pd.MultiIndex.from_product([models, cases], names=["subject", "case_id"])
    values = cube.reindex(full).to_numpy(float).reshape(len(models), len(cases), -1)
    return models, values


def compared_as(cell_table: pd.DataFrame) -> str:
    """Which value of a score the comparison compares, in words, from its cells: ``repeat 1, order 1`` (the
    run's own score, one cell per case) or ``mean of 3 repeats x 2 orders`` (each case's mean over its cells;
    with ``--orders both`` S_checklist's is the mean of both orders, not order 1's score the leaderboard shows)."""
    c = cell_table["cell"].unique()
    repeats, orders = len({x.split("o")[0] for x in c}), len({x.split("o")[1] for x in c})
    if repeats == 1 and orders == 1:
        return "repeat 1, order 1"
    parts = [f"{n} {what}" for n, what in ((repeats, "repeats"), (orders, "orders")) if n > 1]
    return "mean of " + " x ".join(parts)


def report(cell_table: pd.DataFrame, seed: int = 0) -> dict[str, pd.DataFrame]:
    """``comparisons`` and ``comparison_models`` (see the module) of a run's cells (:func:`cells`); each row's
    ``compared`` says which value of the score it compares (:func:`compared_as`)."""
    pairs, models = [], []
    t = cell_table[cell_table["score"] != "s_residual"]
    t = t[t["score"] != "s_style"]
    keys = [(s, "") for s in SCORES] + [("item", i) for i in sorted(t.loc[t["score"] == "item", "item"].unique())]
    for score, item in keys:
        g = t[(t["score"] == score) & (t["item"] == item)]
        if g["subject"].nunique() < 2:
            continue
        names, values = _array(g)
        p, m = paired.compare(values, names, seed=seed)
        how = compared_as(g)
        pairs.append(p.assign(score=score, item=item, compared=how))
        models.append(m.assign(score=score, item=item, compared=how))
    return {"comparisons": _frame(pairs, ["score", "item", "compared", *paired.PAIR_COLUMNS]),
            "comparison_models": _frame(models, ["score", "item", "compared", *paired.MODEL_COLUMNS])}


def _frame(frames: list[pd.DataFrame], columns: list[str]) -> pd.DataFrame:
    return pd.concat(frames, ignore_index=True)[columns] if frames else pd.DataFrame(columns=columns)


def levels(cell_table: pd.DataFrame) -> str:
    """What the intervals resample, in words: ``cases`` or ``cases x 3 repeats x 2 orders``."""
    c = cell_table["cell"].unique()
    repeats, orders = len({x.split("o")[0] for x in c}), len({x.split("o")[1] for x in c})
    return "cases" + (f" x {repeats} repeats" if repeats > 1 else "") + (f" x {orders} orders" if orders > 1 else "")


def leaderboard(model_scores: pd.DataFrame, cell_table: pd.DataFrame, seed: int = 0,
                bins: dict | None = None) -> pd.DataFrame:
    """``model_scores`` with every ``s_*`` interval drawn over cases and the judge's cells (the two-level
    interval, ``paired.cell_draws``; one cell per case gives the cases-only interval it had) and
    ``interval_levels`` saying what it resamples. The means stay repeat 1's (order 1)."""
    out = model_scores.copy()
    bin_of = {str(k): v for k, v in (bins or {}).items()}
    scores = cell_table[cell_table["score"].isin(LEADERBOARD_SCORES)]
    for col in LEADERBOARD_SCORES:
        g = scores[scores["score"] == col]
        lows, highs = [], []
        for row in out.itertuples(index=False):
            sel = g[g["subject"] == row.subject]
            if bin_of and "bin" in out:  # a row per model and length bin: that bin's cases
                sel = sel[sel["case_id"].map(bin_of) == row.bin]
            _, v = _array(sel, [row.subject]) if len(sel) else ([], np.empty((1, 0, 1)))
            v = v[:, ~np.isnan(v[0]).all(axis=1)]
            if not v.shape[1]:
                lows.append(math.nan)
                highs.append(math.nan)
                continue
            means = paired.one_model_means(v, np.random.default_rng(seed))
            lows.append(stats.endpoint(means, 2.5))
            highs.append(stats.endpoint(means, 97.5))
        out[f"{col}_ci_low"], out[f"{col}_ci_high"] = lows, highs
    said = {col: levels(scores[scores["score"] == col]) for col in LEADERBOARD_SCORES if (scores["score"] == col).any()}
    if len(set(said.values())) > 1:  # the orders: S_checklist only
        out["interval_levels"] = "; ".join(f"{col}: {how}" for col, how in said.items())
    else:
        out["interval_levels"] = next(iter(said.values()), levels(cell_table))
    return out


SCORE_NAMES = {"s_checklist": "S_checklist", "s_gavel_ref": "S_GAVEL-REF"}
#: with more pairs than this per score the terminal prints the neighbours' and the real ones' sentences
SENTENCES_SHOWN = 10


def _num(x, fmt: str) -> str:
    return format(float(x), fmt) if x is not None and x == x else "–"


def pair_sentence(r, label=str) -> str:
    """The sentence a paper may write about one row of ``comparisons.csv``: the difference with its 95%
    interval and common cases, p and Holm's p with the family it was adjusted over, the verdict, and what the
    comparison can detect (80% power at the level Holm compares the pair's p with) and the cases the observed
    difference needs. "not tested" where the pair has fewer than two common cases. ``label``: model names."""
    a, b = label(r.model_a), label(r.model_b)
    n = int(r.cases)
    if r.verdict == "too few cases":
        return f"{a} vs {b}: not tested ({n} common case{'' if n == 1 else 's'}; the paired t-test needs 2)"
    said = {"a better": f"{a} is better", "b better": f"{b} is better",
            "indistinguishable": f"no real difference at {paired.ALPHA:g}"}[r.verdict]
    need = (f"; the observed difference would need {int(r.cases_needed)} cases (resolution ratio "
            f"{_num(r.resolution_ratio, '.2f')})" if r.cases_needed == r.cases_needed else "")
    return (f"{a} vs {b}: {_num(r.difference, '+.2f')} points (95% CI {_num(r.ci_low, 'g')} to "
            f"{_num(r.ci_high, 'g')}, {n} common cases), p = {_num(r.p_value, '.3g')}, Holm-adjusted p = "
            f"{_num(r.p_holm, '.3g')} over {int(r.family)} pair{'' if int(r.family) == 1 else 's'}: {said}; "
            f"detectable with 80% power: {_num(r.detectable_difference, '.2f')} points (at Holm's level "
            f"{_num(r.holm_level, '.2g')})" + need)


def summary_line(pairs: pd.DataFrame, models: pd.DataFrame, out=None) -> str:
    """A paragraph for the command line: per score which value is compared, the ranking with rank intervals
    and groups, and each pair's sentence (:func:`pair_sentence`; with more than ``SENTENCES_SHOWN`` pairs the
    neighbours' and the real differences', the rest counted), and (with the judge's cells) the share of the
    variance that lies within a case (the judge's verdicts), per model and per item. Empty with fewer than two
    models."""
    if not len(models):
        return ""
    lines = []
    for score in SCORES:
        m, p = models[models["score"] == score], pairs[pairs["score"] == score]
        if not len(m) or m["mean"].isna().all():
            continue
        how = f" ({m['compared'].iloc[0]})" if "compared" in m else ""
        ranking = "; ".join(
            f"{r.model} no case" if pd.isna(r.rank) else
            f"{r.model} {r.mean:.1f} " + (f"[{r.ci_low:g}, {r.ci_high:g}]" if r.cases >= 2 else
                                         f"(no interval from {r.cases} case)")
            + f" rank {r.rank_low}-{r.rank_high} group {r.group}" for r in m.itertuples())
        shown = p if len(p) <= SENTENCES_SHOWN else p[p["neighbours"].astype(bool) | p["verdict"].isin(["a better", "b better"])]
        real = int(p["verdict"].isin(["a better", "b better"]).sum())
        tested = int((p["verdict"] != "too few cases").sum())
        said = (f"{real} of {len(p)} pairs" if tested else "not tested (no pair with two common cases)")
        lines.append(f"{SCORE_NAMES[score]}{how}: {ranking}\n    real differences (paired t-test, Holm over "
                     f"{tested} pairs, {paired.ALPHA:g}): {said}"
                     + "".join(f"\n    {pair_sentence(r)}" for r in shown.itertuples())
                     + (f"\n    ({len(p) - len(shown)} more pairs in comparisons.csv)" if len(shown) < len(p) else ""))
    judge = models["variance_within_share"]
    if (judge.fillna(0) > 0).any():
        per_model = models[models["score"] == "s_checklist"]
        per_item = models[models["score"] == "item"].groupby("item")["variance_within_share"].mean()
        lines.append("within-case share of the variance (the judge's verdicts and, with --repeats, the extractor's "
                     "values of each repeat; the rest is between cases): S_checklist "
                     + ", ".join(f"{r.model} {r.variance_within_share:.0%}" for r in per_model.itertuples())
                     + "; items (mean over models) " + ", ".join(f"{i} {v:.0%}" for i, v in per_item.items()))
    where = f"\n  comparisons: {out}/comparisons.csv (and comparison_models.csv)" if out else ""
    return "comparisons: " + "\n  ".join(lines) + where


def board_heading(model_scores: pd.DataFrame, judged_again: bool) -> str:
    """The line above ``model_scores.csv`` in the terminal: its means are the run's own scores (repeat 1,
    order 1), which with ``--repeats`` or ``--orders both`` are not the values the comparisons compare."""
    if not judged_again:
        return "model_scores.csv (means over cases; 95% interval over cases):"
    levels_ = model_scores["interval_levels"].iloc[0] if "interval_levels" in model_scores and len(model_scores) else ""
    return ("model_scores.csv (means: repeat 1, order 1, the run's own scores, not the comparisons' means above; "
            f"95% interval over {levels_ or 'cases'}):")


def read_report(out) -> dict[str, pd.DataFrame]:
    """``comparisons.csv`` and ``comparison_models.csv`` of a run folder (a clear error when there are none)."""
    from pathlib import Path

    from gavel.core.spreadsheet import read_csv

    out = Path(out)
    missing = [f"{n}.csv" for n in NAMES if not (out / f"{n}.csv").exists()]
    if missing:
        raise FileNotFoundError(f"{out}: no comparisons ({', '.join(missing)} missing); a run writes them since "
                                f"issue 40: evaluate it again (answers come from the cache)")
    return {n: read_csv(out / f"{n}.csv", dtype={"case_id": str}, keep_default_na=True).fillna({"item": ""})
            for n in NAMES}


def figure(models: pd.DataFrame, score: str = "s_checklist", title: str = "Which differences are real?"):
    """Per model (best first): its mean with the 95% interval, labelled with its rank interval and group
    letters (models sharing a letter cannot be told apart)."""
    import matplotlib.pyplot as plt

    from gavel.core.items import titled

    t = models[(models["score"] == score) & (models["item"].fillna("") == "")].sort_values("rank")
    fig, ax = plt.subplots(figsize=(7, max(2.0, 0.4 * len(t) + 1)))
    y = np.arange(len(t))
    mean = t["mean"].to_numpy(float)
    err = np.vstack([(mean - t["ci_low"].to_numpy(float)).clip(0), (t["ci_high"].to_numpy(float) - mean).clip(0)])
    ax.errorbar(mean, y, xerr=np.nan_to_num(err), fmt="o", color="#4c72b0", ecolor="#333333", capsize=3)
    for yi, r in zip(y, t.itertuples()):
        ax.annotate(f"rank {r.rank_low}-{r.rank_high}  group {r.group}", (r.ci_high if r.ci_high == r.ci_high
                    else r.mean, yi), xytext=(6, 0), textcoords="offset points", va="center", fontsize=8)
    ax.set_yticks(y, [config.model_label(m) for m in t["model"]])  # the labels every other figure uses
    ax.invert_yaxis()
    ax.set_xlabel(f"{score} (mean, 95% interval)")
    ax.set_title(titled(title, models) if "checklist" in models else title)
    fig.tight_layout()
    return fig
