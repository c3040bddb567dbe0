"""Shards of a run, defined once: which of N shards a case belongs to, and the ``I/N`` option.

A case's shard is a hash of its id, so it never depends on the order, the number or the machine that reads
the summaries: the same case is in the same shard of N in every process, on every machine, in every rerun.
Shards are numbered 1..N (a SLURM array task's ``SLURM_ARRAY_TASK_ID``).

    shard_of("case-17", 4)              # 1..4
    p.add_argument("--shard", type=shards.option)   # "2/4" -> (2, 4)
"""

from __future__ import annotations

import argparse
import hashlib
import re

_SHARD = re.compile(r"([0-9]{1,9})/([0-9]{1,9})")
#: the most shards a run may have (a SLURM array holds at most 4,000,001 tasks; a merge lists what is missing)
MAX = 1_000_000


def shard_of(key: str, n: int) -> int:
    """The shard (1..n) of a case id (or any stable key): the first 8 bytes of its SHA-256, modulo n."""
    if n < 1:
        raise ValueError(f"a number of shards must be >= 1, got {n}")
    return int.from_bytes(hashlib.sha256(str(key).encode("utf-8")).digest()[:8], "big") % n + 1


def parse(text: str) -> tuple[int, int]:
    """``"I/N"`` -> (I, N) with 1 <= I <= N; ValueError naming the text otherwise."""
    # ASCII digits only, at most 9 of them: int() alone would also take " 2", "+2", "2_0" and other scripts'
    # digits ("\u0662/\u0664"), and a shard written one way must be the same shard on every machine
    found = _SHARD.fullmatch(str(text))
    i, n = (int(found[1]), int(found[2])) if found else (0, 0)
    if n < 1 or not 1 <= i <= n or n > MAX:
        raise ValueError(f"{text!r} is not a shard I/N with 1 <= I <= N <= {MAX:,} (e.g. 2/4)")
    return i, n


def option(text: str) -> tuple[int, int]:
    """``parse`` as an argparse type: a bad value is argparse's one-line usage error (exit 2)."""
    try:
        return parse(text)
    except ValueError as err:
        raise argparse.ArgumentTypeError(str(err)) from None


def add_option(p) -> None:
    """``--shard I/N`` of ``gavel evaluate`` (what it does: gavel.runs.sharding)."""
    p.add_argument("--shard", type=option, default=None,
                   help="I/N: evaluate only the cases of shard I of N (by case id) and write shard.json; "
                        "`gavel merge` joins the N shard folders")
