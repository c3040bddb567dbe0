"""CPU seconds of ``import gavel.cli`` (what every ``python -m gavel`` command pays before it starts), against
a bare interpreter, on this checkout and, with ``--before REV``, on the ``gavel/`` of git revision REV
(extracted to a temporary folder). Prints the median of ``--runs`` fresh processes and the ratio.

    .venv/bin/python benchmarks/cli_import.py [--before main] [--runs 7]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PROBE = ("import resource\n{code}\nr = resource.getrusage(resource.RUSAGE_SELF)\n"
         "print(r.ru_utime + r.ru_stime)\n")


def cpu_seconds(code: str, path: Path, runs: int) -> float:
    env = {**os.environ, "PYTHONPATH": str(path)}
    times = sorted(float(subprocess.run([sys.executable, "-c", PROBE.format(code=code)], capture_output=True,
                                        text=True, check=True, cwd=path, env=env).stdout)
                   for _ in range(runs))
    return times[len(times) // 2]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--before", default=None, help="a git revision to compare with")
    ap.add_argument("--runs", type=int, default=7)
    args = ap.parse_args()
    bare = cpu_seconds("pass", ROOT, args.runs)
    now = cpu_seconds("import gavel.cli", ROOT, args.runs)
    print(f"bare interpreter: {bare:.3f} s CPU")
    print(f"import gavel.cli (this checkout): {now:.3f} s CPU")
    if args.before:
        with tempfile.TemporaryDirectory() as tmp:
            archive = subprocess.run(["git", "archive", args.before], cwd=ROOT, capture_output=True, check=True)
            subprocess.run(["tar", "-x", "-C", tmp], input=archive.stdout, check=True)
            before = cpu_seconds("import gavel.cli", Path(tmp), args.runs)
        print(f"import gavel.cli ({args.before}): {before:.3f} s CPU")
        print(f"ratio before/after: {before / now:.1f}x")


if __name__ == "__main__":
    main()
