"""Inputs from the release and the app: human.json as value rows, the pairs to annotate and their sample,
value-row and task files, the judge's and exact-match answers."""

from __future__ import annotations

import random
from pathlib import Path

import pandas as pd

from gavel.core.spreadsheet import read_csv
from gavel.metrics.metaeval.checklists import as_list, exact_compare

# --- inputs from the release and the app ----------------------------------------------------------------

def human_extraction(release) -> tuple[pd.DataFrame, dict[str, str]]:
    """``human.json``'s value rows (with evidence offsets) and the 40 human summaries they index into."""
    cv = release.checklist_values
    rows = cv[(cv["origin"] == "summary") & (cv["method"] == "human")]
    s = release.summaries
    s = s[(s["model"] == "human") & (s["set"] == "human_eval")].drop_duplicates("case_id")
    return rows, dict(zip(s["case_id"].astype(str), s["text"]))


def release_value_pairs(release, methods=("end_to_end", "chunk_by_chunk")) -> list[dict]:
    """Model/reference value pairs of the released document-extraction judgments: the model's extracted
    values (A) against ``human.json`` (B), with the released judge's answer."""
    cv = release.checklist_values
    ref = cv[(cv["origin"] == "summary") & (cv["method"] == "human")]
    ref_lists = {k: list(g.sort_values("index")["value"]) for k, g in ref.groupby(["case_id", "item"])}
    doc = cv[(cv["origin"] == "document") & cv["method"].isin(methods)]
    model_lists = {k: list(g.sort_values("index")["value"])
                   for k, g in doc.groupby(["method", "model", "configuration", "case_id", "item"])}
    j = release.judgments
    j = j[(j["task"] == "document") & j["method"].isin(methods) & (j["orientation"] == "model_reference")
          & j["kind"].isin(["relation", "matching"])]
    pairs = []
    for r in j.itertuples(index=False):
        a = model_lists.get((r.method, r.model, r.configuration, r.case_id, r.item))
        b = ref_lists.get((r.case_id, r.item))
        if not a or not b:
            continue
        if (r.kind == "relation") != (len(a) == 1 and len(b) == 1):
            continue  # the released lists and the judgment disagree on the pair's shape: not a clean pair
        judge = ({"relation": r.relation} if r.kind == "relation"
                 else {"pairs": [list(p) for p in r.pairs]})
        pairs.append({"case_id": r.case_id, "item": r.item, "a": a, "b": b,
                      "origin": f"{r.method}/{r.model}", "judge": judge})
    return pairs

#: the paper's annotation sample (section 2.3): single-value pairs, multi-value pairs, style pairs
SAMPLE_SINGLE, SAMPLE_MULTI, SAMPLE_STYLE = 50, 100, 25


def sample_pairs(pairs: list[dict], n_single: int = SAMPLE_SINGLE, n_multi: int = SAMPLE_MULTI, seed: int = 0) -> list[dict]:
    """The paper's mix: ``n_single`` single-value and ``n_multi`` multi-value pairs, drawn with a seed."""
    rng = random.Random(seed)
    single = [p for p in pairs if len(p["a"]) == 1 and len(p["b"]) == 1]
    multi = [p for p in pairs if not (len(p["a"]) == 1 and len(p["b"]) == 1)]
    return rng.sample(single, min(n_single, len(single))) + rng.sample(multi, min(n_multi, len(multi)))



def read_value_rows(path: str | Path) -> pd.DataFrame:
    """Value rows (case_id, item, index, value, evidence) from CSV, JSONL or Parquet; evidence as a list."""
    p = Path(path)
    if p.suffix == ".csv":
        df = read_csv(p, dtype={"case_id": str})
        df["evidence"] = [as_list(e) for e in df["evidence"]]
        if "evidence_spans" in df.columns:
            df["evidence_spans"] = [as_list(e) for e in df["evidence_spans"]]
    elif p.suffix == ".parquet":
        df = pd.read_parquet(p)
    else:
        df = pd.read_json(p, lines=True, dtype={"case_id": str})
    missing = {"case_id", "item", "index", "value", "evidence"} - set(df.columns)
    if missing:
        raise ValueError(f"{path}: missing columns {sorted(missing)}")
    df["case_id"] = df["case_id"].astype(str)
    if "subject" in df.columns:  # the pipeline's values table holds every summary's extraction: keep the human ones
        df = df[df["subject"] == "human"]
    return df


def read_tasks(path: str | Path) -> pd.DataFrame:
    """The app's task export (``gavel annotate export-tasks``): task, kind, case_id, source, payload."""
    return pd.read_json(path, lines=True, dtype={"case_id": str})


def judge_answers(tasks: pd.DataFrame) -> pd.DataFrame:
    """The pipeline's own answers stored with the comparison tasks, as ``task, label, pairs``."""
    out = []
    for r in tasks[tasks["kind"] == "comparison"].itertuples(index=False):
        judge = r.payload.get("judge") or {}
        if "relation" in judge:
            out.append({"task": r.task, "label": judge["relation"], "pairs": None})
        elif "pairs" in judge:
            out.append({"task": r.task, "label": None, "pairs": [tuple(p) for p in judge["pairs"]]})
    return pd.DataFrame(out, columns=["task", "label", "pairs"])


def exact_answers(tasks: pd.DataFrame) -> pd.DataFrame:
    """The exact-match stand-in's answers to the same comparison tasks (a baseline, not a judge)."""
    out = []
    for r in tasks[tasks["kind"] == "comparison"].itertuples(index=False):
        ans = exact_compare(r.payload["a"], r.payload["b"])
        single = r.payload["mode"] == "single"
        out.append({"task": r.task, "label": ans.get("relation") if single else None,
                    "pairs": None if single else [tuple(p) for p in ans["pairs"]]})
    return pd.DataFrame(out, columns=["task", "label", "pairs"])


def as_reference(answers: pd.DataFrame, tasks: pd.DataFrame) -> pd.DataFrame:
    """LLM-style answers turned into the aggregated-human shape, to compare two automatic raters."""
    comp = tasks[tasks["kind"] == "comparison"]  # the app's task export holds every kind of task
    mode = dict(zip(comp["task"], [p["mode"] for p in comp["payload"]]))
    df = answers.assign(mode=answers["task"].map(mode), status="ok", annotators=1)
    return df[["task", "mode", "label", "pairs", "status", "annotators"]]


