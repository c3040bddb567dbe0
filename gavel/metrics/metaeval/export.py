"""The annotation app's export read into plain tables (current answers, value rows, comparison answers,
style ratings)."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from gavel.core import jsonl
from gavel.core.vocab import ANNOTATION_RELATIONS

# the app's 4-way labels (A = model, B = reference) in the judge's vocabulary



# --- the app's export ---------------------------------------------------------------------------------

def read_export(path: str | Path) -> pd.DataFrame:
    """The app's JSONL export; every row must carry the export's columns."""
    rows = [line.value for line in jsonl.read_file(path)]
    df = pd.DataFrame(rows)
    needed = {"task", "kind", "case_id", "annotator", "role", "field", "value", "revision", "current"}
    if rows and needed - set(df.columns):
        raise ValueError(f"{path}: missing columns {sorted(needed - set(df.columns))}")
    return df


def current(export: pd.DataFrame, role: str = "annotate") -> pd.DataFrame:
    return export[(export["current"]) & (export["role"] == role)] if len(export) else export


def extraction_rows(export: pd.DataFrame, role: str = "annotate") -> pd.DataFrame:
    """Value rows (annotator, case_id, item, index, value, evidence, evidence_spans) of extraction reviews."""
    out = []
    for r in current(export, role).itertuples(index=False):
        if r.kind != "extraction" or not r.field.startswith("item:"):
            continue
        for i, v in enumerate(r.value, 1):
            spans = [(e["start"], e["end"]) for e in v["evidence"] if e["start"] is not None]
            out.append({"annotator": r.annotator, "task": r.task, "case_id": str(r.case_id),
                        "item": r.field[5:], "index": i, "value": v["value"],
                        "evidence": [e["text"] for e in v["evidence"]], "evidence_spans": spans})
    return pd.DataFrame(out, columns=["annotator", "task", "case_id", "item", "index", "value", "evidence",
                                      "evidence_spans"])


def comparison_answers(export: pd.DataFrame, role: str = "annotate") -> pd.DataFrame:
    """task, annotator, mode, label (judge vocabulary) or pairs."""
    out = []
    for r in current(export, role).itertuples(index=False):
        if r.kind != "comparison":
            continue
        if r.field == "label":
            out.append({"task": r.task, "annotator": r.annotator, "mode": "single",
                        "label": ANNOTATION_RELATIONS[r.value], "pairs": None})
        elif r.field == "matches":
            out.append({"task": r.task, "annotator": r.annotator, "mode": "multi", "label": None,
                        "pairs": [tuple(p) for p in r.value]})
    return pd.DataFrame(out, columns=["task", "annotator", "mode", "label", "pairs"])


def style_ratings(export: pd.DataFrame, role: str = "annotate") -> pd.DataFrame:
    out = [{"task": r.task, "annotator": r.annotator, "aspect": r.field[7:], "rating": int(r.value)}
           for r in current(export, role).itertuples(index=False)
           if r.kind == "style" and r.field.startswith("aspect:")]
    return pd.DataFrame(out, columns=["task", "annotator", "aspect", "rating"])


