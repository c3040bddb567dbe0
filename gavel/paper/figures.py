"""The paper's figures, drawn from the result tables in data/results/ (no release needed).

Each ``fig_*`` function takes the tables (``gavel.paper.results.read()``) and returns a matplotlib Figure;
``save(fig, name)`` writes ``<name>.png`` and ``<name>.pdf`` under ``figures/`` (or ``GAVEL_FIGURES_DIR``).
Colours come from colour-blind-safe palettes (seaborn's "colorblind" for categories, "cividis" for
heatmaps); axes carry labels and models their display names.
"""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg", force=False)
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
import seaborn as sns  # noqa: E402

from gavel.core import config  # noqa: E402
from gavel.core.items import GROUPS, ITEMS, titled  # noqa: E402
from gavel.core.tokens import LENGTH_BINS  # noqa: E402

BINS = list(LENGTH_BINS)
PALETTE = sns.color_palette("colorblind")
#: one colour per model where all 12 are drawn together: the colour-blind palette's ten, then two dark colours
#: (indigo and wine) that none of the ten is near; markers differ as well, so no two models look alike
MODEL_PALETTE = [*PALETTE, (0x33 / 255, 0x22 / 255, 0x88 / 255), (0x88 / 255, 0x22 / 255, 0x55 / 255)]
MODEL_MARKERS = "osD^vP*Xhp<>"
HEATMAP = "cividis"
ITEM_LABEL = {it.key: it.label for it in ITEMS}
GROUP_LABEL = {g.key: g.label for g in GROUPS}
METHOD_LABEL = {"end_to_end": "End-to-end", "chunk_by_chunk": "Chunk-by-chunk", "agent": "Gavel-Agent"}

plt.rcParams.update({"figure.dpi": 110, "savefig.dpi": 200, "font.size": 9, "axes.titlesize": 10,
                     "pdf.fonttype": 42, "svg.hashsalt": "gavel", "savefig.bbox": "tight"})


def figures_dir() -> Path:
    return Path(config.env("GAVEL_FIGURES_DIR") or config.FIGURES_DIR)


def save(fig, name: str) -> list[Path]:
    """Write ``name``.png and ``name``.pdf; returns the paths."""
    out = figures_dir()
    out.mkdir(parents=True, exist_ok=True)
    paths = [out / f"{name}.png", out / f"{name}.pdf"]
    fig.savefig(paths[0])
    fig.savefig(paths[1], metadata={"CreationDate": None, "ModDate": None})
    return paths


def model_label_marked(tables, model: str) -> str:
    """Display name, with * (one) or ** (both) when the model's summary-checklist files are unreleased and
    its cells are estimated."""
    s = tables["summary_s_checklist"]
    parts = s[s["length_bin"] == "all"].set_index("model")["checklist_parts_released"]
    n = int(parts.get(model, 2))
    return config.model_label(model) + ("" if n >= 2 else " " + "*" * (2 - n))


ESTIMATED_NOTE = ("* one (** both) of the model's two summary-checklist files is empty or absent in the release. Its "
                  "missing cells are estimated (reconstruction rule 6: from the model's own released half, item by "
                  "item;\n   with nothing released, from all models' cells), and bounded by the lowest and highest "
                  "score a cell could take, hence the wider bounds. docs/results.md explains the rules.")


def model_order(tables) -> list[str]:
    s = tables["summary_s_checklist"]
    s = s[s["length_bin"] == "all"].sort_values("s_checklist", ascending=False)
    return s["model"].tolist()


def fig_benchmark(tables) -> plt.Figure:
    """Figure 2 layout: models x length bins heatmap of S_checklist (best, with [low, high] bounds), plus
    each model's overall score with its bootstrap 95% interval."""
    s = tables["summary_s_checklist"]
    order = model_order(tables)
    parts = s[s["length_bin"] == "all"].set_index("model")["checklist_parts_released"]
    labels = [config.model_label(m) + ("" if parts[m] == 2 else " " + "*" * (2 - parts[m])) for m in order]
    cols = BINS + ["all"]
    # a run whose cases fall in some bins only (a new evaluation) has no rows for the others: empty cells
    best, low, high = (s.pivot(index="model", columns="length_bin", values=v).reindex(index=order, columns=cols)
                       for v in ("s_checklist", "s_checklist_low", "s_checklist_high"))
    fig, (ax, ax2) = plt.subplots(1, 2, figsize=(11, 5.6), gridspec_kw={"width_ratios": [2.3, 1]})
    scored = best.values[~np.isnan(best.values)] if best.size else np.array([])
    sns.heatmap(best, ax=ax, cmap=HEATMAP, annot=False, cbar_kws={"label": "S_checklist (best estimate)"},
                vmin=(scored.min() if scored.size else 0) - 2, vmax=(scored.max() if scored.size else 100) + 2)
    for i in range(len(order)):
        for j in range(len(cols)):
            b, lo, hi = best.iat[i, j], low.iat[i, j], high.iat[i, j]
            if np.isnan(b):
                ax.text(j + 0.5, i + 0.5, "no cases", ha="center", va="center", fontsize=6.5, color="grey")
                continue
            colour = "black" if b > scored.mean() else "white"
            ax.text(j + 0.5, i + 0.42, f"{b:.1f}", ha="center", va="center", fontsize=8.5, color=colour,
                    fontweight="bold")
            ax.text(j + 0.5, i + 0.75, f"[{lo:.0f}, {hi:.0f}]", ha="center", va="center", fontsize=6.5,
                    color=colour)
    ax.set_yticklabels(labels, rotation=0)
    ax.set_xticklabels(cols, rotation=0)
    ax.set_xlabel("Case length bin (tokens)")
    ax.set_ylabel("Model (ordered by overall S_checklist)")
    ax.set_title(titled("S_checklist by case length: best estimate, [lower, upper] bound", s))
    ci = tables["summary_bootstrap"].set_index("model").loc[order]
    y = np.arange(len(order))
    ax2.hlines(y, ci["bounds_ci_low"], ci["bounds_ci_high"], color="grey", lw=5, alpha=0.35,
               label="95% interval with reconstruction bounds")
    ax2.errorbar(ci["s_checklist"], y, xerr=[ci["s_checklist"] - ci["ci_low"], ci["ci_high"] - ci["s_checklist"]],
                 fmt="o", color=PALETTE[0], ecolor=PALETTE[0], capsize=3, label="bootstrap 95% CI (best estimates)")
    for yy, n in zip(y, ci["cases"]):
        ax2.annotate(f"{n} cases", (ci["bounds_ci_high"].iloc[yy], yy), xytext=(4, 0), textcoords="offset points",
                     va="center", fontsize=6.5, color=PALETTE[3] if n < 100 else "grey")
    lo, hi = ci["bounds_ci_low"].min(), ci["bounds_ci_high"].max()
    lo, hi = (0.0, 100.0) if np.isnan(lo) or np.isnan(hi) else (lo, hi)  # no score at all: the whole scale
    ax2.set_xlim(lo - 1, hi + 0.3 * (hi - lo) + 2)  # room for the case counts inside the frame
    ax2.set_yticks(y, labels)
    ax2.invert_yaxis()
    ax2.set_xlabel("S_checklist, all cases")
    ax2.legend(fontsize=6.5, frameon=False, loc="upper center", bbox_to_anchor=(0.5, -0.1))
    if (parts < 2).any():  # the note explains the asterisks; a run's own tables have none
        fig.text(0.01, -0.02, ESTIMATED_NOTE, fontsize=7.5)
    ax2.set_title("Overall, with 95% intervals")
    ax2.grid(axis="x", alpha=0.3)
    fig.tight_layout()
    return fig


def fig_groups(tables, models: list[str] | None = None) -> plt.Figure:
    """Figure 3: mean matching score per checklist group for the top models."""
    models = as_models(models) if models else model_order(tables)[:5]
    g = tables["summary_group_scores"]
    g = g[g["model"].isin(models)]
    fig, ax = plt.subplots(figsize=(10, 4.2))
    width = 0.8 / len(models)
    x = np.arange(len(GROUPS))
    for k, m in enumerate(models):
        sel = g[g["model"] == m].set_index("group").reindex([gr.key for gr in GROUPS])
        xs = x + k * width - 0.4 + width / 2
        ax.bar(xs, sel["score"], width, label=model_label_marked(tables, m), color=PALETTE[k])
        if "low" in sel:
            ax.errorbar(xs, sel["score"], yerr=[(sel["score"] - sel["low"]).clip(lower=0),
                                                (sel["high"] - sel["score"]).clip(lower=0)],
                        fmt="none", ecolor="black", elinewidth=0.7, capsize=1.5)
        for xx, n in zip(xs, sel["applicable"]):
            if pd.notna(n):  # below the axis line, in the band kept free for them: never over a bar or a bound
                ax.text(xx, -0.015, f"{int(n)}", rotation=90, ha="center", va="top", fontsize=6.5, color="0.2")
    ax.set_xticks(x, [GROUP_LABEL[gr.key] for gr in GROUPS], rotation=20, ha="right")
    ax.set_ylabel("Mean matching score m_i (bars: bounds;\nnumbers below: applicable cells)")
    ax.set_xlabel("Checklist group")
    ax.set_ylim(-0.1, 1)
    ax.set_yticks(np.arange(0, 1.01, 0.2))
    ax.axhline(0, color="black", lw=0.8)
    ax.set_title("Matching score by checklist group (top models)", pad=24)
    ax.legend(ncol=len(models), fontsize=7.5, loc="lower center", bbox_to_anchor=(0.5, 1.0), frameon=False)
    ax.grid(axis="y", alpha=0.3)
    fig.text(0.01, -0.03, ESTIMATED_NOTE, fontsize=7)
    fig.tight_layout()
    return fig


def as_models(models) -> list[str]:
    """A list of release model names from a list or a comma-separated string (as papermill's -p gives);
    unknown names raise with the known ones listed."""
    if isinstance(models, str):
        models = [m.strip() for m in models.strip("[]").replace('"', "").replace("'", "").split(",") if m.strip()]
    known = [m.release_name for m in config.models()]
    unknown = [m for m in models if m not in known]
    if unknown:
        raise ValueError(f"unknown model(s) {unknown}; known: {known}")
    return list(models)


def fig_item_analysis(tables, model: str, k: int = 5) -> plt.Figure:
    """Figures 4 and 7: top/bottom items by matching score, and the most over-/under-specified items."""
    (model,) = as_models([model])
    items = tables["summary_item_scores"]
    items = items[(items["model"] == model)].dropna(subset=["score"]).sort_values("score", ascending=False)
    spec = tables["summary_specification"]
    spec = spec[spec["model"] == model]
    fig, axes = plt.subplots(1, 3, figsize=(12, 3.6))
    top = pd.concat([items.head(k), items.tail(k)])
    colours = [PALETTE[2]] * min(k, len(items)) + [PALETTE[3]] * (len(top) - min(k, len(items)))
    ylab = [f"{ITEM_LABEL[i]} (n={int(n)})" for i, n in zip(top["item"], top["applicable"])]
    _bars_with_bounds(axes[0], ylab, top["score"], top["low"], top["high"], colours)
    axes[0].axvline(items["score"].median(), ls="--", color="grey", lw=1)
    axes[0].set_xlabel("Matching score m_i (bars: bounds; n: applicable cases)")
    axes[0].set_title(f"Top and bottom {k} items")
    axes[0].set_xlim(0, 1)
    judged = spec[spec["judged"] > 0] if "judged" in spec else spec
    for ax, col, stem, count, title, colour in (
            (axes[1], "over_rate", "over", "cases", "Most over-specified", PALETTE[1]),
            (axes[2], "under_rate", "under", "reference_has_item", "Most under-specified", PALETTE[4])):
        sel = judged.dropna(subset=[col]).sort_values(col, ascending=False).head(k)
        ylab = [f"{ITEM_LABEL[i]} (n={int(n)})" for i, n in zip(sel["item"], sel[count])]
        lo = sel.get(f"{stem}_low", sel[col])
        hi = sel.get(f"{stem}_high", sel[col])
        _bars_with_bounds(ax, ylab, 100 * sel[col], 100 * lo, 100 * hi, [colour] * len(sel))
        ax.axvline(100 * judged[col].median(), ls="--", color="grey", lw=1)
        ax.set_xlim(0, 100)
        ax.set_xlabel("Share of cases (%) (n: " + ("scored cases" if stem == "over" else "cases whose reference "
                                                   "holds the item") + ")")
        ax.set_title(title)
    if spec.empty:
        for ax in axes[1:]:
            ax.set_yticks([])
            ax.text(0.5, 0.5, "not computable: every judge file of this\nmodel is in A/B wording (orientation unknown)",
                    ha="center", va="center", transform=ax.transAxes, fontsize=8)
    fig.suptitle(f"{model_label_marked(tables, model)}: item-level analysis (dashed: medians over the items "
                 f"judged at least once)", y=1.02)
    if not model_label_marked(tables, model).endswith(config.model_label(model)):
        fig.text(0.01, -0.04, ESTIMATED_NOTE, fontsize=7)
    fig.tight_layout()
    return fig


def _bars_with_bounds(ax, labels, values, low, high, colours) -> None:
    """Horizontal bars with their bounds as error bars; a zero bar gets a visible tick at 0."""
    y = np.arange(len(labels))
    values = np.asarray(values, dtype=float)
    ax.barh(y, values, color=colours)
    lo = np.nan_to_num(np.asarray(low, dtype=float), nan=0.0)
    hi = np.nan_to_num(np.asarray(high, dtype=float), nan=np.nanmax([values.max(initial=0), 0]))
    ax.errorbar(values, y, xerr=[np.clip(values - lo, 0, None), np.clip(hi - values, 0, None)], fmt="none",
                ecolor="black", elinewidth=0.8, capsize=2)
    zero = values == 0
    ax.plot(values[zero], y[zero], marker="|", ls="", color="black", ms=9)
    ax.set_yticks(y, labels)
    ax.invert_yaxis()


def fig_item_scores(tables) -> plt.Figure:
    """Figures 10-12: matching score of every item for every model, as one heatmap."""
    order = model_order(tables)
    s = tables["summary_item_scores"].pivot(index="item", columns="model", values="score")
    s = s.reindex(index=[it.key for it in ITEMS], columns=order)
    fig, ax = plt.subplots(figsize=(11, 8))
    t = tables["summary_item_scores"]
    width = (t.pivot(index="item", columns="model", values="high")
             - t.pivot(index="item", columns="model", values="low")).reindex(index=s.index, columns=order)
    n = t.pivot(index="item", columns="model", values="applicable").reindex(index=s.index, columns=order)
    annot = s.map(lambda v: "" if pd.isna(v) else f"{v:.2f}") + n.map(lambda v: "" if pd.isna(v) else f"\n{int(v)}")
    annot = annot.where(~(width > 0.5), annot + "†")
    sns.heatmap(s, ax=ax, cmap=HEATMAP, vmin=0, vmax=1, annot=annot.values, fmt="", annot_kws={"fontsize": 5.5},
                cbar_kws={"label": "Matching score m_i (best estimate; blank = no estimate)"})
    ax.set_yticklabels([ITEM_LABEL[i] for i in s.index], rotation=0)
    ax.set_xticklabels([model_label_marked(tables, m) for m in s.columns], rotation=35, ha="right")
    ax.set_xlabel("Model")
    ax.set_ylabel("Checklist item")
    ax.set_title("Item-level matching score of each model (second line: applicable cases; † bounds wider than 0.5)")
    fig.text(0.01, -0.02, ESTIMATED_NOTE, fontsize=7.5)
    fig.tight_layout()
    return fig


def fig_summary_length(tables) -> plt.Figure:
    """Figure 6: mean summary length per model and bin, against the human summaries."""
    lengths = tables["summary_lengths"]
    order = model_order(tables)
    fig, ax = plt.subplots(figsize=(8.5, 4.5))
    styles = ["-", "--", "-.", ":"]
    for k, m in enumerate(order):
        sel = lengths[lengths["model"] == m].set_index("length_bin").reindex(BINS)
        ax.plot(BINS, sel["mean_words"], styles[k // len(MODEL_PALETTE) % 4], marker=MODEL_MARKERS[k % 12], ms=4,
                color=MODEL_PALETTE[k % len(MODEL_PALETTE)], label=config.model_label(m), lw=1.2)
    human = lengths[lengths["model"] == "human"].set_index("length_bin").reindex(BINS)
    ax.plot(BINS, human["mean_words"], color="black", lw=2.5, marker="s", label="Human reference")
    ax.set_xlabel("Case length bin (tokens)")
    ax.set_ylabel("Mean summary length (words)")
    ax.set_title("Summary length by case length")
    ax.legend(fontsize=7, ncol=2, frameon=False, loc="upper left", bbox_to_anchor=(1.0, 1.0))
    ax.grid(alpha=0.3)
    fig.tight_layout()
    return fig


def _doc_label(r) -> str:
    if r.method == "agent":
        label = f"Agent ({int(r.agents)}) {config.model_label(r.model)}"
    else:
        label = f"{METHOD_LABEL[r.method]} {config.model_label(r.model)}"
    if str(r.token_files_complete) != "True":
        label += "\n(tokens incomplete in release)"
    return label


def fig_document_extraction(tables, measure: str = "total") -> plt.Figure:
    """Figures 5/8: S_checklist of each extraction method against tokens per case (log axis)."""
    full = tables["document_s_checklist"]
    d = full.dropna(subset=["s_checklist", f"{measure}_tokens_per_case"])
    dropped = full.drop(d.index)
    fig, ax = plt.subplots(figsize=(7, 4.5))
    markers = {"end_to_end": "o", "chunk_by_chunk": "D", "agent": "^"}
    models = sorted(d["model"].unique())
    for r in d.itertuples():
        colour = PALETTE[models.index(r.model)]
        x = getattr(r, f"{measure}_tokens_per_case")
        ax.errorbar(x, r.s_checklist, yerr=[[r.s_checklist - r.s_checklist_low], [r.s_checklist_high - r.s_checklist]],
                    fmt=markers[r.method], color=colour, ms=7, capsize=3, alpha=0.9)
        ax.annotate(_doc_label(r), (x, r.s_checklist), xytext=(6, 3), textcoords="offset points", fontsize=7)
    ax.set_xscale("log")
    ax.set_xlabel(f"{measure.capitalize()} tokens per case (log scale)")
    ax.set_ylabel("S_checklist vs. human checklist (bars: bounds)")
    ax.set_title(f"Document extraction: quality against {measure} tokens")
    ax.grid(alpha=0.3, which="both")
    handles = [plt.Line2D([], [], marker=mk, ls="", color="grey", label=METHOD_LABEL[mt]) for mt, mk in markers.items()]
    handles += [plt.Line2D([], [], marker="s", ls="", color=PALETTE[i], label=config.model_label(m))
                for i, m in enumerate(models)]
    ax.legend(handles=handles, fontsize=7, frameon=False, loc="upper left", bbox_to_anchor=(1.0, 1.0))
    if len(dropped):
        lines = ["Not drawn (the release lacks what they need):"]
        for r in dropped.itertuples():
            why = []
            if pd.isna(r.s_checklist):
                why.append("no judge output (empty file)")
            if pd.isna(getattr(r, f"{measure}_tokens_per_case")):
                why.append("no token counts (files absent)")
            lines.append(f"  {_doc_label(r).splitlines()[0]}: {', '.join(why)}")
        fig.text(0.01, -0.02 - 0.035 * len(lines), "\n".join(lines), fontsize=7, va="bottom")
    fig.tight_layout()
    return fig


def fig_release_audit(tables) -> plt.Figure:
    a = tables["release_audit"].sort_values("records")
    fig, ax = plt.subplots(figsize=(7, 4))
    ax.barh(a["defect"], a["records"], color=PALETTE[0])
    ax.set_xscale("log")
    ax.set_xlabel("Records affected (log scale)")
    ax.set_ylabel("Defect class")
    ax.set_title("Defects found in the public GAVEL release")
    for y, (n, f) in enumerate(zip(a["records"], a["files"])):
        ax.text(n * 1.1, y, f"{n} ({f} file{'' if f == 1 else 's'})", va="center", fontsize=7)
    ax.set_xlim(right=a["records"].max() * 6)  # room for the longest bar's label inside the frame
    fig.tight_layout()
    return fig


METRIC_LABEL = {"rouge1": "ROUGE-1", "rouge2": "ROUGE-2", "rougeL": "ROUGE-L", "embedding": "Embedding cosine",
                "pointwise_recall": "Pointwise recall", "pointwise_precision": "Pointwise precision",
                "judge": "LLM judge (CaseGen)"}


def fig_metric_agreement(tables) -> plt.Figure:
    """How ROUGE, embedding similarity (and LLM metrics, when their outputs exist) agree with S_checklist:
    per-summary correlations, system-level correlations and pairwise ordering agreement, and the models'
    mean scores side by side. Error bars: bootstrap 95% intervals of the correlations (per summary over
    cases, per system over the models; ``metric_agreement``'s ``*_ci_low``/``*_ci_high``)."""
    a = tables["metric_agreement"]
    metrics_ = list(dict.fromkeys(a["metric"]))
    labels = [METRIC_LABEL.get(m, m) for m in metrics_]
    fig, axes = plt.subplots(1, 3, figsize=(13, 4.2), gridspec_kw={"width_ratios": [1, 1, 1.15]})
    x = np.arange(len(metrics_))
    for ax, level, title in ((axes[0], "summary", "Per summary"), (axes[1], "system", "Per system (model means)")):
        sel = a[a["level"] == level].set_index("metric").reindex(metrics_)
        lowest = [-0.2]
        for k, stat in enumerate(("pearson", "spearman", "kendall", "pairwise_agreement")):
            yerr = None
            if f"{stat}_ci_low" in sel:
                lo, hi = sel[f"{stat}_ci_low"].to_numpy(float), sel[f"{stat}_ci_high"].to_numpy(float)
                yerr = np.vstack([sel[stat].to_numpy(float) - lo, hi - sel[stat].to_numpy(float)])
                lowest.append(float(np.nanmin(lo)))
            lowest.append(float(np.nanmin(sel[stat].to_numpy(float))))
            ax.bar(x + (k - 1.5) * 0.2, sel[stat], width=0.2, color=PALETTE[k], yerr=yerr,
                   error_kw={"elinewidth": 0.9, "capsize": 2, "ecolor": "black"},
                   label={"pairwise_agreement": "pairs ordered alike"}.get(stat, stat.capitalize()))
        n = int(sel["n"].max())
        pairs = int(sel["pairs"].max())
        ax.set_title(f"{title}: n = {n}, {pairs} model pairs" + (" within cases" if level == "summary" else ""))
        ax.set_xticks(x, labels, rotation=20, ha="right")
        ax.axhline(0, color="black", lw=0.8)
        ax.set_ylim(min(lowest) - 0.05, 1.02)
        ax.set_ylabel("Agreement with S_checklist")
        ax.grid(axis="y", alpha=0.3)
    axes[0].legend(fontsize=7, frameon=False, loc="upper left")
    means = tables["metric_model_means"].sort_values("s_checklist", ascending=False).reset_index(drop=True)
    ax = axes[2]
    pos = np.arange(len(means))
    for k, m in enumerate(metrics_):
        z = (means[m] - means[m].mean()) / means[m].std()
        ax.plot(pos, z, marker="o", ms=4, lw=0.8, color=PALETTE[k], label=METRIC_LABEL.get(m, m))
    z_s = (means["s_checklist"] - means["s_checklist"].mean()) / means["s_checklist"].std()
    ax.plot(pos, z_s, color="black", lw=2, label="S_checklist")
    ax.set_xticks(pos, [model_label_marked(tables, m) for m in means["model"]], rotation=40, ha="right", fontsize=7)
    ax.set_xlabel("Models, by mean S_checklist (best estimate)")
    ax.set_ylabel("Model mean (z-score over the 12 models)")
    ax.set_title("Model means side by side")
    ax.legend(fontsize=7, frameon=False)
    ax.grid(alpha=0.3)
    fig.text(0.01, -0.07, "Error bars: bootstrap 95% intervals (per summary: cases resampled; per system: the "
             "models resampled).\nS_checklist: reconstructed from the release (best estimates); " + ESTIMATED_NOTE,
             fontsize=7)
    fig.tight_layout()
    return fig


GROUNDING_COLOURS = {"exact": PALETTE[2], "normalized": PALETTE[0], "fuzzy": PALETTE[1], "not_found": "0.1"}


def fig_evidence_grounding(tables) -> plt.Figure:
    """Where the evidence snippets of the released summary checklists occur in their summaries: share
    verbatim, after normalisation, only fuzzily, not at all; per model (left) and per item (right)."""
    g = tables["summary_evidence_grounding"]
    statuses = list(GROUNDING_COLOURS)
    fig, axes = plt.subplots(1, 2, figsize=(13, 6), gridspec_kw={"width_ratios": [1, 1.3]})
    per_model = g[g["item"] == "all"].sort_values("share_exact")
    items = (g[g["item"] != "all"].groupby("item")[statuses].sum())
    items = items.div(items.sum(axis=1), axis=0).sort_values("exact")
    for ax, frame, ylabels, title in (
            (axes[0], per_model.set_index("model")[[f"share_{s}" for s in statuses]].set_axis(statuses, axis=1),
             [f"{config.model_label(m)} (n={int(n)})" for m, n in zip(per_model["model"], per_model["snippets"])],
             "Per model (checklists extracted by GPT-oss 20B)"),
            (axes[1], items, [ITEM_LABEL.get(i, i) for i in items.index], "Per item, all models")):
        left = np.zeros(len(frame))
        y = np.arange(len(frame))
        for s in statuses:
            ax.barh(y, frame[s], left=left, color=GROUNDING_COLOURS[s], label=s.replace("_", " "))
            left += frame[s].to_numpy()
        for yy, share in zip(y, frame["not_found"]):  # a sliver too thin to see is said in words
            if share > 0:
                ax.text(1.01, yy, f"{100 * share:.1f}%", va="center", fontsize=6.5, color=GROUNDING_COLOURS["not_found"])
        ax.set_yticks(y, ylabels, fontsize=7)
        ax.set_xlim(0, 1)
        ax.set_xlabel("Share of evidence snippets")
        ax.set_title(title)
    axes[0].legend(fontsize=8, frameon=False, loc="upper center", bbox_to_anchor=(0.5, -0.08), ncol=4)
    fig.text(0.01, -0.02, "Models whose summary-checklist files are empty or absent in the release have no snippets "
             "(Claude Opus 4.1: none; one half only for GPT-5, Claude Sonnet 4, Qwen3 32B, Gemma3 27B). "
             "Statuses from gavel.ref.grounding.locate; the number right of a bar is its share not found.",
             fontsize=7)
    fig.tight_layout()
    return fig
