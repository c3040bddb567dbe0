"""Time of a full `make results` (a fresh process: imports, load the release, compute every table, write
the CSVs and REPRODUCTION.md) against the time to merely json-parse the release's files, in one run.

    GAVEL_RELEASE=/path/to/gavel-release .venv/bin/python benchmarks/results_time.py

Writes into a temporary folder, so the committed results are not touched. Baselines as in
load_release.py; the target (ratio <= 3) is stated against parsing all files.
"""

from __future__ import annotations

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


def main(repeat: int = 3) -> None:
    root = config.release_root()
    baselines(root, 1)  # warm the file cache
    all_t, json_t, _, _ = baselines(root, repeat)
    full_t = []
    for _ in range(repeat):
        with tempfile.TemporaryDirectory() as tmp:
            t0 = time.perf_counter()
            subprocess.run([sys.executable, "-c", CODE, tmp], check=True)
            full_t.append(time.perf_counter() - t0)
            assert (Path(tmp) / "REPRODUCTION.md").exists()
    f = statistics.median(full_t)
    print(f"json-parse, all files : {all_t:.2f} s")
    print(f"json-parse, .json only: {json_t:.2f} s")
    print(f"full results (process): {f:.2f} s  (interpreter start and imports included)")
    print(f"ratio results / all files : {f / all_t:.2f} (target <= 3)")
    print(f"ratio results / .json only: {f / json_t:.2f} (stricter)")


if __name__ == "__main__":
    main()
