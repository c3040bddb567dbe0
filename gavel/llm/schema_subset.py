"""What each backend is sent of a request's answer schema: the keywords it enforces, none it would refuse.

A stage's schema (``gavel.answers.schemas``) may bound string lengths (``minLength``/``maxLength``), what a
string looks like (``pattern``) and list lengths (``minItems``/``maxItems``). Each backend takes its own
subset of JSON Schema:

- ``local`` (llama.cpp's grammar, llama-cpp-python's converter) and ``vllm``/``vllm-batch`` (guided
  decoding) enforce lengths, item counts and enums: they get the schema whole;
- ``openai`` (strict ``json_schema``) documents ``minItems``/``maxItems``, ``minimum``/``maximum``, ``pattern``
  and enums as supported, not string lengths: ``minLength``/``maxLength`` are left out;
- ``gemini`` (``response_json_schema``) documents item counts, numeric ranges and enums, not string lengths
  or patterns: those are left out;
- ``anthropic`` (a forced tool's ``input_schema``) validates nothing it is sent, and its strict mode refuses
  length, count and pattern keywords: all are left out (the reader checks what the answer holds).

A schema without those keywords (every stage's schema for the paper's models) is sent as it is, the same
object: its requests are byte-identical to what they were.
"""

from __future__ import annotations

LENGTHS = frozenset({"minLength", "maxLength"})
COUNTS = frozenset({"minItems", "maxItems"})
#: per provider, the keywords left out of what it is sent
LEFT_OUT = {"openai": LENGTHS, "gemini": LENGTHS | {"pattern"}, "anthropic": LENGTHS | COUNTS | {"pattern"},
            "local": frozenset(), "vllm": frozenset(), "vllm-batch": frozenset()}
# the keywords whose value is a schema, a list of schemas, or a name -> schema map
_ONE = ("items", "additionalProperties", "not", "contains")
_MANY = ("anyOf", "allOf", "oneOf", "prefixItems")
_MAP = ("properties", "$defs", "definitions", "patternProperties")


def for_provider(schema: dict, provider: str) -> dict:
    """``schema`` (a JSON Schema) as ``provider`` is sent it: the keywords it does not take (``LEFT_OUT``)
    removed wherever they bound a value, never a property that happens to share the name. Unchanged (the
    same object) when there is nothing to remove."""
    drop = LEFT_OUT.get(provider, frozenset())
    return _strip(schema, drop) if drop else schema


def _strip(node, drop: frozenset):
    if not isinstance(node, dict):
        return node
    out = {}
    changed = False
    for key, value in node.items():
        if key in drop:
            changed = True
            continue
        if key in _ONE and isinstance(value, dict):
            new = _strip(value, drop)
        elif key in _MANY and isinstance(value, list):
            new = [_strip(v, drop) for v in value]
            new = value if all(a is b for a, b in zip(new, value)) else new
        elif key in _MAP and isinstance(value, dict):
            new = {k: _strip(v, drop) for k, v in value.items()}
            new = value if all(new[k] is value[k] for k in value) else new
        else:
            new = value
        changed = changed or new is not value
        out[key] = new
    return out if changed else node
