"""Issue 37 (2): the report reads a run folder someone else made. Only regular files inside the folder, each
bounded; the checklist the run carries in its own folder; a relative folder resolved once; every bad cell one
line naming the file and row; ``null``/``nan``/``#N/A`` read back as written; ``--against`` across checklists
said on the page and in the terminal; a folder copied elsewhere gives the same page. (The fuzz target of the
run folder: tests/test_fuzz_run_folder.py.)"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
from report_runs import REF, SUMMARIES, make_run, scripted

from gavel.cli import main
from gavel.core.spreadsheet import read_csv, write_csv
from gavel.llm.providers.mock import MockProvider
from gavel.ref.tables import read_tables
from gavel.report import page as report
from gavel.report.run import key
from gavel.runs import pipeline

REPO = Path(__file__).resolve().parent.parent
SECRET = "OPENAI_API_KEY=sk-collaborator-secret-3737373737"
CUSTOM = """name: mine
task: Extract the items below from the summary.
items:
  - key: filing_date
    name: Day the complaint was filed
    instruction: The date the first complaint was filed.
  - key: judge_name
    name: Presiding judge
    instruction: The judge who presided.
  - key: decree_dates
    name: Decree dates
    instruction: Dates of every consent decree.
"""


@pytest.fixture(scope="module")
def base(tmp_path_factory):
    return make_run(tmp_path_factory.mktemp("folder-runs") / "run", "b")


@pytest.fixture
def run(base, tmp_path):
    """A fresh copy of the run to spoil."""
    return Path(shutil.copytree(base, tmp_path / "run", symlinks=True))


def custom_run(folder: Path, checklist: Path) -> Path:
    settings = pipeline.Settings(extractor="gpt-oss-20b-BF16", judge="gemma-3-27b-it", checklist=str(checklist))
    pipeline.evaluate(SUMMARIES, REF, MockProvider(answer=scripted("b")), folder, settings)
    return folder


def report_error(run: Path, capsys, *extra) -> str:
    code = main(["report", str(run), "-o", str(run.parent / "page.html"), *extra])
    err = capsys.readouterr().err
    lines = [x for x in err.strip().splitlines() if x.strip()]
    assert code == 2 and len(lines) == 1 and lines[0].startswith("error: "), err
    assert "Traceback" not in err and "Error:" not in err.replace("error: ", "", 1), err
    assert not (run.parent / "page.html").exists()
    return lines[0]


# ---------------------------------------------------------------- only regular files inside the folder
@pytest.mark.parametrize("name", ["cost.csv", "texts.jsonl", "evaluation.json", "values.csv", "checklist.yaml",
                                  "order.csv", "order_swaps.csv", "label_order.csv", "comparisons.csv"])
def test_a_link_leading_out_of_the_run_folder_is_never_read(run, capsys, name):
    (run.parent / ".env").write_text(SECRET + "\n")
    (run / name).unlink(missing_ok=True)  # order tables: planted where a run has none
    (run / name).symlink_to(Path("..") / ".env")
    line = report_error(run, capsys)
    assert f"{run / name}: a link leading out of the run folder" in line and "sk-collaborator" not in line
    assert not any("sk-collaborator" in p.read_text(errors="replace") for p in run.parent.rglob("*.html"))


def test_a_link_inside_the_run_folder_is_not_followed_either(run, capsys):
    """Issue 46 (2): no link is followed (a link checked inside could be swapped for one leading out)."""
    (run / "texts-original.jsonl").write_bytes((run / "texts.jsonl").read_bytes())
    (run / "texts.jsonl").unlink()
    (run / "texts.jsonl").symlink_to("texts-original.jsonl")
    assert report_error(run, capsys) == (f"error: {run / 'texts.jsonl'}: a link (to texts-original.jsonl inside the "
                                         f"run folder); not read (a run folder holds its own files: copy it with "
                                         f"`cp -rL`)")


def test_a_runs_folder_that_is_a_link_elsewhere_is_refused(run, capsys, tmp_path):
    shutil.move(run / "runs", tmp_path / "elsewhere")
    (run / "runs").symlink_to(tmp_path / "elsewhere")
    assert f"{run / 'runs'}: not a folder of the run's own answers" in report_error(run, capsys)


def test_a_cached_answer_that_links_out_is_refused(run, capsys):
    cached = next((run / "runs" / "compare" / "cache").glob("*/*.json"))
    (run.parent / ".env").write_text(SECRET + "\n")
    cached.unlink()
    cached.symlink_to(run.parent / ".env")
    assert f"{cached}: a link leading out of the run folder" in report_error(run, capsys)


def test_a_fifo_or_a_device_in_the_folder_is_named_and_never_opened(run, tmp_path):
    (run / "texts.jsonl").unlink()
    os.mkfifo(run / "texts.jsonl")  # opening it to read would wait for a writer forever
    (run / "cost.csv").unlink()
    done = subprocess.run([sys.executable, "-m", "gavel", "report", str(run), "-o", str(tmp_path / "p.html")],
                          capture_output=True, text=True, timeout=120, cwd=REPO,
                          env={**os.environ, "PYTHONPATH": str(REPO)})
    assert done.returncode == 2 and done.stderr.strip() == \
        f"error: {run / 'texts.jsonl'}: not a regular file (a folder, FIFO or device); not read"


@pytest.mark.parametrize("name", ["cost.csv", "texts.jsonl", "checklist.yaml",
                                  "runs/compare/cache/CACHED"])
def test_a_hard_link_to_a_file_outside_is_never_read(run, capsys, name):
    """Issue 46 (2): a hard link is a regular file inside the folder by every path check; its second name
    (st_nlink) gives it away."""
    if name.endswith("CACHED"):
        name = str(next((run / "runs" / "compare" / "cache").glob("*/*.json")).relative_to(run))
    (run.parent / ".env").write_text(SECRET + "\n")
    (run / name).unlink()
    os.link(run.parent / ".env", run / name)
    line = report_error(run, capsys)
    assert line == (f"error: {run / name}: a file with 2 names (a hard link, which may be a file from outside the "
                    f"run folder); not read (a run folder holds its own files)"), line


def test_a_link_swapped_in_at_any_moment_never_reaches_the_page(run, tmp_path):
    """Issue 46 (2): a swapper thread replaces texts.jsonl, as fast as it can, by a symlink, a hard link (both
    to a copy outside that carries a secret in a text the page shows), its own copy and a FIFO, while the
    report reads the folder 60 times. Each report renders or ends in its one line; the secret never shows.
    (The code before read a checked path a second time: a swap between check and read leaked.)"""
    import threading

    secret_texts = (run / "texts.jsonl").read_text().replace('"text": "', '"text": "sk-swapped-secret ', 1)
    assert "sk-swapped-secret" in secret_texts
    outside = tmp_path / "outside.jsonl"
    outside.write_text(secret_texts)
    own = tmp_path / "own.jsonl"
    own.write_bytes((run / "texts.jsonl").read_bytes())
    target, spare = run / "texts.jsonl", run / ".swap"
    stop = threading.Event()
    kinds: dict[str, int] = {}

    def swapper():
        n = 0
        while not stop.is_set():
            kind = ("symlink", "hardlink", "own", "fifo")[n % 4]
            spare.unlink(missing_ok=True)
            if kind == "fifo":
                os.mkfifo(spare)  # opened to read without a writer it would hang the report
            elif kind == "symlink":
                spare.symlink_to(outside)
            elif kind == "hardlink":
                os.link(outside, spare)
            else:
                shutil.copyfile(own, spare)
            os.replace(spare, target)  # atomic: the name always points at one of the three
            kinds[kind] = kinds.get(kind, 0) + 1
            n += 1

    thread = threading.Thread(target=swapper, daemon=True)
    thread.start()
    outcomes = {"page": 0, "refused": 0}
    try:
        for _ in range(60):
            try:
                page = report.render(report.run_data(run))
            except report.ReportInputError as err:
                assert "sk-swapped-secret" not in str(err) and "\n" not in str(err)
                outcomes["refused"] += 1
            else:
                assert "sk-swapped-secret" not in page
                outcomes["page"] += 1
    finally:
        stop.set()
        thread.join()
    assert sum(outcomes.values()) == 60 and min(kinds.values()) > 0, (outcomes, kinds)


def capped(argv: list[str], cwd=REPO, limit: int = 2 * 2**30) -> subprocess.CompletedProcess:
    """``python ARGV`` with at most ``limit`` bytes of memory and two minutes (the code before this issue read
    /dev/zero until the machine ran out of memory)."""
    import resource

    def cap():
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))

    return subprocess.run([sys.executable, *argv], capture_output=True, text=True, timeout=120, cwd=cwd,
                          preexec_fn=cap, env={**os.environ, "PYTHONPATH": str(REPO)})


def test_a_link_to_a_device_through_a_link_inside_is_never_read(run, tmp_path):
    (run / "cost.csv").unlink()
    (run / "zero").symlink_to("/dev/zero")
    (run / "cost.csv").symlink_to("zero")
    done = capped(["-m", "gavel", "report", str(run), "-o", str(tmp_path / "p.html")])
    assert done.returncode == 2 and done.stderr.strip() == \
        f"error: {run / 'cost.csv'}: a link leading out of the run folder; not read (a run folder holds its own files)"


def test_a_file_over_its_limit_is_named_not_read(run, capsys, monkeypatch):
    from gavel.report import folder

    monkeypatch.setattr(folder, "MAX_SMALL_BYTES", 100)
    line = report_error(run, capsys)
    assert f"{run / 'evaluation.json'}: " in line and "over the limit of 100 for this file; not read" in line


# ---------------------------------------------------------------- the checklist travels with the run
def test_a_run_carries_its_checklist_and_the_report_never_reads_the_file_evaluation_json_names(tmp_path):
    own = tmp_path / "mine.yaml"
    own.write_text(CUSTOM)
    run = custom_run(tmp_path / "run", own)
    assert (run / "checklist.yaml").read_text() == CUSTOM
    os.mkfifo(tmp_path / "fifo")  # the file a hostile evaluation.json names: reading it would hang
    manifest = json.loads((run / "evaluation.json").read_text())
    manifest["checklist"]["source"] = str(tmp_path / "fifo")
    (run / "evaluation.json").write_text(json.dumps(manifest))
    own.unlink()
    code = ("import sys; from gavel.report import page; d = page.run_data(sys.argv[1]); "
            "print(dict(d['items'])['filing_date'])")
    done = subprocess.run([sys.executable, "-c", code, str(run)], capture_output=True, text=True, timeout=120,
                          cwd=REPO, env={**os.environ, "PYTHONPATH": str(REPO)})
    assert done.returncode == 0 and done.stdout.strip() == "Day the complaint was filed", done.stderr


def test_a_checklist_file_that_is_not_the_runs_is_refused(run, capsys):
    (run / "checklist.yaml").write_text(CUSTOM)
    assert "not the checklist this run was evaluated with" in report_error(run, capsys)


_BOMB = "".join(f"{a}: &{a} [{', '.join([f'*{b}'] * 9) if b else ', '.join(['lol'] * 9)}]\n"
                for a, b in zip("abcdefgh", ["", *"abcdefg"]))


@pytest.mark.parametrize("text,said", [
    # a tag on the wrong value crashed PyYAML's constructor: `error: report: AttributeError`, exit status 1
    ("name: x\nitems: !!timestamp foo\n", ", line 2: tags ('tag:yaml.org,2002:timestamp') are not allowed"),
    ("name: x\nitems: [{key: a, instruction: b, x: !!bool maybe}]\n", ", line 2: tags ('tag:yaml.org,2002:bool')"),
    (_BOMB, ", line 1: anchors and aliases (& and *) are not allowed in a checklist"),  # 9^8 strings once walked
    ("name: x\nitems: " + "[" * 400 + "]" * 400 + "\n", ", line 2: nested deeper than 8 levels"),
])
def test_a_hostile_checklist_file_is_read_by_the_strict_loader_and_named_in_one_line(run, capsys, text, said):
    """A run folder's checklist.yaml comes from someone else: it is read as every checklist file is (before,
    by ``yaml.safe_load``: aliases were expanded and a tag on the wrong value crashed)."""
    (run / "checklist.yaml").write_text(text)
    assert report_error(run, capsys).startswith(f"error: {run / 'checklist.yaml'}{said}")


def test_a_copied_run_folder_gives_the_same_page(tmp_path):
    own = tmp_path / "mine.yaml"
    own.write_text(CUSTOM)
    run = custom_run(tmp_path / "first" / "run", own)
    before = report.render(report.run_data(run))
    shutil.make_archive(str(tmp_path / "run"), "gztar", tmp_path / "first", "run")  # as received by a colleague
    own.unlink()
    shutil.rmtree(tmp_path / "first")
    shutil.unpack_archive(tmp_path / "run.tar.gz", tmp_path / "received")
    after = report.render(report.run_data(tmp_path / "received" / "run"))
    assert after == before and "Day the complaint was filed" in after


def test_a_packed_run_folder_gives_the_same_page_and_a_bad_pack_is_named(tmp_path, capsys):
    """`gavel cache pack RUN`: the report reads the answers from the packs, the page unchanged; a pack that
    is not one gavel writes is named in one line."""
    import sqlite3

    from gavel.llm import packs
    from gavel.report.run import raw_answers

    run = make_run(tmp_path / "run")
    before, answers = report.render(report.run_data(run)), raw_answers(run)
    assert len(answers) == len(list(run.rglob("cache/*/*.json"))) > 0
    assert main(["cache", "pack", str(run)]) == 0
    assert not list(run.rglob("cache/*/*.json")) and list(run.rglob(f"cache/{packs.PACK}"))
    assert raw_answers(run) == answers and report.render(report.run_data(run)) == before
    pack = sorted(run.rglob(f"cache/{packs.PACK}"))[0]
    db = sqlite3.connect(pack)
    db.execute("CREATE TRIGGER t AFTER INSERT ON answers BEGIN SELECT 1; END")
    db.commit()
    db.close()
    capsys.readouterr()
    assert main(["report", str(run), "--out", str(tmp_path / "r.html")]) == 2
    err = capsys.readouterr().err
    assert f"{pack}: not an answer pack gavel writes (it holds table answers, trigger t)" in err


# ---------------------------------------------------------------- a relative folder is resolved once
def test_a_relative_run_folder_is_read_from_the_working_directory(base, tmp_path):
    work = tmp_path / "elsewhere"
    shutil.copytree(base, work / "run")
    done = subprocess.run([sys.executable, "-m", "gavel", "report", "run"], capture_output=True, text=True,
                          timeout=300, cwd=work, env={**os.environ, "PYTHONPATH": str(REPO)})
    assert done.returncode == 0, done.stderr
    assert (work / "run" / "report.html").exists() and "model-x" in (work / "run" / "report.html").read_text()


# ---------------------------------------------------------------- every bad cell: one line, file and row
def _spoil(run: Path, name: str, column: str, row: int, value) -> None:
    table = read_csv(run / name, dtype=str)
    table.loc[row, column] = value
    write_csv(table, run / name)


@pytest.mark.parametrize("name, column, value, expected", [
    ("scores.csv", "s_checklist", "inf", "row 2: `s_checklist` is 'inf', not a finite number"),
    ("scores.csv", "s_style", "-Infinity", "row 2: `s_style` is '-Infinity', not a finite number"),
    ("compare.csv", "score", "1e999", "row 2: `score` is 'inf', not a finite number"),
    ("scores.csv", "r_own", "abc", "row 2: `r_own` is 'abc', not a finite number"),
    ("values.csv", "evidence_spans", "[[0, 1e999]]", "row 2: `evidence_spans`: holds '[0, inf]', not a span"),
    ("residual.csv", "spans", "[[5, 1]]", "row 2: `spans`: holds '[5, 1]', not a span"),
    ("values.csv", "evidence", "[" * 100_000 + "]" * 100_000, "row 2: `evidence` nests brackets deeper than 8"),
    ("compare.csv", "pairs", "[" * 100_000, "row 2: `pairs` nests brackets deeper than 8"),
    ("values.csv", "evidence", "not a list", "row 2: `evidence` is 'not a list', not a list"),
    ("values.csv", "evidence", "[1e999]", "row 2: `evidence`: holds 'inf', not text"),
    ("values.csv", "index", "nan", "row 2: `index` is 'nan', not a finite number"),
    # a comparison is always of an item (stop 54's CI: an empty one ended `gavel report` in an AttributeError)
    ("compare.csv", "item", "", "row 2: `item` is empty"),
    ("values.csv", "item", "", "row 2: `item` is empty"),
    # a column of numbers the report does not name (pandas read it as numbers): finite ones too
    ("residual.csv", "facts", "inf", "row 2: `facts` is 'inf', not a finite number"),
])
def test_a_bad_cell_is_one_line_naming_the_file_and_row(run, capsys, name, column, value, expected):
    _spoil(run, name, column, 1, value)
    line = report_error(run, capsys)
    assert f"{run / name}, {expected}" in line, line


@pytest.mark.parametrize("name, column", [("answers.csv", "finish_reason"), ("style.csv", "detail"),
                                          ("compare.csv", "problems"), ("residual_match.csv", "detail")])
@pytest.mark.parametrize("text", ["inf", "-Infinity", "1e999", "007"])
def test_a_text_cell_that_reads_like_a_number_is_kept_as_written(run, name, column, text):
    """Stop 54's CI: a text column with one cell `inf` among empty ones was read as a column of floats, and
    the page's JSON (no infinity allowed) ended `gavel report` in a ValueError. Text columns are read as text:
    the page is made and holds the cell as written (`007` no longer 7)."""
    for row in (0, 1):
        _spoil(run, name, column, row, text)
    data = report.run_data(run)
    page = report.render(data)
    assert json.dumps(text) in json.dumps(data, allow_nan=False), (name, column)
    assert "<html" in page.lower()


def test_an_answer_of_no_item_is_read_as_such(run):
    """An answer of the residual or style stage is of no item: its empty `item` cell is no error (it is for a
    comparison and a value)."""
    answers = read_csv(run / "answers.csv", dtype=str)
    none = answers[answers["item"].isna()]
    assert len(none) and set(none["stage"]) <= {"residual", "style"}, none
    report.render(report.run_data(run))


@pytest.mark.parametrize("name, column", [("scores.csv", "subject"), ("compare.csv", "status"),
                                          ("values.csv", "evidence_spans"), ("answers.csv", "custom_id")])
def test_a_table_without_a_column_the_report_reads_is_named(run, capsys, name, column):
    table = read_csv(run / name, dtype=str)
    write_csv(table.drop(columns=[column]), run / name)
    assert f"{run / name}: no `{column}` column" in report_error(run, capsys)


@pytest.mark.parametrize("text, expected", [
    ('{"seed": "abc"}', "`seed` is 'abc'"), ("[1, 2]", "not an object"), ('{"seed": 1e999}', "out of range"),
    ('{"alpha": NaN}', "NaN is not a number"), ('{"checklist": "x"}', "`checklist` is not the record"),
    ("[" * 100_000, "nested too deeply")])
def test_a_bad_evaluation_json_is_one_line(run, capsys, text, expected):
    (run / "evaluation.json").write_text(text)
    line = report_error(run, capsys)
    assert str(run / "evaluation.json") in line and expected in line, line


def test_an_optional_table_with_inf_or_without_its_columns_is_named(run, capsys):
    write_csv(pd.DataFrame({"stage": ["compare"], "subject": ["model-x"], "cost": [float("inf")]}),
              run / "cost.csv")
    assert f"{run / 'cost.csv'}, row 1: `cost` is inf, not a finite number" in report_error(run, capsys)
    write_csv(pd.DataFrame({"subject": ["model-x"]}), run / "judgments.csv")
    (run / "cost.csv").unlink()
    assert f"{run / 'judgments.csv'}: no `stage`, `status`, `relation`, `pairs` column" in report_error(run, capsys)


# ---------------------------------------------------------------- values a model wrote as null, nan, #N/A
def test_values_written_as_null_nan_or_na_read_back_exactly(run):
    values = read_csv(run / "values.csv", dtype=str)
    spelled = ["null", "nan", "#N/A", "NA", "None", "N/A"]
    values.loc[: len(spelled) - 1, "value"] = spelled
    write_csv(values, run / "values.csv")
    data = report.run_data(run)
    shown = {v[1] for rows in data["values"].values() for v in rows}
    assert set(spelled) <= shown
    assert read_tables(run)["values"]["value"].tolist()[: len(spelled)] == spelled
    # an empty cell is still missing, and numbers still numbers
    scores = read_tables(run)["scores"]
    assert scores["s_checklist"].dtype.kind == "f"


# ---------------------------------------------------------------- --against across checklists
def test_against_a_run_of_another_checklist_says_so_on_the_page_and_in_the_terminal(base, tmp_path, capsys):
    own = tmp_path / "mine.yaml"
    own.write_text(CUSTOM)
    other = custom_run(tmp_path / "other", own)
    page = tmp_path / "diff.html"
    assert main(["report", str(other), "--against", str(base), "-o", str(page)]) == 0
    err = capsys.readouterr().err
    assert "warning: The two runs were evaluated with different checklists: this run mine" in err
    assert "named differently under the same key (decree_dates: 'Decree dates' here, 'Dates of All Decrees' in " \
           "the baseline" in err.replace("\n", " ")
    text = page.read_text()
    assert "evaluated with different checklists" in text and "named differently under the same key" in text
    assert report.diff(report.run_data(base), report.run_data(base))["warnings"] == []


def test_the_data_keys_cells_by_the_runs_own_items(run):
    data = report.run_data(run)
    assert key("model-x", "1", "filing_date") in data["values"]
