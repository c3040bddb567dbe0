"""Pointwise metric, step 1: one paragraph of a summary -> its points (seed 003, section 5.1.2 / A.1).

Summaries are split into paragraphs at blank lines (``paragraphs``); each paragraph is one request, so a
summary's points keep their paragraph (the A.3 weights need it).
"""

from __future__ import annotations

import re

from gavel.answers import Unusable, read_object
from gavel.llm.records import Request, Response
from gavel.ref import prompts

STAGE = "pointwise_points"
SCHEMA = {"name": "points", "schema": {
    "type": "object",
    "properties": {"points": {"type": "array", "items": {"type": "string", "minLength": 1}, "minItems": 1}},
    "required": ["points"], "additionalProperties": False}}
_BLANK_LINES = re.compile(r"\n\s*\n")


def paragraphs(text: str) -> list[str]:
    """Paragraphs of a summary: split at blank lines, whitespace-only ones dropped, each stripped."""
    return [p.strip() for p in _BLANK_LINES.split(text or "") if p.strip()]


def build_requests(summaries: list[tuple[str, str, str]], model: str, max_tokens: int | None = None,
                   structured: bool = True) -> list[tuple[Request, dict]]:
    """``summaries``: (subject, case_id, text) -> jobs (request, meta), one per paragraph."""
    jobs = []
    for subject, case_id, text in summaries:
        for i, para in enumerate(paragraphs(text)):
            req = Request(stage=STAGE, model=model, messages=prompts.render_messages(STAGE, paragraph=para),
                          params={"max_tokens": max_tokens} if max_tokens else {}, case_id=case_id,
                          item=f"paragraph-{i}", subject=subject, schema=SCHEMA if structured else None)
            jobs.append((req, {"subject": subject, "case_id": case_id, "paragraph": i, "paragraph_text": para}))
    return jobs


def parse_response(meta: dict, response: Response | None) -> dict:
    """The paragraph's points, or why there are none (status other than ``ok``; never scored)."""
    row = {**meta, "points": None, "status": "ok", "detail": "", "problems": ""}
    if response is None or not response.ok:
        return {**row, "status": "failed", "detail": (response.error if response else "no response") or ""}
    try:
        value = read_object(response.text, response.finish_reason, keys=("points",), schema=SCHEMA["schema"])
    except Unusable as err:
        return {**row, "status": err.reason, "detail": err.detail}
    points = [p.strip() for p in value["points"] if p.strip()]
    if not points:
        return {**row, "status": "empty", "detail": "only blank points"}
    return {**row, "points": points}
