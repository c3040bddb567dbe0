"""Issue 37: the fuzz target of the run folder (`gavel report RUN`). A real run folder (tests/report_runs.py),
spoiled by hypothesis: a cell set to a hostile value (inf, 1e999, deep brackets, text), a column dropped, a
file cut short, replaced by bytes or JSON, removed, or made a link out of the folder, to a FIFO or to
/dev/zero. The report either renders, or ends in its own one-line error (``ReportInputError``); nothing else.
Every file opened while reading and rendering is inside the run folder, the package or Python itself (an
audit hook watches ``open``), and the secret beside the folder never reaches the page.

The examples run in one subprocess under a memory cap (``RLIMIT_AS``) and a time cap, drawn from this test
run's seed (tests/fuzzing.py: ``GAVEL_FUZZ_SEED``, printed in pytest's header), so each run tries new ones and a
failure replays. Issue 46 added hard links to a copy of a file outside (carrying the secret), links inside the
folder, text with lone surrogates (JSON's ``\ud800`` escapes), and made the watcher compare resolved paths with
resolved paths (a ``.venv`` that is a link failed it)."""

from __future__ import annotations

import json
import os
import resource
import shutil
import subprocess
import sys
import sysconfig
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
EXAMPLES = 40
MEMORY = 3 * 2**30
SECONDS = 300
SECRET = "OPENAI_API_KEY=sk-fuzz-secret-9191919191"
TABLES = ("values.csv", "compare.csv", "scores.csv", "answers.csv", "residual.csv", "residual_facts.csv",
          "residual_match.csv", "style.csv", "cost.csv", "problems.csv")
FILES = TABLES + ("texts.jsonl", "evaluation.json", "checklist.yaml", "CACHE")
HOSTILE = ["inf", "-inf", "nan", "NaN", "1e999", "-1e999", "[[0, 1e999]]", "[" * 5000, "[" * 100 + "]" * 100,
           "{'a': [1, 2]}", "[None, 'x']", "[[5, 1]]", "[[-1, 3]]", "['x', 1e999]", "null", "#N/A", "", "'",
           "=HYPERLINK(\"x\")", "</script><script>alert(1)</script>", "\x00", "9" * 400, "[1, [2, [3, [4]]]]",
           "(1, 2)", "[[0, 3], [True, 4]]", "{1: 2}"]
# spliced into checklist.yaml after a colon (action "yaml"): tags on the wrong value crashed PyYAML's own
# constructors (AttributeError, KeyError, TypeError) when a run folder's checklist was read by yaml.safe_load
YAML = ["!!timestamp x", "!!bool maybe", "!!set [1]", "!!binary '%'", "!mine 1", "&a [1]", "*a", "{<<: {a: 1}}",
        "[" * 300, "!!python/object/apply:os.system [ls]", "'\\ud800'", "\"\\ud800\"", "9" * 5000]


def test_the_run_folder_fuzz_target_ends_only_in_its_own_one_line_error(tmp_path):
    def cap():
        resource.setrlimit(resource.RLIMIT_AS, (MEMORY, MEMORY))

    from fuzzing import replay

    done = subprocess.run([sys.executable, "-c", "import test_fuzz_run_folder as t; t.fuzz()"], cwd=tmp_path,
                          capture_output=True, text=True, timeout=SECONDS, preexec_fn=cap,
                          env={**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO), str(REPO / "tests")]),
                               "HF_HUB_OFFLINE": "1"})
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-6000:] + replay()
    assert "fuzzed" in done.stdout


def _files(run: Path) -> list[str]:
    """The cached answers (what the page reads under runs/): not the stages' manifests and states, which it
    never opens (seed 647062492 hard-linked runs/compare/manifest.json, and a page was rightly made)."""
    return sorted(str(p.relative_to(run)) for p in (run / "runs").glob("*/cache/*/*.json"))


def _spoil(run: Path, target: str, action: str, value, where: int, outside: Path) -> None:
    import pandas as pd

    from gavel.core.spreadsheet import read_csv, write_csv

    if target == "CACHE":
        cached = _files(run)
        target = cached[where % len(cached)]
    path = run / target
    if action in ("bytes", "json") and (path.is_symlink() or (path.exists() and not path.is_file())):
        path.unlink()  # written anew: never through an earlier spoil's link or into its FIFO (that blocked)
    if action == "remove":
        path.unlink(missing_ok=True)
    elif action in ("link_out", "link_zero", "fifo", "link_in"):
        if action == "link_in" and path.is_file() and not path.is_symlink():  # a link inside: to a copy beside it
            shutil.copyfile(path, path.with_name("copy-" + path.name))
        path.unlink(missing_ok=True)
        if action == "fifo":
            os.mkfifo(path)
        elif action == "link_in":
            path.symlink_to("copy-" + path.name)
        else:
            path.symlink_to(outside / ".env" if action == "link_out" else Path("/dev/zero"))
    elif action == "hardlink_out" and path.is_file() and not path.is_symlink():
        # a hard link to a copy outside the folder, the secret written into it (texts.jsonl: into a text the
        # page shows), then hard-linked in place of the file: a regular file inside the folder by every path
        text = path.read_bytes().decode("utf-8", "replace").replace('"text": "', '"text": "' + SECRET + " ", 1)
        copy = outside / f"outside-{path.name}"
        copy.write_text(text, encoding="utf-8")
        path.unlink()
        os.link(copy, path)
    elif action == "bytes":
        path.write_bytes(value if isinstance(value, bytes) else str(value).encode("utf-8", "surrogatepass"))
    elif action == "yaml" and (run / "checklist.yaml").is_file() and not (run / "checklist.yaml").is_symlink():
        path = run / "checklist.yaml"  # whatever the target: the action is the checklist's
        text = path.read_text(encoding="utf-8", errors="replace")
        at = text.find(": ", where % (len(text) + 1))
        fragment = YAML[where % len(YAML)]
        path.write_text(text[:at + 2] + fragment + " " + text[at + 2:] if at >= 0 else text + fragment,
                        encoding="utf-8")
    elif action == "cut" and path.is_file():
        data = path.read_bytes()
        path.write_bytes(data[: where % (len(data) + 1)])
    elif action == "json":  # a lone surrogate written as the \\udXXX escape a UTF-8 file can hold
        value = value.decode("latin-1") if isinstance(value, bytes) else value
        text = json.dumps(value, ensure_ascii=False)
        path.write_text(json.dumps(value) if _has_surrogate(text) else text, encoding="utf-8")
    elif action in ("cell", "drop") and target.endswith(".csv") and path.is_file():
        try:
            table = read_csv(path, dtype=str)
        except (pd.errors.ParserError, pd.errors.EmptyDataError, UnicodeDecodeError):
            return
        if not len(table.columns):
            return
        column = table.columns[where % len(table.columns)]
        if action == "drop":
            table = table.drop(columns=[column])
        elif len(table):
            table.loc[where % len(table), column] = str(value).encode("utf-8", "backslashreplace").decode()
        write_csv(table, path)


def _has_surrogate(value: str) -> bool:
    return any("\ud800" <= c <= "\udfff" for c in value)


def fuzz() -> None:
    """The fuzz target (run in a capped subprocess by the test above)."""
    from fuzzing import any_text, fuzz
    from hypothesis import given
    from hypothesis import strategies as st
    from report_runs import make_run

    from gavel.report import page as report
    from gavel.report.page import ReportInputError

    root = Path(tempfile.mkdtemp(prefix="fuzz-run-folder-"))
    base = make_run(root / "base", "b")
    # resolved, as the paths opened are: a .venv that is a link (a clone's own .venv -> a shared one) is
    # compared by where it leads (issue 46: unresolved prefixes failed the target in such a clone)
    allowed = [os.path.realpath(p) for p in (REPO / "gavel", sysconfig.get_paths()["stdlib"],
                                             sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"],
                                             sys.prefix, sys.base_prefix)]
    watching: dict = {"run": None, "outside": []}

    def audit(event, args):
        if event == "open" and watching["run"] is not None and isinstance(args[0], (str, bytes, os.PathLike)):
            name = os.fsdecode(args[0])
            if not os.path.isabs(name) and os.sep not in name:
                return  # gavel.report.folder opens each part relative to the run folder's descriptor (the
                # working directory of this process is an empty folder: nothing else is read by a bare name)
            path = os.path.realpath(name)
            run = watching["run"]
            if not (path == run or path.startswith(run + os.sep) or any(path.startswith(a) for a in allowed)):
                watching["outside"].append(path)

    sys.addaudithook(audit)
    json_values = st.recursive(st.none() | st.booleans() | st.integers() | st.floats() | any_text(max_size=20),
                               lambda inner: st.lists(inner, max_size=4)
                               | st.dictionaries(st.sampled_from(["seed", "checklist", "name", "fingerprint",
                                                                  "alpha", "custom_id", "text", "x"]), inner,
                                                 max_size=4), max_leaves=12)
    spoil = st.tuples(st.sampled_from(FILES),
                      st.sampled_from(["cell", "cell", "cell", "drop", "cut", "bytes", "json", "remove", "link_out",
                                       "link_zero", "fifo", "hardlink_out", "hardlink_out", "link_in", "yaml",
                                       "yaml", "yaml"]),
                      st.one_of(st.sampled_from(HOSTILE), any_text(max_size=40), st.binary(max_size=200),
                                json_values),
                      st.integers(min_value=0, max_value=10_000))
    count = {"n": 0, "errors": 0}

    @fuzz(EXAMPLES)
    @given(st.lists(spoil, min_size=1, max_size=3))
    def one(spoils):
        work = Path(tempfile.mkdtemp(dir=root))
        run = Path(shutil.copytree(base, work / "run"))
        (work / ".env").write_text(SECRET + "\n")
        for target, action, value, where in spoils:
            _spoil(run, target, action, value, where, work)
        watching.update(run=os.path.realpath(run), outside=[])
        try:
            page = report.render(report.run_data(run))
            assert "sk-fuzz-secret" not in page
            page.encode("utf-8")  # what `gavel report` writes: a lone surrogate read from JSON must not end it
            linked = [str(p.relative_to(run)) for p in run.rglob("*") if p.is_file() and not p.is_symlink()
                      and p.stat().st_nlink > 1]
            assert not linked, f"a page was made from a folder with hard links to files outside: {linked}"
        except ReportInputError as err:
            message = str(err)
            assert message and "\n" not in message and "Traceback" not in message, message
            count["errors"] += 1
        finally:
            watching["run"] = None
            shutil.rmtree(work, ignore_errors=True)
        assert not watching["outside"], f"read outside the run folder: {watching['outside']} ({spoils})"
        count["n"] += 1

    one()
    shutil.rmtree(root, ignore_errors=True)
    print(f"fuzzed {count['n']} run folders, {count['errors']} refused in one line")
