"""Document-extraction checklists against the human reference (``human.json``) with GAVEL-REF's compare and
score stages (``gavel.ref.stages.compare`` / ``score``), so new runs get S_checklist in the same tables as the
release's runs.

Input: value rows ``(case_id, item, index, value)`` of one run ("subject") — from the agent
(``agent.collect_runs``), end-to-end (``end_to_end.parse``) or chunk-by-chunk (``ChunkedResult.value_rows``).
Every (case, item) of the reference cases becomes a compare pair; an item the run has no value for is an
empty side (gated by the compare stage, never dropped).
"""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd

from gavel.core.checklist import entry_values
from gavel.core.items import ITEMS, item
from gavel.ref.stages import compare, score

from ..llm.runner import StageRunner


def human_references(root: str | Path) -> dict:
    """``{case_id: {item_key: (value, ...)}}`` of ``human.json`` (the 40 meta-evaluation cases)."""
    data = json.loads((Path(root) / "document_checklists" / "human.json").read_text(encoding="utf-8"))
    out = {}
    for case_id, by_item in (data.get("results") or {}).items():
        refs = {}
        for name, entry in by_item.items():
            rows, _ = entry_values(entry)
            refs[item(name).key] = tuple(r["value"] for r in rows)
        out[str(case_id)] = refs
    return out


def pairs(values: pd.DataFrame, subject: str, references: dict, cases=None) -> list[compare.Pair]:
    """Compare pairs of one run's value rows against the references, for ``cases`` (default: every
    reference case the run has rows for)."""
    got: dict = {}
    for r in values.sort_values(["case_id", "item", "index"]).itertuples(index=False):
        got.setdefault((str(r.case_id), item(r.item).key), []).append(r.value)
    cases = sorted(cases) if cases is not None else sorted({c for c, _ in got} & set(references))
    out = []
    for case_id in cases:
        for it in ITEMS:
            ref = references.get(case_id, {}).get(it.key)
            out.append(compare.Pair(subject, case_id, it.key, tuple(got.get((case_id, it.key), ())), ref))
    return out


def evaluate(pair_list: list[compare.Pair], provider, judge_model: str, workdir: str | Path, seed: int = 0,
             progress: bool = False) -> dict:
    """Compare + score through the stage runner's online path: ``{"rows", "per_case", "per_run"}``."""
    jobs, gated = compare.build_requests(pair_list, judge_model, seed=seed)
    runner = StageRunner(compare.STAGE, provider, workdir=Path(workdir) / "compare", progress=progress)
    report = runner.run([req for req, _ in jobs], mode="online")
    judged = compare.table_rows([compare.parse_response(meta, report.responses.get(req.custom_id))
                                 for req, meta in jobs])
    rows = pd.DataFrame(gated + judged)
    per_case = score.checklist_scores(rows)
    return {"rows": rows, "per_case": per_case, "per_run": score.mean_over_cases(per_case)}
