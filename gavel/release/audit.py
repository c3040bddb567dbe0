"""The audit: every defect class the loader records, and the report ``python -m gavel audit`` prints
(headline facts, counts per class, then every defect with its file and record)."""

from __future__ import annotations

import pandas as pd

DEFECTS = {
    "empty_file": "file is empty (0 bytes)",
    "absent_file": "file the release layout expects is not there",
    "not_a_file": "a directory (or something unreadable) where the layout expects a file",
    "truncated_file": "file is cut off mid-JSON; complete records salvaged",
    "invalid_json": "file is not valid JSON and nothing could be salvaged",
    "invalid_utf8": "bytes that are not UTF-8, replaced by U+FFFD; the record is kept",
    "wrong_shape": "top level or results of an unexpected shape (number, null, list)",
    "misnamed_field": "a field spelled in another case (e.g. 'Results'); read under its name",
    "duplicate_part_file": "a second file matching a part (a rerun); the larger one is read, this one not",
    "duplicate_case": "case already read from another part; this copy is not read",
    "missing_case": "a case the file should hold is not in it",
    "misplaced_case": "a case of the other part (by the reference summaries); read",
    "unmatched_case": "checklist or judgment of a case the model has no summary of; not read",
    "unregistered_model": "model folder not in gavel/core/models.yaml; not read",
    "unexpected_file": "file or folder outside the release layout; not read",
    "unknown_orientation": "judge file in A/B wording with no record of which side was the model",
    "text_answer": "judge answer is raw text; the JSON inside was parsed",
    "unreadable_answer": "judge answer could not be parsed (unknown label, no JSON)",
    "null_index": "judge matching has a null index",
    "list_index": "judge matching has a list where an index should be",
    "bad_index": "judge matching has a non-integer index",
    "out_of_range_index": "judge index beyond the length of its list",
    "degenerate_answer": "judge answer is a runaway list of indices with no readable JSON",
    "structured_value": "checklist value given as an object of fields; joined into one text value",
    "list_value": "checklist value given as a list of strings; expanded into separate values",
    "item_variant": "item spelled in a stray variant",
    "unknown_item": "item name matches none of the 26 items",
    "incomplete_checklist": "checklist lacks some of the items it should cover",
    "empty_ledger": "agent ledger.jsonl is empty",
    "malformed_record": "record of an unexpected shape",
}


def summary(audit: pd.DataFrame) -> pd.DataFrame:
    """Count of audit rows and of distinct files per defect class."""
    if audit.empty:
        return pd.DataFrame(columns=["defect", "records", "files", "meaning"])
    out = audit.groupby("defect").agg(records=("file", "size"), files=("file", "nunique")).reset_index()
    out["meaning"] = out["defect"].map(DEFECTS)
    return out


def defect_lines(audit: pd.DataFrame) -> list[str]:
    """Every defect, grouped by class: file, record, detail."""
    lines = []
    for defect, rows in audit.groupby("defect", sort=True):
        lines.append(f"[{defect}] {len(rows)}")
        for r in rows.itertuples():
            where = f"{r.file} | {r.record}" if r.record else r.file
            lines.append(f"  {where}" + (f"  ({r.detail})" if r.detail else ""))
    return lines


def report(release) -> str:
    """The audit as text: headline facts, counts per defect class, then every defect."""
    files = release.files
    lines = [f"GAVEL release audit: {release.root}", "",
             f"files expected by the layout: {len(files)}; status: "
             + ", ".join(f"{k} {v}" for k, v in files["status"].value_counts().items()), "",
             "Headline facts (computed from the tables):"]
    lines += [f"  - {label}: {value}" for label, value in headline(release)]
    lines.append("")
    with pd.option_context("display.max_colwidth", 90, "display.width", 200):
        lines.append(summary(release.audit).to_string(index=False))
    lines += ["", "Every defect (file | record  (detail)):"] + defect_lines(release.audit)
    return "\n".join(lines)


def headline(release) -> list[tuple[str, str]]:
    files, audit = release.files, release.audit
    chk = files[files["kind"] == "summary_checklists"]
    human_chk, model_chk = chk[chk["model"] == "human"], chk[chk["model"] != "human"]
    judges = files[files["kind"] == "summary_judgments"]
    readable = judges[judges["status"] == "ok"]
    unknown = set(audit.loc[audit["defect"] == "unknown_orientation", "file"])
    truncated = files[files["status"] == "truncated"]
    return [
        ("human-summary checklists empty", f"{(human_chk['status'] == 'empty').sum()} of {len(human_chk)}"),
        ("model summary-checklist files empty or absent",
         f"{model_chk['status'].isin(['empty', 'absent']).sum()} of {len(model_chk)}"),
        ("truncated files (complete cases salvaged)",
         ", ".join(f"{r.file} ({r.records} cases)" for r in truncated.itertuples()) or "none"),
        ("readable summary-judge files in A/B wording (orientation unknown)",
         f"{len(set(readable['file']) & unknown)} of {len(readable)}"
         f" (+{len(unknown - set(readable['file']))} truncated)"),
        ("judge pairs with a null index", str((audit["defect"] == "null_index").sum())),
        ("judge pairs with a list-valued index", str((audit["defect"] == "list_index").sum())),
        ("agent runs (model x case x configuration unit)", str(len(release.agent_runs))),
    ]
