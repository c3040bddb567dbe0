"""``gavel plan``: what the command runs (its options are in gavel/cli.py, which must start without importing
gavel.runs): from a pilot run folder or the release's case scores, the smallest difference worth detecting,
the power and the level, the cases x repeats x orders each named pair needs and what they cost at the price
table's list prices (gavel.runs.plan, docs/plan.md)."""

from __future__ import annotations

import argparse
import itertools
import math
import tempfile

from gavel.core import prices
from gavel.runs import pipeline, plan


def _pairs(args, models: list[str]) -> list[tuple[str, str]]:
    pairs = [tuple(x) for x in args.pair] if args.pair else list(itertools.combinations(models, 2))
    unknown = sorted({m for pair in pairs for m in pair} - set(models))
    if unknown:
        raise plan.PlanInputError(f"no cells of {', '.join(unknown)} in the {'pilot' if args.pilot else 'release'}; "
                             f"its models: {', '.join(models)}")
    if any(a == b for a, b in pairs):
        raise plan.PlanInputError("a pair of a model with itself")
    return pairs


def _dry_run_cost(args, pairs):
    """The release's summaries of the named models, priced by the dry run (gavel.runs.costing)."""
    from gavel.release import load_release
    rel = load_release(None)
    references, _ = pipeline.release_references(rel)
    wanted = {m for pair in pairs for m in pair}
    s = rel.summaries
    s = s[s["model"].isin(wanted) & s["case_id"].isin(references) & (s["set"] == "benchmark")]
    summaries = [(m, c, t) for m, c, t in zip(s["model"], s["case_id"], s["text"]) if isinstance(t, str) and t]
    if not summaries:
        raise plan.PlanInputError("no summaries of the named models in the release to price")
    roles = pipeline.default_roles(args.provider)
    settings = pipeline.Settings(extractor=args.extractor or roles["extractor"], judge=args.judge or roles["judge"],
                                 mode=args.mode)
    with tempfile.TemporaryDirectory() as out:  # the dry run keeps its estimate in a folder: none is wanted
        return plan.dry_run_cost(summaries, references, pipeline.provider(args.provider), settings, out)


def run(args: argparse.Namespace) -> int:
    if (args.difference is None) == (args.cases is None):
        raise plan.PlanInputError("give --difference D (the cases it needs) or --cases N (what they detect)")
    cells = plan.run_cells(args.pilot) if args.pilot else plan.release_cells()
    shape = plan.pilot_shape(cells)
    pairs = _pairs(args, shape["models"])
    cost, cost_note = None, ""
    ledger_folder = args.cost_from or args.pilot
    if ledger_folder:
        as_model = dict.fromkeys(plan.TEXT_STAGES + plan.SUMMARY_STAGES + plan.JUDGE_STAGES, args.price_as) \
            if args.price_as else None
        led_shape = plan.pilot_shape(plan.run_cells(ledger_folder)) if args.cost_from else shape
        cost = plan.ledger_cost(ledger_folder, led_shape, args.mode, as_model)
    elif args.provider:
        cost = _dry_run_cost(args, pairs)
    else:
        cost_note = ("not priced: give --cost-from RUN (a run's ledger) or --provider P (a dry run of the "
                     "release's summaries)")
    table = plan.plan(cells, pairs, args.difference or math.nan, args.alpha, args.power, args.repeats, args.orders,
                      args.cases, cost, shape if args.pilot and not args.cost_from else None)
    show(table, args, shape, pairs, cells, cost, cost_note)
    return 0


def show(table, args, shape, pairs, cells, cost, cost_note) -> None:
    source = (f"pilot {args.pilot}: {shape['cases']} cases x {shape['repeats']} repeat(s) x {shape['orders']} "
              f"order(s)" if args.pilot else f"the release's case scores ({plan.RELEASE_CELLS.name}): "
              f"{shape['cases']} cases, one cell a case")
    m = len(pairs)
    print(f"plan from {source}; S_checklist; paired t-test at alpha {args.alpha:g} / {m} pair(s) = "
          f"{args.alpha / m:.4g} (Holm's first step), power {args.power:g}"
          + (f"; smallest difference worth detecting {args.difference:g} points" if args.difference else
             f"; {args.cases} cases"))
    for a, b in pairs:
        pv = plan.pair_variance(cells, a, b)
        rows = table[(table["model_a"] == a) & (table["model_b"] == b)]
        if pv.cases < 2:
            print(f"{a} vs {b}: {pv.cases} common case(s): no variance to plan from")
            continue
        judge = (f"judge variance {pv.within_a:.1f} / {pv.within_b:.1f} (cells of a case)" if pv.judge_measured else
                 f"judge noise not measured (one cell a case): only {round(pv.cells_a)} cell(s) a case can be planned")
        print(f"{a} vs {b}: measured difference {pv.difference:+.2f} on {pv.cases} cases; between-case variance of "
              f"the difference {pv.between:.1f}; {judge}")
        for rec in rows.to_dict("records"):
            n = rec["cases_needed"]
            cases = ("more than 1,000,000 cases" if n == math.inf else "not plannable" if not n == n
                     else f"{int(n):>6,} cases")
            usd = "" if not rec["usd"] == rec["usd"] else f"  ${rec['usd']:,.2f}" + (
                f" (${rec['usd_new']:,.2f} new: the pilot's answers are in its cache)"
                if rec["usd_new"] != rec["usd"] else "")
            print(f"  {rec['repeats']} repeat(s) x {rec['orders']} order(s): {cases}; detects "
                  f"{rec['detectable_difference']:.2f} points; 95% interval +/- {rec['half_width']:.2f}{usd}")
        best = rows.dropna(subset=["usd"]).sort_values("usd")
        if len(best) and args.difference:
            b0 = best.iloc[0]
            print(f"  cheapest: {b0['repeats']} repeat(s) x {b0['orders']} order(s) x {int(b0['cases_needed'])} "
                  f"cases, ${b0['usd']:,.2f}")
    if cost is not None:
        print(f"priced from {cost.source}; price table checked {prices.table().checked}: per summary and repeat "
              f"${cost.summary + cost.text:.4f} (+ ${cost.text:.4f} a reference) and ${cost.judge:.4f} a judged "
              f"order; the two models' summaries and the references of the cases")
    else:
        print(cost_note)
