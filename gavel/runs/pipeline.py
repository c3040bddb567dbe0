"""GAVEL-REF end to end: summaries -> extract -> compare -> residual -> style -> scores.

``evaluate`` composes the stages (``gavel.ref.stages``) through one ``StageRunner`` per stage (cached,
resumable: a rerun of an unchanged stage sends nothing) and writes tidy tables to ``out``:

``values.csv``      extracted values with evidence, offsets and grounding status (model and reference sides)
``answers.csv``     one row per LLM answer of every stage: status (``ok`` or why unusable), detail
``compare.csv``     one row per (summary, item): gate, relation / matched pairs (model, reference), score
``residual.csv``    residual spans and r of every summary, facts per summary
``residual_facts.csv`` each residual fact with the residual spans (1-based) it rests on
``texts.jsonl``     every text evaluated (subject, case_id, text): what the offsets in values.csv point into
``style.csv``       the five ratings and S_style per summary
``scores.csv``      per summary: S_checklist (best, low, high), S_residual, S_style, r (own and reference),
                    S_GAVEL-REF
``model_scores.csv`` per model (and per length bin when bins are given): means and bootstrap intervals
``comparisons.csv``, ``comparison_models.csv``  every pair of models on their common cases, ranks and groups
                    (``gavel.runs.comparisons``)
``summary_s_checklist.csv``, ``summary_bootstrap.csv``  the shapes of ``data/results/``: ``gavel.paper.figures``
                    draws them (e.g. Figure 2 of a new run); ``gavel_ref_scores.csv`` all components per model

Unusable answers are re-asked at most ``answers.MAX_REASKS`` times (the previous answer and the reason are
shown to the model); what is still unusable stays in ``answers.csv`` with its reason and is kept out of the
scores with bounds, never scored as 0; all rounds of a request ask for at most ``REASK_TOKEN_FACTOR`` caps.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field, replace
from pathlib import Path

import pandas as pd

from gavel import answers
from gavel.core import config, options, stats
from gavel.core.items import Item
from gavel.core.items import load as load_checklist
from gavel.core.spreadsheet import write_csv
from gavel.core.vocab import LABEL_ORDER_ROWS
from gavel.llm import ledger
from gavel.llm.records import Request, Response
from gavel.llm.runner import PENDING_ERROR, StageRunner
from gavel.ref import prompts
from gavel.ref.inputs import (  # noqa: F401 -- the pipeline's names for its inputs
    MAX_SUMMARY_CHARS,
    REFERENCE,
    InputError,
    read_summaries,
    release_references,
    summary_problem,
    writable_folder,
)
from gavel.ref.stages import compare, extract, residual, score, style
from gavel.ref.stages import summarize as summarize_stage
from gavel.ref.tables import (  # noqa: F401 -- the notebooks' names
    failed_requests,
    failure_report,
    in_repo,
    item_table,
    read_tables,
    unusable_answers,
)
from gavel.runs import comparisons
from gavel.runs.judgments import JUDGMENT_COLUMNS
from gavel.runs.stand_in import stand_in_answer

ORDERS = ("one", "both")  # --orders: each judged pair asked in one order (today's run) or in both
REASKABLE = {"no_json", "schema", "ambiguous", "unknown_label", "indices", "empty", "no_rating"}
TEMPLATES = ("extract", "compare_single", "compare_multi", "residual", "style")


@dataclass
class Settings:
    extractor: str
    judge: str
    items: tuple[Item, ...] | None = None  # None: every item of the checklist
    alpha: float = 0.9
    seed: int = 0
    mode: str = "online"
    max_tokens: int | None = None
    structured: bool = True
    progress: bool = False
    runner_options: dict = field(default_factory=dict)
    repeat_params: dict = field(default_factory=dict)  # added to every request (a repeat's seed: ref.stability)
    orders: str = "one"  # "both": every judged pair asked again with the sides swapped (gavel.runs.orders)
    label_orders: int = 1  # K > 1: single-value pairs also asked with the options in K Latin-square orders
    allow_unserved: bool = False  # dry run: price a model the provider does not serve instead of refusing
    pace: object = None  # a gavel.llm.pace.Pace, or a function giving one: each stage says its duration first
    checklist: object = None  # a gavel.core.items.Checklist, a packaged name or a file; None: the default
    usage_from: tuple = ()  # dry run: earlier runs' folders or ledgers measuring usage (gavel.llm.measured)

    def cap(self, stage: str, model: str) -> int | None:
        """The output cap of a stage's requests: ``max_tokens`` when set, else the model's cap for the stage
        (``gavel.llm.pace.stage_cap``: a local model's measured caps), else none (the model's own cap)."""
        from gavel.llm.pace import stage_cap

        return self.max_tokens or stage_cap(model, stage)

    def __post_init__(self):  # checked before anything is built or sent (the command line checks them first)
        options.check_fraction("alpha", self.alpha)
        options.check_positive("max_tokens", self.max_tokens, allow_none=True)
        self.checklist = load_checklist(self.checklist)
        self.items = tuple(self.items) if self.items is not None else self.checklist.items

    @property
    def runner_namespace(self) -> dict:
        """The runners' cache namespace: a non-default checklist's tag joined to a repeat's namespace (the
        default checklist adds nothing, so the release's keys stay)."""
        parts = [x for x in (self.checklist.cache_tag, self.runner_options.get("namespace")) if x]
        return {"namespace": "|".join(parts)} if parts else {}


def default_roles(provider: str | None = None) -> dict:
    """The extractor and the judge when none is named: the paper's (``roles:`` in models.yaml); for provider
    ``local`` the model the local server serves, so the requests carry its context window and caps."""
    if provider == "local":
        from gavel.llm.providers.local import default_model

        return {"extractor": default_model(), "judge": default_model()}
    roles = config._registry().get("roles", {})
    return {"extractor": roles.get("summary_checklist_extractor"), "judge": roles.get("checklist_judge")}


def reask(request: Request, response: Response, reason: str, detail: str, round_: int) -> Request:
    """The same request with the unusable answer and what was wrong with it appended (a new custom_id)."""
    note = (f"Your answer could not be used ({reason}: {detail[:200]}). Answer again, following the output "
            f"format exactly.")
    messages = request.messages + [{"role": "assistant", "content": response.text or ""},
                                   {"role": "user", "content": note}]
    return Request(stage=request.stage, model=request.model, messages=messages, params=dict(request.params),
                   case_id=request.case_id, item=request.item, subject=request.subject, schema=request.schema)


def larger_cap(request: Request, response: Response) -> int | None:
    """The output cap to ask a truncated answer's request again with, or None when it is not asked again:
    twice the request's own cap (``max_tokens`` of its params: a stage's measured cap, or ``--max-tokens``),
    where the prompt and that cap fit the model's context window. A request without a cap of its own (the
    paper's configuration) was cut at the model's output limit: nothing larger to ask for."""
    cap = request.params.get("max_tokens")
    if not isinstance(cap, int) or not response.input_tokens:
        return None
    try:
        from gavel.llm.registry import llm_model

        window = llm_model(request.model).context_window
    except (KeyError, ValueError):
        return None
    if not window:
        return None
    larger = min(2 * cap, window - response.input_tokens)
    return larger if larger > cap else None


#: output tokens all rounds of a request may ask for, in units of its own cap: the answer, a cut one asked
#: again with twice the cap, one re-ask at its cap (issue 46: re-asks kept the doubled cap, paid up to 5x)
REASK_TOKEN_FACTOR = 4


def reask_larger(request: Request, cap: int) -> Request:
    """The same request with a larger output cap (a new custom_id): a truncated answer is asked again once."""
    return replace(request, params={**request.params, "max_tokens": cap})


class _Stages:
    """One runner per stage under ``out/runs/<stage>``; every answer logged for ``answers.csv``."""

    def __init__(self, provider, out: Path, s: Settings, timeout: float | None = None):
        self.provider, self.out, self.s, self.timeout = provider, out, s, timeout
        self.log: list[dict] = []
        self.sent = {}
        self.cached = {}
        self.runners: list[StageRunner] = []
        self.label_judgments: list[dict] = []  # --label-orders: the judgments of label-order rows > 0

    def cost_table(self) -> pd.DataFrame:
        """Every stage's ledger in one table (cost.csv of the output folder)."""
        tables = [r.cost_table(self.s.mode) for r in self.runners]
        return pd.concat(tables, ignore_index=True) if tables else ledger.table([])

    def run(self, stage: str, jobs: list[tuple[Request, object]], parse) -> list:
        """Run jobs (request, meta); ``parse(meta, response) -> (result, status, detail)``; re-ask unusable
        answers. Returns the results in job order."""
        runner = StageRunner(stage, self.provider, workdir=self.out / "runs" / stage, progress=self.s.progress,
                             **{**self.s.runner_options, **self.s.runner_namespace})
        self.runners.append(runner)
        results: list = [None] * len(jobs)
        pending = list(range(len(jobs)))
        current = [replace(req, params={**req.params, **self.s.repeat_params}) if self.s.repeat_params else req
                   for req, _ in jobs]
        from gavel.llm.pace import announce

        announce(self.s.pace, runner, current, f"stage {stage}")  # with a measured speed: the stage's duration
        enlarged: set[int] = set()  # jobs whose truncated answer was asked again with a larger cap
        own = [r.params.get("max_tokens") if isinstance(r.params.get("max_tokens"), int) else None for r in current]
        asked = list(own)  # output tokens asked for so far, per job with a cap of its own
        for round_ in range(answers.MAX_REASKS + 1):
            if not pending:
                break
            report = runner.run([current[i] for i in pending], mode=self.s.mode, timeout=self.timeout)
            waiting = sum(1 for i in pending if (report.responses.get(current[i].custom_id) or Response("", "errored"))
                          .error == PENDING_ERROR)
            if waiting:
                raise StagePending(stage, waiting, len(jobs))
            self.sent[stage] = self.sent.get(stage, 0) + report.sent
            self.cached[stage] = self.cached.get(stage, 0) + report.cached
            again = []
            for i in pending:
                req, meta = current[i], jobs[i][1]
                resp = report.responses.get(req.custom_id)
                result, status, detail = parse(meta, resp)
                results[i] = result
                self.log.append({"stage": req.stage, "subject": req.subject, "case_id": req.case_id, "item": req.item,
                                 "round": round_, "custom_id": req.custom_id, "status": status, "detail": detail,
                                 "finish_reason": resp.finish_reason if resp else None,
                                 "input_tokens": resp.input_tokens if resp else None,
                                 "output_tokens": resp.output_tokens if resp else None})
                budget = None if own[i] is None else REASK_TOKEN_FACTOR * own[i] - asked[i]
                if status in REASKABLE and resp is not None and round_ < answers.MAX_REASKS:
                    if budget is not None and budget < own[i]:
                        self.log[-1]["detail"] = (f"{detail}; not asked again: its rounds have asked for "
                                                  f"{asked[i]:,} output tokens of {REASK_TOKEN_FACTOR * own[i]:,} "
                                                  f"({REASK_TOKEN_FACTOR} times its cap)").lstrip("; ")
                        continue
                    current[i] = reask(req, resp, status, detail, round_)
                    if own[i] is not None:  # back to the request's own cap (a doubled one served the cut answer)
                        current[i] = reask_larger(current[i], own[i])
                        asked[i] += own[i]
                    again.append(i)
                elif status == "truncated" and resp is not None and round_ < answers.MAX_REASKS and i not in enlarged:
                    cap = larger_cap(req, resp)
                    if cap and budget is not None and cap > budget:
                        cap = None
                    if cap:  # asked again once, with room; the log row says so
                        self.log[-1]["detail"] = f"{detail}; asked again with max_tokens {cap}".lstrip("; ")
                        current[i] = reask_larger(req, cap)
                        asked[i] += cap
                        enlarged.add(i)
                        again.append(i)
            pending = again
        return results


def _index_summaries(rows, where: str, problems: list[dict], evaluated: bool = True) -> dict[tuple[str, str], str]:
    """{(subject, case_id): text}; an empty or non-text summary, or a second summary of the same subject
    and case, or (``evaluated``) one ``summary_problem`` refuses, is reported in ``problems`` (naming the
    record) and left out; the rest goes on."""
    out = {}
    for n, (subject, case_id, text) in enumerate(rows, 1):
        key = (subject, str(case_id))
        why = summary_problem(subject, text) if evaluated else None
        if not isinstance(text, str) or not text.strip():
            problems.append({"subject": subject, "case_id": str(case_id), "problem": f"{where}, record {n}: empty summary"})
        elif why:
            problems.append({"subject": subject, "case_id": str(case_id), "problem": f"{where}, record {n}: {why}"})
        elif key in out:
            problems.append({"subject": subject, "case_id": str(case_id),
                             "problem": f"{where}, record {n}: a second summary of this case; the first is kept"})
        else:
            out[key] = text
    return out


#: how many cases the one line of :func:`no_reference_message` names (problems.csv lists every one)
NAMED_CASES = 10


def no_reference_message(models: dict, out: Path) -> str:
    """The line that ends a run in which no summary has a usable reference: the cases, and ``--references``."""
    if not models:
        return f"no summary left to evaluate (every one was refused: {out / 'problems.csv'})"
    cases = sorted({c for _, c in models}, key=lambda c: (len(c), c))
    named = ", ".join(cases[:NAMED_CASES]) + (f" and {len(cases) - NAMED_CASES} more" if len(cases) > NAMED_CASES else "")
    return (f"no summary has a usable reference summary (case{'s' if len(cases) > 1 else ''} {named}; every one in "
            f"{out / 'problems.csv'}): give the references of these cases with --references FILE "
            f"(without it, the release's human summaries are the references)")


def evaluate(summaries: list[tuple[str, str, str]], references: dict[str, str], provider, out: str | Path,
             settings: Settings, bins: dict[str, str] | None = None,
             timeout: float | None = None) -> dict[str, pd.DataFrame]:
    """Evaluate ``summaries`` (subject, case_id, text) against ``references`` (case_id -> human summary).
    Bad input (an empty summary, a repeated one, a case without a usable reference) is reported in
    ``problems`` naming the record and left out; the rest goes on."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    s = settings
    check_orders(s.orders, s.label_orders)
    problems = []
    models = _index_summaries(summaries, "summaries", problems)
    usable_refs = _index_summaries([(REFERENCE, c, t) for c, t in references.items()], "references", problems,
                                   evaluated=False)
    kept = {}
    for (subject, case_id), text in models.items():
        if ("human", case_id) not in usable_refs:
            problems.append({"subject": subject, "case_id": case_id, "problem": "no usable reference summary for this case"})
        else:
            kept[(subject, case_id)] = text
    if not kept:  # nothing to evaluate: every case named, problems.csv written, and where references come from
        write_csv(pd.DataFrame(problems, columns=["subject", "case_id", "problem"]), out / "problems.csv")
        raise InputError(no_reference_message(models, out))
    refs = {c: references[c] for c in sorted({c for _, c in kept})}
    texts = {**kept, **{("human", c): t for c, t in refs.items()}}
    st = _Stages(provider, out, s, timeout)

    # 1. extract (model summaries and references)
    items_by_key = {it.key: it for it in s.items}
    ex_reqs = extract.build_requests([extract.Summary(subj, c, t) for (subj, c), t in texts.items()], s.extractor,
                                     s.items, s.cap("extract", s.extractor), s.structured)

    def parse_extract(req, resp):
        rows, status = extract.parse_response(req, resp, texts[(req.subject, req.case_id)])
        return (rows, status), status["status"], status["detail"]
    extracted = st.run("extract", [(r, r) for r in ex_reqs], parse_extract)
    del ex_reqs  # every prompt of the stage: not held through the later ones (issue 48 §3)
    value_rows = [v for rows, _ in extracted for v in rows]
    item_status = {(st_["subject"], st_["case_id"], st_["item"]): st_["status"] for _, st_ in extracted}
    values: dict = {}
    for v in value_rows:
        values.setdefault((v["subject"], v["case_id"], v["item"]), []).append(v)

    def values_of(subject, case_id, key):
        if item_status.get((subject, case_id, key)) != "ok":
            return None
        return tuple(v["value"] for v in sorted(values.get((subject, case_id, key), []), key=lambda v: v["index"]))

    # 2. compare
    pairs = [compare.Pair(subj, c, key, values_of(subj, c, key), values_of("human", c, key))
             for (subj, c) in kept for key in items_by_key]
    compare_rows, judgments = _judge(st, "compare", pairs, s)

    # 3. residual: spans (deterministic), facts (extractor), fact matching (judge)
    spans = {}
    for key, text in texts.items():
        subj, c = key
        vals = [(v["value"], v["evidence"]) for it in items_by_key for v in values.get((subj, c, it), [])]
        spans[key] = residual.uncovered_spans(text, vals)
    span_texts = {k: [texts[k][a:b] for a, b in v] for k, v in spans.items()}
    fact_reqs = residual.build_requests([(subj, c, span_texts[(subj, c)]) for subj, c in texts], s.extractor,
                                        s.cap("residual", s.extractor), s.structured)

    def parse_facts(req, resp):
        rows, status = residual.parse_response(req, resp, len(span_texts[(req.subject, req.case_id)]))
        return (rows, status), status["status"], status["detail"]
    fact_results = st.run("residual", [(r, r) for r in fact_reqs], parse_facts)
    del fact_reqs
    facts: dict = {k: () for k in texts}
    fact_ok = {k: True for k in texts}
    for rows, status in fact_results:
        k = (status["subject"], status["case_id"])
        fact_ok[k] = status["status"] == "ok"
        facts[k] = tuple(r["fact"] for r in rows)
    rpairs = [compare.Pair(subj, c, compare.RESIDUAL_ITEM, facts[(subj, c)] if fact_ok[(subj, c)] else None,
                           facts[("human", c)] if fact_ok[("human", c)] else None) for subj, c in kept]
    residual_rows, residual_judgments = _judge(st, "residual_match", rpairs, s)

    # 4. style
    sjobs = style.build_requests([(subj, c, t, refs[c]) for (subj, c), t in kept.items()], s.judge, s.seed,
                                 s.cap("style", s.judge), s.structured, checklist=s.checklist)
    style_rows = pd.DataFrame(st.run("style", sjobs, lambda meta, resp: _with_status(style.parse_response(meta, resp))))

    # 5. scores
    scores = _scores(kept, refs, texts, spans, compare_rows, residual_rows, style_rows, facts, s.alpha)
    by = ["subject"]
    if bins:
        scores["bin"] = scores["case_id"].map(bins)
        by = ["subject", "bin"]
    model_scores = _model_scores(scores, by, s.seed)
    scores.insert(0, "checklist", s.checklist.name)
    model_scores.insert(0, "checklist", s.checklist.name)
    tables = {**results_tables(scores, s.seed),
        "values": pd.DataFrame(value_rows), "answers": pd.DataFrame(st.log), "compare": compare_rows,
        "residual": pd.DataFrame([{"subject": k[0], "case_id": k[1], "spans": json.dumps(v),
                                   "r": residual.residual_ratio(texts[k], v), "facts": len(facts[k]),
                                   "facts_ok": fact_ok[k]} for k, v in spans.items()]),
        "residual_match": residual_rows, "style": style_rows, "scores": scores, "model_scores": model_scores,
        "residual_facts": pd.DataFrame([r for rows, _ in fact_results for r in rows],
                                       columns=["subject", "case_id", "index", "fact", "evidence_spans"]),
        "cost": st.cost_table(),
        "problems": pd.DataFrame(problems, columns=["subject", "case_id", "problem"]),
    }
    for name, table in comparisons.report(comparisons.cells([tables]), s.seed).items():  # two or more models
        tables[name] = table.assign(checklist=s.checklist.name)[["checklist", *table.columns]]
    for name, table in tables.items():
        write_csv(table, out / f"{name}.csv")
    tables["judgments"] = pd.DataFrame(judgments + residual_judgments, columns=JUDGMENT_COLUMNS)
    if s.label_orders > 1:  # the other label orders' judgments (row 0: the compare rows of ``judgments``)
        tables["label_judgments"] = pd.DataFrame(st.label_judgments, columns=[*JUDGMENT_COLUMNS, "label_order"])
    # the texts evaluated (model summaries and references): what a report highlights the offsets in
    (out / "texts.jsonl").write_text("".join(json.dumps({"subject": subj, "case_id": c, "text": t}, ensure_ascii=False)
                                             + "\n" for (subj, c), t in texts.items()), encoding="utf-8")
    manifest = {"extractor": s.extractor, "judge": s.judge, "alpha": s.alpha, "seed": s.seed, "mode": s.mode,
                "items": [it.key for it in s.items], "checklist": {"name": s.checklist.name, "source": s.checklist.source,
                "fingerprint": s.checklist.fingerprint}, "provider": getattr(provider, "name", str(provider)),
                "templates": {t: prompts.template_hash(t) for t in TEMPLATES}, "sent": st.sent, "cached": st.cached,
                **({"orders": s.orders} if s.orders != "one" else {}),
                **({"label_orders": s.label_orders} if s.label_orders > 1 else {}),
                **served_file(provider)}
    (out / "evaluation.json").write_text(json.dumps(manifest, indent=1, sort_keys=True), encoding="utf-8")
    write_checklist(s.checklist, out)
    tables["manifest"] = manifest
    return tables


def served_file(provider) -> dict:
    """``{"model_file": {"path", "sha256"}}`` of a model file of one's own (``--gguf``; the sha256 of the file the
    server was given, once it started), else nothing: which weights answered is part of what a run was."""
    if not (path := getattr(provider, "model_path", None)):
        return {}
    from gavel.llm.providers.local import file_sha256

    return {"model_file": {"path": str(path), "sha256": getattr(provider, "model_sha256", None) or file_sha256(Path(path))}}


#: the copy of the checklist a run used, in its folder (a report reads it there, never the original file)
CHECKLIST_FILE = "checklist.yaml"


def write_checklist(checklist, out: Path) -> bool:
    """The checklist file the run was evaluated with, copied into ``out/checklist.yaml`` as it was read; only
    when the file still holds that checklist (its fingerprint). Returns whether it was written (a checklist made
    in Python from no file, or a file edited during the run, is not: the report then says so)."""
    import yaml

    from gavel.core.items import ChecklistError, parse

    try:
        text = Path(checklist.source).read_text(encoding="utf-8")
        same = parse(yaml.safe_load(text), checklist.source).fingerprint == checklist.fingerprint
    except (OSError, UnicodeDecodeError, yaml.YAMLError, ChecklistError):
        same = False
    if same:
        (out / CHECKLIST_FILE).write_text(text, encoding="utf-8")
    return same


def summarize(cases: list[tuple[str, list[tuple[str, str]]]], provider, model: str, out: str | Path,
              max_tokens: int | None = None, context_window: int | None = None,
              mode: str = "online") -> tuple[list[tuple[str, str, str]], pd.DataFrame]:
    """Summaries of cases (case_id, [(document name, text), ...] in reading order) by ``model``: the
    summaries as (model, case_id, text) for ``evaluate``, and a table with every case's status, what the
    truncation kept, and why a summary is missing (``summaries.csv`` in ``out``)."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    jobs = summarize_stage.build_requests(cases, model, max_tokens, context_window)
    st = _Stages(provider, out, Settings(extractor=model, judge=model, mode=mode))
    rows = st.run("summarize", jobs, lambda meta, resp: _with_status(summarize_stage.parse_response(meta, resp)))
    table = pd.DataFrame(rows).merge(pd.DataFrame([m for _, m in jobs]).drop(columns=["truncated"]), on="case_id")
    write_csv(table, out / "summaries.csv")
    write_csv(st.cost_table(), out / "cost.csv")
    return [(model, r["case_id"], r["summary"]) for r in rows if r["status"] == "ok"], table


def _with_status(row: dict):
    return row, row["status"], row.get("detail", "")


def check_orders(orders: str, label_orders: int = 1) -> None:
    if orders not in ORDERS:
        raise InputError(f"--orders is one of {', '.join(ORDERS)}, got {orders!r}")
    if isinstance(label_orders, bool) or label_orders not in LABEL_ORDER_ROWS:
        raise InputError(f"--label-orders is one of {', '.join(map(str, LABEL_ORDER_ROWS))} (balanced rows of a "
                         f"Latin square over the four relations), got {label_orders!r}")


def _judge(st: _Stages, stage: str, pairs: list, s: Settings) -> tuple[pd.DataFrame, list[dict]]:
    """The judge's verdicts on ``pairs``: the table of ``stage`` (order 1, gated pairs included: today's
    ``compare.csv`` / ``residual_match.csv``) and every judgment (both orders with ``--orders both``)."""
    cap = s.cap(stage, s.judge)
    jobs, gated = compare.build_requests(pairs, s.judge, s.seed, cap, s.structured, stage=stage,
                                         checklist=s.checklist)
    if s.orders == "both":
        jobs += compare.build_requests(pairs, s.judge, s.seed, cap, s.structured, stage=stage, order=2,
                                       checklist=s.checklist)[0]
    if stage == "compare":  # --label-orders: the single pairs again, options in the square's other rows
        for row in LABEL_ORDER_ROWS[s.label_orders][1:]:
            jobs += compare.build_requests(pairs, s.judge, s.seed, cap, s.structured, stage=stage,
                                           checklist=s.checklist, label_row=row)[0]
    judged = st.run(stage, jobs, lambda meta, resp: _with_status(compare.parse_response(meta, resp)))
    first = compare.table_rows([r for r in judged if r["order"] == 1 and "label_order" not in r])
    st.label_judgments += [{**r, "stage": stage} for r in judged if "label_order" in r]
    return pd.DataFrame(gated + first), [{**r, "stage": stage} for r in judged if "label_order" not in r]


def _scores(kept, refs, texts, spans, compare_rows, residual_rows, style_rows, facts, alpha) -> pd.DataFrame:
    checklist = score.checklist_scores(compare_rows).set_index(["subject", "case_id"])
    res = residual_rows.set_index(["subject", "case_id"])
    sty = style_rows.set_index(["subject", "case_id"]) if len(style_rows) else pd.DataFrame()
    rows = []
    for subj, c in kept:
        key = (subj, c)
        ch = checklist.loc[key] if key in checklist.index else None
        s_check = float(ch["s_checklist"]) if ch is not None else math.nan
        rr = res.loc[key] if key in res.index else None
        s_res = math.nan
        if rr is not None and rr["status"] in ("ok", "gated"):
            s_res = math.nan if rr["gate"] == "not_applicable" else 100.0 * float(rr["score"])
        s_sty = float(sty.loc[key, "s_style"]) if len(sty) and key in sty.index and sty.loc[key, "s_style"] is not None \
            else math.nan
        r_ref = residual.residual_ratio(texts[("human", c)], spans[("human", c)])
        r_own = residual.residual_ratio(texts[key], spans[key])
        rows.append({"subject": subj, "case_id": c, "s_checklist": s_check,
                     "s_checklist_low": float(ch["s_checklist_low"]) if ch is not None else math.nan,
                     "s_checklist_high": float(ch["s_checklist_high"]) if ch is not None else math.nan,
                     "unusable_items": int(ch["unusable"]) if ch is not None else None,
                     "s_residual": s_res, "s_style": s_sty, "r_reference": r_ref, "r_own": r_own,
                     "s_gavel_ref": score.gavel_ref(s_check, s_res, s_sty, r_ref, alpha)})
    return pd.DataFrame(rows)


def _model_scores(scores: pd.DataFrame, by: list[str], seed: int) -> pd.DataFrame:
    rows = []
    for key, g in scores.groupby(by, sort=True):
        key = key if isinstance(key, tuple) else (key,)
        row = dict(zip(by, key))
        row["cases"] = len(g)
        for col in ("s_checklist", "s_residual", "s_style", "s_gavel_ref", "r_own", "r_reference"):
            row[col] = g[col].mean()
            row[f"{col}_n"] = int(g[col].notna().sum())
            if col.startswith("s_"):
                row[f"{col}_ci_low"], row[f"{col}_ci_high"] = stats.mean_interval(g[col].tolist(), seed=seed)
        rows.append(row)
    return pd.DataFrame(rows)


# ---------- inputs ----------
def dry_run(summaries, references, provider, settings: Settings, out: str | Path) -> pd.DataFrame:
    """Requests, tokens and estimated cost before anything is sent, printed with one total
    (gavel.runs.costing): extract and style request by request, compare and residual as a range. Requests too
    long for their model's context window are listed and kept in ``table.attrs["too_long"]``."""
    from gavel.runs import costing

    check_orders(settings.orders, settings.label_orders)
    for subj, c, t in summaries:  # a reserved name or an oversize text: said, and not priced
        if summary_problem(subj, t):
            print(f"skipped {subj} case {c}: {summary_problem(subj, t)}")
    summaries = [x for x in summaries if not summary_problem(x[0], x[2])]
    table = costing.dry_run(summaries, references, provider, settings, out)
    costing.show(table)
    return table


def provider(name: str, base_url: str | None = None, **kwargs):
    """A provider by name for the pipeline: ``mock`` answers with :func:`stand_in_answer`."""
    from gavel.llm.providers import get_provider

    if name == "mock":
        kwargs.setdefault("answer", stand_in_answer)
    if base_url:
        kwargs["base_url"] = base_url
    return get_provider(name, **kwargs)


# ---------- notebooks: create batches, retrieve, evaluate, analyse ----------
class StagePending(RuntimeError):
    """A stage's batches have not all ended; rerun later (nothing is lost, nothing is sent twice)."""

    def __init__(self, stage: str, pending: int, total: int):
        super().__init__(f"stage {stage}: {pending} of {total} answers still pending in running batches")
        self.stage, self.pending, self.total = stage, pending, total


# ---------- the same table shapes as data/results/ ----------
def results_tables(scores: pd.DataFrame, seed: int = 0) -> dict[str, pd.DataFrame]:
    """``summary_s_checklist`` and ``summary_bootstrap`` in the shapes of ``data/results/`` (so
    ``gavel.paper.figures`` draws a new run beside the paper's), plus ``gavel_ref_scores`` with every component."""
    from gavel.core import config

    frame = scores.copy()
    if "bin" not in frame:
        frame["bin"] = None
    rows = []
    for subject, g in frame.groupby("subject", sort=True):
        parts = [("all", g)] + [(b, gb) for b, gb in g.groupby("bin") if b]
        for length_bin, gb in parts:
            rows.append({"model": subject, "length_bin": length_bin, "s_checklist": gb["s_checklist"].mean(),
                         "s_checklist_low": gb["s_checklist_low"].mean(), "s_checklist_high": gb["s_checklist_high"].mean(),
                         "cases": int(gb["s_checklist"].notna().sum()), "ambiguous_cells": int(gb["unusable_items"].sum()),
                         "label": config.model_label(subject), "checklist_parts_released": 2})
    table = pd.DataFrame(rows)
    overall = table[table["length_bin"] == "all"].sort_values("s_checklist", ascending=False)
    table["rank"] = table["model"].map({m: i + 1 for i, m in enumerate(overall["model"])})
    boot, full = [], []
    for subject, g in frame.groupby("subject", sort=True):
        lo, hi = stats.mean_interval(g["s_checklist"].tolist(), seed=seed)
        blo, _ = stats.mean_interval(g["s_checklist_low"].tolist(), seed=seed)
        _, bhi = stats.mean_interval(g["s_checklist_high"].tolist(), seed=seed)
        boot.append({"model": subject, "label": config.model_label(subject), "s_checklist": g["s_checklist"].mean(),
                     "cases": int(g["s_checklist"].notna().sum()), "ci_low": lo, "ci_high": hi,
                     "bounds_ci_low": blo, "bounds_ci_high": bhi})
        row = {"model": subject, "label": config.model_label(subject), "cases": len(g)}
        for col in ("s_checklist", "s_residual", "s_style", "s_gavel_ref", "r_own", "r_reference"):
            row[col] = g[col].mean()
        full.append(row)
    out = {"summary_s_checklist": table, "summary_bootstrap": pd.DataFrame(boot), "gavel_ref_scores": pd.DataFrame(full)}
    if "checklist" in scores:  # every table of a run names its checklist (figures drawn from them do too)
        for t in out.values():
            t.insert(0, "checklist", scores["checklist"].iloc[0] if len(scores) else None)
    return out
