"""What each provider documents as the JSON Schema subset of its structured output, as the fake servers
check it: a schema keyword outside the subset is refused the way the provider refuses it (a 400 / an
errored result naming the keyword), so a test sees a request the real service would turn down.

- OpenAI strict ``json_schema``: types, ``properties``/``required``/``additionalProperties`` (every object
  closed, every property required), ``items``, ``enum``, ``anyOf``, ``minItems``/``maxItems``,
  ``minimum``/``maximum``, ``pattern``/``format``, ``description``; not string lengths.
- Gemini ``responseJsonSchema``: types, ``properties``/``required``/``additionalProperties``, ``items``,
  ``prefixItems``, ``enum``, ``anyOf``, ``minItems``/``maxItems``, ``minimum``/``maximum``, ``format``,
  ``title``/``description``; not string lengths.
- Anthropic forced tool (``input_schema``) without ``strict``: an object schema; kept to what gavel always
  sent (no length or count bounds; the paper's ``minimum``/``maximum`` stay).
- Anthropic JSON outputs (``output_config.format``) and strict tools (``anthropic-json``): no
  ``minimum``/``maximum``, string lengths or ``maxItems``; ``minItems`` only 0 or 1; ``pattern`` taken;
  every object closed (``additionalProperties: false``).
- vLLM guided decoding and llama.cpp: the lot, including lengths and counts; ``vllm-xgrammar`` (a server
  started with ``backend=xgrammar``) declines a string with both a ``pattern`` and a length.
"""

COMMON = {"type", "properties", "required", "additionalProperties", "items", "enum", "anyOf", "description",
          "title", "$defs", "$ref", "const"}
ALLOWED = {
    "openai": COMMON | {"minItems", "maxItems", "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum",
                        "multipleOf", "pattern", "format"},
    "gemini": COMMON | {"minItems", "maxItems", "minimum", "maximum", "format", "prefixItems"},
    "anthropic": COMMON | {"minimum", "maximum", "format"},
    "anthropic-json": COMMON | {"allOf", "default", "format", "pattern", "minItems"},
    "vllm": COMMON | {"minItems", "maxItems", "minimum", "maximum", "minLength", "maxLength", "pattern", "format"},
}
ALLOWED["vllm-xgrammar"] = ALLOWED["vllm"]


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
    if provider == "anthropic-json" and schema.get("minItems", 0) not in (0, 1):
        out.append(f"{where or '/'}: minItems {schema['minItems']} (only 0 or 1 are supported)")
    if provider == "vllm-xgrammar" and "pattern" in schema and {"minLength", "maxLength"} & set(schema):
        out.append(f"{where or '/'}: pattern with a length (xgrammar does not support this string schema)")
    if provider in ("openai", "anthropic-json") and schema.get("type") == "object":
        if schema.get("additionalProperties") is not False:
            out.append(f"{where or '/'}: additionalProperties must be false")
        if provider == "openai" and set(schema.get("required", [])) != set(schema.get("properties", {})):
            out.append(f"{where or '/'}: every property must be required")
    return out


def refusal(schema, provider: str) -> str | None:
    """The error message the provider would answer ``schema`` with, or None when it takes it."""
    found = problems(schema, provider)
    return f"Invalid schema: unsupported or invalid keyword(s) {'; '.join(found)}" if found else None
