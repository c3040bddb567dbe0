"""The loader on a small release with planted defects (tests/fixture_release.py)."""

import json

from gavel.release import load_release, salvage_truncated, settings_from_name


def counts(rel):
    return rel.audit.groupby("defect").size().to_dict()


def test_every_planted_defect_is_audited(fixture_rel):
    c = counts(fixture_rel)
    assert c["empty_file"] == 2
    assert c["truncated_file"] == 1
    assert c["unknown_orientation"] == 2  # the complete A/B file and the truncated one
    assert c["null_index"] == 1 and c["list_index"] == 1
    assert c["out_of_range_index"] == 2
    assert c["unreadable_answer"] == 1 and c["text_answer"] == 1 and c["degenerate_answer"] == 2
    assert c["unknown_item"] == 1 and c["item_variant"] == 1
    assert c["list_value"] == 1 and c["structured_value"] == 1
    assert c["incomplete_checklist"] == 1 and c["empty_ledger"] == 1
    # every audit row names its file
    assert fixture_rel.audit["file"].str.len().gt(0).all()


def test_good_data_survives_bad_neighbours(fixture_rel):
    rel = fixture_rel
    assert sorted(rel.cases.loc[rel.cases["set"] == "benchmark", "case_id"]) == ["c1", "c2", "c3", "c4"]
    assert rel.cases.set_index("case_id").loc["c2", "total_tokens"] is not None
    assert rel.summaries.query("model == 'gpt-5-2025-08-07'").shape[0] == 2
    # truncated file: the complete case is kept, the cut one is not
    trunc = rel.judgments[rel.judgments["file"].str.contains("benchmarking_2") &
                          (rel.judgments["model"] == "gemini-2.5-pro")]
    assert sorted(trunc["case_id"].unique()) == ["c3"]
    # the unreadable answer is kept as a row, not scored and not dropped
    bad = rel.judgments.query("kind == 'unreadable'")
    assert set(bad["item"]) == {"remedy_sought", "trials", "judge_name"}
    # list value expanded, object value rendered
    v = rel.checklist_values.query("model == 'gpt-5-2025-08-07' and case_id == 'c1'")
    assert list(v.query("item == 'related_cases'")["value"]) == ["No. 1:25-cv-1", "No. 1:25-cv-2"]
    assert list(v.query("item == 'enforcement_disputes'")["value"]) == ["date: June 1; outcome: Pending"]
    # stray spelling read as the right item, unknown item not invented
    items_c1 = rel.checklist_items.query("model == 'gpt-5-2025-08-07' and case_id == 'c1'")
    assert "monitor_name" in set(items_c1["item"]) and len(items_c1) == 26


def test_human_checklist_spans_and_agent_stats(fixture_rel):
    rel = fixture_rel
    h = rel.checklist_values.query("method == 'human' and item == 'filing_date'").iloc[0]
    text = rel.summaries.query("model == 'human' and case_id == 'h1'")["text"].iloc[0]
    (s, e), = h["evidence_spans"]
    assert text[s:e] == h["evidence"][0]
    run = rel.agent_runs.iloc[0]
    assert (run["steps"], run["llm_calls"], run["input_tokens"], run["output_tokens"]) == (4, 3, 1000, 90)


def test_files_table_records_settings_not_names(fixture_rel):
    f = fixture_rel.files.set_index("file")
    key = ("summaries/gpt-5-2025-08-07/50_cases_for_benchmarking_complex_order_by_date_True_thinking_high.json")
    assert json.loads(f.loc[key, "settings"]) == {"order_by_date": True, "thinking": "high"}
    assert settings_from_name("x_order_by_date_True_thinking_True_thinking_False") == {
        "order_by_date": True, "thinking": [True, False]}


def test_salvage_keeps_only_complete_cases():
    text = json.dumps({"meta_data": {"a": 1}, "results": {"1": {"x": "y"}, "2": {"x": "zzzz"}}})
    cut = text[: text.index("zz")]
    assert salvage_truncated(cut) == {"meta_data": {"a": 1}, "results": {"1": {"x": "y"}}}
    assert salvage_truncated("not json at all") is None


def test_missing_release_says_what_to_set(tmp_path, monkeypatch):
    import pytest

    from gavel.core.config import ReleaseNotFoundError

    monkeypatch.setenv("GAVEL_RELEASE", str(tmp_path / "nowhere"))
    with pytest.raises(ReleaseNotFoundError, match="GAVEL_RELEASE"):
        load_release()
