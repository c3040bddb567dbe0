"""LLM-as-judge in the CaseGen style (seed 004): a candidate summary beside the reference summary -> a
reasoning text, a 1-10 score per named criterion, and an overall 1-10 score.

Criteria come from a YAML file (``load_criteria``; the shipped legal-summary set is
``gavel/metrics/criteria/legal_summary.yaml``). The answer is structured: the request carries a JSON Schema with the
reasoning first, the criterion scores, then the overall score, and every answer is checked against it. An
answer that cannot be read, or that misses a criterion, scores outside 1-10 or gives a non-integer, is
recorded with its reason (``status``) and never scored.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import yaml

from gavel.answers import Unusable, read_object
from gavel.llm.records import Request, Response
from gavel.ref import prompts

STAGE = "casegen_judge"
DEFAULT_CRITERIA = Path(__file__).resolve().parent / "criteria" / "legal_summary.yaml"


@dataclass(frozen=True)
class Criteria:
    name: str
    document: str
    criteria: tuple[tuple[str, str, str], ...]  # (key, label, description)
    bands: tuple[str, ...]
    reference_score: int

    @property
    def keys(self) -> list[str]:
        return [k for k, _, _ in self.criteria]

    def schema(self) -> dict:
        score = {"type": "integer", "minimum": 1, "maximum": 10}
        return {"name": f"judge_{self.name}", "schema": {
            "type": "object",
            "properties": {
                "reasoning": {"type": "string"},
                "scores": {"type": "object", "properties": {k: score for k in self.keys},
                           "required": self.keys, "additionalProperties": False},
                "overall": score},
            "required": ["reasoning", "scores", "overall"], "additionalProperties": False}}


def load_criteria(path: str | Path = DEFAULT_CRITERIA) -> Criteria:
    """Read a criteria file; a malformed one raises ValueError naming the file and what is wrong."""
    path = Path(path)
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
        crit = tuple((c["key"], c["label"], " ".join(str(c["description"]).split())) for c in data["criteria"])
        out = Criteria(name=str(data["name"]), document=str(data.get("document", "summary")), criteria=crit,
                       bands=tuple(data.get("bands", ())), reference_score=int(data.get("reference_score", 8)))
    except (OSError, yaml.YAMLError, KeyError, TypeError, ValueError, AttributeError) as err:  # AttributeError:
        # PyYAML's !!timestamp on a value that is not a date
        raise ValueError(f"{path}: not a criteria file ({type(err).__name__}: {err})") from None
    if not crit or len(set(out.keys)) != len(crit):
        raise ValueError(f"{path}: criteria must be a non-empty list with distinct keys")
    return out


def build_requests(pairs: list[tuple[str, str, str, str]], model: str, criteria: Criteria | None = None,
                   max_tokens: int | None = None, structured: bool = True) -> list[tuple[Request, dict]]:
    """``pairs``: (subject, case_id, candidate summary, reference summary) -> jobs (request, meta)."""
    c = criteria or load_criteria()
    listing = "\n".join(f"- {label} (`{key}`): {desc}" for key, label, desc in c.criteria)
    shape = json.dumps({"reasoning": "<comparison with the reference, then a sentence per criterion>",
                        "scores": {k: "<1-10>" for k in c.keys}, "overall": "<1-10>"}, indent=1)
    jobs = []
    for subject, case_id, candidate, reference in pairs:
        messages = prompts.render_messages(STAGE, document=c.document, criteria=listing,
                                           bands="\n".join(f"- {b}" for b in c.bands),
                                           reference_score=c.reference_score, answer_shape=shape,
                                           reference=reference, candidate=candidate)
        req = Request(stage=STAGE, model=model, messages=messages, case_id=case_id, item=c.name, subject=subject,
                      params={"max_tokens": max_tokens} if max_tokens else {},
                      schema=c.schema() if structured else None)
        jobs.append((req, {"subject": subject, "case_id": case_id, "criteria": c.name}))
    return jobs


def parse_response(meta: dict, response: Response | None, criteria: Criteria | None = None) -> dict:
    """Scores per criterion and overall with the reasoning, or ``status`` saying why there are none."""
    c = criteria or load_criteria()
    row = {**meta, **{k: None for k in c.keys}, "overall": None, "reasoning": "", "status": "ok", "detail": "",
           "problems": ""}
    if response is None or not response.ok:
        return {**row, "status": "failed", "detail": (response.error if response else "no response") or ""}
    try:
        value = read_object(response.text, response.finish_reason, keys=("scores", "overall"), schema=c.schema()["schema"])
    except Unusable as err:
        return {**row, "status": err.reason, "detail": err.detail}
    v = value
    return {**row, **{k: v["scores"][k] for k in c.keys}, "overall": v["overall"], "reasoning": v["reasoning"]}
