"""Growth of answer packs (gavel.llm.packs) from 1,000 to 100,000 answers: packing a cache of loose answers
(``gavel cache pack`` in its own process: CPU per answer, peak memory), a runner's lookups of every key through ``ResponseCache.get`` (CPU per lookup),
reading every row (CPU per row), and the disk the answers take loose and packed. Each size runs in its own
process (its peak is its own). Linear: each per-answer cost within 1.5x from the smallest size to the largest,
and peak memory not growing with the answers.

    .venv/bin/python benchmarks/packs.py                 # 1,000 10,000 100,000
    .venv/bin/python benchmarks/packs.py 1000 20000

Answers: the mock's shape, about 600 characters of text each.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import child_peak  # beside this script


def one(n: int) -> dict:
    from gavel.llm import packs
    from gavel.llm.records import Response
    from gavel.llm.runner import ResponseCache

    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp) / "cache"
        cache = ResponseCache(folder)
        keys = [f"extract-{i:040x}" for i in range(n)]
        body = "The court ruled for the plaintiffs on the motion to dismiss. " * 10
        for i, k in enumerate(keys):
            cache.put(Response(custom_id=f"extract-{i}", status="succeeded", text=f"{i} {body}", provider="mock",
                               output_tokens=120), k)
        loose = sum(os.lstat(p).st_blocks * 512 for _, p in packs.loose(folder))
        # packed by `gavel cache pack` in its own process: its CPU and peak are the packing's alone
        # (its own peak: child_peak.py; a child's ru_maxrss starts at this benchmark's size, 100,000 keys held)
        pack_s, peak_pack, _, code, err, _ = child_peak.measured(["cache", "pack", str(folder)])
        assert code == 0, err
        reader = ResponseCache(folder)
        t = time.process_time()
        assert all(reader.get(k) is not None for k in keys)
        get_s = time.process_time() - t
        p = packs.open_pack(folder / packs.PACK)
        t = time.process_time()
        rows = sum(1 for _ in p.rows())
        rows_s = time.process_time() - t
        p.close()
        assert rows == n
        return {"n": n, "pack_us": 1e6 * pack_s / n, "get_us": 1e6 * get_s / n, "rows_us": 1e6 * rows_s / n,
                "loose_mib": loose / 2**20, "packed_mib": (folder / packs.PACK).stat().st_size / 2**20,
                "pack_peak_mib": peak_pack / 1024}


def main(argv: list[str]) -> None:
    if argv[:1] == ["--one"]:
        print(json.dumps(one(int(argv[1]))))
        return
    sizes = [int(x) for x in argv] or [1000, 10_000, 100_000]
    rows = []
    for n in sizes:
        done = subprocess.run([sys.executable, __file__, "--one", str(n)], capture_output=True, text=True, check=True)
        r = json.loads(done.stdout.strip().splitlines()[-1])
        rows.append(r)
        f = rows[0]
        print(f"{n:>8,} answers: pack {r['pack_us']:6.1f} us/answer (x{r['pack_us'] / f['pack_us']:.2f}), "
              f"get {r['get_us']:5.1f} us (x{r['get_us'] / f['get_us']:.2f}), rows {r['rows_us']:4.1f} us "
              f"(x{r['rows_us'] / f['rows_us']:.2f}); disk {r['loose_mib']:8.1f} MiB loose -> {r['packed_mib']:7.1f} "
              f"MiB packed; `gavel cache pack` peak {r['pack_peak_mib']:.1f} MiB (x{r['pack_peak_mib'] / f['pack_peak_mib']:.2f})",
              flush=True)
    worst = max(max(r[k] / rows[0][k] for k in ("pack_us", "get_us", "rows_us")) for r in rows)
    print(f"largest per-answer cost / smallest: x{worst:.2f} (linear: within 1.5: {'yes' if worst <= 1.5 else 'NO'})")


if __name__ == "__main__":
    main(sys.argv[1:])
