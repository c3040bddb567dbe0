"""Issue 45 §3: every checklist on every provider. Each packaged checklist (gavel/core/checklists/) and one
written from docs/checklists.md runs end to end on the mock and on the local model (llama.cpp, SmolLM2-135M),
the local model's time forecast included: the forecast builds its requests with the run's checklist (it
built them with the 26 legal items, so `gavel evaluate --checklist court_outcome --provider local` stopped
with `unknown checklist item 'court'`). Every error `gavel --traceback` reports prints its trace first.
Local runs are kept small: one summary, one or two items."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from needs import unavailable

from gavel.cli import main
from gavel.core import config
from gavel.core import items as gitems
from gavel.ref.stages.compare import RESIDUAL_ITEM
from gavel.runs import forecast, pipeline

DATA = Path(__file__).parent / "data"
PACKAGED = sorted(p.stem for p in (config.PACKAGE_DIR / "core" / "checklists").glob("*.yaml"))
MODEL = "gpt-4.1-2025-04-14"
#: a checklist of one's own, written from docs/checklists.md's field list: four items, an alias, a group, a style
OWN = """\
name: my_four
description: Four things about a case, to try gavel on a checklist of one's own.
groups:
  - key: who
    items: [plaintiff, defendant]
items:
  - key: plaintiff
    name: Plaintiff
    values: multi
    instruction: Each person or group that brought the case.
  - key: defendant
    name: Defendant
    instruction: Each person or body the case was brought against.
  - key: filed
    name: Date Filed
    values: single
    instruction: The date the case was filed.
    aliases: [Filing]
  - key: ended
    name: How It Ended
    instruction: Each way the case came to an end, with its date.
    not_applicable: the case is still pending.
style:
  citation_style:
    label: References to the record
    what: How the two texts point to filings, orders and opinions.
"""


def _checklist(name: str, tmp_path: Path) -> str:
    if name != "own":
        return name
    path = tmp_path / "my_four.yaml"
    path.write_text(OWN, encoding="utf-8")
    return str(path)


def _one_summary(tmp_path: Path) -> Path:
    summaries = tmp_path / "summaries.jsonl"
    summaries.write_text((DATA / "ref_summaries.jsonl").read_text(encoding="utf-8").splitlines()[0] + "\n")
    return summaries


@pytest.mark.parametrize("name", [*PACKAGED, "own"])
def test_the_forecast_builds_the_runs_requests_with_its_checklist(name, tmp_path):
    checklist = gitems.load(_checklist(name, tmp_path))
    settings = pipeline.Settings(MODEL, MODEL, checklist=checklist)
    refs = json.loads((DATA / "ref_references.json").read_text(encoding="utf-8"))
    summary = json.loads(_one_summary(tmp_path).read_text(encoding="utf-8"))
    reqs = forecast.requests([("m", summary["case_id"], summary["summary"])], refs, settings)
    n = len(checklist.items)
    by_stage = {s: [r for r in reqs if r.stage == s] for s in ("extract", "compare", "residual", "residual_match", "style")}
    assert [len(v) for v in by_stage.values()] == [2 * n, n, 2, 1, 1]
    assert [r.item for r in by_stage["compare"]] == [it.key for it in checklist.items]
    for req, it in zip(by_stage["compare"], checklist.items):  # the judge is told the checklist's own item name
        assert it.name in req.messages[-1]["content"]
    assert by_stage["residual_match"][0].item == RESIDUAL_ITEM


@pytest.mark.parametrize("name", [*PACKAGED, "own"])
def test_every_checklist_ends_with_scores_on_the_mock(name, tmp_path, capsys):
    out = tmp_path / "run"
    rc = main(["evaluate", "--checklist", _checklist(name, tmp_path), "--summaries", str(_one_summary(tmp_path)),
               "--references", str(DATA / "ref_references.json"), "--provider", "mock", "--out", str(out)])
    printed = capsys.readouterr()
    assert rc == 0, printed.err
    assert re.search(r"^sent \d+, cached 0; unusable answers: \d+; tables in ", printed.out, re.M), printed.out
    manifest = json.loads((out / "evaluation.json").read_text())
    assert manifest["checklist"]["name"] == gitems.load(_checklist(name, tmp_path)).name


def test_traceback_shows_where_every_error_came_from(tmp_path, capsys, monkeypatch):
    bad = tmp_path / "bad.yaml"
    bad.write_text(OWN.replace("Each person or group that brought the case.", "''"), encoding="utf-8")
    argv = ["evaluate", "--checklist", str(bad), "--summaries", str(_one_summary(tmp_path)), "--provider", "mock",
            "--out", str(tmp_path / "out")]
    assert main(argv) == 2
    err = capsys.readouterr().err.splitlines()
    assert len(err) == 1 and err[0].startswith(f"error: {bad.resolve()}, item 1 ('plaintiff'): "), err
    assert main(["--traceback", *argv]) == 2
    err = capsys.readouterr().err.splitlines()
    assert err[0] == "Traceback (most recent call last):" and "ChecklistError" in err[-2], err
    assert err[-1].startswith(f"error: {bad.resolve()}, item 1 ('plaintiff'): "), err
    # an unknown item, the error this issue met, the same way
    argv = ["evaluate", "--checklist", "court_outcome", "--items", "filing_date", "--summaries",
            str(_one_summary(tmp_path)), "--provider", "mock", "--out", str(tmp_path / "out2")]
    assert main(["--traceback", *argv]) == 2
    err = capsys.readouterr().err.splitlines()
    assert err[0] == "Traceback (most recent call last):" and "UnknownItemError" in err[-2], err
    assert err[-1].startswith("error: unknown checklist item 'filing_date': not one of the 4 items of checklist "), err
    # a release that is not there (``gavel data``), once as one line, then with its trace
    monkeypatch.setenv("GAVEL_RELEASE", str(tmp_path / "no_release"))
    assert main(["data"]) == 2
    assert capsys.readouterr().err.splitlines()[0].startswith("error: GAVEL release not found at ")
    assert main(["--traceback", "data"]) == 2
    err = capsys.readouterr().err.splitlines()
    assert err[0] == "Traceback (most recent call last):" and err[-1].startswith("error: GAVEL release not found at ")


LOCAL = [("court_outcome", ["Court", "Outcome"]), ("legal", ["Filing Date"]), ("research_paper", ["Title"]),
         ("own", ["Plaintiff"])]


@pytest.mark.parametrize(("name", "items"), LOCAL)
def test_every_checklist_ends_with_scores_on_the_local_model(name, items, tmp_path, capsys):
    from gavel.llm.providers.local import installed

    problem = installed()
    if problem:
        unavailable(f"the local model is not installed: {problem}")
    out = tmp_path / "run"
    rc = main(["evaluate", "--checklist", _checklist(name, tmp_path), "--summaries", str(_one_summary(tmp_path)),
               "--references", str(DATA / "ref_references.json"), "--provider", "local", "--items", *items,
               "--max-tokens", "120", "--out", str(out)])
    printed = capsys.readouterr()
    assert rc in (0, 1), printed.err  # 1: a request failed, which the report names
    assert "unknown checklist item" not in printed.err
    # the forecast (with the run's checklist) before the first stage, then the scores
    assert printed.out.index("expected duration") < printed.out.index("stage extract: "), printed.out
    assert re.search(r"^sent \d+, cached 0; unusable answers: \d+; tables in ", printed.out, re.M), printed.out
    scores = (out / "scores.csv").read_text(encoding="utf-8").splitlines()
    assert len(scores) == 2 and scores[1].startswith(gitems.load(_checklist(name, tmp_path)).name + ",")


@pytest.mark.parametrize("argv", [["serve", "--agreement-resamples", "3"], ["--checklist", "BAD", "serve"]],
                         ids=["bad-option", "bad-checklist"])
def test_traceback_shows_where_an_annotate_error_came_from(argv, tmp_path, capsys):
    """`gavel annotate` refused in its own print before: no trace under --traceback. Now one line, exit 2, and
    under --traceback the trace first, then the same line."""
    if "BAD" in argv:
        bad = tmp_path / "bad.yaml"
        bad.write_text(OWN.replace("Each person or group that brought the case.", "''"), encoding="utf-8")
        argv = [str(bad) if a == "BAD" else a for a in argv]
    full = ["annotate", "--db", f"sqlite:///{tmp_path / 'a.db'}", *argv]
    assert main(full) == 2
    plain = capsys.readouterr().err.splitlines()
    assert len(plain) == 1 and plain[0].startswith("error: "), plain
    assert main(["--traceback", *full]) == 2
    err = capsys.readouterr().err.splitlines()
    assert err[0] == "Traceback (most recent call last):" and err[-1] == plain[0], err
