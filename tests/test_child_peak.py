"""benchmarks/child_peak.py reads a child's own peak memory: wait4's ru_maxrss starts at the parent's
resident size (vfork + exec), which made the 100,000-summary shard's packing read as 109.8 MiB (issue 48)."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))

import child_peak  # noqa: E402


def test_a_small_child_of_a_big_parent_reads_its_own_peak_and_a_big_child_its_own_too(tmp_path):
    held = bytearray(300 * 2**20)  # this process: 300 MiB more, every page touched
    held[::4096] = b"\1" * len(held[::4096])
    (tmp_path / "shim.py").write_text("import sys\nsize = int(sys.argv[1])\nb = bytearray(size * 2**20)\n"
                                      "b[::4096] = b'\\1' * len(b[::4096])\n")
    _, tiny, _, code, err, own = child_peak.measured(["0"], module="shim", cwd=tmp_path)
    assert code == 0 and own, err
    assert tiny < 100 * 1024, f"a child holding nothing read as {tiny / 1024:.0f} MiB (its parent holds 300 MiB)"
    _, big, _, code, err, own = child_peak.measured(["150"], module="shim", cwd=tmp_path)
    assert code == 0 and own, err
    assert 150 * 1024 <= big < 150 * 1024 + 100 * 1024, big / 1024
    del held


def test_a_child_that_cannot_say_falls_back_to_ru_maxrss_and_says_so(tmp_path):
    (tmp_path / "gone.py").write_text("import os\nos._exit(3)\n")
    _, peak, _, code, _, own = child_peak.measured([], module="gone", cwd=tmp_path)
    assert code == 3 and not own and peak > 0
