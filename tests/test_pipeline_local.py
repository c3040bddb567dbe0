"""A real model end to end: the whole GAVEL-REF pipeline (extract -> compare -> residual -> style -> score) on
the local llama.cpp model (SmolLM2-135M), offline, on one short case it summarizes first, one item. A 135M-parameter model
answers badly; what is checked is that every answer is parsed or recorded with a reason, the tables are
written, and an immediate rerun sends nothing. Skipped (with the reason) only without llama-cpp-python;
in CI that is an error."""

import json

import pandas as pd
from test_local_model import local_server  # noqa: F401  (the local-model fixture, defined once)

from gavel.answers import REASONS
from gavel.core.items import item
from gavel.runs import pipeline

MODEL = "SmolLM2-135M-Instruct"
# evaluated when the 135M model produces no summary of its own
SUMMARY = ("On March 3, 2020, the ACLU of Illinois filed a class action in the Northern District of Illinois. "
           "In 2021 the court denied the city's motion to dismiss.")
REFERENCE = ("This class action was filed on March 3, 2020 in the Northern District of Illinois by the ACLU. "
             "The court denied the motion to dismiss in 2021.")


DOCUMENTS = [("Complaint (2020-03-03)", "The ACLU of Illinois, for a class of residents, sues the City of Chicago in the "
               "Northern District of Illinois, alleging unconstitutional police stops."),
              ("Order (2021-05-10)", "The court denies the city's motion to dismiss.")]


def test_whole_pipeline_on_the_local_model(local_server, tmp_path):  # noqa: F811
    server = local_server
    # summarize a small case with the local model, then evaluate that summary
    made, table = pipeline.summarize([("c1", DOCUMENTS)], server, MODEL, tmp_path / "summarize", max_tokens=150)
    assert len(table) == 1 and table["status"].iloc[0] in ("ok", "truncated", "empty", "failed")
    assert (tmp_path / "summarize" / "summaries.csv").exists()
    summaries = made if made else [("smollm2", "c1", SUMMARY)]  # a 135M model may not produce one
    summaries = [("smollm2", c, t) for _, c, t in summaries]
    settings = pipeline.Settings(extractor=MODEL, judge=MODEL, items=(item("Filing Date"),),
                                 max_tokens=120)
    tables = pipeline.evaluate(summaries, {"c1": REFERENCE}, server, tmp_path, settings)
    answers = tables["answers"]
    assert len(answers) >= 2 and answers["status"].notna().all()
    # every answer is either used or carries a reason from the reader's vocabulary
    reasons = set(answers["status"]) - {"ok", "gated"}
    assert reasons <= set(REASONS)
    assert (answers.loc[answers["status"] != "ok", "detail"].fillna("") != "").all()
    for name in ("values", "answers", "compare", "scores", "model_scores", "summary_s_checklist"):
        assert (tmp_path / f"{name}.csv").exists(), name
    scores = pd.read_csv(tmp_path / "scores.csv")
    assert list(scores["subject"]) == ["smollm2"]
    row = scores.iloc[0]
    assert pd.isna(row["s_checklist"]) or 0 <= row["s_checklist"] <= 100
    assert row["s_checklist_low"] <= row["s_checklist_high"] if not pd.isna(row["s_checklist_low"]) else True
    manifest = json.loads((tmp_path / "evaluation.json").read_text())
    assert manifest["sent"]["extract"] >= 2 and manifest["provider"] == "local"
    print(answers[["stage", "subject", "item", "round", "status", "detail"]].to_string())
    print(table.to_string())
    again = pipeline.evaluate(summaries, {"c1": REFERENCE}, server, tmp_path, settings)
    assert sum(again["manifest"]["sent"].values()) == 0
