"""A stand-in for a model, for trying the GAVEL-REF flow offline: the ``mock`` provider's answer in
``gavel evaluate`` and the notebooks (``gavel.runs.pipeline.provider("mock")``)."""

from __future__ import annotations

import json
import re

from gavel.core.vocab import STYLE_ASPECTS
from gavel.llm.records import Request

_SPAN_LINE = re.compile(r"^\[(\d+)\] (.*)$", re.M)
_LIST_LINE = re.compile(r"^(\d+)\. (.*)$", re.M)


def _section(text: str, head: str, stop: str) -> str:
    start = text.find(head)
    if start < 0:
        return ""
    start += len(head)
    end = text.find(stop, start)
    return text[start: end if end >= 0 else len(text)].strip()


def stand_in_answer(request: Request) -> str:
    """A deterministic stand-in for a model (the ``mock`` provider's answer in ``gavel evaluate`` and the
    notebooks): it quotes sentences of the summary whose words overlap the item's name, matches list entries
    that are the same text, calls every residual span a fact and rates every style aspect 3. It exercises
    every stage, parser and table in seconds, with no model; its scores mean nothing."""
    user = "\n".join(m["content"] for m in request.messages if m["role"] == "user")
    if request.stage == "extract":
        summary = _section(user, "# Case summary\n", "\n# Checklist item:")
        name = _section(user, "# Checklist item:", "\n")
        words = {w.lower() for w in re.findall(r"[A-Za-z]{5,}", name)}
        found = [s for s in re.split(r"(?<=[.!?])\s+", summary)
                 if words & {w.lower() for w in re.findall(r"[A-Za-z]{5,}", s)}][:2]
        return json.dumps({"reasoning": "stand-in: sentences sharing words with the item name",
                           "extracted": [{"evidence": [s], "value": s[:100]} for s in found]})
    if request.stage == "residual":
        spans = _SPAN_LINE.findall(user)
        return json.dumps({"reasoning": "stand-in: one fact per span",
                           "extracted": [{"fact": text, "evidence_spans": [int(n)]} for n, text in spans]})
    if request.stage == "style":
        return json.dumps({k: 3 for k in STYLE_ASPECTS})
    if "## Information A" in user:
        a = _section(user, "## Information A\n", "\n## Information B")
        b = _section(user, "## Information B\n", "\n\n#")
        label = "A equals B" if a.casefold() == b.casefold() else "A and B are different"
        return f"**Reasoning:** stand-in.\n**Final Answer:** {label}"
    a = {n: t.casefold() for n, t in _LIST_LINE.findall(_section(user, "## List A\n", "## List B"))}
    b = {n: t.casefold() for n, t in _LIST_LINE.findall(_section(user, "## List B\n", "\n\n#"))}
    common = [{"A_index": int(i), "B_index": int(j)} for i, x in a.items() for j, y in b.items() if x == y]
    body = {"common": common, "only_in_A": [int(i) for i in a if int(i) not in {c["A_index"] for c in common}],
            "only_in_B": [int(j) for j in b if int(j) not in {c["B_index"] for c in common}]}
    return "**Reasoning:** stand-in.\n**Final Answer:**\n```json\n" + json.dumps(body) + "\n```"
