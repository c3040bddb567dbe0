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
Modules: ``text`` (preparation, candidates, reasons), ``scan`` (finding and decoding objects in linear time),
``stages`` (the five scoring stages), ``agent`` (the tool-call dialects). For any ``str`` nothing but
``Unusable`` is raised.
"""

from __future__ import annotations

import gc

from gavel.answers.agent import _agent
from gavel.answers.scan import first_object
from gavel.answers.stages import (
    _compare_multi,
    _compare_single,
    _extract,
    _residual,
    _style,
    placeholder_why,  # noqa: F401 (the public surface)
)
from gavel.answers.text import (  # noqa: F401 (the public surface)
    COMPLETE,
    MAX_REASKS,
    REASONS,
    STAGES,
    Unusable,
    _candidates,
    _prepare,
    _read_each,
    harmony_messages,
    is_cut,
    json_candidates,
    scan_objects,
    visible_text,
)

#: answers at least this long are read with the cycle collector paused (see :func:`read`)
GC_PAUSE_CHARS = 1_000_000


# ====================================================================== the reader
def read(stage: str, text: str | None, finish_reason: str | None = "stop", **context) -> dict:
    """The reading of one answer for ``stage`` (see module doc and ``docs/ANSWERS.md``), or ``Unusable``."""
    if stage not in STAGES:
        raise ValueError(f"unknown stage {stage!r}; stages: {', '.join(STAGES)}")
    # A long answer is read with the cycle collector paused: a reading holds no cycles, and full collections
    # over the objects of a runaway answer made 10 MB cost 12-13x what 1 MB costs instead of 10x.
    pause = isinstance(text, str) and len(text) >= GC_PAUSE_CHARS and gc.isenabled()
    if pause:
        gc.disable()
    try:
        truncated = not (finish_reason.__class__ is str and finish_reason == "stop") and is_cut(finish_reason)
        return _read(stage, text, truncated, context)
    except Unusable as err:
        if err.reason == "truncated" and str(finish_reason).lower() != "length":
            raise Unusable("truncated", f"finish_reason {finish_reason!r} (read as a cut): {err.detail}") from None
        raise
    finally:
        if pause:
            gc.enable()


#: the signature keys of the stages read through :func:`_candidates`
_EXTRACTED, _COMMON = frozenset({"extracted"}), frozenset({"common"})


def _read(stage: str, text: str | None, truncated: bool, context: dict) -> dict:
    if stage == "agent_action":
        return _agent(text, truncated)
    if text.__class__ is str and "<" not in text and "\ufeff" not in text and "\r" not in text:
        body = text  # what _prepare gives such a text: the common case, without its call
    else:
        body, _ = _prepare(text, truncated)
    if not body or body.isspace():
        raise Unusable("truncated" if truncated else "empty", "no answer text")
    if stage == "extract" or stage == "compare_multi":
        keys = _EXTRACTED if stage == "extract" else _COMMON
        first = first_object(body)
        if first[1] and not keys.isdisjoint(first[0][2]):  # one clean object carrying the key: _candidates'
            found = [first[0][2]]  # common answer, read without its call
        else:
            found, _ = _candidates(body, keys, truncated, first=first)
        if stage == "extract":
            if len(found) == 1:  # one candidate: its reading, or why it is unusable (as _read_each reads it)
                return _extract(found[0], context.get("summary"))
            return _read_each(found, lambda o: _extract(o, context.get("summary")))
        if len(found) == 1:
            return _compare_multi(found[0], context.get("n_a"), context.get("n_b"))
        return _read_each(found, lambda o: _compare_multi(o, context.get("n_a"), context.get("n_b")))
    if stage == "compare_single":
        return _compare_single(body, truncated)
    if stage == "style":
        return _style(body, truncated)
    found, _ = _candidates(body, _EXTRACTED, truncated)
    return _read_each(found, lambda o: _residual(o, context.get("n_spans")))


def read_object(text: str | None, finish_reason: str | None = "stop", *, keys, schema: dict | None = None) -> dict:
    """The one answer object carrying one of ``keys`` (same scanning and rules as :func:`read`), checked
    against a JSON Schema; for stages outside the paper's six (pointwise metric, CaseGen judge)."""
    truncated = is_cut(finish_reason)
    body, _ = _prepare(text, truncated)
    if not body.strip():
        raise Unusable("truncated" if truncated else "empty", "no answer text")
    found, _ = _candidates(body, set(keys), truncated)

    def check(obj):
        if schema is not None:
            import jsonschema  # here, not at import: every gavel process would pay for it

            errors = sorted(jsonschema.Draft202012Validator(schema).iter_errors(obj), key=lambda e: list(e.path))
            if errors:
                where = "/".join(str(p) for p in errors[0].path) or "(top)"
                raise Unusable("schema", f"{where}: {errors[0].message[:160]}")
        return obj

    return _read_each(found, check)
