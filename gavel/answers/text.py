"""Text to candidates, shared by every stage: line ends and BOM, reasoning dropped (``</think>``, Harmony
channels), complete top-level ``{...}`` objects read as JSON or by the small tolerant reader, a stage's
signature keys, one candidate or ambiguous. Also the reasons and :class:`Unusable`."""

from __future__ import annotations

import re
from bisect import bisect_right

from gavel.answers.scan import Conflicted, first_object, has_lone_surrogate, scan, scan_objects

STAGES = ("extract", "compare_single", "compare_multi", "residual_facts", "style", "agent_action")
#: Why an answer is unusable (``Unusable.reason``); stages add ``failed`` (no answer) and ``indices``.
REASONS = ("failed", "empty", "truncated", "no_json", "ambiguous", "schema", "unknown_label", "unknown_tool",
           "no_rating", "indices")
MAX_REASKS = 2
#: finish reasons of an answer that ended by itself (our providers' normalised words and the raw ones); any
#: other (``length``, ``content_filter``, an unknown word) means the answer may be cut: read as truncated
COMPLETE = frozenset({"stop", "end_turn", "stop_sequence", "tool_calls", "tool_use", "function_call", "eos"})


def is_cut(finish_reason) -> bool:
    """Whether an answer with ``finish_reason`` may have been cut (None: unknown, read as complete)."""
    if finish_reason is None or (finish_reason.__class__ is str and finish_reason in COMPLETE):
        return False
    return str(finish_reason).strip().lower() not in COMPLETE


class Unusable(ValueError):
    """An answer that cannot be read under the contract; ``reason`` is one of ``REASONS``."""

    def __init__(self, reason: str, detail: str = ""):
        assert reason in REASONS, reason
        super().__init__(f"{reason}: {detail}" if detail else reason)
        self.reason = reason
        self.detail = detail



# ====================================================================== text preparation
_THINK_OPEN = re.compile(r"<think>", re.I)
_THINK_CLOSE = re.compile(r"</think>", re.I)
_HARMONY = re.compile(r"<\|(?:channel|message|start)\|>")
_H_START = re.compile(r"<\|start\|>")
_H_MESSAGE = re.compile(r"<\|message\|>")
_H_END = re.compile(r"<\|(?:end|return|call)\|>")
_H_RECIPIENT = re.compile(r"\bto=functions\.([A-Za-z0-9_.\-]+)")


def _normalize(text: str | None) -> str:
    text = (text or "").replace("\ufeff", "")
    if "\r" in text:
        text = text.replace("\r\n", "\n").replace("\r", "\n")
    return text


def _drop_thinking(text: str, truncated: bool) -> str:
    closes = list(_THINK_CLOSE.finditer(text))
    if closes:
        text = text[closes[-1].end():]
    opened = _THINK_OPEN.search(text)
    if opened:  # thinking that never closes: nothing after it is an answer
        if truncated:
            raise Unusable("truncated", "cut inside an unclosed <think> block")
        text = text[:opened.start()]
    return text


def _first_outside(pattern: re.Pattern, text: str, start: int, stop: int, spans: list, ends: list):
    """The first match of ``pattern`` in ``text[start:stop]`` that lies outside every span (complete JSON
    objects, ``ends`` their starts), or None."""
    while start < stop:
        m = pattern.search(text, start, stop)
        if m is None:
            return None
        k = bisect_right(ends, m.start()) - 1
        if k < 0 or m.start() >= spans[k][1]:
            return m
        start = spans[k][1]  # inside an object: look on after it
    return None


def harmony_messages(text: str) -> list[tuple[str, str | None, str, bool]]:
    """gpt-oss Harmony messages of ``text``: (channel, recipient tool or None, content, closed). A token inside
    a JSON object (in one of its strings) is text, never a token: it splits nothing. That object is a complete
    one, a closed ``{...}`` that is not JSON, or one that never closes and starts before every token (the
    answer begins as JSON and was cut: the tokens in its strings split nothing either)."""
    found, broken, unclosed, _ = scan(text)
    spans = sorted([(s, e) for s, e, _ in found] + broken)
    ends = [s for s, _ in spans]
    if unclosed is not None and _first_outside(_HARMONY, text, 0, unclosed, spans, ends) is None:
        spans.append((unclosed, len(text)))
        ends.append(unclosed)
    cuts, at = [0], 0
    while (m := _first_outside(_H_START, text, at, len(text), spans, ends)) is not None:
        cuts.append(m.end())
        at = m.end()
    out = []
    for start, stop in zip(cuts, cuts[1:] + [len(text) + len("<|start|>")]):
        stop -= len("<|start|>")  # the segment ends where the next <|start|> begins
        msg = _first_outside(_H_MESSAGE, text, start, stop, spans, ends)
        if msg is None:
            continue
        header = text[start:msg.start()]
        role, _, channel_part = header.partition("<|channel|>")
        channel = (channel_part.split() or [""])[0].strip().lower()
        to = _H_RECIPIENT.search(header)
        end = _first_outside(_H_END, text, msg.end(), stop, spans, ends)
        out.append((channel, to.group(1) if to else None, text[msg.end():end.start() if end else stop], bool(end)))
    return out


def _prepare(text: str | None, truncated: bool) -> tuple[str, list | None]:
    """(answer text, Harmony messages or None). Reasoning is dropped; Harmony keeps only ``final`` content."""
    if text.__class__ is not str or "\ufeff" in text or "\r" in text:
        text = _normalize(text)
    messages = None
    if "<" not in text:  # no Harmony, no <think>: the common case
        return text, messages
    if _HARMONY.search(text) and (messages := harmony_messages(text) or None):
        finals = [m for m in messages if m[0] == "final"]
        text = "\n".join(m[2] for m in finals)
        if truncated and finals and not finals[-1][3] and not text.strip():
            raise Unusable("truncated", "cut inside the final channel")
    text = _drop_thinking(text, truncated)
    return text, messages


def visible_text(text: str | None) -> str:
    """The answer without reasoning (``<think>`` blocks, Harmony analysis): what a reader looks at."""
    try:
        return _prepare(text, False)[0].strip()
    except Unusable:
        return ""


def json_candidates(text: str | None) -> list[str]:
    """The text of every complete top-level ``{...}`` object of an answer (reasoning dropped)."""
    body = visible_text(text)
    return [body[s:e] for s, e, _ in scan_objects(body)[0]]


# ====================================================================== candidates of a stage
def _lower(d: dict) -> dict:
    """Keys in lower case; two keys differing only in case with different values are ambiguous."""
    out = {k.lower(): v for k, v in d.items()}  # the keys of a JSON object are strings
    if len(out) == len(d):
        return out
    out = {}
    for k, v in d.items():
        lk = k.lower()
        if lk in out and out[lk] != v:
            raise Unusable("ambiguous", f"keys differing only in letter case with different values: {k!r}")
        out[lk] = v
    return out


def _has(d: dict, keys) -> bool:
    return not keys.isdisjoint(d) or any(k.lower() in keys for k in d)  # keys of a JSON object are strings


def _with_signature(value, keys) -> dict | None:
    """``value`` when it carries a signature key, or the one object it wraps that does, else None."""
    if not isinstance(value, dict):
        return None
    if _has(value, keys):
        return value
    inner = [v for v in value.values() if isinstance(v, dict) and _has(v, keys)]
    return inner[0] if len(inner) == 1 else None


def sound(value, text: bool = True) -> None:
    """Raises ``Unusable`` for an answer object no stage may read: one with a key given twice with different
    values (``ambiguous``), or (``text``) a lone surrogate in a key or string (``schema``: not text). Walked
    without recursion; objects are at most ``MAX_DEPTH`` deep."""
    stack = [value]
    while stack:
        v = stack.pop()
        if isinstance(v, Conflicted):
            raise Unusable("ambiguous", f"key {v.conflicts[0]!r} given twice with different values in one object")
        if isinstance(v, dict):
            for k, x in v.items():
                if text and isinstance(k, str) and has_lone_surrogate(k):
                    raise Unusable("schema", f"a lone surrogate in the key {k.encode('utf-8', 'replace')[:40]!r}")
                stack.append(x)
        elif isinstance(v, list):
            stack.extend(v)
        elif text and isinstance(v, str) and has_lone_surrogate(v):
            raise Unusable("schema", f"a lone surrogate (not text) in {v.encode('utf-8', 'replace')[:40]!r}")


_KEY_PATTERNS: dict = {}


def quoted_key(keys) -> re.Pattern:
    """A pattern for any of ``keys`` written as a quoted JSON key (``"key":``), any case."""
    keys = tuple(sorted(keys))
    if keys not in _KEY_PATTERNS:
        _KEY_PATTERNS[keys] = re.compile("[\"'\u201c\u201d](?:{})[\"'\u201c\u201d]\\s*:".format("|".join(map(re.escape, keys))), re.I)
    return _KEY_PATTERNS[keys]


def _candidates(text: str, keys, truncated: bool, required: bool = True, text_only: bool = True,
                first: tuple | None = None) -> tuple[list[dict], list[tuple[int, int, object]]]:
    """Objects carrying a signature key (unwrapped one level) and all complete objects as (start, end, value). A closed
    ``{...}`` that is not an object but names a signature key as a key is an answer that cannot be read.
    ``text_only``: a lone surrogate makes a candidate unusable (see :func:`sound`). A text of one clean object
    (:func:`gavel.answers.scan.first_object`) is not scanned: it holds nothing else. ``first``: what
    ``first_object(text)`` returned, when the caller has already asked."""
    first, clean = first_object(text) if first is None else first
    if clean:
        one = first[:3]
        if not keys.isdisjoint(one[2]):  # the common answer: the object carries a signature key itself
            return [one[2]], [one]
        objs, broken, unclosed, suspect = [one], [], None, ()
    else:
        objs, broken, unclosed, suspect = scan(text, first)
    if unclosed is not None:
        tail = text[unclosed:].lower()
        if truncated:
            raise Unusable("truncated", f"cut inside an object opened at character {unclosed}")
        if any(f'{k}' in tail for k in keys):
            raise Unusable("no_json", f"an answer object opened at character {unclosed} never closes")
    found = []
    for n, (_, _, v) in enumerate(objs):
        c = _with_signature(v, keys)
        if c is not None:
            if n in suspect:
                sound(v, text_only)
            found.append(c)
    key = quoted_key(keys) if broken else None
    bad = next((s for s, e in broken if key.search(text, s, e)), None) if broken else None
    if bad is not None:
        if found:
            raise Unusable("ambiguous", f"an answer object at character {bad} is not JSON, beside one that is")
        raise Unusable("no_json", f"the answer object at character {bad} is not JSON "
                                  f"(comments, unquoted keys or a broken structure): {text[bad:bad + 60]!r}")
    if not found and required:
        if truncated:
            raise Unusable("truncated", "cut before a complete answer object")
        if not text.strip():
            raise Unusable("empty", "no answer text")
        raise Unusable("no_json", f"no answer object (with {' / '.join(sorted(keys))}) in {text.strip()[:80]!r}")
    return found, objs


def _one(readings: list[dict]) -> dict:
    """The one reading all of ``readings`` agree on, else ``ambiguous`` (at most 10 different ones counted)."""
    distinct = [readings[0]]
    for r in readings:
        if r != distinct[0] and r not in distinct and len(distinct) < 10:
            distinct.append(r)
    if len(distinct) > 1:
        raise Unusable("ambiguous", f"{len(distinct)}{'+' if len(distinct) == 10 else ''} different answers in one reply")
    return distinct[0]


def _read_each(found: list[dict], reader) -> dict:
    if len(found) == 1:  # one candidate: its reading, or why it is unusable
        return reader(found[0])
    readings, errors = [], []
    for obj in found:
        try:
            readings.append(reader(obj))
        except Unusable as err:
            errors.append(err)
    if errors and readings:
        raise Unusable("ambiguous", f"one answer object is unusable ({errors[0]}) beside a usable one")
    if errors:
        raise errors[0]
    return _one(readings)


#: a reading's ``dropped`` lists this many pieces one by one; the rest are counted, one entry per reason
MAX_DROPPED = 1_000


def _drop(dropped: list, field: str, value, why: str) -> None:
    """Lists one thrown-away piece; past ``MAX_DROPPED`` it is only counted, in one closing entry per reason
    (``{"field": "(more)", "value": None, "why", "count"}``), so a runaway answer's reading stays small."""
    if len(dropped) < MAX_DROPPED:
        dropped.append({"field": field, "value": value, "why": why})
        return
    for entry in dropped[MAX_DROPPED:]:  # at most one per reason
        if entry["why"] == why:
            entry["count"] += 1
            return
    dropped.append({"field": "(more)", "value": None, "why": why, "count": 1})


