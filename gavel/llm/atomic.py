"""Whole-file writes of the runner (answers, a stage's state, its manifest): a file is replaced whole or not
at all, by a temporary file of the writer's own, fsynced, then renamed over it."""

from __future__ import annotations

import os
import threading
from pathlib import Path

from .secrets import scrub


def atomic_write(path: Path, text: str, attempts: int = 5) -> None:
    """``text`` into ``path`` whole or not at all (a temporary file of this writer's, fsynced, renamed). A
    folder removed between making it and writing into it is made again: a packing of the cache removes answer
    folders it emptied, and a run writing answers beside it lost one before (its writer stopped)."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{threading.get_ident()}.tmp")  # one per writer
    for attempt in range(attempts):
        path.parent.mkdir(parents=True, exist_ok=True)
        try:
            fh = open(tmp, "w", encoding="utf-8")  # noqa: SIM115 -- closed by the with below
            break
        except FileNotFoundError:
            if attempt == attempts - 1:
                raise
    with fh:
        fh.write(scrub(text))
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(tmp, path)
