"""A run of many summaries with the mock (issue 48 §3): client CPU per 1,000 requests and peak memory at each
size, each size in fresh processes (``gavel evaluate --provider mock``, every stage); from ``--shards-at`` on,
a size runs as ``--shards`` processes of ``gavel evaluate --shard I/N`` one after another (the peak is the
largest shard's) and is joined by ``gavel merge`` (its CPU and peak printed apart). Flat (a ratio to the
smallest size within 1.5) is linear.

    .venv/bin/python benchmarks/scale_mock.py 1000 10000 100000 --shards-at 100000 --shards 10
    .venv/bin/python benchmarks/scale_mock.py 100 1000 --items 26          # what a 2-core machine finishes
    .venv/bin/python benchmarks/scale_mock.py 1000 10000 100000 --shards-at 100000 --jobs 2 --no-merge

``--sample-shards K`` runs only the first K of the shards at the sharded sizes (each a whole shard of the run:
its peak and CPU per request are those of any other shard; no merge), for a machine that cannot spend the CPU
hours of all of them; the line says how many ran. ``--jobs J`` runs J shards at once (each is still timed and measured alone: its own CPU and peak). Each shard's
line is printed when it ends. ``--no-merge`` skips the merge at the sharded sizes and removes each shard's
answer cache once it is measured: the merge reads every shard's cache, one file per answer (100,000 summaries:
5.4 million files, about 22 GB on a 4 KB-block disk), which a small machine's disk may not hold. ``--pack``
packs each shard's caches once it is measured (``gavel cache pack``: one SQLite file per stage cache,
``gavel.llm.packs``), prints the pack's time and the disk before and after, and the merge reads the packs.

Summaries: "Case i." and a fixed paragraph, one model, references alike; 26 items unless --items.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import tempfile
from pathlib import Path

import child_peak  # noqa: E402  (beside this script)

TEXT = ("The plaintiffs filed the complaint on 3 March 2019 in the District Court. The court ruled for the "
        "plaintiffs on the motion to dismiss. The parties settled; the court approved the settlement in 2021.")


def write_inputs(folder: Path, n: int) -> tuple[Path, Path]:
    s, r = folder / "summaries.jsonl", folder / "references.json"
    with open(s, "w") as fh:
        for i in range(n):
            fh.write(json.dumps({"model": "bench-model", "case_id": f"case-{i}", "summary": f"Case {i}. {TEXT}"}) + "\n")
    r.write_text(json.dumps({f"case-{i}": f"Case {i}, the reference. {TEXT}" for i in range(n)}))
    return s, r


def measured(argv: list[str]) -> tuple[float, int, float]:
    """(CPU seconds, peak resident KiB, wall seconds) of one gavel process: its own peak (child_peak.py; a
    child's ru_maxrss starts at this benchmark's own size)."""
    cpu, peak, wall, code, err, _ = child_peak.measured(argv)
    if code != 0:
        raise SystemExit(f"gavel {' '.join(argv[:3])} ... failed ({code}): {err[-600:]}")
    return cpu, peak, wall


def requests_of(run: Path) -> int:
    manifest = json.loads((run / "evaluation.json").read_text())
    return sum(manifest["sent"].values()) + sum(manifest["cached"].values())


def on_disk(folder: Path) -> tuple[int, int]:
    """(files, bytes on disk: allocated blocks) of the answer caches under a run folder."""
    files = size = 0
    for cache in Path(folder).rglob("cache"):
        for root, _, names in os.walk(cache):
            for name in names:
                files += 1
                size += os.lstat(os.path.join(root, name)).st_blocks * 512
    return files, size


def one_size(n: int, items: list[str], shards: int, tmp: Path, group_size: int | None = None, jobs: int = 1,
             merge: bool = True, sample: int | None = None, pack: bool = False) -> dict:
    from concurrent.futures import ThreadPoolExecutor

    folder = tmp / f"n{n}"
    folder.mkdir()
    s, r = write_inputs(folder, n)
    base = ["evaluate", "--summaries", str(s), "--references", str(r), "--provider", "mock", "--items", *items,
            *(["--group-size", str(group_size)] if group_size is not None else [])]

    def shard(i: int) -> tuple[float, int, float, int, str]:
        out = folder / (f"s{i}" if shards > 1 else "run")
        c, p, w = measured(base + ["--out", str(out)] + (["--shard", f"{i}/{shards}"] if shards > 1 else []))
        k = requests_of(out)
        if shards > 1:
            said = ""
            if pack:  # the shard's caches packed (gavel cache pack): its time, peak and the disk before and after
                files, before = on_disk(out)
                pc, pp, pw = measured(["cache", "pack", str(out)])
                _, after = on_disk(out)
                packed[i] = (files, before, after)
                said = (f"; packed {files:,} answer files ({before / 2**20:,.0f} MiB on disk) into "
                        f"{after / 2**20:,.1f} MiB in {pc:.0f} CPU s, peak {pp / 1024:.1f} MiB")
            print(f"    shard {i}/{shards}: {k:,} requests, {1000 * c / k:.2f} CPU s per 1,000, peak {p / 1024:.1f} MiB, "
                  f"wall {w:.0f} s{said}", flush=True)
            if not merge or (sample or shards) < shards:  # measured: its answers are not needed again
                shutil.rmtree(out)
        return c, p, w, k, str(out)

    packed: dict[int, tuple[int, int, int]] = {}
    with ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:  # threads that wait on gavel processes
        done = list(pool.map(shard, range(1, min(shards, sample or shards) + 1)))
    cpu, wall, requests = sum(d[0] for d in done), sum(d[2] for d in done), sum(d[3] for d in done)
    row = {"summaries": n, "shards": shards, "ran": len(done), "requests": requests, "cpu_per_1000": 1000 * cpu / requests,
           "peak_mib": max(d[1] for d in done) / 1024, "wall_s": wall}
    if shards > 1 and merge and len(done) == shards:
        c, p, w = measured(["merge", *(d[4] for d in done), "--out", str(folder / "merged")])
        row.update(merge_cpu_s=c, merge_peak_mib=p / 1024, merge_wall_s=w,
                   merge_disk_mib=on_disk(folder / "merged")[1] / 2**20)
    if packed:
        row.update(loose_mib=sum(v[1] for v in packed.values()) / 2**20, packed_mib=sum(v[2] for v in packed.values()) / 2**20,
                   answer_files=sum(v[0] for v in packed.values()))
    shutil.rmtree(folder)
    return row


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("sizes", type=int, nargs="+", help="numbers of summaries, smallest first")
    ap.add_argument("--items", type=int, default=26, help="the first K items of the checklist (default 26)")
    ap.add_argument("--shards-at", type=int, default=None, help="sizes from this one on run in shards")
    ap.add_argument("--shards", type=int, default=10)
    ap.add_argument("--group-size", type=int, default=None, help="gavel evaluate --group-size (default: its own)")
    ap.add_argument("--jobs", type=int, default=1, help="shards run at once (default 1)")
    ap.add_argument("--sample-shards", type=int, default=None, metavar="K",
                    help="at the sharded sizes, only the first K shards (no merge)")
    ap.add_argument("--pack", action="store_true",
                    help="pack each shard's caches (gavel cache pack) once it is measured; the merge reads the packs")
    ap.add_argument("--no-merge", action="store_true",
                    help="no merge at the sharded sizes; each shard's answers removed once it is measured")
    args = ap.parse_args(argv)
    from gavel.core.items import ITEMS

    items = [it.key for it in ITEMS[: args.items]]
    print(f"mock evaluate, {len(items)} items, every stage; CPU = user + system of the gavel processes")
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for n in args.sizes:
            shards = args.shards if args.shards_at is not None and n >= args.shards_at else 1
            row = one_size(n, items, shards, Path(tmp), args.group_size, args.jobs, not args.no_merge, args.sample_shards,
                           args.pack)
            rows.append(row)
            first = rows[0]
            ran = f" ({shards} shards)" if row["ran"] == shards else f" ({row['ran']} of {shards} shards run)"
            line = (f"  {n:>7,} summaries{ran if shards > 1 else ''}: {row['requests']:>9,} requests, "
                    f"{row['cpu_per_1000']:6.2f} CPU s per 1,000 requests (x{row['cpu_per_1000'] / first['cpu_per_1000']:.2f}), "
                    f"peak {row['peak_mib']:7.1f} MiB (x{row['peak_mib'] / first['peak_mib']:.2f}), wall {row['wall_s']:.0f} s")
            if shards > 1 and "merge_cpu_s" in row:
                line += (f"; merge {row['merge_cpu_s']:.0f} CPU s, peak {row['merge_peak_mib']:.1f} MiB, "
                         f"wall {row['merge_wall_s']:.0f} s, its caches {row['merge_disk_mib']:,.1f} MiB on disk")
            if "packed_mib" in row:
                line += (f"; the shards' {row['answer_files']:,} answer files: {row['loose_mib']:,.0f} MiB on disk "
                         f"loose, {row['packed_mib']:,.1f} MiB packed")
            if shards > 1 and "merge_cpu_s" not in row:
                line += "; not merged" + (" (--no-merge)" if args.no_merge else " (not every shard ran)")
            print(line, flush=True)
    worst_cpu = max(r["cpu_per_1000"] for r in rows) / rows[0]["cpu_per_1000"]
    worst_mem = max(r["peak_mib"] for r in rows) / rows[0]["peak_mib"]
    print(f"largest / smallest: CPU per 1,000 requests x{worst_cpu:.2f}, peak memory x{worst_mem:.2f} "
          f"(flat: within 1.5: {'yes' if worst_cpu <= 1.5 and worst_mem <= 1.5 else 'NO'})")


if __name__ == "__main__":
    main()
