"""Chunk-by-chunk extraction (paper §4.1): every document in 16K-token pieces, oldest document first; for
each item the model sees one piece and the state accumulated so far, and answers with the updated list.

**State merge** (``merge``), explicit because a model often forgets: the new state is the answer's list,
plus every earlier value the answer left out *without* naming it under ``removed``: those are restored.
A value is only dropped when the answer lists it in ``removed`` (with why); that is recorded. Values are
matched by their text with spacing, case and end punctuation ignored. So an earlier value is never lost
because one piece's answer forgot it.

**Running** (``run_chunked``): the items are independent chains; round ``r`` sends piece ``r`` of every item
at once through ``StageRunner.run(..., mode="online")``. Each request depends only on the previous answers,
all cached, so a killed run simply reruns: every finished call is answered from the cache, nothing is paid
twice. Token statistics per case and item follow the release's ``token_stats.by_item_case`` fields.
"""

from __future__ import annotations

import copy
import json
import re
from dataclasses import dataclass, field

from gavel.core import items as gitems
from gavel.core.tokens import count_tokens
from gavel.ref.prompts import render_messages

from ..llm.pace import announce, capped
from ..llm.records import Request
from ..llm.runner import StageRunner
from .chunking import CHUNK_TOKENS, chunk_text
from .corpus import Corpus
from .end_to_end import ANSWER_SCHEMA as _E2E_SCHEMA
from .end_to_end import parse_answer
from .store import PatchError, check_value

STAGE = "doc_chunk"
PROMPT = "doc_chunk"
ANSWER_SCHEMA = copy.deepcopy(_E2E_SCHEMA)
ANSWER_SCHEMA["name"] = "chunk_extraction"
ANSWER_SCHEMA["schema"]["properties"]["removed"] = {
    "type": "array", "items": {"type": "object", "properties": {"value": {"type": "string"}, "why": {"type": "string"}},
                               "required": ["value", "why"], "additionalProperties": False}}


@dataclass
class Piece:
    document: str
    chunk_id: int  # 1-based within the document
    total_chunks: int
    text: str


def piece_tokens(model: str, stage: str = STAGE) -> int:
    """The default piece size on ``model``: the paper's CHUNK_TOKENS where the model's context window holds a
    piece, as much again for the rest of the prompt (instructions, checklist, state) and ``stage``'s output cap;
    else half of what the window leaves after the cap (a small local model's 8,192-token window)."""
    from ..llm.pace import stage_cap
    from ..llm.registry import llm_model

    m = llm_model(model)
    room = m.context_window - (stage_cap(model, stage) or m.max_output_tokens)
    return CHUNK_TOKENS if 2 * CHUNK_TOKENS <= room else max(room // 2, 1)


def pieces(corpus: Corpus, max_tokens: int = CHUNK_TOKENS) -> list[Piece]:
    out = []
    for d in corpus.documents:
        chunks = chunk_text(d.text, max_tokens)
        out += [Piece(d.name, i, len(chunks), c) for i, c in enumerate(chunks, 1)]
    return out


def build_request(corpus: Corpus, item, state: list, piece: Piece, model: str, params: dict | None = None,
                  checklist=None) -> Request:
    it = gitems.load(checklist).item(item)
    current = json.dumps(state, ensure_ascii=False, indent=1) if state else "(nothing yet)"
    messages = render_messages(PROMPT, item_name=it.name, definition=it.document_instruction, current_state=current,
                               document_name=piece.document, chunk_id=piece.chunk_id,
                               total_chunks=piece.total_chunks, document_chunk=piece.text)
    return Request(stage=STAGE, model=model, case_id=corpus.case_id, item=it.name, messages=messages,
                   params=capped(params, model, STAGE), schema=ANSWER_SCHEMA)


_END = re.compile(r"^[\s\W_]+|[\s\W_]+$")


def value_key(value: str) -> str:
    return _END.sub("", re.sub(r"\s+", " ", value)).casefold()


@dataclass
class MergeRecord:
    added: list = field(default_factory=list)
    kept: list = field(default_factory=list)
    restored: list = field(default_factory=list)  # left out by the answer without a reason: kept anyway
    removed: list = field(default_factory=list)  # (value, why): dropped deliberately
    invalid: list = field(default_factory=list)  # answer entries that were not values with evidence


def merge(state: list, answer: dict) -> tuple[list, MergeRecord]:
    rec = MergeRecord()
    new = []
    for i, v in enumerate(answer.get("extracted") or []):
        try:
            new.append(check_value(v, f"extracted.{i}"))
        except PatchError as err:
            rec.invalid.append(str(err))
    removed = {}
    for r in answer.get("removed") or []:
        if isinstance(r, dict) and isinstance(r.get("value"), str):
            removed[value_key(r["value"])] = str(r.get("why") or "")
    by_key = {}
    for v in new:
        by_key.setdefault(value_key(v["value"]), v)
    out, used = [], set()
    for old in state:
        k = value_key(old["value"])
        if k in by_key and k not in used:
            out.append(by_key[k])
            used.add(k)
            rec.kept.append(old["value"])
        elif k in removed:
            rec.removed.append((old["value"], removed[k]))
        elif k not in used:
            out.append(old)
            used.add(k)
            rec.restored.append(old["value"])
    for k, v in by_key.items():
        if k not in used and k not in removed:
            out.append(v)
            used.add(k)
            rec.added.append(v["value"])
    return out, rec


@dataclass
class ChunkedResult:
    states: dict  # item name -> final list of values
    log: list  # per (item, piece): merge record or error
    token_stats: dict  # item -> case -> stats (release field names)

    def value_rows(self, case_id: str) -> list[dict]:
        rows = []
        for item, values in self.states.items():
            for i, v in enumerate(values, 1):
                rows.append({"case_id": case_id, "item": item, "index": i, "value": v["value"],
                             "evidence": [e["text"] for e in v["evidence"]]})
        return rows


def run_chunked(corpus: Corpus, provider, model: str, items=None, workdir=None, max_tokens: int | None = None,
                params: dict | None = None, runner: StageRunner | None = None, checklist=None,
                pace=None) -> ChunkedResult:
    """The chunk-by-chunk method: each item's state carried through the case's pieces of at most
    ``max_tokens`` tokens (None: ``piece_tokens``), for the items of ``checklist`` (default: the 26 legal ones).
    ``pace`` (a ``gavel.llm.pace.Pace`` or a function giving one): each piece's round says its expected
    duration before it sends, and shows a progress bar."""
    max_tokens = max_tokens or piece_tokens(model)
    checklist = gitems.load(checklist)
    chosen = [it.name for it in checklist.select(items)]
    runner = runner or StageRunner(STAGE, provider, workdir, progress=pace is not None, namespace=checklist.cache_tag)
    parts = pieces(corpus, max_tokens)
    states = {it: [] for it in chosen}
    log, stats = [], {it: {"total_input_tokens": 0, "total_output_tokens": 0, "total_prompts": 0,
                           "chunks_in_case": len(parts), "chunks_processed": 0} for it in chosen}
    for n, piece in enumerate(parts, 1):
        requests = {it: build_request(corpus, it, states[it], piece, model, params, checklist) for it in chosen}
        announce(pace, runner, list(requests.values()), f"chunked: piece {n} of {len(parts)} ({piece.document}, "
                 f"chunk {piece.chunk_id} of {piece.total_chunks})")
        report = runner.run(list(requests.values()), mode="online")
        for it, req in requests.items():
            resp = report.responses[req.custom_id]
            s = stats[it]
            s["total_prompts"] += 1
            if not resp.ok:
                log.append({"item": it, "document": piece.document, "chunk": piece.chunk_id,
                            "error": f"call failed: {resp.error}"})
                continue
            s["chunks_processed"] += 1
            s["total_input_tokens"] += resp.input_tokens if resp.input_tokens is not None else \
                sum(count_tokens(m["content"]) for m in req.messages)
            s["total_output_tokens"] += resp.output_tokens if resp.output_tokens is not None else \
                count_tokens(resp.text or "")
            answer, error = (None, "answer cut by the output-token limit") if resp.truncated else \
                parse_answer(resp.text)
            if answer is None:
                log.append({"item": it, "document": piece.document, "chunk": piece.chunk_id, "error": error})
                continue
            states[it], rec = merge(states[it], answer)
            log.append({"item": it, "document": piece.document, "chunk": piece.chunk_id, **rec.__dict__})
    for s in stats.values():
        n = max(s["total_prompts"], 1)
        s["avg_input_tokens_per_prompt"] = s["total_input_tokens"] / n
        s["avg_output_tokens_per_prompt"] = s["total_output_tokens"] / n
    return ChunkedResult(states, log, {it: {corpus.case_id: s} for it, s in stats.items()})
