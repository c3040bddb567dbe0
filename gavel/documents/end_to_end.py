"""End-to-end extraction (paper §4.1): all documents of a case, oldest first, in one prompt per item.

``build_requests`` renders ``prompts/doc_end_to_end.txt`` once per item; when the documents do not fit the
model's context (its window minus the prompt and the output reserve), each document loses tokens from its
end in proportion to its length (``gavel.core.tokens.truncate_proportionally``) and the truncation is returned.
``parse`` turns one answer into value rows ``(case_id, item, index, value, evidence)`` (the compare stage's
input), each evidence quote located in the documents (``ground``).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass

from gavel.answers import json_candidates, placeholder_why
from gavel.core import items as gitems
from gavel.core.tokens import count_tokens, truncate_proportionally
from gavel.ref.prompts import render, render_messages

from ..llm.pace import capped
from ..llm.records import Request
from .corpus import Corpus

STAGE = "doc_end_to_end"
PROMPT = "doc_end_to_end"

EVIDENCE_SCHEMA = {"type": "object", "properties": {"text": {"type": "string"},
                                                    "source_document": {"type": "string"},
                                                    "location": {"type": "string"}},
                   "required": ["text", "source_document", "location"], "additionalProperties": False}
VALUE_SCHEMA = {"type": "object", "properties": {"value": {"type": "string"},
                                                 "evidence": {"type": "array", "items": EVIDENCE_SCHEMA}},
                "required": ["value", "evidence"], "additionalProperties": False}
ANSWER_SCHEMA = {"name": "item_extraction",
                 "schema": {"type": "object", "properties": {"reasoning": {"type": "string"},
                                                             "extracted": {"type": "array", "items": VALUE_SCHEMA}},
                            "required": ["reasoning", "extracted"], "additionalProperties": False}}


def document_block(corpus: Corpus, texts: list[str] | None = None) -> str:
    texts = texts if texts is not None else [d.text for d in corpus.documents]
    parts = []
    for i, (d, text) in enumerate(zip(corpus.documents, texts), 1):
        meta = ", ".join(x for x in (d.doc_type, d.date or "") if x)
        parts.append(f"## Document {i}: {d.name}" + (f" ({meta})" if meta else "") + f"\n{text}")
    return "\n\n".join(parts)


@dataclass
class Built:
    requests: list
    truncation: object  # gavel.core.tokens.Truncation
    budget: int


def build_requests(corpus: Corpus, model: str, items=None, context_window: int | None = None,
                   reserve_output: int | None = None, params: dict | None = None, checklist=None) -> Built:
    """One request per item of ``checklist`` (default: all 26 legal ones) or of ``items`` among them.
    ``context_window`` / ``reserve_output`` default to the model's registry settings (the output reserve: the
    request's ``max_tokens``, which a local model's registry entry sets for this stage, else the model's cap)."""
    chosen = list(gitems.load(checklist).select(items))
    params = capped(params, model, STAGE)  # a local model's measured cap for this stage (gavel.llm.pace)
    if context_window is None or reserve_output is None:
        from ..llm.registry import llm_model

        m = llm_model(model)
        context_window = context_window or m.context_window
        if reserve_output is None:
            reserve_output = params.get("max_tokens") or m.max_output_tokens
    longest = max(chosen, key=lambda it: len(it.document_instruction) + len(it.name))
    prompt_tokens = count_tokens(render(PROMPT, documents="", item_name=longest.name,
                                        definition=longest.document_instruction))
    overhead = count_tokens(document_block(corpus, [""] * len(corpus.documents)))
    budget = max(0, context_window - reserve_output - prompt_tokens - overhead)
    trunc = truncate_proportionally([d.text for d in corpus.documents], budget)
    documents = document_block(corpus, trunc.texts)
    requests = [Request(stage=STAGE, model=model, case_id=corpus.case_id, item=it.name,
                        messages=render_messages(PROMPT, documents=documents, item_name=it.name,
                                                 definition=it.document_instruction),
                        params=dict(params), schema=ANSWER_SCHEMA) for it in chosen]
    return Built(requests, trunc, budget)


# ------------------------------------------------------------------ answers
_SPACE = re.compile(r"\s+")


def _norm(text: str) -> str:
    return _SPACE.sub(" ", text).strip().casefold()


def ground(text: str, source_document: str, corpus: Corpus) -> str:
    """Where an evidence quote is: ``exact`` (verbatim in the named document), ``exact_elsewhere`` (verbatim in
    another document), ``normalized`` (found once spacing and case are ignored), or ``not_found``."""
    if not text.strip():
        return "not_found"
    try:
        named = corpus.resolve(source_document) if source_document else None
    except KeyError:
        named = None
    if named is not None and text in named.text:
        return "exact"
    if any(text in d.text for d in corpus.documents):
        return "exact_elsewhere"
    want = _norm(text)
    if any(want in _norm(d.text) for d in corpus.documents):
        return "normalized"
    return "not_found"


def parse_answer(text: str | None) -> tuple[dict | None, str]:
    """The answer object, or ``(None, reason)``."""
    if not text or not text.strip():
        return None, "empty answer"
    for candidate in [text.strip(), *json_candidates(text)]:
        try:
            obj = json.loads(candidate)
        except json.JSONDecodeError:
            continue
        if isinstance(obj, dict) and isinstance(obj.get("extracted"), list):
            return obj, ""
    return None, "no JSON object with an `extracted` list"


def parse(response_text: str | None, corpus: Corpus, item: str) -> tuple[list[dict], list[str]]:
    """Value rows of one answer and the problems found (a value without text or evidence is reported, not
    kept silently)."""
    obj, error = parse_answer(response_text)
    if obj is None:
        return [], [f"case {corpus.case_id}, item {item}: {error}"]
    rows, problems = [], []
    for i, v in enumerate(obj["extracted"], 1):
        if not isinstance(v, dict) or not isinstance(v.get("value"), str) or not v["value"].strip():
            problems.append(f"case {corpus.case_id}, item {item}, value {i}: no value text")
            continue
        if placeholder_why(v["value"]) == "prompt_placeholder":  # an echo of the prompt's format example
            problems.append(f"case {corpus.case_id}, item {item}, value {i}: {v['value'][:80]!r} dropped "
                            f"(an echo of the prompt's placeholder)")
            continue
        evidence = [e for e in v.get("evidence") or [] if isinstance(e, dict) and isinstance(e.get("text"), str)]
        if not evidence:
            problems.append(f"case {corpus.case_id}, item {item}, value {i}: no evidence")
        rows.append({"case_id": corpus.case_id, "item": item, "index": len(rows) + 1, "value": v["value"],
                     "evidence": [e["text"] for e in evidence],
                     "source_documents": [str(e.get("source_document") or "") for e in evidence],
                     "locations": [str(e.get("location") or "") for e in evidence],
                     "grounding": [ground(e["text"], str(e.get("source_document") or ""), corpus) for e in evidence]})
    return rows, problems
