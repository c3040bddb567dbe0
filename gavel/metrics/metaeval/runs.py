"""Meta-evaluation end to end: one model's Table 1 row, the whole run of notebook 13, the plot, and the
extractor run over the 40 human summaries."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from pathlib import Path

import numpy as np
import pandas as pd

from gavel.core import config
from gavel.core import items as gitems
from gavel.core.spreadsheet import read_csv, write_csv
from gavel.core.stats import BOOTSTRAP_RESAMPLES, Stat
from gavel.metrics.metaeval.checklists import exact_compare, extraction_metaeval
from gavel.metrics.metaeval.export import (
    comparison_answers,
    extraction_rows,
    read_export,
    style_ratings,
)
from gavel.metrics.metaeval.inputs import (
    SAMPLE_MULTI,
    SAMPLE_SINGLE,
    as_reference,
    exact_answers,
    human_extraction,
    judge_answers,
    read_tasks,
    read_value_rows,
    release_value_pairs,
    sample_pairs,
)
from gavel.metrics.metaeval.judges import (
    TABLE1_COLUMNS,
    aggregate_comparisons,
    comparison_metaeval,
    inter_annotator,
    style_metaeval,
    table1,
)


def evaluate(model: str, *, extraction: pd.DataFrame | None = None, unusable: Iterable = (),
             human_rows: pd.DataFrame | None = None,
             texts: dict[str, str] | None = None, export: pd.DataFrame | None = None,
             comparisons: pd.DataFrame | None = None, style: pd.DataFrame | None = None,
             compare: Callable = exact_compare, judge: str = "exact-match",
             n_resamples: int = BOOTSTRAP_RESAMPLES, seed: int = 0) -> dict[str, Stat]:
    """One model's Table 1 row: whatever inputs are given are evaluated, the rest stays 'not run'.
    ``extraction``: the model's value rows for the human summaries (against ``human_rows``, default the
    annotators' reviews in ``export``); ``comparisons``: its answers to the comparison tasks (against the
    annotators' majority); ``style``: its ratings (``task, aspect, rating``) against the annotators' median."""
    out: dict[str, Stat] = {}
    if extraction is not None:
        ref = human_rows if human_rows is not None else extraction_rows(export)
        out.update(extraction_metaeval(extraction, ref, texts or {}, compare, judge, n_resamples, seed, unusable))
    if comparisons is not None and export is not None:
        human = aggregate_comparisons(comparison_answers(export))
        out.update(comparison_metaeval(comparisons, human, n_resamples, seed))
    if style is not None and export is not None:
        s = style_metaeval(style, style_ratings(export), n_resamples, seed)
        out["Style kappa"] = s["Style kappa"]
        out["Style kappa (quadratic)"] = s["Style kappa (quadratic)"]
    return out


def plot(table: pd.DataFrame, confusion: pd.DataFrame | None = None, title: str = ""):
    """Table 1 as a figure, with a confusion matrix beside it when given."""
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2 if confusion is not None else 1, figsize=(13 if confusion is not None else 8, 3.6),
                             gridspec_kw={"width_ratios": [1.4, 1]} if confusion is not None else None)
    axes = np.atleast_1d(axes)
    ax = axes[0]
    ax.axis("off")
    cells = [[str(v) for v in row] for row in table.to_numpy()]
    tab = ax.table(cellText=cells, rowLabels=list(table.index), colLabels=list(table.columns), loc="center")
    tab.scale(1, 1.5)
    ax.set_title(title or "Meta-evaluation (Table 1 shape)")
    if confusion is not None:
        ax = axes[1]
        ax.imshow(confusion.to_numpy(), cmap="Blues")
        ax.set_xticks(range(len(confusion.columns)), confusion.columns, rotation=30, ha="right", fontsize=8)
        ax.set_yticks(range(len(confusion.index)), confusion.index, fontsize=8)
        for (i, j), v in np.ndenumerate(confusion.to_numpy()):
            ax.text(j, i, str(v), ha="center", va="center")
        ax.set_title("single-value pairs: confusion")
    fig.tight_layout()
    return fig


def comparison_tasks_from_release(release, n_single: int = SAMPLE_SINGLE, n_multi: int = SAMPLE_MULTI, seed: int = 0) -> pd.DataFrame:
    """The comparison tasks the app loads from the release (same sample, same keys), as a task table."""
    rows = []
    for p in sample_pairs(release_value_pairs(release), n_single, n_multi, seed):
        single = len(p["a"]) == 1 and len(p["b"]) == 1
        rows.append({"task": f"comparison:{p['origin']}:{p['case_id']}:{p['item']}", "kind": "comparison",
                     "case_id": str(p["case_id"]), "source": "evaluation_documents_checklist",
                     "payload": {"case_id": str(p["case_id"]), "item": p["item"], "origin": p["origin"],
                                 "mode": "single" if single else "multi", "a": p["a"], "b": p["b"],
                                 "judge": p.get("judge")}})
    return pd.DataFrame(rows, columns=["task", "kind", "case_id", "source", "payload"])


def run(release, *, export_path=None, tasks_path=None, extraction_path=None, extractor: str = "extractor",
        provider=None, cases: int | None = None, items=None, max_tokens: int | None = None,
        n_resamples: int = BOOTSTRAP_RESAMPLES, seed: int = 0) -> dict:
    """Everything the meta-evaluation notebook shows.

    * ``table``: Table 1 rows. The extractor's row (``extraction_path``: its value rows for the 40 human
      summaries) is scored against ``human.json``; its comparison and style cells need the app's export and
      the pipeline's answers, else they read 'not run'.
    * With ``provider`` (a gavel.llm provider) the extractor is run first on the human summaries (the first
      ``cases`` of them, or all 40), its rows written to data/interim/metaeval/<extractor>/values.jsonl,
      scored on the cases it covered, and its Table 1 row written to data/interim/metaeval/table1.csv.
      ``items`` (gavel.core.items.Item) limits the run and the scoring to those items (a quick look with a slow
      model); ``max_tokens`` caps each answer.
    * ``iaa``: Appendix D inter-annotator agreement from the export (None without one).
    * ``judge_vs_exact``: real release data, no people: the released judge's answers on the sampled value
      pairs against the exact-match baseline (how often a string comparison would have sufficed).
    """
    human_rows, texts = human_extraction(release)
    export = read_export(export_path) if export_path else None
    tasks = read_tasks(tasks_path) if tasks_path else comparison_tasks_from_release(release, seed=seed)
    results: dict[str, dict[str, Stat]] = {}
    status = None
    if provider is not None:
        chosen = dict(sorted(texts.items())[:cases] if cases else sorted(texts.items()))
        values, status = extract_human_summaries(chosen, provider, extractor, items=items, max_tokens=max_tokens)
        extraction_path = METAEVAL_DIR / extractor / "values.jsonl"
        extraction_path.parent.mkdir(parents=True, exist_ok=True)
        values.to_json(extraction_path, orient="records", lines=True)
        texts_scored, human_scored = chosen, human_rows[human_rows["case_id"].astype(str).isin(chosen)]
        if items:
            human_scored = human_scored[human_scored["item"].isin([it.key for it in items])]
    else:
        texts_scored, human_scored = texts, human_rows
    if extraction_path:
        rows = read_value_rows(extraction_path)
        unusable = ([] if status is None else
                    list(status.loc[status["status"] != "ok", ["case_id", "item"]].itertuples(index=False)))
        results[extractor] = evaluate(extractor, extraction=rows, unusable=unusable, human_rows=human_scored,
                                      texts=texts_scored, n_resamples=n_resamples, seed=seed)
    if export is not None:
        results["released judge"] = evaluate("released judge", export=export, comparisons=judge_answers(tasks),
                                             n_resamples=n_resamples, seed=seed)
    judge_vs_exact = comparison_metaeval(exact_answers(tasks), as_reference(judge_answers(tasks), tasks),
                                         n_resamples=n_resamples, seed=seed, names=("judge", "exact"))
    table = table1(results) if results else table1({extractor: {}})
    if provider is not None:
        write_table1_row(table.loc[[extractor]])
    return {"table": table, "results": results, "extract_status": status,
            "iaa": (inter_annotator(export, texts, n_resamples=n_resamples, seed=seed)
                    if export is not None else None),
            "judge_vs_exact": judge_vs_exact, "n_tasks": len(tasks)}


# --- the extractor run (section 2.3: an LLM extracts checklists from the 40 human summaries) -------------

METAEVAL_DIR = config.INTERIM_DIR / "metaeval"


def extract_human_summaries(texts: dict[str, str], provider, extractor: str, workdir: str | Path | None = None,
                            items=None, mode: str = "online", max_tokens: int | None = None
                            ) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Run the extract stage (gavel.ref.stages.extract) of ``extractor`` over the human summaries ``texts``
    through ``provider`` with the resumable stage runner; returns (value rows, one status row per
    summary x item). Unusable answers stay in the status rows with their reason; their items hold no value
    rows and are counted, not read as empty."""
    from gavel.llm.runner import StageRunner
    from gavel.ref.stages import extract

    workdir = Path(workdir or METAEVAL_DIR / extractor)
    summaries = [extract.Summary("human", c, t) for c, t in sorted(texts.items())]
    requests = extract.build_requests(summaries, extractor, items or gitems.ITEMS, max_tokens=max_tokens)
    report = StageRunner("extract", provider, workdir, progress=False).run(requests, mode=mode)
    rows, status = [], []
    for req in requests:
        r, s = extract.parse_response(req, report.responses.get(req.custom_id), texts[req.case_id])
        rows += r
        status.append(s)
    values = pd.DataFrame(rows, columns=["subject", "case_id", "item", "index", "value", "evidence",
                                         "evidence_spans", "evidence_grounding"])
    return values, pd.DataFrame(status)


def write_table1_row(table: pd.DataFrame, path: str | Path | None = None) -> Path:
    """Add (or replace) the table's rows in the Table 1 file (default data/interim/metaeval/table1.csv)."""
    path = Path(path or METAEVAL_DIR / "table1.csv")
    path.parent.mkdir(parents=True, exist_ok=True)
    old = read_csv(path, index_col="model") if path.exists() else pd.DataFrame(columns=TABLE1_COLUMNS)
    merged = pd.concat([old.drop(index=[m for m in table.index if m in old.index]), table])
    merged.index.name = "model"
    write_csv(merged, path, index=True)
    return path
