"""Summarize stage: a case's documents -> a summary (the paper's generation setting, §3, App. G).

Documents come in reading order (``gavel.documents`` orders a case as the paper does: chronological,
missing dates last, docket sheets last). When the case does not fit the model's context window minus the
prompt and the output budget, every document is cut from its end in proportion to its length
(``gavel.core.tokens.truncate_proportionally``); what was cut is recorded per document in the request's
``meta`` (``build_requests`` returns it beside each request).
"""

from __future__ import annotations

import re

from gavel.answers import visible_text
from gavel.core.items import load as load_checklist
from gavel.core.tokens import count_tokens, truncate_proportionally
from gavel.llm.records import Request, Response
from gavel.llm.registry import llm_model
from gavel.ref import prompts

STAGE = "summarize"
_MARKER = re.compile(r"\*{0,2}\s*Case Summary\s*:?\s*\*{0,2}\s*:?", re.I)


def checklist_text(checklist=None) -> str:
    return "\n".join(f"{it.number}. {it.name}: {it.summary_instruction}" for it in load_checklist(checklist).items)


def _documents_text(names: list[str], texts: list[str]) -> str:
    return "\n\n".join(f"## Document {i}: {name}\n{text}" for i, (name, text) in enumerate(zip(names, texts), 1))


def case_messages(docs: list[tuple[str, str]]) -> list[dict]:
    """The summarize prompt's messages for a case's documents (name, text) in reading order, as they are."""
    return prompts.render_messages("summarize", checklist=checklist_text(),
                                   documents=_documents_text([n for n, _ in docs], [t for _, t in docs]))


def build_requests(cases: list[tuple[str, list[tuple[str, str]]]], model: str, max_tokens: int | None = None,
                   context_window: int | None = None) -> list[tuple[Request, dict]]:
    """``cases``: (case_id, [(document name, text), ...] in reading order) -> jobs (request, meta); ``meta``
    says how many tokens each document had, kept and lost."""
    m = llm_model(model)
    window = context_window or m.context_window
    out_budget = max_tokens or m.max_output_tokens
    frame = prompts.render_messages("summarize", checklist=checklist_text(), documents="")
    prompt_tokens = sum(count_tokens(x["content"]) for x in frame)
    jobs = []
    for case_id, docs in cases:
        names = [n for n, _ in docs]
        headers = count_tokens(_documents_text(names, [""] * len(names)))
        budget = max(0, window - prompt_tokens - headers - out_budget)
        cut = truncate_proportionally([t for _, t in docs], budget)
        messages = case_messages(list(zip(names, cut.texts)))
        req = Request(stage=STAGE, model=model, messages=messages,
                      params={"max_tokens": out_budget} if max_tokens else {}, case_id=case_id, subject=model)
        jobs.append((req, {"case_id": case_id, "documents": names, "original_tokens": cut.original_tokens,
                           "kept_tokens": cut.kept_tokens, "truncated": cut.truncated, "budget": budget}))
    return jobs


def parse_response(meta: dict, response: Response | None) -> dict:
    """The summary text (what follows "Case Summary:"; the whole answer when the marker is missing, noted),
    or why there is none."""
    row = {"case_id": meta["case_id"], "summary": None, "status": "ok", "detail": "",
           "input_truncated": meta["truncated"]}
    if response is None or not response.ok:
        return {**row, "status": "failed", "detail": (response.error if response else "") or ""}
    if response.truncated:
        return {**row, "status": "truncated", "detail": "cut by the output-token limit"}
    body = visible_text(response.text)
    if not body:
        return {**row, "status": "empty", "detail": "no answer text"}
    found = list(_MARKER.finditer(body))
    if found:
        return {**row, "summary": body[found[-1].end():].strip()}
    return {**row, "summary": body, "detail": "no 'Case Summary:' marker; the whole answer is taken"}
