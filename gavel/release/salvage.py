"""How one release file is read, and salvaged where it is damaged.

``read_file`` never raises for a bad file: it returns the file's state (``status``), what could be read
(``data``), and the problems met, each as an audit row ``(defect, record, detail)``. What it repairs:

* bytes that are not UTF-8 are replaced (U+FFFD); the records holding them are named;
* JSON cut off (or broken) mid-way: every record complete before the break is kept, for files whose
  records sit under ``results`` and for files that are one object of records (the human summaries);
* a top level wrapped in a one-element list is unwrapped; ``results`` spelled in another case is read;
* anything else of the wrong shape (a number, ``null``, a list of records) is refused with its shape named.

``status`` says how much was read: ``ok`` every record (repairs are audit rows), ``truncated`` the records
before a break, ``empty``/``absent``/``invalid``/``not_a_file`` nothing.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field

RESULTS = "results"
REPLACEMENT = "\ufffd"
_WS = re.compile(r"[\s,]*")


@dataclass
class FileRead:
    status: str
    data: dict | None = None
    size: int | None = None
    problems: list[tuple[str, str, str]] = field(default_factory=list)  # (defect, record, detail)

    def records(self, wrapped: bool) -> dict:
        """The file's records: ``results`` of a wrapped file, the object itself otherwise."""
        if self.data is None:
            return {}
        return self.data.get(RESULTS, {}) if wrapped else self.data


def read_file(path: str, wrapped: bool = True) -> FileRead:
    """Read one JSON file of the release. ``wrapped``: its records sit under ``results``."""
    try:
        with open(path, "rb") as fh:
            raw = fh.read()
    except FileNotFoundError:
        return FileRead("absent", problems=[("absent_file", "", "")])
    except OSError as err:  # a directory where the file should be, no permission, ...
        what = "a directory" if isinstance(err, IsADirectoryError) else f"unreadable ({err.strerror})"
        return FileRead("not_a_file", problems=[("not_a_file", "", f"{what} where a file should be")])
    if not raw.strip():
        return FileRead("empty", size=len(raw), problems=[("empty_file", "", "")])
    got = FileRead("ok", size=len(raw))
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as err:
        text = raw.decode("utf-8", errors="replace")
        bad = text.count(REPLACEMENT) - raw.decode("utf-8", errors="ignore").count(REPLACEMENT)
        got.problems.append(("invalid_utf8", "", f"{bad} invalid byte sequence(s), the first at byte {err.start}; "
                                                 "replaced by U+FFFD"))
    try:
        data = json.loads(text)
    except json.JSONDecodeError as err:
        data = salvage_truncated(text, wrapped)
        n = len((data or {}).get(RESULTS, {}) if wrapped else data or {})
        if not n:
            got.status = "invalid"
            got.problems.append(("invalid_json", "", str(err)))
            return got
        last = list(data[RESULTS] if wrapped else data)[-1]
        got.status = "truncated"
        got.problems.append(("truncated_file", f"cases after {last}",
                             f"{len(raw)} bytes; JSON breaks at char {err.pos} ({err.msg}); "
                             f"{n} complete cases salvaged"))
    got.data = _checked_shape(data, wrapped, got)
    if got.data is not None and got.problems and got.problems[0][0] == "invalid_utf8":
        _name_replaced_records(got, wrapped)
    return got


def _checked_shape(data, wrapped: bool, got: FileRead) -> dict | None:
    """The file's top-level object, or None (with the shape named) when it is not one."""
    if isinstance(data, list) and len(data) == 1 and isinstance(data[0], dict):
        got.problems.append(("wrong_shape", "", "top level is a list holding one object; that object read"))
        data = data[0]
    if not isinstance(data, dict):
        got.status = "invalid"
        got.problems.append(("wrong_shape", "", f"top level is {_shape(data)}; expected an object"))
        return None
    if not wrapped:
        return data
    if RESULTS not in data:
        near = [k for k in data if isinstance(k, str) and k.strip().lower() == RESULTS]
        if not near:
            got.status = "invalid"
            got.problems.append(("wrong_shape", "", f"no {RESULTS!r} field (fields: {', '.join(map(str, data))})"))
            return None
        got.problems.append(("misnamed_field", "", f"{near[0]!r} read as {RESULTS!r}"))
        data = {(RESULTS if k == near[0] else k): v for k, v in data.items()}
    if not isinstance(data[RESULTS], dict):
        got.status = "invalid"
        got.problems.append(("wrong_shape", RESULTS, f"{RESULTS!r} is {_shape(data[RESULTS])}; expected an object "
                                                     "of cases (case ids are lost, nothing read)"))
        return None
    return data


def _shape(value) -> str:
    if isinstance(value, list):
        return f"a list of {len(value)}"
    return "null" if value is None else f"{type(value).__name__} {json.dumps(value)[:40]}"


def _name_replaced_records(got: FileRead, wrapped: bool) -> None:
    """Turn the file-level invalid_utf8 row into one row per record holding a replaced byte."""
    named = [str(k) for k, v in got.records(wrapped).items()
             if REPLACEMENT in str(k) or REPLACEMENT in json.dumps(v, ensure_ascii=False)]
    if named:
        _, _, detail = got.problems.pop(0)
        got.problems[:0] = [("invalid_utf8", f"case {k}", detail) for k in named]


def salvage_truncated(text: str, wrapped: bool = True) -> dict | None:
    """The complete records of a JSON object cut off mid-way: every top-level field whose value is
    complete, and for ``wrapped`` files every complete case of ``results``. None if nothing is readable."""
    pos = text.find("{")
    if pos < 0:
        return None
    out = _partial_object(text, pos + 1, dive=RESULTS if wrapped else None)
    return out or None


def _partial_object(text: str, pos: int, dive: str | None) -> dict:
    """Key/value pairs of the object opened just before ``pos``, up to the first incomplete one; the value
    of key ``dive`` is itself read partially."""
    dec = json.JSONDecoder()
    out: dict = {}
    while True:
        pos = _WS.match(text, pos).end()
        if pos >= len(text) or text[pos] == "}":
            return out
        try:
            key, pos = dec.raw_decode(text, pos)
            pos = _WS.match(text, pos).end()
            if text[pos] != ":":
                return out
            pos = _WS.match(text, pos + 1).end()
        except (json.JSONDecodeError, IndexError):
            return out
        try:
            out[key], pos = dec.raw_decode(text, pos)
        except (json.JSONDecodeError, IndexError):
            if key == dive and text.startswith("{", pos):
                out[key] = _partial_object(text, pos + 1, dive=None)
            return out
