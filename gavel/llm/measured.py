"""Measured usage a request, for an estimate that has something better than the output cap: a stage's own
answers in its cache (the run's first round), or earlier runs' ledgers (``cost.csv``, ``cost_all_repeats.csv``)
for the same stage and model (``gavel evaluate --dry-run --usage-from RUN``).

A ledger is a file someone else may have written: every record is read as text and checked (a count is a whole
number of tokens from 0 to ``prices.MAX_TOKENS`` a request; reasoning is part of output); a record that fails is
skipped and said (``Measured.skipped``), never summed, and nothing else is lost. A file that cannot be read is
one skipped note too. docs/cost.md, section 3.
"""

from __future__ import annotations

import json
import math
import os
import stat
from dataclasses import dataclass, field
from pathlib import Path

from gavel.core import prices

from . import packs

#: the most records read from one ledger (a ledger gavel writes has one line per stage, model, mode and row)
MAX_RECORDS = 100_000
#: the most bytes read from one ledger
MAX_BYTES = 20 * 2**20


@dataclass
class Measured:
    """What a stage's answers used: requests, output tokens (reasoning included, as every provider bills
    it), and the reasoning tokens of the requests that reported them."""

    requests: int = 0
    output: float = 0.0
    reasoning: float = 0.0
    reasoning_requests: int = 0
    source: str = ""
    skipped: list = field(default_factory=list)
    usd: float = 0.0  # what the requests counted by :func:`count` cost (the priced ones)
    priced: int = 0

    @property
    def output_mean(self) -> float | None:
        return self.output / self.requests if self.requests else None

    @property
    def reasoning_share(self) -> float | None:
        """Reasoning's share of the output of the requests that reported reasoning (None: none did)."""
        if not self.reasoning_requests or not self.requests:
            return None
        out_of_those = self.output * self.reasoning_requests / self.requests
        return min(1.0, self.reasoning / out_of_those) if out_of_those > 0 else None

    def words(self) -> str:
        """``1,234 output tokens a request, 1,050 of them reasoning (85%), over 40 answers of <source>``."""
        share = self.reasoning_share
        said = (f", {self.reasoning / self.reasoning_requests:,.0f} of them hidden reasoning ({share:.0%})"
                if share is not None else ", reasoning not counted apart by the provider")
        return f"{self.output_mean:,.0f} output tokens a request{said}, over {self.requests:,} answers of {self.source}"


def _whole(value) -> int | None:
    """A token count: a whole number from 0 to MAX_TOKENS, or None."""
    if isinstance(value, bool):
        return None
    if isinstance(value, str):
        text = value.strip()
        if not text.isdigit() or len(text) > 12:
            return None
        value = int(text)
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    return value if isinstance(value, int) and 0 <= value <= prices.MAX_TOKENS else None


def of_cache(folder: str | Path, stage: str) -> Measured:
    """The answers of ``stage`` in a stage cache folder (``<workdir>/cache``): their reported output and
    reasoning (a damaged or implausible file is not a measurement)."""
    m = Measured(source=f"this stage's cache ({folder})")
    try:
        for _, text in packs.answers(Path(folder)):
            try:
                data = json.loads(text)
            except ValueError:
                continue
            if not isinstance(data, dict) or not isinstance(data.get("custom_id"), str) \
                    or data["custom_id"].rsplit("-", 1)[0] != stage[:23]:
                continue
            usage = data.get("usage") if isinstance(data.get("usage"), dict) else {}
            _add(m, _whole(data.get("output_tokens")), usage)
    except packs.PackError:
        pass  # a damaged pack is no measurement (the run's own reading names it)
    return m


def _add(m: Measured, out: int | None, usage: dict) -> bool:
    """Count one answer's output (a count, or nothing is counted) and its reasoning (where it is a part of it)."""
    if out is None:
        return False
    m.requests += 1
    m.output += out
    thought = _whole(usage.get("reasoning"))
    if thought is not None and thought <= out:
        m.reasoning += thought
        m.reasoning_requests += 1
    return True


def ledger_files(paths) -> list[Path]:
    """The ledgers of ``paths``: a ledger file as given; a run folder's ``cost_all_repeats.csv`` (else its
    ``cost.csv``) and every stage folder's ``runs/<stage>/cost.csv`` under it, once each."""
    out: list[Path] = []
    for p in map(Path, paths):
        if p.is_dir():
            whole = p / "cost_all_repeats.csv" if (p / "cost_all_repeats.csv").exists() else p / "cost.csv"
            found = [whole] if whole.exists() else sorted(p.glob("runs/*/cost.csv"))
        else:
            found = [p]
        out += [f for f in found if f not in out]
    return out


def _rows(path: Path, skipped: list) -> list[dict]:
    """A ledger's records (text cells), or [] with the reason in ``skipped``."""
    import csv
    import io

    try:
        # opened once, without waiting on a FIFO (a run folder is someone else's); what was opened is checked
        with os.fdopen(os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC), "rb") as handle:
            if not stat.S_ISREG(os.fstat(handle.fileno()).st_mode):
                skipped.append(f"{path}: not a regular file")
                return []
            raw = handle.read(MAX_BYTES + 1)
    except OSError as err:
        skipped.append(f"{path}: cannot be read ({type(err).__name__})")
        return []
    if len(raw) > MAX_BYTES:
        skipped.append(f"{path}: larger than {MAX_BYTES // 2**20} MiB: not a ledger gavel wrote")
        return []
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        skipped.append(f"{path}: not UTF-8")
        return []
    try:
        rows = list(csv.DictReader(io.StringIO(text, newline="")))
    except csv.Error:
        skipped.append(f"{path}: not a CSV table")
        return []
    if len(rows) > MAX_RECORDS:
        skipped.append(f"{path}: more than {MAX_RECORDS:,} records: not a ledger gavel wrote")
        return []
    return rows


def of_ledgers(paths, stage: str, model: str) -> Measured:
    """The lines of ``stage`` and ``model`` in the ledgers of ``paths`` (:func:`ledger_files`), summed: every
    line whose requests all reported their output (``output`` not among its ``unknown_fields``). Reasoning is
    summed where the line gives it (a provider that does not count it apart leaves it empty)."""
    files = ledger_files(paths)
    m = Measured(source=f"the ledger{'s' if len(files) > 1 else ''} {', '.join(str(f) for f in files)}")
    for path in files:
        for i, rec in enumerate(_rows(path, m.skipped), 1):
            if not isinstance(rec, dict) or rec.get("stage") != stage or rec.get("model") != model:
                continue
            if "output" in str(rec.get("unknown_fields") or "").split(";"):
                continue  # some of its requests did not report their output: their sum is not the line's
            n, out = _whole(rec.get("requests")), _whole(rec.get("output_tokens"))
            if not n or out is None or out > n * prices.MAX_TOKENS:
                m.skipped.append(f"{path}: record {i}: requests or output_tokens is not a count")
                continue
            thought_text = rec.get("reasoning_tokens")
            thought = _whole(thought_text) if thought_text not in (None, "") else None
            if thought_text not in (None, "") and (thought is None or thought > out):
                m.skipped.append(f"{path}: record {i}: reasoning_tokens is not a part of output_tokens")
                continue
            m.requests += n
            m.output += out
            if thought is not None:
                m.reasoning += thought
                m.reasoning_requests += n
    if not math.isfinite(m.output):
        return Measured(source=m.source, skipped=m.skipped + ["the sum of output tokens is not finite"])
    return m


def count(m: Measured, request, response, provider: str) -> None:
    """Add one answer to ``m``: its reported output and reasoning, and its price (gavel.core.prices)."""
    usage = response.usage if isinstance(response.usage, dict) else {}
    out = _whole(usage.get("output", response.output_tokens))
    if not _add(m, out, usage):
        return
    priced = prices.cost(request.model, usage or {"input": response.input_tokens, "output": out},
                         usage.get("mode") or "batch", usage.get("answered_at"), provider=response.provider or provider)
    if priced.usd is not None:
        m.usd += priced.usd
        m.priced += 1


def _usd(x: float) -> str:
    return f"${x:,.4f}" if x < 1 else f"${x:,.2f}"


def reforecast(stage: str, m: Measured, waiting: int) -> str:
    """A running batch's forecast of its stage from the answers back so far (:func:`count`) and the requests
    still in running batches: the measured mean price a request times those still out, plus what came back."""
    per = m.usd / m.priced if m.priced else None
    return (f"{stage}: {m.requests:,} answered in ended batches, {_usd(m.usd)} ({m.words()}); {waiting:,} still in "
            f"running batches: " + (f"at the measured {_usd(per)} a request, about {_usd(m.usd + waiting * per)} "
                                    f"for the stage" if per is not None else "no priced answer yet, no forecast"))
