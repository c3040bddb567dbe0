"""The document methods on the local model say how long they will take before they start, and show their
progress (issue 28 §2), with a fake speed and a scripted model (no llama.cpp): `gavel documents end-to-end |
chunked | three-pass | agent --provider local` print the forecast line with the requests each method will
send, each round its own forecast, a rerun answered wholly from the cache neither measures nor forecasts;
every request is at its stage's local cap (one definition: the registry entry, through gavel.llm.pace)."""

from __future__ import annotations

import json
import re

import pytest

from gavel.core.items import item
from gavel.documents import agent, chunked, cli, end_to_end, pacing, three_pass
from gavel.documents.chunked import pieces
from gavel.documents.corpus import Corpus, write_folder
from gavel.llm import pace
from gavel.llm.providers.mock import MockProvider

LOCAL = "SmolLM2-135M-Instruct"
SPEED = pace.Pace(prompt_s=0.01, generate_s=0.05, request_s=0.5)
DOC_STAGES = [end_to_end.STAGE, chunked.STAGE, *three_pass.STAGES.values(), agent.STAGE]
TEXTS = {"Complaint": "The plaintiffs filed this suit on March 3, 2011, against the county jail. " * 30,
         "Order": "The court dismissed the case on June 1, 2012, and no party paid any money. " * 30}


def _answer(request):
    if request.stage == agent.STAGE:  # a terminal escape in the model's text is not passed to the terminal
        return json.dumps({"decision": "stop", "reason": "nothing more\x1b[2J to find"})
    return json.dumps({"items": [], "extracted": []})


@pytest.fixture
def local(tmp_path, monkeypatch):
    """`--provider local` answered by a scripted model at a fake measured speed; counts the measurements."""
    measured = []
    monkeypatch.setattr(cli, "provider_from_args", lambda args: MockProvider(answer=_answer))
    monkeypatch.setattr(pace, "measure", lambda provider, model: measured.append(model) or SPEED)
    case = write_folder(Corpus.build("7", list(TEXTS.values()), list(TEXTS)), tmp_path / "case")
    return case, measured


def _run(capsys, *argv) -> str:
    from gavel.cli import main

    assert main(["documents", *argv]) == 0
    return capsys.readouterr().out


def _common(case, tmp_path, method):
    return [method, str(case), "--provider", "local", "--model", LOCAL, "--out", str(tmp_path / "out" / method)]


def _forecast(out: str) -> re.Match:
    m = re.search(r"prompt tokens/s, .* generated tokens/s \(measured now\); (.*)", out)
    assert m, out
    return m


def test_every_document_stage_has_a_local_cap_and_requests_carry_it():
    for stage in DOC_STAGES:  # one definition: the local model's registry entry
        assert pace.stage_cap(LOCAL, stage), stage
        assert 0 < pace.answer_tokens(LOCAL, stage) <= pace.stage_cap(LOCAL, stage), stage
    c = Corpus.build("7", list(TEXTS.values()), list(TEXTS))
    built = end_to_end.build_requests(c, LOCAL, items=["Filing Date"])
    assert built.requests[0].params["max_tokens"] == pace.stage_cap(LOCAL, end_to_end.STAGE)
    wide = end_to_end.build_requests(c, LOCAL, items=["Filing Date"], reserve_output=1024)  # the model's own cap
    assert built.budget - wide.budget == 1024 - pace.stage_cap(LOCAL, end_to_end.STAGE)  # room for documents
    piece = pieces(c, 200)[0]
    assert chunked.build_request(c, "Filing Date", [], piece, LOCAL).params["max_tokens"] == \
        pace.stage_cap(LOCAL, chunked.STAGE)
    reqs, _ = pacing.three_pass_requests(c, LOCAL, max_tokens=200, items=["Filing Date"])
    assert {r.stage: r.params["max_tokens"] for r in reqs} == {s: pace.stage_cap(LOCAL, s)
                                                               for s in three_pass.STAGES.values()}
    from gavel.documents import configs

    turn = agent.first_turn(c, configs.single_config("Filing Date"), LOCAL)
    assert turn.params["max_tokens"] == pace.stage_cap(LOCAL, agent.STAGE)
    # a cloud model's requests are as before (no cap of ours: their cache keys unchanged); a cap set wins
    assert "max_tokens" not in end_to_end.build_requests(c, "gpt-4.1-2025-04-14", items=["Filing Date"]
                                                         ).requests[0].params
    assert chunked.build_request(c, "Filing Date", [], piece, LOCAL, {"max_tokens": 1024}).params["max_tokens"] == 1024


def test_end_to_end_local_says_its_duration_before_it_sends_and_not_when_cached(local, tmp_path, capsys):
    case, measured = local
    argv = _common(case, tmp_path, "end-to-end") + ["--items", "Filing Date", "Who are the Parties",
                                                    "--mode", "online"]
    out = _run(capsys, *argv)
    line = _forecast(out).group(1)
    assert re.match(r"expected duration [\d.]+ (s|min|h) for 2 requests", line), line
    assert measured == [LOCAL]
    assert out.index("measured now") < out.index("values ->")  # said before the results
    out = _run(capsys, *argv)  # wholly from the cache: no server started, nothing measured, nothing forecast
    assert "expected duration" not in out and measured == [LOCAL]


def test_chunked_local_says_items_times_pieces_and_each_piece(local, tmp_path, capsys):
    case, measured = local
    n = len(pieces(Corpus.build("7", list(TEXTS.values()), list(TEXTS)), 200))
    assert n >= 3
    out = _run(capsys, *_common(case, tmp_path, "chunked"), "--items", "Filing Date", "Who are the Parties",
               "--chunk-tokens", "200")
    assert re.match(rf"expected duration [\d.]+ (s|min|h) for at most {2 * n} requests", _forecast(out).group(1))
    rounds = re.findall(rf"chunked: piece (\d+) of {n} \(.*\): 2 of 2 requests to send; expected [\d.]+ (?:s|min)", out)
    assert rounds == [str(i) for i in range(1, n + 1)]  # progress: each piece's round says its duration first
    assert measured == [LOCAL]


def test_three_pass_local_counts_the_merge_tree_from_the_pieces(local, tmp_path, capsys):
    case, measured = local
    n = len(pieces(Corpus.build("7", list(TEXTS.values()), list(TEXTS)), 200))
    out = _run(capsys, *_common(case, tmp_path, "three-pass"), "--items", "Filing Date", "--chunk-tokens", "200")
    line = _forecast(out).group(1)
    d = r"[\d.]+ (?:s|min|h)"
    assert re.match(rf"expected duration {d} for at most {2 * n} requests \({n} pieces: {n} extract {d}, "
                    rf"at most {n - 1} merge {d}, 1 prune {d}\)", line), line
    assert re.search(rf"three-pass extract: {n} of {n} requests to send; expected", out)


def test_merge_tree_joins_are_pieces_minus_one():
    for n in range(0, 40):
        joins = three_pass.merge_joins(n)
        assert sum(joins) == max(n - 1, 0)
        left = n
        for j in joins:  # each level joins pairs of what the level holds
            assert j == left // 2
            left -= j
    assert three_pass.merge_joins(5) == [2, 1, 1]


def test_three_pass_forecast_counts_what_a_run_sends_when_every_join_needs_the_model(tmp_path):
    """The scripted model of test_three_pass finds overlapping items in every piece: every join is a call."""
    from test_three_pass import EXAMPLE, MODEL, corpus, scripted

    calls: list = []
    three_pass.run_three_pass(corpus(), scripted(calls), MODEL, checklist=EXAMPLE, workdir=tmp_path / "w")
    reqs, n = pacing.three_pass_requests(corpus(), MODEL, checklist=EXAMPLE)
    assert len(calls) == len(reqs) == 2 * n  # n extract, n - 1 joins, 1 prune
    assert [r.stage for r in reqs] == calls


def test_agent_local_says_each_turn_and_the_step_limits_most(local, tmp_path, capsys):
    case, measured = local
    out = _run(capsys, *_common(case, tmp_path, "agent"), "--config", "individual/01_filing_date",
               "--max-steps", "7")
    line = _forecast(out).group(1)
    m = re.match(r"the agent's turns are its own choice: each turn about ([\d.]+) s \(the first; later turns carry "
                 r"the run's history, up to ([\d.]+) (s|min) at the model's full context window\); at most 7 turns: "
                 r"about [\d.]+ (s|min), at most [\d.]+ (s|min|h)", line)
    assert m, line
    # progress: a line per model turn (stop, the driver's own review step, stop again)
    assert re.findall(r"turn (\d) of at most 7: stop #(\d)", out) == [("1", "1"), ("3", "2")]
    assert "\x1b" not in out and "nothing more [2J to find" in out
    assert measured == [LOCAL]
    out = _run(capsys, *_common(case, tmp_path, "agent"), "--config", "individual/01_filing_date",
               "--max-steps", "7")  # the finished run again: nothing to send, nothing measured
    assert "expected" not in out and measured == [LOCAL]


def test_forecasts_other_providers_print_nothing(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(pace, "measure", lambda *a: pytest.fail("measured a provider that is not local"))
    case = write_folder(Corpus.build("7", list(TEXTS.values()), list(TEXTS)), tmp_path / "case")
    out = _run(capsys, "chunked", str(case), "--provider", "mock", "--model", "gpt-4.1-2025-04-14",
               "--out", str(tmp_path / "out"), "--items", "Filing Date", "--chunk-tokens", "200")
    assert "expected" not in out


def test_agent_forecast_per_turn_is_the_first_turns_request():
    from gavel.documents import configs

    c = Corpus.build("7", list(TEXTS.values()), list(TEXTS))
    cfg = configs.single_config(item("Filing Date").name)
    say = pacing.agent_say(c, [cfg], LOCAL, max_steps=10)(SPEED)
    first = pace.forecast([agent.first_turn(c, cfg, LOCAL, 10)], SPEED)
    assert f"each turn about {pace.duration(first)}" in say and f"about {pace.duration(10 * first)}," in say


def test_pieces_fit_a_small_models_window_and_are_the_papers_elsewhere():
    from gavel.core.tokens import count_tokens
    from gavel.documents.chunking import CHUNK_TOKENS
    from gavel.llm.registry import llm_model

    assert chunked.piece_tokens("gpt-4.1-2025-04-14") == CHUNK_TOKENS  # the paper's 16K pieces, as before
    size = chunked.piece_tokens(LOCAL, three_pass.STAGES["extract"])
    assert size < CHUNK_TOKENS
    long_doc = Corpus.build("7", ["The court ordered the county to report on the jail's conditions. " * 3000], ["Order"])
    reqs, n = pacing.three_pass_requests(long_doc, LOCAL)  # the default piece size, every item of the checklist
    assert n > 1
    for r in reqs[:n]:  # every extract request fits the model's window with its answer (the runner sends it)
        assert sum(count_tokens(m["content"]) for m in r.messages) + r.params["max_tokens"] <= \
            llm_model(LOCAL).context_window


def test_documents_evaluate_local_says_its_duration_and_caps_the_judge(local, tmp_path, capsys, monkeypatch):
    """`documents evaluate --provider local`: the compare stage at the judge's local cap, its expected duration
    said before it sends; answered wholly from the cache, nothing is measured or said."""
    _, measured = local
    caps = []
    monkeypatch.setattr(cli, "provider_from_args", lambda args: MockProvider(
        answer=lambda r: caps.append(r.params.get("max_tokens")) or "**Final Answer:** A equals B"))
    rows = tmp_path / "rows.jsonl"
    rows.write_text(json.dumps({"case_id": "7", "item": "Court", "index": 1, "value": "District of Maine"}) + "\n")
    refs = tmp_path / "refs.json"
    refs.write_text(json.dumps({"7": {"court": ["U.S. District Court for the District of Maine"]}}))
    from gavel.core import config

    argv = ["evaluate", str(rows), "--subject", "s", "--provider", "local", "--judge", LOCAL, "--checklist",
            str(config.PACKAGE_DIR / "core" / "checklists" / "court_outcome.yaml"), "--references", str(refs),
            "--out", str(tmp_path / "ev")]
    out = _run(capsys, *argv)
    assert re.search(r"measured now\); judge SmolLM2", out) and re.search(r"stage compare: 1 of 1 requests to send; "
                                                                         r"expected [\d.]+ (s|min)", out), out
    assert measured == [LOCAL]
    out = _run(capsys, *argv)
    assert "expected" not in out and measured == [LOCAL]
    assert caps == [pace.stage_cap(LOCAL, "compare")] and caps[0] > 0


@pytest.mark.parametrize("t_prompt, t_gen, output_tokens, generate_s", [
    (1.0, 2.0, 40, None),       # a plain measure: generation is the request's time less its short prompt's share
    (90.0, 2.0, 40, 2.0 / 40),  # the long prompt was slowed (a busy machine): its share would eat all of it
    (10.0, 0.3, 1, 0.3),        # the model stopped at once, sooner than its prompt's estimated share
])
def test_the_measured_generation_speed_is_never_free(monkeypatch, t_prompt, t_gen, output_tokens, generate_s):
    from gavel.core.tokens import count_tokens
    from gavel.llm.records import Response

    times = iter([(9.0, None), (t_prompt, None), (t_gen, Response(custom_id="pace", status="succeeded",
                                                                   output_tokens=output_tokens))])
    monkeypatch.setattr(pace, "timed", lambda provider, request: next(times))
    got = pace.measure(object(), LOCAL)
    assert got.generate_s > 0 and "1,000,000,000" not in pace.speed_line(got)
    if generate_s is None:
        share = count_tokens(pace._COUNT) * got.prompt_s
        assert got.generate_s == pytest.approx((t_gen - share) / output_tokens)
    else:
        assert got.generate_s == pytest.approx(generate_s)
