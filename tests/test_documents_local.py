"""The three document-extraction methods with a real model (issue 11): end-to-end, chunk-by-chunk and the
Gavel-Agent on the local llama.cpp model (SmolLM2-135M), over a corpus built from real release text (three
summaries of case 46340, one of the cases whose human checklist is in human.json, treated as its documents),
then evaluated against human.json with the compare stage on the same model. A 135M model answers poorly;
what is checked is that every step is parsed or recorded with a reason, nothing crashes, the agent ends by
its stop protocol or its step limit, and S_checklist and the token tables are written."""

from __future__ import annotations

import pandas as pd
import pytest
from test_local_model import local_server  # noqa: F401  (the local-model fixture, defined once)

from gavel.documents import chunked, configs, end_to_end, evaluate, pacing
from gavel.documents.agent import collect_runs, run_agent, tokens_per_case
from gavel.documents.corpus import Corpus, summaries_corpus
from gavel.llm import pace
from gavel.llm.runner import StageRunner

MODEL = "SmolLM2-135M-Instruct"
CASE = "46340"
ITEMS = ["filing_date", "judge_name"]


@pytest.fixture(scope="module")
def corpus(release_root):
    root = release_root
    full = summaries_corpus(root, CASE)
    docs = full.documents[:3]  # three real documents keep a CPU run short
    small = Corpus.build(CASE, [d.text for d in docs], [d.title for d in docs], [d.doc_type for d in docs])
    return root, small


def test_end_to_end_on_the_local_model(local_server, corpus, tmp_path):  # noqa: F811
    root, c = corpus
    built = end_to_end.build_requests(c, MODEL, items=ITEMS, context_window=1600, reserve_output=200,
                                      params={"max_tokens": 200})
    assert len(built.requests) == len(ITEMS) and sum(built.truncation.removed_tokens) > 0  # cut to fit, recorded
    report = StageRunner(end_to_end.STAGE, local_server, tmp_path / "llm", progress=False).run(
        built.requests, mode="online")
    rows, problems = [], []
    for r in built.requests:
        resp = report.responses[r.custom_id]
        assert resp.ok, resp.error
        if resp.truncated:
            problems.append(f"item {r.item}: cut by the output limit")
            continue
        got, issues = end_to_end.parse(resp.text, c, r.item)
        rows += got
        problems += issues
        if not got and not issues:  # allowed only as the model's explicit "nothing found"
            obj, _ = end_to_end.parse_answer(resp.text)
            assert obj is not None and obj["extracted"] == [], f"item {r.item}: an answer neither used nor explained"
    for row in rows:  # every kept value carries its evidence and a grounding status
        assert row["value"] and "evidence" in row
    _evaluate(root, rows, local_server, tmp_path / "eval")


def test_chunk_by_chunk_on_the_local_model(local_server, corpus, tmp_path, capsys):  # noqa: F811
    root, c = corpus
    c = Corpus.build(CASE, [d.text for d in c.documents[1:]], [d.title for d in c.documents[1:]])  # two shorter ones
    said = []  # the speed measured on the real server, the duration said before the first piece is sent
    speed = pace.Announcer(local_server, MODEL, pacing.chunked_say(c, MODEL, items=ITEMS[:1], max_tokens=400,
                                                                   params={"max_tokens": 200}), show=said.append)
    res = chunked.run_chunked(c, local_server, MODEL, items=ITEMS[:1], workdir=tmp_path / "llm", max_tokens=400,
                              params={"max_tokens": 200}, pace=speed)
    n_pieces = len(chunked.pieces(c, 400))
    assert len(said) == 1 and f"for at most {n_pieces} requests" in said[0], said
    assert capsys.readouterr().out.count("chunked: piece ") == n_pieces  # each piece's round says its duration
    assert n_pieces > len(c.documents)  # real text cut into pieces, each carried to the next
    assert len(res.log) == n_pieces  # one merge record or one error per (item, piece)
    for entry in res.log:
        assert "error" in entry and entry["error"] or "error" not in entry
    for item_stats in res.token_stats.values():
        s = item_stats[CASE]
        assert s["total_prompts"] == n_pieces and s["total_input_tokens"] > 0
    _evaluate(root, res.value_rows(CASE), local_server, tmp_path / "eval")


def test_agent_on_the_local_model(local_server, corpus, tmp_path, capsys):  # noqa: F811
    root, c = corpus
    out = tmp_path / "runs" / MODEL / CASE / "individual" / "filing_date"
    cfg = configs.single_config("Filing Date")
    said = []
    speed = pace.Announcer(local_server, MODEL, pacing.agent_say(c, [cfg], MODEL, 5, {"max_tokens": 200}),
                           show=said.append)
    res = run_agent(c, cfg, local_server, MODEL, out, max_steps=5, params={"max_tokens": 200}, pace=speed)
    assert res.end_reason in ("stop", "max_steps"), res.end_reason
    assert len(said) == 1 and "each turn about" in said[0] and "at most 5 turns" in said[0], said
    assert capsys.readouterr().out.count(" of at most 5: ") == res.llm_calls  # a progress line per model turn
    assert res.steps <= 5
    for name in ("checklist.json", "ledger.jsonl", "stats.json"):
        assert (out / name).is_file()
    ledger = pd.read_json(out / "ledger.jsonl", lines=True)
    # every step is a tool call, a stop, or a recorded parse error with its reason
    assert len(ledger) >= 1
    values, tokens = collect_runs(tmp_path / "runs")
    assert len(tokens) == 1 and tokens["input_tokens"].iloc[0] > 0 and tokens["end_reason"].iloc[0] == res.end_reason
    per_case = tokens_per_case(tokens)
    assert per_case["total_tokens"].iloc[0] == per_case["input_tokens"].iloc[0] + per_case["output_tokens"].iloc[0]
    _evaluate(root, values.to_dict("records"), local_server, tmp_path / "eval")


def configs_key(name: str) -> str:
    from gavel.core.items import item

    return item(name).key


def _evaluate(root, rows, provider, workdir):
    """The method's rows against human.json with the compare stage (the local model as judge)."""
    refs = evaluate.human_references(root)
    assert CASE in refs
    values = pd.DataFrame(rows, columns=["case_id", "item", "index", "value"]).assign(case_id=CASE)
    keys = {configs_key(i) for i in ITEMS}
    pair_list = [p for p in evaluate.pairs(values, "local", refs, cases=[CASE]) if p.item in keys]
    assert len(pair_list) == len(ITEMS)
    res = evaluate.evaluate(pair_list, provider, MODEL, workdir)
    assert len(res["rows"]) == len(pair_list)  # every pair gated, judged or recorded as unusable
    assert len(res["per_case"]) <= 1 and "s_checklist" in res["per_run"].columns
