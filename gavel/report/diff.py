"""Two runs of the same summaries, cell by cell (``gavel report RUN_A --against RUN_B``): another judge, another
extractor, a prompt change. RUN_B is the baseline; a change is read from B to A, so a *regression* is a cell
(or summary score) that is lower in A than in B, or usable in B and unusable in A.

What is compared: every checklist cell (subject, case, item) both runs hold: its verdict (gate, relation or
matched pairs, or why the answer was unusable), its score and the values extracted on both sides; and every
summary's four scores. What only one run holds (a cell, a summary) is counted and listed, never dropped.
"""

from __future__ import annotations

import math

import numpy as np

from gavel.core import paired
from gavel.report.run import CELL_COLUMNS, SCORES, USABLE, key
from gavel.runs.comparisons import pair_sentence

KINDS = ("regression", "improvement", "changed", "values")
EPS = 1e-9


def verdict(cell: dict) -> str:
    """One cell's verdict as text: unusable answers by their reason, gated pairs by their gate, judged ones by
    their relation or matched pairs."""
    if cell["status"] not in USABLE:
        return f"unusable: {cell['status']}"
    if cell["status"] == "gated":
        return f"gate {cell['gate']}"
    if isinstance(cell.get("relation"), str):
        return f"{cell['gate']}: {cell['relation']}"
    return f"{cell['gate']}: pairs {cell.get('pairs')}"


def _num(x):
    return None if x is None or (isinstance(x, float) and math.isnan(x)) else float(x)


def _kind(score_a, score_b, usable_a: bool, usable_b: bool, verdict_changed: bool, values_changed: bool) -> str | None:
    if usable_b and not usable_a:
        return "regression"
    if usable_a and not usable_b:
        return "improvement"
    if score_a is not None and score_b is not None and abs(score_a - score_b) > EPS:
        return "regression" if score_a < score_b else "improvement"
    if (score_a is None) != (score_b is None):  # applicable in one run only
        return "changed"
    if verdict_changed:
        return "changed"
    return "values" if values_changed else None


def _order(change: dict) -> tuple:
    delta = change.get("delta")
    rank = KINDS.index(change["kind"])
    size = -abs(delta) if delta is not None else 0.0
    return rank, size, change["subject"], change["case_id"], change.get("item") or change.get("score", "")


def _values(data: dict, subject: str, case_id: str, item: str) -> list[str]:
    return sorted(str(v[1]) for v in data["values"].get(key(subject, case_id, item), []))


def warnings(a: dict, b: dict, named: int = 5) -> list[str]:
    """What makes two runs' cells not the same question: other checklists (by name or content), or items
    whose names differ under the same key. Each a sentence for the page and the terminal."""
    out = []
    ma, mb = a.get("manifest", {}), b.get("manifest", {})
    sides = [(m.get("checklist"), m.get("checklist_fingerprint")) for m in (ma, mb)]
    if sides[0] != sides[1]:
        shown = [f"{name or 'not recorded'}" + (f" (content {fp})" if fp else "") for name, fp in sides]
        out.append(f"The two runs were evaluated with different checklists: this run {shown[0]}, the baseline "
                   f"{shown[1]}; a cell of the same item key may not be the same question.")
    names_a, names_b = dict(map(tuple, a.get("items", []))), dict(map(tuple, b.get("items", [])))
    renamed = [k for k in sorted(names_a.keys() & names_b.keys()) if names_a[k] != names_b[k]]
    if renamed:
        listed = "; ".join(f"{k}: {names_a[k]!r} here, {names_b[k]!r} in the baseline" for k in renamed[:named])
        more = f"; and {len(renamed) - named} more" if len(renamed) > named else ""
        out.append(f"{len(renamed)} item{'s' if len(renamed) > 1 else ''} named differently under the same key "
                   f"({listed}{more}): their cells are compared by key.")
    return out


def headline(r: dict) -> str:
    """The regressions at every level the diff shows, in one sentence, with the largest of each."""
    if not r["total"]:
        return "no regressions: no cell and no summary score is lower or less usable than in the baseline"
    parts = [f"{r['total']} regression{'s' if r['total'] != 1 else ''}: {r['cells']} cell{'s' if r['cells'] != 1 else ''} "
             f"(in {r['items']} item{'s' if r['items'] != 1 else ''}), {r['summary_scores']} summary "
             f"score{'s' if r['summary_scores'] != 1 else ''}"]
    big = r["largest_summary"]
    if big is not None and big["a"] is not None:
        parts.append(f"largest summary drop {big['score']} of {big['subject']} case {big['case_id']}: "
                     f"{big['b']:.2f} → {big['a']:.2f}")
    cell = r["largest_cell"]
    if cell is not None:
        shown = (f"{cell['score_b']:.2f} → {cell['score_a']:.2f}" if cell["delta"] is not None
                 else f"{cell['verdict_b']} → {cell['verdict_a']}")
        parts.append(f"largest cell {cell['item']} of {cell['subject']} case {cell['case_id']}: {shown}")
    return "; ".join(parts)


#: the names the two runs have in the sentences comparing them
RUN_LABELS = {"a": "this run", "b": "the baseline"}


def run_sentences(sum_a: dict, sum_b: dict) -> list[str]:
    """Per score, the sentence comparing this run with the baseline over the summaries both score (a paired
    test with its interval, what it can detect, :func:`gavel.runs.comparisons.pair_sentence`), read from the
    baseline to this run; each score is a family of its own (one pair). Fewer than two common summaries: not
    tested."""
    out = []
    for s in SCORES:
        both = [(x, y) for k in sorted(sum_a.keys() & sum_b.keys())
                if (x := _num(sum_a[k]["scores"].get(s))) is not None and (y := _num(sum_b[k]["scores"].get(s))) is not None]
        if len(both) < 2:
            out.append(f"{s}: {RUN_LABELS['a']} vs {RUN_LABELS['b']}: not tested ({len(both)} summar"
                       f"{'y' if len(both) == 1 else 'ies'} scored by both; the paired t-test needs 2)")
            continue
        values = np.array(both, dtype=float).T[:, :, None]  # runs x summaries x one cell
        pairs, _ = paired.compare(values, ["a", "b"])
        row = pairs.iloc[0]
        if row["model_a"] == "b":  # the baseline ranked first: read the pair from the baseline to this run
            row = row.copy()
            row["model_a"], row["model_b"] = "a", "b"
            row["difference"], row["ci_low"], row["ci_high"] = -row["difference"], -row["ci_high"], -row["ci_low"]
            row["verdict"] = {"a better": "b better", "b better": "a better"}.get(row["verdict"], row["verdict"])
        out.append(f"{s}: " + pair_sentence(row, RUN_LABELS.get).replace("common cases", "summaries scored by both")
                   .replace("cases (resolution", "summaries (resolution"))
    return out


def diff(a: dict, b: dict) -> dict:
    """The changes from run ``b`` (baseline) to run ``a`` (see the module): at each level (cell, summary score,
    item) regressions first, the largest first; ``regressions`` counts them at every level and ``headline``
    says so in one sentence."""
    cells_a = {key(r[0], r[1], r[2]): dict(zip(CELL_COLUMNS, r)) for r in a["cells"]}
    cells_b = {key(r[0], r[1], r[2]): dict(zip(CELL_COLUMNS, r)) for r in b["cells"]}
    changes = []
    per_item: dict[str, dict] = {}

    def count(item: str, what: str) -> None:
        c = per_item.setdefault(item, {k: 0 for k in ("cells", *KINDS, "only_a", "only_b")})
        c[what] += 1

    for k in sorted(cells_a.keys() & cells_b.keys()):
        ca, cb = cells_a[k], cells_b[k]
        count(ca["item"], "cells")
        va, vb = verdict(ca), verdict(cb)
        values_changed = any(_values(a, s, ca["case_id"], ca["item"]) != _values(b, s, ca["case_id"], ca["item"])
                             for s in (ca["subject"], "human"))
        sa, sb = _num(ca["score"]), _num(cb["score"])
        kind = _kind(sa, sb, ca["status"] in USABLE, cb["status"] in USABLE, va != vb, values_changed)
        if kind is None:
            continue
        count(ca["item"], kind)
        changes.append({"key": k, "subject": ca["subject"], "case_id": ca["case_id"], "item": ca["item"],
                        "kind": kind, "verdict_a": va, "verdict_b": vb, "score_a": sa, "score_b": sb,
                        "delta": (sa - sb) if sa is not None and sb is not None else None,
                        "values_changed": values_changed})
    only_a = sorted(cells_a.keys() - cells_b.keys())
    only_b = sorted(cells_b.keys() - cells_a.keys())
    for k in only_a:
        count(cells_a[k]["item"], "only_a")
    for k in only_b:
        count(cells_b[k]["item"], "only_b")

    summary_changes = []
    sum_a, sum_b = a["summaries"], b["summaries"]
    for k in sorted(sum_a.keys() & sum_b.keys()):
        subject, case_id = k.split("|", 1)
        for s in SCORES:
            x, y = _num(sum_a[k]["scores"].get(s)), _num(sum_b[k]["scores"].get(s))
            if x is None and y is None or (x is not None and y is not None and abs(x - y) <= EPS):
                continue
            kind = ("regression" if x is None else "improvement" if y is None  # a score lost / gained
                    else "regression" if x < y else "improvement")
            summary_changes.append({"key": k, "subject": subject, "case_id": case_id, "score": s, "kind": kind,
                                    "a": x, "b": y, "delta": (x - y) if x is not None and y is not None else None})
    changes.sort(key=_order)
    summary_changes.sort(key=_order)
    totals = {kind: sum(1 for c in changes if c["kind"] == kind) for kind in KINDS}
    fell = [c for c in summary_changes if c["kind"] == "regression"]
    items_fell = sorted((it for it in per_item if per_item[it]["regression"]), key=lambda it: (-per_item[it]["regression"], it))
    regressions = {"cells": totals["regression"], "summary_scores": len(fell), "items": len(items_fell),
                   "total": totals["regression"] + len(fell),
                   "largest_summary": fell[0] if fell else None, "largest_cell": changes[0] if totals["regression"] else None}
    return {"a": a["source"], "b": b["source"], "warnings": warnings(a, b), "changes": changes, "summary_changes": summary_changes,
            "per_item": [[it, per_item[it]] for it in sorted(per_item, key=lambda it: (-per_item[it]["regression"], it))],
            "totals": totals, "regressions": regressions, "headline": headline(regressions),
            "sentences": run_sentences(sum_a, sum_b),
            "compared_cells": len(cells_a.keys() & cells_b.keys()),
            "only_a": {"cells": only_a, "summaries": sorted(sum_a.keys() - sum_b.keys())},
            "only_b": {"cells": only_b, "summaries": sorted(sum_b.keys() - sum_a.keys())}}
