"""What a report shows of one ``gavel evaluate`` output folder, as plain JSON-ready data (``gavel.report.page``
renders it; ``gavel.report.diff`` compares two of them).

The data is keyed the way the page looks things up: a cell is ``subject|case_id|item``, a summary
``subject|case_id``. Everything is read from the folder's tables; optional tables (``OPTIONAL``: the stability
report of repeats, the per-judgment order table, the cost ledger) are shown where a file is there and their
view is simply left out where it is not. Model output (summaries, values, raw answers) goes into the data as
text; the page only ever sets it as text. The folder is someone else's: every file and cell is read through
``gavel.report.folder`` (regular files inside the folder, bounded, checked), and a relative folder is resolved
once, against the working directory.
"""

from __future__ import annotations

import ast
import json
import math
import os
from pathlib import Path

import numpy as np
import pandas as pd

from gavel.core import config, jsonl, stats
from gavel.core import items as gitems
from gavel.core.vocab import STYLE_ASPECTS
from gavel.llm import packs
from gavel.report import folder as rf
from gavel.report import judge_view
from gavel.report.folder import ReportInputError
from gavel.runs.comparisons import pair_sentence
from gavel.runs.stability import STAGES as REPEAT_STAGES

SEP = "|"
SCORES = ("s_checklist", "s_residual", "s_style", "s_gavel_ref")
#: optional per-run tables: file name -> (view title, what a row belongs to). A row with subject, case_id and
#: item columns is shown with its cell, one with subject and case_id with its summary, any other in the run's
#: overview. A missing file hides its view.
OPTIONAL = {"stability.csv": "Stability over repeats", "stability_units.csv": "Verdicts that flip between repeats",
            "judgments.csv": "Judgments in every repeat and order", "order.csv": "Is the judge fair to both sides?",
            "cost.csv": "Cost"}
#: the stages whose raw answers the report carries for every round (extract: only unusable rounds, its usable
#: answers are the values shown)
RAW_STAGES = ("compare", "residual", "residual_match", "style")
USABLE = ("ok", "gated")


#: the columns of an optional table that the report reads (a table without them is refused, naming it)
OPTIONAL_COLUMNS = {"stability_units.csv": ("stage",), "judgments.csv": ("stage", "status", "relation", "pairs")}


def key(*parts) -> str:
    return SEP.join(str(p) for p in parts)


def clean(value):
    """A JSON-ready scalar: NaN and None become None, numpy numbers plain numbers."""
    if value is None:
        return None
    if isinstance(value, float) and math.isnan(value):
        return None
    if hasattr(value, "item") and not isinstance(value, (str, bytes)):
        value = value.item()
        return None if isinstance(value, float) and math.isnan(value) else value
    return value


def literal(value, default=None):
    """A list written by pandas into a CSV cell (``"['a', None]"``) read back; JSON text too."""
    if isinstance(value, (list, tuple)):
        return list(value)
    if not isinstance(value, str) or not value.strip():
        return default
    try:
        return ast.literal_eval(value)
    except (ValueError, SyntaxError):
        try:
            return json.loads(value)
        except json.JSONDecodeError:
            return default


def records(table: pd.DataFrame | None) -> list[dict]:
    if table is None or not len(table):
        return []
    frame = table.copy()
    if "case_id" in frame:
        frame["case_id"] = frame["case_id"].astype(str)
    return [{k: clean(v) for k, v in row.items()} for row in frame.to_dict("records")]


def interval(values, seed: int = 0) -> list:
    """[mean, 95% low, 95% high, n] of the values with a number (bootstrap over cases)."""
    x = [float(v) for v in values if v is not None and not (isinstance(v, float) and math.isnan(v))]
    if not x:
        return [None, None, None, 0]
    lo, hi = stats.mean_interval(x, seed=seed)
    return [sum(x) / len(x), clean(lo), clean(hi), len(x)]


def judged_intervals(board: list[dict], model_scores: pd.DataFrame | None) -> None:
    """With repeats or both orders (``interval_levels`` in ``model_scores.csv``) the leaderboard shows the
    run's interval over cases and the judge's verdicts instead of the cases-only one."""
    if model_scores is None or "interval_levels" not in model_scores or "bin" in model_scores:
        return
    rows = {r["subject"]: r for r in records(model_scores)}
    for b in board:
        row = rows.get(b["subject"])
        for s in SCORES:
            lo, hi = (_bound(row.get(f"{s}_ci_{e}")) if row else None for e in ("low", "high"))
            if lo is not None and hi is not None and b[s][0] is not None:
                b[s] = [b[s][0], lo, hi, b[s][3]]
        b["interval_levels"] = str(row.get("interval_levels"))[:200] if row and row.get("interval_levels") else None


def _bound(value) -> float | None:
    """An interval endpoint from a table someone else may have written: a finite number from 0 to 100, or None
    (the leaderboard then keeps its own cases-only interval)."""
    try:
        x = float(value)
    except (TypeError, ValueError, OverflowError):
        return None
    return x if math.isfinite(x) and -1e-9 <= x <= 100 + 1e-9 else None


COMPARED = ("s_gavel_ref", "s_checklist")  # the leaderboard's view: the first of these with a comparison


def compared(folder: Path, scores: list[dict] | None = None) -> tuple[str | None, dict[str, dict], list[str]]:
    """From ``comparisons.csv`` (gavel.runs.comparisons): the score compared, per model the models it is
    significantly better than, worse than and indistinguishable from (Holm-adjusted, docs/gavel-ref.md), and
    each pair's sentence. The table is checked against the run's own ``scores`` first (:func:`check_compared`)."""
    path = rf.regular_file(folder, "comparisons.csv")  # only a regular file inside the run folder
    if path is None:
        return None, {}, []
    t = rf.table(path)
    need = {"score", "model_a", "model_b", "verdict", "difference"}
    if len(t) and not need <= set(t.columns):
        raise ReportInputError(f"{path}: not a comparisons table (columns {', '.join(sorted(need - set(t.columns)))}"
                               f" missing)")
    for score in COMPARED:
        rows = t[(t["score"] == score) & t["difference"].notna()] if len(t) else t
        if len(rows):
            break
    else:
        return None, {}, []
    if scores is not None:
        check_compared(path, rows, score, scores)
    out: dict[str, dict] = {}
    for r in records(rows):
        a, b, verdict = str(r["model_a"]), str(r["model_b"]), r["verdict"]
        for m in (a, b):
            out.setdefault(m, {"better_than": [], "worse_than": [], "indistinguishable_from": []})
        if verdict in ("a better", "b better"):
            win, lose = (a, b) if verdict == "a better" else (b, a)
            out[win]["better_than"].append(config.model_label(lose))
            out[lose]["worse_than"].append(config.model_label(win))
        else:
            out[a]["indistinguishable_from"].append(config.model_label(b))
            out[b]["indistinguishable_from"].append(config.model_label(a))
    full = {"cases", "ci_low", "ci_high", "p_value", "p_holm", "family", "holm_level", "detectable_difference",
            "cases_needed", "resolution_ratio"} <= set(rows.columns)
    said = [pair_sentence(r, config.model_label) for r in rows.itertuples()] if full else []
    return score, out, said


def check_compared(path: Path, rows: pd.DataFrame, score: str, scores: list[dict]) -> None:
    """``comparisons.csv`` is the run's own (issue 46): every pair's models are models of ``scores.csv``; a
    verdict other than ``too few cases`` rests on at least two cases both have a value for; and where the
    comparison is of the run's own values (``compared`` is ``repeat 1, order 1`` or absent: one verdict per
    case) every verdict is the one ``gavel.core.paired`` computes again from ``scores.csv``. A table that
    fails is named with the pair, in one line (exit 2)."""
    from gavel.core import paired

    values: dict[str, dict[str, float]] = {}
    for r in scores:
        if r.get(score) is not None:
            values.setdefault(str(r["subject"]), {})[str(r["case_id"])] = float(r[score])
    subjects = {str(r["subject"]) for r in scores}
    for r in rows.itertuples():
        a, b = str(r.model_a), str(r.model_b)
        for m in (a, b):
            if m not in subjects:
                raise ReportInputError(f"{path}: pair {a!r} / {b!r} names {m!r}, which has no summary in scores.csv")
        common = len(values.get(a, {}).keys() & values.get(b, {}).keys())
        if r.verdict != "too few cases" and common < 2:
            raise ReportInputError(f"{path}: {score} pair {a!r} / {b!r} says {r.verdict!r} on {common} common "
                                   f"case{'' if common == 1 else 's'} of scores.csv (a paired test needs 2)")
    own = "compared" not in rows or set(rows["compared"].fillna("repeat 1, order 1")) == {"repeat 1, order 1"}
    if not own or not len(rows):
        return
    models = sorted(values)
    cases = sorted({c for v in values.values() for c in v})
    cube = np.array([[[values[m].get(c, np.nan)] for c in cases] for m in models], dtype=float)
    again, _ = paired.compare(cube, models, n=2) if len(models) > 1 else (pd.DataFrame(), None)
    verdict = {}
    for r in again.itertuples():
        verdict[(r.model_a, r.model_b)] = r.verdict
        verdict[(r.model_b, r.model_a)] = {"a better": "b better", "b better": "a better"}.get(r.verdict, r.verdict)
    for r in rows.itertuples():
        found = verdict.get((str(r.model_a), str(r.model_b)), "too few cases")
        if found != r.verdict:
            raise ReportInputError(f"{path}: {score} pair {r.model_a!r} / {r.model_b!r} says {r.verdict!r}; the run's "
                                   f"scores.csv gives {found!r}")


def heat_class(score) -> str:
    """The colour class of a heatmap cell: ``q0`` .. ``q10`` by tenths of the score, ``qn`` without one."""
    return "qn" if score is None else f"q{min(10, max(0, int(round(float(score) * 10))))}"


def item_names(keys, checklist=None) -> list[list[str]]:
    checklist = gitems.load(checklist)
    order = {it.key: it.number for it in checklist.items}
    out = []
    for k in sorted(set(keys), key=lambda k: (order.get(k, 99), k)):
        try:
            out.append([k, checklist.item(k).name])
        except Exception:  # the residual pseudo-item, or an item a newer run knows
            out.append([k, k.replace("_", " ")])
    return out


# ---------- reading the folder ----------
def _texts(folder: Path) -> dict[str, str]:
    path = rf.regular_file(folder, "texts.jsonl")
    if path is None:
        return {}
    out = {}
    for line in jsonl.scan(rf.read_text(path, rf.MAX_TABLE_BYTES), str(path)):
        try:
            if not line.ok:
                raise ValueError(line.problem)
            rec = line.value
            if not all(isinstance(rec.get(f), str) for f in ("subject", "text")) or \
                    not isinstance(rec.get("case_id"), (str, int)) or isinstance(rec.get("case_id"), bool):
                raise ValueError("subject, case_id and text are not all text")
            out[key(rec["subject"], rec["case_id"])] = rec["text"]
        except (ValueError, KeyError, TypeError, AttributeError) as err:
            raise ReportInputError(f"{path}, line {line.number}: not a text record ({err})") from None
    return out


def raw_answers(folder: Path, stages=None) -> dict[str, dict]:
    """custom_id -> the cached response (text, reasoning, finish reason, tokens) of every stage's runner
    under ``folder/runs``. A request answered by two providers in one folder keeps the later file."""
    out: dict[str, dict] = {}
    folder = Path(folder)
    runs = folder / "runs"
    if runs.is_symlink() or not runs.is_dir():
        if os.path.lexists(runs):  # a link (the answers would come from elsewhere) or a file
            raise ReportInputError(f"{runs}: not a folder of the run's own answers; not read")
        return out
    for stage_dir in sorted(p for p in runs.iterdir() if p.is_dir()):
        if stages is not None and stage_dir.name not in stages:
            continue
        files = []
        for path in (stage_dir / "cache").glob("*/*.json"):
            admitted = rf.regular_file(folder, path.relative_to(folder), rf.MAX_ANSWER_BYTES)  # opened once
            if admitted is not None:
                files.append((admitted.stat().st_mtime, str(admitted), admitted))
        packed = rf.regular_file(folder, (stage_dir / "cache" / packs.PACK).relative_to(folder), rf.MAX_TABLE_BYTES)
        if packed is not None:  # a packed cache (gavel cache pack): its rows, each with its file's time
            try:
                pack = packs.from_bytes(packed, packed.data)
                files += [(mtime, f"{packed} (key {key})", text) for key, mtime, text in pack.rows()]
                pack.close()
            except packs.PackError as err:
                raise ReportInputError(str(err)) from None
        for _, path, source in sorted(files, key=lambda f: f[:2]):
            text = source if isinstance(source, str) else rf.read_text(source, rf.MAX_ANSWER_BYTES)
            rec = rf.json_value(text, f"cache file {path}")
            if isinstance(rec, dict) and rec.get("custom_id"):
                if not isinstance(rec["custom_id"], str) or not isinstance(rec.get("text"), (str, type(None))):
                    raise ReportInputError(f"cache file {path}: not a cached answer (custom_id and text are not text)")
                out[rec["custom_id"]] = rec
    return out


def optional_tables(folder: Path) -> dict[str, dict]:
    """Each optional table present in ``folder`` (``OPTIONAL``) as {title, columns, rows, scope}; where the
    table has subject/case_id(/item) columns its rows are also keyed by summary or cell."""
    out = {}
    for name, title in OPTIONAL.items():
        path = rf.regular_file(folder, name)
        if path is None:
            continue
        table = rf.table(path, dtype={"case_id": str})
        cols = [str(c) for c in table.columns]
        missing = [c for c in OPTIONAL_COLUMNS.get(name, ()) if c not in cols]
        if missing:
            raise ReportInputError(f"{path}: no {', '.join(f'`{c}`' for c in missing)} column (not the table "
                                   f"`gavel evaluate` writes)")
        rows = [[clean(v) for v in row] for row in table.itertuples(index=False)]
        for n, row in enumerate(rows, 1):
            for col, v in zip(cols, row):
                if isinstance(v, float) and not math.isfinite(v):
                    raise ReportInputError(f"{path}, row {n}: `{col}` is {v}, not a finite number")
        scope = "cell" if {"subject", "case_id", "item"} <= set(cols) else \
            "summary" if {"subject", "case_id"} <= set(cols) else "run"
        entry = {"title": title, "file": name, "columns": cols, "scope": scope}
        if scope == "run":
            entry["rows"] = rows
        else:
            by: dict[str, list] = {}
            idx = [cols.index(c) for c in (("subject", "case_id", "item") if scope == "cell" else ("subject", "case_id"))]
            for row in rows:
                by.setdefault(key(*(row[i] for i in idx)), []).append(row)
            entry["by"] = by
            entry["rows_total"] = len(rows)
        out[name.removesuffix(".csv")] = entry
    return out


def flipped_cells(optional: dict) -> list[str]:
    """Cells whose verdict is not the same everywhere it was asked: across repeats (``stability_units``, stage
    compare) and across the judge's repeats and orders (``judgments.csv``, docs/orders.md: the mapped verdict,
    an unusable answer its own)."""
    out = set()
    units = optional.get("stability_units")
    if units:
        stage = units["columns"].index("stage")
        out |= {k for k, rows in units["by"].items() if any(r[stage] == "compare" for r in rows)}
    judged = optional.get("judgments")
    if judged:
        stage, status, relation, pairs = (judged["columns"].index(c) for c in ("stage", "status", "relation", "pairs"))
        out |= {k for k, rows in judged["by"].items()
                if len({(r[status] == "ok", r[relation], r[pairs]) for r in rows if r[stage] == "compare"}) > 1}
    return sorted(out)


def run_data(folder: str | Path, title: str | None = None) -> dict:
    """Everything the report of one evaluation folder shows (see the module)."""
    folder = Path(folder).absolute()  # resolved once: every file below is read from this folder
    if not folder.is_dir():
        raise ReportInputError(f"{folder}: no such folder (give the --out folder of `gavel evaluate`)")
    tables = rf.tables(folder)
    missing = [f"{n}.csv" for n in ("compare", "scores", "values", "answers") if n not in tables]
    if missing:
        raise ReportInputError(f"{folder}: not a `gavel evaluate` output folder ({', '.join(missing)} missing)")
    rf.check(folder, tables)
    manifest = _manifest(folder)
    seed = manifest.get("seed", 0) or 0
    texts = _texts(folder)
    compare = records(tables["compare"])
    scores = records(tables["scores"])
    subjects = sorted({r["subject"] for r in scores} | {r["subject"] for r in compare})
    checklist, checklist_notes = rf.checklist(folder, manifest)
    items = item_names((r["item"] for r in compare), checklist)

    # leaderboard: per model, the four scores with bootstrap intervals over cases
    board = []
    for subject in subjects:
        mine = [r for r in scores if r["subject"] == subject]
        board.append({"subject": subject, "label": config.model_label(subject), "cases": len(mine),
                      **{s: interval([r[s] for r in mine], seed) for s in SCORES},
                      "unusable_items": sum(int(r.get("unusable_items") or 0) for r in mine)})
    board.sort(key=lambda b: -(b["s_gavel_ref"][0] if b["s_gavel_ref"][0] is not None else -1e9))
    judged_intervals(board, tables.get("model_scores"))
    score_compared, verdicts, sentences = compared(folder, scores)
    for b in board:
        b["compared"] = verdicts.get(b["subject"])

    # heatmap: mean matching score of usable pairs per (item, model), with counts
    heat: dict = {}
    for r in compare:
        h = heat.setdefault(key(r["subject"], r["item"]), {"sum": 0.0, "n": 0, "unusable": 0, "cells": 0})
        h["cells"] += 1
        if r["status"] in USABLE and r["score"] is not None:
            h["sum"] += float(r["score"])
            h["n"] += 1
        elif r["status"] not in USABLE:
            h["unusable"] += 1
    heat = {k: {"score": (h["sum"] / h["n"]) if h["n"] else None, "applicable": h["n"], "unusable": h["unusable"],
                "cells": h["cells"]} for k, h in heat.items()}

    # values: per (subject, case, item), model and reference sides alike
    values: dict[str, list] = {}
    for v in records(tables["values"]):
        values.setdefault(key(v["subject"], v["case_id"], v["item"]), []).append(
            _value_row(v))
    for rows in values.values():
        rows.sort(key=lambda r: r[0] or 0)

    # answers: every round of every stage, raw text for the stages in RAW_STAGES and unusable extract rounds
    raw = raw_answers(folder)
    raw_texts: list[str] = []
    raw_index: dict[str, int] = {}
    answers: dict[str, list] = {}
    extract_status: dict[str, str] = {}
    for a in sorted(records(tables["answers"]), key=lambda a: a["round"] or 0):
        item = a.get("item")
        k = key(a["stage"], a["subject"], a["case_id"], item if isinstance(item, str) else "")
        resp = raw.get(a["custom_id"] or "")
        ref = None
        if resp and (a["stage"] in RAW_STAGES or a["status"] not in USABLE) and resp.get("text") is not None:
            text = resp["text"]
            if text not in raw_index:
                raw_index[text] = len(raw_texts)
                raw_texts.append(text)
            ref = raw_index[text]
        answers.setdefault(k, []).append([a["round"], a["status"], a["detail"], a.get("finish_reason"),
                                          a.get("input_tokens"), a.get("output_tokens"), ref])
        if a["stage"] == "extract":
            extract_status[key(a["subject"], a["case_id"], item)] = a["status"]

    cells = [[r["subject"], r["case_id"], r["item"], r["gate"], r.get("relation"), literal(r.get("pairs")),
              r["score"], r["status"], r.get("detail") or "", r.get("problems") or "", r.get("n_model"),
              r.get("n_reference"), r.get("model_is_a"), *_bounds(r)] for r in compare]

    # per summary: scores, residual spans and facts, the residual matching, style ratings
    summaries: dict[str, dict] = {}
    for r in scores:
        summaries[key(r["subject"], r["case_id"])] = {"scores": {c: r.get(c) for c in (*SCORES, "s_checklist_low",
                                                                                      "s_checklist_high", "r_own",
                                                                                      "r_reference")}}
    residual_spans = {key(r["subject"], r["case_id"]): {"spans": literal(r["spans"], []), "r": r["r"],
                                                         "facts_ok": r.get("facts_ok")}
                      for r in records(tables.get("residual"))}
    facts: dict[str, list] = {}
    for f in records(tables.get("residual_facts")):
        facts.setdefault(key(f["subject"], f["case_id"]), []).append([f["index"], f["fact"], literal(f["evidence_spans"], [])])
    matches = {key(r["subject"], r["case_id"]): [r["gate"], literal(r.get("pairs")), r["score"], r["status"],
                                                 r.get("detail") or ""]
               for r in records(tables.get("residual_match"))}
    styles = {key(r["subject"], r["case_id"]): [[a, r.get(a)] for a in STYLE_ASPECTS] + [["s_style", r.get("s_style")],
                                                                                       ["status", r["status"]],
                                                                                       ["detail", r.get("detail") or ""]]
              for r in records(tables.get("style"))}
    residual = {k: {**v, "facts": facts.get(k, [])} for k, v in residual_spans.items()}

    optional = optional_tables(folder)
    return {"kind": "run", "title": title or f"GAVEL-REF run {folder.name}", "source": str(folder.name),
            "manifest": {**{k: manifest[k] for k in ("extractor", "judge", "provider", "alpha", "seed", "mode", "items")
                            if k in manifest},
                         **({"checklist": manifest["checklist"].get("name")} if manifest.get("checklist") else {}),
                         **({"checklist_fingerprint": checklist.fingerprint} if manifest.get("checklist") else {})},
            "subjects": subjects, "labels": {s: config.model_label(s) for s in subjects}, "items": items,
            "board": board, "compared": score_compared, "comparison_sentences": sentences, "heat": heat, "cells_columns": CELL_COLUMNS, "cells": cells, "values": values,
            "texts": texts, "answers": answers, "raw": raw_texts, "extract_status": extract_status,
            "summaries": summaries, "residual": residual, "residual_match": matches, "style": styles,
            "optional": optional, "flipped": flipped_cells(optional), "repeat_stages": list(REPEAT_STAGES),
            "judge_view": judge_view.view(folder),
            "problems": records(tables.get("problems")),
            "notes": checklist_notes + ([] if texts else [
                "This run folder has no texts.jsonl (written by `gavel evaluate` since the report exists): values are "
                "listed without their highlights. Rerun the evaluation (answers come from its cache) to add it."])}


def _manifest(folder: Path) -> dict:
    """``evaluation.json`` (an empty one where the folder has none), its fields checked where the report uses
    them."""
    path = folder / "evaluation.json"
    manifest = rf.json_file(folder, "evaluation.json")
    if manifest is None:
        return {}
    if not isinstance(manifest, dict):
        raise ReportInputError(f"{path}: not an object of the run's settings")
    seed = manifest.get("seed", 0)
    if seed is not None and (not isinstance(seed, int) or isinstance(seed, bool) or not 0 <= seed < 2**32):
        raise ReportInputError(f"{path}: `seed` is {str(seed)[:40]!r}, not a whole number from 0 to 4,294,967,295")
    if manifest.get("checklist") is not None and not (
            isinstance(manifest["checklist"], dict)
            and all(isinstance(manifest["checklist"].get(f), (str, type(None))) for f in ("name", "fingerprint"))):
        raise ReportInputError(f"{path}: `checklist` is not the record of a checklist (name, fingerprint)")
    return manifest


#: the columns of ``cells`` rows (the page reads them by these names)
CELL_COLUMNS = ["subject", "case_id", "item", "gate", "relation", "pairs", "score", "status", "detail", "problems",
                "n_model", "n_reference", "model_is_a", "low", "high"]


def _value_row(v: dict) -> list:
    """[index, value, evidence, spans, grounding]: a located snippet is its span of the text, so only the
    snippets that were not found travel as text (None in their place otherwise)."""
    evidence, spans = literal(v["evidence"], []), literal(v["evidence_spans"], [])
    spans = spans + [None] * (len(evidence) - len(spans))
    return [v["index"], v["value"], [None if sp else e for e, sp in zip(evidence, spans)], spans,
            literal(v["evidence_grounding"], [])]


def _bounds(row: dict) -> list:
    """[low, high] of a pair's score: the score itself when usable (none when not applicable), 0..1 when the
    answer was unusable (how S_checklist's bounds count it)."""
    if row["status"] in USABLE:
        return [row["score"], row["score"]]
    return [0.0, 1.0]
