"""Reading a finished evaluation's tables (``gavel.runs.pipeline.evaluate`` writes them) for the notebooks
and the command line: the tables, per-item scores, unusable answers, and the requests that got no answer
with a report of how many failed, by stage, and why."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from gavel.core import config
from gavel.core.spreadsheet import read_csv


def in_repo(path) -> Path:
    """A relative path is read from the repository root (notebooks run in notebooks/)."""
    path = Path(path)
    return path if path.is_absolute() else config.REPO_ROOT / path


#: the tables of a run that :func:`read_tables` reads (judgments.csv: docs/orders.md)
TABLES = ("values", "answers", "compare", "residual", "residual_match", "residual_facts", "style", "scores",
          "model_scores", "problems", "judgments")


def read_tables(out: str | Path) -> dict[str, pd.DataFrame]:
    out = in_repo(out)
    return {n: read_table(out / f"{n}.csv") for n in TABLES if (out / f"{n}.csv").exists()}


def read_table(path: Path) -> pd.DataFrame:
    """A table written by ``evaluate``; one with no rows and no columns (nothing extracted when every request
    failed) is written as an empty line and read back as an empty table."""
    try:
        return read_csv(path)
    except pd.errors.EmptyDataError:
        return pd.DataFrame()


def failed_requests(tables: dict) -> pd.DataFrame:
    """The requests that got no answer (status ``failed``: the provider errored after the runner's retries,
    or the request was too long to send) in their last round, with stage and reason."""
    a = tables.get("answers")
    cols = ["stage", "subject", "case_id", "item", "detail"]
    if a is None or not len(a):
        return pd.DataFrame(columns=cols)
    last = a.loc[a.groupby(["stage", "subject", "case_id", "item"], dropna=False)["round"].idxmax()]
    failed = last[last["status"] == "failed"][cols]
    failed.attrs["requests"] = a.attrs.get("requests", len(last))  # a grouped run keeps only the unusable ones
    return failed


def failure_report(failed: pd.DataFrame, reasons: int = 5) -> str:
    """How many requests failed, by stage, and why (the most common reasons with their counts)."""
    if not len(failed):
        return "every request was answered"
    total = failed.attrs.get("requests")
    by_stage = ", ".join(f"{stage} {n}" for stage, n in failed["stage"].value_counts(sort=False).items())
    why = failed["detail"].fillna("").astype(str).str.slice(0, 300).value_counts()
    lines = [f"{len(failed)}{f' of {total}' if total else ''} requests failed (no answer; not scored): {by_stage}; why:"]
    lines += [f"  {n} x {detail or '(no reason given)'}" for detail, n in why.head(reasons).items()]
    if len(why) > reasons:
        lines.append(f"  ... and {len(why) - reasons} other reason(s): see answers.csv")
    return "\n".join(lines)


def item_table(tables: dict) -> pd.DataFrame:
    """Mean matching score per (subject, item) over applicable pairs, with counts of gates and unusable answers."""
    c = tables["compare"]
    usable = c["status"].isin(["ok", "gated"])
    frame = c.assign(usable_score=c["score"].where(usable), unusable=(~usable).astype(int))
    g = frame.groupby(["subject", "item"])
    return pd.DataFrame({"score": g["usable_score"].mean(), "applicable": g["usable_score"].count(),
                         "judged": g["gate"].agg(lambda s: int(s.isin(["single", "multi"]).sum())),
                         "unusable": g["unusable"].sum()}).reset_index()


def unusable_answers(tables: dict) -> pd.DataFrame:
    """Every answer that could not be used in its last round, with its stage and reason."""
    a = tables.get("answers")
    if a is None or not len(a):
        return pd.DataFrame(columns=["stage", "subject", "case_id", "item", "status", "detail"])
    last = a.loc[a.groupby(["stage", "subject", "case_id", "item"], dropna=False)["round"].idxmax()]
    return last[~last["status"].isin(["ok", "gated"])][["stage", "subject", "case_id", "item", "status", "detail"]]


def run_counts(runs: list[dict]) -> dict:
    """What a run (its repeats' tables, ``evaluate_repeats(...)["runs"]``) sent and got, the one count that the
    command line, the demo and the notebooks print: requests ``sent`` and ``cached`` per stage summed over
    every repeat, and per repeat the number of ``unusable`` answers (:func:`unusable_answers`: an answer
    still unusable in its last round; one that a re-ask fixed is not counted)."""
    sent: dict[str, int] = {}
    cached: dict[str, int] = {}
    for run in runs:
        for total, part in ((sent, run["manifest"]["sent"]), (cached, run["manifest"]["cached"])):
            for stage, n in part.items():
                total[stage] = total.get(stage, 0) + n
    return {"sent": sent, "cached": cached, "unusable": [len(unusable_answers(run)) for run in runs]}


def counts_line(runs: list[dict]) -> str:
    """:func:`run_counts` in one line: ``sent 40, cached 0 (2 repeats); unusable answers: 8 (repeat 1), 7 (repeat 2)``."""
    c = run_counts(runs)
    unusable = (str(c["unusable"][0]) if len(runs) == 1 else
                ", ".join(f"{n} (repeat {r})" for r, n in enumerate(c["unusable"], 1)))
    return (f"sent {sum(c['sent'].values())}, cached {sum(c['cached'].values())}"
            + (f" ({len(runs)} repeats)" if len(runs) > 1 else "") + f"; unusable answers: {unusable}")



def _nan(x) -> bool:
    return x is None or (isinstance(x, float) and x != x)


def why_missing(tables: dict, subject: str, case_id: str) -> dict[str, str]:
    """Why a summary's S_checklist or S_GAVEL-REF is missing (NaN) in ``scores.csv``, in one sentence each,
    from the run's own tables: ``{"s_checklist": why, "s_gavel_ref": why}`` (only the missing ones)."""
    scores = tables["scores"]
    row = scores[(scores["subject"] == subject) & (scores["case_id"].astype(str) == str(case_id))]
    if not len(row):
        return {"s_checklist": "the summary was not evaluated (see problems.csv)"}
    row = row.iloc[0]
    out = {}
    c = tables["compare"]
    c = c[(c["subject"] == subject) & (c["case_id"].astype(str) == str(case_id))] if len(c) else c
    if _nan(row["s_checklist"]):
        out["s_checklist"] = _checklist_why(c, tables)
    if _nan(row["s_gavel_ref"]):
        parts = []
        if "s_checklist" in out:
            parts.append("S_checklist is missing")
        if _nan(row["s_style"]):
            st = tables["style"]
            st = st[(st["subject"] == subject) & (st["case_id"].astype(str) == str(case_id))] if len(st) else st
            parts.append("S_style is missing (" + (_answer_why(st.iloc[0]) if len(st) else "no style answer") + ")")
        if row["r_reference"] > 0 and _nan(row["s_residual"]):
            rm = tables["residual_match"]
            rm = rm[(rm["subject"] == subject) & (rm["case_id"].astype(str) == str(case_id))] if len(rm) else rm
            if len(rm) and rm.iloc[0]["gate"] == "not_applicable":
                why = "neither summary has residual facts, though the reference has text outside its checklist"
            else:
                why = _answer_why(rm.iloc[0]) if len(rm) else "no residual matching"
            parts.append(f"S_residual is missing ({why})")
        out["s_gavel_ref"] = "; ".join(parts) or "a component is missing"
    return out


def _answer_why(row) -> str:
    if row["status"] in ("ok", "gated"):  # usable, yet no score: its detail says why (a style rating missing)
        return str(row.get("detail") or "") or f"answer {row['status']}"
    if row["status"] == "no_values":
        return row["detail"]
    detail = str(row.get("detail") or "")
    return f"the answer was unusable: {row['status']}" + (f", {detail[:160]}" if detail else "")


def _extraction_why(tables: dict, subject: str, case_id, item: str, detail: str) -> str:
    """Why an item has no checklist on one side: its extraction answer's last status and reason."""
    side = "reference" if detail.startswith("no reference") else "model"
    who = "human" if side == "reference" else subject
    a = tables.get("answers")
    if a is None or not len(a):
        return detail
    mine = a[(a["stage"] == "extract") & (a["subject"] == who) & (a["case_id"].astype(str) == str(case_id))
             & (a["item"] == item)]
    if not len(mine):
        return detail
    last = mine.sort_values("round").iloc[-1]
    return f"the {side} summary's extraction was unusable ({last['status']}: {str(last['detail'])[:120]})"


def _checklist_why(c: pd.DataFrame, tables: dict) -> str:
    """Why no item of one summary has a score: every item is not applicable, or unusable, and why."""
    if not len(c):
        return "no item was compared"
    parts = []
    for r in c.itertuples():
        if r.status == "no_values":  # a side's extraction was unusable: say how
            parts.append(f"{r.item}: {_extraction_why(tables, r.subject, r.case_id, r.item, r.detail)}")
        elif r.gate == "not_applicable":
            parts.append(f"{r.item}: not applicable (no value in either summary's checklist, so nothing to compare "
                         f"and no request sent)")
        else:
            parts.append(f"{r.item}: {_answer_why(c.loc[r.Index])}")
    return "no item has a score: " + "; ".join(parts)


def score_lines(tables: dict, limit: int = 5) -> list[str]:
    """Per evaluated summary, one line: its S_checklist and S_GAVEL-REF, or exactly why one is missing
    (the first ``limit`` summaries with a missing score; a count of the rest)."""
    lines, missing = [], 0
    scores = tables["scores"]
    for r in scores[scores["s_checklist"].isna() | scores["s_gavel_ref"].isna()].itertuples():  # the others say nothing
        why = why_missing(tables, r.subject, r.case_id)
        if not why:
            continue
        missing += 1
        if missing <= limit:
            lines += [f"{r.subject} case {r.case_id}: {name.replace('s_checklist', 'S_checklist').replace('s_gavel_ref', 'S_GAVEL-REF')} "
                      f"missing: {text}" for name, text in why.items()]
    if missing > limit:
        lines.append(f"... and {missing - limit} more summaries with a missing score (scores.csv, compare.csv)")
    return lines


def read_report(out: str | Path, names, what: str, how: str) -> dict[str, pd.DataFrame]:
    """The tables ``names`` of one report written to the run folder ``out`` (``what``: its name in the error;
    ``how``: the setting that makes it), or a clear error naming the missing files."""
    out = Path(out)
    missing = [n for n in names if not (out / f"{n}.csv").exists()]
    if missing:
        raise FileNotFoundError(f"{out}: no {what} ({', '.join(m + '.csv' for m in missing)} missing); "
                                f"run the evaluation with {how}")
    return {n: read_csv(out / f"{n}.csv", dtype={"case_id": str}) for n in names}  # never empty: headers
