"""One checklist entry -> value rows: the one reading shared by the release loader and the extract stage.

An item's entry is what an extractor wrote for one item: ``{"extracted": [{"value": ..., "evidence": [...]}]}``
(the release's summary and document checklists, our extract stage) or a plain list of such values
(``human.json``). Values come in several shapes in the wild; each is read the same way everywhere:

- a string: one value;
- a list of strings: several values in one entry, expanded (problem ``list_value``);
- an object of scalar fields (e.g. ``{"party": ..., "role": ...}``): joined into one text value
  ``"party: ...; role: ..."`` (problem ``structured_value``);
- anything else: not a value (problem ``malformed_record``), reported, never guessed.

Evidence is a list of ``{"text", "source_document", ...}`` objects or plain strings, under ``evidence`` or
``evidences``; ``human.json`` adds character spans (``evidences_indices``).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Problem:
    """Why (part of) an entry was not read as given: a defect class of ``release.DEFECTS`` and a detail."""

    defect: str
    detail: str


def entry_values(entry) -> tuple[list[dict], list[Problem]]:
    """Value rows ``{"index", "entry", "value", "evidence", "evidence_documents", "evidence_spans"}`` (index
    1-based, in the order given) and the problems met. ``entry`` is the 1-based number of the released
    entry the value comes from: an entry whose ``value`` is a list gives one row per value, all sharing
    the entry's evidence (count evidence once per ``entry``). Never raises on a malformed entry."""
    if isinstance(entry, dict):
        values = entry.get("extracted", [])
    elif isinstance(entry, list):
        values = entry
    else:
        return [], [Problem("malformed_record", f"entry is {type(entry).__name__}")]
    problems: list[Problem] = []
    if not isinstance(values, list):
        return [], [Problem("malformed_record", "extracted is not a list")]
    rows: list[dict] = []
    for entry_no, v in enumerate(values, start=1):
        value = v.get("value") if isinstance(v, dict) else None
        if isinstance(value, list) and value and all(isinstance(x, str) for x in value):
            problems.append(Problem("list_value", f"{len(value)} values in one entry"))
            expanded = value
        elif isinstance(value, str):
            expanded = [value]
        elif isinstance(value, dict) and value and all(isinstance(x, (str, int, float)) or x is None
                                                       for x in value.values()):
            expanded = ["; ".join(f"{k}: {x}" for k, x in value.items())]
            problems.append(Problem("structured_value", f"fields {', '.join(value)} joined into one text value"))
        else:
            problems.append(Problem("malformed_record", f"value {str(v)[:80]!r}"))
            continue
        ev = v.get("evidence", v.get("evidences", []))
        ev = ev if isinstance(ev, list) else [ev]
        texts = [e.get("text", "") if isinstance(e, dict) else str(e) for e in ev]
        docs = [e.get("source_document", "") for e in ev if isinstance(e, dict)]
        for one in expanded:
            rows.append({"index": len(rows) + 1, "entry": entry_no, "value": one, "evidence": texts,
                         "evidence_documents": docs or None, "evidence_spans": v.get("evidences_indices")})
    return rows, problems


#: The Gavel-Agent's way of saying an item has no value; such a value counts as no value (release rule 4).
NOT_APPLICABLE = "Not Applicable"


def comparable_values(values) -> list[str]:
    """The values of one item as they are compared: stripped, empty strings and "Not Applicable" left out,
    order kept (the judge's 1-based indices refer to this order)."""
    out = []
    for v in values:
        text = str(v).strip()
        if text and text != NOT_APPLICABLE:
            out.append(text)
    return out
