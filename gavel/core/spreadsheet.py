"""CSV that a spreadsheet can open safely, and that gavel reads back unchanged.

A text cell that a spreadsheet would read as a formula (starting with ``=``, ``+``, ``-``, ``@``, a tab or a
carriage return; user names such as ``+A1``, model output such as ``=HYPERLINK(...)``) is written with a
leading ``'``, which spreadsheets show as text. So that the encoding can be undone, a text that itself starts
with ``'`` gets one more. Numbers are never altered: numeric cells, and text that is a plain number (``-3``,
``+0.5``, ``-1e-3``), are written as they are.

Every CSV gavel writes (a run's tables, the ledger's cost tables, the result tables, the annotation export)
goes through :func:`write_csv` (or :func:`csv_text`, :func:`safe_cell`), and every one gavel reads back goes
through :func:`read_csv`, which removes the one added ``'``: a value round-trips exactly."""

from __future__ import annotations

import csv
import re
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # pandas is imported where a frame is read (the command line starts without it)
    import pandas as pd

FORMULA_START = ("=", "+", "-", "@", "\t", "\r")
QUOTE = "'"
_NUMBER = re.compile(r"[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?")


def safe_cell(value):
    """``value`` as a spreadsheet should see it: a text a spreadsheet would run as a formula, or a text that
    starts with ``'``, gets a leading ``'``; anything else (numbers, None, other text) is returned unchanged."""
    if isinstance(value, str) and (value.startswith(QUOTE) or
                                   (value.startswith(FORMULA_START) and not _NUMBER.fullmatch(value))):
        return QUOTE + value
    return value


def plain_cell(value):
    """The inverse of :func:`safe_cell`: a text starting with ``'`` loses that one ``'``."""
    if isinstance(value, str) and value.startswith(QUOTE):
        return value[1:]
    return value


def _text_columns(df: pd.DataFrame) -> list:
    import pandas as pd

    return [c for c in df.columns if df[c].dtype == object or pd.api.types.is_string_dtype(df[c])]


def safe_frame(df: pd.DataFrame) -> pd.DataFrame:
    """A copy of ``df`` whose text cells (and column names) pass through :func:`safe_cell`."""
    out = df.copy()
    for col in _text_columns(out):
        out[col] = out[col].map(safe_cell)
    out.columns = [safe_cell(c) for c in out.columns]
    return out


def plain_frame(df: pd.DataFrame) -> pd.DataFrame:
    """``df`` (in place, and returned) with :func:`plain_cell` undone on its text cells and column names."""
    for col in _text_columns(df):
        if df[col].map(lambda v: isinstance(v, str) and v.startswith(QUOTE)).any():
            df[col] = df[col].map(plain_cell)
    df.columns = [plain_cell(c) for c in df.columns]
    return df


def csv_text(df: pd.DataFrame) -> str:
    """``df`` as CSV text (no index), formula cells neutralised."""
    return safe_frame(df).to_csv(index=False)


def write_csv(df: pd.DataFrame, path, **kw) -> Path:
    """``df`` written to ``path`` as CSV (no index unless ``index=True`` is given), formula cells neutralised;
    other keywords go to ``DataFrame.to_csv``. A table with a carriage return in a text cell is written with
    every text cell quoted (``csv.QUOTE_NONNUMERIC``): unquoted, a bare CR would split the row when read back."""
    kw.setdefault("index", False)
    frame = safe_frame(df)
    if "quoting" not in kw and _has_cr(frame):  # a bare CR would end the row (pandas quotes only for "\n")
        kw["quoting"] = csv.QUOTE_NONNUMERIC
    if kw["index"]:
        frame.index = frame.index.map(safe_cell)
        frame.index.name = safe_cell(df.index.name)
    frame.to_csv(path, **kw)
    return Path(path)


def _has_cr(df: pd.DataFrame) -> bool:
    return any("\r" in str(c) for c in df.columns) or any(
        df[c].map(lambda v: isinstance(v, str) and "\r" in v).any() for c in _text_columns(df))


#: the only cell read as missing: an empty one (what ``write_csv`` writes for None and NaN). pandas' own list
#: (``null``, ``nan``, ``NA``, ``#N/A``, ``None``, ...) would turn a value a model wrote as such into a blank
MISSING = ("",)


def read_csv(path, **kw) -> pd.DataFrame:
    """A CSV that :func:`write_csv` wrote, read with ``pandas.read_csv(path, **kw)``, the neutralisation undone.
    Only an empty cell is missing (``MISSING``): a text ``null``, ``nan`` or ``#N/A`` reads back as that text
    (give ``keep_default_na``/``na_values`` to read otherwise)."""
    import pandas as pd

    if "keep_default_na" not in kw and "na_values" not in kw:
        kw.update(keep_default_na=False, na_values=list(MISSING))
    if isinstance(kw.get("index_col"), str):  # column names are given as gavel wrote them, not as stored
        kw["index_col"] = safe_cell(kw["index_col"])
    if isinstance(kw.get("dtype"), dict):
        kw["dtype"] = {safe_cell(k): v for k, v in kw["dtype"].items()}
    df = plain_frame(pd.read_csv(path, **kw))
    if not pd.api.types.is_numeric_dtype(df.index):
        df.index = df.index.map(plain_cell)
    df.index.name = plain_cell(df.index.name)
    return df


def join_csv(parts, path) -> Path:
    """The CSV files ``parts`` (each written by :func:`write_csv`, each with its header) as one CSV at ``path``,
    row by row, never a whole part in memory: its columns are every part's, in the order they first appear; a
    part lacking a column leaves its cells empty (what :func:`write_csv` writes for a missing value). A part
    with no header at all (a table without columns) adds nothing. Cells are copied as written (quoted where a
    text holds a delimiter, a quote or a line break)."""
    headers = []
    for part in parts:
        with open(part, newline="", encoding="utf-8") as fh:
            header = next(csv.reader(fh), [])
        headers.append([] if header == [""] else header)
    columns = list(dict.fromkeys(c for h in headers for c in h))
    with open(path, "w", newline="", encoding="utf-8") as out:
        writer = csv.writer(out, lineterminator="\n")
        quoted = csv.writer(out, lineterminator="\n", quoting=csv.QUOTE_ALL)  # a bare CR ends no row when quoted
        writer.writerow(columns) if columns else out.write("\n")
        for part, header in zip(parts, headers):
            if not header:
                continue
            where = [header.index(c) if c in header else None for c in columns]
            with open(part, newline="", encoding="utf-8") as fh:
                rows = csv.reader(fh)
                next(rows)
                for row in rows:
                    cells = ["" if i is None else row[i] for i in where]
                    (quoted if any("\r" in c for c in cells) else writer).writerow(cells)
    return Path(path)
