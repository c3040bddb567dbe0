"""Item-level matching scores recomputed from the release, with bounds where the release is silent.

One row per *cell* (run, case, item), where a run is a summary model (task ``summary``) or a
document-extraction configuration (task ``document``). Each cell gets

* ``best``  the best estimate of the matching score m_i (NaN = not applicable, left out of means);
* ``low`` / ``high``  the lowest and highest value m_i can take given what the release says
  (NaN = "not applicable" is possible and is the extreme for that side: it removes the cell from the mean);
* ``status`` why: ``judged``, ``identical``, ``one_side_empty``, ``both_empty``, or an ambiguity class.

Rules (each a switch in :class:`Rules`; the defaults reproduce the released judgments):

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
from collections import Counter, namedtuple
from dataclasses import dataclass
from enum import StrEnum
from typing import NamedTuple

import pandas as pd

from gavel.core.entries import NOT_APPLICABLE
from gavel.core.items import ITEM_KEYS
from gavel.ref import scoring

NAN = math.nan


class Status(StrEnum):
    """Why a cell has the score (and bounds) it has: the one list of cell statuses."""

    JUDGED = "judged"
    UNREADABLE = "unreadable_judgment"
    BOTH_EMPTY = "both_empty"
    ONE_SIDE_EMPTY = "one_side_empty"
    IDENTICAL = "identical"
    MISSING_JUDGMENT = "missing_judgment"
    CLASS_ACTION_UNJUDGED = "class_action_unjudged"
    MODEL_UNKNOWN_REF_EMPTY = "model_unknown_ref_empty"
    MODEL_UNKNOWN_REF_NONEMPTY = "model_unknown_ref_nonempty"
    IDENTICAL_INFERRED = "identical_inferred"
    IDENTICAL_OR_EMPTY = "identical_or_empty"
    BOTH_EMPTY_INFERRED = "both_empty_inferred"
    REF_EMPTY_INFERRED = "ref_empty_inferred"
    REF_CONSENSUS_MODEL_EMPTY = "ref_consensus_model_empty"
    MODEL_UNKNOWN_REF_CONSENSUS = "model_unknown_ref_consensus"
    IDENTICAL_CONSENSUS = "identical_consensus"
    REF_UNKNOWN_MODEL_EMPTY = "ref_unknown_model_empty"
    BOTH_UNKNOWN = "both_unknown"
    REF_UNKNOWN_MODEL_NONEMPTY = "ref_unknown_model_nonempty"


class Outcome(NamedTuple):
    """One way a cell's unknowns can resolve: does the reference hold the item, does the model's list hold
    something the reference's lacks (over-specification), and the reverse (under-specification)."""

    ref_has: bool
    over: bool
    under: bool


_O = Outcome
# For every status that is not a judgment: the outcomes the release leaves possible, the best guess first
# (the one the status's best estimate assumes). A judged cell's outcome comes from the judgment itself.
STATUS_OUTCOMES: dict[Status, tuple[Outcome, ...]] = {
    Status.UNREADABLE: (_O(True, False, False), _O(True, True, False), _O(True, False, True), _O(True, True, True)),
    Status.BOTH_EMPTY: (_O(False, False, False),),
    Status.ONE_SIDE_EMPTY: (_O(True, False, True),),  # summary task: the model side is the empty one
    Status.IDENTICAL: (_O(True, False, False),),
    Status.MISSING_JUDGMENT: (_O(True, False, False), _O(True, True, False), _O(True, False, True),
                              _O(True, True, True)),
    Status.CLASS_ACTION_UNJUDGED: (_O(False, False, False), _O(True, False, False), _O(True, True, False),
                                   _O(True, False, True), _O(True, True, True), _O(False, True, False)),
    Status.MODEL_UNKNOWN_REF_EMPTY: (_O(False, False, False), _O(False, True, False)),
    Status.MODEL_UNKNOWN_REF_NONEMPTY: (_O(True, False, False), _O(True, False, True)),
    Status.IDENTICAL_INFERRED: (_O(True, False, False),),
    Status.IDENTICAL_OR_EMPTY: (_O(True, False, False), _O(True, True, True)),
    Status.BOTH_EMPTY_INFERRED: (_O(False, False, False),),
    Status.REF_EMPTY_INFERRED: (_O(False, True, False),),
    Status.REF_CONSENSUS_MODEL_EMPTY: (_O(True, False, True), _O(False, False, False)),
    Status.MODEL_UNKNOWN_REF_CONSENSUS: (_O(True, False, False), _O(True, False, True), _O(False, False, False),
                                         _O(False, True, False)),
    Status.IDENTICAL_CONSENSUS: (_O(True, False, False), _O(False, True, False)),
    Status.REF_UNKNOWN_MODEL_EMPTY: (_O(False, False, False), _O(True, False, True)),
    Status.BOTH_UNKNOWN: (_O(False, False, False), _O(True, False, True), _O(False, True, False),
                          _O(True, False, False)),
    Status.REF_UNKNOWN_MODEL_NONEMPTY: (_O(False, True, False), _O(True, False, False)),
}


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


def records(df: pd.DataFrame, named: bool = True):
    """``df.itertuples(index=False)``: the same rows and values, without pandas reading string columns one
    element at a time (about a microsecond a value; ``make results`` goes through ~700,000). ``named=False``:
    plain tuples (for unpacking)."""
    cols = [df[c].to_numpy(dtype=object) if isinstance(df[c].dtype, pd.StringDtype) else df[c] for c in df.columns]
    return map(namedtuple("Pandas", df.columns, rename=True)._make, zip(*cols)) if named else zip(*cols)


def checklist_lengths(rel, rules: Rules = Rules()) -> pd.DataFrame:
    """Number of values per (origin, method, model, configuration, case, item), agent units merged,
    "Not Applicable" agent values dropped (rule 4)."""
    values = rel.checklist_values
    items = rel.checklist_items
    keys = ["origin", "method", "model", "configuration", "case_id", "item"]
    lengths = items.groupby(keys, dropna=False)["n_values"].sum()
    if rules.not_applicable_is_empty:
        na = values[(values["method"] == "agent") & (values["value"].str.strip() == NOT_APPLICABLE)]
        if len(na):
            lengths = lengths.sub(na.groupby(keys, dropna=False).size(), fill_value=0).astype(int)
    return lengths.rename("n_values").reset_index()


def value_sets(checklist_values: pd.DataFrame) -> dict:
    """(origin, method, model, configuration, case, item) -> sorted tuple of values (for identity tests).
    Computed from the loader's ``checklist_values`` table; pass it to the cell functions to compute it once."""
    v = checklist_values
    acc: dict = {}
    cols = [v[c].to_numpy() for c in ("origin", "method", "model", "configuration", "case_id", "item", "value")]
    for o, me, mo, co, ca, it, val in zip(*cols):
        acc.setdefault((o, me, mo, co, ca, it), []).append(val.strip())
    return {k: tuple(sorted(x)) for k, x in acc.items()}


def document_cells(rel, rules: Rules = Rules(), values: dict | None = None) -> pd.DataFrame:
    """Cells of document extraction vs. the human checklists (human.json) of the 40 meta-evaluation cases.
    ``values``: ``value_sets(rel.checklist_values)`` when the caller has it already."""
    lengths = checklist_lengths(rel, rules)
    values = value_sets(rel.checklist_values) if values is None else values
    ref = lengths[(lengths["method"] == "human")].set_index(["case_id", "item"])["n_values"].to_dict()
    doc_len = lengths[lengths["origin"] == "document"].set_index(
        ["method", "model", "configuration", "case_id", "item"])["n_values"].to_dict()
    jd = rel.judgments[rel.judgments["task"] == "document"]
    judged = {(r.method, r.model, r.configuration, r.case_id, r.item): r for r in records(jd)}
    cases = sorted(rel.cases.loc[rel.cases["set"] == "human_eval", "case_id"])
    # only runs with judgments are scorable (an empty or absent judge file leaves its run out; the audit
    # and REPRODUCTION.md name those files)
    runs = sorted({(r.method, r.model, r.configuration) for r in records(jd)})
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
    return fill_unreleased(out) if rules.estimate_unreleased else out.assign(estimate_basis=0, estimate_source="")


class Cell(NamedTuple):
    """One (run, case, item) cell: the row type of ``summary_cells`` / ``document_cells``."""

    task: str
    method: str
    model: str
    configuration: str
    case_id: str
    item: str
    n_model: int | None
    n_reference: int | None
    best: float
    low: float
    high: float
    status: Status
    judge_problems: str = ""


CELL_COLUMNS = list(Cell._fields)  # + estimate_basis, estimate_source (rule 6)


def _resolve(ident, n_model, n_ref, ref_known: bool, j, identical, rules: Rules, ref_nonempty=None,
             ref_state=None):
    """Score one cell. n_model/n_ref may be None (unknown). ref_nonempty / ref_state: what the summary
    task infers about the unreleased reference ("empty" certain, "consensus" = probably equal to the
    value every released model shares, None = unknown)."""
    task, method, model, configuration, case_id, item = ident
    problems = ""
    if j is not None and j.kind == "unreadable":
        return Cell(*ident, n_model, n_ref, NAN, 0.0, 1.0, Status.UNREADABLE, j.problems)
    if j is not None:
        im, ir = _implied_lengths(j)
        nm = n_model if (n_model and j.orientation == "model_reference") else im
        nr = max(ir, n_ref or 0) if j.orientation == "model_reference" else ir
        s = _score_judgment(j, nm, nr, rules)
        return Cell(*ident, n_model if n_model is not None else im, n_ref if n_ref is not None else nr,
                s, s, s, Status.JUDGED, j.problems or problems)
    # no judgment
    class_action = item == "class_action" and rules.class_action_unjudged_excluded
    if n_model is not None and ref_known:
        if n_model == 0 and n_ref == 0:
            return Cell(*ident, n_model, n_ref, NAN, NAN, NAN, Status.BOTH_EMPTY, "")
        if n_model == 0 or n_ref == 0:
            return Cell(*ident, n_model, n_ref, 0.0, 0.0, 0.0, Status.ONE_SIDE_EMPTY, "")
        if identical:
            return Cell(*ident, n_model, n_ref, 1.0, 1.0, 1.0, Status.IDENTICAL, "")
        return Cell(*ident, n_model, n_ref, NAN if class_action else NAN, 0.0, 1.0,
                Status.CLASS_ACTION_UNJUDGED if item == "class_action" else Status.MISSING_JUDGMENT, "")
    if n_model is None and ref_known:  # model checklist not released
        if n_ref == 0:
            return Cell(*ident, None, n_ref, NAN, 0.0, NAN, Status.MODEL_UNKNOWN_REF_EMPTY, "")
        return Cell(*ident, None, n_ref, NAN if class_action else 0.0, 0.0, 1.0, Status.MODEL_UNKNOWN_REF_NONEMPTY, "")
    # reference unknown (summary benchmark)
    if ref_nonempty:
        if n_model == 0:
            return Cell(*ident, n_model, None, 0.0, 0.0, 0.0, Status.ONE_SIDE_EMPTY, "")
        if n_model is None:
            return Cell(*ident, None, None, NAN if class_action else 0.0, 0.0, 1.0, Status.MODEL_UNKNOWN_REF_NONEMPTY, "")
        if rules.infer_identical_from_other_models and not item == "class_action":
            return Cell(*ident, n_model, None, 1.0, 1.0, 1.0, Status.IDENTICAL_INFERRED, "")
        return Cell(*ident, n_model, None, NAN if class_action else 1.0, 0.0, 1.0,
                Status.CLASS_ACTION_UNJUDGED if item == "class_action" else Status.IDENTICAL_OR_EMPTY, "")
    if ref_state == "empty" and item != "class_action":
        if n_model == 0:
            return Cell(*ident, 0, 0, NAN, NAN, NAN, Status.BOTH_EMPTY_INFERRED, "")
        if n_model is None:
            return Cell(*ident, None, 0, NAN, 0.0, NAN, Status.MODEL_UNKNOWN_REF_EMPTY, "")
        return Cell(*ident, n_model, 0, 0.0, 0.0, 0.0, Status.REF_EMPTY_INFERRED, "")
    if ref_state == "consensus" and item != "class_action":
        if n_model == 0:
            return Cell(*ident, 0, None, 0.0, 0.0, NAN, Status.REF_CONSENSUS_MODEL_EMPTY, "")
        if n_model is None:
            return Cell(*ident, None, None, NAN, 0.0, 1.0, Status.MODEL_UNKNOWN_REF_CONSENSUS, "")
        return Cell(*ident, n_model, None, 1.0, 0.0, 1.0, Status.IDENTICAL_CONSENSUS, "")
    if n_model == 0:
        return Cell(*ident, 0, None, NAN, 0.0, NAN, Status.REF_UNKNOWN_MODEL_EMPTY, "")
    if n_model is None:
        return Cell(*ident, None, None, NAN, 0.0, 1.0, Status.BOTH_UNKNOWN, "")
    if item == "class_action":
        return Cell(*ident, n_model, None, NAN if class_action else 0.0, 0.0, 1.0, Status.CLASS_ACTION_UNJUDGED, "")
    return Cell(*ident, n_model, None, 0.0, 0.0, 1.0, Status.REF_UNKNOWN_MODEL_NONEMPTY, "")


def summary_cells(rel, rules: Rules = Rules(), values: dict | None = None) -> pd.DataFrame:
    """Cells of the 12 models' summaries vs. the (unreleased) reference checklists, 100 benchmark cases.
    Cases lost from a truncated judge file are not scored (listed by ``lost_cases``). ``values``: as for
    ``document_cells``."""
    lengths = checklist_lengths(rel, rules)
    llm = lengths[(lengths["origin"] == "summary") & (lengths["method"] == "llm")]
    model_len = llm.set_index(["model", "case_id", "item"])["n_values"].to_dict()
    files = rel.files
    chk_files = files[(files["kind"] == "summary_checklists") & (files["status"] == "ok")]
    model_parts_known = {(r.model, r.part) for r in chk_files.itertuples()}
    # a case missing from a released checklist file (audited as missing_case) is unknown, not empty
    held = set(zip(llm["model"], llm["case_id"]))
    js = rel.judgments[rel.judgments["task"] == "summary"]
    judged = {(r.model, r.case_id, r.item): r for r in records(js)}
    # reference non-emptiness and consensus length from every model's judgments
    ref_nonempty = set()
    implied = {}
    for r in records(js):
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
    values = value_sets(rel.checklist_values) if values is None else values
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
        for case_id, part in records(cases):
            if case_id not in covered.get((model, part), set()):
                continue
            known = (model, part) in model_parts_known and (model, case_id) in held
            for item in ITEM_KEYS:
                n_model = model_len.get((model, case_id, item), 0) if known else None
                j = judged.get((model, case_id, item))
                n_ref = consensus.get((case_id, item))
                row = _resolve(("summary", "llm", model, "", case_id, item), n_model, n_ref, False, j, None,
                               rules, ref_nonempty=(case_id, item) in ref_nonempty,
                               ref_state=ref_state.get((case_id, item)))
                rows.append(row)
    cells = pd.DataFrame(rows, columns=CELL_COLUMNS)
    return fill_unreleased(cells) if rules.estimate_unreleased else cells.assign(estimate_basis=0, estimate_source="")


MIN_OWN_CELLS = 3  # rule 6: a model's own released cells of an item are used when it has at least this many


def _per_model_rates(base: pd.DataFrame, flag: pd.Series) -> tuple[dict, dict]:
    """Share of ``flag`` per (model, item) and per item (pooled over models), with the cell counts."""
    frame = base.assign(_flag=flag.astype(float))
    own = frame.groupby(["model", "item"])["_flag"].agg(["mean", "size"])
    pooled = frame.groupby("item")["_flag"].agg(["mean", "size"])
    return ({k: (float(r["mean"]), int(r["size"])) for k, r in own.iterrows()},
            {k: (float(r["mean"]), int(r["size"])) for k, r in pooled.iterrows()})


def _estimate(model: str, item: str, own: dict, pooled: dict) -> tuple[float, int, str]:
    """(rate, cells it rests on, "own" | "pooled" | "none"): the model's own released cells of the item
    when it has at least MIN_OWN_CELLS of them, else every released model's cells of the item."""
    if own.get((model, item), (0, 0))[1] >= MIN_OWN_CELLS:
        p, n = own[(model, item)]
        return p, n, "own"
    if item in pooled:
        p, n = pooled[item]
        return p, n, "pooled"
    return NAN, 0, "none"


def fill_unreleased(cells: pd.DataFrame) -> pd.DataFrame:
    """Rule 6: best estimates for cells whose model checklist is unreleased. Each model is estimated from
    its own released cells of the same item (e.g. the released half of a model whose other half is
    missing) and from the pool of all released models only where it has fewer than MIN_OWN_CELLS of them
    (Claude Opus 4.1 has none). Status and bounds are unchanged; ``estimate_basis`` counts the cells the
    estimate rests on and ``estimate_source`` says whose they were (own / pooled)."""
    cells = cells.copy()
    cells["estimate_basis"] = 0
    cells["estimate_source"] = ""
    known_model = cells["n_model"].notna()
    no_judgment = cells["status"] != Status.JUDGED
    st = cells["status"]
    not_class_action = cells["item"] != "class_action"
    # reference non-empty, no judgment: identical (1) vs model empty (0)
    ident = st.isin([Status.IDENTICAL, Status.IDENTICAL_INFERRED])
    empty_vs_nonempty_ref = (st == Status.ONE_SIDE_EMPTY) & (cells["n_model"] == 0)
    base = cells[known_model & no_judgment & (ident | empty_vs_nonempty_ref)]
    own_identical, pooled_identical = _per_model_rates(base, ident[base.index])
    # reference empty or unknown, no judgment: model empty (not applicable) vs model non-empty (0)
    empty_side = (st.isin([Status.BOTH_EMPTY, Status.REF_UNKNOWN_MODEL_EMPTY])
                  | ((st == Status.ONE_SIDE_EMPTY) & (cells["n_model"] > 0)))
    base = cells[known_model & empty_side & no_judgment]
    own_empty, pooled_empty = _per_model_rates(base, base["n_model"] == 0)

    _fill(cells, not_class_action & st.isin([Status.MODEL_UNKNOWN_REF_NONEMPTY, Status.MODEL_UNKNOWN_REF_CONSENSUS]),
          own_identical, pooled_identical, lambda p: p)
    _fill(cells, not_class_action & st.isin([Status.MODEL_UNKNOWN_REF_EMPTY, Status.BOTH_UNKNOWN]),
          own_empty, pooled_empty, lambda p: NAN if p >= 0.5 else 0.0)
    return cells


def _fill(cells: pd.DataFrame, where: pd.Series, own: dict, pooled: dict, best) -> None:
    """Set ``best`` (= ``best(rate)``), ``estimate_basis`` and ``estimate_source`` of the cells ``where``
    says from ``_estimate``; a cell of an item with no released cell anywhere keeps its status's guess."""
    sel = cells.loc[where, ["model", "item"]]
    found = [(i, e) for i, e in zip(sel.index, (_estimate(m, it, own, pooled) for m, it in
                                               zip(sel["model"], sel["item"]))) if e[2] != "none"]
    if found:
        rows = [i for i, _ in found]
        cells.loc[rows, "best"] = [best(p) for _, (p, _, _) in found]
        cells.loc[rows, "estimate_basis"] = [n for _, (_, n, _) in found]
        cells.loc[rows, "estimate_source"] = [source for _, (_, _, source) in found]


def _judged_cases(rel) -> dict:
    """(model, part) -> cases the judge file covers: the cases of the part it holds (all of them for a
    complete file, the salvaged ones for a truncated file), none for an empty/absent file."""
    files = rel.files[rel.files["kind"] == "summary_judgments"]
    cases = rel.cases[rel.cases["set"] == "benchmark"]
    js = rel.judgments[rel.judgments["task"] == "summary"]
    out = {}
    for f in files.itertuples():
        part_cases = set(cases.loc[cases["part"] == f.part, "case_id"])
        if f.status in ("ok", "truncated"):
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
    low, high = cells["low"], cells["high"]
    ambiguous = (low.isna() != high.isna()) | (low.notna() & (low != high))  # both NaN: not applicable either way
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
