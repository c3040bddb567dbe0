"""The one reader of JSONL text (requests, batch results, summaries, ledgers, the annotation export).

Lines end at a newline (``\n`` or ``\r\n``; nothing else, so a string may hold U+2028 or U+0085 as
written). Blank lines are skipped; every other line is a JSON value. :func:`scan` returns what could be read and names
every line that could not (one bad line costs only itself); :func:`read` refuses the whole text at the first
bad line, naming it. Either way the caller decides what a bad line means; nothing is dropped silently.
"""

from __future__ import annotations

import json
import os
import stat
from dataclasses import dataclass
from pathlib import Path

#: what a JSON value nested deeper than Python's parser can follow is called (json.loads raises RecursionError)
TOO_DEEP = "JSON nested too deeply to read"


class JSONLError(ValueError):
    """A line that is not JSON, named by where it came from and its line number."""


@dataclass(frozen=True)
class Line:
    number: int   # 1-based line number
    text: str     # the line as written (without its line end)
    value: object = None
    problem: str = ""  # empty when the line was read

    @property
    def ok(self) -> bool:
        return not self.problem


def scan(text: str, where: str) -> list[Line]:
    """Every non-blank line of ``text``, read or with its problem (``where, line N: not JSON (...)``)."""
    out = []
    # lines end at "\n" (and "\r\n") only: str.splitlines would also split at U+2028, U+0085, \x1c..., which
    # json.dumps(ensure_ascii=False) writes as they are inside strings
    for n, line in enumerate(text.split("\n"), 1):
        line = line.removesuffix("\r")
        if not line.strip():
            continue
        try:
            out.append(Line(n, line, json.loads(line)))
        except json.JSONDecodeError as err:
            out.append(Line(n, line, problem=f"{where}, line {n}: not JSON ({err})"))
        except RecursionError:
            out.append(Line(n, line, problem=f"{where}, line {n}: {TOO_DEEP}"))
    return out


def read(text: str, where: str) -> list[Line]:
    """Every non-blank line of ``text``, read; JSONLError naming the first line that is not JSON."""
    lines = scan(text, where)
    for line in lines:
        if not line.ok:
            raise JSONLError(line.problem)
    return lines


def document(text: str, where: str):
    """One JSON document (a whole file); JSONLError naming ``where`` when it is not JSON or nested too deeply."""
    try:
        return json.loads(text)
    except json.JSONDecodeError as err:
        raise JSONLError(f"{where}: not JSON ({err})") from None
    except RecursionError:
        raise JSONLError(f"{where}: {TOO_DEEP}") from None


#: the largest input file read whole (requests, summaries: 100,000 summaries of 5,000 characters are ~500 MB)
MAX_FILE_BYTES = 4 * 2**30


def file_bytes(path: str | Path, limit: int = MAX_FILE_BYTES, where: str | None = None, pipes: bool = True) -> bytes:
    """A file's bytes: opened, then checked a file (or a pipe, ``<(...)`` from a shell, where ``pipes``; a file
    in someone else's folder is opened without waiting on a FIFO and a FIFO refused), never a device or socket
    (``/dev/zero`` was read until memory ran out), at most ``limit`` bytes; JSONLError naming it (``where``,
    default its path) otherwise."""
    name = where or path
    flags = os.O_RDONLY | os.O_CLOEXEC | (0 if pipes else os.O_NONBLOCK)
    try:
        with os.fdopen(os.open(path, flags), "rb") as fh:
            mode = os.fstat(fh.fileno()).st_mode
            if not (stat.S_ISREG(mode) or (pipes and stat.S_ISFIFO(mode))):
                raise JSONLError(f"{name}: not a file or a pipe (a device or socket); not read" if pipes else
                                 f"{name}: not a regular file (a device, socket or FIFO); not read")
            data = _read_at_most(fh, limit, os.fstat(fh.fileno()).st_size if stat.S_ISREG(mode) else 0)
    except OSError as err:
        raise JSONLError(f"{name}: cannot read ({err.strerror or err})") from None
    if len(data) > limit:
        raise JSONLError(f"{name}: larger than {limit:,} bytes; not read (split it into several files)")
    return data


#: bytes asked of a pipe at a time (and of a file past the size it had when opened)
READ_STEP = 1 << 20


def _read_at_most(fh, limit: int, size: int) -> bytes:
    """Up to ``limit + 1`` bytes of ``fh`` (one more tells a file over the limit), asked for in steps: a file
    its size at once, a pipe ``READ_STEP`` at a time. Never ``read(limit + 1)`` in one call: Python sets aside
    the whole count before reading (4 GiB for a 100-byte file), which fails under a memory cap."""
    parts, got, step = [], 0, (size + 1 if size else READ_STEP)
    while got <= limit:
        chunk = fh.read(min(step, limit + 1 - got))
        if not chunk:
            break
        parts.append(chunk)
        got, step = got + len(chunk), READ_STEP
    return parts[0] if len(parts) == 1 else b"".join(parts)


def file_text(path: str | Path, **kw) -> str:
    """The UTF-8 text of :func:`file_bytes`; JSONLError naming the file and the first byte that is not UTF-8."""
    data = file_bytes(path, **kw)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as err:
        raise JSONLError(f"{kw.get('where') or path}: not UTF-8 text (byte 0x{data[err.start]:02x} at offset "
                         f"{err.start}); save it as UTF-8") from None


def read_file(path: str | Path) -> list[Line]:
    """:func:`read` of a UTF-8 file (:func:`file_text`), named by its path."""
    return read(file_text(path), str(path))
