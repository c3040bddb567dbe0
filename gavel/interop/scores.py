"""One summary's GAVEL-REF as an inspect ``Score``, from gavel's own tables: the scorer builds it from the
tables of its one-summary pass, ``gavel export inspect`` from a run folder's; one function for both.

The value is a dict: ``s_checklist``, ``s_residual``, ``s_style``, ``s_gavel_ref`` and each item's score (the
compare table's), NaN where gavel has no number (an unusable answer, a gated pair): inspect counts a NaN as
unscored, never as 0. The explanation lists every item's relation; the metadata holds the cells."""

from __future__ import annotations

import math
import re

import numpy as np
import pandas as pd

#: the score value's components, in gavel's order (scores.csv's columns)
COMPONENTS = ("s_checklist", "s_residual", "s_style", "s_gavel_ref")
#: scores.csv columns kept in the metadata beside the value
DETAILS = ("s_checklist_low", "s_checklist_high", "unusable_items", "r_own", "r_reference")
#: with both orders (``--orders both``): order_summaries.csv's scores in the value, its counts in the metadata
ORDER_SCORES = ("s_checklist_order_1", "s_checklist_order_2", "s_checklist_order_aware")
ORDER_DETAILS = ("s_checklist_order_aware_low", "s_checklist_order_aware_high", "disagreeing_items")


def plain(value):
    """A cell as JSON holds it: numpy scalars as Python numbers, NaN and missing as None, containers inside."""
    if isinstance(value, dict):
        return {str(k): plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple, np.ndarray)):
        return [plain(v) for v in value]
    if isinstance(value, np.generic):
        value = value.item()
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return None
    return value


def number(value) -> float:
    """A score as a float, NaN for none."""
    return math.nan if plain(value) is None else float(value)


def records(frame: pd.DataFrame | None, subject: str, case_id: str) -> list[dict]:
    """The rows of one summary in a gavel table, as plain dicts."""
    if frame is None or not len(frame) or "subject" not in frame:
        return []
    mine = frame[(frame["subject"].astype(str) == subject) & (frame["case_id"].astype(str) == case_id)]
    return [{k: plain(v) for k, v in row.items()} for row in mine.to_dict("records")]


#: what inspect's viewer would read as Markdown or HTML in an explanation
_MARKUP = re.compile(r"([\\`*{}\[\]()#!|<>~&])")


def escaped(text) -> str:
    """Text from a model or a checklist file, shown literally in inspect's viewer (it renders explanations as
    Markdown): every Markdown and HTML character backslash-escaped, line breaks as spaces."""
    return _MARKUP.sub(r"\\\1", " ".join(str(text).split()))


def verdict(cell: dict) -> str:
    """What the judge said of one item, in a few words: its relation, matched pairs, gate or why unusable."""
    if cell.get("status") not in ("ok", "gated"):
        return f"unusable ({escaped(cell.get('status'))}: {escaped(str(cell.get('detail') or '')[:80])})"
    if cell.get("status") == "gated":
        return f"gated ({escaped(cell.get('gate'))})"
    if cell.get("relation"):
        return escaped(cell["relation"])
    pairs = cell.get("pairs")
    return f"{len(pairs) if isinstance(pairs, list) else pairs} matched of {cell.get('n_model')} and {cell.get('n_reference')}"


def explanation(cells: list[dict], items: list[str]) -> str:
    """One line per item: its relation and score; an item without a cell says so."""
    by_item = {c["item"]: c for c in cells}
    lines = []
    for key in items:
        cell = by_item.get(key)
        if cell is None:
            lines.append(f"{escaped(key)}: no cell")
            continue
        score = cell.get("score")
        lines.append(f"{escaped(key)}: {verdict(cell)} -> {'not scored' if score is None else score}")
    return "  \n".join(lines)  # a Markdown line break


def label_order_value(judgments: pd.DataFrame, compare: pd.DataFrame, subject: str, case_id: str,
                      k: int) -> dict:
    """With ``--label-orders K``: one summary's S_checklist with each option-order row's verdicts
    (``s_checklist_label_order_<row>``) and ``label_order_change`` (the largest minus the smallest), as
    ``label_order_models.csv`` has them per model (``gavel.runs.label_orders.model_table`` on this summary
    alone: the model's values are the means of these over its cases). ``judgments``: one repeat's rows of
    ``label_judgments.csv``."""
    from gavel.core.vocab import LABEL_ORDER_ROWS
    from gavel.runs.label_orders import model_table

    def mine(t):
        return t[(t["subject"].astype(str) == subject) & (t["case_id"].astype(str) == case_id)]
    table = model_table(mine(judgments).assign(repeat=1, case_id=case_id), [{"compare": mine(compare)}], k)
    if not len(table):
        return {}
    row = table.iloc[0]
    return {**{f"s_checklist_label_order_{r}": number(row[f"s_checklist_label_order_{r}"]) for r in LABEL_ORDER_ROWS[k]},
            "label_order_change": number(row["label_order_change"])}


def score_parts(score_row: dict, tables: dict, items: list[str], checklist: str, label_orders: int = 1) -> dict:
    """``{"value", "answer", "explanation", "metadata"}`` of one summary's inspect Score from gavel's tables
    (``scores``' row of the summary; ``compare``, ``values``, ``residual_match``, ``style``, ``answers``,
    ``judgments``, ``label_judgments`` as the pipeline makes them or a run folder holds them);
    ``label_orders``: the run's K (its per-row scores in the value, :func:`label_order_value`)."""
    subject, case_id = str(score_row["subject"]), str(score_row["case_id"])
    cells = records(tables.get("compare"), subject, case_id)
    by_item = {c["item"]: c for c in cells}
    value = {k: number(score_row.get(k)) for k in COMPONENTS}
    value.update({key: number(by_item.get(key, {}).get("score")) for key in items})
    if label_orders > 1 and tables.get("label_judgments") is not None and tables.get("compare") is not None:
        value.update(label_order_value(tables["label_judgments"], tables["compare"], subject, case_id, label_orders))
    orders = [r for r in records(tables.get("order_summaries"), subject, case_id) if r.get("repeat") in (1, None)]
    if orders:  # gavel's order-aware S_checklist of this summary (gavel.runs.orders.summary_scores)
        value.update({k: number(orders[0].get(k)) for k in ORDER_SCORES})
    answers = records(tables.get("answers"), subject, case_id)
    metadata = {
        "subject": subject, "case_id": case_id, "checklist": checklist,
        **{k: plain(score_row.get(k)) for k in DETAILS},
        "cells": cells,
        "values": records(tables.get("values"), subject, case_id),
        "reference_values": records(tables.get("values"), "human", case_id),
        "residual_match": records(tables.get("residual_match"), subject, case_id),
        "style": records(tables.get("style"), subject, case_id),
        "judgments": records(tables.get("judgments"), subject, case_id),
        "unusable_answers": [a for a in answers if a.get("status") != "ok"],
        **({"orders": {k: orders[0].get(k) for k in ORDER_DETAILS}} if orders else {}),
        **({"label_judgments": records(tables["label_judgments"], subject, case_id)}
           if tables.get("label_judgments") is not None else {}),
    }
    s = value["s_gavel_ref"]
    return {"value": value, "answer": None if math.isnan(s) else f"{s:.2f}",
            "explanation": explanation(cells, items), "metadata": metadata}
