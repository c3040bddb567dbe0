"""A checklist of our own and the three-pass method with a real model: the local llama.cpp model (SmolLM2-135M) on
released case 46340, for gavel/core/checklists/court_outcome.yaml. GAVEL-REF evaluate (a released model summary against the
human one), end-to-end extraction and the three-pass method over release text treated as documents. A 135M model
answers poorly; what is checked is that the checklist's items and name reach every request and table, every
answer is used or recorded with a reason, and every evidence quote the three-pass method keeps is byte for byte
in the document and chunk it names. Kept small: two items, short texts."""

from __future__ import annotations

import json

import pytest
from test_local_model import local_server  # noqa: F401  (the local-model fixture, defined once)

from gavel.answers import REASONS
from gavel.core import config
from gavel.core import items as gitems
from gavel.documents import end_to_end, pacing, three_pass
from gavel.documents.chunked import pieces
from gavel.documents.corpus import Corpus, release_summaries
from gavel.llm import pace
from gavel.llm.runner import StageRunner
from gavel.runs import pipeline

MODEL = "SmolLM2-135M-Instruct"
CASE = "46340"
EXAMPLE = config.PACKAGE_DIR / "core" / "checklists" / "court_outcome.yaml"
ITEMS = ["court", "outcome"]
CHARS = 1200  # the first characters of each released text: a short CPU run


@pytest.fixture(scope="module")
def released(release_root):
    found = release_summaries(release_root, CASE)
    assert found[0][0] == "human" and len(found) >= 3
    return [(author, text[:CHARS]) for author, text in found]


def test_evaluate_with_the_example_checklist(local_server, released, tmp_path):  # noqa: F811
    (_, reference), (author, summary) = released[0], released[1]
    checklist = gitems.load(EXAMPLE)
    settings = pipeline.Settings(MODEL, MODEL, checklist=checklist, items=checklist.select(ITEMS), max_tokens=150)
    tables = pipeline.evaluate([(author, CASE, summary)], {CASE: reference}, local_server, tmp_path, settings)
    answers = tables["answers"]
    assert set(answers.loc[answers["stage"] == "extract", "item"]) == set(ITEMS)
    assert set(answers["status"]) - {"ok", "gated"} <= set(REASONS)
    assert (answers.loc[~answers["status"].isin(["ok", "gated"]), "detail"].fillna("") != "").all()
    assert set(tables["compare"]["item"]) == set(ITEMS)
    assert list(tables["scores"]["checklist"]) == ["court_outcome"]
    manifest = json.loads((tmp_path / "evaluation.json").read_text())
    assert manifest["checklist"]["name"] == "court_outcome" and manifest["checklist"]["fingerprint"] == checklist.fingerprint


def test_end_to_end_with_the_example_checklist(local_server, released, tmp_path):  # noqa: F811
    docs = released[1:4]
    corpus = Corpus.build(CASE, [t for _, t in docs], [f"Summary by {a}" for a, _ in docs])
    built = end_to_end.build_requests(corpus, MODEL, items=ITEMS, checklist=EXAMPLE, context_window=1600,
                                      reserve_output=200, params={"max_tokens": 200})
    assert [r.item for r in built.requests] == ["Court", "Outcome"]
    assert "Docket sheets and the first page" in built.requests[0].messages[-1]["content"]
    report = StageRunner(end_to_end.STAGE, local_server, tmp_path / "llm", progress=False,
                         namespace=gitems.load(EXAMPLE).cache_tag).run(built.requests, mode="online")
    found = []
    for r in built.requests:
        resp = report.responses[r.custom_id]
        assert resp.ok, resp.error
        rows, problems = end_to_end.parse(resp.text, corpus, r.item)
        assert rows or problems or end_to_end.parse_answer(resp.text)[0]["extracted"] == []
        assert all(row["item"] == r.item and row["value"] for row in rows)
        found += [{**row, "case_id": CASE} for row in rows]
    # and scored against a reference of the checklist's own (documents evaluate), the local model judging
    import pandas as pd

    from gavel.documents import evaluate as devaluate

    refs = {CASE: {"court": ("U.S. District Court",), "outcome": ("settled", "consent decree")}}
    values = pd.DataFrame(found, columns=["case_id", "item", "index", "value"])
    pairs = devaluate.pairs(values, "e2e/local", refs, cases=[CASE], checklist=EXAMPLE)
    pairs = [p for p in pairs if p.item in ITEMS]
    res = devaluate.evaluate(pairs, local_server, MODEL, tmp_path / "eval", checklist=EXAMPLE)
    assert set(res["rows"]["item"]) == set(ITEMS) and set(res["per_run"]["checklist"]) == {"court_outcome"}
    unusable = res["rows"][~res["rows"]["status"].isin(["ok", "gated"])]
    assert set(unusable["status"]) <= set(REASONS) and (unusable["detail"].fillna("") != "").all()


def test_three_pass_on_the_local_model(local_server, released, tmp_path, capsys):  # noqa: F811
    docs = released[1:3]
    corpus = Corpus.build(CASE, [t for _, t in docs], [f"Summary by {a}" for a, _ in docs])
    said = []  # the real server's speed measured, the duration said before the first pass sends
    speed = pace.Announcer(local_server, MODEL, pacing.three_pass_say(
        corpus, MODEL, checklist=EXAMPLE, items=ITEMS, max_tokens=200, params={"max_tokens": 300}), show=said.append)
    res = three_pass.run_three_pass(corpus, local_server, MODEL, checklist=EXAMPLE, items=ITEMS,
                                    workdir=tmp_path / "w", max_tokens=200, params={"max_tokens": 300}, pace=speed)
    parts = pieces(corpus, 200)
    n = len(parts)
    assert len(said) == 1 and f"for at most {2 * n} requests ({n} pieces: {n} extract " in said[0], said
    assert f", at most {n - 1} merge " in said[0]
    assert f"three-pass extract: {n} of {n} requests to send; expected" in capsys.readouterr().out
    stats = res.token_stats[CASE]
    assert stats["by_pass"]["extract"]["prompts"] == len(parts) > len(corpus.documents)
    assert stats["total_input_tokens"] > 0 and stats["chunks_in_case"] == len(parts)
    for record in res.log:  # every merge, removal and drop carries its reason
        assert record["why"], record
    chunk = {(p.document, p.chunk_id): p.text for p in parts}
    for key, values in res.values.items():
        assert key in ITEMS
        for v in values:  # what is kept is, byte for byte, where it says it is
            assert v["evidence"] and all(
                e["text"] in chunk[(e["source_document"], int(three_pass.CHUNK_LOCATION.match(e["location"]).group(1)))]
                for e in v["evidence"])
    again = three_pass.run_three_pass(corpus, local_server, MODEL, checklist=EXAMPLE, items=ITEMS,
                                      workdir=tmp_path / "w", max_tokens=200, params={"max_tokens": 300})
    assert again.values == res.values  # answered from the caches
