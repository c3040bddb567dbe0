"""Score stage: compared items -> S_checklist per summary; with residual and style -> S_GAVEL-REF (Eq. 2).

An item whose answer was unusable (status other than ``ok``/``gated``) has no score: it is left out of the
best estimate and bounded by 0 and 1 (``s_checklist_low`` / ``_high``), exactly as ``make results`` does for
the release's unreadable judgments; the number of such items is a column, never hidden.
"""

from __future__ import annotations

import math

import pandas as pd

from gavel.ref import scoring

SUMMARY_KEYS = ["subject", "case_id"]


def checklist_scores(rows: pd.DataFrame) -> pd.DataFrame:
    """Per (subject, case): S_checklist best / low / high, applicable items, unusable items."""
    usable = rows["status"].isin(["ok", "gated"])
    best = rows["score"].where(usable)
    low = best.where(usable, 0.0).where(~(usable & rows["score"].isna()))
    high = best.where(usable, 1.0).where(~(usable & rows["score"].isna()))
    frame = rows[SUMMARY_KEYS].assign(best=best.astype(float), low=low.astype(float), high=high.astype(float),
                                      unusable=(~usable).astype(int))
    g = frame.groupby(SUMMARY_KEYS, sort=True)
    out = pd.DataFrame({
        "s_checklist": 100 * g["best"].mean(), "s_checklist_low": 100 * g["low"].mean(),
        "s_checklist_high": 100 * g["high"].mean(), "applicable": g["best"].count(), "unusable": g["unusable"].sum(),
    }).reset_index()
    return out


def mean_over_cases(per_summary: pd.DataFrame, by: list[str] | None = None, counts=("unusable",)) -> pd.DataFrame:
    """Mean of per-summary (per-case) scores, every ``s_*`` column, over cases, per subject (or ``by``); a
    summary with no applicable item is left out of the mean and counted; the ``counts`` columns present are
    summed. The one aggregation over cases: `gavel evaluate`, document methods, replay and the result tables."""
    by = by or ["subject"]
    cols = [c for c in per_summary.columns if c.startswith("s_")]
    g = per_summary.groupby(by, sort=True, dropna=False)
    out = g[cols].mean()
    out["cases"] = g["s_checklist"].count()
    for col in counts:
        if col in per_summary:
            out[col] = g[col].sum()
    return out.reset_index()


def gavel_ref(s_checklist: float, s_residual: float, s_style: float, r: float, alpha: float = scoring.ALPHA) -> float:
    """Eq. 2 for one summary; NaN when a component is missing (never a silent 0)."""
    if any(isinstance(x, float) and math.isnan(x) for x in (s_checklist, s_style, r)):
        return math.nan
    if r > 0 and (s_residual is None or (isinstance(s_residual, float) and math.isnan(s_residual))):
        return math.nan
    return scoring.s_gavel_ref(s_checklist, 0.0 if r == 0 else s_residual, s_style, r, alpha)
