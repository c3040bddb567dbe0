"""How stable is a score? What changed between the N repeats of a run (``gavel.runs.repeats`` runs them).

With N > 1 the report (:func:`report`) is written beside repeat 1's tables:

``stability.csv``           per stage and item: units, how many flip between repeats (``flipped``, ``flip_share``),
                            the mean share of repeat pairs that disagree, units with an unusable answer
``stability_units.csv``     every unit that flipped, with its outcome in each repeat
``stability_summaries.csv`` per summary: mean and standard deviation over repeats of S_checklist, S_residual,
                            S_style, S_GAVEL-REF; Jaccard of the applicable-item sets (mean over repeat pairs)
``stability_models.csv``    per model: mean, standard deviation of the model mean over repeats, and a bootstrap
                            95% interval that resamples cases and, per drawn case, one repeat (so it includes
                            the between-repeat variance), beside the cases-only interval of repeat 1

A unit is one verdict: an extracted value set (extract, per summary and item), a relation or a set of matched
pairs (compare, per summary and item; residual_match, per summary), a rating (style, per summary and aspect).
Outcomes are read with the scores' reading contract: an unusable answer is its own outcome (``unusable``),
never a 0, so a verdict that turns unusable in one repeat is a flip to ``unusable``; a gated pair's outcome is
its gate.
"""

from __future__ import annotations

import itertools
import json
import math
from pathlib import Path

import numpy as np
import pandas as pd

from gavel.core import paired, stats
from gavel.core.items import titled
from gavel.core.spreadsheet import read_csv
from gavel.core.vocab import STYLE_ASPECTS
from gavel.runs.judgments import UNUSABLE

SCORES = ("s_checklist", "s_residual", "s_style", "s_gavel_ref")

APPLICABLE_GATES = ("one_empty", "identical", "single", "multi")
STAGES = ("extract", "compare", "residual_match", "style")


# ---------- outcomes of one repeat ----------
def _final(answers: pd.DataFrame, stage: str) -> dict:
    """(subject, case_id, item) -> the status of the last round of each answer of ``stage``."""
    if not len(answers):
        return {}
    a = answers[answers["stage"] == stage].sort_values("round", kind="stable")
    return {(r.subject, str(r.case_id), r.item): r.status for r in a.itertuples()}


def _judged(row) -> object:
    if row["status"] == "gated":
        return f"gate:{row['gate']}"
    if row["status"] != "ok":
        return UNUSABLE
    if isinstance(row.get("relation"), str):
        return f"relation:{row['relation']}"
    return f"pairs:{row['pairs']}"


def outcomes(tables: dict) -> dict[tuple[str, str, str, str], object]:
    """(stage, subject, case_id, item) -> the verdict of one repeat (see the module)."""
    out = {}
    values = tables["values"]
    found: dict = {}
    for v in (values.to_dict("records") if len(values) else []):
        found.setdefault((v["subject"], str(v["case_id"]), v["item"]), set()).add(str(v["value"]))
    for key, status in _final(tables["answers"], "extract").items():
        out[("extract", *key)] = json.dumps(sorted(found.get(key, ()))) if status == "ok" else UNUSABLE
    for stage in ("compare", "residual_match"):
        t = tables[stage]
        for row in (t.to_dict("records") if len(t) else []):
            out[(stage, row["subject"], str(row["case_id"]), row["item"])] = _judged(row)
    t = tables["style"]
    for row in (t.to_dict("records") if len(t) else []):
        for aspect in STYLE_ASPECTS:
            rating = row.get(aspect)
            usable = row["status"] == "ok" and rating is not None and not (isinstance(rating, float) and math.isnan(rating))
            out[("style", row["subject"], str(row["case_id"]), aspect)] = f"rating:{int(rating)}" if usable else UNUSABLE
    return out


def applicable_items(tables: dict) -> dict[tuple[str, str], frozenset]:
    """(subject, case_id) -> the checklist items whose compare gate is applicable (some value on either side)."""
    t = tables["compare"]
    out: dict = {}
    for row in (t.to_dict("records") if len(t) else []):
        s = out.setdefault((row["subject"], str(row["case_id"])), set())
        if row["gate"] in APPLICABLE_GATES:
            s.add(row["item"])
    return {k: frozenset(v) for k, v in out.items()}


def jaccard(a: frozenset, b: frozenset) -> float:
    return 1.0 if not a and not b else len(a & b) / len(a | b)


# ---------- the report ----------
def report(runs: list[dict], seed: int = 0) -> dict[str, pd.DataFrame]:
    """The stability tables of repeated evaluations (``runs``: each repeat's tables, repeat 1 first)."""
    if len(runs) < 2:
        raise ValueError(f"a stability report needs at least two repeats, got {len(runs)}")
    per_run = [outcomes(t) for t in runs]
    units = sorted(set().union(*per_run))
    flips, unit_rows = {}, []
    for unit in units:
        seen = [o.get(unit, "missing") for o in per_run]
        pairs = list(itertools.combinations(seen, 2))
        f = flips.setdefault(unit[0::3], {"units": 0, "flipped": 0, "disagree": 0.0, "unusable": 0,
                                          "to_unusable": 0})
        f["units"] += 1
        f["disagree"] += sum(a != b for a, b in pairs) / len(pairs)
        f["unusable"] += UNUSABLE in seen
        if len(set(seen)) > 1:
            f["flipped"] += 1
            f["to_unusable"] += UNUSABLE in seen
            unit_rows.append({"stage": unit[0], "subject": unit[1], "case_id": unit[2], "item": unit[3],
                              **{f"repeat_{r}": o for r, o in enumerate(seen, 1)}})
    order = {s: i for i, s in enumerate(STAGES)}
    stability = pd.DataFrame([{"stage": s, "item": i, "units": f["units"], "flipped": f["flipped"],
                               "flip_share": f["flipped"] / f["units"], "pair_disagreement": f["disagree"] / f["units"],
                               "unusable_units": f["unusable"], "flips_with_unusable": f["to_unusable"]}
                              for (s, i), f in sorted(flips.items(), key=lambda kv: (order.get(kv[0][0], 9), kv[0][1]))],
                             columns=["stage", "item", "units", "flipped", "flip_share", "pair_disagreement",
                                      "unusable_units", "flips_with_unusable"])
    repeat_cols = [f"repeat_{r}" for r in range(1, len(runs) + 1)]
    return {"stability": stability,
            "stability_units": pd.DataFrame(unit_rows, columns=["stage", "subject", "case_id", "item", *repeat_cols]),
            "stability_summaries": summary_stability(runs),
            "stability_models": model_stability(runs, seed)}


def _score_frame(runs: list[dict]) -> pd.DataFrame:
    frames = [t["scores"].assign(repeat=r, case_id=lambda d: d["case_id"].astype(str))
              for r, t in enumerate(runs, 1)]
    return pd.concat(frames, ignore_index=True)


def summary_stability(runs: list[dict]) -> pd.DataFrame:
    """Per summary: mean, standard deviation (over the repeats with a value) and count of each score;
    Jaccard of the applicable-item sets (mean and minimum over repeat pairs)."""
    scores = _score_frame(runs)
    sets = [applicable_items(t) for t in runs]
    rows = []
    for (subject, case_id), g in scores.groupby(["subject", "case_id"], sort=True):
        row = {"subject": subject, "case_id": case_id, "repeats": len(g)}
        for col in SCORES:
            x = g[col].dropna()
            row[f"{col}_mean"] = x.mean() if len(x) else math.nan
            row[f"{col}_std"] = float(x.std(ddof=1)) if len(x) > 1 else math.nan
            row[f"{col}_n"] = len(x)
        js = [jaccard(a.get((subject, case_id), frozenset()), b.get((subject, case_id), frozenset()))
              for a, b in itertools.combinations(sets, 2)]
        row["applicable_jaccard"], row["applicable_jaccard_min"] = float(np.mean(js)), float(min(js))
        row["applicable_changes"] = len({s.get((subject, case_id), frozenset()) for s in sets}) > 1
        rows.append(row)
    return pd.DataFrame(rows)


def repeat_interval(matrix: np.ndarray, seed: int = 0, n: int = stats.BOOTSTRAP_RESAMPLES) -> tuple[float, float]:
    """Percentile 95% interval of the mean over ``matrix`` (cases x repeats; NaN where a repeat has no value):
    each resample draws cases (``stats.resamples``) and, per drawn case, one of its repeats with a value (the
    two-level draws of ``gavel.core.paired.cell_draws``, one definition)."""
    m = np.asarray(matrix, float)
    m = m[~np.isnan(m).all(axis=1)] if m.ndim == 2 else m
    if not len(m):
        return math.nan, math.nan
    means = paired.one_model_means(m[None], np.random.default_rng(seed), n)
    return float(np.percentile(means, 2.5)), float(np.percentile(means, 97.5))


def model_stability(runs: list[dict], seed: int = 0) -> pd.DataFrame:
    """Per model and score: the mean over cases of each repeat, their mean and standard deviation, the
    two-level bootstrap interval (cases and repeats) and the cases-only interval of repeat 1."""
    scores = _score_frame(runs)
    rows = []
    for subject, g in scores.groupby("subject", sort=True):
        for col in SCORES:
            wide = g.pivot_table(index="case_id", columns="repeat", values=col, aggfunc="first", dropna=False)
            wide = wide.reindex(columns=range(1, len(runs) + 1))
            means = wide.mean(axis=0, skipna=True)
            lo, hi = repeat_interval(wide.to_numpy(float), seed)
            lo1, hi1 = stats.mean_interval(wide[1].tolist(), seed=seed)
            rows.append({"subject": subject, "score": col, "cases": len(wide), "mean": float(means.mean()),
                         "std_over_repeats": float(means.std(ddof=1)) if means.notna().sum() > 1 else math.nan,
                         **{f"repeat_{r}": float(m) for r, m in means.items()},
                         "ci_low": lo, "ci_high": hi, "repeat_1_ci_low": lo1, "repeat_1_ci_high": hi1})
    return pd.DataFrame(rows)


def read_report(out: str | Path) -> dict[str, pd.DataFrame]:
    """The stability tables written by ``evaluate_repeats`` to ``out`` (a clear error when there are none)."""
    out = Path(out)
    names = ("stability", "stability_units", "stability_summaries", "stability_models")
    missing = [n for n in names if not (out / f"{n}.csv").exists()]
    if missing:
        raise FileNotFoundError(f"{out}: no stability report ({', '.join(m + '.csv' for m in missing)} missing); "
                                f"run the evaluation with repeats >= 2")
    return {n: read_csv(out / f"{n}.csv", dtype={"case_id": str}) for n in names}


def flip_figure(stability: pd.DataFrame, title: str = "Share of verdicts that flip between repeats"):
    """A horizontal bar per stage and item: the share of its verdicts that flip between repeats."""
    import matplotlib.pyplot as plt

    t = stability.sort_values(["stage", "item"])
    fig, ax = plt.subplots(figsize=(7, max(2.0, 0.28 * len(t) + 1)))
    ax.barh([f"{s} / {i}" for s, i in zip(t["stage"], t["item"])], t["flip_share"], color="#4c72b0")
    ax.set_xlim(0, 1)
    ax.set_xlabel("flip share (units whose verdict is not the same in every repeat)")
    ax.set_title(titled(title, stability))
    ax.invert_yaxis()
    fig.tight_layout()
    return fig


def summary_line(result: dict, out: str | Path | None = None) -> str:
    """One paragraph for the command line: flip shares by stage and the spread of S_GAVEL-REF per model."""
    t = result["stability"]
    by_stage = t.groupby("stage", sort=False)[["units", "flipped"]].sum()
    parts = [f"{s}: {int(r.flipped)}/{int(r.units)} verdicts flip" for s, r in by_stage.iterrows()]
    m = result["stability_models"]
    m = m[m["score"] == "s_gavel_ref"]
    spread = "; ".join(f"{r.subject}: S_GAVEL-REF {r.mean:.1f} (sd over repeats {r.std_over_repeats:.2f}, 95% "
                       f"interval over cases and repeats {r.ci_low:.1f}-{r.ci_high:.1f})" for r in m.itertuples())
    return (f"stability over {len(result['runs'])} repeats: {'; '.join(parts)}\n  {spread}"
            + (f"\n  report: {Path(out) / 'stability.csv'} (and stability_units, _summaries, _models)" if out else ""))
