"""benchmarks/suite_files.py: each test file's seconds from a JUnit report, against conftest.LONGEST_FIRST
(the order `make test` hands files to its workers in; `.ci/run` prints this table after every run)."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))

import suite_files  # noqa: E402


def report(tmp_path: Path, cases: list[tuple[str, float]]) -> Path:
    body = "".join(f'<testcase classname="{c}" name="t{i}" time="{t}" />' for i, (c, t) in enumerate(cases))
    path = tmp_path / "junit.xml"
    path.write_text(f'<?xml version="1.0" encoding="utf-8"?><testsuites><testsuite name="pytest">{body}'
                    f"</testsuite></testsuites>")
    return path


def test_seconds_are_summed_per_file_classes_and_notebooks_included(tmp_path):
    path = report(tmp_path, [("tests.test_a", 1.5), ("tests.test_a.TestGroup", 2.0), ("tests.test_b", 0.25),
                             ("notebooks.09_ref_batches.ipynb", 30.0), ("notebooks.09_ref_batches.ipynb", 4.0)])
    assert suite_files.file_seconds(path) == {"test_a": 3.5, "test_b": 0.25, "09_ref_batches": 34.0}


def test_the_table_names_slow_files_missing_from_the_list_and_listed_files_that_are_fast(tmp_path, capsys):
    listed = suite_files.longest_first()
    assert listed and all(isinstance(n, str) for n in listed)
    fast_listed = listed[0]
    path = report(tmp_path, [("tests.test_not_in_the_list_at_all", 99.0), (f"tests.{fast_listed}", 1.0),
                             ("tests.test_small", 5.0)])
    assert suite_files.main([str(path), "--min", "20", "--workers", "2"]) == 0
    out = capsys.readouterr().out
    assert "slow files missing from LONGEST_FIRST: test_not_in_the_list_at_all" in out
    assert fast_listed in out.split("under 20 s in this run: ")[1]
    assert "test_small" not in out  # under --min: not listed
    # the wall-time bound: 105 s over 2 workers is 52 s, below the longest file's 99 s
    assert "= 99 s of wall time" in out


def test_a_report_that_is_not_xml_is_one_line_naming_the_file(tmp_path, capsys):
    bad = tmp_path / "junit.xml"
    bad.write_text("<testsuites><testcase")
    assert suite_files.main([str(bad)]) == 2
    err = capsys.readouterr().err
    assert str(bad) in err and "not a readable JUnit XML report" in err
