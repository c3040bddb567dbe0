"""Pointwise metric, step 2: is a candidate point the same point as a reference point? (seed 003, 5.2.3)

The judge sees the whole reference summary as context, both points with their neighbours, and the notion
of "the same point" (A.4, in our words); it answers ``full``, ``partial`` or ``none`` after a one-sentence
explanation. Only pre-selected pairs are asked (gavel.metrics.pointwise.preselect: the top-k candidates of each
reference point by embedding cosine).
"""

from __future__ import annotations

from gavel.answers import Unusable, read_object
from gavel.llm.records import Request, Response
from gavel.ref import prompts

STAGE = "pointwise_match"
LABELS = ("full", "partial", "none")
SCHEMA = {"name": "point_match", "schema": {
    "type": "object",
    "properties": {"explanation": {"type": "string"}, "match": {"type": "string", "enum": list(LABELS)}},
    "required": ["explanation", "match"], "additionalProperties": False}}


def _context(points: list[str], i: int) -> str:
    before = points[i - 1] if i > 0 else "(none: first point)"
    after = points[i + 1] if i + 1 < len(points) else "(none: last point)"
    return f"before: {before}\nafter: {after}"


def build_requests(subject: str, case_id: str, reference: str, reference_points: list[str],
                   candidate_points: list[str], pairs: list[tuple[int, int]], model: str,
                   max_tokens: int | None = None, structured: bool = True) -> list[tuple[Request, dict]]:
    """One request per (reference index, candidate index) pair -> jobs (request, meta)."""
    jobs = []
    for r, c in pairs:
        messages = prompts.render_messages(
            STAGE, reference=reference, reference_context=_context(reference_points, r),
            reference_point=reference_points[r], candidate_context=_context(candidate_points, c),
            candidate_point=candidate_points[c])
        req = Request(stage=STAGE, model=model, messages=messages,
                      params={"max_tokens": max_tokens} if max_tokens else {}, case_id=case_id,
                      item=f"r{r}-c{c}", subject=subject, schema=SCHEMA if structured else None)
        jobs.append((req, {"subject": subject, "case_id": case_id, "reference_index": r, "candidate_index": c}))
    return jobs


def parse_response(meta: dict, response: Response | None) -> dict:
    """The label (full / partial / none) with its explanation, or why there is none."""
    row = {**meta, "match": None, "explanation": "", "status": "ok", "detail": "", "problems": ""}
    if response is None or not response.ok:
        return {**row, "status": "failed", "detail": (response.error if response else "no response") or ""}
    try:
        value = read_object(response.text, response.finish_reason, keys=("match",), schema=SCHEMA["schema"])
    except Unusable as err:
        return {**row, "status": err.reason, "detail": err.detail}
    return {**row, "match": value["match"], "explanation": value["explanation"]}
