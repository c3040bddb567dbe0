"""The pointwise metric end to end with a scripted fake judge (the mock provider through the real stage
runner): points, pre-selection, judgments, assignment and scores against a hand computation."""

from __future__ import annotations

import json
import re

import pytest
from needs import need_module

from gavel.llm.providers.mock import MockProvider
from gavel.llm.runner import StageRunner

need_module("simplemma", "simplemma not installed (metrics extra)")
need_module("sentence_transformers", "sentence-transformers not installed (metrics extra)")

from gavel.metrics import pointwise_run  # noqa: E402

CANDIDATE = "The court granted the injunction. The agency appealed.\n\nThe case settled in 2024."
REFERENCE = "The court granted a preliminary injunction. The agency appealed.\n\nDamages were awarded."
SCRIPT = {("The court granted a preliminary injunction.", "The court granted the injunction."): "full",
          ("The agency appealed.", "The agency appealed."): "full",
          ("Damages were awarded.", "The case settled in 2024."): "partial"}


def fake_judge(bad_pair=None):
    def answer(request):
        user = request.messages[-1]["content"]
        if request.stage == "pointwise_points":
            para = user.split("Paragraph:\n", 1)[1].strip()
            return json.dumps({"points": [s if s.endswith(".") else s + "." for s in re.split(r"(?<=\.) ", para)]})
        ref, cand = re.findall(r"^>>> (.*)$", user, re.M)
        if (ref, cand) == bad_pair:
            return '{"explanation": "unsure", "match": "yes"}'
        return json.dumps({"explanation": "scripted", "match": SCRIPT.get((ref, cand), "none")})
    return answer


def run(tmp_path, answer, **kwargs):
    provider = MockProvider(answer=answer)
    return pointwise_run.evaluate("model-x", "c1", CANDIDATE, REFERENCE, model="judge",
                                  runner=lambda stage: StageRunner(stage, provider, tmp_path / stage),
                                  embed_kwargs={"cache_dir": None}, **kwargs)


def test_scores_match_a_hand_computation(tmp_path):
    row = run(tmp_path, fake_judge())
    assert row["status"] == "ok" and row["unjudged"] == 0
    assert row["points_reference"] == [["The court granted a preliminary injunction.", "The agency appealed."],
                                       ["Damages were awarded."]]
    assert (row["reference_points"], row["candidate_points"], row["pairs_judged"]) == (3, 3, 9)  # k=5 > 3
    assert row["matches"] == {"0-0": "full", "1-1": "full", "2-2": "partial"} | {
        f"{r}-{c}": "none" for r in range(3) for c in range(3) if r != c}
    # reference weights (A.3; every lemma count equal in paragraph and points, so each W_l = 1):
    # the court grant a preliminary injunction = 6; the agency appeal = 3; damage be award = 3 -> /12
    # candidate: the court grant injunction = 4 ("the" 3 times in both); the agency appeal = 3;
    # the case settle in 2024 = 5 -> /12. Full, full, partial (half):
    recall = 6 / 12 + 3 / 12 + 0.5 * 3 / 12
    precision = 4 / 12 + 3 / 12 + 0.5 * 5 / 12
    for method in ("greedy", "optimal"):
        assert row[f"{method}_recall"] == pytest.approx(recall)
        assert row[f"{method}_precision"] == pytest.approx(precision)
        assert row[f"{method}_recall_high"] == pytest.approx(recall)


def test_preselection_loss_is_measured_when_every_pair_is_judged(tmp_path):
    row = run(tmp_path, fake_judge(), k=1, judge_all=True)
    assert row["pairs_judged"] == 9 and row["preselection_true_pairs"] == 3
    assert 0 <= row["preselection_dropped"] <= 3
    assert row["preselection_dropped_share"] == pytest.approx(row["preselection_dropped"] / 3)


def test_a_bad_answer_is_recorded_not_scored(tmp_path):
    row = run(tmp_path, fake_judge(bad_pair=("The agency appealed.", "The agency appealed.")))
    assert row["status"] == "some_pairs_unjudged" and row["unjudged"] == 1 and "schema" in row["detail"]
    assert "1-1" not in row["matches"]
    # lower: the pair counts as no match; upper: as a full match
    assert row["greedy_recall"] == pytest.approx(6 / 12 + 0.5 * 3 / 12)
    assert row["greedy_recall_high"] == pytest.approx(6 / 12 + 3 / 12 + 0.5 * 3 / 12)


def test_unreadable_points_leave_the_pair_unscored(tmp_path):
    def answer(request):
        return "I cannot split this." if request.stage == "pointwise_points" else "{}"
    row = run(tmp_path, answer)
    assert row["status"] == "points_failed" and "no_json" in row["detail"]
    assert "greedy_recall" not in row


def test_rows_become_llm_scores(tmp_path):
    ok = run(tmp_path / "ok", fake_judge())
    bad = run(tmp_path / "bad", fake_judge(bad_pair=("The agency appealed.", "The agency appealed.")))
    rows = pointwise_run.llm_scores([ok, bad])
    assert [(r["metric"], r["model"]) for r in rows] == [("pointwise_recall", "model-x"), ("pointwise_precision", "model-x")]
    assert rows[0]["score"] == ok["greedy_recall"]
