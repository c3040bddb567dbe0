"""Residual stage: what a summary says beyond the 26 checklist items.

1. **Uncovered spans** (deterministic, no LLM; paper §2.1; ``gavel.ref.grounding.uncovered_spans``): stage one
   matches each extracted VALUE alone against the summary (exactly or after normalisation) and covers just
   those words, so a long supporting sentence does not cover the other facts it carries; stage two takes
   the values stage one could not place (paraphrases) and covers their EVIDENCE snippets (exact,
   normalised or fuzzy). What stays uncovered, in runs of at least ``grounding.MIN_SPAN_WORDS`` words, are
   the residual spans; r = residual characters / summary characters.
2. **Facts**: an LLM turns the numbered residual spans into atomic facts (``build_requests`` /
   ``parse_response``).
3. **Matching**: the model's facts against the reference's by the compare stage's list matching
   (pseudo-item ``compare.RESIDUAL_ITEM``) -> F1 -> S_residual.

r is reported both ways the paper uses it: per summary (each model's own residual share, as in §3.1) and on
the reference summary (as Eq. 2 defines, and as the score stage weights S_GAVEL-REF).
"""

from __future__ import annotations

from gavel.answers import Unusable, read, schemas
from gavel.llm.records import Request, Response
from gavel.ref import prompts, scoring
from gavel.ref.grounding import MIN_SPAN_WORDS, uncovered_spans  # noqa: F401  (the deterministic step lives with grounding)

STAGE = "residual"
SCHEMA = schemas.PLAIN["residual"]  # the paper's; a model may get the bounded form (schemas.for_model)


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
                           subject=subject, schema=schemas.for_model("residual", extractor) if structured else None))
    return out


def parse_response(request: Request, response: Response | None, n_spans: int) -> tuple[list[dict], dict]:
    """(fact rows, status row) from ``gavel.answers.read("residual_facts", ...)``; span indices outside
    1..n_spans and entries without a fact are dropped and noted in ``detail``."""
    ident = {"subject": request.subject, "case_id": request.case_id}
    if response is None or not response.ok:
        return [], {**ident, "status": "failed", "detail": (response.error if response else "") or "", "facts": None}
    try:
        reading = read("residual_facts", response.text, response.finish_reason, n_spans=n_spans)
    except Unusable as err:
        return [], {**ident, "status": err.reason, "detail": err.detail, "facts": None}
    rows = [{**ident, "index": n, "fact": f["fact"], "evidence_spans": f["evidence_spans"]}
            for n, f in enumerate(reading["extracted"], 1)]
    notes = [f"{d['field']} {d['value']!r}: {d['why'].replace('_', ' ')}"
             + (f" (spans are 1..{n_spans})" if d["why"] == "out_of_range" else "") for d in reading["dropped"]]
    return rows, {**ident, "status": "ok", "detail": "; ".join(notes), "facts": len(rows)}
