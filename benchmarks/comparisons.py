"""What the comparisons of every pair cost on the release's 12 models (S_checklist and 26 items, 2,000 draws
each) against a whole `make results` (goal: under 10%), in one run.

    GAVEL_RELEASE=/path/to/gavel-release/data .venv/bin/python benchmarks/comparisons.py [--results-seconds S]

``--results-seconds`` gives the time of `make results` measured elsewhere instead of running it here (it writes
into a temporary folder, never into data/results).
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time

from gavel.paper import reconstruct, results
from gavel.release import load_release


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--results-seconds", type=float)
    args = ap.parse_args()
    rel = load_release()
    cells = reconstruct.summary_cells(rel, values=reconstruct.value_sets(rel.checklist_values))
    pc = results.per_case(cells, ["model"])
    times = []
    for _ in range(args.repeat):
        start = time.perf_counter()
        pairs, models = results.release_comparisons(pc, cells)
        times.append(time.perf_counter() - start)
    took = statistics.median(times)
    print(f"comparisons: {len(pairs)} pairs, {len(models)} model rows, median {took:.2f} s over {args.repeat}")
    whole = args.results_seconds
    if whole is None:
        with tempfile.TemporaryDirectory() as out:
            start = time.perf_counter()
            subprocess.run([sys.executable, "-m", "gavel", "results", "--out", out], check=True,
                           stdout=subprocess.DEVNULL)
            whole = time.perf_counter() - start
    print(f"make results: {whole:.1f} s; comparisons / make results = {took / whole:.3f} (goal < 0.10)")


if __name__ == "__main__":
    main()
