"""Dollars per detectable point (``gavel plan``, docs/plan.md): before paying, how many cases x repeats x
orders a comparison of two models needs to detect a given difference of S_checklist, and what that costs.

The variances come from cells: a *pilot* run folder's (each repeat's ``scores.csv``, the order report's
``order_summaries.csv``: one cell per repeat and order) or the release's (``data/results/
summary_case_scores.csv`` as ``make results`` wrote it: one cell per case). Per pair of models (a, b) on their
common cases:

* ``V0``: the variance (n - 1) of the case differences d_i = mean of a's cells - mean of b's cells;
* ``w_m``: the judge's variance, the mean over cases of the variance (n - 1) of model m's cells in a case
  (cases with two cells or more; unknown with one cell per case: then repeats and orders cannot be planned);
* ``B = max(0, V0 - w_a / k_a - w_b / k_b)``: the variance of the differences between cases (k_m: the pilot's
  cells per case), and with k = repeats x orders cells a case the planned variance ``V(k) = B + (w_a + w_b) / k``
  (repeats and orders taken as exchangeable cells: an order's systematic bias is not noise and is not planned).

The test is the verdict's: a two-sided paired t-test on the case means at the level ``alpha / m`` (Holm's first
step over the m pairs named, which the plan must pass since no one knows beforehand which step a pair reaches),
with ``df = N - 1``. The smallest difference it detects with probability ``power`` on N cases is
``(t(1 - alpha/(2m), N-1) + t(power, N-1)) * sqrt(V(k) / N)``; the cases needed for a difference ``delta`` are
the smallest N >= 2 with that <= delta. The 95% interval gavel prints is a percentile bootstrap that draws the
cases and one cell per drawn case (``gavel.core.paired.cell_draws``); its half-width on N cases is planned as
``z(0.975) * sqrt(D * (N - 1) / N) / sqrt(N)``, D the variance of one drawn cell's difference,
``B + (w_a + w_b)`` (not divided by k: one cell is drawn whatever k is).

Costs (:class:`UnitCost`): a pilot's ledger, repriced at the price table's rows of today (batch or online),
its cached-input share kept; or the dry run's estimate on the release's summaries (``gavel.runs.costing``).
"""

from __future__ import annotations

import math
import os
import stat
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from gavel.core import config, prices
from gavel.ref.inputs import InputError

#: the release's case scores, as ``make results`` writes them
RELEASE_CELLS = config.RESULTS_DIR / "summary_case_scores.csv"
#: the most cases a plan searches (a difference that needs more is "not reachable")
MAX_CASES = 1_000_000
#: the most rows, cells and models a pilot's table may hold (a bigger one is not a run gavel wrote)
MAX_ROWS = 5_000_000


class PlanInputError(InputError):
    """A pilot folder, a ledger or a request the planner cannot use; one line naming the file and record."""


# ---------- cells ----------
def _read(path: Path, columns: list[str]) -> pd.DataFrame:
    """A CSV of the pilot (untrusted): the columns needed, as text, or one error naming the file."""
    from gavel.core.spreadsheet import read_csv

    try:
        with open(path, "rb") as handle:  # open once, then check what was opened
            if not stat.S_ISREG(os.fstat(handle.fileno()).st_mode):
                raise PlanInputError(f"{path}: not a regular file")
            table = read_csv(handle, dtype=str, keep_default_na=False)
    except PlanInputError:
        raise
    except FileNotFoundError:
        raise PlanInputError(f"{path}: no such file") from None
    except (OSError, ValueError, UnicodeDecodeError, pd.errors.ParserError) as err:
        raise PlanInputError(f"{path}: cannot be read as a table ({type(err).__name__})") from None
    missing = [c for c in columns if c not in table.columns]
    if missing:
        raise PlanInputError(f"{path}: no column {', '.join(missing)}")
    if len(table) > MAX_ROWS:
        raise PlanInputError(f"{path}: more than {MAX_ROWS:,} rows")
    return table[columns]


def _points(values: pd.Series, path: Path, column: str) -> np.ndarray:
    """A column of scores on 0-100: empty is missing (NaN); anything else that is not a number in range is
    an error naming the file, the record and the column."""
    out = np.full(len(values), np.nan)
    for i, v in enumerate(values):
        if v == "":
            continue
        try:
            x = float(v)
        except ValueError:
            x = math.nan
        if not (0 <= x <= 100):  # NaN, inf and out of range alike
            raise PlanInputError(f"{path}: record {i + 1}: {column} is not a score from 0 to 100")
        out[i] = x
    return out


def release_cells(path: str | Path = RELEASE_CELLS) -> pd.DataFrame:
    """The release's cells: one per (model, case), S_checklist's best estimate (long: model, case_id, cell,
    value)."""
    path = Path(path)
    t = _read(path, ["model", "case_id", "s_checklist"])
    return pd.DataFrame({"model": t["model"], "case_id": t["case_id"], "cell": "r1o1",
                         "value": _points(t["s_checklist"], path, "s_checklist")})


def run_cells(folder: str | Path) -> pd.DataFrame:
    """A run folder's S_checklist cells: repeat r's ``scores.csv`` (order 1), and with the order report's
    ``order_summaries.csv`` each repeat's order 2 (long: model, case_id, cell, value)."""
    folder = Path(folder)
    frames, r = [], 1
    while True:
        where = folder if r == 1 else folder / "repeats" / f"r{r}"
        if r > 1 and not (where / "scores.csv").exists():
            break
        t = _read(where / "scores.csv", ["subject", "case_id", "s_checklist"])
        frames.append(pd.DataFrame({"model": t["subject"], "case_id": t["case_id"], "cell": f"r{r}o1",
                                    "value": _points(t["s_checklist"], where / "scores.csv", "s_checklist")}))
        r += 1
    if (folder / "order_summaries.csv").exists():
        path = folder / "order_summaries.csv"
        t = _read(path, ["repeat", "subject", "case_id", "s_checklist_order_2"])
        if not t["repeat"].isin([str(k) for k in range(1, r)]).all():
            raise PlanInputError(f"{path}: a repeat that is not one of the run's 1..{r - 1}")
        frames.append(pd.DataFrame({"model": t["subject"], "case_id": t["case_id"], "cell": "r" + t["repeat"] + "o2",
                                    "value": _points(t["s_checklist_order_2"], path, "s_checklist_order_2")}))
    cells = pd.concat(frames, ignore_index=True)
    if cells.duplicated(["model", "case_id", "cell"]).any():
        raise PlanInputError(f"{folder}: a (model, case) scored twice in one repeat and order")
    return cells


def pilot_shape(cells: pd.DataFrame) -> dict:
    """Cases, models, repeats and orders of a pilot's cells."""
    c = cells["cell"].unique()
    return {"cases": int(cells["case_id"].nunique()), "models": sorted(cells["model"].unique()),
            "repeats": len({x.split("o")[0] for x in c}), "orders": len({x.split("o")[1] for x in c})}


# ---------- variances ----------
@dataclass(frozen=True)
class PairVariance:
    model_a: str
    model_b: str
    cases: int            # common cases of the pilot
    difference: float     # the pilot's mean difference (a - b)
    v0: float             # variance of the pilot's case differences (case means of its cells)
    within_a: float       # the judge's variance of a's cells in a case (NaN: one cell per case)
    within_b: float
    cells_a: float        # the pilot's mean cells per case
    cells_b: float

    @property
    def judge_measured(self) -> bool:
        return bool(np.isfinite(self.within_a) and np.isfinite(self.within_b))

    @property
    def between(self) -> float:
        """B: the variance of the differences between cases, the judge's share of V0 taken out."""
        if not self.judge_measured:
            return self.v0
        return max(0.0, self.v0 - self.within_a / self.cells_a - self.within_b / self.cells_b)

    def variance(self, cells: int) -> float:
        """V(k): the variance of one case's difference of means over ``cells`` cells a side."""
        return self.between + ((self.within_a + self.within_b) / cells if self.judge_measured else 0.0)

    def draw_variance(self) -> float:
        """D: the variance of one drawn cell's difference (the printed interval's draws)."""
        return self.between + (self.within_a + self.within_b if self.judge_measured else 0.0)


def pair_variance(cells: pd.DataFrame, a: str, b: str) -> PairVariance:
    """:class:`PairVariance` of models ``a`` and ``b`` on their common cases (see the module)."""
    def side(m):
        g = cells[(cells["model"] == m) & cells["value"].notna()].groupby("case_id")["value"]
        return g.mean(), g.var(ddof=1), g.size()
    mean_a, var_a, n_a = side(a)
    mean_b, var_b, n_b = side(b)
    common = mean_a.index.intersection(mean_b.index)
    d = (mean_a[common] - mean_b[common]).to_numpy(float)
    v0 = float(np.var(d, ddof=1)) if len(d) > 1 else math.nan

    def judge(var, n):
        several = var[common][n[common] > 1]
        return float(several.mean()) if len(several) else math.nan
    return PairVariance(a, b, len(d), float(d.mean()) if len(d) else math.nan, v0, judge(var_a, n_a),
                        judge(var_b, n_b), float(n_a[common].mean()) if len(d) else math.nan,
                        float(n_b[common].mean()) if len(d) else math.nan)


# ---------- the test's power and the interval ----------
def detectable(variance: float, cases: int, family: int = 1, alpha: float = 0.05, power: float = 0.8) -> float:
    """The smallest true difference the paired t-test on ``cases`` case means detects with probability
    ``power`` at the level ``alpha / family`` (two-sided): (t(1 - alpha/(2 family), N-1) + t(power, N-1)) x
    sqrt(variance / N). NaN for fewer than 2 cases or an unknown variance."""
    from scipy.stats import t as student

    if cases < 2 or not np.isfinite(variance):
        return math.nan
    df = cases - 1
    return float((student.ppf(1 - alpha / (2 * family), df) + student.ppf(power, df)) * math.sqrt(variance / cases))


def cases_needed(variance: float, delta: float, family: int = 1, alpha: float = 0.05, power: float = 0.8) -> float:
    """The smallest N >= 2 whose :func:`detectable` difference is at most ``delta``; NaN when the variance is
    unknown, inf when it needs more than MAX_CASES."""
    if not np.isfinite(variance) or not delta > 0:
        return math.nan
    if detectable(variance, MAX_CASES, family, alpha, power) > delta:
        return math.inf
    lo, hi = 2, MAX_CASES  # detectable() falls as N grows: the smallest N where it is <= delta
    while lo < hi:
        mid = (lo + hi) // 2
        if detectable(variance, mid, family, alpha, power) <= delta:
            hi = mid
        else:
            lo = mid + 1
    return float(lo)


def half_width(draw_variance: float, cases: int) -> float:
    """The planned half-width of the printed 95% interval on ``cases`` cases: z(0.975) x the bootstrap's
    standard error of a mean, sqrt(D (N - 1) / N) / sqrt(N)."""
    from scipy.stats import norm

    if cases < 2 or not np.isfinite(draw_variance):
        return math.nan
    return float(norm.ppf(0.975) * math.sqrt(draw_variance * (cases - 1) / cases / cases))


# ---------- costs ----------
@dataclass(frozen=True)
class UnitCost:
    """USD of one repeat: per text (a summary or a reference: extraction and residual facts), per summary
    (style) and per summary and order (the judge: compare and residual matching)."""
    text: float
    summary: float
    judge: float
    mode: str
    source: str

    def of(self, models: int, cases: int, repeats: int, orders: int) -> float:
        """``models`` models' summaries and the references of ``cases`` cases, ``repeats`` x ``orders``."""
        return repeats * cases * ((models + 1) * self.text + models * (self.summary + orders * self.judge))


TEXT_STAGES, SUMMARY_STAGES, JUDGE_STAGES = ("extract", "residual"), ("style",), ("compare", "residual_match")
_LEDGER_COLUMNS = ["stage", "model", "requests", "input_tokens", "cache_read_tokens", "output_tokens"]


def _count(value: str, path: Path, record: int, column: str) -> float:
    if value == "":
        return math.nan
    try:
        x = float(value)
    except ValueError:
        x = math.nan
    if not (0 <= x <= prices.MAX_TOKENS * MAX_ROWS):
        raise PlanInputError(f"{path}: record {record}: {column} is not a count")
    return x


def ledger_cost(folder: str | Path, shape: dict, mode: str, models: dict | None = None,
                table: prices.Table | None = None) -> UnitCost:
    """:class:`UnitCost` of a pilot from its ledger (``cost_all_repeats.csv``, else ``cost.csv``): each stage's
    mean usage a request (input, cached input, output), priced at today's row of its model (``models``: stage
    -> another registry model to price it as) in ``mode``, times the stage's requests per unit of the pilot's
    shape (texts: (models + 1) x cases x repeats; summaries: models x cases x repeats; judge: x orders)."""
    folder = Path(folder)
    if (folder / "cost_all_repeats.csv").exists():  # the command line's: every repeat's lines
        ledgers = [folder / "cost_all_repeats.csv"]
    else:  # a notebook's run: each repeat's own
        ledgers = [folder / "cost.csv"] + [folder / "repeats" / f"r{r}" / "cost.csv"
                                          for r in range(2, shape["repeats"] + 1)]
    table = table or prices.table()
    m, c, r, o = len(shape["models"]), shape["cases"], shape["repeats"], shape["orders"]
    units = {**dict.fromkeys(TEXT_STAGES, (m + 1) * c * r), **dict.fromkeys(SUMMARY_STAGES, m * c * r),
             **dict.fromkeys(JUDGE_STAGES, m * c * r * o)}
    per = dict.fromkeys(("text", "summary", "judge"), 0.0)
    kind = {**dict.fromkeys(TEXT_STAGES, "text"), **dict.fromkeys(SUMMARY_STAGES, "summary"),
            **dict.fromkeys(JUDGE_STAGES, "judge")}
    for path in ledgers:
        _price_ledger(path, _read(path, _LEDGER_COLUMNS), units, kind, per, mode, models, table)
    return UnitCost(per["text"], per["summary"], per["judge"], mode,
                    f"the pilot's ledger ({', '.join(str(p.relative_to(folder)) for p in ledgers)}: {c} cases x {m} "
                    f"models x {r} repeats x {o} orders), repriced at today's list prices, {mode}")


def _price_ledger(path, t, units, kind, per, mode, models, table) -> None:
    for i, rec in enumerate(t.to_dict("records"), 1):
        stage = rec["stage"]
        if stage not in kind:
            continue  # a stage the plan does not scale (a gpu-time row, another stage)
        n = _count(rec["requests"], path, i, "requests")
        if not n >= 1:
            continue
        means = {k[:-7]: _count(rec[k], path, i, k) / n for k in ("input_tokens", "cache_read_tokens", "output_tokens")}
        usage = {k: (None if math.isnan(v) else v) for k, v in means.items()}  # empty: not reported
        model = (models or {}).get(stage) or rec["model"]
        priced = prices.cost(model, usage, mode, prices=table)
        if priced.usd is None:
            raise PlanInputError(f"{path}: record {i}: stage {stage} model {model} cannot be priced ({priced.row})")
        per[kind[stage]] += priced.usd * n / units[stage]


def dry_run_cost(summaries, references, provider, settings, out) -> UnitCost:
    """:class:`UnitCost` from the dry run (``gavel.runs.costing.dry_run``) of ``summaries``: extraction and
    style as priced, compare and residual at their upper bound (every pair judged, every summary with facts)."""
    from gavel.runs import costing

    t = costing.dry_run(summaries, references, provider, settings, out)
    ranges = t.attrs["range"].set_index("stage")["usd_high"]
    by_stage = t.groupby("stage")["cost_usd_est"].sum()
    n_sum = len(summaries)
    n_text = n_sum + len({c for _, c, _ in summaries})
    return UnitCost((by_stage.get("extract", 0.0) + ranges.get("residual", 0.0)) / n_text,
                    by_stage.get("style", 0.0) / n_sum,
                    (ranges.get("compare", 0.0) + ranges.get("residual_match", 0.0)) / n_sum, t.attrs["mode"],
                    f"the dry run of {n_sum} summaries (compare and residual at their upper bound), {t.attrs['mode']}")


# ---------- the plan ----------
PLAN_COLUMNS = ["model_a", "model_b", "repeats", "orders", "cells", "cases_needed", "detectable_difference",
                "half_width", "usd", "usd_new"]


def plan(cells: pd.DataFrame, pairs: list[tuple[str, str]], delta: float, alpha: float = 0.05, power: float = 0.8,
         repeats=(1, 2, 3), orders=(1, 2), cases: int | None = None, cost: UnitCost | None = None,
         pilot: dict | None = None) -> pd.DataFrame:
    """One row per pair and (repeats, orders): the cases needed to detect ``delta`` (or, given ``cases``, the
    difference detectable on that many), the planned half-width of the printed interval there, and the cost
    of both models' summaries and the references over those cases (``usd``), less what the ``pilot``'s cache
    already holds (``usd_new``: its cases, repeats and orders of its models)."""
    family = len(pairs)
    rows = []
    for a, b in pairs:
        pv = pair_variance(cells, a, b)
        plannable = pv.judge_measured
        for r in repeats:
            for o in orders:
                k = r * o
                if not plannable and not (np.isfinite(pv.cells_a) and k == round(pv.cells_a)):
                    continue  # the judge's noise is not measured: only the pilot's own cells can be planned
                var = pv.variance(k)
                n = cases_needed(var, delta, family, alpha, power) if cases is None else float(cases)
                finite = np.isfinite(n)
                usd = new = math.nan
                if cost is not None and finite:
                    usd = cost.of(2, int(n), r, o)
                    new = usd
                    if pilot and {a, b} <= set(pilot["models"]):
                        new = usd - cost.of(2, min(int(n), pilot["cases"]), min(r, pilot["repeats"]),
                                            min(o, pilot["orders"]))
                rows.append({"model_a": a, "model_b": b, "repeats": r, "orders": o, "cells": k, "cases_needed": n,
                             "detectable_difference": detectable(var, int(n), family, alpha, power) if finite else math.nan,
                             "half_width": half_width(pv.draw_variance(), int(n)) if finite else math.nan,
                             "usd": usd, "usd_new": new})
    return pd.DataFrame(rows, columns=PLAN_COLUMNS)
