"""Usage as each provider reports it, in one shape (gavel.core.prices.USAGE_FIELDS): token counts by class,
``None`` where the provider did not say. The runner adds ``mode`` (batch or online) and ``answered_at`` (UTC)
when it receives the answer; ``service_tier`` is the provider's word where it gives one.

* OpenAI chat completions (online, batch output, vLLM, llama.cpp): ``prompt_tokens`` (cached included),
  ``prompt_tokens_details.cached_tokens``, ``completion_tokens`` (reasoning included),
  ``completion_tokens_details.reasoning_tokens``, the body's ``service_tier``. OpenAI has no cache writes.
* Anthropic messages: ``input_tokens`` counts only the tokens after the last cache breakpoint;
  ``cache_creation_input_tokens`` and ``cache_read_input_tokens`` are the others, so input is their sum and
  each is counted once. ``cache_creation.ephemeral_5m_input_tokens`` / ``ephemeral_1h_input_tokens`` split the
  writes; ``output_tokens`` includes thinking (not counted apart: reasoning unknown); ``usage.service_tier``.
* Gemini ``usageMetadata``: ``promptTokenCount`` (cached included), ``cachedContentTokenCount``,
  ``candidatesTokenCount`` + ``thoughtsTokenCount`` = output, the thoughts being reasoning. The API writes
  proto3 JSON, which leaves out a count that is zero: inside a usageMetadata that is there, a missing cached or
  thoughts count is 0; a missing prompt or candidates count, or no usageMetadata, is unknown.
"""

from __future__ import annotations

from gavel.core.prices import USAGE_FIELDS


def _count(container, *path):
    """The count at ``path`` inside nested dicts: None where it is absent or null; a non-negative integer as
    it is, and one written as a whole float (``1000.0``: JSON has one kind of number, and some servers write
    counts so) as that integer; anything else (a negative count, a string, a boolean; ``12.5`` or NaN as the
    text ``'12.5'``) as it was written, so that ``gavel.core.prices.implausible`` names it (``input is negative``) and the request is
    not priced, with that reason, instead of the count being quietly unknown."""
    value = container
    for key in path:
        if not isinstance(value, dict):
            return None
        value = value.get(key)
    if isinstance(value, float):
        # a whole float is that integer; 12.5, NaN or infinity is no count of tokens (as text: named so)
        return int(value) if value.is_integer() and 0 <= value <= 2**53 else repr(value)
    return value


def _whole(value) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def _sum(*counts):
    """Counts added up: None when the first is unknown, the first count that is not one (to be named), else
    the sum (unknown later parts count as 0)."""
    if counts[0] is None:
        return None
    bad = next((c for c in counts if c is not None and not _whole(c)), None)
    return bad if bad is not None else sum(c or 0 for c in counts)


def empty() -> dict:
    return dict.fromkeys(USAGE_FIELDS)


def made(tier=None, **counts) -> dict:
    """A usage record: the counts given, every other class unknown, the service tier when it is a word."""
    out = empty()
    out.update(counts)
    out["service_tier"] = tier if isinstance(tier, str) else None
    return out


def _object(container, *keys) -> dict | None:
    """The first of ``keys`` in ``container`` holding an object, or None."""
    if not isinstance(container, dict):
        return None
    return next((container[k] for k in keys if isinstance(container.get(k), dict)), None)


def openai(body: dict) -> dict | None:
    """A chat completion's usage (None when it has no ``usage`` object)."""
    usage = _object(body, "usage")
    if usage is None:
        return None
    return made(body.get("service_tier"), input=_count(usage, "prompt_tokens"),
                 output=_count(usage, "completion_tokens"),
                 cache_read=_count(usage, "prompt_tokens_details", "cached_tokens"),
                 reasoning=_count(usage, "completion_tokens_details", "reasoning_tokens"))


def anthropic(message: dict) -> dict | None:
    """A message's usage (None when it has no ``usage`` object)."""
    usage = _object(message, "usage")
    if usage is None:
        return None
    uncached, write, read = (_count(usage, k) for k in ("input_tokens", "cache_creation_input_tokens",
                                                         "cache_read_input_tokens"))
    return made(usage.get("service_tier"), input=_sum(uncached, write, read),
                 cache_read=read, cache_write=write, output=_count(usage, "output_tokens"),
                 cache_write_5m=_count(usage, "cache_creation", "ephemeral_5m_input_tokens"),
                 cache_write_1h=_count(usage, "cache_creation", "ephemeral_1h_input_tokens"))


def gemini(resp: dict) -> dict | None:
    """A generateContent answer's usage, from ``usageMetadata`` (REST) or ``usage_metadata`` (the SDK's
    model_dump); None when it has neither."""
    meta = _object(resp, "usage_metadata", "usageMetadata")
    if meta is None:
        return None

    def get(snake, camel, absent_is_zero=False):
        key = snake if snake in meta else camel
        if key not in meta or meta[key] is None:
            return 0 if absent_is_zero else None
        return _count(meta, key)

    candidates = get("candidates_token_count", "candidatesTokenCount")
    thoughts = get("thoughts_token_count", "thoughtsTokenCount", absent_is_zero=True)
    return made(input=get("prompt_token_count", "promptTokenCount"),
                 cache_read=get("cached_content_token_count", "cachedContentTokenCount", absent_is_zero=True),
                 output=_sum(candidates, thoughts), reasoning=thoughts)


def stamped(usage: dict | None, mode: str, when: str) -> dict:
    """``usage`` (or an all-unknown one when the answer had none) with how and when it was answered."""
    out = dict(usage) if usage else made()
    out.update(mode=mode, answered_at=when)
    return out
