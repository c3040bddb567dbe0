"""What each stage's reading is made of: extract, compare_single, compare_multi, residual_facts, style,
(the rules of docs/ANSWERS.md, one section each; agent_action is in ``gavel.answers.agent``)."""

from __future__ import annotations

import math
import re

from gavel.answers.examples import EXAMPLE_CHARS, echo
from gavel.answers.scan import MAX_DIGITS, scan
from gavel.answers.text import Unusable, _candidates, _drop, _lower, _one, _read_each, sound
from gavel.core.vocab import AB_RELATIONS, STYLE_ASPECTS, STYLE_RUBRIC, STYLE_SCALE

# ====================================================================== extract
_PLACEHOLDER = re.compile(r"^(?:not\s+applicable|n/?a|none|not\s+(?:mentioned|specified|stated))\.?$", re.I)
#: the prompts' own format examples echoed back: "<one distinct piece of information>", "..."
_ECHO = re.compile(r"^(?:<[^<>]*[A-Za-z][^<>]*>|\.{3}|\u2026)$")
_SPACES = re.compile(r"\s+")


def placeholder_why(text: str, stage: str | None = None) -> str | None:
    """Why a value text is no information (``placeholder``, ``prompt_placeholder``, or with ``stage``
    ``prompt_echo``: the words of the stage's own prompt, see ``gavel.answers.examples``), or None."""
    t = text.strip()
    if _PLACEHOLDER.match(t):
        return "placeholder"
    if _ECHO.match(t):
        return "prompt_placeholder"
    if stage is not None and echo(stage, t):
        return "prompt_echo"
    return None


#: keys whose text is an object's reasoning: never read, never listed as dropped (any case, at any depth)
REASONING_KEYS = frozenset({"reasoning", "reason", "explanation", "rationale", "analysis", "thinking", "thoughts",
                            "thought", "justification"})


def _known(*keys: str) -> frozenset:
    """The keys a stage reads (lower case) and the reasoning keys: an object's keys not among them are unknown."""
    return frozenset(keys) | REASONING_KEYS


def _unknown(obj: dict, known: frozenset, field: str, dropped: list) -> None:
    """Lists in ``dropped`` (``unknown_key``) each key of ``obj`` that is neither read nor reasoning (``known``,
    from :func:`_known`; any case)."""
    if obj.keys() <= known:  # the common case: the prompt's own keys, in the prompt's case
        return
    for k, v in obj.items():
        if k.lower() not in known:
            _drop(dropped, f"{field}{k}", v, "unknown_key")


def _text_of(v) -> str | None:
    """A value as text: a string, or a finite number written as JSON writes it; else None."""
    if isinstance(v, str):
        return v
    if isinstance(v, int) and not isinstance(v, bool):
        return str(v)
    if isinstance(v, float) and math.isfinite(v):
        return repr(v)
    return None


def _entries(obj: dict) -> list:
    """The ``extracted`` list of an extract or residual answer (one object stands for a list of one)."""
    if "extracted" in obj and (len(obj) == 1 or (len(obj) == 2 and "reasoning" in obj)):  # the prompt's keys
        entries = obj["extracted"]
    else:
        entries = _lower(obj).get("extracted")
    if isinstance(entries, dict):
        entries = [entries]
    if not isinstance(entries, list):
        raise Unusable("schema", f"extracted is {type(entries).__name__}, not a list")
    return entries


#: the most evidence quotes the list values of one extract answer may share out (a list value of M texts with K
#: quotes gives M entries of K quotes each: M·K); more is not an extraction
MAX_SHARED_EVIDENCE = 10_000


def _kept_text(x) -> tuple[str | None, str | None]:
    """(the stripped text of one value, None), or (None, why it is dropped): ``null``, ``not_text``, ``empty``,
    ``placeholder``, ``prompt_placeholder``."""
    if x is None:
        return None, "null"
    t = x if x.__class__ is str else _text_of(x)
    if t is None:
        return None, "not_text"
    t = t.strip()
    if not t:
        return None, "empty"
    if t[0] in "nN<.\u2026":  # every placeholder starts with one of these
        why = placeholder_why(t)
        if why:
            return None, why
    if echo("extract", t):
        return None, "prompt_echo"
    return t, None


#: an evidence quote longer than this is no example of the extract prompt (``echo`` need not look at it)
_QUOTE_CHARS = EXAMPLE_CHARS["extract"]
_TOP_KEYS = _known("extracted")
_AS_ASKED = frozenset({"extracted", "reasoning"})  # an extract answer's keys as the prompt asks for them
_ENTRY_KEYS = _known("value", "evidence", "evidences")


def _extract(obj: dict, summary: str | None) -> dict:
    entries = obj.get("extracted")
    out, dropped, first, again, shared = [], [], {}, {}, 0
    if entries.__class__ is not list or not obj.keys() <= _AS_ASKED:  # else: the prompt's keys, a list
        entries = _entries(obj)
        _unknown(obj, _TOP_KEYS, "", dropped)
    for n, raw in enumerate(entries):
        if not isinstance(raw, dict):
            _drop(dropped, f"extracted[{n}]", raw, "not_an_object")
            continue
        if len(raw) == 2 and "value" in raw and "evidence" in raw:  # the prompt's keys: none unknown
            entry = raw
        else:
            entry = _lower(raw)
            _unknown(entry, _ENTRY_KEYS, f"extracted[{n}].", dropped)
        ev = entry["evidence"] if "evidence" in entry else entry.get("evidences")
        ev = [] if ev is None else ev if isinstance(ev, list) else [ev]
        evidence = []
        for e in ev:
            if e.__class__ is str and (t := e.strip()) and t[0] not in "<.\u2026" and (
                    len(t) > _QUOTE_CHARS or not echo("extract", t, False)):
                evidence.append(e)  # a plain quote: kept as it is
                continue
            t = _text_of(e.get("text") if isinstance(e, dict) else e)
            if t is None or not t.strip():
                _drop(dropped, f"extracted[{n}].evidence", e, "not_text")
            elif _ECHO.match(t.strip()):
                _drop(dropped, f"extracted[{n}].evidence", e, "prompt_placeholder")
            elif echo("extract", t, False):
                _drop(dropped, f"extracted[{n}].evidence", e, "prompt_echo")
            else:
                evidence.append(t)
        if "value" not in entry:
            _drop(dropped, f"extracted[{n}]", raw, "no_value")
            continue
        value = entry["value"]
        if (value.__class__ is str and (t := value.strip()) and t[0] not in "nN<.\u2026" and t not in first
                and not echo("extract", t)):  # the common case: one plain text, not seen before
            first[t] = evidence
            out.append({"value": t, "evidence": evidence})  # this entry's own list: no copy
            continue
        hashed = None  # the entry's evidence as a key: made once per entry, and only when one of its values repeats
        if isinstance(value, list):
            parts = value
        elif isinstance(value, dict):
            if value and all(_text_of(x) is not None for x in value.values()):
                parts = ["; ".join(f"{k}: {x}" for k, x in value.items())]
            else:
                _drop(dropped, f"extracted[{n}].value", value, "not_text")
                continue
        else:
            parts = [value]
        listed = isinstance(value, list)
        for k, x in enumerate(parts):
            if x.__class__ is str and (t := x.strip()) and t[0] not in "nN<.\u2026" and not echo("extract", t):
                why = None  # plain text: no placeholder, no echo
            else:
                t, why = _kept_text(x)
            if t is not None:
                if t not in first:  # every kept text, with the evidence it was first kept with
                    first[t], new = evidence, True
                else:  # kept before: new with other evidence (``again``: each evidence the text was kept with)
                    hashed = tuple(evidence) if hashed is None else hashed
                    kept = again[t] if t in again else again.setdefault(t, {tuple(first[t])})
                    new = hashed not in kept
                    kept.add(hashed)
                if new:
                    if listed:
                        shared += len(evidence)
                        if shared > MAX_SHARED_EVIDENCE:
                            raise Unusable("schema", f"list values share out more than {MAX_SHARED_EVIDENCE:,} "
                                                     f"evidence quotes (a list of texts times its evidence)")
                    out.append({"value": t, "evidence": list(evidence)})
                    continue
                why = "duplicate"
            _drop(dropped, f"extracted[{n}].value[{k}]" if listed else f"extracted[{n}].value", x, why)
    reading = {"extracted": out, "dropped": dropped}
    if summary is not None:
        # each quote of each entry looked up once (list values share out at most MAX_SHARED_EVIDENCE quotes):
        # no table of every quote, which made a runaway evidence list grow faster than its length
        hay = _SPACES.sub(" ", summary)
        reading["ungrounded"] = [e for item in out for e in item["evidence"] if " ".join(e.split()) not in hay]
    return reading


# ====================================================================== compare_single
_SIDE = r"(?:information\s+)?"
_REL_PHRASES = [
    ("a_contains_b", rf"{_SIDE}a\s+(?:fully\s+)?contains\s+{_SIDE}b"),
    ("b_contains_a", rf"{_SIDE}b\s+(?:fully\s+)?contains\s+{_SIDE}a"),
    ("a_equals_b", rf"{_SIDE}a\s+(?:equals|is\s+equal\s+to)\s+{_SIDE}b|{_SIDE}b\s+(?:equals|is\s+equal\s+to)\s+{_SIDE}a"
                   rf"|{_SIDE}a\s+and\s+{_SIDE}b\s+are\s+(?:equal|the\s+same)"),
    ("a_and_b_different", rf"{_SIDE}a\s+and\s+{_SIDE}b\s+are\s+different|{_SIDE}b\s+and\s+{_SIDE}a\s+are\s+different"),
]
_REL = re.compile("|".join(f"(?P<{name}>\\b(?:{pattern}|{name})\\b)" for name, pattern in _REL_PHRASES), re.I)
_NEGATION = re.compile(r"\b(?:not|neither|nor|never|isn't)[\s*_\"'`\u201c\u201d(:,-]*$", re.I)
_MARKER = re.compile(r"^[ \t>#*_\-]*final\s+answer\s*[*_]*\s*:?\s*[*_]*[ \t]*:?", re.I | re.M)
_REL_CODES = {r: r for r in AB_RELATIONS} | {"equal": "a_equals_b", "equals": "a_equals_b",
                                             "different": "a_and_b_different"}


def _phrases(text: str, truncated: bool) -> list[str]:
    found, end = [], len(text.rstrip("*_\"'` ")) if truncated else 0
    for m in _REL.finditer(text):
        if _NEGATION.search(text[max(0, m.start() - 20):m.start()]):
            continue
        if truncated and m.end() >= end:
            raise Unusable("truncated", "cut right after the relation")
        found.append(m.lastgroup)
    return found


def _relation_json(obj: dict) -> dict:
    value = _lower(obj).get("relation")
    if not isinstance(value, str):
        raise Unusable("schema", f"relation is {type(value).__name__}")
    code = _REL_CODES.get(value.strip().strip(".").lower().replace(" ", "_"))
    if code is None:
        code = _REL_CODES.get(value.strip().strip(".").lower())
    if code is None:
        found = set(_phrases(value, False))
        if len(found) != 1:
            raise Unusable("unknown_label", f"relation {value!r}")
        code = found.pop()
    return {"relation": code}


def _stated(value) -> list[str]:
    """The relations the strings of a JSON value state (phrases or codes), its reasoning text left out; walked
    without recursion (objects are at most ``MAX_DEPTH`` deep)."""
    out, stack = [], [value]
    while stack:
        v = stack.pop()
        if isinstance(v, dict):
            stack.extend(x for k, x in v.items() if str(k).lower() not in REASONING_KEYS)
        elif isinstance(v, list):
            stack.extend(v)
        elif isinstance(v, str):
            out += _phrases(v, False)
    return out


def _compare_single(text: str, truncated: bool) -> dict:
    found, objs = _candidates(text, {"relation"}, truncated, required=False)
    marker = _MARKER.search(text)
    readings = [_relation_json(obj) for obj in found]
    # every other string of every JSON object that states a relation must agree (wherever the object is)
    readings += [{"relation": r} for _, _, v in objs for r in _stated(v)]
    if marker or not truncated:  # no marker: the whole text, only when not truncated
        start = marker.end() if marker else 0
        region, last = [], start
        for s, e, _ in objs:  # JSON objects count by the strings they state, never as prose
            if e > last:
                region.append(text[last:max(s, last)])
                last = e
        region.append(text[last:])
        readings = [{"relation": p} for p in _phrases("\n".join(region), truncated)] + readings
    if not readings:
        if truncated:
            raise Unusable("truncated", "cut before a relation")
        where = text[marker.end():].strip()[:80] if marker else text.strip()[-80:]
        raise Unusable("unknown_label", f"no relation in {where!r}")
    return _one(readings)


# ====================================================================== indices (compare_multi, residual)
_DIGITS = re.compile(r"([0-9]+)")  # ASCII digits only, nothing around them
#: the most pairs one matching may list (repeats dropped first); more is not a matching of two lists
MAX_PAIRS = 10_000


def _index(value, field: str, n: int | None, dropped: list) -> list[int]:
    """Indices of one index value: a list expands (each element read alone); bad ones go to ``dropped``.
    An index is an int or a string of ASCII digits (leading zeros allowed); an integer too long to convert
    reads as out of range."""
    if value.__class__ is int and value >= 1 and (n is None or value <= n):  # the common case
        return [value]
    if isinstance(value, list):
        out = []
        for k, x in enumerate(value):
            out += _index(x, f"{field}[{k}]", n, dropped)
        return out
    if value is None:
        _drop(dropped, field, value, "null_index")
        return []
    if isinstance(value, float) and math.isinf(value):  # an integer of thousands of digits
        _drop(dropped, field, value, "out_of_range")
        return []
    m = _DIGITS.fullmatch(value) if isinstance(value, str) else None
    if isinstance(value, int) and not isinstance(value, bool):
        i = value
    elif m:  # any number of digits ("0000000000000000002" is 2); one Python refuses to convert is out of range
        digits = m.group(1).lstrip("0") or "0"
        if len(digits) > MAX_DIGITS or (n is not None and len(digits) > len(str(n))):
            _drop(dropped, field, value, "out_of_range")
            return []
        i = int(digits)
    else:
        _drop(dropped, field, value, "not_an_index")
        return []
    if i < 1 or (n is not None and i > n):
        _drop(dropped, field, value, "out_of_range")
        return []
    return [i]


def _side(value, field: str, n: int | None, dropped: list) -> list[int]:
    """The distinct indices of one side of a pair; a repeat inside the side is dropped (``duplicate``)."""
    if not isinstance(value, list):  # one index: nothing to repeat
        return _index(value, field, n, dropped)
    out, seen = [], set()
    for i in _index(value, field, n, dropped):
        if i in seen:
            _drop(dropped, field, i, "duplicate")
        else:
            seen.add(i)
            out.append(i)
    return out


_MULTI_KEYS = _known("common", "only_in_a", "only_in_b")
_PAIR_KEYS = _known("a_index", "b_index")
_FACT_KEYS = _known("fact", "evidence_spans")
#: a matching object's keys as the prompt writes them, and reasoning keys: none unknown, no two alike in lower case
_MULTI_AS_ASKED = frozenset({"common", "only_in_A", "only_in_B"}) | REASONING_KEYS


def _compare_multi(obj: dict, n_a: int | None, n_b: int | None) -> dict:
    dropped = []
    if obj.keys() <= _MULTI_AS_ASKED:  # the common case: read as they are, as _lower would give them
        common, only = obj.get("common"), (obj.get("only_in_A"), obj.get("only_in_B"))
    else:
        obj = _lower(obj)
        _unknown(obj, _MULTI_KEYS, "", dropped)
        common, only = obj.get("common"), (obj.get("only_in_a"), obj.get("only_in_b"))
    if common is None:
        common = []
    if not isinstance(common, list):
        raise Unusable("schema", f"common is {type(common).__name__}, not a list")
    pairs, seen, size = [], set(), 0
    for k, raw in enumerate(common):
        if raw.__class__ is dict and len(raw) == 2:  # the prompt's own pair of two good indices: the common case
            a, b = raw.get("A_index"), raw.get("B_index")
            if a.__class__ is int and b.__class__ is int and 0 < a and 0 < b and (n_a is None or a <= n_a) and (
                    n_b is None or b <= n_b):
                size += 1
                if size > MAX_PAIRS:
                    raise Unusable("schema", f"the matching lists more than {MAX_PAIRS:,} pairs")
                if (a, b) in seen:
                    _drop(dropped, f"common[{k}]", [a, b], "duplicate")
                else:
                    seen.add((a, b))
                    pairs.append([a, b])
                continue
        if not isinstance(raw, dict):
            _drop(dropped, f"common[{k}]", raw, "not_a_pair")
            continue
        p = _lower(raw)
        if "a_index" not in p or "b_index" not in p:
            _drop(dropped, f"common[{k}]", raw, "not_a_pair")
            continue
        _unknown(p, _PAIR_KEYS, f"common[{k}].", dropped)
        side_a = _side(p["a_index"], f"common[{k}].a_index", n_a, dropped)
        side_b = _side(p["b_index"], f"common[{k}].b_index", n_b, dropped)
        size += len(side_a) * len(side_b)
        if size > MAX_PAIRS:
            raise Unusable("schema", f"the matching lists more than {MAX_PAIRS:,} pairs")
        for a in side_a:
            for b in side_b:
                if (a, b) in seen:
                    _drop(dropped, f"common[{k}]", [a, b], "duplicate")
                else:
                    seen.add((a, b))
                    pairs.append([a, b])
    reading = {"common": pairs}
    for key, n, pos, raw in (("only_in_a", n_a, 0, only[0]), ("only_in_b", n_b, 1, only[1])):
        raw = [] if raw is None else raw if isinstance(raw, list) else [raw]
        if not raw:
            reading[key] = []
            continue
        matched = {p[pos] for p in pairs}
        for x in raw:
            if x.__class__ is not int or x <= 0 or (n is not None and x > n):
                break
        else:  # good indices only
            distinct = set(raw)
            if len(distinct) == len(raw) and distinct.isdisjoint(matched):  # none repeated, none matched
                reading[key] = list(raw)
                continue
        kept, taken = [], set()
        for k, x in enumerate(raw):
            good = x.__class__ is int and 0 < x and (n is None or x <= n)
            for i in ([x] if good else _index(x, f"{key}[{k}]", n, dropped)):
                if i in taken:
                    _drop(dropped, f"{key}[{k}]", x, "duplicate")
                elif i in matched:
                    _drop(dropped, f"{key}[{k}]", x, "conflict")
                else:
                    taken.add(i)
                    kept.append(i)
        reading[key] = kept
    reading["dropped"] = dropped
    return reading


# ====================================================================== residual_facts
def _residual(obj: dict, n_spans: int | None) -> dict:
    entries = _entries(obj)
    out, dropped, facts = [], [], set()
    _unknown(obj, _TOP_KEYS, "", dropped)
    for k, raw in enumerate(entries):
        entry = _lower(raw) if isinstance(raw, dict) else {}
        fact = entry.get("fact")
        if not isinstance(fact, str) or not fact.strip():
            _drop(dropped, f"extracted[{k}]", raw, "no_fact")
            continue
        _unknown(entry, _FACT_KEYS, f"extracted[{k}].", dropped)
        why = placeholder_why(fact, "residual_facts")
        if why:
            _drop(dropped, f"extracted[{k}].fact", fact, why)
            continue
        norm = _SPACES.sub(" ", fact).strip()
        if norm in facts:
            _drop(dropped, f"extracted[{k}]", raw, "duplicate")
            continue
        facts.add(norm)
        spans_raw = entry.get("evidence_spans")
        spans_raw = [] if spans_raw is None else spans_raw if isinstance(spans_raw, list) else [spans_raw]
        spans, taken = [], set()
        for j, x in enumerate(spans_raw):
            for i in _index(x, f"extracted[{k}].evidence_spans[{j}]", n_spans, dropped):
                if i in taken:
                    _drop(dropped, f"extracted[{k}].evidence_spans[{j}]", x, "duplicate")
                else:
                    taken.add(i)
                    spans.append(i)
        out.append({"fact": fact.strip(), "evidence_spans": spans})
    return {"extracted": out, "dropped": dropped}


# ====================================================================== style
_NON_ALNUM = re.compile(r"[^a-z0-9]+")


def _key_norm(key) -> str:
    return _NON_ALNUM.sub("_", str(key).lower().replace("&", " ")).strip("_")


#: the paper's long and short names of each aspect, and the rubric's labels, normalised
_STYLE_ALIASES = {_key_norm(alias): aspect for aspect, aliases in {
    "readability_jargon": ("readability_jargon", "Readability & Jargon", "Readability and Jargon",
                           "Readability & Jargon Level", "Readability/Jargon Level", "readability", "jargon",
                           "Readability and jargon level", "readability_jargon_level", "Readability/Jargon"),
    "narrative_order": ("narrative_order", "Narrative Order", "Narrative Order & Structure", "narrative",
                        "Narrative Structure", "order", "Narrative Order and Structure"),
    "sentence_structure": ("sentence_structure", "Sentence Structure & Voice", "Sentence Structure and Voice",
                           "sentence_structure_voice", "sentences", "Sentence Structure, Voice and Tense",
                           "Sentence Structure/Voice", "Sentence Structure"),
    "formatting_layout": ("formatting_layout", "Formatting & Layout", "Formatting and Layout", "formatting",
                          "layout", "Formatting/Layout", "Formatting & Layout Style"),
    "citation_style": ("citation_style", "Citation Style", "Citations & References", "Citations and References",
                       "citations", "citation", "Citation Practice", "Citations", "Citation & Reference Style",
                       "citation_reference_style", "Citation and Reference Style", "Citation/Reference Style",
                       "Citation & Reference"),
}.items() for alias in aliases} | {_key_norm(label): aspect for aspect, (label, _, _) in STYLE_RUBRIC.items()}


def style_key(key) -> str | None:
    """The style aspect a key names (the paper's long or short name, any case or punctuation), or None."""
    return _STYLE_ALIASES.get(_key_norm(key))


#: a rating written as text, blanks around it stripped first: "4", "4.5", "4/5", "4 out of 5" (ASCII digits;
#: the scale is 1..5). Each blank run has one place to go (no backtracking over a run of blanks).
_NUMERIC = re.compile(r"(-?[0-9]{1,3}(?:\.[0-9]{1,6})?)(?:\s*(?:/\s*5|out\s+of\s+5))?(?:\s*\.)?", re.I)


def _rating(value, aspect: str, dropped: list):
    raw = value
    if isinstance(value, dict):
        inner = _lower(value)
        given = [inner[k] for k in ("score", "rating") if k in inner]
        if len(given) == 2 and given[0] != given[1]:
            _drop(dropped, aspect, raw, "two_ratings")
            return None
        value = given[0] if given else None
    if isinstance(value, str):
        m = _NUMERIC.fullmatch(value.strip())
        value = (float(m.group(1)) if "." in m.group(1) else int(m.group(1))) if m else value
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        _drop(dropped, aspect, raw, "not_a_number")
        return None
    if not STYLE_SCALE[0] <= value <= STYLE_SCALE[1]:
        _drop(dropped, aspect, raw, "out_of_range")
        return None
    return value


def _style_from(pairs: list[tuple[str, object]]) -> dict:
    seen: dict[str, object] = {}
    dropped, scores = [], {}
    for key, value in pairs:
        aspect = style_key(key)
        if aspect is None:  # a key of the ratings object that names no aspect
            if str(key).lower() not in REASONING_KEYS:
                _drop(dropped, str(key), value, "unknown_key")
            continue
        if aspect in seen and seen[aspect] != value:
            raise Unusable("ambiguous", f"two different ratings for {aspect}")
        seen[aspect] = value
    for aspect in STYLE_ASPECTS:
        if aspect not in seen:
            _drop(dropped, aspect, None, "missing")
            scores[aspect] = None
        else:
            scores[aspect] = _rating(seen[aspect], aspect, dropped)
    if all(v is None for v in scores.values()):
        raise Unusable("no_rating", "no aspect has a rating from 1 to 5")
    return {"scores": scores, "dropped": dropped}


def _style_object(value) -> dict | None:
    if not isinstance(value, dict):
        return None
    if any(style_key(k) for k in value):
        return value
    inner = [v for v in value.values() if isinstance(v, dict) and any(style_key(k) for k in v)]
    return inner[0] if len(inner) == 1 else None


_SCORES_MARKER = re.compile(r"^[ \t>#*_\-]*scores?\b[^\n]*$", re.I | re.M)
_KEY_JUNK = " \t>#*_-\u20220123456789.)"
_KEY_TEXT = re.compile(r"[A-Za-z][A-Za-z &/_\-]*")
#: a rating on a score line: the number, ``/5``, ``out of 5`` or ``(out of 5)``, then at most one remark in
#: brackets that holds no digit (``4 out of 5 (clear)``)
_LINE_VALUE = re.compile(r"[ \t*_`]*(-?[0-9]+(?:\.[0-9]+)?)(?:[ \t]*(?:/|out[ \t]+of)[ \t]*5"
                         r"|[ \t]*\([ \t]*out[ \t]+of[ \t]+5[ \t]*\))?(?:[ \t]*\([^()0-9\n]*\))?", re.I)
#: the separator between key and rating: ``:``, ``=`` or a dash with blanks on both sides (``key - 4/5``)
_LINE_SEP = re.compile(r"[:=]|[ \t][-\u2013\u2014][ \t]")
_QUOTED_KEY = re.compile(r"[\"'\u201c]([^\"'\u201d\n]{3,60})[\"'\u201d]\s*:")


def _score_lines(region: str) -> list[tuple[str, str]]:
    """``(key, rating)`` of the lines ``key: rating`` (or ``=``, or `` - ``) of ``region`` whose key names an
    aspect: list marks, numbering and bold around the key are allowed, ``/5`` or ``(out of 5)`` after the
    rating and one remark in brackets without digits. One pass per line."""
    out = []
    for line in region.split("\n"):
        body = line.lstrip(_KEY_JUNK)
        sep = _LINE_SEP.search(body)
        if sep is None:
            continue
        key = body[:sep.start()].rstrip(" \t*_`")
        m = _LINE_VALUE.fullmatch(body[sep.end():].rstrip(" \t*_`."))
        if m and _KEY_TEXT.fullmatch(key) and style_key(key):
            out.append((key, m.group(1)))
    return out


def _style(text: str, truncated: bool) -> dict:
    objs, broken, unclosed, suspect = scan(text)
    found = []
    for n, (_, _, v) in enumerate(objs):
        c = _style_object(v)
        if c is not None:
            if n in suspect:
                sound(v)
            found.append(c)
    if unclosed is not None and (truncated or any(style_key(w) for w in _QUOTED_KEY.findall(text, unclosed))):
        raise Unusable("truncated" if truncated else "no_json", f"an object opened at character {unclosed} never closes")
    bad = next((s for s, e in broken if any(style_key(w) for w in _QUOTED_KEY.findall(text, s, e))), None)
    if bad is not None:
        raise Unusable("ambiguous" if found else "no_json",
                       f"a ratings object at character {bad} is not JSON" + (", beside one that is" if found else ""))
    if found:
        return _read_each(found, lambda o: _style_from(list(o.items())))
    marker = _SCORES_MARKER.search(text)
    if marker:
        region = text[marker.end():]
        if truncated:  # only complete lines count, and a cut answer must already hold all five
            region = region[:region.rfind("\n") + 1]
        pairs = _score_lines(region)
        if pairs and truncated and {style_key(k) for k, _ in pairs} != set(STYLE_ASPECTS):
            raise Unusable("truncated", "cut inside the score lines")
        if pairs:
            return _style_from(pairs)
    if truncated:
        raise Unusable("truncated", "cut before the ratings")
    if not text.strip():
        raise Unusable("empty", "no answer text")
    raise Unusable("no_json", "no ratings object and no 'Scores' lines")
