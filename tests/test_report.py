"""`gavel report`: the data a report carries of a run (offsets exactly as values.csv has them, raw answers,
re-asks, residual facts, style, optional tables), the page's safety (a Content-Security-Policy that forbids
the network, no eval, no handler in the markup, data that cannot end its script element), the diff of two
runs with planted changes, and the command line."""

from __future__ import annotations

import ast
import html
import json
import math
import re
import subprocess
import sys

import markupsafe
import pandas as pd
import pytest
from report_runs import HOSTILE, ONLY_IN_A, PLANTED, make_run

from gavel.report import page as report
from gavel.report.run import CELL_COLUMNS, key


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    root = tmp_path_factory.mktemp("report-runs")
    return {"a": make_run(root / "run-a", "a"), "b": make_run(root / "run-b", "b")}


def test_run_data_carries_the_values_csv_offsets_and_the_texts(runs):
    data = report.run_data(runs["b"])
    values = pd.read_csv(runs["b"] / "values.csv", dtype={"case_id": str})
    assert len(values) == sum(len(v) for v in data["values"].values())
    for row in values.itertuples():
        shown = {v[0]: v for v in data["values"][key(row.subject, row.case_id, row.item)]}[row.index]
        assert shown[1] == row.value and shown[3] == ast.literal_eval(row.evidence_spans)
        text = data["texts"][key(row.subject, row.case_id)]
        for span, snippet, carried in zip(shown[3], ast.literal_eval(row.evidence), shown[2]):
            if span:  # offsets count characters: model-x's first summary starts with U+1F4DC
                assert text[span[0]:span[1]] == snippet and carried is None
            else:  # only snippets not found in the text travel as text
                assert carried == snippet
    # the judge-name evidence that is not in the summary is carried as not found
    judge = data["values"][key("model-x", "1", "judge_name")][0]
    assert judge[3][1] is None and judge[4][1] == "not_found"


def test_run_data_keeps_every_round_with_raw_answers_facts_and_style(runs):
    data = report.run_data(runs["b"])
    rounds = data["answers"][key("extract", "model-x", "2", "judge_name")]
    assert [r[1] for r in rounds] == ["no_json"] * 3  # asked, re-asked twice, unusable: its raw text kept
    assert data["raw"][rounds[0][6]] == "I could not find a judge."
    judged = data["answers"][key("compare", "model-x", "2", "decree_dates")]
    assert HOSTILE in data["raw"][judged[0][6]] and judged[0][1] == "ok"
    cells = {key(*c[:3]): dict(zip(CELL_COLUMNS, c)) for c in data["cells"]}
    assert cells[key("model-x", "2", "judge_name")]["status"] == "no_values"
    facts = data["residual"][key("model-x", "1")]["facts"]
    assert facts and all(HOSTILE in f[1] for f in facts)
    assert dict(data["style"][key("model-x", "1")][:5])["formatting_layout"] == 5
    assert [b["subject"] for b in data["board"]] and {b["subject"] for b in data["board"]} == {"model-x", "model-y"}


def test_the_page_forbids_the_network_and_runs_only_its_own_script(runs):
    page = report.render(report.run_data(runs["b"]))
    csp = html.unescape(re.search(r'<meta http-equiv="Content-Security-Policy" content="([^"]+)"', page).group(1))
    assert "default-src 'none'" in csp and "connect-src 'none'" in csp and "unsafe" not in csp
    scripts = re.findall(r"<script>(.*?)</script>", page, re.S)
    assert len(scripts) == 1 and report._csp_hash(scripts[0]) in csp
    assert not re.search(r"\beval\(|new Function|innerHTML|outerHTML|insertAdjacentHTML|document\.write", scripts[0])
    assert not re.search(r"<[^>]+\son[a-z]+\s*=", page.replace(HOSTILE, "").split('id="report-data"')[0])
    # the data block: hostile text cannot close it, and it reads back exactly
    block = page.split('<script type="application/json" id="report-detail">')[1].split("</script>")[0]
    assert "<" not in block and json.loads(block)["texts"][key("model-y", "1")].count(HOSTILE) == 1
    assert "http://" not in page.replace(HOSTILE, "") and "https://" not in page


def test_the_diff_lists_exactly_the_planted_changes_regressions_first(runs):
    d = report.diff(report.run_data(runs["a"]), report.run_data(runs["b"]))
    listed = {(c["subject"], c["case_id"], c["item"]): c["kind"] for c in d["changes"]}
    assert listed == PLANTED
    assert d["changes"][0]["kind"] == "regression" and d["changes"][0]["score_a"] == 0.0
    assert d["only_a"]["summaries"] == [key(*ONLY_IN_A[:2])] and len(d["only_a"]["cells"]) == 3
    assert d["only_b"] == {"cells": [], "summaries": []}
    per_item = dict(d["per_item"])
    assert per_item["decree_dates"]["regression"] == 1 and per_item["decree_dates"]["improvement"] == 1
    assert per_item["filing_date"]["only_a"] == 1
    kinds = {(c["subject"], c["case_id"], c["score"]): c["kind"] for c in d["summary_changes"]}
    assert kinds[("model-x", "1", "s_checklist")] == "regression"
    assert kinds[("model-y", "1", "s_checklist")] == "improvement"


def test_optional_tables_show_where_present_and_hide_where_missing(runs, tmp_path):
    import shutil

    run = shutil.copytree(runs["b"], tmp_path / "run")
    assert set(report.run_data(run)["optional"]) == {"cost"}  # every run writes its cost ledger (docs/cost.md)
    (run / "cost.csv").unlink()
    assert report.run_data(run)["optional"] == {}
    # judgments.csv (docs/orders.md): model-x's decree dates answered alike in both orders after mapping, model-y's
    # filing date not
    judgment = {"repeat": 1, "stage": "compare", "subject": "model-x", "case_id": "1", "item": "decree_dates",
                "gate": "single", "order": 1, "model_is_a": True, "status": "ok", "answer_ab": "a_contains_b",
                "relation": "model_contains_reference", "pairs": None}
    pd.DataFrame([judgment, {**judgment, "order": 2, "model_is_a": False, "answer_ab": "b_contains_a"},
                  {**judgment, "subject": "model-y", "item": "filing_date"},
                  {**judgment, "subject": "model-y", "item": "filing_date", "order": 2, "model_is_a": False,
                   "relation": "reference_contains_model"}]).to_csv(run / "judgments.csv", index=False)
    pd.DataFrame([{"stage": "compare", "requests": 7, "cost_usd": 0.01}]).to_csv(run / "cost.csv", index=False)
    data = report.run_data(run)
    assert data["optional"]["judgments"]["scope"] == "cell"
    assert len(data["optional"]["judgments"]["by"][key("model-x", "1", "decree_dates")]) == 2
    assert data["optional"]["cost"]["scope"] == "run" and data["optional"]["cost"]["rows"] == [["compare", 7, 0.01]]
    assert data["flipped"] == [key("model-y", "1", "filing_date")]
    # --repeats N: a compare verdict that flips between repeats is flipped too; a style rating is no cell
    pd.DataFrame([{"stage": "compare", "subject": "model-x", "case_id": "1", "item": "decree_dates",
                   "repeat_1": "gate:identical", "repeat_2": "unusable"},
                  {"stage": "style", "subject": "model-y", "case_id": "1", "item": "citation_style",
                   "repeat_1": "rating:3", "repeat_2": "rating:4"}]).to_csv(run / "stability_units.csv", index=False)
    assert report.run_data(run)["flipped"] == [key("model-x", "1", "decree_dates"), key("model-y", "1", "filing_date")]


def test_a_folder_that_is_no_run_is_named(tmp_path):
    (tmp_path / "values.csv").write_text("subject\n")
    with pytest.raises(report.ReportInputError, match=r"not a `gavel evaluate` output folder \(compare.csv, scores.csv"):
        report.run_data(tmp_path)


def test_cli_writes_the_report_and_the_diff(runs, tmp_path):
    out = tmp_path / "r.html"
    done = subprocess.run([sys.executable, "-m", "gavel", "report", str(runs["a"]), "--against", str(runs["b"]),
                           "-o", str(out)], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert out.is_file() and "wrote" in done.stdout and '"diff":' in out.read_text() and '"against":' in out.read_text()


def test_cli_names_what_it_cannot_report(runs, tmp_path, capsys):
    from gavel import cli

    assert cli.main(["report", str(tmp_path / "nothing")]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error:") and "no such folder" in err
    assert cli.main(["report", str(runs["a"]), "--release"]) == 2
    assert "not both" in capsys.readouterr().err
    assert cli.main(["report", "--release", "--against", str(runs["b"])]) == 2
    assert "does not apply to --release" in capsys.readouterr().err


def test_the_leaderboard_says_which_differences_are_real_and_escapes_model_names(runs, tmp_path):
    """comparisons.csv (issue 40): each model's line says whom it beats and whom it cannot be told from, in the
    markup (JavaScript off); a model name from the table is text; a table that is no comparisons table is named;
    with the judge's cells (interval_levels) the leaderboard shows model_scores.csv's interval."""
    import shutil

    folder = shutil.copytree(runs["b"], tmp_path / "run")
    scores = pd.read_csv(folder / "scores.csv", dtype={"case_id": str})
    first, second = sorted(scores["subject"].unique())[:2]
    # five cases each, so that the verdicts below are the ones the run's own scores give (issue 46 §5)
    row = scores.iloc[0]
    rows = [{**row, "subject": m, "case_id": str(c), "s_gavel_ref": math.nan, "s_checklist": v}
            for m, base in ((first, 80.0), (second, 50.0), (HOSTILE, 79.0)) for c, v in
            zip(range(1, 6), (base, base + 1.5, base + 3.0, base + 1.0, base + 2.5))]
    pd.DataFrame(rows).to_csv(folder / "scores.csv", index=False)
    pd.DataFrame([{"score": "s_checklist", "item": "", "model_a": first, "model_b": second, "difference": 30.0,
                   "verdict": "a better"},
                  {"score": "s_checklist", "item": "", "model_a": first, "model_b": HOSTILE, "difference": 1.0,
                   "verdict": "a better"},
                  {"score": "s_checklist", "item": "", "model_a": HOSTILE, "model_b": second, "difference": 29.0,
                   "verdict": "a better"}]).to_csv(folder / "comparisons.csv", index=False)
    ms = pd.read_csv(folder / "model_scores.csv")
    ms["s_checklist_ci_low"], ms["s_checklist_ci_high"], ms["interval_levels"] = 1.25, 98.75, "cases x 3 repeats"
    ms.to_csv(folder / "model_scores.csv", index=False)
    page = report.render(report.run_data(folder))
    board = page.split('<section id="leaderboard">')[1].split("</section>")[0]
    assert "Real differences (S_checklist)" in board and "interval over cases x 3 repeats" in board
    assert "better than: " in board and "worse than: " in board and "1.2–98.8" in board
    assert HOSTILE not in board and html.escape(HOSTILE, quote=False) in board.replace("&#34;", '"')
    pd.DataFrame({"model": ["x"]}).to_csv(folder / "comparisons.csv", index=False)
    with pytest.raises(report.ReportInputError, match=r"comparisons.csv: not a comparisons table"):
        report.run_data(folder)


def test_the_diff_counts_a_fallen_summary_score_as_a_regression_when_no_cell_changed(runs, tmp_path):
    """Issue 44 §1: the header said "0 regressions" while a summary's S_GAVEL-REF fell from 94.50 to 5.33."""
    import shutil

    a = shutil.copytree(runs["b"], tmp_path / "a")
    scores = pd.read_csv(a / "scores.csv", dtype={"case_id": str})
    base = scores.copy()
    base.loc[0, "s_gavel_ref"], scores.loc[0, "s_gavel_ref"] = 94.50, 5.33
    base.loc[1, "s_gavel_ref"], scores.loc[1, "s_gavel_ref"] = 60.0, 50.0
    b = shutil.copytree(runs["b"], tmp_path / "b")
    base.to_csv(b / "scores.csv", index=False)
    scores.to_csv(a / "scores.csv", index=False)
    d = report.diff(report.run_data(a), report.run_data(b))
    assert d["totals"]["regression"] == 0 and d["regressions"]["summary_scores"] == 2
    assert [c["kind"] for c in d["summary_changes"]] == ["regression", "regression"]
    first = d["summary_changes"][0]  # the largest first
    assert (first["subject"], first["case_id"], first["score"]) == (scores.loc[0, "subject"], scores.loc[0, "case_id"], "s_gavel_ref")
    page = report.render(report.run_data(a), against=report.run_data(b))
    header = page.split("<header>")[1].split("</header>")[0]
    assert "2 regressions: 0 cells (in 0 items), 2 summary scores" in header
    assert "94.50 → 5.33" in header


def test_a_verdict_the_runs_own_scores_do_not_give_is_refused_in_one_line(runs, tmp_path):
    """Issue 46 §5: the report took comparisons.csv's verdicts as written (a model "better than" one it shares
    no case with)."""
    import shutil

    folder = shutil.copytree(runs["b"], tmp_path / "run")
    scores = pd.read_csv(folder / "scores.csv", dtype={"case_id": str})
    first, second = sorted(scores["subject"].unique())[:2]
    scores.loc[scores["subject"] == second, "case_id"] = "9"  # a case the other never summarised
    scores.to_csv(folder / "scores.csv", index=False)
    claim = {"score": "s_gavel_ref", "item": "", "model_a": first, "model_b": second, "difference": 4.0, "verdict": "a better"}
    pd.DataFrame([claim]).to_csv(folder / "comparisons.csv", index=False)
    with pytest.raises(report.ReportInputError, match=r"comparisons.csv: s_gavel_ref pair .* says 'a better' on 0 common cases"):
        report.run_data(folder)
    pd.DataFrame([{**claim, "model_b": "nobody"}]).to_csv(folder / "comparisons.csv", index=False)
    with pytest.raises(report.ReportInputError, match=r"names 'nobody', which has no summary in scores.csv"):
        report.run_data(folder)


def test_the_share_link_in_docs_report_md_opens_a_cell_of_the_release_report():
    """Issue 44: the link in docs/report.md named case 46094, which is no benchmark case ("This cell is not in
    this report"); every cell link there names a model and case of data/results/summary_case_scores.csv."""
    from gavel.core import config

    text = (config.DOCS_DIR / "report.md").read_text(encoding="utf-8")
    links = re.findall(r"view=cell&subject=([^&\s`]+)&case=([^&\s`]+)&item=([^&\s`]+)", text)
    scored = pd.read_csv(config.RESULTS_DIR / "summary_case_scores.csv", dtype={"case_id": str})
    held = set(zip(scored["model"], scored["case_id"]))
    assert links and all((subject, case) in held for subject, case, _ in links), links


def test_the_diff_says_each_scores_difference_with_its_interval_not_one_word(runs, tmp_path):
    """Issue 44 §1: wherever a comparison is shown, the diff too, each pair gets the sentence a paper may
    write. The diff now says, per score, this run against the baseline over the summaries both score: the
    difference read from the baseline, its 95% interval, p, what it can detect; "not tested" under two."""
    import shutil

    a = shutil.copytree(runs["b"], tmp_path / "a")
    b = shutil.copytree(runs["b"], tmp_path / "b")
    scores = pd.read_csv(a / "scores.csv", dtype={"case_id": str})
    base = scores.copy()
    assert len(scores) >= 2
    base["s_gavel_ref"] = [60.0 + 3 * i for i in range(len(base))]
    scores["s_gavel_ref"] = base["s_gavel_ref"] - [10.0 + i for i in range(len(base))]  # every summary lower
    scores["s_style"] = float("nan")  # one score the runs never both give
    base.to_csv(b / "scores.csv", index=False)
    scores.to_csv(a / "scores.csv", index=False)
    d = report.diff(report.run_data(a), report.run_data(b))
    by = {line.split(":", 1)[0]: line for line in d["sentences"]}
    assert set(by) == {"s_checklist", "s_residual", "s_style", "s_gavel_ref"}
    drop = -(scores["s_gavel_ref"] - base["s_gavel_ref"]).abs().mean()
    said = by["s_gavel_ref"]
    assert said.startswith(f"s_gavel_ref: this run vs the baseline: {drop:+.2f} points (95% CI ")
    assert f"{len(scores)} summaries scored by both), p = " in said and "over 1 pair" in said
    assert "detectable with 80% power" in said
    assert by["s_style"] == ("s_style: this run vs the baseline: not tested (0 summaries scored by both; the "
                             "paired t-test needs 2)")
    page = report.render(report.run_data(a), against=report.run_data(b))
    header = page.split("<header>")[1].split("</header>")[0]
    assert str(markupsafe.escape(said)) in header
    done = subprocess.run([sys.executable, "-m", "gavel", "report", str(a), "--against", str(b), "-o",
                           str(tmp_path / "r.html")], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert said in done.stdout.splitlines()
