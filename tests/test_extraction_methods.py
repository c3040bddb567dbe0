"""End-to-end and chunk-by-chunk builders on real release text (a case's summaries as its documents), with
fake models: truncation, evidence grounding, the explicit state merge, resumption from the cache."""

from __future__ import annotations

import json
import re

import pytest

from gavel.core import config as gconfig
from gavel.core.tokens import count_tokens
from gavel.documents import chunked, end_to_end
from gavel.documents.corpus import summaries_corpus
from gavel.llm.providers.mock import MockProvider
from gavel.llm.runner import StageRunner

MODEL = "gpt-4.1-2025-04-14"


@pytest.fixture(scope="module")
def corpus(release_root):
    root = release_root
    c = summaries_corpus(root, "46340")  # one of the 12 cases in both the benchmark and human.json
    assert len(c.documents) >= 10
    return c


def v(value, text, doc):
    return {"value": value, "evidence": [{"text": text, "source_document": doc, "location": "x"}]}


def test_end_to_end_requests_truncation_and_grounding(corpus):
    full = end_to_end.build_requests(corpus, MODEL)
    assert len(full.requests) == 26 and not full.truncation.truncated
    assert corpus.documents[0].text in full.requests[0].messages[-1]["content"]
    assert len({r.custom_id for r in full.requests}) == 26
    small = end_to_end.build_requests(corpus, MODEL, items=["filing_date", "parties"], context_window=6_000,
                                      reserve_output=2_000)
    t = small.truncation
    assert t.truncated and sum(t.kept_tokens) <= small.budget
    assert count_tokens(small.requests[0].messages[-1]["content"]) <= 6_000 - 2_000
    longest = max(range(len(t.original_tokens)), key=t.original_tokens.__getitem__)
    assert t.removed_tokens[longest] == max(t.removed_tokens)  # the longest document gives up most
    doc = corpus.documents[0]
    quote = doc.text[100:160]
    answer = json.dumps({"reasoning": "r", "extracted": [v("a", quote, doc.name), v("b", "never written anywhere", doc.name),
                                                         v("c", "  " + quote.upper() + " ", doc.name), {"value": ""}]})
    rows, problems = end_to_end.parse(answer, corpus, "Filing Date")
    assert [r["grounding"] for r in rows] == [["exact"], ["not_found"], ["normalized"]]
    assert rows[0]["index"] == 1 and rows[0]["case_id"] == corpus.case_id and len(problems) == 1
    assert end_to_end.parse("not json", corpus, "Filing Date")[0] == []


def test_merge_restores_forgotten_values_and_records_removals():
    state = [v("Judge Ann Lee", "Ann Lee", "A"), v("Judge Bob Roe", "Bob Roe", "A")]
    new, rec = chunked.merge(state, {"extracted": [v("judge ann lee.", "Ann Lee, J.", "B"), v("Judge Cy Poe", "Poe", "B")]})
    assert [x["value"] for x in new] == ["judge ann lee.", "Judge Bob Roe", "Judge Cy Poe"]
    assert rec.restored == ["Judge Bob Roe"] and rec.added == ["Judge Cy Poe"] and rec.kept == ["Judge Ann Lee"]
    new2, rec2 = chunked.merge(new, {"extracted": [], "removed": [{"value": "Judge Bob Roe", "why": "duplicate"}]})
    assert [x["value"] for x in new2] == ["judge ann lee.", "Judge Cy Poe"]
    assert rec2.removed == [("Judge Bob Roe", "duplicate")]
    _, rec3 = chunked.merge([], {"extracted": [{"value": "no evidence"}]})
    assert rec3.invalid


def test_chunk_by_chunk_run_carries_state_and_resumes_from_cache(corpus, tmp_path):
    parts = chunked.pieces(corpus, 400)
    assert len(parts) > len(corpus.documents)  # real text cut into several pieces per document
    assert "".join(p.text for p in parts if p.document == corpus.documents[0].name) == corpus.documents[0].text

    def answer(request):  # remembers nothing: reports only what is in this piece
        user = request.messages[-1]["content"]
        piece = re.search(r"Document: (.*) \(piece (\d+) of", user)
        return json.dumps({"reasoning": "", "extracted": [v(f"{piece.group(1)} #{piece.group(2)}", "q", piece.group(1))]})

    items = ["judge_name", "filing_date"]
    provider = MockProvider(answer=answer)
    res = chunked.run_chunked(corpus, provider, MODEL, items=items, workdir=tmp_path / "w", max_tokens=400)
    assert set(res.states) == {"First and Last name of Judge", "Filing Date"}
    assert len(res.states["Filing Date"]) == len(parts)  # every piece's value kept although each answer forgot
    s = res.token_stats["Filing Date"][corpus.case_id]
    assert s["total_prompts"] == s["chunks_in_case"] == len(parts) and s["total_input_tokens"] > 0
    sent = len(provider.submissions)
    assert sent == len(parts) * 2
    # a rerun (e.g. after a kill) pays for nothing: every call comes from the cache
    again = chunked.run_chunked(corpus, MockProvider(answer=lambda r: "{}", fail=lambda r, a: True), MODEL,
                                items=items, runner=StageRunner(chunked.STAGE, provider, tmp_path / "w", progress=False),
                                max_tokens=400)
    assert len(provider.submissions) == sent and again.states == res.states
    rows = res.value_rows(corpus.case_id)
    assert {r["item"] for r in rows} == set(res.states) and rows[0]["index"] == 1


def test_grounding_finds_human_checklist_evidence_in_the_summaries(corpus):
    """Real annotations no one here wrote: every evidence quote of the human checklists (human.json) of the
    12 cases that also have model summaries is located verbatim in that case's summaries corpus, in the
    human summary; a quote of another case is not."""
    root = gconfig.release_root()
    human = json.loads((root / "document_checklists" / "human.json").read_text())["results"]
    checked = 0
    for case_id, by_item in human.items():
        try:
            c = summaries_corpus(root, case_id)
        except ValueError:
            continue
        if len(c.documents) < 2:
            continue  # not a benchmark case: only the human summary
        for entries in by_item.values():
            for entry in entries:
                for quote in entry.get("evidences") or []:
                    assert end_to_end.ground(quote, "Summary by human", c) == "exact", (case_id, quote[:80])
                    checked += 1
    assert checked > 100
    other = next(q for e in human["46340"].values() for x in e for q in x.get("evidences") or [] if len(q) > 60)
    assert end_to_end.ground(other, "Summary by human", summaries_corpus(root, "46239")) == "not_found"
