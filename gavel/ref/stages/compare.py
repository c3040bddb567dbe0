"""Compare stage: one item's values from a model's summary against the reference's -> a matching score.

Gating (the rules that explain the released judgments, as ``gavel.paper.reconstruct`` finds them): values are first
made comparable (``gavel.core.entries.comparable_values``: stripped, "Not Applicable" dropped), then

=================  ==================================  ============
gate               when                                 score
=================  ==================================  ============
``not_applicable`` both sides empty                     none (left out)
``one_empty``      exactly one side empty               0
``identical``      the same values (as a multiset)      1
``single``         one value on each side               the judge's 4-way relation
``multi``          otherwise                            F1 of the judge's list matching
=================  ==================================  ============

A pair with a side whose checklist does not exist (never extracted, lost) is ``unknown``: status ``no_values``,
kept out of the best estimate and bounded like an unusable answer. Only ``single`` and ``multi`` pairs are
sent to the judge. Which side the judge sees as A is drawn per pair
from a seed (``model_is_a``) and kept with every answer, so each answer maps back to model and reference
(the original pipeline lost this mapping). Class Action or Individual Plaintiffs is judged like any item.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections import Counter
from dataclasses import dataclass

from gavel.answers import Unusable, read, schemas
from gavel.answers.schemas import AB_LABELS  # noqa: F401  (the labels live with the schemas)
from gavel.core.entries import comparable_values
from gavel.core.items import load as load_checklist
from gavel.core.vocab import AB_RELATIONS, label_order, matching_of, relation_of
from gavel.llm.records import Request, Response
from gavel.ref import prompts, scoring

STAGE = "compare"
GATES = ("not_applicable", "one_empty", "identical", "single", "multi", "unknown")
GATE_SCORE = {"not_applicable": None, "one_empty": 0.0, "identical": 1.0}
SINGLE_SCHEMA = schemas.PLAIN["compare_single"]  # the paper's; a model may get the bounded form (for_model)
MULTI_SCHEMA = schemas.PLAIN["compare_multi"]


@dataclass(frozen=True)
class Pair:
    """One item of one evaluated checklist (``subject``) and the reference checklist of the same case."""

    subject: str
    case_id: str
    item: str
    model_values: tuple[str, ...] | None  # None: this checklist item does not exist (not extracted, lost)
    reference_values: tuple[str, ...] | None


def gate(model_values, reference_values) -> str:
    m, r = comparable_values(model_values), comparable_values(reference_values)
    if not m and not r:
        return "not_applicable"
    if not m or not r:
        return "one_empty"
    if Counter(m) == Counter(r):
        return "identical"
    return "single" if len(m) == 1 and len(r) == 1 else "multi"


def model_is_a(seed: int, subject: str, case_id: str, item: str) -> bool:
    """Whether the model's values are shown as A: a fair coin per pair, fixed by the seed."""
    digest = hashlib.sha256(f"{seed}|{subject}|{case_id}|{item}".encode()).digest()
    return digest[0] % 2 == 0


def _numbered(values: list[str]) -> str:
    return "\n".join(f"{i}. {v}" for i, v in enumerate(values, 1))


def _row(pair: Pair, g: str, m: list[str], r: list[str], **kw) -> dict:
    return {"subject": pair.subject, "case_id": pair.case_id, "item": pair.item, "gate": g,
            "n_model": len(m), "n_reference": len(r), "model_is_a": None, "relation": None, "pairs": None,
            "score": GATE_SCORE.get(g), "status": "gated", "detail": "", "problems": "", **kw}


#: pseudo-item of the residual stage: two lists of residual facts, always compared by list matching
RESIDUAL_ITEM = "residual_facts"
RESIDUAL_LABEL = "Facts outside the checklist"


#: what a judged row carries beyond the ``compare.csv`` columns (the per-judgment table: gavel.runs.orders)
JUDGMENT_FIELDS = ("order", "answer_ab", "only_in_model", "only_in_reference")


def label_stage(stage: str, row: int) -> str:
    """The request stage of label-order row ``row`` > 0 (``--label-orders``): its own custom ids and cache keys."""
    return f"{stage}_labels{row}"


_OPTION = re.compile(r'^(\d)\. "([^"]+)": (.*)$', re.MULTILINE)


def reorder_options(messages: list[dict], row: int) -> list[dict]:
    """``messages`` of ``compare_single`` with the four relation options listed in label-order row ``row``
    (``gavel.core.vocab.label_order``), renumbered, and the answer form's list in the same order. Row 0 returns
    the messages untouched. A template whose options cannot be found is an error, never a silent no-op."""
    if row == 0:
        return messages
    wanted = [AB_LABELS[AB_RELATIONS.index(ab)] for ab in label_order(row)]
    out, found = [], False
    for m in messages:
        lines = {g[1]: g[2] for g in _OPTION.findall(m["content"])}
        if set(lines) != set(AB_LABELS):
            out.append(m)
            continue
        found = True
        block = "\n".join(f'{i}. "{label}": {lines[label]}' for i, label in enumerate(wanted, 1))
        spans = [x.span() for x in _OPTION.finditer(m["content"])]
        text = m["content"][:spans[0][0]] + block + m["content"][spans[-1][1]:]
        listed = ", ".join(f'"{label}"' for label in AB_LABELS)
        text = text.replace(listed, ", ".join(f'"{label}"' for label in wanted))
        out.append({**m, "content": text})
    if not found:
        raise prompts.PromptError("prompt 'compare_single': the four relation options are not listed one a line "
                                  "as '1. \"A contains B\": ...'; --label-orders cannot reorder them")
    return out


def _single_schema(row: int, base: dict = SINGLE_SCHEMA) -> dict:
    """``base`` (the single-value schema a judge gets) with its allowed answers listed in label-order row ``row``."""
    enum = [AB_LABELS[AB_RELATIONS.index(ab)] for ab in label_order(row)]
    inner = base["schema"]
    return {**base, "schema": {**inner, "properties": {
        **inner["properties"], "relation": {"type": "string", "enum": enum}}}}


def answer_position(answer_ab: str | None, row: int) -> float:
    """Where (1..4) the option the judge chose stood in the list it was shown (label-order ``row``); NaN when
    the answer is not one of the four."""
    order = label_order(row)
    return float(order.index(answer_ab) + 1) if answer_ab in order else float("nan")


def swapped_stage(stage: str) -> str:
    """The request stage of the second order (``--orders both``): its own custom ids and ``answers.csv`` rows."""
    return f"{stage}_swapped"


def build_requests(pairs: list[Pair], judge_model: str, seed: int = 0, max_tokens: int | None = None,
                   structured: bool = True, stage: str = STAGE,
                   order: int = 1, checklist=None, label_row: int = 0) -> tuple[list[tuple[Request, dict]], list[dict]]:
    """(jobs, gated rows). A job is (request, meta): ``meta`` is what ``parse_response`` needs to map the
    answer back (sides, lengths). Gated pairs get their score without a request. ``order=2`` asks every
    judged pair with the sides swapped (request stage ``swapped_stage(stage)``, ``meta["order"] = 2``). Item
    names are those of ``checklist`` (a ``gavel.core.items.Checklist``, a name or a file; default: the default).
    ``label_row`` > 0 (``--label-orders``) asks only the ``single`` pairs (the first order), their relation
    options listed in that row of the Latin square (request stage ``label_stage(stage, label_row)``,
    ``meta["label_order"]``); no gated rows. Row 0 is today's request, byte for byte."""
    if order not in (1, 2):
        raise ValueError(f"order is 1 or 2, got {order!r}")
    label_order(label_row)  # a row outside the square is an error here, before anything is built
    checklist = load_checklist(checklist)
    jobs, gated = [], []
    params = {"max_tokens": max_tokens} if max_tokens else {}
    for p in pairs:
        if p.model_values is None or p.reference_values is None:
            side = "model" if p.model_values is None else "reference"
            gated.append(_row(p, "unknown", [], [], n_model=None, n_reference=None, status="no_values",
                              detail=f"no {side} checklist for this item"))
            continue
        m, r = comparable_values(p.model_values), comparable_values(p.reference_values)
        g = gate(m, r)
        if g == "single" and p.item == RESIDUAL_ITEM:
            g = "multi"
        if g not in ("single", "multi"):
            gated.append(_row(p, g, m, r))
            continue
        if label_row and g != "single":
            continue
        a_is_model = model_is_a(seed, p.subject, p.case_id, p.item) == (order == 1)
        a, b = (m, r) if a_is_model else (r, m)
        name = RESIDUAL_LABEL if p.item == RESIDUAL_ITEM else checklist.item(p.item).name
        if g == "single":
            messages = reorder_options(prompts.render_messages("compare_single", item_name=name, a=a[0], b=b[0]),
                                       label_row)
            schema = schemas.for_model("compare_single", judge_model)
            schema = schema if not label_row else _single_schema(label_row, schema)
        else:
            messages = prompts.render_messages("compare_multi", item_name=name, a=_numbered(a), b=_numbered(b))
            schema = schemas.for_model("compare_multi", judge_model, len(a), len(b))
        req_stage = label_stage(stage, label_row) if label_row else stage if order == 1 else swapped_stage(stage)
        req = Request(stage=req_stage, model=judge_model, messages=messages, params=dict(params), case_id=p.case_id,
                      item=p.item, subject=p.subject, schema=schema if structured else None)
        meta = {"subject": p.subject, "case_id": p.case_id, "item": p.item, "gate": g,
                "model_is_a": a_is_model, "n_model": len(m), "n_reference": len(r)}
        if order == 2:
            meta["order"] = 2
        if label_row:
            meta["label_order"] = label_row
        jobs.append((req, meta))
    return jobs, gated


def parse_response(meta: dict, response: Response | None) -> dict:
    """One judged pair -> a row with the relation (model/reference wording) or the matched pairs
    (model index, reference index), the score, and a status (``ok`` or why the answer is unusable).
    The answer is read by ``gavel.answers.read`` (A/B wording), then mapped by the pair's orientation
    (``gavel.core.vocab``). The row also carries ``JUDGMENT_FIELDS``: the answer as read in A/B wording
    (``answer_ab``), the unmatched sides in model/reference wording, and the order."""
    row = {**meta, "relation": None, "pairs": None, "score": None, "status": "ok", "detail": "", "problems": "",
           "order": meta.get("order", 1), "answer_ab": None, "only_in_model": None, "only_in_reference": None}
    if response is None or not response.ok:
        return {**row, "status": "failed", "detail": (response.error if response else "no response") or ""}
    a_is_model = meta["model_is_a"]
    n_a, n_b = (meta["n_model"], meta["n_reference"]) if a_is_model else (meta["n_reference"], meta["n_model"])
    try:
        if meta["gate"] == "single":
            ab = read("compare_single", response.text, response.finish_reason)["relation"]
            relation = relation_of(ab, a_is_model)
            return {**row, "relation": relation, "score": scoring.relation_score(relation), "answer_ab": ab}
        reading = read("compare_multi", response.text, response.finish_reason, n_a=n_a, n_b=n_b)
    except Unusable as err:
        return {**row, "status": err.reason, "detail": err.detail}
    mapped = matching_of(reading["common"], reading["only_in_a"], reading["only_in_b"], a_is_model)
    pairs = [tuple(p) for p in mapped["pairs"]]
    problems = "; ".join(f"{d['field']} {d['value']!r}: {d['why'].replace('_', ' ')}" for d in reading["dropped"])
    lost = [d for d in reading["dropped"] if d["why"] != "unknown_key"]  # indices dropped, not keys beside them
    if not pairs and lost and not (reading["only_in_a"] or reading["only_in_b"]):
        return {**row, "status": "indices", "detail": problems}
    score = scoring.matching_f1(pairs, meta["n_model"], meta["n_reference"])
    answer = {"common": [list(p) for p in reading["common"]], "only_in_A": reading["only_in_a"],
              "only_in_B": reading["only_in_b"]}
    # the second order has no compare.csv row to keep ``problems`` in: its judgments-table row says them in
    # ``detail`` (an index out of range, a repeat), as the first order's compare.csv row does in ``problems``
    detail = problems if row["order"] == 2 else ""
    return {**row, "pairs": json.dumps(pairs), "score": score, "problems": problems, "detail": detail,
            "answer_ab": json.dumps(answer), "only_in_model": json.dumps(mapped["only_in_model"]),
            "only_in_reference": json.dumps(mapped["only_in_reference"])}


def table_rows(rows: list[dict]) -> list[dict]:
    """Judged rows as ``compare.csv`` / ``residual_match.csv`` hold them (without ``JUDGMENT_FIELDS``)."""
    return [{k: v for k, v in r.items() if k not in JUDGMENT_FIELDS} for r in rows]
