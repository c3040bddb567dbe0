"""What ``gavel evaluate`` and the GAVEL-REF notebooks are given: summaries files in their three shapes, the
checks every summary passes before a request is built for it (a reserved name, an oversize text), and the
output folder. Bad input raises :class:`InputError` naming the file and record."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

from gavel.answers.scan import has_lone_surrogate
from gavel.core import jsonl


class InputError(ValueError):
    """Bad input to the pipeline: names the file and record."""


REFERENCE = "human"  # the subject of the reference summaries: reserved, no evaluated summary may take it
#: the longest summary evaluated (characters, ~250k tokens; the release's longest is under 30,000): a longer
#: one is skipped with a message before any request is built for it
MAX_SUMMARY_CHARS = 1_000_000


def summary_problem(subject: str, text, reference: bool = False) -> str | None:
    """Why a summary (or, ``reference``, a reference summary) is not evaluated, or None: a lone surrogate (a
    JSON ``\\ud800`` escape: not text, and no prompt or table can hold it); for a summary also a reserved
    name or an oversize text."""
    if isinstance(text, str) and has_lone_surrogate(text):
        at = next(i for i, ch in enumerate(text) if "\ud800" <= ch <= "\udfff")
        return f"a lone surrogate (\\u{ord(text[at]):04x}) at character {at:,}: not text; not evaluated"
    if reference:
        return None
    if subject == REFERENCE:
        return (f"the name {REFERENCE!r} is reserved for the reference summaries; give these summaries another "
                f"name (--name)")
    if isinstance(text, str) and len(text) > MAX_SUMMARY_CHARS:
        return f"summary of {len(text):,} characters, over the limit of {MAX_SUMMARY_CHARS:,}; not evaluated"
    return None


_LEAD = re.compile(r"[\ufeff \t\r\n]*")


def _jsonl_record(text: str) -> bool:
    """True when the text's first line is a JSONL summary record (``case_id`` and ``summary`` or ``text``),
    whatever the file is called: ``<(cat x.jsonl)`` or a record saved as ``.json`` was read as a
    ``{case_id: text}`` object of "cases" named model, case_id and summary."""
    start = _LEAD.match(text).end()  # not a copy of the text
    end = text.find("\n", start)
    first = text[start:end if end >= 0 else len(text)]
    # a record line holds "case_id" and at most one summary (MAX_SUMMARY_CHARS): a one-line JSON document of
    # another shape (the release's results) is not parsed twice
    if not first.startswith("{") or '"case_id"' not in first or len(first) > 4 * MAX_SUMMARY_CHARS:
        return False
    try:
        rec = json.loads(first)
    except (ValueError, RecursionError):
        return False
    return isinstance(rec, dict) and "case_id" in rec and isinstance(rec.get("summary", rec.get("text")), str)


def read_summaries(path: str | Path, subject: str | None = None, problems: list[str] | None = None,
                   reference: bool = False, notes: list[str] | None = None) -> list[tuple[str, str, str]]:
    """Summaries from a file in one of three shapes: the release's (``{"results": {case_id: text}}``), a plain
    ``{case_id: text}`` object, or JSONL with ``case_id`` and ``summary`` (or ``text``) and optionally
    ``model`` per line. ``subject`` names whose summaries they are (default: the model folder for the
    release's files, the file name otherwise, or each JSONL line's ``model``). A file that cannot be read, is
    not UTF-8, or has no known shape raises :class:`InputError` naming it. A record that cannot be read (a line that is not JSON, a summary that is not text)
    raises it too, naming file and record; given a ``problems`` list, the message is appended there instead
    and the file's other records are kept. Summaries to evaluate (``reference=False``) may not be named
    ``human`` (the file is refused naming it; a JSONL record so named is reported) nor be oversize. JSONL lines
    of summaries to evaluate without ``model`` (and no ``subject`` given) take the file's name: one line saying
    so, with the lines, is appended to ``notes`` (raised as :class:`InputError` when ``notes`` is None and the
    file also has lines with a ``model``, where the guess would mix two models' names)."""
    path = Path(path)

    def bad(message: str) -> None:
        if problems is None:
            raise InputError(message)
        problems.append(message)

    name = subject or path.stem
    if not reference and subject == REFERENCE:
        raise InputError(f"{path}: {summary_problem(subject, '')}")
    try:
        text = jsonl.file_text(path)
    except jsonl.JSONLError as err:
        raise InputError(str(err)) from None
    if path.suffix == ".jsonl" or _jsonl_record(text):
        out, unnamed, named = [], [], []
        for read in jsonl.scan(text, str(path)):
            n, rec = read.number, read.value
            if not read.ok:
                bad(read.problem)
                continue
            body = rec.get("summary", rec.get("text")) if isinstance(rec, dict) else None
            if not isinstance(body, str) or "case_id" not in rec:
                bad(f"{path}, line {n}: expected an object with case_id and summary")
                continue
            who = subject or rec.get("model") or name
            if not subject and not reference:
                (named if rec.get("model") else unnamed).append(n)
            why = summary_problem(who, body, reference)
            if why:
                bad(f"{path}, line {n}: {why}")
                continue
            out.append((who, str(rec["case_id"]), body))
        if unnamed:
            lines = ", ".join(map(str, unnamed[:5])) + (f" and {len(unnamed) - 5} more" if len(unnamed) > 5 else "")
            note = (f"{path}: {len(unnamed)} line{'s' if len(unnamed) > 1 else ''} without \"model\" (line"
                    f"{'s' if len(unnamed) > 1 else ''} {lines}): named {name!r} after the file; give each line a "
                    f"\"model\", or name them with --name")
            if notes is not None:
                notes.append(note)
            elif named:
                raise InputError(note)
        return out
    try:
        data = jsonl.document(text, str(path))
    except jsonl.JSONLError as err:
        raise InputError(str(err)) from None
    if isinstance(data, dict) and isinstance(data.get("results"), dict):
        data = data["results"]
        name = subject or path.parent.name  # the release: summaries/<model>/<part>.json
    if not isinstance(data, dict):
        raise InputError(f"{path}: unknown shape (expected {{case_id: text}}, the release's results file, or JSONL)")
    if not reference and name == REFERENCE:
        raise InputError(f"{path}: {summary_problem(name, '')}")
    out = []
    for case_id, body in data.items():
        if isinstance(body, dict):  # the release's human summaries: {"summary/long": ...}
            body = body.get("summary/long", body.get("summary"))
        if not isinstance(body, str):
            bad(f"{path}, case {case_id}: summary is {type(body).__name__}, not text")
            continue
        why = summary_problem(name, body, reference)
        if why:
            bad(f"{path}, case {case_id}: {why}")
            continue
        out.append((name, str(case_id), body))
    return out


def writable_folder(path: str | Path, what: str = "output folder") -> Path:
    """Make ``path`` (and its parents) and check a file can be written there, before anything is read or
    sent; :class:`InputError` naming it otherwise."""
    path = Path(path)
    try:
        path.mkdir(parents=True, exist_ok=True)
        probe = path / f".gavel-write-check-{os.getpid()}"
        probe.write_bytes(b"")
        probe.unlink()
    except OSError as err:
        raise InputError(f"{what} {path}: cannot write there ({err.strerror or err})") from None
    return path


def release_references(rel) -> tuple[dict[str, str], dict[str, str]]:
    """Human summaries (case_id -> text) and length bins of the release's cases."""
    s = rel.summaries
    human = s[s["model"] == "human"].drop_duplicates("case_id")
    bins = rel.cases.drop_duplicates("case_id").set_index("case_id")["length_bin"].dropna().to_dict() \
        if "length_bin" in rel.cases else {}
    return dict(zip(human["case_id"], human["text"])), bins
