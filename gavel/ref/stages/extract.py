"""Extract stage: one summary x one checklist item -> values with verbatim evidence, grounded in the summary.

``build_requests`` makes 26 requests per summary (one per item). The summary is its own user message before
the item's, so a provider's prompt cache serves that shared prefix to the other 25 requests (Anthropic gets
an explicit cache breakpoint after it). ``parse_response`` turns
one answer into value rows, reading the answer with ``gavel.answers.read("extract", ...)`` and locating each evidence snippet in the summary with ``gavel.ref.grounding.locate``.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import partial

from gavel.answers import Unusable, read, schemas
from gavel.core import tokens
from gavel.core.items import ITEMS, Item
from gavel.llm.estimate import Planned
from gavel.llm.records import Request, Response
from gavel.ref import prompts
from gavel.ref.grounding import locate, normalize

STAGE = "extract"
TEMPLATE = "extract"
SCHEMA = schemas.PLAIN["extract"]  # the paper's; a model may get the bounded form (schemas.for_model)


@dataclass(frozen=True)
class Summary:
    """A summary to evaluate: whose it is (``subject``: a model name or ``human``), its case, its text."""

    subject: str
    case_id: str
    text: str


def build_requests(summaries: list[Summary], extractor: str, items: tuple[Item, ...] = ITEMS,
                   max_tokens: int | None = None, structured: bool = True) -> list[Request]:
    """One request per (summary, item), in summary order so shared prefixes are sent together."""
    return [_request(s, it, extractor, max_tokens, structured) for s in summaries for it in items]


def _request(s: Summary, it: Item, extractor: str, max_tokens: int | None, structured: bool) -> Request:
    messages = prompts.render_messages(TEMPLATE, summary=s.text, item_name=it.name,
                                       item_definition=it.summary_instruction)
    return Request(stage=STAGE, model=extractor, messages=messages,
                   params={"max_tokens": max_tokens} if max_tokens else {}, case_id=s.case_id, item=it.key,
                   subject=s.subject, schema=schemas.for_model("extract", extractor) if structured else None)


def plan_requests(summaries: list[Summary], extractor: str, items: tuple[Item, ...] = ITEMS,
                  max_tokens: int | None = None, structured: bool = True, split=tokens.split):
    """build_requests' requests, one at a time and unrendered (``estimate.Planned``: input tokens, and how
    to build the request): each summary is tokenised once (``split``, e.g. a memo of ``tokens.split``),
    not once per item."""
    for s in summaries:
        text = split(s.text)
        for it in items:
            n = sum(prompts.message_tokens(TEMPLATE, summary=text, item_name=it.name,
                                           item_definition=it.summary_instruction))
            yield Planned(extractor, max_tokens, n, partial(_request, s, it, extractor, max_tokens, structured))


def parse_response(request: Request, response: Response | None, summary_text: str) -> tuple[list[dict], dict]:
    """(value rows, status row) of one answer. A failed, truncated or unusable answer gives no value rows
    and a status row saying why; it is never read as "no values"."""
    ident = {"subject": request.subject, "case_id": request.case_id, "item": request.item}
    if response is None or not response.ok:
        return [], {**ident, "status": "failed", "detail": (response.error if response else "no response") or "",
                    "n_values": None, "problems": ""}
    try:
        reading = read("extract", response.text, response.finish_reason, summary=summary_text)
    except Unusable as err:
        return [], {**ident, "status": err.reason, "detail": err.detail, "n_values": None, "problems": ""}
    norm = normalize(summary_text)
    rows = []
    for n, v in enumerate(reading["extracted"], 1):
        hits = [locate(e, summary_text, normalized_text=norm) for e in v["evidence"]]
        rows.append({**ident, "index": n, "value": v["value"], "evidence": v["evidence"],
                     "evidence_spans": [[h.start, h.end] if h.found else None for h in hits],
                     "evidence_grounding": [h.status for h in hits]})
    notes = [f"{d['field']}: {d['why'].replace('_', ' ')}" for d in reading["dropped"]]
    notes += [f"evidence not verbatim in the summary: {e[:60]!r}" for e in reading.get("ungrounded", [])]
    return rows, {**ident, "status": "ok", "detail": "", "n_values": len(rows), "problems": "; ".join(notes)}
