"""Meta-evaluation of GAVEL-REF (paper section 2.3, Table 1, Appendix D): how well the LLM stages agree with
people, and how well people agree with each other.

Every statistic is a :class:`Stat`: a value, a ``status`` and the number of units, with the percent agreement
beside every kappa/alpha and a bootstrap 95% interval over cases where one is asked for. Degenerate input
never turns into a silent 0, 1 or NaN: the value is None and the status says why
(``empty``, ``one_rater``, ``no_variance``, ``unequal_raters``, ``no_pairs``).

Statistics come from the well-kept libraries: Cohen's kappa from scikit-learn (unweighted and quadratic
weighted: the paper does not say which it used), Fleiss' kappa from statsmodels, Krippendorff's alpha from
``krippendorff``; accuracy and the confusion matrix from scikit-learn. S_checklist uses gavel.ref.scoring.

Inputs are plain tables:

* value rows (an LLM's extraction, ``human.json``, an annotator's review): ``case_id, item, index, value,
  evidence`` (list of strings), optionally ``evidence_spans`` (character offsets) and ``annotator``;
* the annotation app's export (JSONL rows: task, kind, case_id, annotator, role, field, value, revision,
  current, saved_at), read with :func:`read_export`;
* comparison answers: ``task, label`` (single) or ``task, pairs`` (multi);
* style ratings: ``task, aspect, rating``.

The comparison of two checklists inside S_checklist needs a judge. :func:`exact_compare` is the stand-in
used when no LLM judge output is given: values equal after normalising case, spaces and punctuation count
as equal, everything else as different. Results computed with it say so (``judge='exact-match'``).
"""

from __future__ import annotations

import itertools
import json
import math
import random
import re
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

import krippendorff
import numpy as np
import pandas as pd
from sklearn.metrics import accuracy_score, cohen_kappa_score, confusion_matrix
from statsmodels.stats.inter_rater import fleiss_kappa as _sm_fleiss

from gavel.core import config
from gavel.core import items as gitems
from gavel.core.vocab import RELATIONS, STYLE_ASPECTS
from gavel.ref import scoring
from gavel.ref.grounding import locate

# the app's 4-way labels (A = model, B = reference) in the judge's vocabulary
LABEL_TO_RELATION = {"equal": "equal", "a_contains_b": "model_contains_reference",
                     "b_contains_a": "reference_contains_model", "different": "different"}
TABLE1_COLUMNS = ["S_checklist", "Coverage", "Single", "Multi", "Style kappa"]


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


def _bad(status: str, n: int = 0, detail: str = "") -> Stat:
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
        return _bad("empty")
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
        return _bad("empty")
    counts_per_unit = df.notna().sum(axis=1)
    if counts_per_unit.max() < 2:
        return _bad("one_rater", len(df), "no unit has two ratings")
    if counts_per_unit.nunique() != 1:
        return _bad("unequal_raters", len(df), f"units have {sorted(counts_per_unit.unique())} ratings; "
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
        return _bad("empty")
    m = t.sum(axis=1)
    if m.min() < 2:
        return _bad("one_rater", len(t))
    if len(set(m)) != 1:
        return _bad("unequal_raters", len(t))
    agree = float(np.mean((np.sum(t * t, axis=1) - m) / (m * (m - 1))))
    p = t.sum(axis=0) / t.sum()
    if np.isclose(np.sum(p * p), 1.0):
        return Stat(None, "no_variance", len(t), agree, detail="every rating is in one category")
    return Stat(float(_sm_fleiss(t, method="fleiss")), "ok", len(t), agree)


def krippendorff_alpha(reliability: pd.DataFrame | Sequence[Sequence], level: str = "ordinal") -> Stat:
    """Krippendorff's alpha (package ``krippendorff``) of a rater x unit table (NaN = missing)."""
    data = np.asarray(pd.DataFrame(reliability).astype(float))
    if data.size == 0:
        return _bad("empty")
    pairable = (~np.isnan(data)).sum(axis=0) >= 2
    if data.shape[0] < 2 or not pairable.any():
        return _bad("one_rater", int(data.shape[1]), "no unit was rated by two raters")
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
        return _bad("empty")
    if df.shape[1] != 3:
        return _bad("unequal_raters", len(df), f"the two-agree share needs three ratings per unit, got {df.shape[1]}")
    any_two = float(np.mean([len(set(r)) < 3 for r in df.itertuples(index=False)]))
    return Stat(any_two, "ok", len(df), detail=f"all three differ: {1 - any_two:.3f}",
                extra={"all_differ": 1 - any_two})


def bootstrap(cases: Sequence, statistic: Callable[[list], float | None], n_resamples: int = 1000,
              seed: int = 0) -> tuple[float | None, float | None]:
    """Percentile 95% interval of ``statistic(list of cases)`` over resamples of the cases (with
    replacement). Resamples where the statistic is undefined are left out; None when too few remain."""
    cases = list(cases)
    if len(cases) < 2:
        return None, None
    rng = np.random.default_rng(seed)
    values = []
    for _ in range(n_resamples):
        pick = [cases[i] for i in rng.integers(0, len(cases), len(cases))]
        v = statistic(pick)
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


# --- checklists ---------------------------------------------------------------------------------------

def normalise(value: str) -> str:
    return re.sub(r"[\W_]+", " ", str(value).lower()).strip()


def exact_compare(a: Sequence[str], b: Sequence[str]) -> dict:
    """Stand-in judge: a relation for one value each, else list matching, by normalised equality."""
    if len(a) == 1 and len(b) == 1:
        return {"relation": "equal" if normalise(a[0]) == normalise(b[0]) else "different"}
    return {"pairs": [(i + 1, j + 1) for i, x in enumerate(a) for j, y in enumerate(b)
                      if normalise(x) == normalise(y)]}


def item_lists(rows: pd.DataFrame) -> dict[tuple[str, str], list[str]]:
    """(case_id, item key) -> values in index order."""
    out: dict = {}
    if rows is None or rows.empty:
        return out
    for (case, item), g in rows.sort_values("index").groupby(["case_id", "item"]):
        out[(str(case), gitems.item(item).key)] = [str(v) for v in g["value"]]
    return out


def s_checklist_case(a: dict, b: dict, case_id: str, compare: Callable = exact_compare,
                     skip: frozenset = frozenset()) -> float:
    """S_checklist of checklist ``a`` (model side) against ``b`` (reference side) on one case; items in
    ``skip`` ((case_id, item key) with no usable answer) are left out."""
    scores = []
    for it in gitems.ITEMS:
        if (case_id, it.key) in skip:
            continue
        va, vb = a.get((case_id, it.key), []), b.get((case_id, it.key), [])
        if va and vb and [normalise(x) for x in va] == [normalise(x) for x in vb]:
            scores.append(1.0)
            continue
        if va and vb:
            answer = compare(va, vb)
            scores.append(scoring.item_score(len(va), len(vb), relation=answer.get("relation"),
                                             pairs=answer.get("pairs")))
        else:
            scores.append(scoring.item_score(len(va), len(vb)))
    return scoring.s_checklist(scores)


def _words(text: str) -> list[tuple[int, int]]:
    return [(m.start(), m.end()) for m in re.finditer(r"\S+", text)]


def as_list(value) -> list:
    """A list cell as read from a table: a list, a JSON text of one (CSV), or nothing."""
    if isinstance(value, list | tuple | np.ndarray):
        return list(value)
    if isinstance(value, str) and value.startswith("["):
        return json.loads(value)
    return [value] if isinstance(value, str) and value else []


def evidence_spans(rows: pd.DataFrame, case_id: str, text: str) -> tuple[list[tuple[int, int]], int]:
    """Spans of a case's evidence: the row's ``evidence_spans`` where given (one per evidence string, None
    where it was not found), else located in ``text`` with gavel.ref.grounding. Returns the spans and how many
    evidence strings have no span (counted, never dropped silently)."""
    spans, missing = [], 0
    sub = rows[rows["case_id"].astype(str) == str(case_id)]
    has_spans = "evidence_spans" in sub.columns
    for r in sub.itertuples(index=False):
        evidence = as_list(r.evidence)
        given = as_list(getattr(r, "evidence_spans", None)) if has_spans else []
        for k, e in enumerate(evidence):
            g = given[k] if k < len(given) else None
            if g is not None:
                spans.append((int(g[0]), int(g[1])))
                continue
            hit = locate(e, text)
            if hit.found:
                spans.append((hit.start, hit.end))
            else:
                missing += 1
    return spans, missing


def coverage_agreement(text: str, spans_a: Iterable[tuple[int, int]], spans_b: Iterable[tuple[int, int]]) -> float | None:
    """Share of the summary's words on which two annotations agree about being covered by evidence (a word
    is covered when any span overlaps it)."""
    words = _words(text)
    if not words:
        return None

    def covered(spans):
        spans = sorted(spans)
        return [any(s < we and e > ws for s, e in spans) for ws, we in words]

    ca, cb = covered(spans_a), covered(spans_b)
    return float(np.mean([x == y for x, y in zip(ca, cb)]))


def extraction_metaeval(llm_rows: pd.DataFrame, human_rows: pd.DataFrame, texts: dict[str, str],
                        compare: Callable = exact_compare, judge: str = "exact-match",
                        n_resamples: int = 1000, seed: int = 0, unusable: Iterable = ()) -> dict[str, Stat]:
    """S_checklist of an LLM's extraction against the human one, and word-level coverage agreement of their
    evidence, over the cases both cover (a case with no extractor row at all is left out and counted);
    ``unusable``: (case_id, item) whose answer was unusable, left out of S_checklist and counted.
    Bootstrap intervals over cases."""
    llm_rows = llm_rows.assign(case_id=llm_rows["case_id"].astype(str))
    human_rows = human_rows.assign(case_id=human_rows["case_id"].astype(str))
    skip = frozenset((str(c), gitems.item(i).key) for c, i in unusable)
    human_cases = set(human_rows["case_id"]) & set(texts)
    cases = sorted(human_cases & (set(llm_rows["case_id"]) | {c for c, _ in skip}))
    if not cases:
        return {"S_checklist": _bad("empty"), "Coverage": _bad("empty")}
    a, b = item_lists(llm_rows), item_lists(human_rows)
    per_case, cover, missing = {}, {}, 0
    for c in cases:
        per_case[c] = s_checklist_case(a, b, c, compare, skip)
        sa, ma = evidence_spans(llm_rows, c, texts[c])
        sb, mb = evidence_spans(human_rows, c, texts[c])
        missing += ma + mb
        cover[c] = coverage_agreement(texts[c], sa, sb)
    no_llm = sorted(human_cases - set(cases))

    def mean_of(d):
        return lambda pick: float(np.mean([d[c] for c in pick if d[c] is not None and not math.isnan(d[c])]))

    s = Stat(float(np.mean([v for v in per_case.values() if not math.isnan(v)])), "ok", len(cases),
             detail=f"judge={judge}; human cases without extractor output (left out): {len(no_llm)}; "
                    f"unusable item answers left out: {len(skip)}", extra={"per_case": per_case})
    cv = Stat(100 * float(np.mean([v for v in cover.values() if v is not None])), "ok", len(cases),
              detail=f"evidence strings not found in the summary: {missing}", extra={"per_case": cover})
    s = with_interval(s, cases, mean_of(per_case), n_resamples=n_resamples, seed=seed)
    cv = with_interval(cv, cases, lambda pick: 100 * mean_of(cover)(pick), n_resamples=n_resamples, seed=seed)
    return {"S_checklist": s, "Coverage": cv}


# --- the app's export ---------------------------------------------------------------------------------

def read_export(path: str | Path) -> pd.DataFrame:
    """The app's JSONL export; every row must carry the export's columns."""
    rows = []
    with open(path, encoding="utf-8") as fh:
        for n, line in enumerate(fh, 1):
            if not line.strip():
                continue
            try:
                rows.append(json.loads(line))
            except json.JSONDecodeError as err:
                raise ValueError(f"{path}: line {n} is not JSON: {err}") from None
    df = pd.DataFrame(rows)
    needed = {"task", "kind", "case_id", "annotator", "role", "field", "value", "revision", "current"}
    if rows and needed - set(df.columns):
        raise ValueError(f"{path}: missing columns {sorted(needed - set(df.columns))}")
    return df


def current(export: pd.DataFrame, role: str = "annotate") -> pd.DataFrame:
    return export[(export["current"]) & (export["role"] == role)] if len(export) else export


def extraction_rows(export: pd.DataFrame, role: str = "annotate") -> pd.DataFrame:
    """Value rows (annotator, case_id, item, index, value, evidence, evidence_spans) of extraction reviews."""
    out = []
    for r in current(export, role).itertuples(index=False):
        if r.kind != "extraction" or not r.field.startswith("item:"):
            continue
        for i, v in enumerate(r.value, 1):
            spans = [(e["start"], e["end"]) for e in v["evidence"] if e["start"] is not None]
            out.append({"annotator": r.annotator, "task": r.task, "case_id": str(r.case_id),
                        "item": r.field[5:], "index": i, "value": v["value"],
                        "evidence": [e["text"] for e in v["evidence"]], "evidence_spans": spans})
    return pd.DataFrame(out, columns=["annotator", "task", "case_id", "item", "index", "value", "evidence",
                                      "evidence_spans"])


def comparison_answers(export: pd.DataFrame, role: str = "annotate") -> pd.DataFrame:
    """task, annotator, mode, label (judge vocabulary) or pairs."""
    out = []
    for r in current(export, role).itertuples(index=False):
        if r.kind != "comparison":
            continue
        if r.field == "label":
            out.append({"task": r.task, "annotator": r.annotator, "mode": "single",
                        "label": LABEL_TO_RELATION[r.value], "pairs": None})
        elif r.field == "matches":
            out.append({"task": r.task, "annotator": r.annotator, "mode": "multi", "label": None,
                        "pairs": [tuple(p) for p in r.value]})
    return pd.DataFrame(out, columns=["task", "annotator", "mode", "label", "pairs"])


def style_ratings(export: pd.DataFrame, role: str = "annotate") -> pd.DataFrame:
    out = [{"task": r.task, "annotator": r.annotator, "aspect": r.field[7:], "rating": int(r.value)}
           for r in current(export, role).itertuples(index=False)
           if r.kind == "style" and r.field.startswith("aspect:")]
    return pd.DataFrame(out, columns=["task", "annotator", "aspect", "rating"])


# --- comparison and style against people ---------------------------------------------------------------

def pair_f1(pred: Iterable, gold: Iterable) -> float | None:
    """F1 of predicted against gold matching pairs; None when both are empty (nothing to match)."""
    p, g = {tuple(x) for x in pred}, {tuple(x) for x in gold}
    if not p and not g:
        return None
    tp = len(p & g)
    return 0.0 if tp == 0 else 2 * tp / (len(p) + len(g))


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


def comparison_metaeval(llm: pd.DataFrame, human: pd.DataFrame, n_resamples: int = 1000, seed: int = 0,
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
        pairs = list(zip(y_true, y_pred))
        acc = with_interval(acc, pairs, lambda pick: float(np.mean([x == y for x, y in pick])),
                            n_resamples=n_resamples, seed=seed)
    else:
        acc = _bad("empty")
    multi = merged[merged["mode"] == "multi"]
    f1s = [pair_f1(p, g) for p, g in zip(multi["pairs_llm"], multi["pairs_human"])]
    f1s = [f for f in f1s if f is not None]
    if f1s:
        f1 = with_interval(Stat(float(np.mean(f1s)), "ok", len(f1s),
                                detail=f"pairs where neither side matched anything: {len(multi) - len(f1s)}"),
                           f1s, lambda pick: float(np.mean(pick)), n_resamples=n_resamples, seed=seed)
    else:
        f1 = _bad("empty" if not len(multi) else "no_pairs", len(multi))
    return {"Single": acc, "Multi": f1}


def style_metaeval(llm: pd.DataFrame, human: pd.DataFrame, n_resamples: int = 1000, seed: int = 0) -> dict:
    """Cohen's kappa (unweighted and quadratic) between the LLM's ratings and the human median, pooled over
    (task, aspect); the human median of an even number of ratings is rounded half up."""
    med = (human.groupby(["task", "aspect"])["rating"].apply(lambda r: int(math.floor(median_rating(r) + 0.5)))
           .rename("human").reset_index())
    m = med.merge(llm.rename(columns={"rating": "llm"}), on=["task", "aspect"])
    if m.empty:
        return {"Style kappa": _bad("empty"), "Style kappa (quadratic)": _bad("empty")}
    out = {}
    tasks = sorted(m["task"].unique())
    for name, w in (("Style kappa", None), ("Style kappa (quadratic)", "quadratic")):
        stat = cohen_kappa(list(m["human"]), list(m["llm"]), weights=w, labels=[1, 2, 3, 4, 5])

        def statistic(pick, w=w):
            sub = pd.concat([m[m["task"] == t] for t in pick])
            k = cohen_kappa(list(sub["human"]), list(sub["llm"]), weights=w, labels=[1, 2, 3, 4, 5])
            return k.value

        out[name] = with_interval(stat, tasks, statistic, n_resamples=n_resamples, seed=seed)
    return out


# --- inter-annotator agreement (Appendix D) -------------------------------------------------------------

def inter_annotator(export: pd.DataFrame, texts: dict[str, str] | None = None, compare: Callable = exact_compare,
                    level: str = "ordinal") -> dict[str, Stat]:
    """Average pairwise S_checklist (extraction), Fleiss' kappa (single-value labels), average pairwise
    matching F1 (multi-value), Krippendorff's alpha per style aspect and their mean, and the two-agree share."""
    out: dict[str, Stat] = {}
    ext = extraction_rows(export)
    pair_scores = []
    for case, g in ext.groupby("case_id"):
        who = sorted(g["annotator"].unique())
        for x, y in itertools.combinations(who, 2):
            a, b = item_lists(g[g["annotator"] == x]), item_lists(g[g["annotator"] == y])
            pair_scores.append(float(np.mean([s_checklist_case(a, b, case, compare), s_checklist_case(b, a, case, compare)])))
    out["extraction pairwise S_checklist"] = (Stat(float(np.mean(pair_scores)), "ok", len(pair_scores),
                                                   detail="judge=exact-match" if compare is exact_compare else "")
                                              if pair_scores else _bad("one_rater", ext["case_id"].nunique()))
    comp = comparison_answers(export)
    single = comp[comp["mode"] == "single"].pivot_table(index="task", columns="annotator", values="label",
                                                         aggfunc="first")
    out["single-value Fleiss kappa"] = fleiss_kappa(single, categories=list(RELATIONS)) if len(single) else _bad("empty")
    f1s = []
    for _task, g in comp[comp["mode"] == "multi"].groupby("task"):
        for x, y in itertools.combinations(list(g["pairs"]), 2):
            f = pair_f1(x, y)
            if f is not None:
                f1s.append(f)
    out["multi-value pairwise F1"] = Stat(float(np.mean(f1s)), "ok", len(f1s)) if f1s else _bad("one_rater")
    st = style_ratings(export)
    alphas = []
    for aspect in STYLE_ASPECTS:
        sub = st[st["aspect"] == aspect]
        if sub.empty:
            out[f"style alpha {aspect}"] = _bad("empty")
            continue
        table = sub.pivot_table(index="annotator", columns="task", values="rating", aggfunc="first")
        out[f"style alpha {aspect}"] = a = krippendorff_alpha(table, level)
        if a.ok:
            alphas.append(a.value)
    out["style alpha (mean of aspects)"] = (Stat(float(np.mean(alphas)), "ok", len(alphas), detail=f"level={level}")
                                           if alphas else _bad("no_variance" if len(st) else "empty"))
    wide = st.pivot_table(index=["task", "aspect"], columns="annotator", values="rating", aggfunc="first")
    rows = [sorted(r.dropna().tolist()) for _, r in wide.iterrows()] if len(wide) else []
    rows = [r for r in rows if len(r) == 3]
    out["style two-agree share"] = two_agree(rows) if rows else _bad("unequal_raters" if len(wide) else "empty")
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


# --- inputs from the release and the app ----------------------------------------------------------------

def human_extraction(release) -> tuple[pd.DataFrame, dict[str, str]]:
    """``human.json``'s value rows (with evidence offsets) and the 40 human summaries they index into."""
    cv = release.checklist_values
    rows = cv[(cv["origin"] == "summary") & (cv["method"] == "human")]
    s = release.summaries
    s = s[(s["model"] == "human") & (s["set"] == "human_eval")].drop_duplicates("case_id")
    return rows, dict(zip(s["case_id"].astype(str), s["text"]))


def release_value_pairs(release, methods=("end_to_end", "chunk_by_chunk")) -> list[dict]:
    """Model/reference value pairs of the released document-extraction judgments: the model's extracted
    values (A) against ``human.json`` (B), with the released judge's answer."""
    cv = release.checklist_values
    ref = cv[(cv["origin"] == "summary") & (cv["method"] == "human")]
    ref_lists = {k: list(g.sort_values("index")["value"]) for k, g in ref.groupby(["case_id", "item"])}
    doc = cv[(cv["origin"] == "document") & cv["method"].isin(methods)]
    model_lists = {k: list(g.sort_values("index")["value"])
                   for k, g in doc.groupby(["method", "model", "configuration", "case_id", "item"])}
    j = release.judgments
    j = j[(j["task"] == "document") & j["method"].isin(methods) & (j["orientation"] == "model_reference")
          & j["kind"].isin(["relation", "matching"])]
    pairs = []
    for r in j.itertuples(index=False):
        a = model_lists.get((r.method, r.model, r.configuration, r.case_id, r.item))
        b = ref_lists.get((r.case_id, r.item))
        if not a or not b:
            continue
        if (r.kind == "relation") != (len(a) == 1 and len(b) == 1):
            continue  # the released lists and the judgment disagree on the pair's shape: not a clean pair
        judge = ({"relation": r.relation} if r.kind == "relation"
                 else {"pairs": [list(p) for p in r.pairs]})
        pairs.append({"case_id": r.case_id, "item": r.item, "a": a, "b": b,
                      "origin": f"{r.method}/{r.model}", "judge": judge})
    return pairs

def sample_pairs(pairs: list[dict], n_single: int = 50, n_multi: int = 100, seed: int = 0) -> list[dict]:
    """The paper's mix: ``n_single`` single-value and ``n_multi`` multi-value pairs, drawn with a seed."""
    rng = random.Random(seed)
    single = [p for p in pairs if len(p["a"]) == 1 and len(p["b"]) == 1]
    multi = [p for p in pairs if not (len(p["a"]) == 1 and len(p["b"]) == 1)]
    return rng.sample(single, min(n_single, len(single))) + rng.sample(multi, min(n_multi, len(multi)))



def read_value_rows(path: str | Path) -> pd.DataFrame:
    """Value rows (case_id, item, index, value, evidence) from CSV, JSONL or Parquet; evidence as a list."""
    p = Path(path)
    if p.suffix == ".csv":
        df = pd.read_csv(p, dtype={"case_id": str})
        df["evidence"] = [as_list(e) for e in df["evidence"]]
        if "evidence_spans" in df.columns:
            df["evidence_spans"] = [as_list(e) for e in df["evidence_spans"]]
    elif p.suffix == ".parquet":
        df = pd.read_parquet(p)
    else:
        df = pd.read_json(p, lines=True, dtype={"case_id": str})
    missing = {"case_id", "item", "index", "value", "evidence"} - set(df.columns)
    if missing:
        raise ValueError(f"{path}: missing columns {sorted(missing)}")
    df["case_id"] = df["case_id"].astype(str)
    if "subject" in df.columns:  # the pipeline's values table holds every summary's extraction: keep the human ones
        df = df[df["subject"] == "human"]
    return df


def read_tasks(path: str | Path) -> pd.DataFrame:
    """The app's task export (``gavel annotate export-tasks``): task, kind, case_id, source, payload."""
    return pd.read_json(path, lines=True, dtype={"case_id": str})


def judge_answers(tasks: pd.DataFrame) -> pd.DataFrame:
    """The pipeline's own answers stored with the comparison tasks, as ``task, label, pairs``."""
    out = []
    for r in tasks[tasks["kind"] == "comparison"].itertuples(index=False):
        judge = r.payload.get("judge") or {}
        if "relation" in judge:
            out.append({"task": r.task, "label": judge["relation"], "pairs": None})
        elif "pairs" in judge:
            out.append({"task": r.task, "label": None, "pairs": [tuple(p) for p in judge["pairs"]]})
    return pd.DataFrame(out, columns=["task", "label", "pairs"])


def exact_answers(tasks: pd.DataFrame) -> pd.DataFrame:
    """The exact-match stand-in's answers to the same comparison tasks (a baseline, not a judge)."""
    out = []
    for r in tasks[tasks["kind"] == "comparison"].itertuples(index=False):
        ans = exact_compare(r.payload["a"], r.payload["b"])
        single = r.payload["mode"] == "single"
        out.append({"task": r.task, "label": ans.get("relation") if single else None,
                    "pairs": None if single else [tuple(p) for p in ans["pairs"]]})
    return pd.DataFrame(out, columns=["task", "label", "pairs"])


def as_reference(answers: pd.DataFrame, tasks: pd.DataFrame) -> pd.DataFrame:
    """LLM-style answers turned into the aggregated-human shape, to compare two automatic raters."""
    mode = dict(zip(tasks["task"], [p["mode"] for p in tasks["payload"]]))
    df = answers.assign(mode=answers["task"].map(mode), status="ok", annotators=1)
    return df[["task", "mode", "label", "pairs", "status", "annotators"]]


def evaluate(model: str, *, extraction: pd.DataFrame | None = None, unusable: Iterable = (),
             human_rows: pd.DataFrame | None = None,
             texts: dict[str, str] | None = None, export: pd.DataFrame | None = None,
             comparisons: pd.DataFrame | None = None, style: pd.DataFrame | None = None,
             compare: Callable = exact_compare, judge: str = "exact-match",
             n_resamples: int = 1000, seed: int = 0) -> dict[str, Stat]:
    """One model's Table 1 row: whatever inputs are given are evaluated, the rest stays 'not run'.
    ``extraction``: the model's value rows for the human summaries (against ``human_rows``, default the
    annotators' reviews in ``export``); ``comparisons``: its answers to the comparison tasks (against the
    annotators' majority); ``style``: its ratings (``task, aspect, rating``) against the annotators' median."""
    out: dict[str, Stat] = {}
    if extraction is not None:
        ref = human_rows if human_rows is not None else extraction_rows(export)
        out.update(extraction_metaeval(extraction, ref, texts or {}, compare, judge, n_resamples, seed, unusable))
    if comparisons is not None and export is not None:
        human = aggregate_comparisons(comparison_answers(export))
        out.update(comparison_metaeval(comparisons, human, n_resamples, seed))
    if style is not None and export is not None:
        s = style_metaeval(style, style_ratings(export), n_resamples, seed)
        out["Style kappa"] = s["Style kappa"]
        out["Style kappa (quadratic)"] = s["Style kappa (quadratic)"]
    return out


def plot(table: pd.DataFrame, confusion: pd.DataFrame | None = None, title: str = ""):
    """Table 1 as a figure, with a confusion matrix beside it when given."""
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2 if confusion is not None else 1, figsize=(13 if confusion is not None else 8, 3.6),
                             gridspec_kw={"width_ratios": [1.4, 1]} if confusion is not None else None)
    axes = np.atleast_1d(axes)
    ax = axes[0]
    ax.axis("off")
    cells = [[str(v) for v in row] for row in table.to_numpy()]
    tab = ax.table(cellText=cells, rowLabels=list(table.index), colLabels=list(table.columns), loc="center")
    tab.scale(1, 1.5)
    ax.set_title(title or "Meta-evaluation (Table 1 shape)")
    if confusion is not None:
        ax = axes[1]
        ax.imshow(confusion.to_numpy(), cmap="Blues")
        ax.set_xticks(range(len(confusion.columns)), confusion.columns, rotation=30, ha="right", fontsize=8)
        ax.set_yticks(range(len(confusion.index)), confusion.index, fontsize=8)
        for (i, j), v in np.ndenumerate(confusion.to_numpy()):
            ax.text(j, i, str(v), ha="center", va="center")
        ax.set_title("single-value pairs: confusion")
    fig.tight_layout()
    return fig


def comparison_tasks_from_release(release, n_single: int = 50, n_multi: int = 100, seed: int = 0) -> pd.DataFrame:
    """The comparison tasks the app loads from the release (same sample, same keys), as a task table."""
    rows = []
    for p in sample_pairs(release_value_pairs(release), n_single, n_multi, seed):
        single = len(p["a"]) == 1 and len(p["b"]) == 1
        rows.append({"task": f"comparison:{p['origin']}:{p['case_id']}:{p['item']}", "kind": "comparison",
                     "case_id": str(p["case_id"]), "source": "evaluation_documents_checklist",
                     "payload": {"case_id": str(p["case_id"]), "item": p["item"], "origin": p["origin"],
                                 "mode": "single" if single else "multi", "a": p["a"], "b": p["b"],
                                 "judge": p.get("judge")}})
    return pd.DataFrame(rows, columns=["task", "kind", "case_id", "source", "payload"])


def run(release, *, export_path=None, tasks_path=None, extraction_path=None, extractor: str = "extractor",
        provider=None, cases: int | None = None, items=None, max_tokens: int | None = None,
        n_resamples: int = 1000, seed: int = 0) -> dict:
    """Everything the meta-evaluation notebook shows.

    * ``table``: Table 1 rows. The extractor's row (``extraction_path``: its value rows for the 40 human
      summaries) is scored against ``human.json``; its comparison and style cells need the app's export and
      the pipeline's answers, else they read 'not run'.
    * With ``provider`` (a gavel.llm provider) the extractor is run first on the human summaries (the first
      ``cases`` of them, or all 40), its rows written to data/interim/metaeval/<extractor>/values.jsonl,
      scored on the cases it covered, and its Table 1 row written to data/interim/metaeval/table1.csv.
      ``items`` (gavel.core.items.Item) limits the run and the scoring to those items (a quick look with a slow
      model); ``max_tokens`` caps each answer.
    * ``iaa``: Appendix D inter-annotator agreement from the export (None without one).
    * ``judge_vs_exact``: real release data, no people: the released judge's answers on the sampled value
      pairs against the exact-match baseline (how often a string comparison would have sufficed).
    """
    human_rows, texts = human_extraction(release)
    export = read_export(export_path) if export_path else None
    tasks = read_tasks(tasks_path) if tasks_path else comparison_tasks_from_release(release, seed=seed)
    results: dict[str, dict[str, Stat]] = {}
    status = None
    if provider is not None:
        chosen = dict(sorted(texts.items())[:cases] if cases else sorted(texts.items()))
        values, status = extract_human_summaries(chosen, provider, extractor, items=items, max_tokens=max_tokens)
        extraction_path = METAEVAL_DIR / extractor / "values.jsonl"
        extraction_path.parent.mkdir(parents=True, exist_ok=True)
        values.to_json(extraction_path, orient="records", lines=True)
        texts_scored, human_scored = chosen, human_rows[human_rows["case_id"].astype(str).isin(chosen)]
        if items:
            human_scored = human_scored[human_scored["item"].isin([it.key for it in items])]
    else:
        texts_scored, human_scored = texts, human_rows
    if extraction_path:
        rows = read_value_rows(extraction_path)
        unusable = ([] if status is None else
                    list(status.loc[status["status"] != "ok", ["case_id", "item"]].itertuples(index=False)))
        results[extractor] = evaluate(extractor, extraction=rows, unusable=unusable, human_rows=human_scored,
                                      texts=texts_scored, n_resamples=n_resamples, seed=seed)
    if export is not None:
        results["released judge"] = evaluate("released judge", export=export, comparisons=judge_answers(tasks),
                                             n_resamples=n_resamples, seed=seed)
    judge_vs_exact = comparison_metaeval(exact_answers(tasks), as_reference(judge_answers(tasks), tasks),
                                         n_resamples=n_resamples, seed=seed, names=("judge", "exact"))
    table = table1(results) if results else table1({extractor: {}})
    if provider is not None:
        write_table1_row(table.loc[[extractor]])
    return {"table": table, "results": results, "extract_status": status,
            "iaa": inter_annotator(export, texts) if export is not None else None,
            "judge_vs_exact": judge_vs_exact, "n_tasks": len(tasks)}


# --- the extractor run (section 2.3: an LLM extracts checklists from the 40 human summaries) -------------

METAEVAL_DIR = config.INTERIM_DIR / "metaeval"


def extract_human_summaries(texts: dict[str, str], provider, extractor: str, workdir: str | Path | None = None,
                            items=None, mode: str = "online", max_tokens: int | None = None
                            ) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Run the extract stage (gavel.ref.stages.extract) of ``extractor`` over the human summaries ``texts``
    through ``provider`` with the resumable stage runner; returns (value rows, one status row per
    summary x item). Unusable answers stay in the status rows with their reason; their items hold no value
    rows and are counted, not read as empty."""
    from gavel.llm.runner import StageRunner
    from gavel.ref.stages import extract

    workdir = Path(workdir or METAEVAL_DIR / extractor)
    summaries = [extract.Summary("human", c, t) for c, t in sorted(texts.items())]
    requests = extract.build_requests(summaries, extractor, items or gitems.ITEMS, max_tokens=max_tokens)
    report = StageRunner("extract", provider, workdir, progress=False).run(requests, mode=mode)
    rows, status = [], []
    for req in requests:
        r, s = extract.parse_response(req, report.responses.get(req.custom_id), texts[req.case_id])
        rows += r
        status.append(s)
    values = pd.DataFrame(rows, columns=["subject", "case_id", "item", "index", "value", "evidence",
                                         "evidence_spans", "evidence_grounding"])
    return values, pd.DataFrame(status)


def write_table1_row(table: pd.DataFrame, path: str | Path | None = None) -> Path:
    """Add (or replace) the table's rows in the Table 1 file (default data/interim/metaeval/table1.csv)."""
    path = Path(path or METAEVAL_DIR / "table1.csv")
    path.parent.mkdir(parents=True, exist_ok=True)
    old = pd.read_csv(path, index_col="model") if path.exists() else pd.DataFrame(columns=TABLE1_COLUMNS)
    merged = pd.concat([old.drop(index=[m for m in table.index if m in old.index]), table])
    merged.index.name = "model"
    merged.to_csv(path)
    return path
