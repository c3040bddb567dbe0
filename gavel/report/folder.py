"""Reading a run folder someone else made (``gavel report RUN``): only regular files inside the folder, each of
bounded size, and every cell the report uses checked before it is used (docs/hardening.md, "A run folder
from someone else").

A run folder is data from someone else, like model output: a file in it may be a link to ``../.env``, a FIFO or
``/dev/zero``; a cell may hold ``inf``, a number of 999 digits or brackets nested 100,000 deep. Each such thing
ends the report in one :class:`ReportInputError` naming the file (and the row), before anything of it reaches
the page. Nothing outside the folder is read: the checklist a run used is its own copy (``checklist.yaml``,
written by ``gavel evaluate``), never the file ``evaluation.json`` names.
"""

from __future__ import annotations

import ast
import errno
import io
import json
import math
import os
import stat
from pathlib import Path

import pandas as pd

from gavel.core import items as gitems
from gavel.ref.tables import TABLES, read_table
from gavel.runs.pipeline import CHECKLIST_FILE

#: the largest file of a run folder read: a table or texts.jsonl (a run of 12 models x 100 cases writes a
#: values.csv of ~40 MB), a cached answer, evaluation.json and checklist.yaml
MAX_TABLE_BYTES = 512 * 2**20
MAX_ANSWER_BYTES = 16 * 2**20
MAX_SMALL_BYTES = 2**20
#: the longest list cell read (characters) and how deep its brackets may nest (gavel writes at most 2 levels)
MAX_CELL_CHARS = 1_000_000
MAX_CELL_DEPTH = 8


class ReportInputError(ValueError):
    """A folder that is not an evaluation output, or a file or cell in it that cannot be read: names the file
    (and row)."""


# ---------- files ----------
class Opened(type(Path())):
    """A run folder's file as :func:`regular_file` opened it once: the path (for messages), the bytes read from
    that one descriptor (``data``) and what ``fstat`` said of it (``info``; :meth:`stat` returns it). Nothing
    reads the path again."""

    data: bytes = b""
    info: os.stat_result | None = None

    def stat(self, *, follow_symlinks: bool = True) -> os.stat_result:  # noqa: ARG002 - the one fstat
        return self.info


_DIR = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_FILE = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC


def regular_file(folder: Path, name: str | Path, limit: int = MAX_TABLE_BYTES) -> Opened | None:
    """``folder/name`` opened once (None if it is not there) and checked on the descriptor that was opened:
    no link anywhere below ``folder`` (``O_NOFOLLOW`` on every part of ``name``), a regular file (a FIFO is
    opened non-blocking, so it cannot hang), still the file its name in the folder is and that name its only
    one (``st_nlink == 1``: a hard link could be a ``.env`` from anywhere), at most ``limit`` bytes; its bytes are read from that same descriptor. Anything
    else raises :class:`ReportInputError` in one line, before a byte of it is read."""
    path = folder / name
    parts = Path(name).parts
    if not parts or Path(name).is_absolute() or ".." in parts:
        raise ReportInputError(f"{path}: not a file inside the run folder; not read")
    opened: list[int] = []
    try:
        try:
            where = os.open(folder, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)  # the folder named: as given
            opened.append(where)
            for part in parts[:-1]:
                where = os.open(part, _DIR, dir_fd=where)
                opened.append(where)
            fd = os.open(parts[-1], _FILE, dir_fd=where)
        except FileNotFoundError:
            return None
        except OSError as err:
            if err.errno in (errno.ELOOP, errno.ENOTDIR, errno.EMLINK):
                raise ReportInputError(_link_problem(folder, path, err)) from None
            if err.errno == errno.ENXIO:  # a socket
                raise ReportInputError(f"{path}: not a regular file (a folder, FIFO or device); not read") from None
            raise ReportInputError(f"{path}: cannot be read ({err.strerror or err})") from None
        with os.fdopen(fd, "rb", buffering=0) as f:
            info = os.fstat(f.fileno())
            if not stat.S_ISREG(info.st_mode):
                raise ReportInputError(f"{path}: not a regular file (a folder, FIFO or device); not read")
            # the name, looked at once more in the folder already opened: still this file, and (in the same
            # look) its only name -- an fstat's count alone can be 1 after the folder's name was swapped away
            try:
                named = os.stat(parts[-1], dir_fd=where, follow_symlinks=False)
            except OSError:
                named = None
            if named is None or (named.st_dev, named.st_ino) != (info.st_dev, info.st_ino):
                raise ReportInputError(f"{path}: replaced by another file while it was opened; not read")
            if named.st_nlink != 1:
                raise ReportInputError(f"{path}: a file with {named.st_nlink} names (a hard link, which may be a "
                                       f"file from outside the run folder); not read (a run folder holds its own "
                                       f"files)")
            if info.st_size > limit:
                raise ReportInputError(f"{path}: {info.st_size:,} bytes, over the limit of {limit:,} for this "
                                       f"file; not read")
            try:
                data = _read_all(f, limit + 1)
            except OSError as err:
                raise ReportInputError(f"{path}: cannot be read ({err.strerror or err})") from None
    finally:
        for d in opened:
            os.close(d)
    if len(data) > limit:
        raise ReportInputError(f"{path}: over the limit of {limit:,} bytes for this file; not read")
    out = Opened(path)
    out.data, out.info = data, info
    return out


def _read_all(f, most: int) -> bytes:
    chunks, size = [], 0
    while size < most:
        chunk = f.read(min(most - size, 2**24))
        if not chunk:
            break
        chunks.append(chunk)
        size += len(chunk)
    return b"".join(chunks)


def _link_problem(folder: Path, path: Path, err: OSError) -> str:
    """The line for a link met on the way to ``path`` (where it leads is looked up for the message only)."""
    way = [path, *path.relative_to(folder).parents][:-1]
    if not any(os.path.islink(folder / p) for p in way):
        return f"{path}: cannot be read ({err.strerror or err})"
    try:
        real = path.resolve(strict=True)
    except (OSError, RuntimeError):  # a link to nothing, or a loop of links
        return f"{path}: a link to nothing (or a loop of links); not read"
    if not real.is_relative_to(folder.resolve()):
        return f"{path}: a link leading out of the run folder; not read (a run folder holds its own files)"
    return (f"{path}: a link (to {real.relative_to(folder.resolve())} inside the run folder); not read (a run "
            f"folder holds its own files: copy it with `cp -rL`)")


def read_text(path: Opened, limit: int) -> str:
    """The UTF-8 text of a file :func:`regular_file` opened (its bytes as read then; ``limit`` is checked
    there)."""
    data = path.data
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as err:
        raise ReportInputError(f"{path}: not UTF-8 text (byte 0x{data[err.start]:02x} at offset {err.start})") from None


def _finite(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise ValueError(f"the number {text[:20]}{'...' if len(text) > 20 else ''} is out of range")
    return value


def _no_constant(name: str):
    raise ValueError(f"{name} is not a number")


def json_value(text: str, where: str):
    """A JSON document of a run folder: no NaN, Infinity or number out of range (the page holds strict JSON)."""
    try:
        return json.loads(text, parse_float=_finite, parse_constant=_no_constant)
    except RecursionError:
        raise ReportInputError(f"{where}: JSON nested too deeply to read") from None
    except ValueError as err:  # json.JSONDecodeError included
        raise ReportInputError(f"{where}: not JSON that a report can show ({err})") from None


def json_file(folder: Path, name: str | Path, limit: int | None = None):
    """The JSON document ``folder/name`` (None if it is not there), read by :func:`regular_file` rules
    (at most ``limit`` bytes, else ``MAX_SMALL_BYTES``)."""
    limit = limit or MAX_SMALL_BYTES
    path = regular_file(folder, name, limit)
    return None if path is None else json_value(read_text(path, limit), str(path))


def tables(folder: Path) -> dict[str, pd.DataFrame]:
    """The run's tables (``gavel.ref.tables.TABLES``), each file checked by :func:`regular_file` first; the
    ``TEXT`` columns read as the text they are (an empty cell missing), the others by pandas' inference
    (:func:`check` then refuses a number that is not finite). Read by inference, a text column holding one
    ``inf`` among empty cells became a float column holding infinity, and a case id written ``007`` the
    number 7."""
    out = {}
    for name in TABLES:
        path = regular_file(folder, f"{name}.csv")
        if path is not None:
            out[name] = table(path, dtype=dict.fromkeys(TEXT, str))
    return out


def table(path: Opened, **kw) -> pd.DataFrame:
    """One CSV table of the run, from the bytes :func:`regular_file` read."""
    try:
        return read_table(io.BytesIO(path.data)) if not kw else _read(io.BytesIO(path.data), **kw)
    except (pd.errors.ParserError, UnicodeDecodeError, ValueError, OverflowError) as err:
        raise ReportInputError(f"{path}: cannot be read as a table ({str(err).splitlines()[0][:200]})") from None


def _read(path, **kw) -> pd.DataFrame:
    from gavel.core.spreadsheet import read_csv

    try:
        return read_csv(path, **kw)
    except pd.errors.EmptyDataError:
        return pd.DataFrame()


# ---------- cells ----------
#: per table: the columns the report reads, which of them hold numbers, and which hold lists
COLUMNS = {
    "compare": ("subject", "case_id", "item", "gate", "score", "status"),
    "scores": ("subject", "case_id", "s_checklist", "s_residual", "s_style", "s_gavel_ref"),
    "values": ("subject", "case_id", "item", "index", "value", "evidence", "evidence_spans", "evidence_grounding"),
    "answers": ("stage", "subject", "case_id", "round", "custom_id", "status", "detail"),
    "residual": ("subject", "case_id", "spans", "r"),
    "residual_facts": ("subject", "case_id", "index", "fact", "evidence_spans"),
    "residual_match": ("subject", "case_id", "gate", "score", "status"),
    "style": ("subject", "case_id", "status"),
}
NUMBERS = {"compare": ("score", "n_model", "n_reference"),
           "scores": ("s_checklist", "s_residual", "s_style", "s_gavel_ref", "s_checklist_low", "s_checklist_high",
                      "r_own", "r_reference", "unusable_items"),
           "values": ("index",), "answers": ("round", "input_tokens", "output_tokens"), "residual": ("r",),
           "residual_facts": ("index",), "residual_match": ("score",),
           "style": ("s_style", "readability_jargon", "narrative_order", "sentence_structure", "formatting_layout",
                     "citation_style")}
#: the columns of text in any of the run's tables (what `gavel evaluate` writes), never read as numbers
TEXT = ("checklist", "subject", "case_id", "item", "stage", "status", "gate", "custom_id", "value", "relation",
        "detail", "problems", "problem", "finish_reason", "answer_ab", "fact", "label", "interval_levels")
#: the key cells no row of any table leaves empty, and per table the others its rows always have (a comparison
#: and a value are of an item; an answer of the residual or style stage is of none)
KEYS = ("subject", "case_id", "stage", "status")
KEYED = {"compare": ("item",), "values": ("item",)}
#: list cells: (column, what each element is) -- "span": [start, end] character offsets, "text", "any"
LISTS = {"compare": (("pairs", "any"),), "values": (("evidence", "text"), ("evidence_spans", "span"),
                                                     ("evidence_grounding", "any")),
         "residual": (("spans", "span"),), "residual_facts": (("evidence_spans", "any"),),
         "residual_match": (("pairs", "any"),)}


def check(folder: Path, frames: dict[str, pd.DataFrame]) -> None:
    """Every cell the report reads of the run's tables, checked (in place: list cells become lists): the
    columns are there, numbers are finite numbers, list cells are lists of what they should hold. The first
    bad one raises :class:`ReportInputError` naming the file, the row (1 = the first under the header) and
    the column."""
    for name, frame in frames.items():
        path = folder / f"{name}.csv"
        if not len(frame.columns) and name in COLUMNS and name not in ("residual", "residual_facts",
                                                                      "residual_match", "style"):
            continue  # an empty table: nothing extracted (every request failed)
        missing = [c for c in COLUMNS.get(name, ()) if c not in frame.columns and len(frame.columns)]
        if missing:
            raise ReportInputError(f"{path}: no {', '.join(f'`{c}`' for c in missing)} column (not the table "
                                   f"`gavel evaluate` writes)")
        for col in NUMBERS.get(name, ()):
            if col in frame.columns:
                frame[col] = numbers(frame[col], path, col)
        for col, kind in LISTS.get(name, ()):
            if col in frame.columns:
                frame[col] = [list_cell(v, kind, path, n, col) for n, v in enumerate(frame[col], 1)]
        for col in frame.columns:  # a column pandas read as numbers (one not named above): finite numbers
            if col not in NUMBERS.get(name, ()) and pd.api.types.is_float_dtype(frame[col]):
                numbers(frame[col], path, col)
        needed = KEYS + KEYED.get(name, ())
        for col in ("subject", "case_id", "item", "stage", "status", "gate"):
            if col in frame.columns:
                frame[col] = [_label(v, path, n, col, col in needed) for n, v in enumerate(frame[col], 1)]


def numbers(column: pd.Series, path: Path, col: str) -> pd.Series:
    """A column of numbers (empty cells missing): a cell that is no finite number names its row."""
    out = pd.to_numeric(column, errors="coerce")
    bad = (column.notna() & out.isna()) | out.isin([math.inf, -math.inf])
    if bad.any():
        n = int(bad.to_numpy().nonzero()[0][0])
        raise ReportInputError(f"{path}, row {n + 1}: `{col}` is {_shown(column.iloc[n])}, not a finite number")
    return out


def _label(value, path: Path, n: int, col: str, needed: bool):
    """A key cell (subject, case, item, stage, status, gate): text, or a number written as text; an empty one
    is None where the cell may be empty (not ``needed``), else refused naming its row."""
    if isinstance(value, float) and not math.isfinite(value):
        if math.isnan(value) and not needed:
            return None
        raise ReportInputError(f"{path}, row {n}: `{col}` is {'empty' if math.isnan(value) else value}")
    if hasattr(value, "item") and not isinstance(value, str):
        value = value.item()
    return value if isinstance(value, str) or value is None else str(value)


def _shown(value) -> str:
    text = str(value)
    return repr(text[:40] + ("..." if len(text) > 40 else ""))


def list_cell(value, kind: str, path: Path, n: int, col: str):
    """A list written into a cell (Python's or JSON's spelling), checked: its size, its depth, its elements
    (``kind``); an empty cell is None."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return None
    where = f"{path}, row {n}: `{col}`"
    if not isinstance(value, str):
        raise ReportInputError(f"{where} is {_shown(value)}, not a list")
    if len(value) > MAX_CELL_CHARS:
        raise ReportInputError(f"{where} holds {len(value):,} characters, over the limit of {MAX_CELL_CHARS:,}")
    if _depth(value) > MAX_CELL_DEPTH:
        raise ReportInputError(f"{where} nests brackets deeper than {MAX_CELL_DEPTH} levels; not read")
    try:
        parsed = ast.literal_eval(value)
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        try:
            parsed = json_value(value, where)
        except ReportInputError:
            raise ReportInputError(f"{where} is {_shown(value)}, not a list") from None
    if not isinstance(parsed, (list, tuple)):
        raise ReportInputError(f"{where} is {_shown(value)}, not a list")
    parsed = list(parsed)
    for element in parsed:
        why = _element_problem(element, kind)
        if why:
            raise ReportInputError(f"{where}: {why}")
    return parsed


def _depth(text: str) -> int:
    """How deep brackets nest in ``text`` outside quoted strings (an upper bound where quotes are odd)."""
    opening = text.count("[") + text.count("(") + text.count("{")
    if opening <= MAX_CELL_DEPTH:  # cannot nest deeper than it opens (most cells: no scan)
        return opening
    depth = deepest = 0
    quote = None
    escaped = False
    for ch in text:
        if quote:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == quote:
                quote = None
        elif ch in "'\"":
            quote = ch
        elif ch in "[({":
            depth += 1
            deepest = max(deepest, depth)
        elif ch in "])}":
            depth -= 1
    return deepest


def _plain(value, depth: int = 0) -> bool:
    """JSON-ready: text, finite numbers, booleans, None, and lists and dicts of them."""
    if value is None or isinstance(value, (str, bool, int)):
        return not isinstance(value, int) or abs(value) < 2**63
    if isinstance(value, float):
        return math.isfinite(value)
    if isinstance(value, (list, tuple)):
        return all(_plain(v, depth + 1) for v in value)
    if isinstance(value, dict):
        return all(isinstance(k, str) and _plain(v, depth + 1) for k, v in value.items())
    return False


def _element_problem(element, kind: str) -> str | None:
    if kind == "text":
        return None if element is None or isinstance(element, str) else f"holds {_shown(element)}, not text"
    if kind == "span":
        if element is None:
            return None
        ok = isinstance(element, (list, tuple)) and len(element) == 2 and all(
            isinstance(x, int) and not isinstance(x, bool) and 0 <= x < 2**53 for x in element) \
            and element[0] <= element[1]
        return None if ok else f"holds {_shown(element)}, not a span [start, end] of character offsets"
    return None if _plain(element) else f"holds {_shown(element)}, which is not text, a finite number or a list"


# ---------- the checklist ----------
def checklist(folder: Path, manifest: dict) -> tuple[gitems.Checklist, list[str]]:
    """The checklist the run used, from the folder's own ``checklist.yaml``; a run made before runs carried
    it: the packaged checklist of the name ``evaluation.json`` gives when its content is the same, else the
    default (item keys may then show as they are), with a note. Never a file outside the folder."""
    path = regular_file(folder, CHECKLIST_FILE, MAX_SMALL_BYTES)
    recorded = manifest.get("checklist") if isinstance(manifest.get("checklist"), dict) else {}
    if path is not None:
        try:  # the strict loader of every checklist file: no aliases, no tags, bounded nesting
            found = gitems.from_text(read_text(path, MAX_SMALL_BYTES), str(path))
        except gitems.ChecklistError as err:
            raise ReportInputError(str(err)) from None
        except (TypeError, ValueError, AttributeError, RecursionError) as err:
            raise ReportInputError(f"{path}: not a checklist ({err})") from None
        if recorded.get("fingerprint") and recorded["fingerprint"] != found.fingerprint:
            raise ReportInputError(f"{path}: not the checklist this run was evaluated with (evaluation.json "
                                   f"records content {recorded['fingerprint']}, the file has {found.fingerprint})")
        return found, []
    name = recorded.get("name")
    if isinstance(name, str) and name in gitems.packaged():
        packaged = gitems.load(name)
        if not recorded.get("fingerprint") or recorded["fingerprint"] == packaged.fingerprint:
            return packaged, []
    if not name or name == gitems.default().name and not recorded.get("fingerprint"):
        return gitems.default(), []
    return gitems.default(), [f"This run folder has no {CHECKLIST_FILE} (written by `gavel evaluate` since "
                              f"issue 37), and its checklist {str(name)[:80]!r} is not a packaged one: item names "
                              f"are those of the default checklist, or the item keys."]
