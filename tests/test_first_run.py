"""Issue 28: a researcher's first run. Nothing silent (case folders, changed corpora, one count), one
`error:` line and one Ctrl-C line in every command, `gavel items` and close names, no developers' layout in
what a user sees, a run's own tables in Figure 2, and why a missing score is missing. (The output tables'
documentation: tests/test_outputs_doc.py; the local model: tests/test_first_run_local.py.)"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import pytest
from agent_script import MODEL, config, corpus

from gavel import cli
from gavel.cli import main
from gavel.core import items as gitems
from gavel.documents.agent import AgentError, run_agent
from gavel.documents.corpus import Corpus, CorpusError, load_folder, write_folder
from gavel.llm.providers.mock import MockProvider
from gavel.ref.tables import counts_line, read_tables, run_counts, unusable_answers, why_missing
from gavel.runs import pipeline
from gavel.runs.stand_in import stand_in_answer

REPO = Path(__file__).resolve().parent.parent
DATA = Path(__file__).parent / "data"


def one_error_line(err: str) -> str:
    lines = [x for x in err.strip().splitlines() if x.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: ") and "Traceback" not in err, err
    return lines[0]


def case_folder(tmp_path, meta, files=None) -> Path:
    folder = tmp_path / "case"
    folder.mkdir(parents=True, exist_ok=True)
    for name, text in (files or {"complaint.txt": "The complaint was filed on 3 March 2021."}).items():
        (folder / name).write_text(text, encoding="utf-8")
    if meta is not None:
        (folder / "metadata.json").write_text(json.dumps(meta), encoding="utf-8")
    return folder


# ---------------------------------------------------------------- 1. case folders are read one documented way
@pytest.mark.parametrize("meta,needle", [
    ({"case_id": "c1"}, "no `documents` list"),  # gave 0 documents, and the agent ran on nothing
    ({"case_id": "c1", "document": [{"filename": "complaint.txt"}]}, "no `documents` list"),
    ({"case_id": "c1", "documents": []}, "`documents` list is empty"),
    ({"documents": [{"filename": "complaint.txt", "tittle": "Complaint"}]}, "unknown key(s) 'tittle'"),
])
def test_metadata_without_a_usable_documents_list_is_a_corpus_error(tmp_path, meta, needle):
    folder = case_folder(tmp_path, meta)
    with pytest.raises(CorpusError) as err:
        load_folder(folder)
    assert str(folder / "metadata.json") in str(err.value) and needle in str(err.value)


def test_a_text_file_the_metadata_does_not_list_is_refused(tmp_path):
    folder = case_folder(tmp_path, {"documents": [{"filename": "complaint.txt"}]},
                         {"complaint.txt": "Complaint.", "order.txt": "Order."})
    with pytest.raises(CorpusError, match=r"metadata\.json: does not list order\.txt"):
        load_folder(folder)
    back = load_folder(write_folder(corpus(), tmp_path / "written"))  # write_folder's own layout reads back
    assert back.names() == corpus().names()


def test_a_case_without_documents_fails_in_one_line(tmp_path, capsys):
    folder = case_folder(tmp_path, {"case_id": "c1"})
    rc = main(["documents", "agent", str(folder), "--provider", "mock", "--model", MODEL, "--out",
               str(tmp_path / "out"), "--config", "grouped/03_judge_info", "--max-steps", "2"])
    assert rc == 2
    assert "no `documents` list" in one_error_line(capsys.readouterr().err)
    assert not (tmp_path / "out").exists()  # nothing ran
    cases = tmp_path / "cases.json"
    cases.write_text(json.dumps([{"case_id": "9", "case_documents_text": []}]))
    assert main(["documents", "end-to-end", str(cases), "--case-id", "9", "--provider", "mock", "--model", MODEL,
                 "--out", str(tmp_path / "e2e")]) == 2
    assert "case_documents_text is empty" in one_error_line(capsys.readouterr().err)
    empty = case_folder(tmp_path / "e", None, {"a.txt": ""})
    assert main(["documents", "chunked", str(empty), "--provider", "mock", "--model", MODEL,
                 "--out", str(tmp_path / "ch")]) == 2
    assert "hold no text" in one_error_line(capsys.readouterr().err)
    with pytest.raises(AgentError, match="no documents"):
        run_agent(Corpus("c", []), config(), MockProvider(), MODEL, tmp_path / "lib")


# ---------------------------------------------------------------- 2. a changed corpus is never resumed
def test_a_run_over_changed_documents_is_refused_and_fresh_starts_over(tmp_path):
    folder = write_folder(corpus(), tmp_path / "case")
    out = tmp_path / "run"
    first = run_agent(load_folder(folder), config(), MockProvider(), MODEL, out, max_steps=2)
    assert first.end_reason == "max_steps"
    saved = json.loads((out / "state.json").read_text())
    assert saved["corpus_hash"] == load_folder(folder).fingerprint
    again = run_agent(load_folder(folder), config(), MockProvider(), MODEL, out, max_steps=2)
    assert again.resumed  # the same documents: resumed
    meta = json.loads((folder / "metadata.json").read_text())
    (folder / meta["documents"][0]["filename"]).write_text("A different complaint.", encoding="utf-8")
    with pytest.raises(AgentError, match="documents changed since this run read them.*--fresh"):
        run_agent(load_folder(folder), config(), MockProvider(), MODEL, out, max_steps=2)
    assert json.loads((out / "state.json").read_text())["run_id"] == saved["run_id"]  # the old run is kept
    fresh = run_agent(load_folder(folder), config(), MockProvider(), MODEL, out, max_steps=2, resume=False)
    assert not fresh.resumed
    assert json.loads((out / "state.json").read_text())["corpus_hash"] == load_folder(folder).fingerprint


def test_the_cli_refuses_a_changed_corpus_in_one_line(tmp_path, capsys):
    folder = write_folder(corpus(), tmp_path / "case")
    argv = ["documents", "agent", str(folder), "--provider", "mock", "--model", MODEL, "--out", str(tmp_path / "o"),
            "--config", "grouped/03_judge_info", "--max-steps", "2"]
    assert main(argv) == 0
    capsys.readouterr()
    (folder / "metadata.json").write_text(json.dumps({**json.loads((folder / "metadata.json").read_text()),
                                                      "case_id": "fake-1"}))
    (folder / "001_complaint.txt").write_text("Changed.", encoding="utf-8")
    assert main(argv) == 2
    assert "documents changed" in one_error_line(capsys.readouterr().err)
    assert main([*argv, "--fresh"]) == 0


def test_the_fingerprint_covers_text_names_and_dates():
    base = corpus()
    assert Corpus.build("fake-1", [d.text for d in sorted(base.documents, key=lambda d: d.position)],
                        ["Complaint", "Order Granting Preliminary Injunction", "Docket"],
                        ["Complaint", "Order/Opinion", "Docket"], ["2021-03-03", "2021-05-01", None]).fingerprint \
        == base.fingerprint
    changed_date = Corpus.build("fake-1", [d.text for d in base.documents], base.names(),
                                [d.doc_type for d in base.documents], ["2020-01-01", None, None])
    assert changed_date.fingerprint != base.fingerprint


# ---------------------------------------------------------------- 3. one count, the same everywhere
def flaky_stand_in(request):
    """The stand-in's answer, except that every extraction's first round is not JSON (the re-ask fixes it)."""
    first_round = not any("could not be used" in m["content"] for m in request.messages)
    if request.stage == "extract" and first_round:
        return "I am not sure."
    return stand_in_answer(request)


def test_cli_counts_match_the_notebook_and_every_repeat(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(pipeline, "provider", lambda name, base_url=None, **kw: MockProvider(answer=flaky_stand_in))
    out = tmp_path / "out"
    rc = main(["evaluate", "--summaries", str(DATA / "ref_summaries.jsonl"), "--references",
               str(DATA / "ref_references.json"), "--provider", "mock", "--items", "filing_date", "court_rulings",
               "--repeats", "2", "--out", str(out)])
    assert rc == 0
    line = next(x for x in capsys.readouterr().out.splitlines() if x.startswith("sent "))
    manifests = [json.loads((out / "evaluation.json").read_text()),
                 json.loads((out / "repeats" / "r2" / "evaluation.json").read_text())]
    sent = sum(n for m in manifests for n in m["sent"].values())
    assert sum(manifests[1]["sent"].values()) > 0  # repeat 2 sent its own requests ...
    assert line.startswith(f"sent {sent}, cached 0 (2 repeats); ")  # ... and the line counts them
    # the notebook's list (notebook 12: pipeline.unusable_answers) and the CLI's number agree
    listed = [len(unusable_answers(read_tables(f))) for f in (out, out / "repeats" / "r2")]
    assert f"unusable answers: {listed[0]} (repeat 1), {listed[1]} (repeat 2)" in line
    rows = pd.read_csv(out / "answers.csv")
    assert (~rows["status"].isin(["ok", "gated"])).sum() > listed[0]  # what the CLI used to count: re-asked rounds


def test_run_counts_sums_every_repeat():
    runs = [{"manifest": {"sent": {"extract": 4, "style": 1}, "cached": {"extract": 0, "style": 0}},
             "answers": pd.DataFrame()},
            {"manifest": {"sent": {"extract": 3}, "cached": {"extract": 1}}, "answers": pd.DataFrame()}]
    assert run_counts(runs) == {"sent": {"extract": 7, "style": 1}, "cached": {"extract": 1, "style": 0},
                                "unusable": [0, 0]}
    assert counts_line(runs) == "sent 8, cached 1 (2 repeats); unusable answers: 0 (repeat 1), 0 (repeat 2)"


# ---------------------------------------------------------------- 5. a missing score says why
def test_a_missing_score_says_why(tmp_path):
    empty = lambda r: json.dumps({"reasoning": "none", "extracted": []}) if r.stage == "extract" \
        else stand_in_answer(r)  # noqa: E731
    summaries = pipeline.read_summaries(DATA / "ref_summaries.jsonl")[:1]
    refs = {c: t for _, c, t in pipeline.read_summaries(DATA / "ref_references.json", "human", reference=True)}
    settings = pipeline.Settings(extractor=MODEL, judge=MODEL, items=(gitems.item("filing_date"),))
    tables = pipeline.evaluate(summaries, refs, MockProvider(answer=empty), tmp_path, settings)
    subject, case = summaries[0][0], summaries[0][1]
    why = why_missing(tables, subject, case)
    assert why["s_checklist"].startswith("no item has a score: filing_date: not applicable")
    assert "S_checklist is missing" in why["s_gavel_ref"]
    from gavel.runs.demo import final_scores

    assert final_scores(tables, subject, case).startswith("S_checklist missing: no item has a score")
    date = lambda r: json.dumps({"reasoning": "", "extracted": [{"value": "March 3, 2020", "evidence": [  # noqa: E731
        "March 3, 2020"]}]}) if r.stage == "extract" else stand_in_answer(r)
    ok = pipeline.evaluate(summaries, refs, MockProvider(answer=date), tmp_path / "ok", settings)
    assert "s_checklist" not in why_missing(ok, subject, case)  # the same date on both sides: identical, 100
    assert final_scores(ok, subject, case).startswith("S_checklist 100.0; ")
    four = lambda r: json.dumps({"readability_jargon": 3, "narrative_order": 3, "sentence_structure": 3,  # noqa: E731
                                 "formatting_layout": 3}) if r.stage == "style" else date(r)
    no_style = pipeline.evaluate(summaries, refs, MockProvider(answer=four), tmp_path / "style", settings)
    assert "S_style is missing (no S_style: S_style needs all five ratings; none for citation_style)" \
        in why_missing(no_style, subject, case)["s_gavel_ref"]


# ---------------------------------------------------------------- 6. gavel items, and close names
def test_gavel_items_lists_keys_and_names(capsys):
    assert main(["items"]) == 0
    out = capsys.readouterr().out
    for it in gitems.ITEMS:
        assert re.search(rf"^\s+{it.number}\s+{it.key}\s+{re.escape(it.name)}$", out, re.M), it.key
    assert "Basic case information:" in out


def test_an_unknown_item_suggests_the_closest(tmp_path, capsys):
    with pytest.raises(gitems.UnknownItemError, match="did you mean 'Filing Date'"):
        gitems.item("Filing Dat")
    assert gitems.closest("settlment date")[0] == "Date of Settlement"
    rc = main(["evaluate", "--summaries", str(DATA / "ref_summaries.jsonl"), "--provider", "mock",
               "--items", "Filing Dat", "--out", str(tmp_path / "o")])
    assert rc == 2 and "did you mean 'Filing Date'" in one_error_line(capsys.readouterr().err)
    rc = main(["documents", "end-to-end", str(write_folder(corpus(), tmp_path / "c")), "--provider", "mock",
               "--model", MODEL, "--items", "judge nam", "--out", str(tmp_path / "e")])
    assert rc == 2 and "did you mean 'First and Last name of Judge'" in one_error_line(capsys.readouterr().err)


# ---------------------------------------------------------------- 7. one error line, one Ctrl-C line
def test_documents_end_to_end_with_the_readmes_flags_is_one_error_line(tmp_path, capsys, monkeypatch):
    for key in ("OPENAI_API_KEY", "OPENAI_BASE_URL"):
        monkeypatch.delenv(key, raising=False)
    cases = tmp_path / "CASES.json"
    cases.write_text(json.dumps([{"case_id": "46210", "case_documents_text": ["The complaint was filed."]}]))
    argv = ["documents", "end-to-end", str(cases), "--case-id", "46210", "--provider", "openai", "--model",
            "gpt-4.1-2025-04-14", "--out", str(tmp_path / "o")]
    assert main(argv) == 2
    assert "OPENAI_API_KEY" in one_error_line(capsys.readouterr().err)
    assert main([*argv[:3], "--case-id", "1", *argv[5:]]) == 2  # a case that is not in the file
    assert "case(s) not found: 1" in one_error_line(capsys.readouterr().err)
    assert main(["documents", "agent", str(tmp_path / "nowhere"), "--provider", "mock", "--model", MODEL]) == 2
    one_error_line(capsys.readouterr().err)


@pytest.mark.parametrize("argv,target", [
    (["items"], "gavel.core.items.items_in_group"),
    (["evaluate", "--summaries", "S", "--provider", "mock", "--out", "O"], "gavel.runs.pipeline.writable_folder"),
    (["documents", "end-to-end", "C", "--provider", "mock", "--model", MODEL], "gavel.documents.cli.load_case"),
    (["audit"], "gavel.release.load_release"),
])
def test_ctrl_c_is_one_line_in_every_command(argv, target, capsys, monkeypatch):
    def interrupted(*a, **k):
        raise KeyboardInterrupt

    monkeypatch.setattr(target, interrupted)
    assert main(argv) == 130
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [cli.INTERRUPTED]


def test_an_unexpected_error_is_one_line_and_traceback_on_request(capsys, monkeypatch):
    def boom(*a, **k):
        raise ZeroDivisionError("division by zero")

    monkeypatch.setattr("gavel.core.items.items_in_group", boom)
    assert main(["items"]) == 1
    assert one_error_line(capsys.readouterr().err) == \
        "error: items: ZeroDivisionError: division by zero (gavel --traceback ... shows where)"
    assert main(["--traceback", "items"]) == 1
    assert "Traceback (most recent call last)" in capsys.readouterr().err


SLOW_RUN = r"""
import sys, threading, time
from pathlib import Path
from gavel.llm.providers.mock import MockProvider
from gavel.runs import pipeline
from gavel.runs.stand_in import stand_in_answer

started = Path(sys.argv[1])
def slow(request):
    with open(started, "a") as fh:  # one line per request begun
        fh.write("request\n")
    time.sleep(0.5)
    return stand_in_answer(request)
pipeline.provider = lambda name, base_url=None, **kw: MockProvider(answer=slow)
from gavel.cli import main
sys.exit(main(sys.argv[2:]))
"""


def _slow_run(tmp_path, sigint=signal.SIG_DFL) -> tuple[subprocess.Popen, Path]:
    """``gavel evaluate`` of two summaries with a slow mock model, started with SIGINT's disposition
    ``sigint``: SIG_DFL as a terminal starts it (a test run started as a script's background job, ``pytest
    ... &``, inherits SIGINT ignored, and would pass that on); SIG_IGN as a script's background job starts
    it. Also the file with a line per request begun."""
    started = tmp_path / "started"
    return subprocess.Popen(
        [sys.executable, "-c", SLOW_RUN, str(started), "evaluate", "--summaries", str(DATA / "ref_summaries.jsonl"),
         "--references", str(DATA / "ref_references.json"), "--provider", "mock", "--out", str(tmp_path / "o")],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=REPO,
        env={**os.environ, "PYTHONPATH": str(REPO)}, preexec_fn=lambda: signal.signal(signal.SIGINT, sigint)), \
        started


def test_a_real_sigint_during_a_run_prints_one_line(tmp_path):
    """SIGINT (what Ctrl-C sends) while requests are in flight, with tqdm's progress bar on: one line, 130.
    Issue 46: this failed whenever the test run itself was started with SIGINT ignored (``pytest ... &`` in
    a script): its child inherited that and finished with 0. The child now gets SIGINT's default."""
    proc, started = _slow_run(tmp_path)
    try:
        while not started.exists() and proc.poll() is None:
            try:
                proc.wait(timeout=0.1)
            except subprocess.TimeoutExpired:
                pass
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 130, err
    assert "Traceback" not in err and "KeyboardInterrupt" not in err, err
    assert err.strip().splitlines()[-1] == cli.INTERRUPTED
    assert len([x for x in err.splitlines() if x.strip() and "\r" not in x and "it/s" not in x]) == 1, err


def _lines(path: Path) -> int:
    return len(path.read_text().splitlines()) if path.exists() else 0


def _wait_for_lines(proc: subprocess.Popen, path: Path, n: int, seconds: float = 120) -> None:
    deadline = time.monotonic() + seconds
    while _lines(path) < n and proc.poll() is None:
        assert time.monotonic() < deadline, f"{_lines(path)} requests begun, waiting for {n}"
        time.sleep(0.05)


def test_a_run_started_in_the_background_ignores_sigint_and_sigterm_stops_it_resumably(tmp_path):
    """docs/first-run.md: a run started as a background job (``nohup gavel evaluate ... &``, ``&`` in a
    script) inherits SIGINT ignored, and gavel leaves it so (as the shell asks): a SIGINT changes nothing,
    the run goes on; ``kill PID`` (SIGTERM) stops it, and the same command resumes from the cache."""
    proc, started = _slow_run(tmp_path, signal.SIG_IGN)
    try:
        _wait_for_lines(proc, started, 1)
        proc.send_signal(signal.SIGINT)
        seen = _lines(started)
        # requests go on being sent after the SIGINT; and with 8 requests in flight (the runner's concurrency), a
        # request begun past the 8th means one has ended: 12 more begun, so some answers are surely in the cache
        # when SIGTERM comes (on a busy machine, 2 more begun could all still be in flight: nothing cached)
        _wait_for_lines(proc, started, seen + 12)
        assert proc.poll() is None, proc.communicate()[1]
        proc.send_signal(signal.SIGTERM)
        proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == -signal.SIGTERM
    again, _ = _slow_run(tmp_path)
    out, err = again.communicate(timeout=300)
    assert again.returncode == 0, err
    sent, cached = (int(x) for x in re.search(r"sent (\d+), cached (\d+)", out).groups())
    assert cached >= 1 and sent >= 1, out  # the answers received before SIGTERM are not asked again


# ---------------------------------------------------------------- 8. no developers' layout
def test_nothing_a_user_sees_names_the_developers_layout():
    tracked = subprocess.run(["git", "ls-files"], cwd=REPO, capture_output=True, text=True, check=True).stdout.split()
    seen = [p for p in tracked if not p.startswith(("tests/", ".ci/"))
            and p.endswith((".py", ".md", ".example", ".ipynb", ".yaml", ".yml", ".txt", ".in", "Makefile"))]
    bad = [f"{p}:{n}" for p in seen for n, line in enumerate((REPO / p).read_text(errors="replace").splitlines(), 1)
           if re.search(r"\.\./shared|/work/(shared|wt|main)", line)]
    assert not bad, bad
    with pytest.raises(cli.config.ReleaseNotFoundError) as err:
        cli.config.release_root(Path("/nonexistent/release"))
    assert "shared" not in str(err.value) and "/path/to/gavel-release" in str(err.value)


# ---------------------------------------------------------------- 9. a run's tables beside the paper's
def test_figure_2_draws_a_run_whose_cases_fall_in_one_length_bin(tmp_path):
    from gavel.paper import figures

    summaries = pipeline.read_summaries(DATA / "ref_summaries.jsonl")
    refs = {c: t for _, c, t in pipeline.read_summaries(DATA / "ref_references.json", "human", reference=True)}
    settings = pipeline.Settings(extractor=MODEL, judge=MODEL, items=(gitems.item("filing_date"),))
    from gavel.paper import results

    bins = {c: "64K" for c in refs}  # every case in one bin
    for name, answer in (("scored", lambda r: json.dumps({"reasoning": "", "extracted": [  # noqa: E731
            {"value": "2020", "evidence": []}]}) if r.stage == "extract" else stand_in_answer(r)),
                         ("none scored", stand_in_answer)):
        pipeline.evaluate(summaries, refs, MockProvider(answer=answer), tmp_path / name, settings, bins=bins)
        tables = results.read(tmp_path / name)  # empty tables (values.csv) too
        assert set(tables["summary_s_checklist"]["length_bin"]) == {"64K", "all"}
        fig = figures.fig_benchmark(tables)
        texts = [t.get_text() for t in fig.axes[0].texts]
        assert texts.count("no cases") >= 4 * tables["summary_s_checklist"]["model"].nunique()  # 32K 128K 256K 512K
    assert not tables["summary_s_checklist"]["s_checklist"].notna().any()  # the second run: no score at all


# ---------------------------------------------------------------- 4. the local model: caps and duration
def test_local_runs_get_the_local_model_and_its_caps_per_stage():
    from gavel.llm import pace
    from gavel.llm.providers.local import default_model

    local = default_model()
    assert pipeline.default_roles("local") == {"extractor": local, "judge": local}
    caps = {stage: pace.stage_cap(local, stage) for stage in ("extract", "compare", "residual", "residual_match", "style")}
    assert all(isinstance(c, int) and 0 < c < 1024 for c in caps.values()), caps  # below the model's own 1,024
    s = pipeline.Settings(extractor=local, judge=local, items=(gitems.item("filing_date"),))
    assert s.cap("extract", local) == caps["extract"]
    assert pipeline.Settings(extractor=local, judge=local, max_tokens=77).cap("extract", local) == 77  # --max-tokens wins
    assert s.cap("extract", MODEL) is None  # other models keep their own cap
    for stage in caps:
        assert 0 < pace.answer_tokens(local, stage) <= caps[stage]


def test_a_local_run_says_its_expected_duration_before_it_starts(tmp_path, capsys, monkeypatch):
    """The CLI's wiring, with the stand-in answering as `local` and a fixed measured speed (the real local
    model: tests/test_first_run_local.py)."""
    from gavel.llm import pace

    class StandInLocal(MockProvider):
        name = "local"

    measured = []
    monkeypatch.setattr(pipeline, "provider", lambda name, base_url=None, **kw: StandInLocal(answer=stand_in_answer))
    monkeypatch.setattr(pace, "measure", lambda provider, model: measured.append(model) or pace.Pace(0.001, 0.05))
    argv = ["evaluate", "--summaries", str(DATA / "ref_summaries.jsonl"), "--references", str(DATA / "ref_references.json"),
            "--provider", "local", "--items", "filing_date", "--out", str(tmp_path / "o")]
    assert main(argv) == 0
    out = capsys.readouterr().out
    first = out.index("expected duration")
    assert first < out.index("stage extract: ") < out.index("stage style: ") < out.index("sent ")
    assert re.search(r"expected duration [\d.]+ (s|min) for at most \d+ requests", out)
    assert measured == [pipeline.default_roles("local")["extractor"]]
    assert main(argv) == 0  # a rerun answered from the cache: nothing measured, nothing forecast
    assert "expected" not in capsys.readouterr().out and len(measured) == 1


def test_the_forecast_counts_at_least_the_requests_a_run_sends(tmp_path):
    from gavel.llm import pace
    from gavel.runs.forecast import forecast

    summaries = pipeline.read_summaries(DATA / "ref_summaries.jsonl")
    refs = {c: t for _, c, t in pipeline.read_summaries(DATA / "ref_references.json", "human", reference=True)}
    settings = pipeline.Settings(extractor=MODEL, judge=MODEL, items=(gitems.item("filing_date"), gitems.item("parties")))
    seconds, n = forecast(summaries, refs, settings, pace.Pace(prompt_s=0.0, generate_s=0.0, request_s=1.0))
    tables = pipeline.evaluate(summaries, refs, MockProvider(answer=stand_in_answer), tmp_path, settings)
    sent = sum(tables["manifest"]["sent"].values())
    assert seconds == n >= sent  # one second per request; every request counted, judged pairs at most
    kept = len(summaries)
    assert n == 2 * kept * 2 + kept * 2 + 2 * kept + kept + kept  # extract, compare, residual, matching, style


def test_notebook_01_runs_on_a_run_folder_in_one_length_bin(tmp_path):
    import papermill as pm

    summaries = pipeline.read_summaries(DATA / "ref_summaries.jsonl")
    refs = {c: t for _, c, t in pipeline.read_summaries(DATA / "ref_references.json", "human", reference=True)}
    settings = pipeline.Settings(extractor=MODEL, judge=MODEL, items=(gitems.item("filing_date"),))
    pipeline.evaluate(summaries, refs, MockProvider(answer=stand_in_answer), tmp_path / "run", settings,
                      bins={c: "128K" for c in refs})
    pm.execute_notebook(str(REPO / "notebooks" / "01_benchmark_overview.ipynb"), str(tmp_path / "out.ipynb"),
                        parameters={"results_dir": str(tmp_path / "run"), "save": False}, kernel_name="python3",
                        cwd=str(REPO / "notebooks"), progress_bar=False)


@pytest.mark.parametrize("provider, gguf, said", [
    ("mock", "model.gguf", "--gguf serves a model file with --provider local, not --provider mock"),
    ("local", "missing.gguf", "--gguf 'missing.gguf': no such model file"),
    ("local", "", "--gguf '': no such model file"),
    ("local", "folder", "--gguf 'folder': no such model file (a regular file is needed)"),
    ("local", "/dev/zero", "--gguf '/dev/zero': no such model file"),
])
def test_evaluate_gguf_is_refused_in_one_line_before_anything_runs(tmp_path, capsys, monkeypatch, provider, gguf,
                                                                    said):
    from gavel.cli import main

    monkeypatch.chdir(tmp_path)
    (tmp_path / "model.gguf").write_bytes(b"GGUF")
    (tmp_path / "folder").mkdir()
    (tmp_path / "s.jsonl").write_text(json.dumps({"case_id": "1", "summary": "Filed in 2020."}) + "\n")
    (tmp_path / "refs.json").write_text(json.dumps({"1": "Filed in 2020 in Chicago."}))
    rc = main(["evaluate", "--summaries", "s.jsonl", "--references", "refs.json", "--provider", provider,
               "--gguf", gguf, "--out", "out"])
    err = capsys.readouterr().err
    assert rc == 2 and said in err and err.count("\n") == 1, err
    assert not (tmp_path / "out").exists()


def test_gguf_that_is_no_model_is_refused_by_its_header_before_anything_is_hashed(tmp_path, capsys, monkeypatch):
    """Issue 46 (5): a 20 GB sparse file was hashed (84 s) before llama.cpp found it was no model, then its log
    and a traceback were printed. Its first four bytes say so at once; nothing is hashed or started."""
    from gavel.cli import main
    from gavel.llm.providers import local

    def no_hashing(*_):
        raise AssertionError("the file was hashed")

    monkeypatch.setattr(local, "fd_sha256", no_hashing)
    monkeypatch.chdir(tmp_path)
    with open(tmp_path / "big.gguf", "wb") as f:
        f.truncate(20 * 2**30)  # sparse: no disk used
    (tmp_path / "s.jsonl").write_text(json.dumps({"case_id": "1", "summary": "Filed in 2020."}) + "\n")
    (tmp_path / "refs.json").write_text(json.dumps({"1": "Filed in 2020 in Chicago."}))
    rc = main(["evaluate", "--summaries", "s.jsonl", "--references", "refs.json", "--provider", "local",
               "--gguf", "big.gguf", "--out", "out"])
    err = capsys.readouterr().err
    assert rc == 2 and err == ("error: --gguf: big.gguf: not a GGUF model file (it begins with b'\\x00\\x00\\x00\\x00', "
                               "not b'GGUF'); nothing was started\n"), err
    assert not (tmp_path / "out").exists()


def test_gguf_is_hashed_and_served_from_the_file_opened_not_one_swapped_in_after(tmp_path):
    """Issue 46 (5): the file was hashed by its path and served by its path again: a file swapped in after the
    hash was served, and cached under the first file's hash. Now both come from the one descriptor."""
    import hashlib

    from gavel.llm.providers.local import LocalServer, file_sha256

    first, second = b"GGUF" + b"\x01" * 4096, b"GGUF" + b"\x02" * 4096
    model = tmp_path / "own.gguf"
    model.write_bytes(first)
    server = LocalServer(model_path=model)
    try:
        served = server.gguf()
        swap = tmp_path / "swap.gguf"
        swap.write_bytes(second)
        os.replace(swap, model)  # the path now names another file of the same size
        assert Path(served).read_bytes() == first
        assert server.model_sha256 == hashlib.sha256(first).hexdigest()
        assert file_sha256(model) == hashlib.sha256(second).hexdigest()
    finally:
        server.stop()


def test_a_failed_gguf_start_says_one_line_and_leaves_no_log(tmp_path, monkeypatch):
    """Issue 46 (5): each failed start left a gavel-local-server-*.log behind and printed the whole log."""
    import tempfile

    from needs import unavailable

    from gavel.llm.providers import local
    from gavel.llm.providers.base import ProviderError

    problem = local.installed()
    if problem:
        unavailable(f"the failed start needs llama.cpp's server: {problem}")
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    model = tmp_path / "broken.gguf"
    model.write_bytes(b"GGUF" + b"\xff" * 64)  # the right magic, nothing a model file holds after it
    server = local.LocalServer(model_path=model, startup_timeout=120)
    with pytest.raises(ProviderError) as err:
        server.start()
    assert str(err.value).startswith("llama.cpp server did not start (its log's last line: ")
    assert "\n" not in str(err.value), str(err.value)
    assert not list(tmp_path.glob("gavel-local-server-*.log")) and server.process.poll() is not None
