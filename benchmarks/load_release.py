"""Time to load the whole release into tables vs. the time to merely json-parse its files.

    GAVEL_RELEASE=/path/to/gavel-release .venv/bin/python benchmarks/load_release.py

Two baselines, measured in the same run (median of --repeat, warm file cache):
* all files: every .json file and every line of every .jsonl file (the agent ledgers) -- "json-parse all
  its files", the definition the target (ratio <= 3) is stated against;
* .json only: only the files the loader parses (it sizes and counts the ledgers but does not parse them),
  a stricter baseline, printed for transparency.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from pathlib import Path

from gavel.core import config


def parse_json_files(root: Path) -> int:
    n = 0
    for path in root.rglob("*.json"):
        try:
            json.loads(path.read_bytes())
        except ValueError:
            pass
        n += 1
    return n


def parse_jsonl_files(root: Path) -> int:
    n = 0
    for path in root.rglob("*.jsonl"):
        for line in path.read_bytes().splitlines():
            if line.strip():
                try:
                    json.loads(line)
                except ValueError:
                    pass
        n += 1
    return n


def baselines(root: Path, repeat: int) -> tuple[float, float, int, int]:
    """(median seconds to parse everything, median seconds for .json only, #json, #jsonl)."""
    json_t, jsonl_t = [], []
    for _ in range(repeat):
        t0 = time.perf_counter()
        nj = parse_json_files(root)
        t1 = time.perf_counter()
        nl = parse_jsonl_files(root)
        t2 = time.perf_counter()
        json_t.append(t1 - t0)
        jsonl_t.append(t2 - t1)
    j, jl = statistics.median(json_t), statistics.median(jsonl_t)
    return j + jl, j, nj, nl


def main() -> None:
    from gavel.release import load_release

    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    root = config.release_root()
    baselines(root, 1)  # warm the file cache
    all_t, json_t, nj, nl = baselines(root, args.repeat)
    load_t = []
    for _ in range(args.repeat):
        t0 = time.perf_counter()
        load_release(root)
        load_t.append(time.perf_counter() - t0)
    ld = statistics.median(load_t)
    print(f"release: {root} ({nj} .json files, {nl} .jsonl files)")
    print(f"json-parse, all files : {all_t:.2f} s")
    print(f"json-parse, .json only: {json_t:.2f} s")
    print(f"load into tables      : {ld:.2f} s")
    print(f"ratio load / all files : {ld / all_t:.2f} (target <= 3)")
    print(f"ratio load / .json only: {ld / json_t:.2f} (stricter)")


if __name__ == "__main__":
    main()
