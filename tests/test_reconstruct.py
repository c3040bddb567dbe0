"""Cell reconstruction on the fixture release: judged cells scored, silent cells bounded."""

import math

from gavel.paper import reconstruct


def cell(cells, **kw):
    sel = cells
    for k, v in kw.items():
        sel = sel[sel[k] == v]
    assert len(sel) == 1, kw
    return sel.iloc[0]


def test_summary_cells(fixture_rel):
    cells = reconstruct.summary_cells(fixture_rel)
    m = "gpt-5-2025-08-07"
    c = cell(cells, model=m, case_id="c1", item="filing_date")
    assert (c["status"], c["best"]) == ("judged", 1.0)
    # parties: pairs (1,2) kept, null pair reported; n_model = 2 from the checklist, reference implies 2
    c = cell(cells, model=m, case_id="c1", item="parties")
    assert c["status"] == "judged" and c["best"] == 0.5 and "null" in c["judge_problems"]
    # unreadable answer: not scored, bounded 0..1
    c = cell(cells, model=m, case_id="c1", item="remedy_sought")
    assert c["status"] == "unreadable_judgment" and math.isnan(c["best"]) and (c["low"], c["high"]) == (0, 1)
    # model has values, no judgment, nobody judged the reference: best 0 (reference empty), bounds 0..1
    c = cell(cells, model=m, case_id="c1", item="related_cases")
    assert (c["status"], c["best"], c["low"], c["high"]) == ("ref_unknown_model_nonempty", 0.0, 0.0, 1.0)
    # model empty, nobody judged: best not applicable, low 0
    c = cell(cells, model=m, case_id="c1", item="appeals")
    assert c["status"] == "ref_unknown_model_empty" and math.isnan(c["best"]) and c["low"] == 0.0
    # cases of the truncated A/B file that were lost are not scored
    ab = cells[cells["model"] == "gemini-2.5-pro"]
    assert set(ab["case_id"]) == {"c1", "c2", "c3"}  # c4 was cut off


def test_aggregate_bounds_bracket_best(fixture_rel):
    cells = reconstruct.summary_cells(fixture_rel)
    agg = reconstruct.aggregate(cells, ["model"])
    for r in agg.itertuples():
        assert r.s_checklist_low <= r.s_checklist + 1e-9
        if not math.isnan(r.s_checklist_high):
            assert r.s_checklist <= r.s_checklist_high + 1e-9


def test_aggregate_arithmetic_leaves_not_applicable_cells_out():
    """S_checklist is 100 x the mean over applicable cells: a not-applicable cell (NaN) is neither 0 nor
    counted; each bound is the mean of its own applicable cells."""
    import pandas as pd

    nan = math.nan
    cells = pd.DataFrame({
        "model": ["a", "a", "a", "a", "b", "b"],
        "best": [1.0, 0.5, nan, 0.0, nan, nan],
        "low": [1.0, 0.0, 0.0, 0.0, nan, 0.0],
        "high": [1.0, 1.0, nan, 0.0, nan, 1.0],
    })
    agg = reconstruct.aggregate(cells, ["model"]).set_index("model")
    a, b = agg.loc["a"], agg.loc["b"]
    assert a["s_checklist"] == 100 * (1.0 + 0.5 + 0.0) / 3  # 50.0; counting the NaN as 0 would give 37.5
    assert a["s_checklist_low"] == 100 * 1.0 / 4
    assert a["s_checklist_high"] == 100 * 2.0 / 3
    assert (a["cells"], a["applicable"], a["ambiguous"]) == (4, 3, 2)
    assert math.isnan(b["s_checklist"]) and b["applicable"] == 0  # nothing applicable: no score, not 0
    assert b["s_checklist_low"] == 0.0 and b["s_checklist_high"] == 100.0 and b["ambiguous"] == 1



def test_per_case_scores_average_only_applicable_cells_of_each_summary():
    """Per summary (model x case), hand-computed: a case whose cells are all not applicable gets no score
    (NaN), never 0, and a not-applicable cell does not dilute its case's mean."""
    import pandas as pd

    nan = math.nan
    cells = pd.DataFrame({
        "model": ["a", "a", "a", "a", "a", "b"],
        "case_id": ["c1", "c1", "c1", "c2", "c2", "c1"],
        "best": [1.0, nan, 0.0, nan, nan, 0.25],
        "low": [1.0, nan, 0.0, nan, 0.0, 0.25],
        "high": [1.0, nan, 0.0, nan, 1.0, 0.25],
    })
    got = reconstruct.per_case_scores(cells, ["model"]).set_index(["model", "case_id"])
    assert got.loc[("a", "c1"), "s_checklist"] == 50.0  # (1 + 0) / 2; NaN as 0 would give 33.3
    assert got.loc[("a", "c1"), "applicable"] == 2 and got.loc[("a", "c1"), "cells"] == 3
    assert math.isnan(got.loc[("a", "c2"), "s_checklist"]) and got.loc[("a", "c2"), "applicable"] == 0
    assert (got.loc[("a", "c2"), "s_checklist_low"], got.loc[("a", "c2"), "s_checklist_high"]) == (0.0, 100.0)
    assert got.loc[("b", "c1"), "s_checklist"] == 25.0

def test_document_cells(fixture_rel):
    cells = reconstruct.document_cells(fixture_rel)
    c = cell(cells, method="agent", configuration="individual", case_id="h1", item="filing_date")
    assert (c["status"], c["best"]) == ("judged", 1.0)
    # reference (human.json) has a judge name, the model's value is unknown (no checklist): bounded
    c = cell(cells, method="agent", configuration="individual", case_id="h1", item="judge_name")
    assert c["status"] == "unreadable_judgment"
    c = cell(cells, method="agent", configuration="individual", case_id="h1", item="trials")
    assert c["status"] == "model_unknown_ref_empty" and c["low"] == 0.0 and math.isnan(c["high"])


def test_rules_are_switchable(fixture_rel):
    from gavel.paper.reconstruct import Rules

    base = reconstruct.summary_cells(fixture_rel)
    strict = reconstruct.summary_cells(fixture_rel, Rules(strict_f1=True))
    assert (strict["best"].fillna(-1) <= base["best"].fillna(-1) + 1e-12).all()  # one-to-one never scores higher
    raw = reconstruct.summary_cells(fixture_rel, Rules(estimate_unreleased=False))
    # gemini-2.5-pro's checklists are not in the fixture: without rule 6 its unjudged cells get no estimate
    unknown = raw[(raw["model"] == "gemini-2.5-pro") & (raw["status"] == "both_unknown")]
    assert len(unknown) and unknown["best"].isna().all()
    no_class = reconstruct.summary_cells(fixture_rel, Rules(class_action_unjudged_excluded=False))
    ca = no_class[(no_class["item"] == "class_action") & (no_class["model"] == "gpt-5-2025-08-07") &
                  (no_class["case_id"] == "c1")]
    assert len(ca) == 1


def test_a_case_missing_from_a_complete_file_is_not_scored_as_present(tmp_path):
    """A judge file read in full that lacks a case: the case is lost (not scored from guesses); a checklist
    file that lacks a case: the model's lists of that case are unknown, not empty."""
    import json

    import fixture_release
    from fixture_release import MODEL, STEM

    from gavel.release import load_release

    data = fixture_release.build(tmp_path) / "data"
    judge = data / "evaluation" / f"{MODEL}_summarization" / \
        f"{STEM}_complex_order_by_date_True_thinking_high_thinking_True_thinking_False.json"
    d = json.loads(judge.read_text(encoding="utf-8"))
    del d["results"]["c2"]
    judge.write_text(json.dumps(d), encoding="utf-8")
    chk = data / "summary_checklists" / f"{MODEL}_summarization" / \
        f"{STEM}_complex_order_by_date_True_thinking_high_thinking_True.json"
    d = json.loads(chk.read_text(encoding="utf-8"))
    del d["results"]["c1"]
    chk.write_text(json.dumps(d), encoding="utf-8")
    rel = load_release(data)
    assert {"c2"} <= set(rel.audit.query("defect == 'missing_case'")["record"].str[5:])
    lost = reconstruct.lost_cases(rel).set_index(["model", "part"])
    assert lost.loc[(MODEL, 1), "cases_lost"] == 1
    cells = reconstruct.summary_cells(rel)
    assert set(cells.loc[cells["model"] == MODEL, "case_id"]) == {"c1"}
    c = cell(cells, model=MODEL, case_id="c1", item="related_cases")  # checklist of c1 missing: length unknown
    assert c["n_model"] is None or math.isnan(c["n_model"])
