"""A run of N repeats: GAVEL-REF evaluated N times with distinct seeds (``--repeats N``), with both orders of
every judged pair where asked (``--orders both``), and the reports of both written beside repeat 1's tables.

Repeat 1 is today's run exactly (the same requests, cache keys and answers, written to ``out``); repeat r > 1
writes to ``out/repeats/r<r>`` and differs only in what makes its answers its own:

* a provider that takes a sampling seed (its ``takes_seed``: OpenAI, vLLM, the local llama.cpp server, the mock)
  gets ``seed = repeat_seed(settings, r)`` in every request body (so the request id and the cache key
  differ too);
* any other provider (Anthropic, Gemini, a replay) gets the cache namespace ``repeat-<r>``: its requests are
  the same, but a repeat is never answered from another repeat's cache.

The reports are functions of the runs' tables and the judgments table: ``gavel.runs.stability`` (N > 1) and
``gavel.runs.orders`` (``--orders both``); with either, ``gavel.runs.comparisons`` redraws the comparisons and
the intervals of ``model_scores.csv`` over the cases and the judge's cells (repeats x orders).
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pandas as pd

from gavel.core.spreadsheet import write_csv
from gavel.runs import comparisons, label_orders, orders, pipeline, stability
from gavel.runs.judgments import judgment_table


def repeat_seed(settings, r: int) -> int:
    """The sampling seed of repeat ``r`` (> 1): distinct per repeat and per ``settings.seed``."""
    return 1000 * (settings.seed + 1) + r


def repeat_settings(settings, provider, r: int):
    """The settings of repeat ``r`` (1-based). Repeat 1: the settings as given (today's cache keys)."""
    if r < 1:
        raise ValueError(f"repeat numbers start at 1, got {r}")
    if r == 1:
        return settings
    if getattr(provider, "takes_seed", False):
        return replace(settings, repeat_params={**settings.repeat_params, "seed": repeat_seed(settings, r)})
    return replace(settings, runner_options={**settings.runner_options, "namespace": f"repeat-{r}"})


def repeat_folder(out: str | Path, r: int) -> Path:
    return Path(out) if r == 1 else Path(out) / "repeats" / f"r{r}"


def evaluate_repeats(summaries, references, provider, out: str | Path, settings, repeats: int = 1,
                     bins: dict | None = None, timeout: float | None = None, hand_over: bool = False) -> dict:
    """``repeats`` evaluations (see the module); returns ``{"runs": [tables of each repeat], "judgments": every
    judgment of every repeat and order (``judgments.csv``), **report}`` (the stability report's tables only when
    ``repeats`` > 1, the order report's (``gavel.runs.orders``) only with ``settings.orders == "both"``; all
    written to ``out``). ``hand_over``: the caller gives ``summaries`` and ``references`` up (``pipeline.evaluate``
    may empty them; with one repeat only: every repeat reads them)."""
    if not isinstance(repeats, int) or repeats < 1:
        raise pipeline.InputError(f"--repeats must be a whole number >= 1, got {repeats!r}")
    if repeats > 1:  # the stability report compares every judgment of every repeat: one group each
        settings = replace(settings, chunk=0)
    runs = [pipeline.evaluate(summaries, references, provider, repeat_folder(out, r),
                              repeat_settings(settings, provider, r), bins=bins, timeout=timeout,
                              hand_over=hand_over and repeats == 1)
            for r in range(1, repeats + 1)]
    result = {"runs": runs}
    if not runs[0]["manifest"].get("groups"):  # a run in case groups wrote judgments.csv group by group
        result["judgments"] = judgment_table(runs)
    if repeats > 1:
        result.update(stability.report(runs, seed=settings.seed))
    if settings.orders == "both":
        result.update(orders.report(result["judgments"], runs, seed=settings.seed))
    if settings.label_orders > 1:
        result.update(label_orders.report(result["judgments"], runs, settings.label_orders, seed=settings.seed))

    if repeats > 1 or settings.orders == "both":  # every interval over cases and the judge's cells
        both = settings.orders == "both"
        cell_table = comparisons.cells(runs, result.get("order_summaries") if both else None,
                                       result["judgments"] if both else None)
        result.update(comparisons.report(cell_table, seed=settings.seed))
        result["model_scores"] = runs[0]["model_scores"] = comparisons.leaderboard(
            runs[0]["model_scores"], cell_table, settings.seed, bins)
    checklist = runs[0]["manifest"]["checklist"]["name"]
    for name, table in result.items():
        if name != "runs":
            if "checklist" not in table:  # every table of a run names its checklist
                table.insert(0, "checklist", checklist)
            write_csv(table, Path(out) / f"{name}.csv")
    return result


def repeats_cost(table: pd.DataFrame, repeats: int, provider=None) -> str:
    """What N repeats cost, from a dry run's table (one repeat): every repeat sends its own requests."""
    how = ("a seed per repeat" if getattr(provider, "takes_seed", False)
           else "a cache namespace per repeat") if provider is not None else "its own requests"
    return (f"{repeats} repeats ({how}): {repeats} x the above = {repeats * int(table['requests'].sum())} requests, "
            f"{repeats * int(table['input_tokens'].sum())} input tokens, about "
            f"${repeats * float(table['cost_usd_est'].sum()):.2f} for extract and style; compare and residual "
            f"also {repeats} x their bounds. Repeat 1 is answered from the cache where a run with the same "
            f"settings already ran.")
