"""The release's recorded LLM outputs, replayed through the real pipeline.

The release holds the answers of the original runs: the GPT-oss 20B extractions of every model summary
(``summary_checklists/``) and the Gemma 3 27B judgments of document extraction against ``human.json``
(``evaluation_documents_checklist/``). Here they become a ``lookup`` for
:class:`gavel.llm.providers.replay.ReplayProvider`: our compare stage builds its own requests (own prompts,
own A/B order), and the replay answers each from the recorded judgment of the same (run, case, item),
written in the A/B frame of OUR request. Whatever the recording lacks is answered "missing" with a reason.

``document_replay`` runs the compare and score stages this way over every document-extraction run whose
judge file is released and sets the S_checklist they give beside ``data/results/document_s_checklist.csv``.
"""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd

from gavel.core.entries import comparable_values
from gavel.core.items import ITEM_KEYS, item
from gavel.core.spreadsheet import read_csv
from gavel.llm.providers.replay import ReplayProvider
from gavel.llm.records import Request
from gavel.llm.runner import StageRunner
from gavel.ref.stages import compare, score

JUDGE = "gemma-3-27b-it"  # the release's judge model (paper §3)


def subject_of(method: str, model: str, configuration: str) -> str:
    return "/".join(x for x in (method, model, configuration) if x)


def document_pairs(rel) -> list[compare.Pair]:
    """(document run, case, item) pairs against human.json for the 40 meta-evaluation cases, for every run
    with a released judge file; values in the order the release lists them."""
    cv = rel.checklist_values
    values: dict = {}
    for r in cv[["origin", "method", "model", "configuration", "case_id", "item", "index", "value"]].itertuples(index=False):
        values.setdefault((r.origin, r.method, r.model, r.configuration, r.case_id, r.item), []).append((r.index, r.value))
    ordered = {k: tuple(v for _, v in sorted(x, key=lambda t: t[0])) for k, x in values.items()}
    ci = rel.checklist_items
    present = set(ci[["origin", "method", "model", "configuration", "case_id", "item"]].itertuples(index=False, name=None))
    jd = rel.judgments[rel.judgments["task"] == "document"]
    runs = sorted({(r.method, r.model, r.configuration) for r in jd.itertuples(index=False)})
    cases = sorted(rel.cases.loc[rel.cases["set"] == "human_eval", "case_id"])
    pairs = []
    for method, model, configuration in runs:
        for case_id in cases:
            for key in ITEM_KEYS:
                mk = ("document", method, model, configuration, case_id, key)
                rk = ("summary", "human", "human", "", case_id, key)
                mv = ordered.get(mk, ()) if mk in present else None
                rv = ordered.get(rk, ()) if rk in present else None
                pairs.append(compare.Pair(subject_of(method, model, configuration), case_id, key, mv, rv))
    return pairs


def _recorded(rel) -> dict:
    jd = rel.judgments[rel.judgments["task"] == "document"]
    return {(subject_of(r.method, r.model, r.configuration), r.case_id, r.item): r for r in jd.itertuples(index=False)}


def answer_text(recorded, model_shown_as_a: bool) -> str:
    """A recorded judgment (model/reference wording) written as an answer to a request whose A side is the
    model (or the reference)."""
    if recorded.kind == "relation":
        rel = recorded.relation
        if rel in ("equal", "different"):
            label = "A equals B" if rel == "equal" else "A and B are different"
        else:
            model_contains = rel in ("model_contains_reference", "a_contains_b")
            label = "A contains B" if model_contains == model_shown_as_a else "B contains A"
        return f"**Reasoning:** (recorded judgment replayed)\n**Final Answer:** {label}"
    pairs = [(m, r) if model_shown_as_a else (r, m) for m, r in recorded.pairs]
    only_a, only_b = (recorded.only_in_model, recorded.only_in_reference) if model_shown_as_a else \
        (recorded.only_in_reference, recorded.only_in_model)
    body = {"common": [{"A_index": a, "B_index": b} for a, b in pairs], "only_in_A": list(only_a),
            "only_in_B": list(only_b)}
    return "**Reasoning:** (recorded judgment replayed)\n**Final Answer:**\n```json\n" + json.dumps(body) + "\n```"


def document_lookup(rel, seed: int = 0):
    """(lookup, why_missing) for a ReplayProvider answering compare requests from the released judgments."""
    recorded = _recorded(rel)

    def lookup(request: Request) -> str | None:
        found = recorded.get((request.subject, request.case_id, request.item))
        if found is None or found.kind == "unreadable":
            return None
        return answer_text(found, compare.model_is_a(seed, request.subject, request.case_id, request.item))

    def why_missing(request: Request) -> str:
        found = recorded.get((request.subject, request.case_id, request.item))
        if found is not None:
            return "recorded answer unreadable"
        if request.item == item("Class Action or Individual Plaintiffs").key:
            return "Class Action never sent to the judge (release rule 3)"
        return "pair not in the judge file"

    return lookup, why_missing


def document_replay(rel, workdir: str | Path, seed: int = 0, progress: bool = False) -> dict:
    """Run compare + score over the released document runs with the replay provider. Returns
    ``{"comparison": per-run table, "missing": reasons, "report": RunReport, "rows": pair rows}``."""
    pairs = document_pairs(rel)
    jobs, gated = compare.build_requests(pairs, JUDGE, seed=seed)
    lookup, why = document_lookup(rel, seed)
    provider = ReplayProvider(lookup, why)
    runner = StageRunner("compare", provider, workdir=Path(workdir) / "compare", max_attempts=1, progress=progress)
    report = runner.run([req for req, _ in jobs], mode="online")
    judged = compare.table_rows([compare.parse_response(meta, report.responses.get(req.custom_id))
                                 for req, meta in jobs])
    rows = pd.DataFrame(gated + judged)
    per_summary = score.checklist_scores(rows)
    per_run = score.mean_over_cases(per_summary)
    missing = pd.Series({reason: n for (_, reason), n in provider.missing.items()}, name="requests", dtype=int)
    return {"comparison": per_run, "missing": missing, "report": report, "rows": rows}


def compare_with_results(per_run: pd.DataFrame, results_csv: str | Path) -> pd.DataFrame:
    """Our replayed S_checklist beside the committed best estimate, per document run."""
    committed = read_csv(results_csv, dtype={"configuration": str}).fillna({"configuration": ""})
    committed["subject"] = [subject_of(m, mo, c) for m, mo, c in
                            committed[["method", "model", "configuration"]].itertuples(index=False)]
    out = per_run.merge(committed[["subject", "s_checklist", "s_checklist_low", "s_checklist_high"]]
                        .rename(columns={"s_checklist": "committed"}), on="subject", how="left")
    out["difference"] = (out["s_checklist"] - out["committed"]).round(4)
    out["reproduced"] = out["difference"].abs() <= 0.01
    return out


__all__ = ["document_pairs", "document_lookup", "document_replay", "compare_with_results", "comparable_values"]


def explain_cells(rel, rows: pd.DataFrame) -> pd.DataFrame:
    """Cells where the replayed pipeline and ``make results`` (gavel.paper.reconstruct) disagree, each with its
    reason. ``rows``: the compare rows of ``document_replay``."""
    from gavel.paper import reconstruct

    cells = reconstruct.document_cells(rel)
    cells["subject"] = [subject_of(*k) for k in cells[["method", "model", "configuration"]].itertuples(index=False)]
    m = rows.merge(cells[["subject", "case_id", "item", "best", "status"]].rename(columns={"status": "cell_status"}),
                   on=["subject", "case_id", "item"], how="left")
    ours = m["score"].where(m["status"].isin(["ok", "gated"]))
    same = (ours.isna() & m["best"].isna()) | ((ours - m["best"]).abs() < 1e-9)
    diff = m[~same].copy()
    diff["ours"] = ours[~same]
    reasons = []
    for r in diff.itertuples(index=False):
        if r.status == "no_values":
            reasons.append("extraction not released: make results estimates the cell, the replay has no values")
        elif r.status == "failed":
            reasons.append(f"no recorded answer ({r.detail})")
        elif isinstance(r.problems, str) and "out of range" in r.problems:
            reasons.append("recorded judgment has indices beyond its lists: make results widens the reference "
                           "list to the implied length, the pipeline ignores out-of-range indices")
        else:
            reasons.append("unexplained")
    diff["reason"] = reasons
    return diff[["subject", "case_id", "item", "gate", "status", "ours", "best", "cell_status", "reason", "problems"]]


def replay_check(rel, workdir: str | Path, results_csv: str | Path, seed: int = 0) -> dict:
    """The acceptance check of the replay: per document run, our S_checklist, the committed one, the
    difference, and the difference left once the cells listed in ``cells`` (with reasons) take the committed
    value. A run is reproduced when what is left is within 0.01."""
    out = document_replay(rel, workdir, seed=seed)
    rows, cells = out["rows"], explain_cells(rel, out["rows"])
    patched = rows.copy()
    key = ["subject", "case_id", "item"]
    fix = cells.set_index(key)["best"]
    idx = patched.set_index(key).index
    hit = idx.isin(fix.index)
    patched.loc[hit, "score"] = fix.reindex(idx[hit]).to_numpy()
    patched.loc[hit, "status"] = "ok"
    patched.loc[hit & patched["score"].isna(), "status"] = "gated"
    explained = score.mean_over_cases(score.checklist_scores(patched))[["subject", "s_checklist"]]
    table = compare_with_results(out["comparison"], results_csv)
    table = table.merge(explained.rename(columns={"s_checklist": "with_listed_cells_as_committed"}), on="subject")
    table["left_after_listed_cells"] = (table["with_listed_cells_as_committed"] - table["committed"]).round(4)
    table["listed_cells"] = table["subject"].map(cells.groupby("subject").size()).fillna(0).astype(int)
    table["reproduced"] = table["left_after_listed_cells"].abs() <= 0.01
    return {"table": table, "cells": cells, "missing": out["missing"], "report": out["report"]}
