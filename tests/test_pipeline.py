"""The GAVEL-REF pipeline end to end with a scripted model (mock provider): every stage runs through
StageRunner, unusable answers are re-asked and then recorded, scores are written, a rerun sends nothing."""

import json
import math
import os
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from gavel.core.items import item
from gavel.llm.providers.mock import MockProvider
from gavel.ref.stages import compare
from gavel.runs import pipeline

REF = ("The ACLU filed this class action on March 3, 2020 in the Northern District of Illinois. "
       "Judge Mary Smith presided over the case. The city agreed to a consent decree in 2021. "
       "Residents had complained about police stops for many years before the suit.")
MODEL = ("On March 3, 2020, the ACLU sued the city in the Northern District of Illinois. "
         "The parties settled by consent decree in 2021. The mayor resigned in 2022 after the settlement.")
ITEMS = (item("Filing Date"), item("First and Last name of Judge"), item("Dates of All Decrees"))


def scripted(request):
    user = request.messages[-1]["content"] if request.messages[-1]["role"] == "user" else ""
    if request.stage == "extract":
        summary = request.messages[1]["content"]
        if request.item == "filing_date":
            return json.dumps({"reasoning": "date", "extracted": [{"evidence": ["March 3, 2020"], "value": "March 3, 2020"}]})
        if request.item == "judge_name":
            if "Judge Mary Smith" in summary:
                return json.dumps({"reasoning": "x", "extracted": [{"evidence": ["Judge Mary Smith"], "value": "Mary Smith"}]})
            return "I could not find a judge."  # prose, no JSON: re-asked, then recorded
        if "agreed to a consent decree" in summary:
            return "```json\n{'reasoning': 'r', 'extracted': [{'evidence': ['consent decree in 2021'], 'value': 'consent decree (2021)'},]}\n```"
        return json.dumps({"reasoning": "r", "extracted": [{"evidence": ["consent decree in 2021"], "value": "decree 2021"}]})
    if request.stage == "compare":
        return "**Reasoning:** same year.\n**Final Answer:** A equals B"
    if request.stage == "residual":
        n = sum(1 for line in user.splitlines() if line.startswith("["))
        return json.dumps({"reasoning": "r", "extracted": [{"fact": f"fact {i}", "evidence_spans": [i]} for i in range(1, n + 1)]})
    if request.stage == "residual_match":
        return '**Final Answer:**\n```json\n{"common": [{"A_index": 1, "B_index": 1}], "only_in_A": [], "only_in_B": []}\n```'
    if request.stage == "style":
        return json.dumps({"readability_jargon": 4, "narrative_order": "3", "sentence_structure": 4,
                           "formatting_layout": 5, "citation_style": 4})
    raise AssertionError(request.stage)


def test_pipeline_scores_a_summary_and_reruns_from_cache(tmp_path):
    provider = MockProvider(answer=scripted)
    settings = pipeline.Settings(extractor="gpt-oss-20b-BF16", judge="gemma-3-27b-it", items=ITEMS)
    tables = pipeline.evaluate([("model-x", "1", MODEL)], {"1": REF}, provider, tmp_path, settings,
                               bins={"1": "32K"})
    answers = tables["answers"]
    # the judge-name answer for the model summary is prose: asked 1 + MAX_REASKS times, then recorded
    bad = answers[(answers.stage == "extract") & (answers.item == "judge_name") & (answers.subject == "model-x")]
    assert list(bad["status"]) == ["no_json"] * 3
    comp = tables["compare"].set_index("item")
    assert comp.loc["filing_date", "gate"] == "identical" and comp.loc["filing_date", "score"] == 1.0
    assert comp.loc["decree_dates", "gate"] == "single"
    assert comp.loc["judge_name", "status"] == "no_values"  # model side unusable: not scored as 0
    scores = tables["scores"].iloc[0]
    assert scores["s_checklist"] == pytest.approx(100.0)  # two usable items, both 1
    assert scores["s_checklist_low"] == pytest.approx(200 / 3) and scores["s_checklist_high"] == pytest.approx(100.0)
    assert scores["s_style"] == pytest.approx((4 + 3 + 4 + 5 + 4) / 5 * 25 - 25)
    assert 0 < scores["r_reference"] < 1 and 0 < scores["r_own"] < 1
    expected = (1 - scores["r_reference"]) * 0.9 * 100 + scores["r_reference"] * 0.9 * scores["s_residual"] \
        + 0.1 * scores["s_style"]
    assert scores["s_gavel_ref"] == pytest.approx(expected)
    assert not math.isnan(scores["s_residual"])
    assert (tmp_path / "scores.csv").exists() and (tmp_path / "model_scores.csv").exists()
    manifest = json.loads((tmp_path / "evaluation.json").read_text())
    assert set(manifest["templates"]) == set(pipeline.TEMPLATES) and manifest["sent"]["extract"] > 0
    # a rerun of unchanged stages sends nothing
    again = pipeline.evaluate([("model-x", "1", MODEL)], {"1": REF}, MockProvider(answer=scripted), tmp_path, settings)
    assert sum(again["manifest"]["sent"].values()) == 0
    pd.testing.assert_frame_equal(again["scores"], tables["scores"].drop(columns="bin"))


def test_bad_input_names_the_record_and_the_rest_goes_on(tmp_path):
    settings = pipeline.Settings(extractor="gpt-oss-20b-BF16", judge="gemma-3-27b-it", items=ITEMS[:1])
    tables = pipeline.evaluate([("m", "1", MODEL), ("m", "2", "  "), ("m", "9", MODEL), ("m", "1", REF)],
                               {"1": REF, "2": REF}, MockProvider(answer=scripted), tmp_path, settings)
    problems = tables["problems"].to_dict("records")
    assert {"subject": "m", "case_id": "2", "problem": "summaries, record 2: empty summary"} in problems
    assert {"subject": "m", "case_id": "9", "problem": "no usable reference summary for this case"} in problems
    assert any("record 4: a second summary" in p["problem"] for p in problems)
    assert list(tables["scores"]["case_id"]) == ["1"]  # the rest went on
    bad = tmp_path / "odd.json"
    bad.write_text("[1, 2]")
    with pytest.raises(pipeline.InputError, match="odd.json: unknown shape"):
        pipeline.read_summaries(bad)
    lines = tmp_path / "s.jsonl"
    lines.write_text('{"case_id": "1", "summary": "x"}\nnot json\n')
    with pytest.raises(pipeline.InputError, match="s.jsonl, line 2: not JSON"):
        pipeline.read_summaries(lines)
    # given a list for the problems, a bad record is named there and the file's other records are kept
    lines.write_text('{"case_id": "1", "summary": "x"}\nnot json\n{"case_id": "3"}\n{"case_id": "4", "text": "y"}\n')
    problems = []
    assert pipeline.read_summaries(lines, "m", problems) == [("m", "1", "x"), ("m", "4", "y")]
    assert [p.split(": ")[0] for p in problems] == [f"{lines}, line 2", f"{lines}, line 3"]
    obj = tmp_path / "s.json"
    obj.write_text('{"1": "x", "2": 5, "3": "z"}')
    problems = []
    assert pipeline.read_summaries(obj, "m", problems) == [("m", "1", "x"), ("m", "3", "z")]
    assert problems == [f"{obj}, case 2: summary is int, not text"]


def test_ab_order_is_seeded_and_mapped_back():
    sides = {compare.model_is_a(0, "m", str(c), "parties") for c in range(40)}
    assert sides == {True, False}
    assert compare.model_is_a(3, "m", "1", "x") == compare.model_is_a(3, "m", "1", "x")


def test_pipeline_tables_have_the_results_shapes_and_figure_2_draws_them(tmp_path):
    from gavel.core import config
    from gavel.paper import figures

    provider = MockProvider(answer=scripted)
    settings = pipeline.Settings(extractor="gpt-oss-20b-BF16", judge="gemma-3-27b-it", items=ITEMS)
    bins = dict(zip(["a", "b", "c", "d", "e"], ["32K", "64K", "128K", "256K", "512K"]))
    summaries = [(m, c, MODEL if m == "model-x" else REF.replace("ACLU", "union")) for m in ("model-x", "model-y")
                 for c in bins]
    tables = pipeline.evaluate(summaries, {c: REF for c in bins}, provider, tmp_path, settings, bins=bins)
    committed = pd.read_csv(config.RESULTS_DIR / "summary_s_checklist.csv")
    assert list(tables["summary_s_checklist"].columns) == ["checklist", *committed.columns]  # the run names its checklist
    committed_boot = pd.read_csv(config.RESULTS_DIR / "summary_bootstrap.csv")
    assert list(tables["summary_bootstrap"].columns) == ["checklist", *committed_boot.columns]
    assert set(tables["summary_s_checklist"]["length_bin"]) == {"all", "32K", "64K", "128K", "256K", "512K"}
    fig = figures.fig_benchmark({"summary_s_checklist": tables["summary_s_checklist"],
                                 "summary_bootstrap": tables["summary_bootstrap"]})
    assert len(fig.axes) >= 2


def test_cli_evaluate_names_a_bad_line_and_scores_the_rest(tmp_path):
    """`python -m gavel evaluate` with a summaries file holding one unreadable line: the line is named on
    stderr, the file's good summary is evaluated (mock provider), exit status 0."""
    (tmp_path / "s.jsonl").write_text('{"case_id": "1", "summary": "The court approved a settlement in 2019."}\n'
                                      'not json\n')
    (tmp_path / "refs.json").write_text('{"1": "The parties settled in 2019; the court approved it."}')
    done = subprocess.run([sys.executable, "-m", "gavel", "evaluate", "--summaries", "s.jsonl", "--references",
                           "refs.json", "--provider", "mock", "--out", "out", "--items", "filing_date"],
                          cwd=tmp_path, capture_output=True, text=True, timeout=600,
                          env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1])})
    assert done.returncode == 0, done.stderr
    assert "skipped s.jsonl, line 2: not JSON" in done.stderr
    scores = pd.read_csv(tmp_path / "out" / "scores.csv", dtype={"case_id": str})
    assert list(scores["case_id"]) == ["1"]


class _Capped(MockProvider):
    """The scripted model, whose answers are cut where they pass the request's cap (``max_tokens``, in
    characters here): a cut answer ends with finish reason ``length``, as a real backend says."""

    def _answer(self, cid, r, batch_id):
        resp = super()._answer(cid, r, batch_id)
        cap = r.params.get("max_tokens")
        if cap and resp.text and len(resp.text) > cap:
            from dataclasses import replace

            return replace(resp, text=resp.text[:cap], finish_reason="length", output_tokens=cap)
        return resp


def test_a_truncated_answer_is_asked_again_once_with_a_larger_cap_where_the_window_allows(tmp_path):
    """An answer cut at the request's own cap is asked again once with twice the cap (answers.csv says
    so); an answer still cut then is recorded, not asked a third time; without a cap of its own (the
    paper's configuration) a truncated answer is recorded as it is."""
    long_judge = json.dumps({"reasoning": "x" * 150, "extracted": [{"evidence": ["Judge Mary Smith"],
                                                                   "value": "Mary Smith"}]})

    def answer(request):
        if request.stage == "extract" and request.item == "judge_name" and "Judge Mary Smith" in request.messages[1]["content"]:
            return long_judge  # ~230 characters: cut at 150, whole at 300
        if request.stage == "extract" and request.item == "decree_dates":
            return json.dumps({"reasoning": "y" * 700, "extracted": []})  # cut at 150 and at 300
        return scripted(request)

    settings = pipeline.Settings(extractor="gpt-oss-20b-BF16", judge="gemma-3-27b-it", items=ITEMS, max_tokens=150)
    tables = pipeline.evaluate([("model-x", "1", MODEL)], {"1": REF}, _Capped(answer=answer), tmp_path, settings)
    a = tables["answers"]
    judge = a[(a.stage == "extract") & (a.item == "judge_name") & (a.subject == "human")]
    assert list(judge["status"]) == ["truncated", "ok"]
    assert "asked again with max_tokens 300" in judge["detail"].iloc[0]
    decree = a[(a.stage == "extract") & (a.item == "decree_dates") & (a.subject == "human")]
    assert list(decree["status"]) == ["truncated", "truncated"]  # asked again once only
    # no cap of its own: nothing larger to ask for
    plain = pipeline.Settings(extractor="gpt-oss-20b-BF16", judge="gemma-3-27b-it", items=ITEMS)
    from gavel.llm.records import Request, Response

    r = Request(stage="extract", model=plain.extractor, messages=[{"role": "user", "content": "x"}])
    cut = Response(custom_id=r.custom_id, status="succeeded", text="{", finish_reason="length", input_tokens=10)
    assert pipeline.larger_cap(r, cut) is None
    window = Request(stage="extract", model=plain.extractor, messages=r.messages, params={"max_tokens": 1000})
    from gavel.llm.registry import llm_model

    n = llm_model(plain.extractor).context_window
    assert pipeline.larger_cap(window, replace_tokens(cut, n - 1500)) == 1500  # what the window leaves
    assert pipeline.larger_cap(window, replace_tokens(cut, n - 900)) is None  # no room for more


def replace_tokens(resp, n):
    from dataclasses import replace

    return replace(resp, input_tokens=n)


def test_a_reask_after_a_doubled_cap_goes_back_to_the_cap_and_rounds_are_bounded_in_tokens(tmp_path):
    """Issue 46 (5): after a cut answer asked again with twice the cap, a re-ask that got prose kept the
    doubled cap (150, 300, 300: 5 times the cap paid for one request). Now the re-ask has the request's own
    cap, and all rounds together ask for at most REASK_TOKEN_FACTOR times it."""
    sent: dict = {}

    def answer(request):
        if request.stage == "extract" and request.item == "judge_name":
            caps = sent.setdefault(request.subject, [])
            caps.append(request.params.get("max_tokens"))
            if len(caps) == 1:
                return json.dumps({"reasoning": "x" * 200, "extracted": []})  # cut at 150
            return "Sorry, here is some prose instead."  # unusable: re-asked
        return scripted(request)

    settings = pipeline.Settings(extractor="gpt-oss-20b-BF16", judge="gemma-3-27b-it", items=ITEMS, max_tokens=150)
    tables = pipeline.evaluate([("model-x", "1", MODEL)], {"1": REF}, _Capped(answer=answer), tmp_path, settings)
    assert sent["model-x"] == [150, 300, 150] and sum(sent["model-x"]) == pipeline.REASK_TOKEN_FACTOR * 150
    a = tables["answers"]
    judge = a[(a.stage == "extract") & (a.item == "judge_name") & (a.subject == "model-x")]
    assert list(judge["status"]) == ["truncated", "no_json", "no_json"]
