"""One runner per workdir: an exclusive lock on ``<workdir>/runner.lock``.

The lock is the kernel's (``flock``): a runner that was killed holds nothing, and the next one takes the
workdir at once. The holder writes who it is into the file (what a waiting runner shows) and removes the file
when it is done, normally or by an exception, so no stale lock files are left; a runner that waited on a file
its holder removed takes the new one at the path.
"""

from __future__ import annotations

import fcntl
import os
import sys
import time
from contextlib import contextmanager
from pathlib import Path


class WorkdirBusyError(RuntimeError):
    """Another runner holds the workdir's lock."""


def _same_file(fh, path: Path) -> bool:
    """Whether the open file ``fh`` is still the file at ``path`` (not removed or replaced meanwhile)."""
    try:
        st = path.stat()
    except FileNotFoundError:
        return False
    own = os.fstat(fh.fileno())
    return (st.st_dev, st.st_ino) == (own.st_dev, own.st_ino)


@contextmanager
def hold(path: Path, timeout: float, holder: str, what: str):
    """Hold the lock file ``path``, waiting up to ``timeout`` s for whoever holds it (WorkdirBusyError naming
    them after that); ``holder`` is written into the file, ``what`` names the workdir in messages."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fh = open(path, "a+", encoding="utf-8")
    held = False
    try:
        deadline, told = time.monotonic() + timeout, False
        while True:
            try:
                fcntl.flock(fh.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
                if _same_file(fh, path):
                    break
                fh.close()  # the holder we waited for removed the file as it finished: lock the one there now
                fh = open(path, "a+", encoding="utf-8")
                continue
            except BlockingIOError:
                fh.seek(0)
                other = fh.read().strip() or "another runner"
                if time.monotonic() >= deadline:
                    raise WorkdirBusyError(f"{what.split(': ', 1)[-1]} is in use by {other}; gave up after "
                                           f"waiting {timeout:g} s. Let it finish (or stop it), or give this run "
                                           f"another workdir") from None
                if not told:
                    print(f"{what} is in use by {other}; waiting up to {timeout:g} s", file=sys.stderr, flush=True)
                    told = True
                time.sleep(0.2)
        fh.seek(0)
        fh.truncate()
        fh.write(holder + "\n")
        fh.flush()
        held = True
        yield
    finally:
        if held:  # removed while still held: a runner waiting on this file sees it is gone and retries
            try:
                path.unlink()
            except FileNotFoundError:
                pass
        fh.close()  # closing releases the lock
