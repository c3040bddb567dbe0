"""Item-level matching scores recomputed from the release, with bounds where the release is silent.

One row per *cell* (run, case, item), where a run is a summary model (task ``summary``) or a
document-extraction configuration (task ``document``). Each cell gets

* ``best``  the best estimate of the matching score m_i (NaN = not applicable, left out of means);
* ``low`` / ``high``  the lowest and highest value m_i can take given what the release says
  (NaN = "not applicable" is possible and is the extreme for that side: it removes the cell from the mean);
* ``status`` why: ``judged``, ``identical``, ``one_side_empty``, ``both_empty``, or an ambiguity class.

Rules (each a switch in :class:`Rules`; defaults reproduce the released judgments, see
``../shared/notes/release-facts.md``):

1. The judge saw a pair only when both lists were non-empty and not identical: identical lists score 1,
   one empty side scores 0, both empty is not applicable.
2. A relation was asked only when both sides had exactly one value; otherwise a list matching (F1).
3. Class Action or Individual Plaintiffs was (almost) never sent to the judge: an unjudged class-action cell
   with both sides non-empty is left out of the best estimate, with bounds 0..1.
4. An agent value of exactly "Not Applicable" counts as empty.
5. Summary benchmark: the human-summary checklists are empty files, so whether the reference item is
   non-empty is inferred: a judged pair by any of the 12 models proves it non-empty; a model with values
   and no judgment where another model was judged must have been identical (1). Where no model was judged,
   the reference is taken as empty (best), with bounds covering "non-empty".
6. Cells whose model checklist is not released (empty or absent files) take the expected score of their
   item, estimated from the cells of the same item and task whose checklists are released: with the
   reference non-empty and no judgment, a released model was either identical (1) or empty (0), and the
   share of identical ones is the estimate; with the reference empty or unknown, the more common of
   "model empty" (not applicable) and "model non-empty" (0) is taken. Bounds stay 0..1.
   Where no model was judged on a (case, item), every released non-empty list must equal the reference
   or the reference is empty (rule 1): two different released lists prove it empty (their cells score 0
   with no ambiguity); one list shared by two or more models makes it probably equal to that list
   (best 1 for those models, 0 for empty ones; bounds cover "reference empty").
7. F1 denominators: the model's list length from its checklist when released, else the length the judgment
   implies (largest index / distinct indices named); the reference length is the judgment's implied length,
   raised to the consensus over models for the summary benchmark.
"""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass

import numpy as np
import pandas as pd

from . import scoring
from .items import ITEM_KEYS

NAN = math.nan


@dataclass(frozen=True)
class Rules:
    strict_f1: bool = False  # one-to-one matching instead of distinct-index F1
    not_applicable_is_empty: bool = True  # rule 4
    class_action_unjudged_excluded: bool = True  # rule 3: best estimate leaves such cells out
    infer_identical_from_other_models: bool = True  # rule 5
    infer_reference_from_agreement: bool = True  # rule 6, second part (consensus / proven-empty references)
    estimate_unreleased: bool = True  # rule 6, first part (cells of unreleased checklists)


def _implied_lengths(row) -> tuple[int, int]:
    """(model, reference) list lengths a judgment implies."""
    if row.kind == "relation":
        return 1, 1
    m_idx = {p[0] for p in row.pairs} | set(row.only_in_model)
    r_idx = {p[1] for p in row.pairs} | set(row.only_in_reference)
    return (max(len(m_idx), max(m_idx, default=0)), max(len(r_idx), max(r_idx, default=0)))


def _score_judgment(row, n_model: int, n_ref: int, rules: Rules) -> float:
    if row.kind == "relation":
        return scoring.relation_score(row.relation)
    n_model = max(n_model, 1)
    n_ref = max(n_ref, 1)
    return scoring.matching_f1(row.pairs, n_model, n_ref, strict=rules.strict_f1)


def checklist_lengths(rel, rules: Rules = Rules()) -> pd.DataFrame:
    """Number of values per (origin, method, model, configuration, case, item), agent units merged,
    "Not Applicable" agent values dropped (rule 4)."""
    values = rel.checklist_values
    items = rel.checklist_items
    keys = ["origin", "method", "model", "configuration", "case_id", "item"]
    lengths = items.groupby(keys, dropna=False)["n_values"].sum()
    if rules.not_applicable_is_empty:
        na = values[(values["method"] == "agent") & (values["value"].str.strip() == "Not Applicable")]
        if len(na):
            lengths = lengths.sub(na.groupby(keys, dropna=False).size(), fill_value=0).astype(int)
    return lengths.rename("n_values").reset_index()


def _value_sets(rel) -> dict:
    """(origin, method, model, configuration, case, item) -> sorted tuple of values (for identity tests)."""
    if "value_sets" in rel.cache:
        return rel.cache["value_sets"]
    v = rel.checklist_values
    acc: dict = {}
    cols = [v[c].to_numpy() for c in ("origin", "method", "model", "configuration", "case_id", "item", "value")]
    for o, me, mo, co, ca, it, val in zip(*cols):
        acc.setdefault((o, me, mo, co, ca, it), []).append(val.strip())
    rel.cache["value_sets"] = {k: tuple(sorted(x)) for k, x in acc.items()}
    return rel.cache["value_sets"]


def document_cells(rel, rules: Rules = Rules()) -> pd.DataFrame:
    """Cells of document extraction vs. the human checklists (human.json) of the 40 meta-evaluation cases."""
    lengths = checklist_lengths(rel, rules)
    values = _value_sets(rel)
    ref = lengths[(lengths["method"] == "human")].set_index(["case_id", "item"])["n_values"].to_dict()
    doc_len = lengths[lengths["origin"] == "document"].set_index(
        ["method", "model", "configuration", "case_id", "item"])["n_values"].to_dict()
    jd = rel.judgments[rel.judgments["task"] == "document"]
    judged = {(r.method, r.model, r.configuration, r.case_id, r.item): r for r in jd.itertuples(index=False)}
    cases = sorted(rel.cases.loc[rel.cases["set"] == "human_eval", "case_id"])
    # only runs with judgments are scorable (an empty or absent judge file leaves its run out; the audit
    # and REPRODUCTION.md name those files)
    runs = sorted({(r.method, r.model, r.configuration) for r in jd.itertuples(index=False)})
    rows = []
    for method, model, configuration in runs:
        for case_id in cases:
            for item in ITEM_KEYS:
                key = (method, model, configuration, case_id, item)
                n_ref = ref.get((case_id, item), 0)
                n_model = doc_len.get(key)
                j = judged.get(key)
                identical = None
                if n_model is not None and n_model > 0 and n_ref > 0:
                    identical = values.get(("document", method, model, configuration, case_id, item)) == \
                        values.get(("summary", "human", "human", "", case_id, item))
                rows.append(_resolve(("document", method, model, configuration, case_id, item),
                                     n_model, n_ref, True, j, identical, rules))
    out = pd.DataFrame(rows, columns=CELL_COLUMNS)
    return fill_unreleased(out) if rules.estimate_unreleased else out.assign(estimate_basis=0)


CELL_COLUMNS = ["task", "method", "model", "configuration", "case_id", "item", "n_model", "n_reference",
                "best", "low", "high", "status", "judge_problems"]  # + estimate_basis (rule 6)


def _resolve(ident, n_model, n_ref, ref_known: bool, j, identical, rules: Rules, ref_nonempty=None,
             ref_state=None):
    """Score one cell. n_model/n_ref may be None (unknown). ref_nonempty / ref_state: what the summary
    task infers about the unreleased reference ("empty" certain, "consensus" = probably equal to the
    value every released model shares, None = unknown)."""
    task, method, model, configuration, case_id, item = ident
    problems = ""
    if j is not None and j.kind == "unreadable":
        return (*ident, n_model, n_ref, NAN, 0.0, 1.0, "unreadable_judgment", j.problems)
    if j is not None:
        im, ir = _implied_lengths(j)
        nm = n_model if (n_model and j.orientation == "model_reference") else im
        nr = max(ir, n_ref or 0) if j.orientation == "model_reference" else ir
        s = _score_judgment(j, nm, nr, rules)
        return (*ident, n_model if n_model is not None else im, n_ref if n_ref is not None else nr,
                s, s, s, "judged", j.problems or problems)
    # no judgment
    class_action = item == "class_action" and rules.class_action_unjudged_excluded
    if n_model is not None and ref_known:
        if n_model == 0 and n_ref == 0:
            return (*ident, n_model, n_ref, NAN, NAN, NAN, "both_empty", "")
        if n_model == 0 or n_ref == 0:
            return (*ident, n_model, n_ref, 0.0, 0.0, 0.0, "one_side_empty", "")
        if identical:
            return (*ident, n_model, n_ref, 1.0, 1.0, 1.0, "identical", "")
        return (*ident, n_model, n_ref, NAN if class_action else NAN, 0.0, 1.0,
                "class_action_unjudged" if item == "class_action" else "missing_judgment", "")
    if n_model is None and ref_known:  # model checklist not released
        if n_ref == 0:
            return (*ident, None, n_ref, NAN, 0.0, NAN, "model_unknown_ref_empty", "")
        return (*ident, None, n_ref, NAN if class_action else 0.0, 0.0, 1.0, "model_unknown_ref_nonempty", "")
    # reference unknown (summary benchmark)
    if ref_nonempty:
        if n_model == 0:
            return (*ident, n_model, None, 0.0, 0.0, 0.0, "one_side_empty", "")
        if n_model is None:
            return (*ident, None, None, NAN if class_action else 0.0, 0.0, 1.0, "model_unknown_ref_nonempty", "")
        if rules.infer_identical_from_other_models and not item == "class_action":
            return (*ident, n_model, None, 1.0, 1.0, 1.0, "identical_inferred", "")
        return (*ident, n_model, None, NAN if class_action else 1.0, 0.0, 1.0,
                "class_action_unjudged" if item == "class_action" else "identical_or_empty", "")
    if ref_state == "empty" and item != "class_action":
        if n_model == 0:
            return (*ident, 0, 0, NAN, NAN, NAN, "both_empty_inferred", "")
        if n_model is None:
            return (*ident, None, 0, NAN, 0.0, NAN, "model_unknown_ref_empty", "")
        return (*ident, n_model, 0, 0.0, 0.0, 0.0, "ref_empty_inferred", "")
    if ref_state == "consensus" and item != "class_action":
        if n_model == 0:
            return (*ident, 0, None, 0.0, 0.0, NAN, "ref_consensus_model_empty", "")
        if n_model is None:
            return (*ident, None, None, NAN, 0.0, 1.0, "model_unknown_ref_consensus", "")
        return (*ident, n_model, None, 1.0, 0.0, 1.0, "identical_consensus", "")
    if n_model == 0:
        return (*ident, 0, None, NAN, 0.0, NAN, "ref_unknown_model_empty", "")
    if n_model is None:
        return (*ident, None, None, NAN, 0.0, 1.0, "both_unknown", "")
    if item == "class_action":
        return (*ident, n_model, None, NAN if class_action else 0.0, 0.0, 1.0, "class_action_unjudged", "")
    return (*ident, n_model, None, 0.0, 0.0, 1.0, "ref_unknown_model_nonempty", "")


def summary_cells(rel, rules: Rules = Rules()) -> pd.DataFrame:
    """Cells of the 12 models' summaries vs. the (unreleased) reference checklists, 100 benchmark cases.
    Cases lost from a truncated judge file are not scored (listed by ``lost_cases``)."""
    lengths = checklist_lengths(rel, rules)
    llm = lengths[(lengths["origin"] == "summary") & (lengths["method"] == "llm")]
    model_len = llm.set_index(["model", "case_id", "item"])["n_values"].to_dict()
    files = rel.files
    chk_files = files[(files["kind"] == "summary_checklists") & (files["status"] == "ok")]
    model_parts_known = {(r.model, r.part) for r in chk_files.itertuples()}
    js = rel.judgments[rel.judgments["task"] == "summary"]
    judged = {(r.model, r.case_id, r.item): r for r in js.itertuples(index=False)}
    # reference non-emptiness and consensus length from every model's judgments
    ref_nonempty = set()
    implied = {}
    for r in js.itertuples(index=False):
        if r.kind == "unreadable":
            continue
        ref_nonempty.add((r.case_id, r.item))
        if r.orientation == "model_reference":
            implied.setdefault((r.case_id, r.item), []).append(_implied_lengths(r)[1])
    consensus = {k: Counter(v).most_common(1)[0][0] for k, v in implied.items()}
    cases = rel.cases[rel.cases["set"] == "benchmark"][["case_id", "part"]]
    covered = _judged_cases(rel)
    # Where no model was judged, every released non-empty list was identical to the reference or the
    # reference is empty: two different lists prove it empty; one list shared by >= 2 models suggests
    # the reference equals it ("consensus"); otherwise it stays unknown.
    values = _value_sets(rel)
    shared: dict = {}
    for (origin, method, model, _c, case_id, item), vals in values.items():
        if origin == "summary" and method == "llm" and model != "human" and (case_id, item) not in ref_nonempty:
            shared.setdefault((case_id, item), Counter())[vals] += 1
    ref_state = {}
    for key, counter in (shared.items() if rules.infer_reference_from_agreement else ()):
        if len(counter) >= 2:
            ref_state[key] = "empty"
        elif sum(counter.values()) >= 2:
            ref_state[key] = "consensus"
    rows = []
    for model in sorted(set(js["model"])):
        for case_id, part in cases.itertuples(index=False):
            if case_id not in covered.get((model, part), set()):
                continue
            known = (model, part) in model_parts_known
            for item in ITEM_KEYS:
                n_model = model_len.get((model, case_id, item), 0) if known else None
                j = judged.get((model, case_id, item))
                n_ref = consensus.get((case_id, item))
                row = _resolve(("summary", "llm", model, "", case_id, item), n_model, n_ref, False, j, None,
                               rules, ref_nonempty=(case_id, item) in ref_nonempty,
                               ref_state=ref_state.get((case_id, item)))
                rows.append(row)
    cells = pd.DataFrame(rows, columns=CELL_COLUMNS)
    return fill_unreleased(cells) if rules.estimate_unreleased else cells.assign(estimate_basis=0)


def fill_unreleased(cells: pd.DataFrame) -> pd.DataFrame:
    """Rule 6: best estimates for cells whose model checklist is unreleased, from the item's released
    cells. Status and bounds are unchanged; the estimate's basis is counted in ``estimate_basis``."""
    cells = cells.copy()
    cells["estimate_basis"] = 0
    known_model = cells["n_model"].notna()
    no_judgment = cells["status"] != "judged"
    # reference non-empty, no judgment: identical (1) vs model empty (0)
    ident = cells["status"].isin(["identical", "identical_inferred"])
    empty_vs_nonempty_ref = (cells["status"] == "one_side_empty") & (cells["n_model"] == 0)
    base = cells[known_model & no_judgment & (ident | empty_vs_nonempty_ref)]
    p_identical = base.assign(one=ident[base.index]).groupby("item")["one"].agg(["mean", "size"])
    target = cells["status"] == "model_unknown_ref_nonempty"
    for item, (p, n) in p_identical.iterrows():
        sel = target & (cells["item"] == item) & ~(cells["item"] == "class_action")
        cells.loc[sel, "best"] = p
        cells.loc[sel, "estimate_basis"] = int(n)
    # reference empty or unknown, model unknown: not applicable if most released models were empty there
    st = cells["status"]
    empty_side = st.isin(["both_empty", "ref_unknown_model_empty"]) | ((st == "one_side_empty") & (cells["n_model"] > 0))
    base = cells[known_model & empty_side & no_judgment]
    model_empty = (base["n_model"] == 0)
    p_empty = model_empty.groupby(base["item"]).agg(["mean", "size"])
    target = st.isin(["model_unknown_ref_empty", "both_unknown"])
    consensus_unknown = st == "model_unknown_ref_consensus"
    if consensus_unknown.any():
        cells.loc[consensus_unknown, "best"] = (cells.loc[consensus_unknown, "item"]
                                                .map(p_identical["mean"]).astype(float))
    for item, (p, n) in p_empty.iterrows():
        sel = target & (cells["item"] == item) & ~(cells["item"] == "class_action")
        cells.loc[sel, "best"] = np.nan if p >= 0.5 else 0.0
        cells.loc[sel, "estimate_basis"] = int(n)
    return cells


def _judged_cases(rel) -> dict:
    """(model, part) -> cases the judge file covers: all cases of the part for a complete file, the
    salvaged ones for a truncated file, none for an empty/absent file."""
    files = rel.files[rel.files["kind"] == "summary_judgments"]
    cases = rel.cases[rel.cases["set"] == "benchmark"]
    js = rel.judgments[rel.judgments["task"] == "summary"]
    out = {}
    for f in files.itertuples():
        part_cases = set(cases.loc[cases["part"] == f.part, "case_id"])
        if f.status == "ok":
            out[(f.model, f.part)] = part_cases
        elif f.status == "truncated":
            out[(f.model, f.part)] = set(js.loc[js["file"] == f.file, "case_id"]) & part_cases
        else:
            out[(f.model, f.part)] = set()
    return out


def lost_cases(rel) -> pd.DataFrame:
    covered = _judged_cases(rel)
    cases = rel.cases[rel.cases["set"] == "benchmark"]
    rows = []
    for (model, part), got in covered.items():
        n = int((cases["part"] == part).sum())
        if len(got) < n:
            rows.append({"model": model, "part": part, "cases_scored": len(got), "cases_lost": n - len(got)})
    return pd.DataFrame(rows, columns=["model", "part", "cases_scored", "cases_lost"])


def aggregate(cells: pd.DataFrame, by: list[str]) -> pd.DataFrame:
    """S_checklist per group (100 x mean of applicable item scores): best, and the lower and upper bound
    (a NaN bound means that side's extreme leaves the cell out)."""
    ambiguous = (cells["low"] != cells["high"]) | (cells["low"].isna() != cells["high"].isna())
    frame = cells[by + ["best", "low", "high"]].assign(ambiguous=ambiguous.astype(int))
    g = frame.groupby(by, dropna=False)
    sums, counts = g[["best", "low", "high"]].sum(), g[["best", "low", "high"]].count()
    means = 100 * sums / counts.where(counts > 0)
    out = pd.DataFrame({"s_checklist": means["best"], "s_checklist_low": means["low"],
                        "s_checklist_high": means["high"], "cells": g.size(),
                        "applicable": counts["best"], "ambiguous": g["ambiguous"].sum()})
    return out.reset_index()


def per_case_scores(cells: pd.DataFrame, by: list[str]) -> pd.DataFrame:
    """S_checklist of each summary (run x case), best estimate."""
    return aggregate(cells, by + ["case_id"])
