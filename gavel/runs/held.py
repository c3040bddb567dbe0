"""The texts of a run in case groups, kept on disk while the groups run (issue 48 §3: flat memory).

A run of 100,000 summaries held every summary and reference in memory for the whole run, some 700 bytes a
summary of the benchmark's short texts and 8 kB of real ones: 800 MB at 100,000 summaries, for texts each
group reads once. When the caller hands its inputs over (``gavel evaluate`` does), the run writes them here
once, in a new folder ``out/.texts-XXXX`` of its own, lets them go, and each group reads its own back. A text
is stored as its UTF-8 bytes with lone surrogates passed through, so what a group reads is exactly what was
given. The folder is removed when the run ends (a run killed on the way leaves it; the next run in groups
there removes it).
"""

from __future__ import annotations

import shutil
import sqlite3
import tempfile
from contextlib import closing
from pathlib import Path

#: the folder's name starts so (``tempfile.mkdtemp``: made new, private, never an existing link)
PREFIX = ".texts-"


def _blob(text: str) -> bytes:
    return text.encode("utf-8", "surrogatepass")


def _text(blob: bytes) -> str:
    return blob.decode("utf-8", "surrogatepass")


class Texts:
    """``{(subject, case_id): text}`` of the summaries and ``{case_id: text}`` of the references, on disk."""

    def __init__(self, folder: Path, summaries: dict, references: dict):
        for old in Path(folder).glob(PREFIX + "*"):  # a killed run's: a real folder of ours (a link is left)
            if old.is_dir() and not old.is_symlink():
                shutil.rmtree(old, ignore_errors=True)
        self.folder = Path(tempfile.mkdtemp(prefix=PREFIX, dir=folder))
        self.db = sqlite3.connect(self.folder / "texts.sqlite", isolation_level=None, check_same_thread=False)
        try:
            self._write(summaries, references)
        except BaseException:  # a full disk, Ctrl-C: nothing of it stays
            self.close()
            raise

    def _write(self, summaries: dict, references: dict) -> None:
        with closing(self.db.cursor()) as cur:
            cur.execute("PRAGMA journal_mode=OFF")
            cur.execute("PRAGMA synchronous=OFF")  # a scratch file: a crash reruns the command, never reads it
            cur.execute("CREATE TABLE s (subject BLOB, case_id BLOB, text BLOB, PRIMARY KEY (subject, case_id)) "
                        "WITHOUT ROWID")
            cur.execute("CREATE TABLE r (case_id BLOB PRIMARY KEY, text BLOB) WITHOUT ROWID")
            cur.execute("BEGIN")
            cur.executemany("INSERT INTO s VALUES (?, ?, ?)",
                            ((_blob(s), _blob(c), _blob(t)) for (s, c), t in summaries.items()))
            cur.executemany("INSERT INTO r VALUES (?, ?)", ((_blob(c), _blob(t)) for c, t in references.items()))
            cur.execute("COMMIT")

    def summaries(self, keys: list) -> dict:
        """``{(subject, case_id): text}`` of ``keys``, in their order."""
        ask = self.db.execute
        return {(s, c): _text(ask("SELECT text FROM s WHERE subject = ? AND case_id = ?",
                                  (_blob(s), _blob(c))).fetchone()[0]) for s, c in keys}

    def references(self, cases: list) -> dict:
        """``{case_id: text}`` of ``cases``, in their order."""
        ask = self.db.execute
        return {c: _text(ask("SELECT text FROM r WHERE case_id = ?", (_blob(c),)).fetchone()[0]) for c in cases}

    def close(self) -> None:
        self.db.close()
        shutil.rmtree(self.folder, ignore_errors=True)
