"""The extraction meta-evaluation for real (issue 12): the local llama.cpp model (SmolLM2-135M, any registry
model can be named) extracts checklist items from a human summary of the release, its rows are scored
against ``human.json`` and its Table 1 row is written. The model is tiny, so its scores are poor; what is
checked is that every answer is either used or counted as unusable with its reason, and that the row is
computed from what the model answered (not from a stand-in). Two items keep it short on 2 cores."""

from __future__ import annotations

import pandas as pd
from test_local_model import local_server  # noqa: F401  (the local-model fixture, defined once)

from gavel.core.items import item
from gavel.metrics import metaeval as M

MODEL = "SmolLM2-135M-Instruct"
ITEMS = (item("Filing Date"), item("Judge Name"))


def test_extractor_row_from_the_local_model(local_server, shared_rel, tmp_path, monkeypatch):  # noqa: F811
    monkeypatch.setattr(M.runs, "METAEVAL_DIR", tmp_path)  # the module that reads it
    out = M.run(shared_rel, provider=local_server, extractor=MODEL, cases=1, items=ITEMS, max_tokens=200,
                n_resamples=50)
    status = out["extract_status"]
    assert len(status) == len(ITEMS)  # one answer per item of the one summary, none dropped
    assert set(status["item"]) == {it.key for it in ITEMS}
    bad = status[status["status"] != "ok"]
    assert (bad["detail"].fillna("") != "").all(), "an unusable answer without its reason"
    # the rows the model's answers gave are what was scored
    rows = M.read_value_rows(tmp_path / MODEL / "values.jsonl")
    assert set(rows["item"]) <= {it.key for it in ITEMS}
    stat = out["results"][MODEL]["S_checklist"]
    assert f"unusable item answers left out: {len(bad)}" in stat.detail
    if len(bad) < len(status):
        assert stat.n == 1 and 0.0 <= stat.value <= 100.0
    written = pd.read_csv(tmp_path / "table1.csv", index_col="model")
    assert list(written.columns) == M.TABLE1_COLUMNS and MODEL in written.index
    assert written.loc[MODEL, "Single"] == "not run"
    # a rerun of the same extraction is answered from the runner's cache
    again = M.run(shared_rel, provider=local_server, extractor=MODEL, cases=1, items=ITEMS, max_tokens=200,
                  n_resamples=50)
    pd.testing.assert_frame_equal(again["extract_status"], status)
