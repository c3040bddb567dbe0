"""The loader and audit on the shared public release; the counts are those of
../shared/notes/release-facts.md. In CI these tests must run (see conftest)."""

import pandas as pd

from gavel.core.items import ITEMS
from gavel.release import audit


def test_cases_and_bins(shared_rel):
    cases = shared_rel.cases
    bench = cases[cases["set"] == "benchmark"]
    assert len(bench) == 100 and bench["case_id"].is_unique
    assert bench["length_bin"].value_counts().to_dict() == {b: 20 for b in ["32K", "64K", "128K", "256K", "512K"]}
    assert (bench.groupby(["length_bin", "part"]).size() == 10).all()
    assert bench["total_tokens"].isna().sum() == 15
    meta = cases[cases["set"] == "human_eval"]
    assert len(meta) == 40
    assert len(set(meta["case_id"]) & set(bench["case_id"])) == 12


def test_summaries_complete(shared_rel):
    s = shared_rel.summaries
    per_model = s[(s["set"] == "benchmark")].groupby("model")["case_id"].nunique()
    assert len(per_model) == 13 and (per_model == 100).all()  # 12 models + human


def test_audit_counts_match_release_facts(shared_rel):
    facts = dict(audit.headline(shared_rel))
    assert facts["human-summary checklists empty"] == "2 of 2"
    assert facts["model summary-checklist files empty or absent"] == "6 of 24"
    assert facts["readable summary-judge files in A/B wording (orientation unknown)"] == "5 of 23 (+1 truncated)"
    defects = shared_rel.audit
    c = defects.groupby("defect").size()
    assert c["truncated_file"] == 1 and "8 complete cases salvaged" in defects.query(
        "defect == 'truncated_file'")["detail"].iloc[0]
    assert c["null_index"] == 20 and c["list_index"] == 30
    assert c["empty_ledger"] == 1 and c["degenerate_answer"] == 1
    empty = set(defects.query("defect == 'empty_file'")["file"])
    assert "document_checklists/end_to_end/20_human_eval_cases_2_order_by_date_True_batch_4.json" in empty
    assert len(empty) == 10
    # end-to-end part 1: 15 of 26 items for each of its 20 cases
    inc = defects.query("defect == 'incomplete_checklist'")
    assert len(inc) == 20 and inc["detail"].str.startswith("15 of 26").all()


def test_truncated_file_salvage(shared_rel):
    j = shared_rel.judgments
    sonnet2 = j[(j["model"] == "claude-sonnet-4-20250514-thinking") & (j["part"] == 2)]
    assert sonnet2["case_id"].nunique() == 8
    assert (sonnet2["kind"] != "unreadable").all()


def test_agent_runs_and_item_slugs(shared_rel):
    runs = shared_rel.agent_runs
    assert len(runs) == 2 * 40 * 36
    # stats.json counts the driver's automatic step: LLM calls are the per-step details
    assert (runs["steps"] >= runs["llm_calls"]).all()
    units = set(runs["unit"])
    assert {it.slug for it in ITEMS} <= units  # our item slugs are the release's folder names


def test_judgment_vocabulary_is_normalised(shared_rel):
    j = shared_rel.judgments
    known = j[j["orientation"] == "model_reference"]
    assert set(known.loc[known["kind"] == "relation", "relation"]) == {
        "equal", "model_contains_reference", "reference_contains_model", "different"}
    assert set(j["kind"]) <= {"relation", "matching", "unreadable"}
    assert isinstance(j, pd.DataFrame) and len(j) > 16000


def test_audit_report_prints(shared_rel):
    text = audit.report(shared_rel)
    assert "unknown_orientation" in text and "6 of 24" in text


def test_document_token_totals_match_the_paper(shared_rel):
    """Agent and chunk-by-chunk token totals per case (input + output, 40 cases) equal the paper's."""
    from gavel.paper import results

    doc = results.document_tables(shared_rel)["document_s_checklist"].fillna({"configuration": ""})
    per_case = {(r.method, r.model, r.configuration): r.total_tokens_per_case for r in doc.itertuples()}
    assert round(per_case[("agent", "Qwen3-30B-A3B-Thinking-2507", "individual")] / 1e6, 2) == 2.80
    assert round(per_case[("agent", "Qwen3-30B-A3B-Thinking-2507", "all")] / 1e3, 2) == 588.60
    assert round(per_case[("agent", "gpt-oss-20b-BF16", "individual")] / 1e6, 2) == 12.29
    assert round(per_case[("chunk_by_chunk", "Qwen3-30B-A3B-Thinking-2507", "")] / 1e6, 2) == 6.79
