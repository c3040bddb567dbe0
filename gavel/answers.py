"""Reading what a model answered: a tolerant reader for JSON and relation answers, shared by every stage.

Structured output (a JSON schema sent with the request) makes most answers clean JSON, but not every
provider enforces it and small models drift, so every answer goes through the same reader:

- a response cut by the output limit (``finish_reason == "length"``) is ``truncated``: never parsed;
- ``<think>`` blocks are dropped; the part after the last ``Final Answer`` marker is preferred;
- JSON is taken from a fenced block, or the last balanced ``{...}``; repaired when it has trailing commas,
  single quotes or Python literals (each repair is named in ``Answer.problems``);
- two ``Final Answer`` sections that disagree are ``conflicting``, never resolved by a guess;
- the object is checked against the stage's schema (jsonschema); violations name the field.

An unusable answer raises :class:`AnswerError` with a ``reason`` from ``REASONS``; the stage records it and
may re-ask (at most ``MAX_REASKS`` times); it is never scored.
"""

from __future__ import annotations

import ast
import json
import re
from dataclasses import dataclass, field

import jsonschema

REASONS = ("failed", "truncated", "empty", "no_json", "conflicting", "schema", "unknown_label", "indices")
MAX_REASKS = 2

_THINK = re.compile(r"<think>.*?(</think>|$)", re.S | re.I)
_FINAL = re.compile(r"final\s+answer\s*[:*]*", re.I)
_FENCE = re.compile(r"```(?:json|JSON)?\s*(.*?)```", re.S)
_TRAILING_COMMA = re.compile(r",\s*([}\]])")


class AnswerError(ValueError):
    def __init__(self, reason: str, detail: str):
        assert reason in REASONS, reason
        super().__init__(f"{reason}: {detail}")
        self.reason = reason
        self.detail = detail


@dataclass
class Answer:
    value: object
    problems: list[str] = field(default_factory=list)


def visible_text(text: str | None) -> str:
    """The answer without reasoning blocks."""
    return _THINK.sub("", text or "").strip()


def final_sections(text: str) -> list[str]:
    """The text after each ``Final Answer`` marker (up to the next one); [] when there is no marker."""
    marks = list(_FINAL.finditer(text))
    return [text[m.end(): marks[i + 1].start() if i + 1 < len(marks) else len(text)].strip()
            for i, m in enumerate(marks)]


def _balanced_objects(text: str) -> list[str]:
    """Every top-level ``{...}`` of ``text``, string-aware (quotes of either kind)."""
    out, depth, start, quote, escape = [], 0, None, None, False
    for i, ch in enumerate(text):
        if quote:
            if escape:
                escape = False
            elif ch == "\\":
                escape = True
            elif ch == quote:
                quote = None
            continue
        if ch in "\"'" and depth > 0:
            # an apostrophe inside a word ("city's") is not a quote
            if ch == "'" and i > 0 and text[i - 1].isalnum():
                continue
            quote = ch
        elif ch == "{":
            if depth == 0:
                start = i
            depth += 1
        elif ch == "}" and depth > 0:
            depth -= 1
            if depth == 0:
                out.append(text[start: i + 1])
    return out


def json_candidates(text: str) -> list[str]:
    """Where a JSON object may sit in an answer: each fenced block's content, then every top-level ``{...}``."""
    return [block.strip() for block in _FENCE.findall(text)] + _balanced_objects(text)


def _loads(candidate: str) -> tuple[object, list[str]]:
    try:
        return json.loads(candidate), []
    except json.JSONDecodeError:
        pass
    fixed = _TRAILING_COMMA.sub(r"\1", candidate)
    if fixed != candidate:
        try:
            return json.loads(fixed), ["trailing commas removed"]
        except json.JSONDecodeError:
            pass
    literal = re.sub(r"\btrue\b", "True", re.sub(r"\bfalse\b", "False", re.sub(r"\bnull\b", "None", fixed)))
    try:
        value = ast.literal_eval(literal)
    except (ValueError, SyntaxError, MemoryError, RecursionError):
        raise json.JSONDecodeError("not JSON, not a Python literal", candidate, 0) from None
    return value, ["read as a Python literal (single quotes or Python constants)"]


def _json_in(text: str) -> tuple[object, list[str]] | None:
    fenced = [b for b in _FENCE.findall(text) if "{" in b]
    candidates = [obj for block in fenced for obj in _balanced_objects(block)] or _balanced_objects(text)
    for candidate in reversed(candidates):
        try:
            return _loads(candidate)
        except json.JSONDecodeError:
            continue
    return None


def json_answer(text: str | None, schema: dict | None = None, *, truncated: bool = False) -> Answer:
    """The JSON object an answer holds (see module doc). ``schema`` is a JSON Schema (the ``schema`` part of
    a request's ``{"name", "schema"}``)."""
    if truncated:
        raise AnswerError("truncated", "cut by the output-token limit; not parsed")
    body = visible_text(text)
    if not body:
        raise AnswerError("empty", "no answer text")
    sections = [s for s in final_sections(body) if "{" in s]
    found = None
    if sections:
        parsed = [p for p in (_json_in(s) for s in sections) if p is not None]
        distinct = {json.dumps(p[0], sort_keys=True, default=str) for p in parsed}
        if len(distinct) > 1:
            raise AnswerError("conflicting", f"{len(distinct)} different final answers")
        found = parsed[-1] if parsed else None
    if found is None:
        found = _json_in(body)
    if found is None:
        raise AnswerError("no_json", f"no JSON object in {body[:80]!r}")
    value, problems = found
    if not isinstance(value, dict):
        raise AnswerError("no_json", f"JSON is a {type(value).__name__}, not an object")
    if schema is not None:
        errors = sorted(jsonschema.Draft202012Validator(schema).iter_errors(value), key=lambda e: list(e.path))
        if errors:
            where = "/".join(str(p) for p in errors[0].path) or "(top)"
            raise AnswerError("schema", f"{where}: {errors[0].message[:160]}")
    return Answer(value, problems)


# ---------- relations (single-value comparison) ----------
AB_RELATIONS = ("a_contains_b", "b_contains_a", "equal", "different")
AB_LABELS = {"A contains B": "a_contains_b", "B contains A": "b_contains_a", "A equals B": "equal",
             "A and B are different": "different"}
_REL_PHRASES = [
    (re.compile(r"\bA\s+(?:fully\s+)?contains\s+B\b|\bB\s+is\s+contained\s+in\s+A\b"), "a_contains_b"),
    (re.compile(r"\bB\s+(?:fully\s+)?contains\s+A\b|\bA\s+is\s+contained\s+in\s+B\b"), "b_contains_a"),
    (re.compile(r"\bA\s+(?:equals|is\s+equal\s+to|=|==|is\s+equivalent\s+to)\s+B\b|\bequal\b", re.I), "equal"),
    (re.compile(r"\bA\s+and\s+B\s+are\s+different\b|\bdifferent\b", re.I), "different"),
]


def _relations_in(text: str) -> set[str]:
    return {rel for pattern, rel in _REL_PHRASES if pattern.search(text)}


def relation_answer(text: str | None, *, truncated: bool = False) -> Answer:
    """One of ``AB_RELATIONS`` from a 4-way answer: JSON ``{"relation": ...}`` (structured output) or the
    ``**Final Answer:** A contains B`` form, or a last line naming one relation."""
    if truncated:
        raise AnswerError("truncated", "cut by the output-token limit; not parsed")
    body = visible_text(text)
    if not body:
        raise AnswerError("empty", "no answer text")
    try:
        obj = json_answer(body).value
    except AnswerError:
        obj = None
    if isinstance(obj, dict) and isinstance(obj.get("relation"), str):
        found = _relations_in(obj["relation"])
        if len(found) == 1:
            return Answer(found.pop())
        raise AnswerError("unknown_label", f"relation {obj['relation']!r}")
    sections = final_sections(body)
    if sections:
        per_section = [_relations_in(s.splitlines()[0] if s else "") or _relations_in(s) for s in sections]
        chosen = {next(iter(f)) for f in per_section if len(f) == 1}
        if any(len(f) > 1 for f in per_section[-1:]):
            raise AnswerError("unknown_label", f"final answer names several relations: {sections[-1][:80]!r}")
        if len(chosen) > 1:
            raise AnswerError("conflicting", f"final answers disagree: {sorted(chosen)}")
        if chosen:
            return Answer(chosen.pop(), [] if len(sections) == 1 else ["repeated final answer"])
        raise AnswerError("unknown_label", f"final answer {sections[-1][:80]!r}")
    for line in reversed([ln for ln in body.splitlines() if ln.strip()]):
        found = _relations_in(line)
        if len(found) == 1:
            return Answer(found.pop(), ["relation read from the last line (no Final Answer marker)"])
        if found:
            break
    raise AnswerError("unknown_label", f"no relation in {body[-80:]!r}")
