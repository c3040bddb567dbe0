"""Reading a finished evaluation's tables (``gavel.ref.pipeline.evaluate`` writes them) for the notebooks
and the command line: the tables, per-item scores, unusable answers, and the requests that got no answer
with a report of how many failed, by stage, and why."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from gavel.core import config


def in_repo(path) -> Path:
    """A relative path is read from the repository root (notebooks run in notebooks/)."""
    path = Path(path)
    return path if path.is_absolute() else config.REPO_ROOT / path


def read_tables(out: str | Path) -> dict[str, pd.DataFrame]:
    out = in_repo(out)
    names = ("values", "answers", "compare", "residual", "residual_match", "residual_facts", "style", "scores",
             "model_scores", "problems", "judgments")  # judgments.csv: docs/orders.md
    return {n: _read_table(out / f"{n}.csv") for n in names if (out / f"{n}.csv").exists()}


def _read_table(path: Path) -> pd.DataFrame:
    """A table written by ``evaluate``; one with no rows and no columns (nothing extracted when every request
    failed) is written as an empty line and read back as an empty table."""
    try:
        return pd.read_csv(path, keep_default_na=True)
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
    failed.attrs["requests"] = len(last)
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
