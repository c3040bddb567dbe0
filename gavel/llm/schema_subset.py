"""What each backend is sent of a request's answer schema: the keywords it takes, as its documentation lists
them, and nothing it would refuse.

A stage's schema (``gavel.answers.schemas``) may bound string lengths (``minLength``/``maxLength``), what a
string looks like (``pattern``), list lengths (``minItems``/``maxItems``) and numbers (``minimum``/
``maximum``). ``TAKES`` is one table per provider of the JSON Schema keywords it takes, with its source.
``for_provider`` sends each provider its part of a schema:

- a bound the provider does not take is not dropped silently: it is written into the field's
  ``description`` (``Bounds: at most 200 characters.``), where the model reads it, as Anthropic's own SDK
  does with the bounds its strict mode refuses;
- ``openai`` takes ``pattern`` but not string lengths: a string bounded only by its length gets the same
  bound as a pattern (``^[\\s\\S]{0,200}$``), so its grammar enforces it;
- ``vllm``/``vllm-batch``: xgrammar declines a string carrying both ``pattern`` and a length (vLLM then
  falls back to another backend, or answers 400 when started with ``backend=xgrammar``): such a string
  keeps its pattern (gavel's patterns bound the length themselves) and its length goes into the description;
- ``anthropic-json`` (JSON outputs, ``output_config.format``, and strict tools) refuses numeric ranges,
  string lengths and ``maxItems``, and takes ``minItems`` of 0 or 1 only;
- ``anthropic`` (a forced tool without ``strict``, the paper's requests) validates nothing it is sent; it is
  sent what it was sent before (no lengths, counts or patterns; the paper's ranges stay).

A schema whose keywords its provider all takes (every stage's schema for the paper's models) is sent as it
is, the same object: its requests and cache keys are byte-identical to what they were.
"""

from __future__ import annotations

_COMMON = frozenset({"type", "properties", "required", "additionalProperties", "items", "enum", "anyOf",
                     "description", "title", "$defs", "$ref", "const"})
_RANGES = frozenset({"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf"})
LENGTHS = frozenset({"minLength", "maxLength"})
COUNTS = frozenset({"minItems", "maxItems"})
#: per provider, the JSON Schema keywords it takes, and where that is documented
TAKES = {
    "openai": (_COMMON | _RANGES | COUNTS | {"pattern", "format"},
               "https://platform.openai.com/docs/guides/structured-outputs#supported-schemas (strict json_schema: "
               "string lengths are not supported; pattern, item counts and numeric ranges are)"),
    "gemini": (_COMMON | COUNTS | {"minimum", "maximum", "format", "prefixItems"},
               "https://ai.google.dev/gemini-api/docs/structured-output#json-schema (responseJsonSchema: item "
               "counts, numeric ranges, enums and formats; no string lengths or patterns)"),
    "anthropic": (_COMMON | {"minimum", "maximum", "format"},
                  "https://platform.claude.com/docs/en/agents-and-tools/tool-use/implement-tool-use (a forced tool "
                  "without strict: its input_schema is not enforced; gavel keeps to what it always sent)"),
    "anthropic-json": (_COMMON | {"allOf", "default", "format", "pattern", "minItems"},
                       "https://platform.claude.com/docs/en/build-with-claude/structured-outputs#json-schema-"
                       "limitations (JSON outputs and strict tools: no minimum/maximum, string lengths or "
                       "maxItems; minItems 0 or 1; simple patterns)"),
    "vllm": (_COMMON | _RANGES | LENGTHS | COUNTS | {"pattern", "format", "allOf", "prefixItems"},
             "https://github.com/vllm-project/vllm/pull/49996 (xgrammar declines a string with pattern or format "
             "and a length; lengths and counts otherwise taken)"),
    "local": (_COMMON | _RANGES | LENGTHS | COUNTS | {"pattern", "format", "allOf", "prefixItems"},
              "https://github.com/ggml-org/llama.cpp/blob/master/grammars/README.md (llama.cpp's JSON schema to "
              "grammar converter: lengths, counts, patterns, enums)"),
}
TAKES["vllm-batch"] = TAKES["vllm"]
#: the providers on which a string may not carry both a pattern and a length (xgrammar)
_PATTERN_OR_LENGTH = frozenset({"vllm", "vllm-batch"})
#: the keywords whose value is a schema, a list of schemas, or a name -> schema map
_ONE = ("items", "additionalProperties", "not", "contains")
_MANY = ("anyOf", "allOf", "oneOf", "prefixItems")
_MAP = ("properties", "$defs", "definitions", "patternProperties")
#: how a bound a provider does not take is said in a description
_SAID = {"minLength": "at least {} characters", "maxLength": "at most {} characters",
         "minItems": "at least {} items", "maxItems": "at most {} items", "minimum": "at least {}",
         "maximum": "at most {}", "exclusiveMinimum": "more than {}", "exclusiveMaximum": "less than {}",
         "multipleOf": "a multiple of {}", "pattern": "matching the regular expression {}"}


def takes(provider: str) -> frozenset:
    """The keywords ``provider`` takes (``TAKES``); every keyword for a provider not in the table."""
    return TAKES[provider][0] if provider in TAKES else frozenset()


def for_provider(schema: dict, provider: str) -> dict:
    """``schema`` (a JSON Schema) as ``provider`` is sent it (see the module's docstring): the bounds it does
    not take moved into the description of the value they bound (never a property that happens to share a
    keyword's name), a string length as a pattern for OpenAI. Unchanged (the same object) when there is
    nothing to change."""
    if provider not in TAKES:
        return schema
    return _node(schema, provider)


def _node(node, provider: str):
    if not isinstance(node, dict):
        return node
    keep = takes(provider)
    out, said, changed = {}, [], False
    lengths_as_pattern = provider == "openai" and "pattern" not in node and LENGTHS & set(node)
    for key, value in node.items():
        if key in _ONE and isinstance(value, dict):
            new = _node(value, provider)
        elif key in _MANY and isinstance(value, list):
            new = [_node(v, provider) for v in value]
            new = value if all(a is b for a, b in zip(new, value)) else new
        elif key in _MAP and isinstance(value, dict):
            new = {k: _node(v, provider) for k, v in value.items()}
            new = value if all(new[k] is value[k] for k in value) else new
        elif key in _SAID and (key not in keep or _refused_value(key, value, node, provider)):
            changed = True
            if not lengths_as_pattern or key not in LENGTHS:
                said.append(_SAID[key].format(value))
            continue
        else:
            new = value
        changed = changed or new is not value
        out[key] = new
    if lengths_as_pattern:
        out["pattern"] = f"^[\\s\\S]{{{node.get('minLength', 0)},{node.get('maxLength', '')}}}$"
    if said:
        text = "Bounds: " + "; ".join(said) + "."
        out["description"] = f"{out['description']} {text}" if out.get("description") else text
    return out if changed else node


def _refused_value(key: str, value, node: dict, provider: str) -> bool:
    """A keyword the provider takes in general but not here: Anthropic's minItems above 1, and a length on
    a string with a pattern for vLLM (xgrammar)."""
    if provider == "anthropic-json" and key == "minItems":
        return not (isinstance(value, int) and value in (0, 1))
    return provider in _PATTERN_OR_LENGTH and key in LENGTHS and "pattern" in node
