"""Each way a release file can be broken (issue 8, "The loader"): the loader names the file and the
record in an audit row, salvages what it can, and never crashes. Each test corrupts a fresh copy of the
small fixture release (tests/fixture_release.py) in one way."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import fixture_release
import pytest
from fixture_release import MODEL, STEM

from gavel import cli
from gavel.release import load_release

SUMMARIES = f"summaries/{MODEL}/{STEM}_complex_order_by_date_True_thinking_high.json"
JUDGE = f"evaluation/{MODEL}_summarization/{STEM}_complex_order_by_date_True_thinking_high_thinking_True_thinking_False.json"
HUMAN_1 = f"summaries/{STEM}.json"
HUMAN_2 = f"summaries/{STEM}_2.json"


@pytest.fixture
def data(tmp_path) -> Path:
    return fixture_release.build(tmp_path) / "data"


def rows(rel, defect: str):
    a = rel.audit
    return a[a["defect"] == defect]


def named(rel, defect: str, file: str, record: str = "") -> bool:
    a = rows(rel, defect)
    return bool(((a["file"] == file) & (a["record"] == record)).any())


def edit_json(path: Path, change) -> None:
    data = json.loads(path.read_text(encoding="utf-8"))
    path.write_text(json.dumps(change(data)), encoding="utf-8")


def test_invalid_utf8_in_a_model_file_names_the_record(data):
    path = data / SUMMARIES
    raw = path.read_bytes().replace(b"Tenants filed", b"Tenants \xff\xfe filed")
    path.write_bytes(raw)
    rel = load_release(data)
    assert named(rel, "invalid_utf8", SUMMARIES, "case c1")
    s = rel.summaries[rel.summaries["model"] == MODEL].set_index("case_id")["text"]
    assert len(s) == 2 and "\ufffd" in s["c1"] and s["c2"].startswith("Parents sued")


def test_a_directory_where_a_file_should_be(data):
    (data / HUMAN_2).unlink()
    (data / HUMAN_2).mkdir()
    (data / JUDGE).unlink()
    (data / JUDGE).mkdir()
    rel = load_release(data)
    assert named(rel, "not_a_file", HUMAN_2) and named(rel, "not_a_file", JUDGE)
    assert set(rel.cases.query("set == 'benchmark'")["case_id"]) == {"c1", "c2"}
    assert len(rel.summaries[rel.summaries["model"] == MODEL]) == 2


@pytest.mark.parametrize("top", ["42", "null", "wrapped list", '"text"'])
def test_a_top_level_of_the_wrong_shape(data, top):
    path = data / SUMMARIES
    if top == "wrapped list":
        edit_json(path, lambda d: {**d, "results": list(d["results"].values())})
    else:
        path.write_text(top, encoding="utf-8")
    rel = load_release(data)
    record = "results" if top == "wrapped list" else ""
    assert named(rel, "wrong_shape", SUMMARIES, record)
    f = rel.files.set_index("file").loc[SUMMARIES]
    assert f["status"] == "invalid"
    assert rel.summaries[rel.summaries["model"] == MODEL].empty


def test_a_judge_file_whose_top_level_is_a_list(data):
    before = load_release(data).judgments
    edit_json(data / JUDGE, lambda d: [d])
    rel = load_release(data)
    assert named(rel, "wrong_shape", JUDGE)
    got = rel.judgments[rel.judgments["file"] == JUDGE]
    assert len(got) == (before["file"] == JUDGE).sum() > 0  # the one object in the list was read
    # a list of several things cannot be read: said so, not "ok"
    edit_json(data / JUDGE, lambda d: [d[0], d[0]])
    rel = load_release(data)
    assert named(rel, "wrong_shape", JUDGE)
    assert rel.files.set_index("file").loc[JUDGE, "status"] == "invalid"


def test_results_spelled_in_another_case(data):
    edit_json(data / SUMMARIES, lambda d: {("Results" if k == "results" else k): v for k, v in d.items()})
    rel = load_release(data)
    assert named(rel, "misnamed_field", SUMMARIES)
    assert len(rel.summaries[rel.summaries["model"] == MODEL]) == 2


def test_a_second_file_matching_a_part(data):
    rerun = data / SUMMARIES.replace("_thinking_high", "_thinking_high_rerun")
    shutil.copy(data / SUMMARIES, rerun)
    edit_json(rerun, lambda d: {**d, "results": {"c1": "A rerun with one case."}})
    rel = load_release(data)
    assert named(rel, "duplicate_part_file", str(rerun.relative_to(data)))
    s = rel.summaries[rel.summaries["model"] == MODEL]
    assert len(s) == 2 and not s["text"].str.startswith("A rerun").any()
    assert not rows(rel, "unexpected_file")["file"].str.contains("rerun").any()  # reported once


def test_a_duplicate_case_id_across_parts(data):
    edit_json(data / HUMAN_2, lambda d: {**d, "c1": {**d["c3"], "summary/long": "A second c1."}})
    rel = load_release(data)
    assert named(rel, "duplicate_case", HUMAN_2, "case c1")
    bench = rel.cases[rel.cases["set"] == "benchmark"]
    assert sorted(bench["case_id"]) == ["c1", "c2", "c3", "c4"] and bench.set_index("case_id").loc["c1", "part"] == 1
    assert not rel.summaries["text"].eq("A second c1.").any()


def test_a_case_moved_to_the_other_part(data):
    edit_json(data / HUMAN_2, lambda d: {"c3": d["c3"], "c4": d["c4"], "c2": {**d["c3"], "summary/long": "Moved."}})
    edit_json(data / HUMAN_1, lambda d: {"c1": d["c1"]})
    rel = load_release(data)
    assert named(rel, "misplaced_case", SUMMARIES, "case c2") and named(rel, "misplaced_case", JUDGE, "case c2")
    assert rel.cases.set_index("case_id").loc["c2", "part"] == 2


def test_a_judged_case_that_matches_no_summary(data):
    edit_json(data / JUDGE, lambda d: {**d, "results": {**d["results"], "c9": d["results"]["c2"]}})
    rel = load_release(data)
    assert named(rel, "unmatched_case", JUDGE, "case c9")
    assert "c9" not in set(rel.judgments["case_id"])
    assert set(rel.judgments.loc[rel.judgments["file"] == JUDGE, "case_id"]) == {"c1", "c2"}


def test_a_renamed_case_in_a_judge_file_names_both_cases(data):
    edit_json(data / JUDGE, lambda d: {**d, "results": {"c1": d["results"]["c1"], "c2x": d["results"]["c2"]}})
    rel = load_release(data)
    assert named(rel, "unmatched_case", JUDGE, "case c2x") and named(rel, "missing_case", JUDGE, "case c2")


def test_a_truncated_human_summaries_file(data):
    path = data / HUMAN_1
    text = path.read_text(encoding="utf-8")
    path.write_text(text[: text.index("Parents challenged")], encoding="utf-8")
    rel = load_release(data)
    assert named(rel, "truncated_file", HUMAN_1, "cases after c1")
    assert set(rel.cases.query("set == 'benchmark'")["case_id"]) == {"c1", "c3", "c4"}
    # the lost case is named: the model summarised it, the reference is gone
    assert named(rel, "missing_case", HUMAN_1, "case c2")
    assert len(rel.summaries[rel.summaries["model"] == MODEL]) == 2  # the model's summaries are kept


def test_a_model_folder_not_in_the_registry(data):
    folder = data / "summaries" / "my-new-model"
    folder.mkdir()
    shutil.copy(data / SUMMARIES, folder / f"{STEM}_complex_order_by_date_True.json")
    (data / "evaluation" / "stray.json").write_text("{}", encoding="utf-8")
    rel = load_release(data)
    a = rows(rel, "unregistered_model")
    assert list(a["file"]) == ["summaries/my-new-model"] and "1 file(s) not read" in a["detail"].iloc[0]
    assert named(rel, "unexpected_file", "evaluation/stray.json")


def test_make_audit_prints_each_defect_with_file_and_record(data, capsys):
    edit_json(data / JUDGE, lambda d: {**d, "results": {**d["results"], "c9": d["results"]["c2"]}})
    assert cli.main(["audit", "--release", str(data)]) == 0
    out = capsys.readouterr().out
    assert f"{JUDGE} | case c9" in out and "[unmatched_case] 1" in out
    # record-level rows of the planted defects too, not only counts
    assert "| case c1, item 'Remedy Sought'" in out
