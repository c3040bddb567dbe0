"""Everything the release supports, computed from it: the tables behind ``make results``.

``compute(rel)`` returns named DataFrames (numbers and labels only, no release text); ``write(tables)``
stores them as CSV under ``data/results/``; ``gavel.paper.reproduction`` turns them into docs/REPRODUCTION.md.

Aggregation: S_checklist of one summary (or one extracted checklist) is 100 x the mean matching score of its
applicable items; a model's S_checklist is the mean over its cases. Bounds are computed per case and then
averaged, so they are the true extremes of the mean given the ambiguous cells (see gavel.paper.reconstruct).
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd

from gavel.core import config, paired
from gavel.core.draws import draw_counts, group_correlations
from gavel.core.items import GROUPS, ITEMS
from gavel.core.spreadsheet import write_csv
from gavel.core.stats import bootstrap_means, endpoint, resamples
from gavel.core.tokens import LENGTH_BINS
from gavel.metrics import text as metrics
from gavel.paper import extraction_cost, forked, reconstruct
from gavel.paper.evidence import R_VARIANTS, grounding_tables, residual_ratio_table  # noqa: F401 -- read as results.*
from gavel.paper.reconstruct import STATUS_OUTCOMES, Status
from gavel.ref import scoring
from gavel.ref.stages import score
from gavel.release.judge import RELATIONS

SEED = 20251122
#: the last :func:`compute`'s wall seconds in :func:`release_comparisons` and in all (`gavel results` prints them)
SECONDS: dict[str, float] = {}
LENGTH_BIN_ORDER = list(LENGTH_BINS)
EQUAL, MODEL_CONTAINS, REFERENCE_CONTAINS, DIFFERENT = RELATIONS
OVER_RELATIONS = {MODEL_CONTAINS, DIFFERENT}
UNDER_RELATIONS = {REFERENCE_CONTAINS, DIFFERENT}


def _round(df: pd.DataFrame, digits: int = 4) -> pd.DataFrame:
    return df.round(digits)


def per_case(cells: pd.DataFrame, by: list[str]) -> pd.DataFrame:
    return reconstruct.aggregate(cells, by + ["case_id"])


def checklist_over_cases(pc: pd.DataFrame, by: list[str]) -> pd.DataFrame:
    """S_checklist and its bounds over cases (the one aggregation, ``score.mean_over_cases``), with the
    number of ambiguous cells."""
    out = score.mean_over_cases(pc[[*by, "s_checklist", "s_checklist_low", "s_checklist_high", "ambiguous"]], by,
                                counts=("ambiguous",))
    return out.rename(columns={"ambiguous": "ambiguous_cells"})


CORRELATIONS = ("pearson", "spearman", "kendall")


def agreement_intervals(scores: pd.DataFrame, metrics_: list[str], rng: np.random.Generator,
                        reference: str = "s_checklist") -> pd.DataFrame:
    """Bootstrap 95% intervals of the correlations in ``metrics.agreement``: per summary, resampling the
    cases (a drawn case brings all its summaries); per system, resampling the models (their means over the
    summaries both scores have). The same resamples serve every metric. Resamples where a correlation is
    undefined (e.g. a constant draw of few models) are left out of its percentiles; ``resamples`` counts
    the ones used (the fewest over the three correlations)."""
    rows = []
    case_ids = sorted(scores["case_id"].unique())
    case_draws = resamples(len(case_ids), rng)
    model_ids = sorted(scores["model"].unique())
    model_draws = resamples(len(model_ids), rng)
    case_counts, model_counts = (draw_counts(d, len(ids)) for d, ids in ((case_draws, case_ids),
                                                                           (model_draws, model_ids)))
    for metric in metrics_:
        sel = scores.dropna(subset=[metric, reference])
        case_of = sel["case_id"].map({c: i for i, c in enumerate(case_ids)}).to_numpy()
        per_summary = group_correlations(sel[metric].to_numpy(float), sel[reference].to_numpy(float),
                                         case_of, case_counts)
        means = sel.groupby("model")[[metric, reference]].mean().reindex(model_ids)
        mx, my = means[metric].to_numpy(float), means[reference].to_numpy(float)
        have = ~np.isnan(mx)  # a model without the metric is left out of the draws that pick it
        per_system = group_correlations(mx[have], my[have], np.arange(int(have.sum())), model_counts[:, have])
        for level, boots in (("summary", per_summary), ("system", per_system)):
            row = {"metric": metric, "level": level}
            used = []
            for k, name in enumerate(CORRELATIONS):
                ok = boots[:, k][~np.isnan(boots[:, k])]
                used.append(len(ok))
                row[f"{name}_ci_low"], row[f"{name}_ci_high"] = endpoint(ok, 2.5), endpoint(ok, 97.5)
            row["resamples"] = min(used)
            rows.append(row)
    return pd.DataFrame(rows)


def summary_tables(rel, values: dict | None = None) -> dict[str, pd.DataFrame]:
    cells = reconstruct.summary_cells(rel, values=values)
    cases = rel.cases[rel.cases["set"] == "benchmark"][["case_id", "length_bin", "part"]]
    labels = {m.release_name: m.label for m in config.models()}
    open_weights = {m.release_name: m.open_weights for m in config.models()}
    pc = per_case(cells, ["model"]).merge(cases, on="case_id")
    overall = checklist_over_cases(pc, ["model"])
    overall["length_bin"] = "all"
    by_bin = checklist_over_cases(pc, ["model", "length_bin"])
    table = pd.concat([by_bin, overall], ignore_index=True)
    table["label"] = table["model"].map(labels)
    chk = rel.files[(rel.files["kind"] == "summary_checklists") & (rel.files["model"] != "human")]
    released = chk[chk["status"] == "ok"].groupby("model").size()
    table["checklist_parts_released"] = table["model"].map(released).fillna(0).astype(int)
    order = overall.sort_values("s_checklist", ascending=False)["model"].tolist()
    table["rank"] = table["model"].map({m: i + 1 for i, m in enumerate(order)})
    table = table.sort_values(["rank", "length_bin"], key=lambda s: s.map(
        {b: i for i, b in enumerate(LENGTH_BIN_ORDER + ["all"])}) if s.name == "length_bin" else s)

    # bootstrap 95% intervals over cases, and for differences between ranked neighbours (paired on cases)
    ci, diffs = bootstrap_tables(pc, order, labels)

    # item-level matching scores (Figures 10-12) and groups (Figure 3)
    item_scores = (cells.assign(estimated=(cells["estimate_source"] != "").astype(int)).groupby(["model", "item"])
                   .agg(score=("best", "mean"), low=("low", "mean"), high=("high", "mean"),
                        applicable=("best", "count"), estimated=("estimated", "sum"))  # cells with an estimate
                   .reset_index())
    item_scores["label"] = item_scores["model"].map(labels)
    group_of = {it.key: it.group for it in ITEMS}
    cells_g = cells.assign(group=cells["item"].map(group_of))
    groups = (cells_g.groupby(["model", "group"]).agg(score=("best", "mean"), low=("low", "mean"),
                                                      high=("high", "mean"), applicable=("best", "count"))
              .reset_index())
    groups["group_label"] = groups["group"].map({g.key: g.label for g in GROUPS})
    groups["label"] = groups["model"].map(labels)

    spec = specification_rates(rel, cells)

    # summary length vs score (Figure 6, appendix E): S_checklist stands in for S_GAVEL-REF
    words = rel.summaries[rel.summaries["set"] == "benchmark"][["model", "case_id", "words"]]
    lengths = (words.merge(cases, on="case_id").groupby(["model", "length_bin"])["words"]
               .agg(mean_words="mean", summaries="size").reset_index())
    lengths["label"] = lengths["model"].map(labels).fillna("Human")
    joined = pc.merge(words, on=["model", "case_id"]).dropna(subset=["s_checklist"])
    corr_rows = []
    for name, sel in (("all", joined),
                      ("proprietary", joined[~joined["model"].map(open_weights)]),
                      ("open_weights", joined[joined["model"].map(open_weights)])):
        corr_rows.append({"models": name, "n": len(sel),
                          **scoring.correlations(sel["words"].to_numpy(), sel["s_checklist"].to_numpy())})
    corr = pd.DataFrame(corr_rows)

    start = time.perf_counter()
    comparisons, comparison_models = release_comparisons(pc, cells)
    SECONDS["comparisons"] = time.perf_counter() - start
    status = cells.groupby(["model", "status"]).size().rename("cells").reset_index()
    lost = reconstruct.lost_cases(rel)
    return {"summary_s_checklist": _round(table), "summary_bootstrap": _round(ci),
            "summary_neighbour_differences": _round(diffs), "summary_item_scores": _round(item_scores),
            "summary_group_scores": _round(groups), "summary_specification": _round(spec),
            "summary_lengths": _round(lengths), "summary_length_correlations": _round(corr),
            "summary_cell_status": status, "summary_lost_cases": lost,
            "comparisons": comparisons, "comparison_models": _round(comparison_models),
            "summary_case_scores": _round(pc[["model", "case_id", "s_checklist", "s_checklist_low",
                                              "s_checklist_high"]].sort_values(["model", "case_id"]))}


def bootstrap_tables(pc: pd.DataFrame, order: list[str], labels: dict) -> tuple[pd.DataFrame, pd.DataFrame]:
    """95% intervals over cases for each model, and for the difference between neighbours in the ranking.

    ``ci_low``/``ci_high`` resample the best estimates only (sampling uncertainty). ``bounds_ci_low`` /
    ``bounds_ci_high`` carry the reconstruction's uncertainty too: the 2.5th percentile of the resampled
    lower-bound series and the 97.5th of the upper-bound series. Neighbours are compared on the cases both
    have, always as ``difference = model_a - model_b`` where ``model_a`` is ranked above ``model_b`` by the
    overall best estimate (a negative difference means ``model_b`` is ahead on their common cases); they are
    ``separated`` only when the interval carrying both uncertainties excludes 0."""
    rng = np.random.default_rng(SEED)
    wide = {col: pc.pivot_table(index="case_id", columns="model", values=col, dropna=False)
            for col in ("s_checklist", "s_checklist_low", "s_checklist_high")}
    ci_rows = []
    for m in order:
        v = wide["s_checklist"][m].dropna().to_numpy()
        lo = wide["s_checklist_low"][m].dropna().to_numpy()
        hi = wide["s_checklist_high"][m].dropna().to_numpy()
        boots, boots_lo, boots_hi = (bootstrap_means(x, rng) for x in (v, lo, hi))
        ci_rows.append({"model": m, "label": labels[m], "s_checklist": v.mean(), "cases": len(v),
                        "ci_low": endpoint(boots, 2.5), "ci_high": endpoint(boots, 97.5),
                        "bounds_ci_low": endpoint(boots_lo, 2.5), "bounds_ci_high": endpoint(boots_hi, 97.5)})
    diff_rows = []
    for a, b in zip(order, order[1:]):
        best = wide["s_checklist"][[a, b]].dropna()
        common = best.index
        d = (best[a] - best[b]).to_numpy()
        d_lo = (wide["s_checklist_low"][a] - wide["s_checklist_high"][b]).reindex(common).dropna().to_numpy()
        d_hi = (wide["s_checklist_high"][a] - wide["s_checklist_low"][b]).reindex(common).dropna().to_numpy()
        boots, boots_lo, boots_hi = (bootstrap_means(x, rng) for x in (d, d_lo, d_hi))
        lo_all, hi_all = endpoint(boots_lo, 2.5), endpoint(boots_hi, 97.5)
        diff_rows.append({"model_a": a, "model_b": b, "common_cases": len(d), "difference": d.mean(),
                          "ci_low": endpoint(boots, 2.5), "ci_high": endpoint(boots, 97.5),
                          "difference_low": d_lo.mean(), "difference_high": d_hi.mean(),
                          "bounds_ci_low": lo_all, "bounds_ci_high": hi_all,
                          # on the exact percentiles: a rounded endpoint of 0.0 must not decide it
                          "separated": bool(np.percentile(boots_lo, 2.5) > 0
                                            or np.percentile(boots_hi, 97.5) < 0)})
    return pd.DataFrame(ci_rows), pd.DataFrame(diff_rows)


#: the model checklist of these cells is not released: rule 6 estimates their best value
UNRELEASED = (reconstruct.Status.MODEL_UNKNOWN_REF_EMPTY, reconstruct.Status.MODEL_UNKNOWN_REF_NONEMPTY,
              reconstruct.Status.MODEL_UNKNOWN_REF_CONSENSUS, reconstruct.Status.BOTH_UNKNOWN)
#: the other cells every release comparison is computed on (docs/gavel-ref.md "Claims about the release")
VARIANTS = ("released", "low", "high")
VARIANT_COLUMNS = ["cases", "difference", "p_value", "p_holm", "verdict"]


def _compare_long(long: pd.DataFrame, models: list[str], full: bool = True) -> list[pd.DataFrame]:
    """[pairs, models] of every score (and item), ``score`` and ``item`` first; ``full=False``: ``paired.verdicts``."""
    # every column coded once (not a groupby and a factorize per score): the scores in the order they first
    # appear, each one's rows in their order, its cases sorted (the codes of cases sorted once are in order)
    score_code, score_names = pd.factorize(long["score"])
    item_code, item_names = pd.factorize(long["item"])
    group = score_code * len(item_names) + item_code
    case_code = pd.factorize(long["case_id"], sort=True)[0]
    if (case_code < 0).any():
        raise ValueError(f"a score without a case id: {long[case_code < 0].head(3).to_dict('records')}")
    model_code, value_of = pd.Index(models).get_indexer(long["model"]), long["value"].to_numpy(float)
    rows_of = np.argsort(group, kind="stable")
    bounds = np.flatnonzero(np.diff(group[rows_of])) + 1
    keys, scores = [], []
    for rows in sorted(np.split(rows_of, bounds), key=lambda r: r[0]) if len(rows_of) else []:
        cases, case = np.unique(case_code[rows], return_inverse=True)  # every case of the score, sorted
        model, value = model_code[rows], value_of[rows]
        values = np.full((len(models), len(cases), 1), np.nan)  # models x cases x 1
        first = np.flatnonzero((model >= 0) & ~np.isnan(value))[::-1]  # written last to first: the first stays
        values[model[first], case[first], 0] = value[first]
        keys.append((score_names[score_code[rows[0]]], item_names[item_code[rows[0]]]))
        scores.append(values)
    if full:  # every score's tables put together once (paired.compare_many), not a table per score
        pairs, per_model, sizes = paired.compare_many(scores, models, seed=SEED)
        tables, sizes = [pairs, per_model], [[a for a, _ in sizes], [b for _, b in sizes]]
    else:
        pairs, sizes = paired.verdicts_many(scores, models)
        tables, sizes = [pairs], [sizes]
    for t, rows in zip(tables, sizes):
        for at, name in ((1, "item"), (0, "score")):  # the keys once per table, not an assign per score
            t.insert(0, name, np.repeat([k[at] for k in keys], rows))
    return tables


def _long(pc: pd.DataFrame, cells: pd.DataFrame, case_col: str, cell_col: str, items: bool = True) -> pd.DataFrame:
    per_item = cells[["model", "case_id"]].assign(score="item", item=cells["item"], value=100 * cells[cell_col])
    return pd.concat([pc[["model", "case_id"]].assign(score="s_checklist", item="", value=pc[case_col]),
                      *([per_item] if items else [])], ignore_index=True)


def release_comparisons(pc: pd.DataFrame, cells: pd.DataFrame, items: bool = True) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Every pair of the 12 models on their common cases, for S_checklist and each item (points, 0-100): the
    tables of a run's ``comparisons.csv`` and ``comparison_models.csv`` (``gavel.core.paired``) over the best
    estimates, one cell per case (the release has one judgment per pair), and each pair again (its own family,
    Holm over the pairs of the score) under the reconstruction's other choices (``VARIANTS``):

    - ``released``: only the cases whose model checklist is released: a model's case with any ``UNRELEASED``
      cell (a rule-6 estimate) drops out whole, so each S_checklist kept is over the same items as the best
      estimate's;
    - ``low`` / ``high``: every cell at its lower / upper bound (every model alike).

    ``{variant}_{cases, difference, p_value, p_holm, verdict}`` per pair; ``real``: the verdict is ``a better``
    (or ``b better``) on the best estimates and the same under every variant. ``items=False``: S_checklist only."""
    models = sorted(pc["model"].unique())
    pairs, per_model = _compare_long(_long(pc, cells, "s_checklist", "best", items), models)
    # a model's case with any estimated cell drops out whole (its rows' codes, not a merge of the tables)
    case = pd.factorize(cells["model"])[0] * (len(cells) + 1) + pd.factorize(cells["case_id"])[0]
    estimated = np.unique(case[cells["status"].isin(UNRELEASED).to_numpy()])
    kept = cells[~np.isin(case, estimated)].reset_index(drop=True)
    inputs = {"released": _long(per_case(kept, ["model"]), kept, "s_checklist", "best", items),
              "low": _long(pc, cells, "s_checklist_low", "low", items),
              "high": _long(pc, cells, "s_checklist_high", "high", items)}
    key = ["score", "item", "model_a", "model_b"]
    real = pairs["verdict"].isin(["a better", "b better"])
    for name in VARIANTS:
        other = _compare_long(inputs[name], models, full=False)[0]
        # the same pair either way round: the best estimates' model_a first
        flipped = other.rename(columns={"model_a": "model_b", "model_b": "model_a"})
        flipped["difference"] = -flipped["difference"]
        flipped["verdict"] = flipped["verdict"].replace({"a better": "b better", "b better": "a better"})
        both = pd.concat([other, flipped], ignore_index=True).drop_duplicates(key)
        got = pairs[key].merge(both[key + VARIANT_COLUMNS], on=key, how="left")
        for col in VARIANT_COLUMNS:
            pairs[f"{name}_{col}"] = got[col].to_numpy()
        real &= pairs[f"{name}_verdict"].to_numpy() == pairs["verdict"].to_numpy()
    pairs["real"] = real
    return (pairs.round({c: 4 for c in pairs.columns if not c.endswith(("p_value", "p_holm", "holm_level"))}),
            per_model)


def _outcome_columns(outs) -> tuple[bool, ...]:
    """``specification_rates``' columns of one cell whose possible outcomes are ``outs`` (the first: the best
    estimate): over, over_lo, over_hi, ref, ref_lo, ref_hi, under, r_lo, u_lo, r_hi, u_hi."""
    best = outs[0]
    pairs = {(o.ref_has, o.ref_has and o.under) for o in outs}
    # lowest ratio: a reference case without under-specification, else no reference, else forced
    low = (True, False) if (True, False) in pairs else (False, False) if (False, False) in pairs else (True, True)
    # highest ratio: an under-specified reference case, else no reference, else forced
    high = (True, True) if (True, True) in pairs else (False, False) if (False, False) in pairs else (True, False)
    return (best.over, all(o.over for o in outs), any(o.over for o in outs), best.ref_has,
            all(o.ref_has for o in outs), any(o.ref_has for o in outs), best.ref_has and best.under, *low, *high)


def specification_rates(rel, cells: pd.DataFrame) -> pd.DataFrame:
    """Over- and under-specification per model and item, with bounds.

    A summary *over-specifies* an item when its checklist holds something the reference's does not: the
    judge lists model-only values, or says the model's value contains the reference's or differs from it,
    or the model has values where the reference has none. It *under-specifies* when the reference holds
    something the model's does not (reference-only values, reference contains model, different, or the
    model has nothing where the reference has values). Over-specification rate: share of all scored cases;
    under-specification rate: share of the cases whose reference holds the item. Judge files in A/B wording
    (orientation unknown) cannot say which side is which: their cases are left out (column ``cases``).

    Unjudged cells leave the outcome open (``reconstruct.STATUS_OUTCOMES``): the best estimate takes each
    status's first outcome; ``over_low``/``over_high`` and ``under_low``/``under_high`` are the extremes of
    the rates over every outcome the release allows. ``reference_cases_low``/``_high`` bound the number of
    cases whose reference holds the item (the under-specification rate's denominator)."""
    j = rel.judgments[rel.judgments["task"] == "summary"]
    unknown = j.loc[j["orientation"] == "unknown", ["model", "case_id"]].drop_duplicates()
    df = cells[["model", "case_id", "item", "status"]].merge(
        unknown.assign(_ab=True), on=["model", "case_id"], how="left")
    df = df[df["_ab"].isna()].drop(columns="_ab")
    df = df.merge(j[["model", "case_id", "item", "kind", "relation", "only_in_model", "only_in_reference"]],
                  on=["model", "case_id", "item"], how="left")
    judged = (df["status"] == Status.JUDGED).to_numpy()
    rel_kind = (df["kind"] == "relation").to_numpy()
    n_only_model = df["only_in_model"].map(lambda x: len(x) if isinstance(x, list) else 0).to_numpy()
    n_only_ref = df["only_in_reference"].map(lambda x: len(x) if isinstance(x, list) else 0).to_numpy()
    over_j = (rel_kind & df["relation"].isin(OVER_RELATIONS).to_numpy()) | (~rel_kind & (n_only_model > 0))
    under_j = (rel_kind & df["relation"].isin(UNDER_RELATIONS).to_numpy()) | (~rel_kind & (n_only_ref > 0))
    # per cell: can it be over (o1), must it be (o0); (ref_has, under) choices for the ratio's extremes
    names = ("over", "over_lo", "over_hi", "ref", "ref_lo", "ref_hi", "under", "r_lo", "u_lo", "r_hi", "u_hi")
    # a cell's row depends only on its status, or for a judged cell on its two verdicts: each distinct one once
    keys = [(True, o, u) if j else (False, st, None) for j, st, o, u in
            zip(judged.tolist(), df["status"].to_numpy(), over_j.tolist(), under_j.tolist())]
    seen = {k: _outcome_columns((reconstruct.Outcome(True, k[1], k[2]),) if k[0] else STATUS_OUTCOMES[Status(k[1])])
            for k in set(keys)}
    df = df.assign(**dict(zip(names, (list(c) for c in zip(*map(seen.__getitem__, keys)))))
                   if keys else {k: [] for k in names})
    g = df.groupby(["model", "item"])
    out = pd.DataFrame({"cases": g.size(), "over_rate": g["over"].mean(), "reference_has_item": g["ref"].sum()})
    out["under_rate"] = g["under"].sum() / out["reference_has_item"].where(out["reference_has_item"] > 0)
    out["over_low"] = g["over_lo"].mean()
    out["over_high"] = g["over_hi"].mean()
    r_lo, r_hi = g["r_lo"].sum(), g["r_hi"].sum()
    out["under_low"] = g["u_lo"].sum() / r_lo.where(r_lo > 0)
    out["under_high"] = g["u_hi"].sum() / r_hi.where(r_hi > 0)
    out["reference_cases_low"] = g["ref_lo"].sum()
    out["reference_cases_high"] = g["ref_hi"].sum()
    out["judged"] = g["status"].apply(lambda x: int((x == Status.JUDGED).sum()))
    return out.reset_index()


def document_tables(rel, values: dict | None = None) -> dict[str, pd.DataFrame]:
    cells = reconstruct.document_cells(rel, values=values)
    keys = ["method", "model", "configuration"]
    pc = per_case(cells, keys)
    scores = checklist_over_cases(pc, keys)
    # tokens per case: input + output, averaged over the cases the released token counts cover (``token_cases``):
    # an agent run's cases; for the other methods the cases whose checklists the files with token totals hold
    # (an empty end-to-end batch file has neither checklists nor token counts: its cases are not counted)
    g = rel.agent_runs.groupby(["model", "configuration"])
    agent = g[["input_tokens", "output_tokens"]].sum()
    agent["token_cases"] = g["case_id"].nunique()
    agent = agent.reset_index()
    agent["method"] = "agent"
    ts = rel.token_stats[(rel.token_stats["scope"] == "file") &
                         rel.token_stats["kind"].isin(["end_to_end", "chunk_by_chunk"])]
    cases_in_file = rel.checklist_items.groupby("file")["case_id"].agg(set)
    other = ts.groupby(["kind", "model"])[["input_tokens", "output_tokens"]].sum()
    other["token_cases"] = ts.groupby(["kind", "model"])["file"].agg(
        lambda fs: len(set().union(*(cases_in_file.get(f, set()) for f in set(fs)))))
    other = other.reset_index().rename(columns={"kind": "method"})
    other["configuration"] = ""
    tokens = pd.concat([agent, other], ignore_index=True)
    for col in ("input_tokens", "output_tokens"):
        tokens[f"{col}_per_case"] = tokens[col] / tokens["token_cases"].where(tokens["token_cases"] > 0)
    tokens["total_tokens_per_case"] = tokens["input_tokens_per_case"] + tokens["output_tokens_per_case"]
    files = rel.files
    complete = {}
    for (method, model), sel in files[files["kind"] == "document_checklists"].groupby(
            files["file"].str.split("/").str[1].to_frame().assign(model=files["model"]).apply(tuple, axis=1)
            .rename("k")):
        complete[(method, model)] = bool((sel["status"] == "ok").all())
    tokens["token_files_complete"] = [
        True if m == "agent" else complete.get((m, mod), False)
        for m, mod in zip(tokens["method"], tokens["model"])]
    table = scores.merge(tokens, on=keys, how="outer")
    table["agents"] = table["configuration"].map({"all": 1, "grouped": 9, "individual": 26})
    table["label"] = table["model"].map(config.model_label)
    status = cells.groupby(keys + ["status"], dropna=False).size().rename("cells").reset_index()
    return {"document_s_checklist": _round(table), "document_cell_status": status}


def case_tables(rel) -> dict[str, pd.DataFrame]:
    c = rel.cases[rel.cases["set"] == "benchmark"]
    year = c["filing_date"].str[:4]
    by_bin = c.assign(filed_2025=year == "2025").groupby("length_bin").agg(
        cases=("case_id", "size"), filed_2025=("filed_2025", "sum"),
        tokens_missing=("total_tokens", lambda s: int(s.isna().sum())), mean_tokens=("total_tokens", "mean"))
    return {"benchmark_cases": _round(by_bin.reset_index())}


def text_scores(rel) -> pd.DataFrame:
    """ROUGE-1/2/L and embedding similarity of every model summary against its human reference (model,
    case_id, ``metrics.TEXT_METRICS``), in the order of ``text_metric_tables``."""
    s = rel.summaries[rel.summaries["set"] == "benchmark"]
    refs = s[s["model"] == "human"].set_index("case_id")["text"]
    cand = s[s["model"] != "human"].sort_values(["model", "case_id"])
    missing = sorted(set(cand["case_id"]) - set(refs.index))
    if missing:  # a damaged copy of the release (the audit names the file): those summaries are left out, said so
        left = cand["case_id"].isin(missing)
        print(f"text metrics: {int(left.sum())} model summaries have no human reference in the release and are "
              f"left out (cases {', '.join(map(str, missing))}); see the audit", file=sys.stderr)
        cand = cand[~left]
    pairs = list(zip(cand["text"], cand["case_id"].map(refs)))
    rouge = pd.DataFrame([metrics.rouge_scores(summary, ref) for summary, ref in pairs])
    metrics.save_rouge_stems()
    emb = metrics.embedding_similarity([p[0] for p in pairs], [p[1] for p in pairs])
    scores = cand[["model", "case_id"]].reset_index(drop=True)
    # cosine to 3 decimals: float kernels of other CPUs move it by ~1e-8, which must not flip a rounded digit
    return pd.concat([scores, rouge], axis=1).assign(embedding=emb.astype(float).round(3))


def text_metric_tables(rel, case_scores: pd.DataFrame, scores: pd.DataFrame | None = None) -> dict[str, pd.DataFrame]:
    """ROUGE-1/2/L and embedding similarity of every model summary against its human reference, and how
    each agrees with S_checklist (gavel.metrics.text). Scores are rounded (ROUGE to 4 decimals, embedding cosine to
    3) before the agreement is computed, so the committed tables reproduce exactly. ``scores``: ``text_scores(rel)``
    when the caller has it already."""
    scores = text_scores(rel) if scores is None else scores
    scores = scores.merge(case_scores, on=["model", "case_id"], how="left")
    scores = _round(scores[["model", "case_id", "s_checklist", "s_checklist_low", "s_checklist_high",
                            *metrics.TEXT_METRICS]])
    llm = metrics.load_llm_scores()
    llm_metrics = [c for c in llm.columns if c not in ("model", "case_id")]
    if llm_metrics:  # LLM-based metrics join where their outputs exist (data/llm_scores/)
        scores = scores.merge(_round(llm), on=["model", "case_id"], how="left")
    all_metrics = [*metrics.TEXT_METRICS, *llm_metrics]
    agree = metrics.agreement(scores, all_metrics)
    intervals = agreement_intervals(scores, all_metrics, np.random.default_rng(SEED))
    agree = agree.merge(intervals, on=["metric", "level"], how="left")
    cols = ["metric", "level", "n"]
    for name in CORRELATIONS:
        cols += [name, f"{name}_ci_low", f"{name}_ci_high"]
    agree = agree[cols + [c for c in agree.columns if c not in cols]]
    return {"summary_text_metrics": scores, "metric_agreement": _round(agree),
            "metric_model_means": _round(model_means(scores, all_metrics))}


def model_means(scores: pd.DataFrame, metrics_: list[str], reference: str = "s_checklist") -> pd.DataFrame:
    """Each model's mean of ``reference`` and every metric, all over one set of summaries: those that have
    every score (a model whose S_checklist is missing for some summaries, e.g. a truncated judge file, has
    its metric means over the same subset). ``summaries`` counts that set, ``summaries_released`` the
    model's summaries in the table."""
    complete = scores.dropna(subset=[reference, *metrics_])
    means = complete.groupby("model")[[reference, *metrics_]].mean()
    means["summaries"] = complete.groupby("model").size()
    means["summaries_released"] = scores.groupby("model").size()
    means = means.sort_values(reference, ascending=False).reset_index()
    means["label"] = means["model"].map(config.model_label)
    return means


def compute(rel, text_metrics: bool = True, fork: bool = False) -> dict[str, pd.DataFrame]:
    """Every result table. ``text_metrics=False`` leaves out ROUGE and embedding similarity (the embedding
    model is the slow part; its vectors are cached under data/interim/embeddings). ``fork``: the text scores
    and the evidence tables (grounding, residual ratios) in a child process beside the summary tables, the
    text metrics' agreement, the document tables and the costs (``forked.run_beside``; one process where
    there is one core); the same tables."""
    start = time.perf_counter()
    values = reconstruct.value_sets(rel.checklist_values)  # computed once, used by both tasks

    # the two sides about even (the child was the longer one by some 0.5-0.9 s, the parent waiting for it):
    # the child the text scores, grounding and residual ratios; the parent the summary tables, the text
    # metrics' agreement, the document tables and the costs
    def beside():  # what the summary tables wait for first: the text scores; then the evidence tables
        yield text_scores(rel) if text_metrics else None
        yield grounding_tables(rel), residual_ratio_table(rel)

    def here(items) -> tuple[dict, dict, dict, pd.DataFrame]:  # the text metrics need the summary case scores
        cases = {**case_tables(rel), **summary_tables(rel, values)}
        scores = next(items)
        summ = text_metric_tables(rel, cases["summary_case_scores"], scores) if text_metrics else {}
        return cases, summ, document_tables(rel, values), extraction_cost.table(rel)

    (cases, summ, docs, cost), [(ground, resid)] = forked.run_beside(beside, here, fork=fork)
    tables = {**cases, **ground, **summ, **docs, "residual_ratio": resid, "document_extraction_cost": cost}
    audit = rel.audit_summary()[["defect", "records", "files"]]
    tables["release_audit"] = audit
    SECONDS["compute"] = time.perf_counter() - start
    return tables


def share_line(total: float) -> str:
    """`gavel results`' last line: :func:`compute`'s seconds in the comparisons of the command's ``total``."""
    spent = SECONDS["comparisons"]
    return f"paired comparisons: {spent:.2f} s of this command's {total:.2f} s ({100 * spent / total:.1f}%)"


def write(tables: dict[str, pd.DataFrame], folder=None) -> list:
    folder = Path(folder) if folder else config.RESULTS_DIR
    folder.mkdir(parents=True, exist_ok=True)
    written = []
    for name, df in sorted(tables.items()):
        path = folder / f"{name}.csv"
        # interval endpoints carry only the decimals they support (stats.endpoint): written as they are, not
        # padded to 4 decimals
        shown = {c: df[c].map(lambda v: "" if pd.isna(v) else repr(float(v)).removesuffix(".0"))
                 for c in df.columns if str(c).endswith(("ci_low", "ci_high"))}
        # p-values with three significant digits (a fixed 4 decimals would write most of them as 0)
        shown.update({c: df[c].map(lambda v: "" if pd.isna(v) else f"{v:.3g}") for c in df.columns
                      if str(c).endswith(("p_value", "p_holm", "holm_level"))})
        write_csv(df.assign(**shown), path, float_format="%.4f", lineterminator="\n")
        written.append(path)
    return written


def read(folder=None) -> dict[str, pd.DataFrame]:
    """The committed result tables (what `make figures` works from)."""
    folder = Path(folder) if folder else config.RESULTS_DIR
    from gavel.ref.tables import read_table  # a run's folder may hold empty tables (nothing extracted)

    found = {p.stem: read_table(p) for p in sorted(folder.glob("*.csv"))}
    if not found:
        raise FileNotFoundError(f"no result tables in {folder}: run `make results` (needs the release)")
    return found
