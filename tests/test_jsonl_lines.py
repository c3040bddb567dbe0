"""The one JSONL reader (gavel.core.jsonl) ends lines at a newline only: a value written with
``json.dumps(..., ensure_ascii=False)`` that holds U+2028, U+2029, U+0085 or a file separator (text copied
from PDFs and web pages does) is one line, not three broken ones — in summaries files, a run's texts.jsonl
(which the report reads) and value rows. A line nested too deeply is named, not a crash."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from gavel.core import jsonl
from gavel.core.items import item

ODD = "a\u2028b\u2029c\x85d\x1ce\x1df\x1eg\x0bh\x0ci"


def test_a_line_holding_unicode_line_separators_is_one_line():
    text = json.dumps({"summary": ODD}, ensure_ascii=False) + "\r\n\n" + json.dumps([1]) + "\n"
    lines = jsonl.read(text, "f.jsonl")
    assert [x.value for x in lines] == [{"summary": ODD}, [1]] and [x.number for x in lines] == [1, 3]


def test_a_broken_or_too_deep_line_is_named_and_the_rest_read():
    lines = jsonl.scan('{"a": 1}\n{"a": \n' + "[" * 100_000 + "]" * 100_000 + "\n", "f.jsonl")
    assert lines[0].value == {"a": 1}
    assert lines[1].problem.startswith("f.jsonl, line 2: not JSON")
    assert lines[2].problem == f"f.jsonl, line 3: {jsonl.TOO_DEEP}"


def test_a_summary_with_line_separators_reaches_the_report(tmp_path):
    from gavel.llm.providers.mock import MockProvider
    from gavel.report.run import _texts
    from gavel.runs import pipeline

    summaries = tmp_path / "mine.jsonl"
    summaries.write_text(json.dumps({"model": "m", "case_id": "1", "summary": "Filed in 2011." + ODD},
                                    ensure_ascii=False) + "\n", encoding="utf-8")
    read = pipeline.read_summaries(summaries)
    assert read == [("m", "1", "Filed in 2011." + ODD)]
    out = tmp_path / "run"
    pipeline.evaluate(read, {"1": "Filed in 2011."}, MockProvider(), out,
                      pipeline.Settings("gpt-4.1-2025-04-14", "gpt-4.1-2025-04-14", items=(item("filing_date"),)))
    assert ODD in "".join(_texts(out).values())


def test_value_rows_nested_too_deeply_are_one_error_naming_the_line(tmp_path):
    from gavel.documents.evaluate import ReferenceError, read_value_rows

    path = tmp_path / "rows.jsonl"
    path.write_text(json.dumps({"case_id": "1", "item": "Filing Date", "index": 1, "value": ODD}, ensure_ascii=False)
                    + "\n" + "[" * 100_000 + "]" * 100_000 + "\n", encoding="utf-8")
    with pytest.raises(ReferenceError, match=f"rows.jsonl, line 2: {jsonl.TOO_DEEP}"):
        read_value_rows([path])
    path.write_text(path.read_text(encoding="utf-8").split("\n")[0] + "\n", encoding="utf-8")
    assert read_value_rows([path])["value"].tolist() == [ODD]


def test_a_lone_surrogate_in_a_summary_or_reference_is_named_and_skipped(tmp_path):
    """A JSON ``\\ud800`` escape is no text: a summary (or a reference) holding one is named and skipped, the
    rest of the file is read (before, the run crashed writing its first prompt)."""
    from gavel.runs import pipeline

    path = tmp_path / "s.jsonl"
    path.write_text('{"model": "m", "case_id": "1", "summary": "Filed 2011 \\ud800."}\n'
                    '{"model": "m", "case_id": "2", "summary": "Filed 2012."}\n', encoding="utf-8")
    problems = []
    assert pipeline.read_summaries(path, problems=problems) == [("m", "2", "Filed 2012.")]
    assert problems == [f"{path}, line 1: a lone surrogate (\\ud800) at character 11: not text; not evaluated"]
    refs = tmp_path / "r.json"
    refs.write_text('{"1": "ok", "2": "bad \\udfff"}', encoding="utf-8")
    problems = []
    assert pipeline.read_summaries(refs, "human", problems=problems, reference=True) == [("human", "1", "ok")]
    assert "case 2: a lone surrogate (\\udfff) at character 4" in problems[0]


@pytest.mark.parametrize("value, why", [('"a \\ud800"', "a lone surrogate"), ("Infinity", "must be text, not float"),
                                        ("[1, 2]", "must be text, not list")])
def test_value_rows_and_references_that_are_not_text_are_one_error(tmp_path, value, why):
    from gavel.core import config
    from gavel.documents.evaluate import ReferenceError, read_references, read_value_rows

    example = config.PACKAGE_DIR / "core" / "checklists" / "court_outcome.yaml"
    rows = tmp_path / "rows.jsonl"
    rows.write_text(f'{{"case_id": "7", "item": "Court", "index": 1, "value": {value}}}\n', encoding="utf-8")
    with pytest.raises(ReferenceError, match=f"rows.jsonl: line 1: .*{why}"):
        read_value_rows([rows], example)
    refs = tmp_path / "refs.json"
    refs.write_text(f'{{"7": {{"court": {{"extracted": [{{"value": {value}}}]}}}}}}', encoding="utf-8")
    with pytest.raises(ReferenceError, match="refs.json: case 7, item 'court'"):
        read_references(refs, example)


def test_a_requests_file_that_cannot_be_read_is_one_line_naming_it(tmp_path, capsys):
    """`gavel stage --requests FILE`: a missing file, a folder, bytes that are not UTF-8 ended in an
    unexpected error (`error: stage: FileNotFoundError ...`, exit status 1) and /dev/zero was read until memory
    ran out; each is now one line naming the file, exit status 2."""
    from gavel.cli import main

    bad = tmp_path / "bad.jsonl"
    bad.write_bytes(b"\xff\xfe")
    for path, said in ((tmp_path / "none.jsonl", "cannot read (No such file or directory)"),
                       (tmp_path, "cannot read (Is a directory)"),
                       (bad, "not UTF-8 text (byte 0xff at offset 0); save it as UTF-8"),
                       (Path("/dev/zero"), "not a file or a pipe (a device or socket); not read")):
        assert main(["stage", "--requests", str(path), "--provider", "mock", "--workdir", str(tmp_path / "w")]) == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert err == [f"error: {path}: {said}"], err


def test_a_file_is_read_without_setting_aside_its_limit_first(tmp_path):
    """``file_bytes`` asked Python for ``limit + 1`` bytes in one read: Python sets that much aside before it
    reads (4 GiB for a 100-byte summaries file), so reading any summaries or requests file failed under a
    memory cap (MemoryError under a 1 GiB RLIMIT_AS, where a fuzz target runs). Now, in a child process under
    that cap: a small file, a file past ``READ_STEP``, a pipe fed in pieces and a file over a small limit each
    read as they should."""
    import subprocess
    import sys

    big = tmp_path / "big.jsonl"
    big.write_bytes(b"x" * (jsonl.READ_STEP * 3 + 5))
    small = tmp_path / "small.jsonl"
    small.write_bytes(b'{"a": 1}\n')
    code = f"""
import resource, subprocess, sys
resource.setrlimit(resource.RLIMIT_AS, (1 << 30, 1 << 30))
from gavel.core import jsonl
assert jsonl.file_bytes({str(small)!r}) == b'{{"a": 1}}\\n'
assert len(jsonl.file_bytes({str(big)!r})) == {jsonl.READ_STEP * 3 + 5}
try:
    jsonl.file_bytes({str(big)!r}, limit={jsonl.READ_STEP * 2})
    raise SystemExit("over the limit, read")
except jsonl.JSONLError as err:
    assert "larger than" in str(err), err
feed = subprocess.Popen([sys.executable, "-c", "import sys; [sys.stdout.buffer.write(b'y' * 300000) or "
                         "sys.stdout.flush() for _ in range(9)]"], stdout=subprocess.PIPE)
assert jsonl.file_bytes(f"/proc/self/fd/{{feed.stdout.fileno()}}") == b"y" * 2700000
feed.wait()
print("ok")
"""
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0 and done.stdout.strip() == "ok", done.stderr[-2000:]
