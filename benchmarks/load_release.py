"""Time to load the whole release into tables vs. time to merely json-parse the same files.

    GAVEL_RELEASE=../shared/gavel-release .venv/bin/python benchmarks/load_release.py

Prints both times (median of --repeat runs, same process, warm file cache) and their ratio; target <= 3.
The baseline parses every .json file the loader reads (ledgers are only sized, not parsed, by the loader).
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from pathlib import Path

from gavel import config
from gavel.release import load_release


def parse_only(root: Path) -> int:
    n = 0
    for path in root.rglob("*.json"):
        raw = path.read_bytes()
        try:
            json.loads(raw)
        except ValueError:
            pass
        n += 1
    return n


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    root = config.release_root()
    parse_only(root)  # warm the file cache for both measurements
    parse_t, load_t = [], []
    for _ in range(args.repeat):
        t0 = time.perf_counter()
        n = parse_only(root)
        parse_t.append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        load_release(root)
        load_t.append(time.perf_counter() - t0)
    p, ld = statistics.median(parse_t), statistics.median(load_t)
    print(f"release: {root} ({n} json files)")
    print(f"json-parse only : {p:.2f} s")
    print(f"load into tables: {ld:.2f} s")
    print(f"ratio load/parse: {ld / p:.2f} (target <= 3)")


if __name__ == "__main__":
    main()
