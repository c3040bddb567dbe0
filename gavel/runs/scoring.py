"""A run's scores: each summary's (S_checklist with its bounds, S_residual, S_style, r, S_GAVEL-REF), each
model's means with bootstrap intervals, and the shapes of ``data/results/`` (``gavel.runs.pipeline`` writes
them)."""

from __future__ import annotations

import math

import pandas as pd

from gavel.core import stats
from gavel.ref.stages import residual, score


def summary_scores(kept, refs, texts, spans, compare_rows, residual_rows, style_rows, facts, alpha) -> pd.DataFrame:
    checklist = score.checklist_scores(compare_rows).set_index(["subject", "case_id"])
    res = residual_rows.set_index(["subject", "case_id"])
    sty = style_rows.set_index(["subject", "case_id"]) if len(style_rows) else pd.DataFrame()
    rows = []
    for subj, c in kept:
        key = (subj, c)
        ch = checklist.loc[key] if key in checklist.index else None
        s_check = float(ch["s_checklist"]) if ch is not None else math.nan
        rr = res.loc[key] if key in res.index else None
        s_res = math.nan
        if rr is not None and rr["status"] in ("ok", "gated"):
            s_res = math.nan if rr["gate"] == "not_applicable" else 100.0 * float(rr["score"])
        s_sty = float(sty.loc[key, "s_style"]) if len(sty) and key in sty.index and sty.loc[key, "s_style"] is not None \
            else math.nan
        r_ref = residual.residual_ratio(texts[("human", c)], spans[("human", c)])
        r_own = residual.residual_ratio(texts[key], spans[key])
        rows.append({"subject": subj, "case_id": c, "s_checklist": s_check,
                     "s_checklist_low": float(ch["s_checklist_low"]) if ch is not None else math.nan,
                     "s_checklist_high": float(ch["s_checklist_high"]) if ch is not None else math.nan,
                     "unusable_items": int(ch["unusable"]) if ch is not None else None,
                     "s_residual": s_res, "s_style": s_sty, "r_reference": r_ref, "r_own": r_own,
                     "s_gavel_ref": score.gavel_ref(s_check, s_res, s_sty, r_ref, alpha)})
    return pd.DataFrame(rows)


def model_scores(scores: pd.DataFrame, by: list[str], seed: int) -> pd.DataFrame:
    rows = []
    for key, g in scores.groupby(by, sort=True):
        key = key if isinstance(key, tuple) else (key,)
        row = dict(zip(by, key))
        row["cases"] = len(g)
        for col in ("s_checklist", "s_residual", "s_style", "s_gavel_ref", "r_own", "r_reference"):
            row[col] = g[col].mean()
            row[f"{col}_n"] = int(g[col].notna().sum())
            if col.startswith("s_"):
                row[f"{col}_ci_low"], row[f"{col}_ci_high"] = stats.mean_interval(g[col].tolist(), seed=seed)
        rows.append(row)
    return pd.DataFrame(rows)


def results_tables(scores: pd.DataFrame, seed: int = 0) -> dict[str, pd.DataFrame]:
    """``summary_s_checklist`` and ``summary_bootstrap`` in the shapes of ``data/results/`` (so
    ``gavel.paper.figures`` draws a new run beside the paper's), plus ``gavel_ref_scores`` with every component."""
    from gavel.core import config

    frame = scores.copy()
    if "bin" not in frame:
        frame["bin"] = None
    rows = []
    for subject, g in frame.groupby("subject", sort=True):
        parts = [("all", g)] + [(b, gb) for b, gb in g.groupby("bin") if b]
        for length_bin, gb in parts:
            rows.append({"model": subject, "length_bin": length_bin, "s_checklist": gb["s_checklist"].mean(),
                         "s_checklist_low": gb["s_checklist_low"].mean(), "s_checklist_high": gb["s_checklist_high"].mean(),
                         "cases": int(gb["s_checklist"].notna().sum()), "ambiguous_cells": int(gb["unusable_items"].sum()),
                         "label": config.model_label(subject), "checklist_parts_released": 2})
    table = pd.DataFrame(rows)
    overall = table[table["length_bin"] == "all"].sort_values("s_checklist", ascending=False)
    table["rank"] = table["model"].map({m: i + 1 for i, m in enumerate(overall["model"])})
    boot, full = [], []
    for subject, g in frame.groupby("subject", sort=True):
        lo, hi = stats.mean_interval(g["s_checklist"].tolist(), seed=seed)
        blo, _ = stats.mean_interval(g["s_checklist_low"].tolist(), seed=seed)
        _, bhi = stats.mean_interval(g["s_checklist_high"].tolist(), seed=seed)
        boot.append({"model": subject, "label": config.model_label(subject), "s_checklist": g["s_checklist"].mean(),
                     "cases": int(g["s_checklist"].notna().sum()), "ci_low": lo, "ci_high": hi,
                     "bounds_ci_low": blo, "bounds_ci_high": bhi})
        row = {"model": subject, "label": config.model_label(subject), "cases": len(g)}
        for col in ("s_checklist", "s_residual", "s_style", "s_gavel_ref", "r_own", "r_reference"):
            row[col] = g[col].mean()
        full.append(row)
    out = {"summary_s_checklist": table, "summary_bootstrap": pd.DataFrame(boot), "gavel_ref_scores": pd.DataFrame(full)}
    if "checklist" in scores:  # every table of a run names its checklist (figures drawn from them do too)
        for t in out.values():
            t.insert(0, "checklist", scores["checklist"].iloc[0] if len(scores) else None)
    return out
