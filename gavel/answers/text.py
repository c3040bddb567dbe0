"""Text to candidates, shared by every stage: line ends and BOM, reasoning dropped (``</think>``, Harmony
channels), complete top-level ``{...}`` objects read as JSON or by the small tolerant reader, a stage's
signature keys, one candidate or ambiguous. Also the reasons and :class:`Unusable`."""

from __future__ import annotations

import json
import re

STAGES = ("extract", "compare_single", "compare_multi", "residual_facts", "style", "agent_action")
#: Why an answer is unusable (``Unusable.reason``); stages add ``failed`` (no answer) and ``indices``.
REASONS = ("failed", "empty", "truncated", "no_json", "ambiguous", "schema", "unknown_label", "unknown_tool",
           "no_rating", "indices")
MAX_REASKS = 2


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


def harmony_messages(text: str) -> list[tuple[str, str | None, str, bool]]:
    """gpt-oss Harmony messages of ``text``: (channel, recipient tool or None, content, closed)."""
    out = []
    for segment in text.split("<|start|>"):
        if "<|message|>" not in segment:
            continue
        header, _, body = segment.partition("<|message|>")
        role, _, channel_part = header.partition("<|channel|>")
        channel = (channel_part.split() or [""])[0].strip().lower()
        to = _H_RECIPIENT.search(header)
        end = _H_END.search(body)
        out.append((channel, to.group(1) if to else None, body[:end.start()] if end else body, bool(end)))
    return out


def _prepare(text: str | None, truncated: bool) -> tuple[str, list | None]:
    """(answer text, Harmony messages or None). Reasoning is dropped; Harmony keeps only ``final`` content."""
    text = _normalize(text)
    messages = None
    if _HARMONY.search(text):
        messages = harmony_messages(text)
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


# ====================================================================== tolerant object reading
class _Fail(Exception):
    def __init__(self, pos: int, eof: bool):
        self.pos, self.eof = pos, eof


_WS = " \t\n\r\u00a0"
_QUOTES = {'"': '"', "'": "'", "\u201c": "\u201d", "\u201d": "\u201d"}
_ESC = {'"': '"', "\\": "\\", "/": "/", "b": "\b", "f": "\f", "n": "\n", "r": "\r", "t": "\t", "'": "'"}
_NUMBER = re.compile(r"-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][-+]?\d+)?")
_LITERALS = (("true", True), ("false", False), ("null", None), ("True", True), ("False", False), ("None", None))


def _skip(s: str, i: int) -> int:
    n = len(s)
    while i < n and s[i] in _WS:
        i += 1
    return i


def _value(s: str, i: int, depth: int = 0):
    if depth > 200:
        raise _Fail(i, False)
    i = _skip(s, i)
    if i >= len(s):
        raise _Fail(i, True)
    ch = s[i]
    if ch == "{":
        out, i = {}, _skip(s, i + 1)
        while True:
            if i >= len(s):
                raise _Fail(i, True)
            if s[i] == "}":
                return out, i + 1
            if s[i] not in _QUOTES:
                raise _Fail(i, False)
            key, i = _string(s, i)
            i = _skip(s, i)
            if i >= len(s):
                raise _Fail(i, True)
            if s[i] != ":":
                raise _Fail(i, False)
            out[key], i = _value(s, i + 1, depth + 1)
            i = _skip(s, i)
            if i < len(s) and s[i] == ",":
                i = _skip(s, i + 1)
            elif i < len(s) and s[i] != "}":
                raise _Fail(i, False)
    if ch == "[":
        out, i = [], _skip(s, i + 1)
        while True:
            if i >= len(s):
                raise _Fail(i, True)
            if s[i] == "]":
                return out, i + 1
            v, i = _value(s, i, depth + 1)
            out.append(v)
            i = _skip(s, i)
            if i < len(s) and s[i] == ",":
                i = _skip(s, i + 1)
            elif i < len(s) and s[i] != "]":
                raise _Fail(i, False)
    if ch in _QUOTES:
        return _string(s, i)
    m = _NUMBER.match(s, i)
    if m:
        end = m.end()
        if end == len(s):
            raise _Fail(end, True)  # a number at the very end may be cut
        text = m.group()
        return (float(text) if any(c in text for c in ".eE") else int(text)), end
    for word, val in _LITERALS:
        if s.startswith(word, i):
            return val, i + len(word)
    if any(word.startswith(s[i:]) for word, _ in _LITERALS):
        raise _Fail(i, True)
    raise _Fail(i, False)


def _string(s: str, i: int) -> tuple[str, int]:
    close = _QUOTES[s[i]]
    out, i, n = [], i + 1, len(s)
    while i < n:
        ch = s[i]
        if ch == close:
            return "".join(out), i + 1
        if ch == "\\":
            if i + 1 >= n:
                raise _Fail(i, True)
            nxt = s[i + 1]
            if nxt in _ESC:
                out.append(_ESC[nxt])
                i += 2
                continue
            if nxt == "u":
                code = s[i + 2:i + 6]
                if len(code) < 4:
                    raise _Fail(i, True)
                try:
                    out.append(chr(int(code, 16)))
                except ValueError:
                    raise _Fail(i, False) from None
                i += 6
                continue
            raise _Fail(i, False)
        out.append(ch)
        i += 1
    raise _Fail(i, True)


_DECODER = json.JSONDecoder(strict=False)


def _object_at(s: str, i: int):
    """(object, end) of the ``{`` at ``i``; raises ``_Fail``."""
    try:
        value, end = _DECODER.raw_decode(s, i)
        return value, end
    except (json.JSONDecodeError, RecursionError):
        pass
    value, end = _value(s, i)
    return value, end


def _matching_brace(s: str, i: int) -> int | None:
    """Index of the ``}`` closing the ``{`` at ``i`` (string-aware), or None when it never closes."""
    depth, quote, n = 0, None, len(s)
    while i < n:
        ch = s[i]
        if quote:
            if ch == "\\":
                i += 2
                continue
            if ch == quote:
                quote = None
        elif ch == '"' or ch == "\u201c":
            quote = _QUOTES[ch]
        elif ch == "'" and not (i > 0 and s[i - 1].isalnum()):
            quote = "'"
        elif ch == "{":
            depth += 1
        elif ch == "}":
            depth -= 1
            if depth == 0:
                return i
        i += 1
    return None


def scan_objects(text: str) -> tuple[list[tuple[int, int, object]], int | None]:
    """Complete top-level objects of ``text`` as (start, end, value), and where an object that never
    closes starts (None when every ``{`` is accounted for). Nested objects are never candidates themselves."""
    found, i, unclosed = [], 0, None
    while True:
        i = text.find("{", i)
        if i < 0:
            return found, unclosed
        try:
            value, end = _object_at(text, i)
        except _Fail as fail:
            close = None if fail.eof else _matching_brace(text, i)
            if close is None:
                return found, i
            i = close + 1
            continue
        except RecursionError:
            return found, i
        found.append((i, end, value))
        i = end


def json_candidates(text: str | None) -> list[str]:
    """The text of every complete top-level ``{...}`` object of an answer (reasoning dropped)."""
    body = visible_text(text)
    return [body[s:e] for s, e, _ in scan_objects(body)[0]]


# ====================================================================== candidates of a stage
def _lower(d: dict) -> dict:
    """Keys in lower case; two keys differing only in case with different values are ambiguous."""
    out = {}
    for k, v in d.items():
        lk = str(k).lower()
        if lk in out and out[lk] != v:
            raise Unusable("ambiguous", f"keys differing only in letter case with different values: {k!r}")
        out[lk] = v
    return out


def _has(d: dict, keys) -> bool:
    return any(str(k).lower() in keys for k in d)


def _with_signature(value, keys) -> dict | None:
    """``value`` when it carries a signature key, or the one object it wraps that does, else None."""
    if not isinstance(value, dict):
        return None
    if _has(value, keys):
        return value
    inner = [v for v in value.values() if isinstance(v, dict) and _has(v, keys)]
    return inner[0] if len(inner) == 1 else None


def _candidates(text: str, keys, truncated: bool, required: bool = True) -> tuple[list[dict], list[tuple[int, int]]]:
    """Objects carrying a signature key (unwrapped one level) and the spans of all complete objects."""
    objs, unclosed = scan_objects(text)
    if unclosed is not None:
        tail = text[unclosed:].lower()
        if truncated:
            raise Unusable("truncated", f"cut inside an object opened at character {unclosed}")
        if any(f'{k}' in tail for k in keys):
            raise Unusable("no_json", f"an answer object opened at character {unclosed} never closes")
    found = [c for c in (_with_signature(v, keys) for _, _, v in objs) if c is not None]
    if not found and required:
        if truncated:
            raise Unusable("truncated", "cut before a complete answer object")
        if not text.strip():
            raise Unusable("empty", "no answer text")
        raise Unusable("no_json", f"no answer object (with {' / '.join(sorted(keys))}) in {text.strip()[:80]!r}")
    return found, [(s, e) for s, e, _ in objs]


def _one(readings: list[dict]) -> dict:
    distinct = []
    for r in readings:
        if r not in distinct:
            distinct.append(r)
    if len(distinct) > 1:
        raise Unusable("ambiguous", f"{len(distinct)} different answers in one reply")
    return distinct[0]


def _read_each(found: list[dict], reader) -> dict:
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


def _drop(dropped: list, field: str, value, why: str) -> None:
    dropped.append({"field": field, "value": value, "why": why})


