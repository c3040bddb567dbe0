"""Finding the complete top-level ``{...}`` objects of an answer, in time linear in its length.

Each ``{`` is first matched to its closing ``}`` by a string-aware scan (double, single and curly quotes);
only that span is then decoded, as JSON (the C decoder) or, failing that, by a small tolerant reader
(trailing commas, Python literals, curly or single quotes, ``\\'``, raw line breaks in strings). A span that
reads as neither is skipped as a whole, so no character is looked at more than a few times (a failed decode
of the whole text would count its lines from the start: quadratic over many brace fragments).

Values are made safe for every later step: an integer of more than ``MAX_DIGITS`` digits (Python refuses to
convert it) reads as an infinite float, which no stage accepts; an object nested deeper than ``MAX_DEPTH``
is not read; a key given twice with different values marks its object (``conflicts``) instead of the last
value winning silently; a ``\\uD83D\\uDE00`` surrogate pair becomes its character.
"""

from __future__ import annotations

import json
import math
import re

MAX_DEPTH = 64  # deeper objects are not read (no answer of any stage nests beyond 6)
MAX_DIGITS = 4000  # Python's int() refuses more than 4,300 digits


class Conflicted(dict):
    """A JSON object in which some key was given twice with different values (``conflicts`` names them);
    the last value is kept, as JSON decoders do, but no stage reads such an object (ambiguous)."""

    conflicts: list = []


def _pairs(pairs) -> dict:
    _OBJECTS[0] += 1
    out = dict(pairs)
    if len(out) == len(pairs):  # the usual case, at C speed
        return out
    out, conflicts, named = {}, [], set()
    for k, v in pairs:
        # a value given again replaces one that differs, or one holding a conflict of its own (the decoder
        # would drop it with its conflict: ``{"e": {"k": 0, "k": 1}, "e": {"k": 1}}`` is ambiguous too)
        if k in out and k not in named and (out[k] != v or _holds_conflict(out[k])):
            conflicts.append(k)
            named.add(k)
        out[k] = v
    if conflicts:
        out = Conflicted(out)
        out.conflicts = conflicts
        _CONFLICTED[0] += 1
    return out


def _holds_conflict(value) -> bool:
    """Whether ``value`` is, or holds at any depth, a Conflicted object (walked without recursion; only for a
    value a repeated key replaces, which the usual answer has none of)."""
    stack = [value]
    while stack:
        v = stack.pop()
        if isinstance(v, Conflicted):
            return True
        if isinstance(v, dict):
            stack.extend(v.values())
        elif isinstance(v, list):
            stack.extend(v)
    return False


#: how many objects were ever decoded: a decode that adds N made N objects (a concurrent decode elsewhere can
#: only add more, never fewer)
_OBJECTS = [0]
#: how many Conflicted objects were ever made: a decode that leaves it unchanged made none (a concurrent decode
#: elsewhere can only make a clean object look suspect, never the reverse)
_CONFLICTED = [0]


def _int(text: str):
    if len(text) > MAX_DIGITS:
        return -math.inf if text.startswith("-") else math.inf
    return int(text)


_DECODER = json.JSONDecoder(strict=False, object_pairs_hook=_pairs, parse_int=_int)
#: the same without a Python call per integer: for spans that hold no integer of MAX_DIGITS digits
_SHORT = json.JSONDecoder(strict=False, object_pairs_hook=_pairs)
#: ASCII digits as ``0``, every other byte as a blank
_DIGITS_ONLY = bytes(48 if 48 <= c <= 57 else 32 for c in range(256))
_DIGIT_RUN = b"0" * MAX_DIGITS
_ASCII_DIGITS = frozenset("0123456789")


def _long_digits(text: str, start: int, end: int) -> bool:
    """Whether ``text[start:end]`` holds a run of MAX_DIGITS ASCII digits; a span without one holds no integer
    that ``_int`` reads as infinite, so ``_SHORT`` reads it as ``_DECODER`` does. Looked for in its UTF-8 bytes
    (a digit is one byte there, never part of another character's), at C speed; only when one of the characters
    every ``MAX_DIGITS // 2`` from ``start`` is a digit (a run of MAX_DIGITS holds at least one of them)."""
    if not any(text[p] in _ASCII_DIGITS for p in range(start, end, MAX_DIGITS // 2)):
        return False
    return _DIGIT_RUN in text[start:end].encode("utf-8", "surrogatepass").translate(_DIGITS_ONLY)


def _decode_at(text: str, i: int):
    """(value, end) of the JSON value starting at ``i``, or (None, i) when it is not JSON (or nests too deep
    for the C decoder)."""
    try:
        value, end = _SHORT.scan_once(text, i)  # raw_decode without its Python frame
        if end - i <= MAX_DIGITS or not _long_digits(text, i, end):
            return value, end
    except (StopIteration, json.JSONDecodeError, RecursionError):  # not JSON
        return None, i
    except ValueError:  # an integer Python refuses to convert: read again, with MAX_DIGITS
        pass
    try:
        return _DECODER.scan_once(text, i)
    except (StopIteration, ValueError, RecursionError):
        return None, i


class _Fail(Exception):
    def __init__(self, pos: int, eof: bool):
        self.pos, self.eof = pos, eof


_WS = " \t\n\r\u00a0"
_QUOTES = {'"': '"', "'": "'", "\u201c": "\u201d", "\u201d": "\u201d"}
_ESC = {'"': '"', "\\": "\\", "/": "/", "b": "\b", "f": "\f", "n": "\n", "r": "\r", "t": "\t", "'": "'"}
_NUMBER = re.compile(r"-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][-+]?[0-9]+)?")
_LITERALS = (("true", True), ("false", False), ("null", None), ("True", True), ("False", False), ("None", None))
_PLAIN = {q: re.compile(f"[^{re.escape(q)}\\\\]*") for q in set(_QUOTES.values())}


def _skip(s: str, i: int) -> int:
    n = len(s)
    while i < n and s[i] in _WS:
        i += 1
    return i


def _value(s: str, i: int, depth: int = 0):
    if depth > MAX_DEPTH:
        raise _Fail(i, False)
    i = _skip(s, i)
    if i >= len(s):
        raise _Fail(i, True)
    ch = s[i]
    if ch == "{":
        pairs, i = [], _skip(s, i + 1)
        while True:
            if i >= len(s):
                raise _Fail(i, True)
            if s[i] == "}":
                return _pairs(pairs), i + 1
            if s[i] not in _QUOTES:
                raise _Fail(i, False)
            key, i = _string(s, i)
            i = _skip(s, i)
            if i >= len(s):
                raise _Fail(i, True)
            if s[i] != ":":
                raise _Fail(i, False)
            value, i = _value(s, i + 1, depth + 1)
            pairs.append((key, value))
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
        return (float(text) if any(c in text for c in ".eE") else _int(text)), end
    for word, val in _LITERALS:
        if s.startswith(word, i):
            return val, i + len(word)
    if any(word.startswith(s[i:i + 5]) for word, _ in _LITERALS) and i + 5 > len(s):
        raise _Fail(i, True)
    raise _Fail(i, False)


def _string(s: str, i: int) -> tuple[str, int]:
    close = _QUOTES[s[i]]
    plain = _PLAIN[close]
    out, i, n = [], i + 1, len(s)
    while i < n:
        m = plain.match(s, i)
        if m.end() > i:
            out.append(m.group())
            i = m.end()
            if i >= n:
                break
        ch = s[i]
        if ch == close:
            return _join_surrogates("".join(out)), i + 1
        # a backslash
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
            if not re.fullmatch(r"[0-9a-fA-F]{4}", code):
                raise _Fail(i, False)
            out.append(chr(int(code, 16)))
            i += 6
            continue
        raise _Fail(i, False)
    raise _Fail(i, True)


_PAIR = re.compile("[\ud800-\udbff][\udc00-\udfff]")


def _join_surrogates(text: str) -> str:
    if not _SURROGATE.search(text):
        return text
    return _PAIR.sub(lambda m: m.group().encode("utf-16", "surrogatepass").decode("utf-16"), text)


_SURROGATE = re.compile("[\ud800-\udfff]")


def has_lone_surrogate(text: str) -> bool:
    return _SURROGATE.search(text) is not None


#: what the brace matcher stops at: a brace or a quote that may open a string
_STOPS = re.compile("[{}\"'\u201c\u201d]")


def matching_brace(s: str, i: int) -> int | None:
    """Index of the ``}`` closing the ``{`` at ``i`` (string-aware), or None when it never closes. A ``'`` right
    after a letter or digit is an apostrophe, not a quote."""
    depth, n = 0, len(s)
    while True:
        m = _STOPS.search(s, i)
        if m is None:
            return None
        i = m.start()
        ch = s[i]
        if ch == "{":
            depth += 1
        elif ch == "}":
            depth -= 1
            if depth == 0:
                return i
        elif ch != "'" or not (i > 0 and s[i - 1].isalnum()):
            close = _PLAIN[_QUOTES[ch]]
            j = i + 1
            while True:
                j = close.match(s, j).end()
                if j >= n:
                    return None
                if s[j] == "\\":
                    j += 2
                    continue
                break
            i = j
        i += 1


def _depth_ok(value) -> bool:
    """Whether ``value`` nests at most MAX_DEPTH deep (checked level by level, without recursion)."""
    level, depth = [value], 0
    while level:
        if depth > MAX_DEPTH:
            return False
        below = []
        for v in level:
            if isinstance(v, dict):
                below.extend(x for x in v.values() if isinstance(x, (dict, list)))
            elif isinstance(v, list):
                below.extend(x for x in v if isinstance(x, (dict, list)))
        level, depth = below, depth + 1
    return True


def _tolerant(span: str):
    """The object that is exactly ``span`` (a ``{...}`` whose braces match and that is not JSON, or is JSON
    nested too deep) by the tolerant reader, or raises ``_Fail``."""
    value, end = _value(span, 0)
    if end != len(span):
        raise _Fail(end, False)
    return value


#: a surrogate written as an escape (``\\ud800``); with no raw surrogate either, a span holds no lone surrogate
_ESCAPED_SURROGATE = re.compile(r"\\u[dD][89a-fA-F]")


def _surrogate_checks(text: str) -> tuple[bool, bool]:
    """(whether ``text`` may hold a raw surrogate, whether it may hold an escaped one), each checked once for
    the whole text at C speed, so that the spans of a text without any are not searched (a backslash is looked
    for first: one character is found faster than two)."""
    raw = not text.isascii()
    if raw:
        try:
            text.encode("utf-8")
            raw = False
        except UnicodeEncodeError:
            pass
    return raw, "\\" in text and "\\u" in text
#: a span with fewer opening brackets than this cannot nest deeper than MAX_DEPTH
_SHALLOW = MAX_DEPTH


def scan(text: str, first: tuple[int, int, object, int] | None = None
         ) -> tuple[list[tuple[int, int, object]], list[tuple[int, int]], int | None, set[int]]:
    """(complete top-level objects as (start, end, value), spans of closed ``{...}`` that are not objects,
    where an object that never closes starts or None, the positions in the first list of the objects that may
    hold a key given twice or a lone surrogate: only those need :func:`gavel.answers.text.sound`). Nested
    objects are never candidates themselves.

    A ``{`` is first decoded where it stands by the C decoder: valid JSON ends exactly where the string-aware
    brace matcher would close it (outside strings, JSON has no quote). A failed decode costs as much as the
    text before it (the decoder's error counts lines from the start), so after the first one each ``{`` is
    matched brace by brace first and only its span decoded, as JSON or by the tolerant reader: no character is
    looked at more than a few times. ``first``: the C decoder's reading of the first ``{`` already made
    (:func:`first_object`)."""
    found, broken, suspect, i, direct = [], [], set(), 0, True
    raw, escaped = (False, "\\" in text and "\\u" in text) if text.isascii() else _surrogate_checks(text)
    while True:
        i = text.find("{", i)
        if i < 0:
            return found, broken, None, suspect
        made, start = _CONFLICTED[0], i
        value = None
        if first is not None:
            _, end, value, made = first
            first = None
        elif direct:
            try:  # _decode_at's common case, inline
                value, end = _SHORT.scan_once(text, i)
                if end - i > MAX_DIGITS and _long_digits(text, i, end):
                    value, end = _decode_at(text, i)
            except (StopIteration, json.JSONDecodeError, RecursionError):
                value = None
            except ValueError:
                value, end = _decode_at(text, i)
        direct = direct and value is not None
        if value is None or (text.count("{", i, end) + text.count("[", i, end) > _SHALLOW and not _depth_ok(value)):
            close = matching_brace(text, i)
            if close is None:
                return found, broken, i, suspect
            end = close + 1
            span = text[start:end]
            value, stop = _decode_at(span, 0)
            if value is None or stop != len(span) or not _shallow(span, 0, stop, value):
                try:
                    value = _tolerant(span)
                except (_Fail, RecursionError):
                    broken.append((start, end))
                    i = end
                    continue
        if _CONFLICTED[0] != made or (raw and _SURROGATE.search(text, start, end)) or (
                escaped and _ESCAPED_SURROGATE.search(text, start, end)):
            suspect.add(len(found))
        found.append((start, end, value))
        i = end


def first_object(text: str) -> tuple[tuple[int, int, object, int] | None, bool]:
    """The object at the first ``{`` as the C decoder reads it where it stands: ((start, end, value, the count
    of ``_CONFLICTED`` before it) or None when the decoder does not read it there or it may hold an integer of
    MAX_DIGITS digits; whether :func:`scan` would find it alone and mark it clean: no key given twice, no lone
    surrogate, at most MAX_DEPTH objects decoded and ``[`` together, no ``{`` after it). The common answer is
    one clean object: it needs no scan, and a scan given this reading (``first``) does not decode it again."""
    i = text.find("{")
    if i < 0:
        return None, False
    made, objects = _CONFLICTED[0], _OBJECTS[0]
    try:
        value, end = _SHORT.scan_once(text, i)
    except (StopIteration, ValueError, RecursionError):
        return None, False
    if end - i > MAX_DIGITS and _long_digits(text, i, end):
        return None, False
    first = (i, end, value, made)
    # nested at most as deep as it holds objects and lists: the objects counted as decoded, the lists by their "["
    if (_CONFLICTED[0] != made or text.find("{", end) >= 0
            or _OBJECTS[0] - objects + text.count("[", i, end) > _SHALLOW):
        return first, False
    raw, escaped = (False, "\\" in text and "\\u" in text) if text.isascii() else _surrogate_checks(text)
    return first, not ((raw and _SURROGATE.search(text, i, end)) or (escaped and _ESCAPED_SURROGATE.search(text, i, end)))


def _shallow(text: str, start: int, end: int, value) -> bool:
    """Whether the value decoded from ``text[start:end]`` nests at most MAX_DEPTH deep (counted brackets
    first: fewer than MAX_DEPTH cannot nest deeper)."""
    return text.count("{", start, end) + text.count("[", start, end) <= _SHALLOW or _depth_ok(value)


def scan_objects(text: str) -> tuple[list[tuple[int, int, object]], int | None]:
    """Complete top-level objects of ``text`` as (start, end, value), and where an object that never
    closes starts (None when every ``{`` is accounted for). Nested objects are never candidates themselves."""
    found, _, unclosed, _ = scan(text)
    return found, unclosed


def loads(text: str):
    """The one JSON value ``text`` holds (blanks around it allowed), with the same safe values; ValueError
    when it is not exactly one JSON value."""
    text = text.strip()
    try:
        value, end = _DECODER.raw_decode(text)
    except (json.JSONDecodeError, RecursionError):
        raise ValueError("not a JSON value") from None
    if end != len(text) or not _depth_ok(value):
        raise ValueError("not one JSON value")
    return value
