"""CSV that a spreadsheet can open safely: a text cell that a spreadsheet would read as a formula (starting
with ``=``, ``+``, ``-``, ``@``, a tab or a carriage return; user names such as ``+A1``, model output such as
``=HYPERLINK(...)``) is written with a leading ``'``, which spreadsheets show as text. Numbers are never
altered: numeric cells, and text that is a plain number (``-3``, ``+0.5``, ``-1e-3``), are written as they are.
Every CSV that holds text from users or models goes through :func:`safe_cell` (or :func:`csv_text`)."""

from __future__ import annotations

import re

import pandas as pd

FORMULA_START = ("=", "+", "-", "@", "\t", "\r")
_NUMBER = re.compile(r"[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?")


def safe_cell(value):
    """``value`` as a spreadsheet should see it: a text a spreadsheet would run as a formula gets a leading
    ``'``; anything else (numbers, None, other text) is returned unchanged."""
    if isinstance(value, str) and value.startswith(FORMULA_START) and not _NUMBER.fullmatch(value):
        return "'" + value
    return value


def safe_frame(df: pd.DataFrame) -> pd.DataFrame:
    """A copy of ``df`` whose text cells (and column names) pass through :func:`safe_cell`."""
    out = df.copy()
    for col in out.columns:
        if out[col].dtype == object or pd.api.types.is_string_dtype(out[col]):
            out[col] = out[col].map(safe_cell)
    out.columns = [safe_cell(c) for c in out.columns]
    return out


def csv_text(df: pd.DataFrame) -> str:
    """``df`` as CSV text (no index), formula cells neutralised."""
    return safe_frame(df).to_csv(index=False)
