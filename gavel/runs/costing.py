"""What a GAVEL-REF evaluation costs: the dry run's one total before it runs, and the ledger after.

Before: extract and style are priced request by request (their requests are known); compare and residual
depend on what extraction finds, so they are a range, from none of their requests to every one (every
(summary, item) pair judged; every summary with residual facts). Output tokens per stage are measured
answer lengths: this run's own earlier answers in the stage's cache, else the release's recorded answers of
the stage (extract: the released summary checklists; compare: the released judgments) or, for the stages the
release has no answers of, of the stage whose answers have the same shape (residual facts: extraction;
residual matching and style: judgments); only with none of these is the output cap used, and said so.

After: ``cost.csv`` in the output folder (every stage's ledger, gavel.llm.ledger) and one closing line
with the estimate beside the actual.
"""

from __future__ import annotations

import hashlib
import json
import os
from functools import cache, lru_cache
from itertools import groupby
from pathlib import Path

import pandas as pd

from gavel.core import config, prices, tokens
from gavel.core.tokens import count_tokens
from gavel.llm import estimate, ledger
from gavel.llm.providers.base import ProviderError
from gavel.llm.runner import StageRunner
from gavel.ref import prompts
from gavel.ref.stages import compare, extract, style

#: sampled answers per stage when measuring the release's answer lengths (every k-th, in a fixed order)
SAMPLE = 1500
RANGE_COLUMNS = ["stage", "model", "requests_low", "requests_high", "input_tokens_high", "output_tokens_est",
                 "output_from", "usd_low", "usd_high"]


def _mean_tokens(texts: list[str]) -> float | None:
    if not texts:
        return None
    step = max(1, len(texts) // SAMPLE)
    sample = texts[::step]
    return sum(count_tokens(t) for t in sample) / len(sample)


def recorded_lengths() -> dict:
    """recorded_answer_lengths of the release gavel finds (GAVEL_RELEASE); {} without one."""
    try:
        root = config.release_root()
    except config.ReleaseNotFoundError:
        return {}
    return recorded_answer_lengths(str(root))


#: where measured answer lengths are kept per release (a fingerprint of its files), and the measurement's
#: version: a change to how answers are measured must change it, so that kept lengths are measured anew
LENGTHS_DIR = config.INTERIM_DIR / "answer_lengths"
LENGTHS_VERSION = 2  # 2: the references' own extraction answers counted too


def lengths_path(root: str) -> Path:
    """The file that keeps recorded_answer_lengths of the release at ``root``: named by a hash of every
    file's path, size and modification time (a changed release is measured anew) and of LENGTHS_VERSION."""
    h = hashlib.sha256(f"{LENGTHS_VERSION} {SAMPLE} {Path(root).resolve()}".encode())
    folders, cut = [str(root)], len(str(root)) + 1
    while folders:
        with os.scandir(folders.pop()) as found:
            for entry in sorted(found, key=lambda e: e.name):
                if entry.is_dir():
                    folders.append(entry.path)
                else:
                    st = entry.stat()
                    h.update(f"\n{entry.path[cut:]}\t{st.st_size}\t{st.st_mtime_ns}".encode())
    return LENGTHS_DIR / f"{h.hexdigest()[:24]}.json"


@lru_cache(maxsize=2)
def recorded_answer_lengths(root: str) -> dict:
    """Mean o200k tokens of the release's recorded answers by stage, and of an item's value list:
    ``{"extract": (mean, source), "compare": (mean, source), "values": mean}``; {} without a release. The
    release keeps the parsed answers (values with evidence; relations and matchings), not the models'
    reasoning text, so these are lower than what a model that reasons aloud writes. Measured once per
    release and kept (``lengths_path``): reading the whole release costs seconds and hundreds of MB."""
    path = lengths_path(root)
    try:
        kept = json.loads(path.read_text(encoding="utf-8"))
        return {k: tuple(v) if isinstance(v, list) else float(v) for k, v in kept.items()}
    except (OSError, ValueError, TypeError, AttributeError):
        pass  # not measured yet (or unreadable): measure it
    out = _measure(root)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(f".tmp{os.getpid()}")
        tmp.write_text(json.dumps(out), encoding="utf-8")
        os.replace(tmp, path)
    except OSError:
        pass  # a read-only checkout measures each time
    return out


def _extraction_answers(values: pd.DataFrame) -> tuple[list[str], list[str]]:
    """Each recorded (model, part, case, item) extraction's answer as JSON and its value list as numbered
    lines, in key order. The references' own checklists have no part: they count as part -1
    (they are extraction answers like any other; an evaluation extracts from every reference too)."""
    keys = ["model", "part", "case_id", "item"]
    values = values.assign(part=values["part"].fillna(-1)).dropna(subset=keys)
    cols = [values[k].tolist() for k in keys]
    vals, evidence = values["value"].tolist(), values["evidence"].tolist()
    answers, lists = [], []
    for _, rows in groupby(sorted(range(len(vals)), key=lambda i: tuple(c[i] for c in cols)),
                           key=lambda i: tuple(c[i] for c in cols)):
        rows = list(rows)
        answers.append(json.dumps({"extracted": [{"value": vals[i], "evidence": list(evidence[i]) if evidence[i]
                                                  is not None else []} for i in rows]}, ensure_ascii=False))
        lists.append("\n".join(f"{n}. {vals[i]}" for n, i in enumerate(rows, 1)))
    return answers, lists


def _measure(root: str) -> dict:
    from gavel.release import load_release

    rel = load_release(root)
    answers, lists = _extraction_answers(rel.checklist_values[rel.checklist_values["origin"] == "summary"])
    items = rel.checklist_items[rel.checklist_items["origin"] == "summary"]
    answers += [json.dumps({"extracted": []})] * int((items["n_values"] == 0).sum())
    judged = rel.judgments[rel.judgments["task"] == "summary"]
    verdicts = [json.dumps({"relation": r.relation} if r.kind == "relation" else
                           {"common": [list(p) for p in r.pairs], "only_in_A": list(r.only_in_model),
                            "only_in_B": list(r.only_in_reference)}, default=str) for r in judged.itertuples()]
    out = {}
    if answers:
        out["extract"] = (_mean_tokens(answers), f"release: {len(answers)} recorded extraction answers")
    if verdicts:
        out["compare"] = (_mean_tokens(verdicts), f"release: {len(verdicts)} recorded judgments")
    out["values"] = _mean_tokens(lists) or 0.0
    return out


#: the release's stage whose answers have the same shape, for the stages the release has no answers of
SAME_SHAPE = {"extract": "extract", "compare": "compare", "residual": "extract", "residual_match": "compare",
              "style": "compare"}


def output_for(runner: StageRunner, measured: dict, stage: str) -> tuple[float | None, str]:
    """Output tokens per answer of ``stage``: this stage's own earlier answers (same prompts, same model) when
    it has some, else the release's recorded answers of the stage (or of the stage whose answers have the same
    shape), else None (the cap)."""
    mean, n = estimate.measured_output(runner)
    if n:
        return mean, f"this stage's {n} earlier answers"
    like = SAME_SHAPE[stage]
    if like in measured:
        tokens, source = measured[like]
        return tokens, source + ("" if like == stage else f" ({like}: the same answer shape)")
    return None, "cap (no measurement)"


def _range_row(stage: str, model: str, n_high: int, inputs: list[int], out: tuple, cap: int, mode: str,
               provider) -> dict:
    from gavel.llm.registry import llm_model

    mean, source = out
    extra = estimate.reasoning_allowance(llm_model(model), cap, mean, source.startswith("this stage's"))
    per_out = cap if mean is None else min(cap, mean + (extra[0] if extra else 0.0))
    source += f"; {extra[1]}" if extra else ""
    table, usd_of = prices.table(), {}
    for n in set(inputs):  # many requests share a length (compare: one per item)
        usd_of[n] = prices.cost(model, {"input": n, "output": per_out}, mode, provider=provider.name,
                                prices=table).usd or 0.0
    usd = sum(usd_of[n] for n in inputs)
    return {"stage": stage, "model": model, "requests_low": 0, "requests_high": n_high,
            "input_tokens_high": int(sum(inputs)), "output_tokens_est": per_out * n_high, "output_from": source,
            "usd_low": 0.0, "usd_high": usd}


def dry_run(summaries, references, provider, s, out: str | Path) -> pd.DataFrame:
    """The table of extract and style (requests, tokens, cost), with ``attrs``: ``range`` (compare and
    residual, from none to all of their requests), ``total`` ((low, high) USD), ``mode`` and ``too_long``;
    the total is kept in ``out/estimate.json`` for the run's closing line."""
    from gavel.llm.registry import llm_model

    out = Path(out)
    llm_model(s.extractor), llm_model(s.judge)  # an unknown model is named before anything else is said of it
    problems = sorted({why for m in (s.extractor, s.judge) if (why := estimate.unserved(provider, m))})
    if problems and not s.allow_unserved:
        raise ProviderError("; ".join(problems) + ": choose the provider that serves them, or --extractor and "
                            "--judge models it serves (or price them anyway with --allow-unserved)")
    kept = [(subj, c, t) for subj, c, t in summaries if c in references]
    texts = kept + [("human", c, references[c]) for c in sorted({c for _, c, _ in kept})]
    measured = recorded_lengths()
    split = cache(tokens.split)  # every distinct text tokenised once, whatever requests it is in
    plans = {"extract": extract.plan_requests([extract.Summary(*x) for x in texts], s.extractor, s.items,
                                              s.cap("extract", s.extractor), s.structured, split=split),
             "style": style.plan_requests([(subj, c, t, references[c]) for subj, c, t in kept], s.judge, s.seed,
                                          s.cap("style", s.judge), s.structured, checklist=s.checklist, split=split)}
    tables, too_long, runners = [], [], {}
    for stage, reqs in plans.items():
        runners[stage] = StageRunner(stage, provider, workdir=out / "runs" / stage, progress=False,
                                     **s.runner_namespace)
        tokens_out, source = output_for(runners[stage], measured, stage)
        own = source.startswith("this stage's")  # measured by the stage runner itself (reasoning included)
        t = estimate.dry_run(runners[stage], reqs, s.mode, None if own else tokens_out, show=False,
                             allow_unserved=s.allow_unserved, keep=False)  # out/estimate.json holds the total
        if tokens_out is not None:
            why = t.attrs["reasoning"]
            t["output_from"] = [source + (f"; {why[m]}" if m in why else "") for m in t["model"]]
        tables.append(t.assign(stage=stage))
        by_id = t.attrs["too_long_requests"]
        too_long += [{"stage": stage, "subject": by_id[cid].subject, "case_id": by_id[cid].case_id,
                      "item": by_id[cid].item, "custom_id": cid, "why": why} for cid, why in t.attrs["too_long"].items()]
    table = pd.concat(tables, ignore_index=True)
    mode = estimate.run_mode(provider, s.mode)
    for stage in ("compare", "residual", "residual_match"):
        runners[stage] = StageRunner(stage, provider, workdir=out / "runs" / stage, progress=False,
                                     **s.runner_namespace)
    value_tokens = measured.get("values", 0.0)
    judge, extractor = llm_model(s.judge), llm_model(s.extractor)
    judge_cap = s.cap("compare", s.judge) or judge.max_output_tokens
    extractor_cap = s.cap("residual", s.extractor) or extractor.max_output_tokens
    per_item = [count_tokens("".join(m["content"] for m in prompts.render_messages(
        "compare_multi", item_name=it.name, a="", b=""))) + 2 * value_tokens for it in s.items]
    k = 2 if s.orders == "both" else 1  # --orders both: every judged pair is asked in both orders
    # --label-orders K: at most every pair again in each of the K - 1 other option orders (single pairs only)
    compare_inputs = [round(n) for _ in kept for n in per_item] * (k + s.label_orders - 1)
    fact_inputs = [prompts.joined_tokens("residual", spans=split(t)) for _, _, t in texts]
    match_template = count_tokens("".join(m["content"] for m in prompts.render_messages(
        "compare_multi", item_name=compare.RESIDUAL_LABEL, a="", b="")))
    match_inputs = [match_template + split(t).tokens + split(references[c]).tokens for _, c, t in kept] * k
    ranges = pd.DataFrame([
        _range_row("compare", s.judge, len(compare_inputs), compare_inputs,
                   output_for(runners["compare"], measured, "compare"), judge_cap, mode, provider),
        _range_row("residual", s.extractor, len(fact_inputs), fact_inputs,
                   output_for(runners["residual"], measured, "residual"), extractor_cap, mode, provider),
        _range_row("residual_match", s.judge, len(match_inputs), match_inputs,
                   output_for(runners["residual_match"], measured, "residual_match"), judge_cap, mode, provider)],
        columns=RANGE_COLUMNS)
    fixed = float(table["cost_usd_est"].sum())
    total = (fixed, fixed + float(ranges["usd_high"].sum()))
    reasoning = reasoning_stages(table, ranges, s, runners, provider, mode)
    out.mkdir(parents=True, exist_ok=True)
    (out / "estimate.json").write_text(json.dumps({"usd_low": total[0], "usd_high": total[1], "mode": mode,
                                                   "written_at": ledger.stamp_time()}, indent=1))
    table.attrs.update(too_long=pd.DataFrame(too_long, columns=["stage", "subject", "case_id", "item", "custom_id",
                                                                 "why"]), range=ranges, total=total, mode=mode,
                       compare_max=len(compare_inputs), residual_match_max=len(match_inputs),
                       fact_max=len(fact_inputs), orders=s.orders, label_orders=s.label_orders, reasoning=reasoning)
    return table


def _output_rate(model: str, input_tokens: float, mode: str, provider) -> float:
    """USD a further output token of ``model`` costs at the tier of a prompt of ``input_tokens``."""
    one = prices.cost(model, {"input": input_tokens, "output": 1_000_000}, mode, provider=provider.name).usd
    none = prices.cost(model, {"input": input_tokens, "output": 0}, mode, provider=provider.name).usd
    return 0.0 if one is None or none is None else (one - none) / 1_000_000


def reasoning_stages(table: pd.DataFrame, ranges: pd.DataFrame, s, runners: dict, provider, mode: str) -> dict:
    """For each stage whose model bills hidden reasoning (``estimate.reasoning_allowance``): the line saying
    it, and a central estimate from measured usage -- this stage's own answers in the run folder (the run's
    first round), else the ledgers of ``s.usage_from`` for the same stage and model -- or, where nothing is
    measured, what ``--max-tokens N`` would bound the stage to. ``central``: the total's (low, high) with every
    reasoning stage at its measured output, None when one of them has no measurement (or none reasons)."""
    from gavel.llm import measured
    from gavel.llm.registry import llm_model

    lines, unmeasured, skipped = [], [], []
    shift = {"fixed": 0.0, "range": 0.0}  # central minus bound, of the fixed part and of the range's top
    rows = [("extract", s.extractor, "fixed"), ("style", s.judge, "fixed"), ("compare", s.judge, "range"),
            ("residual", s.extractor, "range"), ("residual_match", s.judge, "range")]
    reasons = False
    for stage, model, part in rows:
        m = llm_model(model)
        cap = s.cap(stage, model) or m.max_output_tokens
        if estimate.reasoning_allowance(m, cap, 0.0, False) is None:
            continue
        reasons = True
        if part == "fixed":
            t = table[(table["stage"] == stage) & (table["model"] == model)]
            n, usd = int(t["requests"].sum()), float(t["cost_usd_est"].sum())
            n_in, n_out = float(t["input_tokens"].sum()), float(t["output_tokens_est"].sum())
        else:
            t = ranges[ranges["stage"] == stage]
            n, usd = int(t["requests_high"].sum()), float(t["usd_high"].sum())
            n_in, n_out = float(t["input_tokens_high"].sum()), float(t["output_tokens_est"].sum())
        if not n:
            continue
        bound_out, rate = n_out / n, _output_rate(model, n_in / n, mode, provider)
        allowance = estimate.reasoning_allowance(m, cap, None, False)[1].split(":")[0]
        own = measured.of_cache(runners[stage].cache.folder, stage)
        found = own if own.requests else measured.of_ledgers(s.usage_from, stage, model) if s.usage_from else None
        skipped += found.skipped if found is not None else []
        if found is not None and found.requests:
            central_out = min(float(cap), found.output_mean)
            central = usd - n * (bound_out - central_out) * rate
            shift[part] += central - usd
            lines.append(f"{model} bills hidden reasoning tokens ({stage}): {allowance}: measured "
                         f"{found.words()}; central estimate ${central:,.2f} beside the bound ${usd:,.2f}")
            continue
        answer, _ = output_for(runners[stage], recorded_lengths(), stage)
        hidden = bound_out - answer if answer is not None else None
        lines.append(f"{model} bills hidden reasoning tokens ({stage}): {allowance}: " + (
            f"the bound allows {hidden:,.0f} of its {bound_out:,.0f} output tokens a request as hidden reasoning "
            f"({hidden / bound_out:.1%}), ${n * hidden * rate:,.2f} of its ${usd:,.2f}" if hidden is not None else
            f"the bound is the output cap of {cap:,} a request, hidden reasoning and answer together (${usd:,.2f})"))
        caps = [c for c in estimate.SUGGESTED_CAPS if c < bound_out]
        unmeasured.append(
            f"{model} {stage}: no measured usage (no answers of this stage in the run folder"
            + (", none in the --usage-from ledgers" if s.usage_from else "; --usage-from RUN reads an earlier run's "
               "ledger") + "): the bound allows the whole output cap" + (
                "; --max-tokens N bounds it at " + ", ".join(
                    f"${usd - n * (bound_out - c) * rate:,.2f} (N = {c:,})" for c in caps)
                + " (an answer cut off at N is unusable)" if caps else ""))
    central = None
    if reasons and not unmeasured and lines:
        low = float(table["cost_usd_est"].sum()) + shift["fixed"]
        central = (low, low + float(ranges["usd_high"].sum()) + shift["range"])
    return {"lines": lines, "unmeasured": unmeasured, "central": central, "skipped": skipped}


def show(table: pd.DataFrame) -> None:
    """Print a dry run's tables, its one total, and the requests too long to send."""
    with pd.option_context("display.width", 220, "display.max_columns", 20, "display.max_colwidth", 60):
        print(table.to_string(index=False))
        print("compare and residual (their requests depend on what extraction finds: from none to all):")
        print(table.attrs["range"].to_string(index=False))
    a = table.attrs
    print(f"compare: at most {a['compare_max']} requests; residual: at most {a['fact_max']} fact requests and "
          f"{a['residual_match_max']} matchings (they depend on the extracted values"
          + ("; --orders both: each judged pair in both orders, twice the requests of one order"
             if a["orders"] == "both" else "")
          + (f"; --label-orders {a['label_orders']}: single-value pairs once more in each other option order"
             if a.get("label_orders", 1) > 1 else "") + ")")
    low, high = table.attrs["total"]
    print(f"total: ${low:.2f} to ${high:.2f}, priced as {table.attrs['mode']} (the mode the run will use) at the "
          f"price table's list prices; nothing was sent")
    r = a.get("reasoning") or {}
    for line in r.get("lines", []):
        print(f"  {line}")
    if r.get("central"):
        c_low, c_high = r["central"]
        print(f"central estimate: ${c_low:.2f} to ${c_high:.2f}, every reasoning stage at its measured output (above); "
              f"the total above is the bound")
    for line in r.get("unmeasured", []):
        print(f"  {line}")
    if r.get("unmeasured"):
        print("  no central estimate: a reasoning stage has no measured usage (the total above is a bound)")
    for line in r.get("skipped", []):
        print(f"  skipped {line}")
    too_long = table.attrs["too_long"]
    if len(too_long):
        print(f"{len(too_long)} request(s) too long for the model's context window (not priced; a run would not "
              f"send them):")
        for row in too_long.to_dict("records"):
            print(f"  too long: {row['stage']} {row['subject']} case {row['case_id']}"
                  + (f" item {row['item']}" if isinstance(row["item"], str) and row["item"] else "")
                  + f": {row['why']}")  # a request of no item (style) reads NaN from the table


def read_estimate(out: str | Path) -> tuple[float, float] | None:
    try:
        data = json.loads((Path(out) / "estimate.json").read_text(encoding="utf-8"))
        return float(data["usd_low"]), float(data["usd_high"])
    except (OSError, ValueError, KeyError, TypeError):
        return None


def cost_line(result: dict, out: str | Path) -> str:
    """The closing line of ``evaluate``: every repeat's ledger (their cost.csv) in one, beside the estimate.
    With repeats, that ledger is ``cost_all_repeats.csv`` (a ``repeat`` column first: repeat 1's lines are
    ``out/cost.csv``'s) and the line names it; the dry run's estimate, of one repeat, counts once a repeat."""
    runs = result["runs"]
    tables = [run["cost"].assign(repeat=r) for r, run in enumerate(runs, 1) if "cost" in run]
    table = pd.concat(tables, ignore_index=True) if tables else ledger.table([]).assign(repeat=None)
    table = table[["repeat", *[c for c in table.columns if c != "repeat"]]]
    estimate = read_estimate(out)
    if len(runs) == 1:
        return ledger.closing_line(table.drop(columns="repeat"), Path(out) / "cost.csv", estimate)
    path = ledger.write(Path(out) / "cost_all_repeats.csv", table)
    if estimate is not None:
        estimate = (estimate[0] * len(runs), estimate[1] * len(runs))
    return ledger.closing_line(table, path, estimate)
