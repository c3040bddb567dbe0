"""Time of a full `make results` (a fresh process: imports, load the release, compute every table, write
the CSVs and REPRODUCTION.md) against the time to merely json-parse the release's files, in one run.

    GAVEL_RELEASE=/path/to/gavel-release .venv/bin/python benchmarks/results_time.py

Writes into a temporary folder, so the committed results are not touched. Baselines as in
load_release.py; the target (ratio <= 3) is stated against parsing all files. ``--before DIR`` times another
gavel source tree the same way in the same run (e.g. ``git archive 8e0a037 | tar -x -C DIR``; give it this
checkout's ``data/interim`` so both find the embedding cache warm), and says whether its tables are the same.
"""

from __future__ import annotations

import argparse
import filecmp
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

from load_release import baselines  # noqa: E402

from gavel.core import config  # noqa: E402

CODE = """import sys, pathlib
from gavel.paper import reproduction, results
from gavel.release import load_release
out = pathlib.Path(sys.argv[1])
results.write(results.compute(load_release()), out)
reproduction.write(results.read(out), out / "REPRODUCTION.md")
"""


def timed(tree: Path | None, repeat: int, keep: Path) -> float:
    """Median wall time of the results process run from ``tree`` (None: this checkout); the last run's
    tables are kept in ``keep``."""
    env = {**os.environ, **({"PYTHONPATH": str(tree)} if tree else {})}
    full_t = []
    for _ in range(repeat):
        with tempfile.TemporaryDirectory() as tmp:
            t0 = time.perf_counter()
            subprocess.run([sys.executable, "-c", CODE, tmp], check=True, env=env, cwd=tree or None,
                           stderr=subprocess.DEVNULL)
            full_t.append(time.perf_counter() - t0)
            assert (Path(tmp) / "REPRODUCTION.md").exists()
            for f in Path(tmp).iterdir():
                (keep / f.name).write_bytes(f.read_bytes())
    return statistics.median(full_t)


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
            f = timed(tree, args.repeat, keep)
            print(f"[{label}] full results (process): {f:.2f} s  (interpreter start and imports included); "
                  f"ratio / all files {f / all_t:.2f} (target <= 3), / .json only {f / json_t:.2f}")
        if args.before:
            names = sorted(p.name for p in Path(ours).iterdir())
            _, differ, missing = filecmp.cmpfiles(ours, theirs, names, shallow=False)
            print(f"tables identical to the other tree's: {not differ and not missing} "
                  f"(differ: {', '.join(differ) or 'none'})")


if __name__ == "__main__":
    main()
