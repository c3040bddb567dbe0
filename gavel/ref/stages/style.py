"""Style stage: a model's summary beside the reference -> five 1-5 similarity ratings -> S_style.

The five aspects (paper §2.1, Appendix C) and their scales are defined here once, in our own words; the
annotation app shows the same texts. A/B order is drawn per pair from a seed and recorded.
"""

from __future__ import annotations

import hashlib
import json

from gavel.answers import Unusable, read, schemas
from gavel.core import tokens
from gavel.core.vocab import STYLE_ASPECTS, STYLE_RUBRIC
from gavel.llm.estimate import Planned
from gavel.llm.records import Request, Response
from gavel.ref import prompts, scoring

STAGE = "style"
SCHEMA = schemas.PLAIN["style"]  # the paper's; a model may get the bounded form (schemas.for_model)


def aspects_text(checklist=None) -> str:
    """The aspects and their scales; ``checklist`` (a ``gavel.core.items.Checklist``) may word an aspect's
    label and what it compares for its own field (its ``style`` section); the scales stay."""
    own = checklist.style if checklist is not None else {}
    lines = []
    for n, (key, (label, what, levels)) in enumerate(STYLE_RUBRIC.items(), 1):
        label, what = own.get(key, (label, what))
        lines.append(f"{n}. {label} (`{key}`): {what}")
        lines += [f"   {rating} = {levels[rating - 1]}" for rating in range(5, 0, -1)]
    return "\n".join(lines)


def model_is_a(seed: int, subject: str, case_id: str) -> bool:
    return hashlib.sha256(f"style|{seed}|{subject}|{case_id}".encode()).digest()[0] % 2 == 0


def build_requests(pairs: list[tuple[str, str, str, str]], judge_model: str, seed: int = 0,
                   max_tokens: int | None = None, structured: bool = True, checklist=None) -> list[tuple[Request, dict]]:
    """``pairs``: (subject, case_id, model summary, reference summary) -> jobs (request, meta)."""
    fixed = _fixed(checklist)
    return [_job(pair, judge_model, seed, max_tokens, structured, fixed) for pair in pairs]


def _fixed(checklist) -> dict:
    return {"aspects": aspects_text(checklist), "score_keys": json.dumps({k: "<1-5>" for k in STYLE_ASPECTS},
                                                                         indent=1)}


def _job(pair, judge_model: str, seed: int, max_tokens: int | None, structured: bool, fixed: dict):
    subject, case_id, text, reference = pair
    a_is_model = model_is_a(seed, subject, case_id)
    a, b = (text, reference) if a_is_model else (reference, text)
    req = Request(stage=STAGE, model=judge_model, messages=prompts.render_messages("style", a=a, b=b, **fixed),
                  params={"max_tokens": max_tokens} if max_tokens else {}, case_id=case_id, subject=subject,
                  schema=schemas.for_model("style", judge_model) if structured else None)
    return req, {"subject": subject, "case_id": case_id, "model_is_a": a_is_model}


def plan_requests(pairs: list[tuple[str, str, str, str]], judge_model: str, seed: int = 0,
                  max_tokens: int | None = None, structured: bool = True, checklist=None, split=tokens.split):
    """build_requests' requests, one at a time and unrendered (``estimate.Planned``; its ``build`` gives the
    request alone): each text is tokenised once by ``split`` (e.g. a memo of ``tokens.split``)."""
    fixed = _fixed(checklist)
    for pair in pairs:
        subject, case_id, text, reference = pair
        a, b = (text, reference) if model_is_a(seed, subject, case_id) else (reference, text)
        n = sum(prompts.message_tokens("style", a=split(a), b=split(b), **fixed))
        yield Planned(judge_model, max_tokens, n,
                      lambda pair=pair: _job(pair, judge_model, seed, max_tokens, structured, fixed)[0])


def parse_response(meta: dict, response: Response | None) -> dict:
    """Ratings from ``gavel.answers.read("style", ...)`` and S_style, or why there are none. A reading with an
    aspect left null (missing, out of 1-5, not a number) is recorded with its other ratings; its S_style is
    absent (S_style needs all five) and ``detail`` says why."""
    row = {**meta, **{k: None for k in STYLE_ASPECTS}, "s_style": None, "status": "ok", "detail": "",
           "problems": ""}
    if response is None or not response.ok:
        return {**row, "status": "failed", "detail": (response.error if response else "no response") or ""}
    try:
        reading = read("style", response.text, response.finish_reason)
    except Unusable as err:
        return {**row, "status": err.reason, "detail": err.detail}
    ratings = reading["scores"]
    problems = "; ".join(f"{d['field']} {d['value']!r}: {d['why'].replace('_', ' ')}" for d in reading["dropped"])
    missing = [k for k in STYLE_ASPECTS if ratings[k] is None]
    if missing:
        return {**row, **ratings, "problems": problems,
                "detail": f"no S_style: S_style needs all five ratings; none for {', '.join(missing)}"}
    return {**row, **ratings, "s_style": scoring.s_style(ratings), "problems": problems}
