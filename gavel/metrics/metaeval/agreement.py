"""Agreement per task type and item, human–human beside human–LLM: what the annotation app's agreement page
shows. Every number comes from the functions of Table 1 and Appendix D (``judges``, ``checklists``, and
:mod:`gavel.core.stats` beneath them); the rows for all items of a task type are exactly notebook 13's
``inter_annotator`` statistics and its 'released judge' row, the rows of one item are the same functions on
that item's answers. The LLM's answers are the ones stored with the tasks: the pipeline's or the release's
judgment of a comparison (``payload['judge']``), the LLM's style ratings (``payload['judge']``, aspect ->
rating, when the tasks were made with them) and the LLM extraction a review was pre-filled with."""

from __future__ import annotations

import numpy as np
import pandas as pd

from gavel.core import items as gitems
from gavel.core.stats import (
    BOOTSTRAP_RESAMPLES,
    Stat,
    cohen_kappa,
    cohen_kappa_draws,
    mean_of,
    unavailable,
    with_draws,
)
from gavel.core.vocab import RELATIONS, STYLE_ASPECTS
from gavel.metrics.metaeval.checklists import extraction_metaeval
from gavel.metrics.metaeval.export import comparison_answers, extraction_rows, style_ratings
from gavel.metrics.metaeval.inputs import judge_answers
from gavel.metrics.metaeval.judges import (
    aggregate_comparisons,
    comparison_metaeval,
    pairwise_f1,
    pairwise_s_checklist,
    single_alpha,
    single_fleiss,
    single_label_table,
    style_alpha,
    style_metaeval,
    style_two_agree,
)

AGREEMENT_COLUMNS = ["kind", "item", "raters", "statistic", "value", "status", "n", "agreement", "low", "high",
                     "detail"]
ALL = "(all)"
HH, HL = "human–human", "human–LLM"
#: the pre-fill sources that are people's work, not an LLM's (``gavel.annotation.tasks``)
HUMAN_PREFILLS = ("document_checklists/human.json", "empty")
NOT_STORED = "no LLM answers are stored with these tasks"


def prefilled_by_llm(payload: dict) -> bool:
    """Whether an extraction review was pre-filled from an LLM's extraction (not human.json, not empty)."""
    return payload.get("prefill_source", "empty") not in HUMAN_PREFILLS


def llm_style_ratings(tasks: pd.DataFrame) -> pd.DataFrame:
    """The LLM's style ratings stored with the style tasks (``payload['judge']``: aspect -> 1..5)."""
    out = []
    for r in tasks[tasks["kind"] == "style"].itertuples(index=False):
        for aspect, rating in (r.payload.get("judge") or {}).items():
            if aspect not in STYLE_ASPECTS:
                raise ValueError(f"task {r.task}: stored LLM style rating for unknown aspect {aspect!r}")
            out.append({"task": r.task, "aspect": aspect, "rating": int(rating)})
    return pd.DataFrame(out, columns=["task", "aspect", "rating"])


def prefill_rows(tasks: pd.DataFrame) -> pd.DataFrame:
    """Value rows of the LLM extractions that reviews were pre-filled with (shape of ``extraction_rows``)."""
    out = []
    for r in tasks[tasks["kind"] == "extraction"].itertuples(index=False):
        if not prefilled_by_llm(r.payload):
            continue
        for key, values in r.payload.get("prefill", {}).items():
            for i, v in enumerate(values, 1):
                out.append({"task": r.task, "case_id": str(r.case_id), "item": key, "index": i,
                            "value": v["value"], "evidence": [e["text"] for e in v["evidence"]],
                            "evidence_spans": [(e["start"], e["end"]) for e in v["evidence"]
                                               if e["start"] is not None]})
    return pd.DataFrame(out, columns=["task", "case_id", "item", "index", "value", "evidence", "evidence_spans"])


def match_cohen_kappa(llm: pd.DataFrame, human: pd.DataFrame, n_resamples: int, seed: int) -> Stat:
    """Cohen's kappa of the LLM's single-value labels against the annotators' majority (the pairs that
    ``comparison_metaeval`` scores), percent agreement beside it; interval over tasks."""
    h = human[(human["mode"] == "single") & human["label"].notna()] if len(human) else human
    m = h.merge(llm, on="task", suffixes=("_human", "_llm")) if len(h) else h
    m = m[m["label_llm"].notna()] if len(m) else m
    if not len(m):
        return unavailable("empty")
    h_labels, l_labels = m["label_human"].to_numpy(), m["label_llm"].to_numpy()
    stat = cohen_kappa(list(h_labels), list(l_labels), labels=list(RELATIONS))
    return with_draws(stat, len(m), cohen_kappa_draws(list(h_labels), list(l_labels), np.arange(len(m)),
                                                      list(RELATIONS)),  # resampled by task (its row)
                      n_resamples=n_resamples, seed=seed)


def _row(kind: str, item: str, raters: str, statistic: str, stat: Stat) -> dict:
    return {"kind": kind, "item": item, "raters": raters, "statistic": statistic, **stat.as_dict()}


def _comparison_rows(export, tasks, n_resamples, seed) -> list[dict]:
    comp_tasks = tasks[tasks["kind"] == "comparison"]
    if comp_tasks.empty:
        return []
    item_of = {r.task: gitems.item(r.payload["item"]).key for r in comp_tasks.itertuples(index=False)}
    mode_of = {r.task: r.payload["mode"] for r in comp_tasks.itertuples(index=False)}
    answers = comparison_answers(export)
    llm = judge_answers(tasks)
    kw = {"n_resamples": n_resamples, "seed": seed}
    rows = []
    present = {it.key for it in gitems.ITEMS} & set(item_of.values())
    for item in [ALL] + [it.key for it in gitems.ITEMS if it.key in present]:
        keep = set(item_of) if item == ALL else {t for t, i in item_of.items() if i == item}
        ans = answers[answers["task"].isin(keep)]
        judge = llm[llm["task"].isin(keep)]
        human = aggregate_comparisons(ans)
        vs_llm = (comparison_metaeval(judge, human, **kw) if len(judge)
                  else {"Single": unavailable("empty", detail=NOT_STORED), "Multi": unavailable("empty", detail=NOT_STORED)})
        if any(mode_of[t] == "single" for t in keep):
            table = single_label_table(ans)
            rows += [_row("comparison, single value", item, HH, "Fleiss κ", single_fleiss(table, **kw)),
                     _row("comparison, single value", item, HH, "Krippendorff α (nominal)", single_alpha(table, **kw)),
                     _row("comparison, single value", item, HL, "accuracy against the majority", vs_llm["Single"]),
                     _row("comparison, single value", item, HL, "Cohen's κ against the majority",
                          match_cohen_kappa(judge, human, **kw) if len(judge) else unavailable("empty", detail=NOT_STORED))]
        if any(mode_of[t] == "multi" for t in keep):
            rows += [_row("comparison, multi value", item, HH, "pairwise matching F1", pairwise_f1(ans, **kw)),
                     _row("comparison, multi value", item, HL, "matching F1 against the majority", vs_llm["Multi"])]
    return rows


def _style_rows(export, tasks, n_resamples, seed, level) -> list[dict]:
    if not (tasks["kind"] == "style").any():
        return []
    kw = {"n_resamples": n_resamples, "seed": seed}
    st = style_ratings(export)
    llm = llm_style_ratings(tasks)
    rows = []
    alphas = []
    per_aspect = []
    for aspect in STYLE_ASPECTS:
        sub, lsub = st[st["aspect"] == aspect], llm[llm["aspect"] == aspect]
        a = style_alpha(sub, level, **kw)
        if sub.empty and lsub.empty:
            continue  # an aspect nobody rated yet: the (all) rows say so
        alphas.append(a)
        vs = style_metaeval(lsub, sub, **kw) if len(lsub) else None
        per_aspect += [_row("style", aspect, HH, f"Krippendorff α ({level})", a),
                       _row("style", aspect, HL, "Cohen's κ against the median",
                            vs["Style kappa"] if vs else unavailable("empty", detail=NOT_STORED)),
                       _row("style", aspect, HL, "Cohen's κ (quadratic) against the median",
                            vs["Style kappa (quadratic)"] if vs else unavailable("empty", detail=NOT_STORED))]
    mean = mean_of(alphas, detail=f"level={level}")
    vs = style_metaeval(llm, st, **kw) if len(llm) else None
    rows += [_row("style", ALL, HH, f"Krippendorff α ({level}), mean of aspects", mean),
             _row("style", ALL, HH, "share where two of three agree", style_two_agree(st)),
             _row("style", ALL, HL, "Cohen's κ against the median",
                  vs["Style kappa"] if vs else unavailable("empty", detail=NOT_STORED)),
             _row("style", ALL, HL, "Cohen's κ (quadratic) against the median",
                  vs["Style kappa (quadratic)"] if vs else unavailable("empty", detail=NOT_STORED))]
    return rows + per_aspect


def _extraction_rows(export, tasks, n_resamples, seed) -> list[dict]:
    ext_tasks = tasks[tasks["kind"] == "extraction"]
    if ext_tasks.empty:
        return []
    kw = {"n_resamples": n_resamples, "seed": seed}
    ext = extraction_rows(export)
    saved = (export[(export["kind"] == "extraction") & export["current"] & (export["role"] == "annotate")]
             if len(export) else export)
    texts = {str(r.case_id): r.payload["text"] for r in ext_tasks.itertuples(index=False)}
    pre = prefill_rows(tasks)
    present = {f.removeprefix("item:") for f in saved["field"]} if len(saved) else set()
    rows = []
    for item in [ALL] + [it.key for it in gitems.ITEMS if it.key in present]:
        sub = ext if item == ALL else ext[ext["item"] == item]
        rows.append(_row("extraction", item, HH, "pairwise S_checklist", pairwise_s_checklist(sub, **kw)))
        if pre.empty:
            rows.append(_row("extraction", item, HL, "S_checklist of the LLM pre-fill",
                             unavailable("empty", detail="no review was pre-filled by an LLM")))
            continue
        reviewed = False
        for who in sorted(saved["annotator"].unique()):
            # the annotator's saved items of LLM-pre-filled reviews; an item not saved is not reviewed yet
            mine = saved[(saved["annotator"] == who) & saved["task"].isin(set(pre["task"]))]
            fields = {(t, f.removeprefix("item:")) for t, f in zip(mine["task"], mine["field"])
                      if item == ALL or f == f"item:{item}"}
            if not fields:
                continue
            reviewed = True
            llm = pre[np.array([(t, i) in fields for t, i in zip(pre["task"], pre["item"])], dtype=bool)]
            hum = sub[(sub["annotator"] == who).to_numpy()
                      & np.array([(t, i) in fields for t, i in zip(sub["task"], sub["item"])], dtype=bool)]
            cases = {str(c) for c in mine["case_id"]}
            out = extraction_metaeval(llm, hum.drop(columns="annotator"), {c: texts[c] for c in cases if c in texts},
                                      **kw)
            rows.append(_row("extraction", item, HL, f"S_checklist of the LLM pre-fill against {who}",
                             out["S_checklist"]))
            if item == ALL:
                rows.append(_row("extraction", item, HL, f"evidence coverage agreement, LLM pre-fill and {who}",
                                 out["Coverage"]))
        if not reviewed and item == ALL:
            rows.append(_row("extraction", item, HL, "S_checklist of the LLM pre-fill",
                             unavailable("empty", detail="no annotator has saved a review of an LLM pre-fill yet")))
    return rows


def agreement_table(export: pd.DataFrame, tasks: pd.DataFrame, n_resamples: int = BOOTSTRAP_RESAMPLES, seed: int = 0,
                    level: str = "ordinal") -> pd.DataFrame:
    """Per task type and item (``(all)`` first), human–human agreement beside human–LLM agreement: one row
    per statistic with its value (None when undefined), status, units, percent agreement, bootstrap 95%
    interval and detail. ``export``: the app's export (``read_export`` or the store's rows); ``tasks``: the
    task table (``read_tasks``: task, kind, case_id, payload)."""
    if len(export) == 0:
        export = pd.DataFrame(columns=["task", "kind", "case_id", "annotator", "role", "field", "value",
                                       "revision", "current"])
    if len(tasks) == 0:
        return pd.DataFrame(columns=AGREEMENT_COLUMNS)
    rows = (_extraction_rows(export, tasks, n_resamples, seed) + _comparison_rows(export, tasks, n_resamples, seed)
            + _style_rows(export, tasks, n_resamples, seed, level))
    return pd.DataFrame(rows, columns=AGREEMENT_COLUMNS)
