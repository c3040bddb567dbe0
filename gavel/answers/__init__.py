"""The one public reader of model answers: ``read(stage, text, finish_reason, **context)``.

Every stage's ``parse_response`` and the agent loop go through :func:`read`. It returns a plain dict (the
*reading*) or raises :class:`Unusable` with a ``reason`` from ``REASONS``. What it tolerates, what it refuses
and the shape of each reading are written down in ``docs/ANSWERS.md`` (the contract); every rule there has
examples in ``tests/data/answers/*.jsonl``.

Stages: ``extract`` (``summary=``), ``compare_single``, ``compare_multi`` (``n_a=``, ``n_b=``),
``residual_facts`` (``n_spans=``), ``style``, ``agent_action``. Indices are 1-based. Whatever input is thrown
away is listed in the reading's ``dropped`` as ``{"field", "value", "why"}``.

The scanning is shared: text is normalised (BOM, line ends), reasoning is dropped (``</think>``, gpt-oss
Harmony channels), and candidates are the complete top-level ``{...}`` objects of what is left, read as JSON
or, failing that, by a small tolerant reader (trailing commas, Python literals, curly or single quotes,
``\\'``, raw line breaks in strings). Nothing else is repaired: an object that never closes is never read.
"""

from __future__ import annotations

from gavel.answers.stages import _agent, _compare_multi, _compare_single, _extract, _residual, _style
from gavel.answers.text import (  # noqa: F401 (the public surface)
    MAX_REASKS,
    REASONS,
    STAGES,
    Unusable,
    _candidates,
    _prepare,
    _read_each,
    harmony_messages,
    json_candidates,
    scan_objects,
    visible_text,
)


# ====================================================================== the reader
def read(stage: str, text: str | None, finish_reason: str | None = "stop", **context) -> dict:
    """The reading of one answer for ``stage`` (see module doc and ``docs/ANSWERS.md``), or ``Unusable``."""
    truncated = finish_reason == "length"
    if stage == "agent_action":
        return _agent(text, truncated)
    if stage not in STAGES:
        raise ValueError(f"unknown stage {stage!r}; stages: {', '.join(STAGES)}")
    body, _ = _prepare(text, truncated)
    if not body.strip():
        raise Unusable("truncated" if truncated else "empty", "no answer text")
    if stage == "compare_single":
        return _compare_single(body, truncated)
    if stage == "style":
        return _style(body, truncated)
    if stage == "extract":
        found, _ = _candidates(body, {"extracted"}, truncated)
        return _read_each(found, lambda o: _extract(o, context.get("summary")))
    if stage == "compare_multi":
        found, _ = _candidates(body, {"common"}, truncated)
        return _read_each(found, lambda o: _compare_multi(o, context.get("n_a"), context.get("n_b")))
    found, _ = _candidates(body, {"extracted"}, truncated)
    return _read_each(found, lambda o: _residual(o, context.get("n_spans")))


def read_object(text: str | None, finish_reason: str | None = "stop", *, keys, schema: dict | None = None) -> dict:
    """The one answer object carrying one of ``keys`` (same scanning and rules as :func:`read`), checked
    against a JSON Schema; for stages outside the paper's six (pointwise metric, CaseGen judge)."""
    truncated = finish_reason == "length"
    body, _ = _prepare(text, truncated)
    if not body.strip():
        raise Unusable("truncated" if truncated else "empty", "no answer text")
    found, _ = _candidates(body, set(keys), truncated)

    def check(obj):
        if schema is not None:
            import jsonschema  # here, not at the top: importing it costs every gavel process ~1 s

            errors = sorted(jsonschema.Draft202012Validator(schema).iter_errors(obj), key=lambda e: list(e.path))
            if errors:
                where = "/".join(str(p) for p in errors[0].path) or "(top)"
                raise Unusable("schema", f"{where}: {errors[0].message[:160]}")
        return obj

    return _read_each(found, check)
