"""Time of a full `make results` (load the release, compute every table, write CSVs and REPRODUCTION.md)
against the time to merely json-parse the release's files, in one run.

    GAVEL_RELEASE=../shared/gavel-release .venv/bin/python benchmarks/results_time.py

Writes into a temporary folder, so the committed results are not touched. Target ratio <= 3.
"""

from __future__ import annotations

import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from load_release import parse_only

from gavel import config


def main(repeat: int = 3) -> None:
    root = config.release_root()
    parse_only(root)  # warm the file cache
    code = ("import sys, pathlib\n"
            "from gavel import results, reproduction\nfrom gavel.release import load_release\n"
            "out = pathlib.Path(sys.argv[1])\n"
            "t = results.compute(load_release())\nresults.write(t, out)\n"
            "reproduction.write(results.read(out), out / 'REPRODUCTION.md')\n")
    parse_t, full_t = [], []
    for _ in range(repeat):
        t0 = time.perf_counter()
        parse_only(root)
        parse_t.append(time.perf_counter() - t0)
        with tempfile.TemporaryDirectory() as tmp:
            t0 = time.perf_counter()
            subprocess.run([sys.executable, "-c", code, tmp], check=True)
            full_t.append(time.perf_counter() - t0)
            assert (Path(tmp) / "REPRODUCTION.md").exists()
    p, f = statistics.median(parse_t), statistics.median(full_t)
    print(f"json-parse only        : {p:.2f} s")
    print(f"full results (process) : {f:.2f} s  (interpreter start and imports included)")
    print(f"ratio results/parse    : {f / p:.2f} (target <= 3)")


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).parent))
    main()
