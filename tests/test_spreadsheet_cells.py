"""Issue 27 (4): every CSV a spreadsheet may open holds no cell a spreadsheet would run as a formula — the
run tables with model text (values.csv, answers.csv, compare.csv, ...) included — and gavel reads its own
tables back exactly (the neutralising ``'`` is undone), so scores, reports and notebooks see the model's text."""

import csv
import io
import json

import pandas as pd
import pytest

from gavel.core.items import item
from gavel.core.spreadsheet import _NUMBER, FORMULA_START, plain_cell, read_csv, safe_cell, write_csv
from gavel.llm.providers.mock import MockProvider
from gavel.ref.tables import read_tables
from gavel.runs import pipeline

HOSTILE = ["=HYPERLINK(\"http://x.invalid\",\"see\")", "+A1", "-cmd|' /C calc'!A0", "@SUM(A1:A9)", "\tTAB", "\rCR",
           "'already quoted", "''two", "'=1+1", "=", "-", "+", "plain", "-3", "+0.5", "-1e-3", "x=1", "",
           "é=ü", "\u202e=1"]


def _dangerous(cell: str) -> bool:
    return cell.startswith(FORMULA_START) and not _NUMBER.fullmatch(cell)


@pytest.mark.parametrize("value", HOSTILE)
def test_cells_round_trip_and_never_start_a_formula(value):
    written = safe_cell(value)
    assert not _dangerous(written)
    assert plain_cell(written) == value


def test_a_table_round_trips_through_a_file(tmp_path):
    df = pd.DataFrame({"value": HOSTILE[:-2] + ["x", "y"], "n": range(len(HOSTILE)), "=col": [-1.5] * len(HOSTILE)})
    write_csv(df, tmp_path / "t.csv")
    raw = list(csv.reader(io.StringIO((tmp_path / "t.csv").read_text(encoding="utf-8"), newline="")))
    assert not [c for row in raw for c in row if _dangerous(c)]
    back = read_csv(tmp_path / "t.csv", keep_default_na=False)
    assert list(back.columns) == ["value", "n", "=col"]
    assert back["value"].tolist() == df["value"].tolist() and back["n"].tolist() == df["n"].tolist()
    indexed = pd.DataFrame({"score": [1.0, 2.0]}, index=pd.Index(["+m", "'q"], name="@model"))
    write_csv(indexed, tmp_path / "i.csv", index=True)
    again = read_csv(tmp_path / "i.csv", index_col="@model")
    assert again.index.tolist() == ["+m", "'q"] and again.index.name == "@model"


SUMMARY = ("Filed on March 3, 2020 before =Judge Mary Smith. The parties agreed to +A1 decree terms in 2021.")
REF = "The case was filed on March 3, 2020. Judge Mary Smith presided. A consent decree followed in 2021."
ITEMS = (item("Filing Date"), item("First and Last name of Judge"), item("Dates of All Decrees"))


def scripted(request):
    user = request.messages[-1]["content"] if request.messages[-1]["role"] == "user" else ""
    if request.stage == "extract":
        value = {"filing_date": "=HYPERLINK(\"http://x.invalid\",\"March 3, 2020\")", "judge_name": "'Mary Smith",
                 "decree_dates": "+A1 2021"}[request.item]
        ev = {"filing_date": "March 3, 2020", "judge_name": "Mary Smith", "decree_dates": "2021"}[request.item]
        return json.dumps({"reasoning": "-r", "extracted": [{"evidence": [ev], "value": value}]})
    if request.stage == "compare":
        return "**Reasoning:** =same.\n**Final Answer:** A equals B"
    if request.stage == "residual":
        n = sum(1 for line in user.splitlines() if line.startswith("["))
        return json.dumps({"reasoning": "r", "extracted": [{"fact": f"@fact {i}", "evidence_spans": [i]}
                                                           for i in range(1, n + 1)]})
    if request.stage == "residual_match":
        return '{"common": [{"A_index": 1, "B_index": 1}], "only_in_A": [], "only_in_B": []}'
    if request.stage == "style":
        return json.dumps({"readability_jargon": 4, "narrative_order": 3, "sentence_structure": 4,
                           "formatting_layout": 5, "citation_style": 4})
    raise AssertionError(request.stage)


def test_a_runs_tables_hold_no_formula_cell_and_read_back_as_the_model_wrote(tmp_path):
    settings = pipeline.Settings(extractor="gpt-oss-20b-BF16", judge="gemma-3-27b-it", items=ITEMS)
    tables = pipeline.evaluate([("+model", "1", SUMMARY)], {"1": REF}, MockProvider(answer=scripted), tmp_path,
                               settings)
    for path in sorted(tmp_path.glob("*.csv")):
        rows = list(csv.reader(io.StringIO(path.read_text(encoding="utf-8"), newline="")))
        bad = [c for row in rows for c in row if _dangerous(c)]
        assert not bad, f"{path.name}: {bad[:3]}"
    raw = (tmp_path / "values.csv").read_text(encoding="utf-8")
    assert "'=HYPERLINK" in raw and "''Mary Smith" in raw and "'+A1 2021" in raw
    back = read_tables(tmp_path)
    model_values = back["values"][back["values"]["subject"] == "+model"].set_index("item")["value"].to_dict()
    assert model_values == {"filing_date": "=HYPERLINK(\"http://x.invalid\",\"March 3, 2020\")",
                            "judge_name": "'Mary Smith", "decree_dates": "+A1 2021"}
    assert set(back["scores"]["subject"]) == {"+model"}
    got, want = (t.drop(columns="bin", errors="ignore").astype({"case_id": str}) for t in (back["scores"], tables["scores"]))
    pd.testing.assert_frame_equal(got, want, check_dtype=False)
