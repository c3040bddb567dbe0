"""Answer packs: a stage cache's answers in one SQLite file instead of one file per answer.

A stage cache (``<workdir>/cache``) keeps each succeeded answer as ``XX/KEY.json``, written atomically by
whichever process answered it: array tasks and shards answer into one cache without a lock between them. At
100,000 summaries that is 5.4 million files (some 22 GB of 4 KB blocks, and as many inodes), and a merge
copies each once more. ``gavel cache pack FOLDER`` moves a cache's loose answers into ``cache/answers.sqlite``
(one table: key, the file's modification time, the JSON text as written), a few hundred bytes an answer:

- **Nothing is lost on the way.** The new pack (the old pack's rows and the loose answers) is written beside
  the old, synced and renamed over it; only then are the loose files it holds removed. At any moment an
  answer is a loose file or a row of the pack at ``answers.sqlite``. A loose answer wins over a packed one
  of the same key (the later write), as a repacking keeps it.
- **Read where it is.** ``ResponseCache.get`` (``gavel.llm.runner``) looks for the loose file first, then in
  the pack; a reader that misses in the pack it opened opens the file again if it was replaced since.
- **Untrusted when it comes from someone else.** A pack is opened once by its descriptor (no link, a regular
  file), read-only and immutable, and must hold exactly the one table this module writes (no triggers, views
  or other tables; ``trusted_schema`` off); each row is checked where it is read (``rows``). Anything else
  is a :class:`PackError` naming the file (and the key).

Pack a cache when nothing is writing into it (an array task's end, a finished shard): a write after the pack
was listed stays loose and is packed the next time.
"""

from __future__ import annotations

import argparse
import errno
import json
import os
import re
import sqlite3
import stat
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from .lock import hold

#: the pack's file name inside a stage cache folder
PACK = "answers.sqlite"
SCHEMA = "CREATE TABLE answers (key TEXT PRIMARY KEY NOT NULL, mtime REAL NOT NULL, body TEXT NOT NULL) WITHOUT ROWID"
#: a cache key as ``StageRunner.key`` makes it (a readable prefix, a dash, 40 hex digits), at most 64 characters
KEY = re.compile(r"[A-Za-z0-9_.:=+-]{1,64}")
#: a loose answer's sub-folder (the key's last two characters)
SUBDIR = re.compile(r"[0-9a-f]{2}")
#: the largest answer read from a pack (as a loose file: ``report.folder.MAX_ANSWER_BYTES`` is the report's)
MAX_BODY = 1 << 26


class PackError(ValueError):
    """A pack that is not one gavel writes, or a row of it that is not a cached answer."""


class Pack:
    """One pack opened read-only (:func:`open_pack`, :func:`from_bytes`); ``get(key)`` the JSON text or None,
    ``rows()`` all."""

    def __init__(self, path: Path, db: sqlite3.Connection, identity: tuple = (), fd: int | None = None):
        self.path, self.db, self.identity, self._fd = Path(path), db, identity, fd
        db.text_factory = bytes  # decoded here, where a row that is no UTF-8 is named (not sqlite3's error)
        self._check()

    def _check(self) -> None:
        try:
            self.db.execute("PRAGMA trusted_schema = OFF")
            found = [tuple(_text(x) for x in row)
                     for row in self.db.execute("SELECT type, name, sql FROM sqlite_master").fetchall()]
        except (sqlite3.DatabaseError, UnicodeDecodeError) as err:  # (sqlite's message itself may be no UTF-8)
            self.close()
            raise PackError(f"{self.path}: not an answer pack ({err})") from None
        if found != [("table", "answers", SCHEMA)]:
            self.close()
            names = ", ".join(f"{t} {n}" for t, n, _ in found) or "nothing"
            raise PackError(f"{self.path}: not an answer pack gavel writes (it holds {names}); not read")

    def get(self, key: str) -> str | None:
        try:
            row = self.db.execute("SELECT body, typeof(body) FROM answers WHERE key = ?", (key,)).fetchone()
        except (sqlite3.DatabaseError, UnicodeDecodeError) as err:
            raise PackError(f"{self.path}: unreadable at key {key!r} ({err})") from None
        return None if row is None else _body(self.path, key, row)

    def rows(self) -> Iterator[tuple[str, float, str]]:
        """(key, mtime, JSON text) of every answer, in key order; a row that is not one is a PackError."""
        try:
            for key, kind, mtime, *body in self.db.execute(
                    "SELECT key, typeof(key), mtime, body, typeof(body) FROM answers ORDER BY key"):
                key = _text(key) if kind == b"text" else None
                if not isinstance(key, str) or not KEY.fullmatch(key):
                    raise PackError(f"{self.path}: a row whose key is not a cache key ({str(key)[:80]!r})")
                if not isinstance(mtime, (int, float)) or isinstance(mtime, bool):
                    raise PackError(f"{self.path}: key {key!r}: its time is not a number")
                yield key, float(mtime), _body(self.path, key, body)
        except (sqlite3.DatabaseError, UnicodeDecodeError) as err:
            raise PackError(f"{self.path}: unreadable ({err})") from None

    def close(self) -> None:
        self.db.close()
        if self._fd is not None:
            _close(self._fd)
            self._fd = None


def _close(fd: int) -> None:
    try:
        os.close(fd)
    except OSError:
        pass


def open_pack(path: Path) -> Pack:
    """The pack at ``path``, opened once by its descriptor (no link, a regular file) and read through that
    descriptor (read-only, immutable: no journal, no lock), whatever the name points at afterwards."""
    path = Path(path)
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError as err:
        if err.errno == errno.ELOOP:
            raise PackError(f"{path}: a link, not an answer pack; not read") from None
        raise
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise PackError(f"{path}: not a regular file (a folder, FIFO or device); not read")
        db = sqlite3.connect(f"file:/proc/self/fd/{fd}?mode=ro&immutable=1", uri=True, check_same_thread=False)
    except BaseException:
        _close(fd)
        raise
    return Pack(path, db, (info.st_dev, info.st_ino, info.st_mtime_ns, info.st_size), fd)


def from_bytes(path: Path, data: bytes) -> Pack:
    """A pack from its bytes, read already (the report reads a run folder's files once, bounded)."""
    if not data:  # sqlite's deserialize takes no empty image (a MemoryError)
        raise PackError(f"{path}: an empty file, not an answer pack")
    db = sqlite3.connect(":memory:", check_same_thread=False)
    try:
        db.deserialize(data)
    except (sqlite3.DatabaseError, UnicodeDecodeError) as err:
        db.close()
        raise PackError(f"{path}: not an answer pack ({err})") from None
    return Pack(path, db)


def _text(value):
    """A TEXT value as str (None where it is no UTF-8); other values as they are."""
    if isinstance(value, bytes):
        try:
            return value.decode("utf-8")
        except UnicodeDecodeError:
            return None
    return value


def _body(path: Path, key: str, row) -> str:
    """The answer's text of a row's (body, typeof(body)): TEXT in UTF-8, at most ``MAX_BODY`` bytes."""
    body, kind = row
    body = _text(body) if kind == b"text" and isinstance(body, bytes) and len(body) <= MAX_BODY else None
    if body is None:
        raise PackError(f"{path}: key {key!r}: not the text of an answer (UTF-8 text of at most {MAX_BODY:,} bytes)")
    return body


def loose(folder: Path) -> Iterator[tuple[str, Path]]:
    """(key, path) of the cache folder's loose answers (``XX/KEY.json``), one sub-folder at a time (nothing
    of the whole listing is held: a cache may hold millions); no link is followed."""
    try:
        subs = sorted(e.name for e in os.scandir(folder) if SUBDIR.fullmatch(e.name) and e.is_dir(follow_symlinks=False))
    except FileNotFoundError:
        return
    for sub in subs:
        try:
            names = sorted(e.name for e in os.scandir(Path(folder) / sub) if e.name.endswith(".json"))
        except (FileNotFoundError, NotADirectoryError):
            continue
        for name in names:
            if KEY.fullmatch(name[:-5]):
                yield name[:-5], Path(folder) / sub / name


def _read_loose(path: Path) -> tuple[float, str] | None:
    """(mtime, text) of a loose answer opened once (None: gone, a link, not a regular file
    or not JSON text: left where it is)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        return None
    with os.fdopen(fd, "rb") as fh:
        info = os.fstat(fh.fileno())
        if not stat.S_ISREG(info.st_mode) or info.st_size > MAX_BODY:
            return None
        raw = fh.read(info.st_size + 1)  # its size (a buffer of the limit would be allocated per file)
    try:
        text = raw.decode("utf-8")
        json.loads(text)
    except (UnicodeDecodeError, ValueError):
        return None
    return info.st_mtime, text


def write(folder: Path, rows, replacing=()) -> int:
    """A pack of ``rows`` ((key, mtime, JSON text), keys distinct) and then ``replacing`` (rows that win over
    a row of their key), written beside and renamed over ``folder/answers.sqlite`` (:class:`Builder`). Rows
    stream into the file (memory does not grow with them). Returns how many answers the pack holds."""
    b = Builder(folder)
    with b.failing():
        b.db.executemany("INSERT INTO answers VALUES (?, ?, ?)", rows)
        b.db.executemany("INSERT OR REPLACE INTO answers VALUES (?, ?, ?)", replacing)
        n = b.db.execute("SELECT count(*) FROM answers").fetchone()[0]
    b.finish()
    return n


class Builder:
    """A pack written beside ``folder/answers.sqlite`` (a merge gathering its shards' answers row by row:
    ``add`` a row, or get back the text already held under its key); ``finish`` syncs it and renames it into
    place, so the pack at that name is always whole. Rows stay on disk. A pack that cannot be written (a full
    disk, a read-only folder) or a write stopped midway (Ctrl-C) leaves no half pack and removes nothing."""

    def __init__(self, folder: Path):
        self.folder = Path(folder)
        self.tmp = self.folder / f".{PACK}.{os.getpid()}.tmp"
        self.db = None
        with self.failing():
            self.folder.mkdir(parents=True, exist_ok=True)
            self.tmp.unlink(missing_ok=True)
            self.db = sqlite3.connect(self.tmp)
            self.db.execute("PRAGMA journal_mode = OFF")
            self.db.execute(SCHEMA)
        self.added = 0

    @contextmanager
    def failing(self):
        """Any error inside: the temporary pack removed; sqlite's and the disk's as a PackError."""
        try:
            yield
        except (sqlite3.Error, OSError) as err:
            self.abandon()
            raise PackError(f"{self.folder}: the pack could not be written ({err}); its loose answers are "
                            "untouched") from None
        except BaseException:
            self.abandon()
            raise

    def add(self, key: str, mtime: float, body: str) -> str | None:
        """None when the row was added; else the body already held under ``key`` (nothing written)."""
        with self.failing():
            held = self.db.execute("SELECT body FROM answers WHERE key = ?", (key,)).fetchone()
            if held is not None:
                return held[0]
            self.db.execute("INSERT INTO answers VALUES (?, ?, ?)", (key, mtime, body))
        self.added += 1
        return None

    def finish(self) -> Path:
        with self.failing():
            self.db.commit()
            self.db.close()
            with open(self.tmp, "rb") as fh:
                os.fsync(fh.fileno())
            os.replace(self.tmp, self.folder / PACK)
        return self.folder / PACK

    def abandon(self) -> None:
        if self.db is not None:
            self.db.close()
        self.tmp.unlink(missing_ok=True)


def pack(folder: Path, timeout: float = 60.0) -> tuple[int, int]:
    """Move ``folder``'s loose answers into its pack (the old pack's rows kept, a loose answer winning over a
    packed one of its key); returns (answers in the pack, loose files removed). Two packings of one folder
    take turns (``cache/.pack.lock``: each new pack holds what the one before it removed)."""
    folder = Path(folder)
    holder = f"gavel cache pack, pid {os.getpid()}"
    with hold(folder / ".pack.lock", timeout, holder, f"answer cache: {folder}"):
        return _pack(folder)


def _pack(folder: Path) -> tuple[int, int]:
    old = open_pack(folder / PACK) if os.path.lexists(folder / PACK) else None

    def loose_rows():
        for key, path in loose(folder):
            read = _read_loose(path)
            if read is not None:
                yield key, read[0], read[1]
    try:
        n = write(folder, old.rows() if old else (), loose_rows())
    finally:
        if old:
            old.close()
    # a loose file goes only where the new pack holds it as it is now (its time and size: a rewrite since
    # the listing stays loose); read from the pack, so nothing of the listing is kept meanwhile
    removed, new = 0, open_pack(folder / PACK)
    try:
        for key, path in loose(folder):
            try:
                info = os.lstat(path)
            except FileNotFoundError:
                continue
            row = new.db.execute("SELECT mtime, length(CAST(body AS BLOB)) FROM answers WHERE key = ?",
                                 (key,)).fetchone()
            if stat.S_ISREG(info.st_mode) and row is not None and tuple(row) == (info.st_mtime, info.st_size):
                path.unlink(missing_ok=True)
                removed += 1
    finally:
        new.close()
    for sub in os.scandir(folder):
        if SUBDIR.fullmatch(sub.name) and sub.is_dir(follow_symlinks=False):
            try:
                os.rmdir(sub.path)
            except OSError:
                pass  # not empty
    return n, removed


def answers(folder: Path) -> Iterator[tuple[str, str]]:
    """(key, JSON text) of every answer of a cache folder, each key once (a loose file over its packed row); a
    loose file that cannot be read is left out, as the cache's own reading would refuse it."""
    folder = Path(folder)
    for key, path in loose(folder):
        read = _read_loose(path)
        if read is not None:
            yield key, read[1]
    if os.path.lexists(folder / PACK):
        p = open_pack(folder / PACK)
        try:  # a packed answer once, where no loose file of its key was there to read
            yield from ((k, text) for k, _, text in p.rows()
                        if not os.path.lexists(folder / k[-2:] / f"{k}.json"))
        finally:
            p.close()


def any_answer(folder: Path) -> bool:
    """Whether the cache folder holds an answer, loose or packed."""
    folder = Path(folder)
    return any(folder.glob("*/*.json")) or os.path.lexists(folder / PACK)


def caches(root: Path) -> list[Path]:
    """The stage cache folders under ``root`` (a run folder, a stage's workdir or a cache folder itself)."""
    root = Path(root)
    if root.name == "cache":
        return [root]
    return sorted(p for p in root.rglob("cache") if p.is_dir() and not p.is_symlink())


def add_parser(sub) -> None:
    p = sub.add_parser("cache", help="pack a run's cached answers into one file per stage (gavel.llm.packs)")
    p.add_argument("action", choices=["pack"])
    p.add_argument("folders", nargs="+", help="run folders, stage workdirs or cache folders")
    p.set_defaults(func=cmd_cache)


def cmd_cache(args: argparse.Namespace) -> int:
    found = [c for f in args.folders for c in caches(Path(f))]
    if not found:
        raise PackError(f"no stage cache folder under {', '.join(args.folders)}")
    for folder in found:
        n, removed = pack(folder)
        size = (folder / PACK).stat().st_size
        print(f"{folder}: {n} answers in {PACK} ({size / 1e6:.1f} MB); {removed} loose files removed", flush=True)
    return 0
