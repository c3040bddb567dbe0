"""Each GAVEL-REF stage's answer schema, beside the reader's contract (``docs/ANSWERS.md``): what a request
sends as its structured output, ``{"name": ..., "schema": {a JSON Schema}}``.

Two forms of each, from one definition:

- **plain** (``PLAIN``): the schemas the paper's models are sent, unchanged, so their requests and cache
  keys stay byte-identical (the release replay);
- **bounded** (``bounded``): the same with bounds on everything a small model can run on in: the
  ``reasoning`` string's length, every list's item count, every string's length, ratings as an enum of
  1-5 (the relation is an enum in both). A model whose registry entry sets the quirk
  ``bounded_schemas: true`` (the local models) is sent these (``for_model``): its grammar then closes
  the object in a bounded number of tokens instead of spending the whole output cap inside one field.

Each backend is sent the subset of a schema it takes (``gavel.llm.schema_subset``). The bounds are what an
answer needs, not what the reader accepts: the reader takes longer answers from a model that ignores them.
"""

from __future__ import annotations

import copy
from functools import lru_cache

#: the bounds of the bounded form: characters of a free-text field, items of a list
BOUNDS = {
    "reasoning": 200,      # characters of every stage's reasoning
    "value": 120,          # extract: characters of one value
    "values": 3,           # extract: values of one item
    "evidence": 160,       # extract: characters of one evidence snippet
    "snippets": 2,         # extract: evidence snippets of one value
    "fact": 160,           # residual: characters of one fact
    "facts": 5,            # residual: facts of one answer
    "spans": 3,            # residual: span numbers of one fact
    "matched": 8,          # compare (lists), when the list sizes are not given: pairs, indices per side
}
RATINGS = [1, 2, 3, 4, 5]
#: the labels a judge is asked to answer with (the reader also takes them in other spellings: docs/ANSWERS.md)
AB_LABELS = ("A contains B", "B contains A", "A equals B", "A and B are different")


def _str(limit: str | None = None, b: dict | None = None, text: bool = False) -> dict:
    """A string; bounded, at most ``b[limit]`` characters, and (``text``: a value or a fact, what is
    scored) not beginning with ``<``: a small model copies the prompt's ``<placeholder>`` otherwise, which
    the reader then drops. The pattern also keeps out quotes and backslashes (a grammar then never has to
    write an escape; llama.cpp enforces it as written, vLLM's guidance backend lets an escaped quote pass)
    and bounds the length itself: vLLM's xgrammar declines a string with both, so that backend is sent the
    pattern alone (``gavel.llm.schema_subset``)."""
    if not b:
        return {"type": "string"}
    out = {"type": "string", "maxLength": b[limit]}
    if text:
        out["pattern"] = '^[^<"\\\\][^"\\\\]{0,' + str(b[limit] - 1) + '}$'
    return out


def _list(items: dict, limit: str, b: dict | None, at_least: int = 0) -> dict:
    """A list; bounded, at most ``b[limit]`` items and (``at_least``) at least that many: the residual
    stage is asked only about a summary's text outside its checklist, so its answer states a fact."""
    if not b:
        return {"type": "array", "items": items}
    out = {"type": "array", "items": items, "maxItems": b[limit]}
    if at_least:
        out["minItems"] = at_least
    return out


def _extract(b=None) -> dict:
    return {"name": "checklist_item", "schema": {
        "type": "object",
        "properties": {
            "reasoning": _str("reasoning", b),
            "extracted": _list({
                "type": "object",
                "properties": {"evidence": _list(_str("evidence", b), "snippets", b), "value": _str("value", b, text=True)},
                "required": ["evidence", "value"], "additionalProperties": False}, "values", b),
        },
        "required": ["reasoning", "extracted"], "additionalProperties": False}}


def _relation(labels, b=None) -> dict:
    return {"name": "relation", "schema": {
        "type": "object",
        "properties": {"reasoning": _str("reasoning", b), "relation": {"type": "string", "enum": list(labels)}},
        "required": ["reasoning", "relation"], "additionalProperties": False}}


def _matching(b=None, n_a: int | None = None, n_b: int | None = None) -> dict:
    """The list matching's schema; bounded and given the two list sizes, each index is an enum of 1..n of
    its side and each list holds at most as many entries as it can."""
    a = b_ = {"type": "integer"}
    pairs = only_a = only_b = "matched"
    if b and n_a and n_b:
        a, b_ = {"type": "integer", "enum": list(range(1, n_a + 1))}, {"type": "integer", "enum": list(range(1, n_b + 1))}
        b = {**b, "pairs": min(n_a * n_b, n_a + n_b), "only_a": n_a, "only_b": n_b}
        pairs, only_a, only_b = "pairs", "only_a", "only_b"
    return {"name": "list_matching", "schema": {
        "type": "object",
        "properties": {
            "reasoning": _str("reasoning", b),
            "common": _list({
                "type": "object", "properties": {"A_index": a, "B_index": b_},
                "required": ["A_index", "B_index"], "additionalProperties": False}, pairs, b),
            "only_in_A": _list(a, only_a, b),
            "only_in_B": _list(b_, only_b, b),
        },
        "required": ["reasoning", "common", "only_in_A", "only_in_B"], "additionalProperties": False}}


def _residual(b=None) -> dict:
    return {"name": "residual_facts", "schema": {
        "type": "object",
        "properties": {"reasoning": _str("reasoning", b), "extracted": _list({
            "type": "object", "properties": {"fact": _str("fact", b, text=True),
                                             "evidence_spans": _list({"type": "integer"}, "spans", b)},
            "required": ["fact", "evidence_spans"], "additionalProperties": False}, "facts", b, at_least=1)},
        "required": ["reasoning", "extracted"], "additionalProperties": False}}


def _style(aspects, b=None) -> dict:
    rating = {"type": "integer", "minimum": 1, "maximum": 5}
    if b:
        rating = {**rating, "enum": RATINGS}  # llama.cpp's grammar enforces an enum, not a range
    return {"name": "style_ratings", "schema": {
        "type": "object",
        "properties": {k: dict(rating) for k in aspects},
        "required": list(aspects), "additionalProperties": False}}


def _builders() -> dict:
    from gavel.core.vocab import STYLE_ASPECTS

    return {"extract": _extract, "compare_single": lambda b=None: _relation(AB_LABELS, b),
            "compare_multi": _matching, "residual": _residual,
            "style": lambda b=None: _style(STYLE_ASPECTS, b)}


#: every stage's plain schema (the paper's requests), by request kind
PLAIN = {kind: build() for kind, build in _builders().items()}
_BOUNDED = {kind: build(BOUNDS) for kind, build in _builders().items()}


def bounded(kind: str) -> dict:
    """The bounded form of request kind ``kind``'s schema (a copy: a caller may not change the shared one)."""
    return copy.deepcopy(_BOUNDED[kind])


@lru_cache(maxsize=256)
def wants_bounds(model: str) -> bool:
    """Whether ``model``'s registry entry asks for bounded schemas (quirk ``bounded_schemas``); False for a
    model the registry does not know."""
    from gavel.llm.registry import llm_model

    try:
        return bool(llm_model(model).quirks.get("bounded_schemas"))
    except (KeyError, ValueError):
        return False


def for_model(kind: str, model: str, n_a: int | None = None, n_b: int | None = None) -> dict:
    """The schema request kind ``kind`` sends to ``model``: bounded when its registry entry asks for it,
    else the plain one (the same object every time, as the stages sent before). ``n_a``/``n_b``: the two
    list sizes of a list matching (``compare_multi``), which its bounded form holds its indices to."""
    if not wants_bounds(model):
        return PLAIN[kind]
    if kind == "compare_multi" and n_a and n_b:
        return _matching(BOUNDS, n_a, n_b)
    return _BOUNDED[kind]
