"""Checklists against people: S_checklist between two extractions, evidence coverage agreement, the
extractor's Table 1 columns."""

from __future__ import annotations

import functools
import json
import math
import re
from collections.abc import Callable, Iterable, Sequence

import numpy as np
import pandas as pd

from gavel.core import items as gitems
from gavel.core.stats import BOOTSTRAP_RESAMPLES, Stat, mean_draws, unavailable, with_draws
from gavel.ref import scoring
from gavel.ref.grounding import locate

# --- checklists ---------------------------------------------------------------------------------------

@functools.lru_cache(maxsize=1 << 16)
def _normalised(value: str) -> str:
    return _NON_WORD.sub(" ", value.lower()).strip()


_NON_WORD = re.compile(r"[\W_]+")


def normalise(value: str) -> str:
    return _normalised(str(value))


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
    keys: dict = {}
    for _index, case, item, value in sorted(zip(rows["index"], rows["case_id"], rows["item"], rows["value"]),
                                            key=lambda r: r[0]):
        key = keys.get(item) or keys.setdefault(item, gitems.item(item).key)
        out.setdefault((str(case), key), []).append(str(value))
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
        if not va and not vb:
            continue  # not applicable (scoring.item_score: None)
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
    starts = np.array([w[0] for w in words])
    ends = np.array([w[1] for w in words])

    def covered(spans) -> np.ndarray:
        # linear in the text and the spans: a word is covered when a span starts before its end and ends
        # after its start; marks per character position, summed up to each word's start and end
        n = len(text) + 2
        begin, finish = np.zeros(n, dtype=np.int64), np.zeros(n, dtype=np.int64)
        odd = np.zeros(len(words), dtype=bool)
        for s, e in spans:
            if e <= s:  # an empty or reversed span: the overlap rule word by word
                odd |= (s < ends) & (e > starts)
                continue
            begin[min(max(int(s), 0), n - 1)] += 1
            finish[min(max(int(e), 0), n - 1)] += 1
        started = np.cumsum(begin)  # started[p]: spans with start <= p
        ended = np.cumsum(finish)  # ended[p]: spans with end <= p
        # spans with start < we and end > ws = (start <= we - 1) - (those with end <= ws), when start < end
        before_end = started[np.clip(ends - 1, 0, n - 1)]
        ended_by_start = ended[np.clip(starts, 0, n - 1)]
        return ((before_end - ended_by_start) > 0) | odd

    ca, cb = covered(spans_a), covered(spans_b)
    return float(np.mean(ca == cb))


def extraction_metaeval(llm_rows: pd.DataFrame, human_rows: pd.DataFrame, texts: dict[str, str],
                        compare: Callable = exact_compare, judge: str = "exact-match",
                        n_resamples: int = BOOTSTRAP_RESAMPLES, seed: int = 0, unusable: Iterable = ()) -> dict[str, Stat]:
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
        return {"S_checklist": unavailable("empty"), "Coverage": unavailable("empty")}
    a, b = item_lists(llm_rows), item_lists(human_rows)
    per_case, cover, missing = {}, {}, 0
    for c in cases:
        per_case[c] = s_checklist_case(a, b, c, compare, skip)
        sa, ma = evidence_spans(llm_rows, c, texts[c])
        sb, mb = evidence_spans(human_rows, c, texts[c])
        missing += ma + mb
        cover[c] = coverage_agreement(texts[c], sa, sb)
    no_llm = sorted(human_cases - set(cases))


    s = Stat(float(np.mean([v for v in per_case.values() if not math.isnan(v)])), "ok", len(cases),
             detail=f"judge={judge}; human cases without extractor output (left out): {len(no_llm)}; "
                    f"unusable item answers left out: {len(skip)}", extra={"per_case": per_case})
    cv = Stat(100 * float(np.mean([v for v in cover.values() if v is not None])), "ok", len(cases),
              detail=f"evidence strings not found in the summary: {missing}", extra={"per_case": cover})
    s = with_draws(s, len(cases), mean_draws([per_case[c] for c in cases]), n_resamples=n_resamples, seed=seed)
    cv = with_draws(cv, len(cases), lambda counts: 100 * mean_draws([cover[c] for c in cases])(counts),
                    n_resamples=n_resamples, seed=seed)
    return {"S_checklist": s, "Coverage": cv}


