"""What each provider documents as the JSON Schema subset of its structured output, as the fake servers
check it: a schema keyword outside the subset is refused the way the provider refuses it (a 400 / an
errored result naming the keyword), so a test sees a request the real service would turn down.

- OpenAI strict ``json_schema``: types, ``properties``/``required``/``additionalProperties`` (every object
  closed, every property required), ``items``, ``enum``, ``anyOf``, ``minItems``/``maxItems``,
  ``minimum``/``maximum``, ``pattern``/``format``, ``description``; not string lengths.
- Gemini ``responseJsonSchema``: types, ``properties``/``required``/``additionalProperties``, ``items``,
  ``prefixItems``, ``enum``, ``anyOf``, ``minItems``/``maxItems``, ``minimum``/``maximum``, ``format``,
  ``title``/``description``; not string lengths.
- Anthropic forced tool (``input_schema``): an object schema; kept to what its strict mode takes (no
  length, count or range bounds beyond those the paper's requests always carried: ``minimum``/``maximum``).
- vLLM guided decoding and llama.cpp: the lot, including lengths and counts.
"""

COMMON = {"type", "properties", "required", "additionalProperties", "items", "enum", "anyOf", "description",
          "title", "$defs", "$ref", "const"}
ALLOWED = {
    "openai": COMMON | {"minItems", "maxItems", "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum",
                        "multipleOf", "pattern", "format"},
    "gemini": COMMON | {"minItems", "maxItems", "minimum", "maximum", "format", "prefixItems"},
    "anthropic": COMMON | {"minimum", "maximum", "format"},
    "vllm": COMMON | {"minItems", "maxItems", "minimum", "maximum", "minLength", "maxLength", "pattern", "format"},
}


def problems(schema, provider: str, where: str = "") -> list[str]:
    """The keywords of ``schema`` ``provider`` would refuse (and, for OpenAI strict, open objects or
    optional properties), each as ``path: keyword``."""
    out = []
    if not isinstance(schema, dict):
        return [f"{where or '/'}: not a schema"]
    for key, value in schema.items():
        if key not in ALLOWED[provider]:
            out.append(f"{where or '/'}: {key}")
        elif key in ("properties", "$defs"):
            for name, sub in value.items():
                out += problems(sub, provider, f"{where}/{name}")
        elif key == "items" and isinstance(value, dict):
            out += problems(value, provider, f"{where}/items")
        elif key in ("anyOf", "prefixItems"):
            for n, sub in enumerate(value):
                out += problems(sub, provider, f"{where}/{key}/{n}")
    if provider == "openai" and schema.get("type") == "object":
        if schema.get("additionalProperties") is not False:
            out.append(f"{where or '/'}: additionalProperties must be false")
        if set(schema.get("required", [])) != set(schema.get("properties", {})):
            out.append(f"{where or '/'}: every property must be required")
    return out


def refusal(schema, provider: str) -> str | None:
    """The error message the provider would answer ``schema`` with, or None when it takes it."""
    found = problems(schema, provider)
    return f"Invalid schema: unsupported or invalid keyword(s) {'; '.join(found)}" if found else None
