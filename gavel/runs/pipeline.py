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
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from gavel.core import config, options
from gavel.core.items import Item
from gavel.core.items import load as load_checklist
from gavel.core.spreadsheet import write_csv
from gavel.core.vocab import LABEL_ORDER_ROWS
from gavel.llm import ledger
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
from gavel.ref.stages import compare, extract, residual, style
from gavel.ref.stages import summarize as summarize_stage
from gavel.ref.tables import (  # noqa: F401 -- the notebooks' names
    failed_requests,
    failure_report,
    in_repo,
    item_table,
    read_tables,
    unusable_answers,
)
from gavel.runs import comparisons, scoring
from gavel.runs.judgments import JUDGMENT_COLUMNS
from gavel.runs.scoring import results_tables, summary_scores  # noqa: F401 -- results_tables: the pipeline's name
from gavel.runs.stages import (  # noqa: F401 -- the pipeline's names for its stages
    ANSWER_COLUMNS,
    REASK_TOKEN_FACTOR,
    REASKABLE,
    StagePending,
    Stages,
    larger_cap,
    reask,
    reask_larger,
)
from gavel.runs.stand_in import stand_in_answer

ORDERS = ("one", "both")  # --orders: each judged pair asked in one order (today's run) or in both
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
    chunk: int = 1000  # summaries per case group (CHUNK_SUMMARIES; 0: the whole run as one group)

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
             timeout: float | None = None, hand_over: bool = False) -> dict[str, pd.DataFrame]:
    """Evaluate ``summaries`` (subject, case_id, text) against ``references`` (case_id -> human summary).
    Bad input (an empty summary, a repeated one, a case without a usable reference) is reported in
    ``problems`` naming the record and left out; the rest goes on. ``hand_over``: the caller gives the list
    and the dict up; a run in case groups then empties both once they are read and keeps the texts on disk
    while its groups run (:mod:`gavel.runs.held`), not in memory (``gavel evaluate`` hands them over)."""
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
    del models, usable_refs  # indexes of every summary and reference: not needed past here (a run in groups
    # keeps going for hours with them otherwise: some 30 MB at 100,000 summaries)
    groups = case_groups(kept, s.chunk if s.orders == "one" and s.label_orders == 1 else 0)
    if len(groups) > 1:
        store = None
        if hand_over:
            from gavel.runs import held

            store = held.Texts(out, kept, refs)
            summaries.clear()
            references.clear()
            kept, refs = dict.fromkeys(kept), dict.fromkeys(refs)  # the keys only: the texts are on disk
        try:
            return _evaluate_groups(groups, kept, refs, problems, provider, out, s, bins, timeout, store)
        finally:
            if store is not None:
                store.close()
    st = Stages(provider, out, s, timeout)
    part = _evaluate_part(kept, refs, st, s)
    scores = part.pop("scores")
    texts = part.pop("texts")
    judgments = part.pop("judgments")
    tables = {**_run_scores(scores, s, bins), **part, "answers": pd.DataFrame(st.log), "cost": st.cost_table(),
              "problems": pd.DataFrame(problems, columns=["subject", "case_id", "problem"])}
    for name, table in comparisons.report(comparisons.cells([tables]), s.seed).items():  # two or more models
        tables[name] = table.assign(checklist=s.checklist.name)[["checklist", *table.columns]]
    for name, table in tables.items():
        write_csv(table, out / f"{name}.csv")
    tables["judgments"] = judgments
    if s.label_orders > 1:  # the other label orders' judgments (row 0: the compare rows of ``judgments``)
        tables["label_judgments"] = pd.DataFrame(st.label_judgments, columns=[*JUDGMENT_COLUMNS, "label_order"])
    # the texts evaluated (model summaries and references): what a report highlights the offsets in
    (out / "texts.jsonl").write_text(_texts_lines(texts), encoding="utf-8")
    tables["manifest"] = _manifest(out, s, provider, st.sent, st.cached)
    return tables


#: a run of more summaries than this is evaluated in groups of about this many (whole cases, in the order
#: their first summary comes), every stage for one group before the next: what one process holds at a time
#: stays the same whatever the run's size (issue 48 §3). ``--orders both`` and ``--label-orders`` compare every
#: judgment of the run, and ``--repeats`` every repeat's: those runs are one group.
CHUNK_SUMMARIES = 1000
#: the tables written group by group (each group's rows in turn); the others are the run's, made at its end
GROUP_TABLES = ("values", "answers", "compare", "residual", "residual_match", "style", "residual_facts")


def case_groups(kept: dict, size: int) -> list[list[str]]:
    """The cases of ``kept`` ({(subject, case_id): text}) in groups of at most ``size`` summaries (a case with
    more summaries than that is a group of its own), in the order of their first summary; ``size`` 0: one."""
    per_case: dict[str, int] = {}
    for _, c in kept:
        per_case[c] = per_case.get(c, 0) + 1
    groups, current, n = [], [], 0
    for c, k in per_case.items():
        if current and size and n + k > size:
            groups.append(current)
            current, n = [], 0
        current.append(c)
        n += k
    return [*groups, current]


def _release_freed() -> None:
    """Forgets the memos of a finished group's texts (summaries normalised, snippets located, sections
    rendered, tokens counted, echoes looked at: the next group's are other texts) and gives the memory freed
    back to the system (glibc's ``malloc_trim``; elsewhere nothing). Kept, a memo's entries stay scattered
    over the memory the group used, which the allocator then cannot give back, and the process's resident
    peak rises group after group."""
    import ctypes
    import gc

    from gavel.answers import examples
    from gavel.core import tokens
    from gavel.ref import grounding

    for forget in (grounding.forget, prompts.forget, tokens.forget, examples.forget):
        forget()
    gc.collect()
    try:
        ctypes.CDLL(None).malloc_trim(0)  # the process's own C library (find_library would start ldconfig)
    except (OSError, AttributeError, TypeError):  # not glibc
        pass


def _texts_lines(texts: dict) -> str:
    return "".join(json.dumps({"subject": subj, "case_id": c, "text": t}, ensure_ascii=False) + "\n"
                   for (subj, c), t in texts.items())


def _run_scores(scores: pd.DataFrame, s: Settings, bins: dict | None) -> dict[str, pd.DataFrame]:
    """The run's score tables from its summaries' ``scores``: per model (and bin), and data/results/'s shapes."""
    by = ["subject"]
    if bins:
        scores["bin"] = scores["case_id"].map(bins)
        by = ["subject", "bin"]
    model_scores = scoring.model_scores(scores, by, s.seed)
    scores.insert(0, "checklist", s.checklist.name)
    model_scores.insert(0, "checklist", s.checklist.name)
    return {**results_tables(scores, s.seed), "scores": scores, "model_scores": model_scores}


def _manifest(out: Path, s: Settings, provider, sent: dict, cached: dict, **more) -> dict:
    """``evaluation.json`` (written, with the run's checklist) and returned."""
    manifest = {"extractor": s.extractor, "judge": s.judge, "alpha": s.alpha, "seed": s.seed, "mode": s.mode,
                "items": [it.key for it in s.items], "checklist": {"name": s.checklist.name, "source": s.checklist.source,
                "fingerprint": s.checklist.fingerprint}, "provider": getattr(provider, "name", str(provider)),
                "templates": {t: prompts.template_hash(t) for t in TEMPLATES}, "sent": sent, "cached": cached,
                **({"orders": s.orders} if s.orders != "one" else {}),
                **({"label_orders": s.label_orders} if s.label_orders > 1 else {}),
                **served_file(provider), **more}
    (out / "evaluation.json").write_text(json.dumps(manifest, indent=1, sort_keys=True), encoding="utf-8")
    write_checklist(s.checklist, out)
    return manifest


def _evaluate_part(kept: dict, refs: dict, st: Stages, s: Settings) -> dict:
    """Every stage for the summaries ``kept`` and the references ``refs`` of their cases: the per-summary tables
    (``scores`` among them), ``judgments`` and ``texts`` ({(subject, case_id): text})."""
    texts = {**kept, **{("human", c): t for c, t in refs.items()}}
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
    return {"scores": summary_scores(kept, refs, texts, spans, compare_rows, residual_rows, style_rows, facts, s.alpha),
            "values": pd.DataFrame(value_rows), "compare": compare_rows,
            "residual": pd.DataFrame([{"subject": k[0], "case_id": k[1], "spans": json.dumps(v),
                                       "r": residual.residual_ratio(texts[k], v), "facts": len(facts[k]),
                                       "facts_ok": fact_ok[k]} for k, v in spans.items()]),
            "residual_match": residual_rows, "style": style_rows,
            "residual_facts": pd.DataFrame([r for rows, _ in fact_results for r in rows],
                                           columns=["subject", "case_id", "index", "fact", "evidence_spans"]),
            "judgments": pd.DataFrame(judgments + residual_judgments, columns=JUDGMENT_COLUMNS), "texts": texts}


def _evaluate_groups(groups: list, kept: dict, refs: dict, problems: list, provider, out: Path, s: Settings,
                     bins: dict | None, timeout: float | None, store=None) -> dict:
    """:func:`evaluate` of a run in case groups (``CHUNK_SUMMARIES``): each group's ``GROUP_TABLES``, judgments and
    texts written when it ends (under ``out/.groups``, joined at the end: the tables of the run, group by
    group), the run's own tables made at the end from what stays in memory: the summaries' scores, the rows
    that say why a summary's score is missing, the answers still unusable, and (two or more models) one number
    per summary and item for the paired comparisons. A group with batches still running raises nothing until
    every group was sent (one ``StagePending`` for all)."""
    import pickle
    import shutil

    from gavel.core.spreadsheet import join_csv

    parts = out / ".groups"
    if parts.is_symlink() or (parts.exists() and not parts.is_dir()):  # never followed: ours is a folder
        parts.unlink()
    shutil.rmtree(parts, ignore_errors=True)
    parts.mkdir()
    sent, cached, costs, scores, cells, pending, done = {}, {}, [], [], [], [], []
    why = {name: [] for name in ("compare", "style", "residual_match")}
    unusable, requests, many = [], 0, len({subj for subj, _ in kept}) > 1
    # each group's summaries found in one pass over them all (not one pass per group), in their order; a
    # group's list is let go once it ran
    group_of = {c: g for g, cases in enumerate(groups) for c in cases}
    members: list = [[] for _ in groups]
    for k in kept:
        members[group_of[k[1]]].append(k)
    del group_of
    for g, cases in enumerate(groups, 1):
        mine, keys, members[g - 1] = set(cases), members[g - 1], None
        st = Stages(provider, out, s, timeout)
        try:
            part = _evaluate_part(store.summaries(keys) if store else {k: kept[k] for k in keys},
                                  store.references(sorted(mine)) if store else {c: refs[c] for c in sorted(mine)}, st, s)
        except StagePending as err:
            pending.append(err)
            continue
        for total, counts in ((sent, st.sent), (cached, st.cached)):
            for stage, n in counts.items():
                total[stage] = total.get(stage, 0) + n
        part["answers"] = log = pd.DataFrame(st.log)
        for name in GROUP_TABLES:
            write_csv(part[name], parts / f"{name}.{g}.csv")
        write_csv(part["judgments"].assign(checklist=s.checklist.name, repeat=1)[["checklist", "repeat", *JUDGMENT_COLUMNS]],
                  parts / f"judgments.{g}.csv")
        (parts / f"texts.{g}.jsonl").write_text(_texts_lines(part["texts"]), encoding="utf-8")
        done.append(g)
        sc = part["scores"]
        left = {"scores": sc, "cost": st.cost_table(), "why": {}, "unusable": None, "cells": None, "requests": 0}
        missing = set(zip(*[sc.loc[sc["s_checklist"].isna() | sc["s_gavel_ref"].isna(), k] for k in ("subject", "case_id")]))
        for name in why:
            t = part[name]
            if len(t) and missing:
                left["why"][name] = t[[k in missing for k in zip(t["subject"], t["case_id"])]]
        if len(log):
            keys = ["stage", "subject", "case_id", "item"]
            last = log.loc[log.groupby(keys, dropna=False)["round"].idxmax()]
            left["requests"] = len(last)
            bad = set(map(tuple, last.loc[~last["status"].isin(["ok", "gated"]), keys].itertuples(index=False)))
            del last
            if bad:
                left["unusable"] = log[[k in bad for k in log[keys].itertuples(index=False, name=None)]]
        if many or not cells:
            left["cells"] = comparisons.cells([{"scores": sc, "compare": part["compare"]}])
        # what stays of the group, made anew once its memory is freed: objects kept from the group's own
        # allocations sit scattered over all the memory it used, which the allocator can then never give back
        # (after 10 groups of 1,000 summaries, a resident peak half as high again as one group's)
        kept_bytes = pickle.dumps(left, protocol=pickle.HIGHEST_PROTOCOL)
        del part, st, log, sc, left, missing
        _release_freed()
        left = pickle.loads(kept_bytes)
        del kept_bytes
        scores.append(left["scores"])
        costs.append(left["cost"])
        requests += left["requests"]
        for name, rows in left["why"].items():
            why[name].append(rows)
        if left["unusable"] is not None:
            unusable.append(left["unusable"])
        if left["cells"] is not None:
            cells.append(left["cells"])
    if pending:
        shutil.rmtree(parts, ignore_errors=True)
        raise StagePending(pending[0].stage, sum(p.pending for p in pending), sum(p.total for p in pending))
    for name in (*GROUP_TABLES, "judgments"):
        join_csv([parts / f"{name}.{g}.csv" for g in done], out / f"{name}.csv")
    with open(out / "texts.jsonl", "wb") as whole:
        for g in done:
            with open(parts / f"texts.{g}.jsonl", "rb") as one:
                shutil.copyfileobj(one, whole)
    tables = {**_run_scores(pd.concat(scores, ignore_index=True), s, bins), "cost": ledger.combine(costs),
              "problems": pd.DataFrame(problems, columns=["subject", "case_id", "problem"])}
    for name, table in comparisons.report(pd.concat(cells, ignore_index=True), s.seed).items():
        tables[name] = table.assign(checklist=s.checklist.name)[["checklist", *table.columns]]
    for name, table in tables.items():
        write_csv(table, out / f"{name}.csv")
    shutil.rmtree(parts, ignore_errors=True)
    answers_rest = pd.concat(unusable, ignore_index=True) if unusable else pd.DataFrame(columns=list(ANSWER_COLUMNS))
    answers_rest.attrs["requests"] = requests
    tables.update({"answers": answers_rest, "judgments": pd.DataFrame(columns=JUDGMENT_COLUMNS),
                   **{name: pd.concat(rows, ignore_index=True) if rows else pd.DataFrame() for name, rows in why.items()}})
    tables["manifest"] = _manifest(out, s, provider, sent, cached, groups=len(groups))
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
    from gavel.core.items import ChecklistError, from_text

    try:
        text = Path(checklist.source).read_text(encoding="utf-8")
        same = from_text(text, checklist.source).fingerprint == checklist.fingerprint
    except (OSError, UnicodeDecodeError, ChecklistError):
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
    st = Stages(provider, out, Settings(extractor=model, judge=model, mode=mode))
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


def _judge(st: Stages, stage: str, pairs: list, s: Settings) -> tuple[pd.DataFrame, list[dict]]:
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
