"""Where `make test`'s time goes, per test file, from a JUnit XML report (pytest ``--junitxml``; `.ci/run`
writes one for each run): each file's tests' seconds summed, longest first, set against the order
conftest.LONGEST_FIRST hands files out in, so the list can be kept current from a real run.

    .venv/bin/python benchmarks/suite_files.py REPORT.xml [--min 20] [--workers 3]

Prints the files at or above ``--min`` seconds (default 20), the order LONGEST_FIRST gives them, the ones
missing from it, and a bound on the wall time: the summed seconds over the workers, or the longest file,
whichever is larger (a file is one unit of work under `--dist loadscope`). A file is named by its path in
the report's ``classname`` (``tests.test_x.TestY`` -> ``test_x``); notebooks (nbval) by their file name.
"""

from __future__ import annotations

import argparse
import ast
import sys
from collections import defaultdict
from pathlib import Path
from xml.etree import ElementTree

ROOT = Path(__file__).resolve().parent.parent


def file_seconds(report: Path) -> dict[str, float]:
    """{test file's stem: its test cases' seconds summed} from one JUnit XML report."""
    totals: dict[str, float] = defaultdict(float)
    for case in ElementTree.parse(report).getroot().iter("testcase"):
        cls = case.get("classname") or ""
        parts = cls.split(".")
        # "tests.test_x" or "tests.test_x.TestY"; nbval: "notebooks.01_x.ipynb" or a path-like name
        stem = next((p for p in parts if p.startswith("test_")), None) or (
            parts[1] if len(parts) > 1 and parts[0] == "notebooks" else cls)
        totals[stem] += float(case.get("time") or 0)
    return dict(totals)


def longest_first() -> tuple[str, ...]:
    """conftest.LONGEST_FIRST, read from the file (not imported: importing conftest starts its watchdog)."""
    tree = ast.parse((ROOT / "conftest.py").read_text())
    for node in tree.body:
        if isinstance(node, ast.Assign) and ast.unparse(node.targets[0]) == "LONGEST_FIRST":
            return tuple(ast.literal_eval(node.value))
    raise SystemExit("conftest.py has no LONGEST_FIRST")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("report", type=Path)
    ap.add_argument("--min", type=float, default=20.0, help="list files of at least this many seconds")
    ap.add_argument("--workers", type=int, default=3, help="test processes of the run (make test: cores + 1)")
    args = ap.parse_args(argv)
    try:
        seconds = file_seconds(args.report)
    except (OSError, ElementTree.ParseError) as err:
        print(f"{args.report}: not a readable JUnit XML report ({err})", file=sys.stderr)
        return 2
    listed = longest_first()
    rank = {name: i + 1 for i, name in enumerate(listed)}
    total = sum(seconds.values())
    print(f"{len(seconds)} files, {total:.0f} s of tests; at least max({total:.0f} s / {args.workers} workers, "
          f"longest file) = {max(total / max(args.workers, 1), max(seconds.values(), default=0)):.0f} s of wall time")
    print(f"{'file':44s} {'seconds':>8s}  place in LONGEST_FIRST")
    slow = sorted(((s, f) for f, s in seconds.items() if s >= args.min), reverse=True)
    for s, f in slow:
        print(f"{f:44s} {s:8.1f}  {rank.get(f, '-')}")
    missing = [f for _, f in slow if f not in rank]
    stale = [f for f in listed if seconds.get(f, 0.0) < args.min]
    print("slow files missing from LONGEST_FIRST: " + (", ".join(missing) or "none"))
    print(f"LONGEST_FIRST files under {args.min:.0f} s in this run: " + (", ".join(stale) or "none"))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
