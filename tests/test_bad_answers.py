"""A corpus of realistic bad answers (tests/data/bad_answers.jsonl, written for this project) through every
stage's parser: each is parsed or recorded with its reason; none crashes; none is scored silently."""

import json
import math
from pathlib import Path

import pytest

from gavel.llm.records import Request, Response
from gavel.ref.stages import compare, extract, residual, style

CORPUS = [json.loads(line) for line in (Path(__file__).parent / "data" / "bad_answers.jsonl").open(encoding="utf-8")]
SUMMARY = "On March 3, 2020, the ACLU sued the city. The mayor resigned in 2022."


def _parse(case):
    resp = Response("x", "succeeded", text=case["text"], finish_reason=case["finish_reason"])
    stage = case["stage"]
    if stage == "extract":
        req = Request(stage="extract", model="m", messages=[], case_id="1", item="filing_date", subject="s")
        rows, status = extract.parse_response(req, resp, SUMMARY)
        return status["status"], rows, None
    if stage in ("compare_single", "compare_multi"):
        gate = "single" if stage == "compare_single" else "multi"
        meta = {"subject": "s", "case_id": "1", "item": "parties", "gate": gate, "model_is_a": False,
                "n_model": 1 if gate == "single" else 2, "n_reference": 1 if gate == "single" else 2}
        row = compare.parse_response(meta, resp)
        return row["status"], [], row["score"]
    if stage == "residual":
        req = Request(stage="residual", model="m", messages=[], case_id="1", subject="s")
        rows, status = residual.parse_response(req, resp, 2)
        return status["status"], rows, None
    row = style.parse_response({"subject": "s", "case_id": "1", "model_is_a": True}, resp)
    return row["status"], [], row["s_style"]


def test_corpus_is_large_and_covers_every_stage():
    assert len(CORPUS) >= 40
    assert {c["stage"] for c in CORPUS} == {"extract", "compare_single", "compare_multi", "residual", "style"}


@pytest.mark.parametrize("case", CORPUS, ids=[f"{c['stage']}:{c['what']}" for c in CORPUS])
def test_bad_answer_is_parsed_or_recorded_with_its_reason(case):
    status, rows, score = _parse(case)
    assert status == case["expect"], (status, case)
    if status != "ok":
        assert not rows and (score is None or (isinstance(score, float) and math.isnan(score)))
    elif case.get("no_score"):  # a style reading with an aspect left null: recorded, no S_style
        assert score is None
    elif case["stage"] in ("compare_single", "compare_multi", "style"):
        assert score is not None and 0 <= score <= 100


def test_ab_mapping_and_cleanup_details():
    by_what = {c["what"]: c for c in CORPUS}
    req = Request(stage="extract", model="m", messages=[], case_id="1", item="filing_date", subject="s")
    rows, status = extract.parse_response(req, Response("x", "succeeded", text=by_what["list value"]["text"]), SUMMARY)
    assert [r["value"] for r in rows] == ["March 3, 2020", "April 1, 2021"] and status["status"] == "ok"
    rows, _ = extract.parse_response(req, Response("x", "succeeded", text=by_what["prose around JSON"]["text"]), SUMMARY)
    assert rows[0]["evidence_grounding"] == ["exact"] and SUMMARY[slice(*rows[0]["evidence_spans"][0])] == "March 3, 2020"
    meta = {"subject": "s", "case_id": "1", "item": "parties", "gate": "single", "model_is_a": False,
            "n_model": 1, "n_reference": 1}
    row = compare.parse_response(meta, Response("x", "succeeded", text=by_what["quoted label"]["text"]))
    assert row["relation"] == "model_contains_reference"  # B is the model here
    rows, status = residual.parse_response(Request(stage="residual", model="m", messages=[], subject="s", case_id="1"),
                                           Response("x", "succeeded", text=by_what["span out of range and as string"]["text"]), 2)
    assert rows[0]["evidence_spans"] == [1] and "out of range (spans are 1..2)" in status["detail"]
