"""A stand-in for a model, for trying the GAVEL-REF flow offline: the ``mock`` provider's answer in
``gavel evaluate`` and the notebooks (``gavel.runs.pipeline.provider("mock")``).

The default stand-in's judge has no noise and no order bias: every repeat and every order answers alike.
``--mock-judge noisy:seed=S,flip=F,first_bias=P,a_bias=Q`` (``gavel.core.options.judge_spec``, :func:`mock_options`) asks
for a seeded noisy, order-biased judge instead, so that ``--repeats``, ``--orders both`` and
``--label-orders K`` have something to find (docs/orders.md).
"""

from __future__ import annotations

import hashlib
import json
import random
import re

from gavel.core.options import NOISY_KNOBS
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


def spec_text(spec: dict) -> str:
    """The canonical words of a noisy judge (``noisy:seed=1,flip=0.2,first_bias=0,a_bias=0``)."""
    return "noisy:" + ",".join(f"{k}={spec[k]:g}" for k in ("seed", *NOISY_KNOBS))


def noisy_answer(spec: dict):
    """The stand-in's answer with a seeded noisy, order-biased judge (see :func:`noisy_judgment`)."""
    def answer(request: Request) -> str:
        text = stand_in_answer(request)
        return noisy_judgment(request, text, spec) if request.stage.startswith(("compare", "residual_match")) else text
    return answer


def mock_options(spec: dict | None) -> dict:
    """``pipeline.provider("mock", **mock_options(spec))``: the noisy stand-in and its name in the cache key;
    {} (the default stand-in, today's cache keys) for no spec."""
    return {"answer": noisy_answer(spec), "variant": spec_text(spec)} if spec else {}


def _draws(request: Request, seed: int) -> random.Random:
    """A generator of this request and seed alone: the same request answers alike on every run, while a
    repeat (another sampling seed in the body) or the other order (other messages) has its own draws."""
    h = hashlib.sha256(f"{seed}\n{request.custom_id}\n{request.params.get('seed')}".encode()).digest()
    return random.Random(int.from_bytes(h[:8], "big"))


_OPTION = re.compile(r'^\d\. "(A contains B|B contains A|A equals B|A and B are different)":', re.M)


def noisy_judgment(request: Request, text: str, spec: dict) -> str:
    """``text`` (the default stand-in's judgment) through a noisy judge. A single-value judgment: with
    probability ``first_bias`` the relation listed first in the prompt (option-order bias, seen by
    ``--label-orders``), else with probability ``a_bias`` "A contains B" (side bias, seen by ``--orders
    both``), else with probability ``flip`` another of the four relations drawn at random (noise, seen by
    ``--repeats``), else unchanged. A list matching: each matched pair is dropped with probability ``flip``."""
    rng = _draws(request, spec["seed"])
    user = "\n".join(m["content"] for m in request.messages)
    if "## Information A" in user:
        label = text.rsplit("**Final Answer:** ", 1)[-1].strip()
        listed = _OPTION.findall(user) or ["A contains B", "B contains A", "A equals B", "A and B are different"]
        u = rng.random()
        if u < spec["first_bias"]:
            label = listed[0]
        elif u < spec["first_bias"] + spec["a_bias"]:
            label = "A contains B"
        elif u < spec["first_bias"] + spec["a_bias"] + spec["flip"]:
            label = rng.choice([x for x in listed if x != label])
        return f"**Reasoning:** stand-in (noisy).\n**Final Answer:** {label}"
    body = json.loads(text.split("```json\n", 1)[1].rsplit("\n```", 1)[0])
    kept = [c for c in body["common"] if rng.random() >= spec["flip"]]
    dropped = [c for c in body["common"] if c not in kept]
    body = {"common": kept, "only_in_A": sorted(body["only_in_A"] + [c["A_index"] for c in dropped]),
            "only_in_B": sorted(body["only_in_B"] + [c["B_index"] for c in dropped])}
    return "**Reasoning:** stand-in (noisy).\n**Final Answer:**\n```json\n" + json.dumps(body) + "\n```"


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
