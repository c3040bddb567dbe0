"""What the comparisons of every pair cost on the release's 12 models (S_checklist and 26 items, 2,000 draws
each) against a whole `make results` (goal: under 10%), in one run.

    GAVEL_RELEASE=/path/to/gavel-release/data .venv/bin/python benchmarks/comparisons.py [--results-seconds S]

``--results-seconds`` gives the time of `make results` measured elsewhere instead of running it here (it writes
into a temporary folder, never into data/results).

    .venv/bin/python benchmarks/comparisons.py --memory [--cases 1000 10000] [--before DIR]

``--memory`` (no release needed): the peak memory of one ``paired.compare`` (12 models, 2,000 draws) on
1,000 and 10,000 cases of random scores, one cell per case and two (``--orders both``), each in a fresh
process (tracemalloc's peak over the call, and the process's peak resident set), and the ratio of the largest
to the smallest; ``--cells`` the cells per case measured (1 2), ``--before DIR`` measures another gavel source tree the same way (e.g. ``git archive 77f3f1b |
tar -x -C DIR``).
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time

#: one compare() in a fresh process: argv models, cases, cells; prints tracemalloc's peak and VmHWM (bytes; ru_maxrss would
#: start at the parent's size)
PEAK = """
import resource, sys, tracemalloc
import numpy as np
from gavel.core import paired
m, c, k = map(int, sys.argv[1:4])
rng = np.random.default_rng(0)
v = np.round(rng.random((m, c, k)) * 100, 1)
v[rng.random(v.shape) < 0.1] = np.nan
tracemalloc.start()
paired.compare(v, [f"m{i}" for i in range(m)], seed=0)
print(tracemalloc.get_traced_memory()[1], int(next(l for l in open("/proc/self/status") if l.startswith("VmHWM:")).split()[1]) * 1024)  # VmHWM: its own peak
"""


def memory(sizes: list[int], before: str | None, cells_per_case: list[int], models: int = 12) -> None:
    """Peak memory of compare() at each number of cases, one cell per case and two; this tree and ``before``."""
    for tree in ([None, before] if before else [None]):
        env = {**os.environ, **({"PYTHONPATH": tree} if tree else {})}
        for cells in cells_per_case:
            peaks = []
            for cases in sizes:
                out = subprocess.run([sys.executable, "-c", PEAK, str(models), str(cases), str(cells)], check=True,
                                     env=env, cwd=tree, stdout=subprocess.PIPE, text=True).stdout.split()
                traced, rss = (int(x) for x in out)
                peaks.append(traced)
                print(f"{tree or 'this tree'}: {models} models x {cases:,} cases x {cells} cell(s): compare() peak "
                      f"{traced / 2**20:,.1f} MiB traced, process {rss / 2**20:,.0f} MiB resident")
            print(f"  {tree or 'this tree'}, {cells} cell(s): peak at {sizes[-1]:,} / at {sizes[0]:,} cases = "
                  f"{peaks[-1] / peaks[0]:.2f} (cases x{sizes[-1] / sizes[0]:g})")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--results-seconds", type=float)
    ap.add_argument("--memory", action="store_true", help="peak memory of compare() at --cases (no release)")
    ap.add_argument("--cases", type=int, nargs="+", default=[1000, 10000])
    ap.add_argument("--cells", type=int, nargs="+", default=[1, 2], help="with --memory: cells per case")
    ap.add_argument("--before", help="with --memory: another gavel source tree, measured the same way")
    args = ap.parse_args()
    if args.memory:
        memory(args.cases, args.before, args.cells)
        return
    from gavel.paper import reconstruct, results
    from gavel.release import load_release

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
