"""The public GAVEL release, read once, checked, and served as tidy pandas tables.

    >>> from gavel.release import load_release
    >>> rel = load_release()            # GAVEL_RELEASE, or data/external/gavel
    >>> rel.judgments.head()
    >>> rel.audit.groupby("defect").size()

Tables (one row per ...):

``files``            release file: kind, model, part, status (ok / empty / absent / truncated / invalid /
                     not_a_file), size, records read, and the settings the file name encodes (as JSON).
``cases``            (set, case): set ``benchmark`` (100 cases) or ``human_eval`` (40 cases), part, length
                     bin, total tokens, filing date, case type.
``summaries``        summary: model (``human`` for the reference), set, part, case, text, words.
``checklist_items``  item of one checklist: who made the checklist (origin, method, model, configuration,
                     unit), case, item key, number of values, the item spelling found in the file.
``checklist_values`` value of such an item: index (1-based), entry (1-based number of the released entry it
                     comes from: a list-valued entry gives several values sharing one evidence list), value,
                     evidence snippets, and for
                     ``human.json`` the character spans of the evidence in the human summary.
``judgments``        judge output for one (candidate, case, item): relation or matched pairs in one
                     vocabulary, orientation, problems found.
``agent_runs``       Gavel-Agent run (model, case, configuration, unit): steps, LLM calls, tokens.
``token_stats``      token counts a file reports (per file, per case where given).
``audit``            defect found: file, record, defect class, detail (classes: ``audit.DEFECTS``).

Checklist identities: ``origin`` is ``summary`` (extracted from a summary) or ``document`` (extracted from
the case documents); ``method`` is ``llm`` or ``human`` for summary checklists and ``end_to_end``,
``chunk_by_chunk`` or ``agent`` for document checklists; ``model`` is whose summary it is (summary origin)
or which model extracted (document origin); ``configuration`` is ``all`` / ``grouped`` / ``individual``
for agent runs (1, 9 or 26 agents) and ``unit`` the sub-run (agent folder, end-to-end batch).

Nothing is dropped silently: every file the layout expects is listed in ``files`` whatever its state,
anything else found in the release's folders is an audit row, and every defect is a row of ``audit`` naming
its file and record. A malformed file never stops loading. The package: ``layout`` (which files there
are), ``salvage`` (how one file is read and repaired), ``rows`` (records to table rows, checks across
files), ``audit`` (defect classes and the printed report).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from gavel.core import config

from . import audit, layout
from .audit import DEFECTS
from .rows import Rows, check_case_coverage, check_index_ranges, read_source, settings_from_name
from .salvage import salvage_truncated

__all__ = ["DEFECTS", "Release", "load_release", "salvage_truncated", "settings_from_name"]

_COLUMNS = {
    "files": ["file", "kind", "model", "part", "status", "bytes", "records", "inference_model", "settings"],
    "cases": ["set", "part", "case_id", "length_bin", "total_tokens", "filing_date", "case_type"],
    "summaries": ["model", "set", "part", "case_id", "text", "words"],
    "checklist_items": ["origin", "method", "model", "configuration", "unit", "part", "case_id", "item",
                        "n_values", "spelling", "file"],
    "checklist_values": ["origin", "method", "model", "configuration", "unit", "part", "case_id", "item",
                         "index", "entry", "value", "evidence", "evidence_documents", "evidence_spans"],
    "judgments": ["task", "method", "model", "configuration", "part", "case_id", "item", "kind", "orientation",
                  "relation", "pairs", "only_in_model", "only_in_reference", "problems", "file"],
    "agent_runs": ["model", "case_id", "configuration", "unit", "steps", "llm_calls", "system_tokens",
                   "user_tokens", "output_tokens", "input_tokens", "ledger_events", "file"],
    "token_stats": ["kind", "model", "part", "file", "scope", "case_id", "input_tokens", "output_tokens", "prompts"],
    "audit": ["file", "record", "defect", "detail"],
}
_INT_COLUMNS = {"cases": ["part", "total_tokens"], "files": ["part"], "token_stats": ["part"],
                "checklist_items": ["part"], "checklist_values": ["part"], "judgments": ["part"]}


@dataclass
class Release:
    root: Path
    files: pd.DataFrame
    cases: pd.DataFrame
    summaries: pd.DataFrame
    checklist_items: pd.DataFrame
    checklist_values: pd.DataFrame
    judgments: pd.DataFrame
    agent_runs: pd.DataFrame
    token_stats: pd.DataFrame
    audit: pd.DataFrame

    def audit_summary(self) -> pd.DataFrame:
        """Count of audit rows and of distinct files per defect class."""
        return audit.summary(self.audit)


def load_release(root: str | os.PathLike | None = None) -> Release:
    """Read the whole release at ``root`` (default: GAVEL_RELEASE or data/external/gavel)."""
    root_path = config.release_root(root)
    b = Rows(str(root_path))
    for src in layout.human_summary_sources(b.root):
        read_source(b, src)
    reruns: list[layout.Rerun] = []
    for src in layout.model_sources(b.root, reruns):
        read_source(b, src)
    for r in reruns:
        b.defect(r.path, "duplicate_part_file", "", f"also matches part {r.part} of {r.model}; "
                                                    f"{b.rel(r.used)} read instead")
    human_eval = sorted({r["case_id"] for r in b.rows["cases"] if r["set"] == "human_eval"})
    for src in layout.document_sources(b.root, human_eval):
        read_source(b, src)
    check_index_ranges(b)
    check_case_coverage(b)
    seen = {f["file"] for f in b.rows["files"]} | {b.rel(r.path) for r in reruns}
    for path, defect, detail in layout.unread_entries(b.root, seen):
        b.defect(path, defect, "", detail)
    tables = {k: pd.DataFrame(v, columns=_COLUMNS[k]) for k, v in b.rows.items()}
    for name, cols in _INT_COLUMNS.items():
        tables[name] = tables[name].astype({c: "Int64" for c in cols})
    return Release(root=root_path, **tables)
