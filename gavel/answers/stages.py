"""What each stage's reading is made of: extract, compare_single, compare_multi, residual_facts, style,
agent_action (the rules of docs/ANSWERS.md, one section each)."""

from __future__ import annotations

import json
import re

from gavel.answers.text import Unusable, _candidates, _drop, _lower, _one, _prepare, _read_each, scan_objects
from gavel.core.checklist import NOT_APPLICABLE
from gavel.core.vocab import AB_RELATIONS, AGENT_TOOLS, STYLE_ASPECTS, STYLE_RUBRIC, STYLE_SCALE

# ====================================================================== extract
_PLACEHOLDER = re.compile(r"^(?:not\s+applicable|n/?a|none|not\s+(?:mentioned|specified|stated))\.?$", re.I)
_SPACES = re.compile(r"\s+")


def _text_of(v) -> str | None:
    if isinstance(v, str):
        return v
    if isinstance(v, (int, float)) and not isinstance(v, bool):
        return str(v)
    return None


def _entries(obj: dict) -> list:
    """The ``extracted`` list of an extract or residual answer (one object stands for a list of one)."""
    entries = _lower(obj).get("extracted")
    if isinstance(entries, dict):
        entries = [entries]
    if not isinstance(entries, list):
        raise Unusable("schema", f"extracted is {type(entries).__name__}, not a list")
    return entries


def _extract(obj: dict, summary: str | None) -> dict:
    entries = _entries(obj)
    out, dropped = [], []
    for n, raw in enumerate(entries):
        where = f"extracted[{n}]"
        if not isinstance(raw, dict):
            _drop(dropped, where, raw, "not_an_object")
            continue
        entry = _lower(raw)
        ev = entry.get("evidence", entry.get("evidences"))
        ev = [] if ev is None else ev if isinstance(ev, list) else [ev]
        evidence = []
        for e in ev:
            t = e.get("text") if isinstance(e, dict) else e
            t = _text_of(t)
            if t is None or not t.strip():
                _drop(dropped, f"{where}.evidence", e, "not_text")
            else:
                evidence.append(t)
        if "value" not in entry:
            _drop(dropped, where, raw, "no_value")
            continue
        value = entry["value"]
        if isinstance(value, list):
            parts = [(f"{where}.value[{k}]", x) for k, x in enumerate(value)]
        elif isinstance(value, dict):
            if value and all(_text_of(x) is not None for x in value.values()):
                parts = [(f"{where}.value", "; ".join(f"{k}: {x}" for k, x in value.items()))]
            else:
                _drop(dropped, f"{where}.value", value, "not_text")
                continue
        else:
            parts = [(f"{where}.value", value)]
        for field, x in parts:
            if x is None:
                _drop(dropped, field, x, "null")
                continue
            t = _text_of(x)
            if t is None:
                _drop(dropped, field, x, "not_text")
            elif not t.strip():
                _drop(dropped, field, x, "empty")
            elif _PLACEHOLDER.match(t.strip()):
                _drop(dropped, field, x, "placeholder")
            else:
                item = {"value": t.strip(), "evidence": list(evidence)}
                if item in out:
                    _drop(dropped, field, x, "duplicate")
                else:
                    out.append(item)
    reading = {"extracted": out, "dropped": dropped}
    if summary is not None:
        hay = _SPACES.sub(" ", summary)
        reading["ungrounded"] = [e for item in out for e in item["evidence"]
                                 if _SPACES.sub(" ", e).strip() not in hay]
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
_REL = re.compile("|".join(f"(?P<{name}>\\b(?:{pattern})\\b)" for name, pattern in _REL_PHRASES), re.I)
_NEGATION = re.compile(r"\b(?:not|neither|nor)[\s*_\"'`“”(:,-]*$", re.I)
_MARKER = re.compile(r"^[ \t>#*_\-]*final\s+answer\s*[*_]*\s*:?\s*[*_]*[ \t]*:?", re.I | re.M)
_REL_CODES = {r: r for r in AB_RELATIONS} | {"equal": "a_equals_b", "equals": "a_equals_b",
                                             "different": "a_and_b_different"}


def _phrases(text: str, truncated: bool) -> list[str]:
    found = []
    for m in _REL.finditer(text):
        if _NEGATION.search(text[max(0, m.start() - 20):m.start()]):
            continue
        if truncated and m.end() >= len(text.rstrip("*_\"'` ")):
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


def _compare_single(text: str, truncated: bool) -> dict:
    found, spans = _candidates(text, {"relation"}, truncated, required=False)
    marker = _MARKER.search(text)
    readings = [_relation_json(obj) for obj in found]
    if marker or not truncated:  # no marker: the whole text, only when not truncated
        start = marker.end() if marker else 0
        region, last = [], start
        for s, e in spans:  # answer objects count by their relation only, never by their reasoning text
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
def _index(value, field: str, n: int | None, dropped: list) -> list[int]:
    """Indices of one index value: a list expands (each element read alone); bad ones go to ``dropped``."""
    if isinstance(value, list):
        out = []
        for k, x in enumerate(value):
            out += _index(x, f"{field}[{k}]", n, dropped)
        return out
    if value is None:
        _drop(dropped, field, value, "null_index")
        return []
    if isinstance(value, int) and not isinstance(value, bool):
        i = value
    elif isinstance(value, str) and value.strip().isdigit():
        i = int(value.strip())
    else:
        _drop(dropped, field, value, "not_an_index")
        return []
    if i < 1 or (n is not None and i > n):
        _drop(dropped, field, value, "out_of_range")
        return []
    return [i]


def _compare_multi(obj: dict, n_a: int | None, n_b: int | None) -> dict:
    obj = _lower(obj)
    common = obj.get("common")
    if common is None:
        common = []
    if not isinstance(common, list):
        raise Unusable("schema", f"common is {type(common).__name__}, not a list")
    dropped, pairs = [], []
    for k, raw in enumerate(common):
        if not isinstance(raw, dict):
            _drop(dropped, f"common[{k}]", raw, "not_a_pair")
            continue
        p = _lower(raw)
        if "a_index" not in p or "b_index" not in p:
            _drop(dropped, f"common[{k}]", raw, "not_a_pair")
            continue
        side_a = _index(p["a_index"], f"common[{k}].a_index", n_a, dropped)
        side_b = _index(p["b_index"], f"common[{k}].b_index", n_b, dropped)
        for a in side_a:
            for b in side_b:
                if [a, b] in pairs:
                    _drop(dropped, f"common[{k}]", [a, b], "duplicate")
                else:
                    pairs.append([a, b])
    reading = {"common": pairs}
    for side, n, pos in (("a", n_a, 0), ("b", n_b, 1)):
        key = f"only_in_{side}"
        raw = obj.get(key)
        raw = [] if raw is None else raw if isinstance(raw, list) else [raw]
        matched = {p[pos] for p in pairs}
        kept = []
        for k, x in enumerate(raw):
            for i in _index(x, f"{key}[{k}]", n, dropped):
                if i in kept:
                    _drop(dropped, f"{key}[{k}]", x, "duplicate")
                elif i in matched:
                    _drop(dropped, f"{key}[{k}]", x, "conflict")
                else:
                    kept.append(i)
        reading[key] = kept
    reading["dropped"] = dropped
    return reading


# ====================================================================== residual_facts
def _residual(obj: dict, n_spans: int | None) -> dict:
    entries = _entries(obj)
    out, dropped = [], []
    for k, raw in enumerate(entries):
        entry = _lower(raw) if isinstance(raw, dict) else {}
        fact = entry.get("fact")
        if not isinstance(fact, str) or not fact.strip():
            _drop(dropped, f"extracted[{k}]", raw, "no_fact")
            continue
        spans_raw = entry.get("evidence_spans")
        spans_raw = [] if spans_raw is None else spans_raw if isinstance(spans_raw, list) else [spans_raw]
        spans = []
        for j, x in enumerate(spans_raw):
            for i in _index(x, f"extracted[{k}].evidence_spans[{j}]", n_spans, dropped):
                if i in spans:
                    _drop(dropped, f"extracted[{k}].evidence_spans[{j}]", x, "duplicate")
                else:
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
                           "Readability and jargon level"),
    "narrative_order": ("narrative_order", "Narrative Order", "Narrative Order & Structure", "narrative",
                        "Narrative Structure", "order"),
    "sentence_structure": ("sentence_structure", "Sentence Structure & Voice", "Sentence Structure and Voice",
                           "sentence_structure_voice", "sentences", "Sentence Structure, Voice and Tense"),
    "formatting_layout": ("formatting_layout", "Formatting & Layout", "Formatting and Layout", "formatting",
                          "layout", "Formatting/Layout"),
    "citation_style": ("citation_style", "Citation Style", "Citations & References", "Citations and References",
                       "citations", "citation", "Citation Practice", "Citations"),
}.items() for alias in aliases} | {_key_norm(label): aspect for aspect, (label, _, _) in STYLE_RUBRIC.items()}


def style_key(key) -> str | None:
    """The style aspect a key names (the paper's long or short name, any case or punctuation), or None."""
    return _STYLE_ALIASES.get(_key_norm(key))


_NUMERIC = re.compile(r"^\s*-?\d+(?:\.\d+)?\s*$")


def _rating(value, aspect: str, dropped: list):
    raw = value
    if isinstance(value, dict):
        inner = _lower(value)
        value = inner.get("score", inner.get("rating"))
    if isinstance(value, str) and _NUMERIC.match(value):
        value = float(value) if "." in value else int(value)
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        _drop(dropped, aspect, raw, "not_a_number")
        return None
    if not STYLE_SCALE[0] <= value <= STYLE_SCALE[1]:
        _drop(dropped, aspect, raw, "out_of_range")
        return None
    return value


def _style_from(pairs: list[tuple[str, object]]) -> dict:
    seen: dict[str, object] = {}
    for key, value in pairs:
        aspect = style_key(key)
        if aspect is None:
            continue
        if aspect in seen and seen[aspect] != value:
            raise Unusable("ambiguous", f"two different ratings for {aspect}")
        seen[aspect] = value
    dropped, scores = [], {}
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
_SCORE_LINE = re.compile(r"^[ \t>#*_\-•\d.)]*?([A-Za-z][A-Za-z &/_\-]*?)[ \t*_`]*[:=][ \t*_`]*(-?\d+(?:\.\d+)?)"
                         r"(?:[ \t]*/[ \t]*5)?[ \t*_`.]*$", re.M)


_QUOTED_KEY = re.compile(r"[\"'\u201c]([^\"'\u201d\n]{3,60})[\"'\u201d]\s*:")


def _style(text: str, truncated: bool) -> dict:
    objs, unclosed = scan_objects(text)
    found = [c for c in (_style_object(v) for _, _, v in objs) if c is not None]
    if unclosed is not None and (truncated or any(style_key(w) for w in _QUOTED_KEY.findall(text[unclosed:]))):
        raise Unusable("truncated" if truncated else "no_json", f"an object opened at character {unclosed} never closes")
    if found:
        return _read_each(found, lambda o: _style_from(list(o.items())))
    marker = _SCORES_MARKER.search(text)
    if marker:
        region = text[marker.end():]
        if truncated:  # only complete lines count, and a cut answer must already hold all five
            region = region[:region.rfind("\n") + 1]
        pairs = [(m.group(1), m.group(2)) for m in _SCORE_LINE.finditer(region) if style_key(m.group(1))]
        if pairs and truncated and {style_key(k) for k, _ in pairs} != set(STYLE_ASPECTS):
            raise Unusable("truncated", "cut inside the score lines")
        if pairs:
            return _style_from(pairs)
    if truncated:
        raise Unusable("truncated", "cut before the ratings")
    if not text.strip():
        raise Unusable("empty", "no answer text")
    raise Unusable("no_json", "no ratings object and no 'Scores' lines")


# ====================================================================== agent_action
_TOOL_CALL = re.compile(r"<tool_call>(.*?)(?:</tool_call>|(?=<tool_call>)|\Z)", re.S)


def _args_of(value, tool: str):
    if value is None:
        return {}
    if isinstance(value, str):
        if not value.strip():
            return {}
        try:
            value = json.loads(value)
        except json.JSONDecodeError:
            raise Unusable("schema", f"arguments of {tool} are not a JSON object") from None
    if not isinstance(value, dict):
        raise Unusable("schema", f"arguments of {tool} are a {type(value).__name__}, not an object")
    return value


def _not_applicable_keys(args: dict) -> list[str]:
    out = []
    patch = args.get("patch")
    for entry in patch if isinstance(patch, list) else []:
        if not isinstance(entry, dict):
            continue
        values = entry.get("extracted")
        if (isinstance(values, list) and len(values) == 1 and isinstance(values[0], dict)
                and values[0].get("value") == NOT_APPLICABLE and isinstance(entry.get("key"), str)):
            out.append(entry["key"])
    return out


def _action(tool: str, args) -> dict:
    if tool == "stop":
        reason = _args_of(args, tool).get("reason")
        return {"decision": "stop", "reason": reason if isinstance(reason, str) else ""}
    if tool not in AGENT_TOOLS:
        raise Unusable("unknown_tool", f"{tool!r} is not one of {', '.join(AGENT_TOOLS)}")
    out = {"tool": tool, "args": _args_of(args, tool)}
    if tool == "update_checklist":
        out["not_applicable_keys"] = _not_applicable_keys(out["args"])
    return out


def _actions_of(obj: dict) -> list[dict]:
    o = _lower(obj)
    if isinstance(o.get("tool_calls"), list):
        return [a for call in o["tool_calls"] for a in _actions_of(call if isinstance(call, dict) else {"name": None})]
    if isinstance(o.get("function"), dict) and "name" not in o and "tool" not in o:
        return _actions_of(o["function"])
    tool = o.get("tool", o.get("name"))
    has_decision = "decision" in o
    if tool is not None and has_decision:
        raise Unusable("ambiguous", "one object holds both a tool call and a decision")
    if has_decision:
        if not (isinstance(o["decision"], str) and o["decision"].strip().lower() == "stop"):
            raise Unusable("schema", f"decision {o['decision']!r} (only 'stop' is a decision)")
        reason = o.get("reason")
        return [{"decision": "stop", "reason": reason if isinstance(reason, str) else ""}]
    if not isinstance(tool, str) or not tool.strip():
        raise Unusable("schema", f"tool name {tool!r}")
    return [_action(tool.strip(), o["args"] if "args" in o else o.get("arguments"))]


_ACTION_KEYS = {"tool", "name", "decision", "tool_calls", "function"}


def _agent(raw: str, truncated: bool) -> dict:
    text, messages = _prepare(raw, truncated)
    actions = []
    for channel, to, content, closed in messages or []:
        if channel == "commentary" and to:
            if truncated and not closed:
                raise Unusable("truncated", f"cut inside the call of {to}")
            args = None
            if content.strip():
                objs, unclosed = scan_objects(content)
                if unclosed is not None or len(objs) != 1:
                    raise Unusable("schema", f"arguments of {to} are not one JSON object")
                args = objs[0][2]
            actions.append(_action(to, args))
    blocks = list(_TOOL_CALL.finditer(text))
    for n, m in enumerate(blocks):
        objs, unclosed = scan_objects(m.group(1))
        if unclosed is not None:
            raise Unusable("truncated" if truncated else "no_json", "a <tool_call> object never closes")
        if len(objs) != 1:
            raise Unusable("schema" if objs else "no_json", f"<tool_call> block {n + 1} holds {len(objs)} objects")
        actions += _actions_of(objs[0][2])
    rest = _TOOL_CALL.sub(" ", text) if blocks else text
    found, _ = _candidates(rest, _ACTION_KEYS, truncated, required=False)
    for obj in found:
        actions += _actions_of(obj)
    if not actions:
        if truncated:
            raise Unusable("truncated", "cut before an action")
        if not (text.strip() or messages):
            raise Unusable("empty", "no answer text")
        raise Unusable("no_json", "no action (a tool call or a stop decision)")
    return _one(actions) if len(actions) > 1 else actions[0]


