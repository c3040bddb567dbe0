"""Corpora, chunking, configurations and the agent's store; the release acceptance checks (replay of every
released agent ledger, the released regex patterns, chunking over release text)."""

from __future__ import annotations

import json
import random

import pytest

from gavel.core import config as gconfig
from gavel.core import items as gitems
from gavel.core.tokens import count_tokens
from gavel.documents import chunking, configs
from gavel.documents.corpus import (
    Corpus,
    CorpusError,
    load,
    load_folder,
    load_full_case_data,
    summaries_corpus,
    unique_names,
    write_folder,
)
from gavel.documents.store import AgentStore, agent_run_folders, replay_release, replay_report


# ------------------------------------------------------------------ corpora
def test_order_and_unique_names():
    c = Corpus.build("1", ["d", "a", "b", "c", "e", "f"],
                     ["Docket", "Order", "Order", "", "Complaint", "Order"],
                     ["Docket", "Order/Opinion", "Order/Opinion", "Notice", "Complaint", None],
                     [None, "2021-05-01", "2020-01-02", None, "2019-12-31", "2021-05-01"])
    # chronological, undated after dated (input order among them), docket last
    assert [d.text for d in c.documents] == ["e", "b", "a", "f", "c", "d"]
    assert c.names() == ["Complaint", "Order (001)", "Order (002)", "Order (003)", "Notice", "Docket"]
    assert unique_names(["A", "A (001)", "A"]) == ["A (002)", "A (001)", "A (003)"]
    assert unique_names(["", ""]) == [" (001)", " (002)"]  # never equal, even for empty bases
    with pytest.raises(CorpusError, match="2 document texts but 1 titles"):
        Corpus.build("1", ["a", "b"], ["x"])


def test_full_case_data_and_folder_shapes(tmp_path):
    cases = [{"case_id": 7, "case_documents_text": ["Order text", "Complaint text", "Docket text"],
              "case_documents_title": ["Order", "Complaint", "Docket [PACER]"],
              "case_documents_doc_type": ["Order/Opinion", "Complaint", "Docket"],
              "case_documents_date": ["2020-02-01", "2020-01-01", "2020-01-01"], "case_documents_id": [3, 1, 2]},
             {"case_id": "8", "case_documents": ["Only"], "case_documents_text": ["x"]}]
    path = tmp_path / "full.json"
    path.write_text(json.dumps(cases))
    corpora = load_full_case_data(path)
    assert [c.case_id for c in corpora] == ["7", "8"]
    assert corpora[0].names() == ["Complaint", "Order", "Docket [PACER]"]
    assert corpora[0].documents[0].doc_id == "1"
    folder = write_folder(corpora[0], tmp_path / "case7")
    again = load_folder(folder)
    assert again.names() == corpora[0].names() and [d.text for d in again.documents] == [d.text for d in corpora[0].documents]
    assert load(path, "8").names() == ["Only"]
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps([{"case_id": 1, "case_documents_text": "not a list"}]))
    with pytest.raises(CorpusError, match="bad.json: case 1"):
        load_full_case_data(bad)
    meta = json.loads((folder / "metadata.json").read_text())
    meta["documents"][0]["filename"] = "../../etc/passwd"
    (folder / "metadata.json").write_text(json.dumps(meta))
    with pytest.raises(CorpusError, match="outside the case folder"):
        load_folder(folder)


def test_window_matches_token_slice():
    c = Corpus.build("1", ["Héllo wörld, a  legal text.\n\n" * 50], ["T"])
    d = c.documents[0]
    from gavel.core.tokens import encoding
    enc = encoding()
    for s, e in ((0, 10), (5, 77), (100, d.token_count)):
        assert d.window(s, e) == enc.decode(d.tokens[s:e])


# ------------------------------------------------------------------ chunking
def test_chunks_lossless_and_bounded_on_hard_text():
    rng = random.Random(7)
    words = ["the", "court", "§", "1983", "ORDER", "\n", "  ", "日本", "é", "—", "x" * 40]
    texts = [" ".join(rng.choice(words) for _ in range(3000)), "a" * 5000, " " * 3000, "\n\n".join(["p " * 50] * 40)]
    for text in texts:
        for size in (1, 3, 50, 700):
            chunks = chunking.chunk_text(text, size)
            assert "".join(chunks) == text
            assert max(count_tokens(c) for c in chunks) <= size
    assert chunking.chunk_text("") == []
    spaced = chunking.chunk_text("alpha beta gamma delta " * 200, 40)
    assert all(not c[:1].isalpha() or i == 0 for i, c in enumerate(spaced))  # cuts fall before whitespace


def test_chunking_over_release_text(release_root):
    """Every human and model summary plus the human checklists' texts, at 16,000 tokens and at 64 tokens
    (many edges in real text). `python -m gavel documents chunk-check` runs the whole release."""
    texts = [t for t in chunking.release_texts(release_root)
             if t[0].startswith(("summaries", "document_checklists/human.json"))]
    assert len(texts) > 1000
    for size in (chunking.CHUNK_TOKENS, 64):
        check = chunking.check_texts(texts, size)
        assert check.failures == [], check.failures[:3]
        assert check.largest_chunk_tokens <= size
    assert check.multi_chunk_texts > 0


# ------------------------------------------------------------------ configurations
def test_configurations_from_items_match_release_folders(release_root):
    all_, grouped, single = (configs.configurations(k) for k in configs.KINDS)
    assert len(all_[0].keys) == 26 and len(grouped) == 9 and len(single) == 26
    assert sorted(k for g in grouped for k in g.keys) == sorted(all_[0].keys)
    assert all_[0].definitions["Filing_Date"] == gitems.item("filing_date").definition
    folders = {(kind, name) for _, _, _, kind, name in agent_run_folders(release_root)}
    assert folders == {(c.kind, c.name) for k in configs.KINDS for c in configs.configurations(k)}
    assert configs.resolve("grouped/03_judge_info")[0].keys == ("First_and_Last_name_of_Judge",)


def test_store_json_shape_round_trip():
    s = AgentStore(["A", "B"], clock=lambda: "t")
    s.apply("append", [{"key": "A", "extracted": [{"value": "v", "evidence": [
        {"text": "t", "source_document": "d", "location": "l"}]}]}])
    data = s.to_json()
    assert data["A"] == {"extracted": [{"evidence": [{"location": "l", "source_document": "d", "text": "t"}],
                                        "value": "v"}], "key": "A", "last_updated": "t"}
    assert data["B"] == {"extracted": [], "key": "B", "last_updated": None}
    assert AgentStore.from_json(data).to_json() == data


# ------------------------------------------------------------------ release acceptance
def test_replay_every_released_agent_ledger(release_root):
    results = replay_release(release_root)
    assert len(results) == 2 * 40 * 36
    ok = sum(r.reproduced for r in results)
    report = replay_report(results)
    print(report)
    assert ok / len(results) >= 0.99, report
    assert all(r.reason for r in results if not r.reproduced)
    # calls the original refused are refused by our store too
    assert sum(r.refused_agreed for r in results) == sum(r.refused_calls for r in results) > 0


def test_released_regex_patterns_complete_or_error(release_root):
    """A sample of the released search patterns through our tool over real text: every one answers (matches,
    a validation or compile error, or the time-limit error), none raises or hangs. The full set and the
    timings: `python -m gavel documents patterns`."""
    from gavel.documents.tools import check_patterns, release_patterns

    patterns = release_patterns(release_root)
    assert len(patterns) > 10_000
    corpus = summaries_corpus(release_root, "46210")
    sample = random.Random(0).sample(patterns, 400)
    check = check_patterns(corpus, sample, timeout=2.0)
    assert check.completed + check.refused + len(check.timed_out) == len(sample)
    assert check.completed > 0.9 * len(sample)


def test_agent_outputs_collect_into_paper_token_figures(release_root):
    """Our collector of agent runs (values and per-case tokens), applied to the release's own agent folders,
    gives the paper's Figure 5 token totals (gavel/paper/paper_claims.yaml)."""
    import yaml

    from gavel.documents.agent import collect_runs, tokens_per_case

    values, tokens = collect_runs(release_root / "document_checklists" / "gavel_agent")
    assert len(tokens) == 2880 and (values["value"] != "Not Applicable").all()
    assert set(values.columns) >= {"case_id", "item", "index", "value", "evidence"}
    means = tokens_per_case(tokens).groupby(["model", "configuration"])["total_tokens"].mean() / 1e6
    claims = yaml.safe_load((gconfig.REPO_ROOT / "gavel" / "paper" / "paper_claims.yaml").read_text())
    checked = 0
    for c in claims["claims"] if isinstance(claims, dict) else claims:
        args = c.get("args") or {}
        if c.get("metric") == "doc_tokens" and args.get("method") == "agent":
            assert means[(args["model"], args["configuration"])] == pytest.approx(c["paper"], abs=0.006), c["id"]
            checked += 1
    assert checked >= 5


def test_agent_values_through_compare_and_score_match_the_release_replay(release_root, tmp_path):
    """Our agent-run values (collect_runs over the release's agent folders) through our pairs + the compare
    and score stages, answered by the released judgments (replay provider), give exactly the S_checklist of
    the lead's replay of the same runs from the release loader: the rows plug into the compare stage."""
    from gavel.documents import evaluate
    from gavel.documents.agent import collect_runs
    from gavel.llm.providers.replay import ReplayProvider
    from gavel.paper import replay as release_replay
    from gavel.release import load_release

    rel = load_release(release_root)
    reference = release_replay.document_replay(rel, tmp_path / "ref")["comparison"].set_index("subject")
    values, _ = collect_runs(release_root / "document_checklists" / "gavel_agent")
    refs = evaluate.human_references(release_root)
    lookup, why = release_replay.document_lookup(rel)
    compared = 0
    for (model, conf), v in values.groupby(["model", "configuration"]):
        subject = release_replay.subject_of("agent", model, conf)
        if subject not in reference.index:
            continue  # no released judge file for this run (Qwen3 all: empty file)
        res = evaluate.evaluate(evaluate.pairs(v, subject, refs, cases=sorted(refs)), ReplayProvider(lookup, why),
                                release_replay.JUDGE, tmp_path / subject.replace("/", "_"))
        assert res["per_run"]["s_checklist"].iloc[0] == pytest.approx(reference.loc[subject, "s_checklist"], abs=1e-9)
        compared += 1
    assert compared == 5
