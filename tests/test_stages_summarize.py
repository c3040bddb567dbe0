"""Summarize stage: documents truncated proportionally to the model's context, what was cut recorded."""

from gavel.llm.records import Response
from gavel.ref.stages import summarize


def test_long_case_is_cut_proportionally_to_fit_the_context():
    docs = [("Complaint", "The plaintiffs allege discrimination. " * 400),
            ("Order", "The court grants the motion. " * 100)]
    jobs = summarize.build_requests([("c1", docs)], "gpt-4.1-2025-04-14", max_tokens=500, context_window=3000)
    req, meta = jobs[0]
    assert meta["truncated"] and meta["budget"] < 3000
    assert sum(meta["kept_tokens"]) <= meta["budget"]
    # each document keeps about the same share of itself
    shares = [k / o for k, o in zip(meta["kept_tokens"], meta["original_tokens"])]
    assert abs(shares[0] - shares[1]) < 0.02
    assert "## Document 1: Complaint" in req.messages[-1]["content"]
    assert "Filing Date" in req.messages[0]["content"]  # the 26-item checklist from gavel/core/items.py


def test_summary_is_read_after_its_marker_and_truncated_answers_are_not_summaries():
    meta = {"case_id": "c1", "truncated": False}
    ok = summarize.parse_response(meta, Response("x", "succeeded", text="**Reasoning:** r\n\n**Case Summary:** The case."))
    assert ok["summary"] == "The case." and ok["status"] == "ok"
    cut = summarize.parse_response(meta, Response("x", "succeeded", text="**Case Summary:** The", finish_reason="length"))
    assert cut["status"] == "truncated" and cut["summary"] is None
    bare = summarize.parse_response(meta, Response("x", "succeeded", text="The whole answer."))
    assert bare["summary"] == "The whole answer." and "marker" in bare["detail"]
