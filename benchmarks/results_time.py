"""Time of a full `make results` (the real `gavel results --out TMP` in a fresh process: imports, load the
release, compute every table, write the CSVs and REPRODUCTION.md) against the time to merely json-parse the release's files, in one run.

    GAVEL_RELEASE=/path/to/gavel-release .venv/bin/python benchmarks/results_time.py

Writes into a temporary folder, so the committed results are not touched. Baselines as in
load_release.py; the target (ratio <= 3) is stated against parsing all files. ``--before DIR`` times another
gavel source tree the same way in the same run (e.g. ``git archive 8e0a037 | tar -x -C DIR``; give it this
checkout's ``data/interim`` so both find the embedding cache warm), and says whether its tables are the same.
The paired comparisons' share is what the run prints of its own timer (``results.SECONDS``) over the
process's wall time.
"""

from __future__ import annotations

import argparse
import filecmp
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

from load_release import baselines  # noqa: E402

from gavel.core import config  # noqa: E402


def timed(tree: Path | None, repeat: int, keep: Path) -> tuple[float, float | None]:
    """(median wall time of the real `gavel results --out` process run from ``tree`` (None: this checkout),
    median seconds that process says it spent in the paired comparisons (None: a tree that does not say));
    the last run's tables are kept in ``keep``."""
    env = {**os.environ, **({"PYTHONPATH": str(tree)} if tree else {})}
    full_t, spent = [], []
    for _ in range(repeat):
        with tempfile.TemporaryDirectory() as tmp:
            t0 = time.perf_counter()
            done = subprocess.run([sys.executable, "-m", "gavel", "results", "--out", tmp], check=True, env=env,
                                  cwd=tree or None, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
            full_t.append(time.perf_counter() - t0)
            said = re.search(r"^paired comparisons: ([0-9.]+) s", done.stdout, re.M)
            spent += [float(said.group(1))] if said else []
            assert (Path(tmp) / "REPRODUCTION.md").exists()
            for f in Path(tmp).iterdir():
                (keep / f.name).write_bytes(f.read_bytes())
    return statistics.median(full_t), statistics.median(spent) if spent else None


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--before", default=None, help="another gavel source tree, timed the same way")
    args = ap.parse_args()
    root = config.release_root()
    baselines(root, 1)  # warm the file cache
    all_t, json_t, _, _ = baselines(root, args.repeat)
    print(f"json-parse, all files : {all_t:.2f} s")
    print(f"json-parse, .json only: {json_t:.2f} s")
    with tempfile.TemporaryDirectory() as ours, tempfile.TemporaryDirectory() as theirs:
        runs = [("this checkout", None, Path(ours))]
        if args.before:
            runs.append(("before", Path(args.before).resolve(), Path(theirs)))
        for label, tree, keep in runs:
            f, spent = timed(tree, args.repeat, keep)
            print(f"[{label}] full results (process): {f:.2f} s  (interpreter start and imports included); "
                  f"ratio / all files {f / all_t:.2f} (target <= 3), / .json only {f / json_t:.2f}")
            print(f"[{label}] paired comparisons, as the run itself timed them: " + (
                "not reported by that tree" if spent is None else
                f"{spent:.2f} s, {100 * spent / f:.1f}% of the process (target < 10%)"))
        if args.before:
            names = sorted(p.name for p in Path(ours).iterdir())
            _, differ, missing = filecmp.cmpfiles(ours, theirs, names, shallow=False)
            print(f"tables identical to the other tree's: {not differ and not missing} "
                  f"(differ: {', '.join(differ) or 'none'})")


if __name__ == "__main__":
    main()
