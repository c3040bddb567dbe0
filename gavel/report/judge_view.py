"""The report's view of how far the judge's verdicts can be trusted: the order report (``--orders both``), the
label-order report (``--label-orders K``) and the majority over repeats, as one line per item with its verdict,
the swap matrix as a small table and a drawn preference per item, with the full tables a link away.

Built from the run folder's tables when they are there (``None`` when none is); every string is shown by the
page's template as text (escaped), the drawing is plain SVG shapes (no style attribute, no script).
"""

from __future__ import annotations

import math
from pathlib import Path

import pandas as pd

from gavel.report import folder as rf
from gavel.runs.orders import MIN_VERDICTS

TABLES = ("order", "order_swaps", "order_majority", "label_order", "label_order_models")
SWAP_LABELS = {"equal": "equal", "model_contains_reference": "model ⊃ ref", "reference_contains_model": "ref ⊃ model",
               "different": "different", "unusable": "unusable"}
BAR = 160  # width in pixels of one item's drawn preference


#: the columns the view reads from each table
COLUMNS = {"order": ("stage", "item", "gate", "position_bias", "first_preference", "first_preference_ci_low",
                     "first_preference_ci_high", "stable_k_median", "containment_verdicts", "first_is_container",
                     "second_is_container", "usable_pairs", "consistency"),
           "order_swaps": ("item", "order_1", "order_2", "count"), "order_majority": (),
           "label_order": ("item", "verdict", "option_order_bias"), "label_order_models": ("subject",)}


def _read(folder: Path) -> dict[str, pd.DataFrame]:
    """The view's tables that the folder holds, each admitted by ``gavel.report.folder`` first (a regular file
    inside the run folder, of bounded size); one that cannot be read ends the report in one line naming it."""
    out = {}
    for name in TABLES:
        path = rf.regular_file(folder, f"{name}.csv")
        if path is not None:
            table = rf.table(path, dtype={"case_id": str})
            missing = [c for c in COLUMNS[name] if len(table) and c not in table]
            if missing:
                raise rf.ReportInputError(f"{path}: no column {missing[0]!r}; not a table gavel wrote")
            if name == "order_swaps" and len(table):
                table["count"] = [_count(c) for c in table["count"]]
            out[name] = table
    return out


def _num(x) -> float | None:
    try:
        x = float(x)
    except (TypeError, ValueError, OverflowError):
        return None
    return x if math.isfinite(x) else None


def _count(x) -> int:
    """A count from a table cell; 0 where the cell holds no finite number (a hostile folder's ``inf``, text)."""
    v = _num(x)
    return int(v) if v is not None and abs(v) < 2**53 else 0


def order_line(r) -> str:
    """One line for a reader from an ``order.csv`` row."""
    n = _count(r["containment_verdicts"])
    if str(r["position_bias"]) != "True" and n < MIN_VERDICTS:
        return (f"not tested ({n} containment verdict{'' if n == 1 else 's'}; the sign test needs "
                f"{MIN_VERDICTS})")
    if str(r["position_bias"]) == "True":
        first = _num(r["first_preference"]) or 0.0
        if first > 0.5:
            return f"prefers the first text: {_count(r['first_is_container'])} of {n}"
        return f"prefers the second text: {_count(r['second_is_container'])} of {n}"
    usable = _count(r["usable_pairs"])
    cons = _num(r["consistency"])
    return "no bias found" + (f" ({usable} pairs, {cons:.0%} give one verdict in both orders)" if cons is not None
                              else f" ({usable} pairs in both orders)")


def _marker(value, low, high) -> dict | None:
    """SVG coordinates of a share on [0, 1] with its interval."""
    v = _num(value)
    if v is None:
        return None
    lo, hi = _num(low), _num(high)
    return {"x": round(v * BAR, 1), "lo": round((lo if lo is not None else v) * BAR, 1),
            "hi": round((hi if hi is not None else v) * BAR, 1)}


def view(folder: str | Path) -> dict | None:
    """The view's data (see the module), or None when the folder holds none of its tables."""
    folder = Path(folder)
    t = _read(folder)
    if not t:
        return None
    rows: dict[str, dict] = {}

    def row(item: str) -> dict:
        return rows.setdefault(item, {"item": item, "order": "", "label": "", "majority": "", "marker": None,
                                      "bias": False})
    order = t.get("order")
    if order is not None:
        for r in order[order["stage"] == "compare"].to_dict("records"):
            x = row(r["item"])
            x["order"] = (f"{r['gate']}: " if r["gate"] != "single" else "") + order_line(r)
            x["bias"] = x["bias"] or str(r["position_bias"]) == "True"
            if r["gate"] == "single" or x["marker"] is None:
                x["marker"] = _marker(r["first_preference"], r["first_preference_ci_low"], r["first_preference_ci_high"])
            k = _num(r["stable_k_median"])
            if k is not None:
                x["majority"] = f"a stable majority after {k:g} judgment{'' if k == 1 else 's'} (median)"
    label = t.get("label_order")
    if label is not None:
        for r in label.to_dict("records"):
            x = row(r["item"])
            x["label"] = str(r["verdict"])
            x["bias"] = x["bias"] or str(r["option_order_bias"]) == "True"
    swaps = None
    sw = t.get("order_swaps")
    if sw is not None and len(sw):
        off = sw[sw["order_1"] != sw["order_2"]].groupby("item")["count"].sum()
        item = off.idxmax() if len(off) and off.max() > 0 else sw["item"].iloc[0]
        g = sw[sw["item"] == item]
        labels = list(SWAP_LABELS)
        cells = {(a, b): _count(c) for a, b, c in zip(g["order_1"], g["order_2"], g["count"])}
        swaps = {"item": item, "labels": [SWAP_LABELS[x] for x in labels],
                 "rows": [[SWAP_LABELS[a], *[cells.get((a, b), 0) for b in labels]] for a in labels]}
    models = []
    lm = t.get("label_order_models")
    if lm is not None:
        for r in lm.to_dict("records"):
            ch, lo, hi = (_num(r.get(c)) for c in ("label_order_change", "label_order_change_ci_low",
                                                   "label_order_change_ci_high"))
            if ch is None:
                models.append(f"{r['subject']}: the option order's effect on S_checklist: not tested "
                              "(no single-value pair)")
            else:
                models.append(f"{r['subject']}: the option order moves S_checklist by {ch:.2f} points"
                              + (f" (95% CI {lo:.2f}–{hi:.2f})" if lo is not None and hi is not None else ""))
    return {"rows": sorted(rows.values(), key=lambda x: (not x["bias"], x["item"])), "swaps": swaps,
            "models": models, "bar": BAR, "links": [f"{n}.csv" for n in TABLES if n in t]}
