"""The LLM judge and style rater against people, agreement between annotators (Appendix D), Table 1."""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable

import numpy as np
import pandas as pd
from sklearn.metrics import accuracy_score, confusion_matrix

from gavel.core.stats import (
    BOOTSTRAP_RESAMPLES,
    Stat,
    cohen_kappa,
    cohen_kappa_draws,
    fleiss_kappa,
    fleiss_kappa_draws,
    krippendorff_alpha,
    krippendorff_alpha_draws,
    majority,
    majority_pairs,
    mean_draws,
    mean_of,
    median_rating,
    pair_f1,
    two_agree,
    unavailable,
    with_draws,
)
from gavel.core.vocab import RELATIONS, STYLE_ASPECTS
from gavel.metrics.metaeval.checklists import exact_compare, item_lists, s_checklist_case
from gavel.metrics.metaeval.export import comparison_answers, extraction_rows, style_ratings

# the app's 4-way labels (A = model, B = reference) in the judge's vocabulary

#: the columns of the paper's Table 1
TABLE1_COLUMNS = ["S_checklist", "Coverage", "Single", "Multi", "Style kappa"]



# --- comparison and style against people ---------------------------------------------------------------

def aggregate_comparisons(answers: pd.DataFrame) -> pd.DataFrame:
    """Per task: the majority label (single) or the matches kept by >= 2 annotators (multi)."""
    out = []
    for task, g in answers.groupby("task"):
        mode = g["mode"].iloc[0]
        if mode == "single":
            label, status = majority(g["label"])
            out.append({"task": task, "mode": mode, "label": label, "pairs": None, "status": status,
                        "annotators": len(g)})
        else:
            out.append({"task": task, "mode": mode, "label": None,
                        "pairs": sorted(majority_pairs(list(g["pairs"]))),
                        "status": "one_rater" if len(g) == 1 else "ok", "annotators": len(g)})
    return pd.DataFrame(out, columns=["task", "mode", "label", "pairs", "status", "annotators"])


def comparison_metaeval(llm: pd.DataFrame, human: pd.DataFrame, n_resamples: int = BOOTSTRAP_RESAMPLES, seed: int = 0,
                        names: tuple[str, str] = ("human", "llm")) -> dict:
    """Accuracy (4 classes, with confusion matrix) on single-value pairs and mean matching F1 on multi-value
    pairs of the LLM's answers (``task, label`` / ``task, pairs``) against aggregated human answers."""
    h = human[human["label"].notna() | human["pairs"].notna()] if len(human) else human
    no_majority = int((human["status"] == "no_majority").sum()) if "status" in human else 0
    merged = h.merge(llm, on="task", suffixes=("_human", "_llm"))
    single = merged[merged["mode"] == "single"]
    if len(single):
        y_true, y_pred = list(single["label_human"]), list(single["label_llm"])
        acc = Stat(float(accuracy_score(y_true, y_pred)), "ok", len(single),
                   detail=f"human pairs without a majority left out: {no_majority}",
                   extra={"confusion": pd.DataFrame(confusion_matrix(y_true, y_pred, labels=list(RELATIONS)),
                                                     index=[f"{names[0]} {r}" for r in RELATIONS],
                                                     columns=[f"{names[1]} {r}" for r in RELATIONS])})
        acc = with_draws(acc, len(y_true), mean_draws([float(x == y) for x, y in zip(y_true, y_pred)]),
                         n_resamples=n_resamples, seed=seed)
    else:
        acc = unavailable("empty")
    multi = merged[merged["mode"] == "multi"]
    f1s = [pair_f1(p, g) for p, g in zip(multi["pairs_llm"], multi["pairs_human"])]
    f1s = [f for f in f1s if f is not None]
    if f1s:
        f1 = with_draws(Stat(float(np.mean(f1s)), "ok", len(f1s),
                             detail=f"pairs where neither side matched anything: {len(multi) - len(f1s)}"),
                        len(f1s), mean_draws(f1s), n_resamples=n_resamples, seed=seed)
    else:
        f1 = unavailable("empty" if not len(multi) else "no_pairs", len(multi))
    return {"Single": acc, "Multi": f1}


def style_metaeval(llm: pd.DataFrame, human: pd.DataFrame, n_resamples: int = BOOTSTRAP_RESAMPLES, seed: int = 0) -> dict:
    """Cohen's kappa (unweighted and quadratic) between the LLM's ratings and the human median, pooled over
    (task, aspect); the human median of an even number of ratings is rounded half up."""
    med = (human.groupby(["task", "aspect"])["rating"].apply(lambda r: int(math.floor(median_rating(r) + 0.5)))
           .rename("human").reset_index())
    m = med.merge(llm.rename(columns={"rating": "llm"}), on=["task", "aspect"])
    if m.empty:
        return {"Style kappa": unavailable("empty"), "Style kappa (quadratic)": unavailable("empty")}
    out = {}
    tasks = sorted(m["task"].unique())
    unit = m["task"].map({t: i for i, t in enumerate(tasks)}).to_numpy()  # resampled by task
    for name, w in (("Style kappa", None), ("Style kappa (quadratic)", "quadratic")):
        stat = cohen_kappa(list(m["human"]), list(m["llm"]), weights=w, labels=[1, 2, 3, 4, 5])
        out[name] = with_draws(stat, len(tasks), cohen_kappa_draws(list(m["human"]), list(m["llm"]), unit,
                                                                   [1, 2, 3, 4, 5], w),
                               n_resamples=n_resamples, seed=seed)
    return out


# --- inter-annotator agreement (Appendix D) -------------------------------------------------------------
# One function per statistic, each on the rows of one group (the whole export for Appendix D, one item or
# one aspect for the annotation app's agreement page), each with a bootstrap interval over its units.

def pairwise_s_checklist(ext: pd.DataFrame, compare: Callable = exact_compare, n_resamples: int = BOOTSTRAP_RESAMPLES,
                         seed: int = 0) -> Stat:
    """Mean over (case, annotator pair) of the symmetrised S_checklist between two annotators' value rows
    (``extraction_rows``); interval over those pairs. Pairs where no item applies are left out and counted."""
    scores, undefined = [], 0
    lists = {who: item_lists(g) for who, g in ext.groupby("annotator")} if len(ext) else {}
    raters: dict = {}
    for case, who in zip(ext["case_id"], ext["annotator"]):
        raters.setdefault(case, set()).add(who)
    for case in sorted(raters):  # groupby's order: the resamples draw by position
        for x, y in itertools.combinations(sorted(raters[case]), 2):
            a, b = lists[x], lists[y]
            v = float(np.mean([s_checklist_case(a, b, str(case), compare),
                               s_checklist_case(b, a, str(case), compare)]))
            if math.isnan(v):
                undefined += 1
            else:
                scores.append(v)
    if not scores:
        return unavailable("one_rater" if not undefined else "empty", ext["case_id"].nunique() if len(ext) else 0,
                           "no case was reviewed by two annotators" if not undefined
                           else "no item applies for any annotator pair")
    detail = "judge=exact-match" if compare is exact_compare else ""
    if undefined:
        detail += f"; annotator pairs where no item applies (left out): {undefined}"
    return with_draws(Stat(float(np.mean(scores)), "ok", len(scores), detail=detail.strip("; ")),
                      len(scores), mean_draws(scores), n_resamples=n_resamples, seed=seed)


def single_label_table(comp: pd.DataFrame) -> pd.DataFrame:
    """Single-value comparison answers as a task x annotator table of labels."""
    single = comp[comp["mode"] == "single"]
    return single.pivot_table(index="task", columns="annotator", values="label", aggfunc="first")


def single_fleiss(table: pd.DataFrame, n_resamples: int = BOOTSTRAP_RESAMPLES, seed: int = 0) -> Stat:
    """Fleiss' kappa of single-value labels (``single_label_table``), percent agreement beside it; interval
    over tasks."""
    if not len(table):
        return unavailable("empty")
    stat = fleiss_kappa(table, categories=list(RELATIONS))
    return with_draws(stat, len(table), fleiss_kappa_draws(table, list(RELATIONS)),  # resampled by task
                      n_resamples=n_resamples, seed=seed)


def single_alpha(table: pd.DataFrame, n_resamples: int = BOOTSTRAP_RESAMPLES, seed: int = 0) -> Stat:
    """Krippendorff's alpha (nominal) of single-value labels: unlike Fleiss' kappa it takes tasks rated by
    different numbers of annotators; interval over tasks."""
    if not len(table):
        return unavailable("empty")
    codes = table.apply(lambda col: col.map(lambda v: RELATIONS.index(v) if isinstance(v, str) else np.nan))
    stat = krippendorff_alpha(codes.T, "nominal")
    return with_draws(stat, len(codes), krippendorff_alpha_draws(codes.T, "nominal"),  # resampled by task
                      n_resamples=n_resamples, seed=seed)


def pairwise_f1(comp: pd.DataFrame, n_resamples: int = BOOTSTRAP_RESAMPLES, seed: int = 0) -> Stat:
    """Mean matching F1 over annotator pairs of the multi-value comparison answers; interval over pairs."""
    f1s, two = [], False
    multi = comp[comp["mode"] == "multi"]
    for _task, g in multi.groupby("task"):
        two = two or len(g) >= 2
        for x, y in itertools.combinations(list(g["pairs"]), 2):
            f = pair_f1(x, y)
            if f is not None:
                f1s.append(f)
    if not f1s:  # the same statuses as the single-value rows: no answers, one rater, nothing matched
        return unavailable("empty" if multi.empty else "no_pairs" if two else "one_rater")
    return with_draws(Stat(float(np.mean(f1s)), "ok", len(f1s)), len(f1s), mean_draws(f1s),
                      n_resamples=n_resamples, seed=seed)


def style_alpha(st: pd.DataFrame, level: str = "ordinal", n_resamples: int = BOOTSTRAP_RESAMPLES, seed: int = 0) -> Stat:
    """Krippendorff's alpha of style ratings (``style_ratings``, one aspect); interval over tasks."""
    if st.empty:
        return unavailable("empty")
    table = st.pivot_table(index="annotator", columns="task", values="rating", aggfunc="first")
    return with_draws(krippendorff_alpha(table, level), table.shape[1], krippendorff_alpha_draws(table, level),
                      n_resamples=n_resamples, seed=seed)  # resampled by task


def style_two_agree(st: pd.DataFrame) -> Stat:
    """Share of (task, aspect) rated by three annotators where at least two gave the same rating."""
    wide = st.pivot_table(index=["task", "aspect"], columns="annotator", values="rating", aggfunc="first")
    rows = [sorted(r.dropna().tolist()) for _, r in wide.iterrows()] if len(wide) else []
    rows = [r for r in rows if len(r) == 3]
    return two_agree(rows) if rows else unavailable("too_few_raters" if len(wide) else "empty", len(wide),
                                                    "no unit has three ratings")


def inter_annotator(export: pd.DataFrame, texts: dict[str, str] | None = None, compare: Callable = exact_compare,
                    level: str = "ordinal", n_resamples: int = BOOTSTRAP_RESAMPLES, seed: int = 0) -> dict[str, Stat]:
    """Average pairwise S_checklist (extraction), Fleiss' kappa (single-value labels), average pairwise
    matching F1 (multi-value), Krippendorff's alpha per style aspect and their mean, and the two-agree share;
    bootstrap intervals over cases, tasks or annotator pairs."""
    out: dict[str, Stat] = {}
    kw = {"n_resamples": n_resamples, "seed": seed}
    out["extraction pairwise S_checklist"] = pairwise_s_checklist(extraction_rows(export), compare, **kw)
    comp = comparison_answers(export)
    out["single-value Fleiss kappa"] = single_fleiss(single_label_table(comp), **kw)
    out["multi-value pairwise F1"] = pairwise_f1(comp, **kw)
    st = style_ratings(export)
    for aspect in STYLE_ASPECTS:
        out[f"style alpha {aspect}"] = style_alpha(st[st["aspect"] == aspect], level, **kw)
    out["style alpha (mean of aspects)"] = mean_of([out[f"style alpha {a}"] for a in STYLE_ASPECTS],
                                                   detail=f"level={level}")
    out["style two-agree share"] = style_two_agree(st)
    return out


# --- Table 1 -----------------------------------------------------------------------------------------

def table1(results: dict[str, dict[str, Stat]]) -> pd.DataFrame:
    """Rows per model, the paper's Table 1 columns; each cell the value, or the status when there is none.
    ``results``: model -> {column: Stat}."""
    rows = []
    for model, stats in results.items():
        row = {"model": model}
        for col in TABLE1_COLUMNS:
            s = stats.get(col)
            if s is None:
                row[col] = "not run"
            elif s.ok:
                row[col] = round(s.value, 3 if col in ("Single", "Multi", "Style kappa") else 1)
            else:
                row[col] = s.status
        rows.append(row)
    return pd.DataFrame(rows, columns=["model", *TABLE1_COLUMNS]).set_index("model")


def stats_frame(stats: dict[str, Stat]) -> pd.DataFrame:
    """A table of named statistics with status, n, percent agreement and interval."""
    return pd.DataFrame([{"statistic": k, **v.as_dict()} for k, v in stats.items()]).set_index("statistic")


