"""Residual stage: what a summary says beyond the 26 checklist items.

1. **Uncovered spans** (deterministic, no LLM; paper §2.1): the summary is cut into sentences. Stage one
   matches each extracted VALUE against the sentences: a sentence in which a value occurs (exactly, after
   normalisation, or fuzzily: ``gavel.grounding.locate``) is covered. Stage two takes the values stage one
   could not place (paraphrased values) and covers the text of their EVIDENCE snippets only, not whole
   sentences, so a long supporting sentence does not cover facts it merely carries along. What stays
   uncovered, in runs of at least ``MIN_SPAN_WORDS`` words, are the residual spans;
   r = residual characters / summary characters (``scoring.residual_ratio``).
2. **Facts**: an LLM turns the numbered residual spans into atomic facts (``build_requests`` /
   ``parse_response``).
3. **Matching**: the model's facts against the reference's by the compare stage's list matching
   (pseudo-item ``compare.RESIDUAL_ITEM``) -> F1 -> S_residual.

r is reported both ways the paper uses it: per summary (each model's own residual share, as in §3.1) and on
the reference summary (as Eq. 2 defines, and as the score stage weights S_GAVEL-REF).
"""

from __future__ import annotations

import re

from .. import prompts, scoring
from ..grounding import locate, normalize
from ..llm.records import Request, Response
from .answers import AnswerError, json_answer

STAGE = "residual"
MIN_SPAN_WORDS = 3
_SENTENCE = re.compile(r"[^.!?\n]+(?:[.!?]+[\"')\]]*|\n|$)")
SCHEMA = {"name": "residual_facts", "schema": {
    "type": "object",
    "properties": {"reasoning": {"type": "string"}, "extracted": {"type": "array", "items": {
        "type": "object", "properties": {"fact": {"type": "string"},
                                         "evidence_spans": {"type": "array", "items": {"type": "integer"}}},
        "required": ["fact", "evidence_spans"], "additionalProperties": False}}},
    "required": ["reasoning", "extracted"], "additionalProperties": False}}


def sentences(text: str) -> list[tuple[int, int]]:
    return [(m.start(), m.end()) for m in _SENTENCE.finditer(text) if m.group().strip()]


def uncovered_spans(text: str, values: list[tuple[str, list[str]]]) -> list[tuple[int, int]]:
    """Residual spans of ``text`` given its checklist ``values`` as (value, evidence snippets)."""
    covered = bytearray(len(text))
    norm = normalize(text)
    sents = sentences(text)
    unplaced = []
    for value, evidence in values:
        hit = locate(value, text, normalized_text=norm)
        if not hit.found:
            unplaced.append(evidence)
            continue
        for s, e in sents:
            if s <= hit.start < e or s < hit.end <= e or (hit.start <= s and e <= hit.end):
                covered[s:e] = b"\x01" * (e - s)
    for evidence in unplaced:
        for snippet in evidence:
            hit = locate(snippet, text, normalized_text=norm)
            if hit.found:
                covered[hit.start:hit.end] = b"\x01" * (hit.end - hit.start)
    spans, start = [], None
    for i in range(len(text) + 1):
        free = i < len(text) and not covered[i]
        if free and start is None:
            start = i
        elif not free and start is not None:
            spans.append((start, i))
            start = None
    out = []
    for s, e in spans:
        piece = text[s:e]
        lead = len(piece) - len(piece.lstrip())
        trail = len(piece.rstrip())
        if len(re.findall(r"\w+", piece)) >= MIN_SPAN_WORDS:
            out.append((s + lead, s + trail))
    return out


def residual_ratio(text: str, spans: list[tuple[int, int]]) -> float:
    return scoring.residual_ratio(spans, len(text)) if text else float("nan")


def build_requests(items: list[tuple[str, str, list[str]]], extractor: str, max_tokens: int | None = None,
                   structured: bool = True) -> list[Request]:
    """``items``: (subject, case_id, residual span texts). A summary with no residual span gets no request
    (it has no residual facts)."""
    out = []
    for subject, case_id, spans in items:
        if not spans:
            continue
        numbered = "\n".join(f"[{i}] {s}" for i, s in enumerate(spans, 1))
        out.append(Request(stage=STAGE, model=extractor, messages=prompts.render_messages("residual", spans=numbered),
                           params={"max_tokens": max_tokens} if max_tokens else {}, case_id=case_id,
                           subject=subject, schema=SCHEMA if structured else None))
    return out


def parse_response(request: Request, response: Response | None, n_spans: int) -> tuple[list[dict], dict]:
    """(fact rows, status row). Span indices outside 1..n_spans are dropped from the fact and noted."""
    ident = {"subject": request.subject, "case_id": request.case_id}
    if response is None or not response.ok:
        return [], {**ident, "status": "failed", "detail": (response.error if response else "") or "", "facts": None}
    try:
        answer = json_answer(response.text, {"type": "object", "required": ["extracted"],
                                             "properties": {"extracted": {"type": "array"}}},
                             truncated=response.truncated)
    except AnswerError as err:
        return [], {**ident, "status": err.reason, "detail": err.detail, "facts": None}
    rows, notes = [], list(answer.problems)
    for entry in answer.value["extracted"]:
        fact = entry.get("fact") if isinstance(entry, dict) else None
        if not isinstance(fact, str) or not fact.strip():
            notes.append(f"entry without a fact: {str(entry)[:60]!r}")
            continue
        spans = []
        for i in entry.get("evidence_spans") or []:
            if isinstance(i, str) and i.strip().isdigit():
                i = int(i)
            if isinstance(i, int) and not isinstance(i, bool) and 1 <= i <= n_spans:
                spans.append(i)
            else:
                notes.append(f"span index {i!r} out of 1..{n_spans}")
        rows.append({**ident, "index": len(rows) + 1, "fact": fact.strip(), "evidence_spans": spans})
    return rows, {**ident, "status": "ok", "detail": "; ".join(notes), "facts": len(rows)}
