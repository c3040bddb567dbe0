"""The agent's action (``agent_action``): one tool call or a stop decision, in the dialects servers emit.

Read are gpt-oss Harmony ``commentary`` calls, Qwen/Hermes ``<tool_call>`` blocks, Mistral ``[TOOL_CALLS]``
(a JSON array of calls, or ``name[ARGS]{...}``), Llama 3.x ``<|python_tag|>`` and ``{"name", "parameters"}``
objects, OpenAI ``tool_calls`` arrays (``function.arguments`` a JSON string), and bare or fenced
``{tool, args}`` / ``{name, arguments}`` / ``{decision, reason}`` objects. A call is read when its arguments
object is complete; the closing tag or end token may be missing, in every dialect. Arguments are the tools'
to check: a lone surrogate in them is left for the checklist tool to refuse (and the ledger writes it escaped).
"""

from __future__ import annotations

import re

from gavel.answers.scan import loads, scan_objects
from gavel.answers.text import Unusable, _candidates, _lower, _one, _prepare, sound
from gavel.core.entries import NOT_APPLICABLE
from gavel.core.vocab import AGENT_TOOLS

_TOOL_CALL = re.compile(r"<tool_call>(.*?)(?:</tool_call>|(?=<tool_call>)|\Z)", re.S)
_LLAMA_TOKENS = re.compile(r"<\|(?:python_tag|eom_id|eot_id)\|>")
_MISTRAL = "[TOOL_CALLS]"
_MISTRAL_NAME = re.compile(r"\s*([A-Za-z_][A-Za-z0-9_.\-]*)\s*(?:\[CALL_ID\]\s*[A-Za-z0-9_\-]*\s*)?\[ARGS\]")
#: where a call's arguments may stand (OpenAI/Qwen, our own, Llama 3.x, Anthropic tool_use)
_ARG_KEYS = ("arguments", "args", "parameters", "input")
#: keys of a call that carry no meaning for the action
_META_KEYS = {"id", "type", "call_id", "index", "tool_call_id"}
_ACTION_KEYS = {"tool", "name", "decision", "tool_calls", "function"}


def _args_of(value, tool: str):
    if value is None:
        return {}
    if isinstance(value, str):
        if not value.strip():
            return {}
        try:
            value = loads(value)
        except ValueError:
            raise Unusable("schema", f"arguments of {tool} are not a JSON object") from None
    if not isinstance(value, dict):
        raise Unusable("schema", f"arguments of {tool} are a {type(value).__name__}, not an object")
    sound(value, text=False)
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
    if "tool_calls" in o:
        calls = o["tool_calls"]
        if not isinstance(calls, list) or not all(isinstance(c, dict) for c in calls):
            raise Unusable("schema", "tool_calls is not a list of call objects")
        return [a for call in calls for a in _actions_of(call)]
    if isinstance(o.get("function"), dict) and "name" not in o and "tool" not in o:
        return _actions_of(o["function"])  # an OpenAI call: {"id", "type": "function", "function": {...}}
    tool = o.get("tool", o.get("name"))
    if "tool" in o and "name" in o and o["tool"] != o["name"]:
        raise Unusable("ambiguous", f"one call names two tools ({o['tool']!r} and {o['name']!r})")
    has_decision = "decision" in o
    if tool is not None and has_decision:
        raise Unusable("ambiguous", "one object holds both a tool call and a decision")
    if has_decision:
        if not (isinstance(o["decision"], str) and o["decision"].strip().lower() == "stop"):
            raise Unusable("schema", f"decision {str(o['decision'])[:80]!r} (only 'stop' is a decision)")
        reason = o.get("reason")
        return [{"decision": "stop", "reason": reason if isinstance(reason, str) else ""}]
    if not isinstance(tool, str) or not tool.strip():
        raise Unusable("schema", f"tool name {str(tool)[:80]!r}")
    given = [k for k in _ARG_KEYS if k in o]
    if len({repr(o[k]) for k in given}) > 1:
        raise Unusable("ambiguous", f"the arguments of {tool.strip()} are given twice ({', '.join(given)})")
    stray = sorted(set(o) - set(_ARG_KEYS) - _META_KEYS - {"tool", "name", "reason"})
    if not given and stray:  # arguments written beside the name, not under an arguments key: not guessed
        raise Unusable("schema", f"the arguments of {tool.strip()} are not under args/arguments/parameters "
                                 f"(keys {', '.join(map(repr, stray[:5]))})")
    return [_action(tool.strip(), o[given[0]] if given else None)]


def _one_object(content: str, what: str, truncated: bool):
    """The one object ``content`` holds (None when it is empty), for a call's arguments or a call block."""
    if not content.strip():
        if truncated:
            raise Unusable("truncated", f"cut before the arguments of {what}")
        return None
    objs, unclosed = scan_objects(content)
    if unclosed is not None:
        raise Unusable("truncated" if truncated else "no_json", f"the object of {what} never closes")
    if len(objs) != 1:
        raise Unusable("schema" if objs else "no_json", f"{what} holds {len(objs)} objects")
    sound(objs[0][2], text=False)
    return objs[0][2]


def _mistral(text: str, truncated: bool) -> tuple[str, list[dict]]:
    """Mistral's ``[TOOL_CALLS]name[ARGS]{...}`` calls, and the text left for the other readers (the array
    form ``[TOOL_CALLS][{...}]`` is left: its objects are ordinary candidates)."""
    parts = text.split(_MISTRAL)
    rest, actions = [parts[0]], []
    for part in parts[1:]:
        m = _MISTRAL_NAME.match(part)
        if not m:
            rest.append(part)
            continue
        body = part[m.end():]
        objs, unclosed = scan_objects(body)
        if objs and not body[:objs[0][0]].strip():
            sound(objs[0][2], text=False)
            actions.append(_action(m.group(1), objs[0][2]))
            rest.append(body[objs[0][1]:])
        elif unclosed is not None and not body[:unclosed].strip():
            raise Unusable("truncated" if truncated else "no_json", f"the arguments of {m.group(1)} never close")
        elif not body.strip():
            actions.append(_action(m.group(1), _one_object(body, m.group(1), truncated)))
        else:
            raise Unusable("schema", f"the arguments of {m.group(1)} are not a JSON object")
    return "\n".join(rest), actions


def _agent(raw: str | None, truncated: bool) -> dict:
    text, messages = _prepare(raw, truncated)
    actions = []
    for channel, to, content, closed in messages or []:
        if channel == "commentary" and to:
            args = _one_object(content, to, truncated and not closed)
            actions.append(_action(to, args))
    text = _LLAMA_TOKENS.sub("\n", text)
    if _MISTRAL in text:
        text, found = _mistral(text, truncated)
        actions += found
    blocks = list(_TOOL_CALL.finditer(text))
    for n, m in enumerate(blocks):
        obj = _one_object(m.group(1), f"<tool_call> block {n + 1}", truncated)
        if obj is None:
            raise Unusable("no_json", f"<tool_call> block {n + 1} is empty")
        actions += _actions_of(obj)
    rest = _TOOL_CALL.sub(" ", text) if blocks else text
    found, _ = _candidates(rest, _ACTION_KEYS, truncated, required=False, text_only=False)
    for obj in found:
        actions += _actions_of(obj)
    if not actions:
        if truncated:
            raise Unusable("truncated", "cut before an action")
        if not (text.strip() or messages):
            raise Unusable("empty", "no answer text")
        raise Unusable("no_json", "no action (a tool call or a stop decision)")
    return _one(actions)
