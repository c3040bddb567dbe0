"""The evidence tables of ``make results``: where each released evidence snippet occurs in its summary
(``grounding_tables``) and the residual ratio r of every summary with a released checklist
(``residual_ratio_table``), both from ``gavel.ref.grounding``. Kept together: the residual ratios locate the
same snippets in the same summaries as the grounding table, found once per process (its memo)."""

from __future__ import annotations

import sys

import numpy as np
import pandas as pd

from gavel.core import config
from gavel.paper import reconstruct
from gavel.ref import grounding


def _round(df: pd.DataFrame, digits: int = 4) -> pd.DataFrame:
    return df.round(digits)


#: r's matching variants (``gavel.ref.grounding.uncovered_spans``): (column suffix, match, values_first). The
#: paper leaves open how spans are matched; the first is our default (``r_percent``), the rest bound r.
R_VARIANTS = tuple((f"{match}_{'value_then_evidence' if first else 'evidence_only'}", match, first)
                   for first in (True, False) for match in ("fuzzy", "normalized", "exact"))


def residual_ratio_table(rel) -> pd.DataFrame:
    """Residual ratio r (%) from the released evidence: the deterministic first step of the residual stage
    (``gavel.ref.grounding.uncovered_spans``) on every summary whose checklist the release holds: the 12 models'
    benchmark summaries (GPT-oss 20B extractions) and the 40 human summaries of ``human.json``.

    r depends on how spans are matched, which the paper does not say: ``r_<match>_<order>_percent`` is r
    under each of ``R_VARIANTS`` (exact / normalised / fuzzy evidence matching; a value found in the summary
    covering its own words first, or evidence only), ``r_low_percent``/``r_high_percent`` their range;
    ``r_percent`` and the spread columns are the default (fuzzy, value then evidence). Rows per ``subset``:
    ``all`` the summaries the model has, ``part1``/``part2`` the benchmark's two 50-case halves (models with
    one released checklist half are compared with others on the same half)."""
    cv = rel.checklist_values
    sel = cv[cv["origin"] == "summary"]
    s = rel.summaries
    keep = ((s["model"] == "human") & (s["set"] == "human_eval")) | ((s["model"] != "human") & (s["set"] == "benchmark"))
    texts = {(m, c): t for m, c, t in reconstruct.records(s.loc[keep, ["model", "case_id", "text"]], named=False)}
    values: dict = {}
    for m, c, v, e in reconstruct.records(sel[["model", "case_id", "value", "evidence"]], named=False):
        values.setdefault((m, c), []).append((v, list(e)))
    per = None
    every = pd.DataFrame(grounding.residual_ratios(texts, values, variants=[(m, f) for _, m, f in R_VARIANTS]))
    for n, (name, _, _) in enumerate(R_VARIANTS):
        one = every[every["variant"] == n].drop(columns="variant").reset_index(drop=True)
        one = one.rename(columns={"r": f"r_{name}", "spans": f"spans_{name}"})
        per = one if per is None else per.merge(one, on=["who", "case_id"], how="outer")
    default = R_VARIANTS[0][0]
    per = per.rename(columns={f"r_{default}": "r", f"spans_{default}": "spans"})
    per["r_" + default] = per["r"]
    part = rel.cases[rel.cases["set"] == "benchmark"].set_index("case_id")["part"]
    per["part"] = per["case_id"].map(part)
    per.loc[per["who"] == "human", "part"] = np.nan
    frames = [per.assign(subset="all")]
    for p in (1, 2):
        frames.append(per[per["part"] == p].assign(subset=f"part{p}"))
    per = pd.concat(frames, ignore_index=True)
    g = per.groupby(["who", "subset"])
    out = pd.DataFrame({"summaries": g.size(), "r_percent": 100 * g["r"].mean(), "r_median_percent": 100 * g["r"].median(),
                        "r_q1_percent": 100 * g["r"].quantile(0.25), "r_q3_percent": 100 * g["r"].quantile(0.75),
                        "residual_spans_per_summary": g["spans"].mean()})
    variant_cols = []
    for name, _, _ in R_VARIANTS:
        out[f"r_{name}_percent"] = 100 * g[f"r_{name}"].mean()
        variant_cols.append(f"r_{name}_percent")
    out["r_low_percent"] = out[variant_cols].min(axis=1)
    out["r_high_percent"] = out[variant_cols].max(axis=1)
    out = out.reset_index().rename(columns={"who": "model"})
    out["set"] = out["model"].map(lambda m: "human_eval" if m == "human" else "benchmark")
    out["case_parts"] = out["model"].map(per[per["subset"] == "all"].groupby("who")["part"].agg(
        lambda x: "+".join(str(int(p)) for p in sorted(x.dropna().unique())))).fillna("")
    out["subset_order"] = out["subset"].map({"all": 0, "part1": 1, "part2": 2})
    out = out.sort_values(["model", "subset_order"]).drop(columns="subset_order").reset_index(drop=True)
    return _round(out)


def grounding_tables(rel) -> dict[str, pd.DataFrame]:
    """Where each evidence snippet of the released summary checklists occurs in the summary it was extracted
    from (gavel.ref.grounding): counts and shares per model and item, and per model over all items (``all``).

    Evidence is counted once per released entry: an entry whose ``value`` is a list becomes one value row
    per value (``checklist_values``), every row carrying the entry's evidence; only its first row counts."""
    bench = rel.summaries[rel.summaries["set"] == "benchmark"]
    s = dict(zip(zip(bench["model"], bench["case_id"]), bench["text"]))
    v = rel.checklist_values
    v = v[(v["origin"] == "summary") & (v["method"] == "llm")]
    v = v.drop_duplicates(subset=["model", "unit", "part", "case_id", "item", "entry"])
    rows = []
    no_summary: set = set()
    for r in reconstruct.records(v[["model", "case_id", "item", "evidence"]]):
        snippets = r.evidence if isinstance(r.evidence, list) else []
        if not snippets:
            rows.append({"model": r.model, "item": r.item, "status": "no_evidence"})
            continue
        text = s.get((r.model, r.case_id))
        if text is None:  # a damaged copy of the release: counted and said, not located
            no_summary.add((r.model, r.case_id))
            continue
        for snippet in snippets:
            hit = grounding.located(snippet, text)
            rows.append({"model": r.model, "item": r.item, "status": hit.status})
    if no_summary:
        print(f"evidence grounding: checklists of {len(no_summary)} (model, case) pairs have no summary in the "
              f"release and are left out: {sorted(no_summary)}; see the audit", file=sys.stderr)
    df = pd.DataFrame(rows)
    both = pd.concat([df, df.assign(item="all")], ignore_index=True)
    counts = both.pivot_table(index=["model", "item"], columns="status", aggfunc="size", fill_value=0)
    for col in (*grounding.STATUSES, "no_evidence"):
        if col not in counts:
            counts[col] = 0
    counts = counts[[*grounding.STATUSES, "no_evidence"]].reset_index()
    counts.columns.name = None
    counts["snippets"] = counts[list(grounding.STATUSES)].sum(axis=1)
    for col in grounding.STATUSES:
        counts[f"share_{col}"] = counts[col] / counts["snippets"].where(counts["snippets"] > 0)
    counts["label"] = counts["model"].map(config.model_label)
    return {"summary_evidence_grounding": _round(counts)}
