"""What test runs left behind (issue 46): processes still carrying a test run's token (``GAVEL_TEST_RUN``,
tests/reaper.py) or naming FOLDER in their command line (PostgreSQL's data folder lives there), and anything
in FOLDER (the runs' TMPDIR) besides pytest's own numbered base folders (``pytest-of-USER``: pytest keeps
those of its last three runs, by design). Waits up to ``--wait`` seconds for the runs' watchdogs to finish,
then prints each leftover and exits 1 if there is any (0: nothing left). .ci/run checks, with it, that a
``make test`` killed half-way and the one run after it to the end leave nothing.

    python tests/leftovers.py FOLDER [--wait SECONDS]
    python tests/leftovers.py FOLDER --until-servers K [--wait SECONDS]

The second form is how .ci/run picks the moment to kill a ``make test`` half-way: it returns as soon as a
test run has servers of at least K of ``SERVERS``' kinds alive at once (or after ``--wait`` seconds, saying
so), and prints the kinds it saw; it never kills anything itself.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

from reaper import MARK


def _ours() -> set[int]:
    """This process and its ancestors (the CI script that runs this check)."""
    pids, pid = set(), os.getpid()
    while pid > 1:
        pids.add(pid)
        try:
            pid = int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])
        except (OSError, IndexError, ValueError):
            break
    return pids


def processes(folder: Path, token: str | None = None) -> list[str]:
    """'PID command line' of every live process carrying a test run's token (``token``: that one only) or
    naming ``folder``."""
    mark, named, found, ours = f"{MARK}={token or ''}".encode(), str(folder).encode(), [], _ours()
    for p in Path("/proc").iterdir():
        if not p.name.isdigit() or int(p.name) in ours:
            continue
        try:
            if (p / "stat").read_text().rsplit(")", 1)[1].split()[0] == "Z":
                continue
            cmdline = (p / "cmdline").read_bytes()
            env = (p / "environ").read_bytes().split(b"\0")
        except (OSError, IndexError):
            continue
        if any(e == mark if token else e.startswith(mark) for e in env) or named in cmdline:
            shown = cmdline.replace(b"\0", b" ").decode(errors="replace").strip()
            found.append(f"{p.name} {shown}")
    return found


#: the kinds of server a test run starts, by a word of their command lines
SERVERS = {"llama.cpp server": "llama_cpp.server", "Chromium": "chromium", "PostgreSQL": "postgres -D",
           "SLURM": "slurmctld"}


def servers(folder: Path, token: str | None = None) -> set[str]:
    """The kinds of ``SERVERS`` with a live process of a test run (``token``: of that run only)."""
    lines = processes(folder, token)
    return {kind for kind, word in SERVERS.items() if any(word in line for line in lines)}


def wait_for_servers(folder: Path, kinds: int, wait: float, token: str | None = None) -> int:
    deadline = time.monotonic() + wait
    while len(alive := servers(folder, token)) < kinds and time.monotonic() < deadline:
        time.sleep(0.5)
    said = ", ".join(sorted(alive)) or "none"
    if len(alive) >= kinds:
        print(f"servers of {len(alive)} kind(s) alive ({said}): the test run is half-way")
    else:
        print(f"after {wait:.0f} s, servers of only {len(alive)} kind(s) alive ({said})")
    return 0


def files(folder: Path) -> list[str]:
    return sorted(str(p) for p in folder.iterdir() if not p.name.startswith("pytest-of-"))


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("folder", type=Path)
    p.add_argument("--wait", type=float, default=60.0)
    p.add_argument("--until-servers", type=int, default=None, metavar="K",
                   help="wait until servers of K kinds are alive (or --wait passes), then return")
    p.add_argument("--token", default=None, help="only the processes of the test run with this token")
    args = p.parse_args(argv)
    if args.until_servers is not None:
        return wait_for_servers(args.folder, args.until_servers, args.wait, args.token)
    deadline = time.monotonic() + args.wait
    while (left := processes(args.folder) + files(args.folder)) and time.monotonic() < deadline:
        time.sleep(0.5)
    for line in left:
        print(f"left behind: {line}")
    if not left:
        print(f"nothing left behind: no test run's process, nothing in {args.folder} but pytest's own folders")
    return 1 if left else 0


if __name__ == "__main__":
    sys.exit(main())
