"""Real data: the compare and score stages, run through StageRunner with the replay provider over the
release's document-extraction outputs against human.json, give the S_checklist of data/results/."""

import pandas as pd

from gavel.core import config
from gavel.paper import replay as release_replay


def test_replayed_document_judgments_reproduce_committed_s_checklist(shared_rel, tmp_path, capsys):
    out = release_replay.replay_check(shared_rel, tmp_path, config.RESULTS_DIR / "document_s_checklist.csv")
    table, cells = out["table"], out["cells"]
    with pd.option_context("display.width", 200, "display.max_columns", 20):
        print(table[["subject", "s_checklist", "committed", "difference", "listed_cells",
                     "left_after_listed_cells"]].to_string())
    print(out["missing"].to_string())
    # every configuration with a released judge file is there, and reproduced once the listed cells are explained
    assert len(table) == 8 and table["reproduced"].all(), table
    # fully released runs: only cells whose recorded judgment has out-of-range indices differ, and only a few
    full = table[~table["subject"].isin(["end_to_end/gpt-4.1-2025-04-14", "chunk_by_chunk/gpt-oss-20b-BF16"])]
    assert (full["difference"].abs() < 0.15).all() and (full["listed_cells"] <= 12).all()
    assert not (cells["reason"] == "unexplained").any()
    assert set(cells.loc[cells["status"] != "no_values", "reason"].str[:40]) <= {
        "recorded judgment has indices beyond its"}
    # requests with no recorded answer: Class Action (never judged, rule 3) and documented defects only
    missing = out["missing"]
    assert missing.get("Class Action never sent to the judge (release rule 3)", 0) > 150
    assert missing.drop("Class Action never sent to the judge (release rule 3)").sum() <= 2
    # a rerun answers everything from the cache: 0 sent
    again = release_replay.document_replay(shared_rel, tmp_path)
    assert again["report"].sent == 0 or again["report"].sent == len(again["report"].failed)
