"""Document-extraction checklists against a human reference with GAVEL-REF's compare and score stages
(``gavel.ref.stages.compare`` / ``score``), so new runs get S_checklist in the same tables as the release's
runs — for any checklist (``gavel.core.items``).

Input: value rows ``(case_id, item, index, value)`` of one run ("subject") — from the agent
(``agent.collect_runs``), end-to-end (``end_to_end.parse``), chunk-by-chunk (``ChunkedResult.value_rows``) or
three-pass (``ThreePassResult.value_rows``). The reference: the release's ``human.json`` for the default
(legal) checklist, or a reference file of the checklist's own (:func:`read_references`). Every (case, item)
of the reference cases becomes a compare pair; an item the run has no value for is an empty side (gated by
the compare stage, never dropped). A value row naming an item the checklist does not have is an error naming
the file and the line; nothing is scored silently.
"""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd

from gavel.answers.scan import has_lone_surrogate
from gavel.core import items as gitems
from gavel.core import jsonl
from gavel.core.entries import entry_values
from gavel.ref.stages import compare, score

from ..llm.pace import announce, stage_cap
from ..llm.runner import StageRunner

VALUE_COLUMNS = ("case_id", "item", "index", "value")


class ReferenceError(ValueError):
    """A reference or value-row file that cannot be used; the message names the file and the record."""


def _text_problem(value) -> str | None:
    """Why a value cannot be compared as text (not a string, or a lone surrogate in it), or None."""
    if not isinstance(value, str):
        return f"a value must be text, not {type(value).__name__} ({str(value)[:40]!r})"
    if has_lone_surrogate(value):
        return f"a lone surrogate in the value {value.encode('utf-8', 'replace')[:40]!r}: not text"
    return None


def _entries(by_item: dict, checklist, where: str, strict: bool = True) -> dict:
    """``{item_key: values}`` of one case's entries. ``strict`` (a reference file of one's own): an entry that
    cannot be read is an error naming it; the release's human.json keeps its documented reading (its
    malformed records are the audit's defects, left out as every replay leaves them out)."""
    refs = {}
    for name, entry in by_item.items():
        try:
            key = checklist.item(name).key
        except gitems.UnknownItemError as err:
            raise ReferenceError(f"{where}: {err}") from None
        if isinstance(entry, list) and all(isinstance(v, str) for v in entry):  # plain values, no evidence
            values = tuple(entry)
        else:
            rows, problems = entry_values(entry)
            bad = [p.detail for p in problems if p.defect == "malformed_record"]
            if strict and bad:
                raise ReferenceError(f"{where}, item {name!r}: cannot read the entry ({bad[0]})")
            values = tuple(r["value"] for r in rows)
        why = next(filter(None, map(_text_problem, values)), None)
        if why:
            raise ReferenceError(f"{where}, item {name!r}: {why}")
        refs[key] = values
    return refs


def human_references(root: str | Path, checklist=None) -> dict:
    """``{case_id: {item_key: (value, ...)}}`` of the release's ``human.json`` (the 40 meta-evaluation cases),
    the reference of the default (legal) checklist only."""
    checklist = gitems.load(checklist)
    if not checklist.is_default:
        raise ReferenceError(f"the release's human.json holds references for the legal checklist only, not "
                             f"{checklist.name!r}: give the checklist's own reference file (--references FILE)")
    path = Path(root) / "document_checklists" / "human.json"
    data = json.loads(path.read_text(encoding="utf-8"))
    return {str(case_id): _entries(by_item, checklist, f"{path}: case {case_id}", strict=False)
            for case_id, by_item in (data.get("results") or {}).items()}


def read_references(path: str | Path, checklist=None) -> dict:
    """A reference file of any checklist, as :func:`human_references` returns it: JSON shaped like
    ``human.json`` (``{"results": {case_id: {item: entry}}}``, or the inner mapping alone; an entry is a
    list of plain values, or the release's ``{"extracted": [{"value": ..., "evidence": ...}]}``), or value rows (JSONL, one ``{case_id, item, index, value}``
    per line)."""
    checklist, path = gitems.load(checklist), Path(path)
    try:
        text = jsonl.file_bytes(path).decode("utf-8")
    except (jsonl.JSONLError, UnicodeDecodeError) as err:
        raise ReferenceError(f"{path}: cannot read the references ({err})") from None
    if path.suffix == ".jsonl":
        out: dict = {}
        for row in read_value_rows([path], checklist).itertuples(index=False):
            out.setdefault(str(row.case_id), {}).setdefault(checklist.item(row.item).key, []).append(row.value)
        return {c: {k: tuple(v) for k, v in by.items()} for c, by in out.items()}
    try:
        data = jsonl.document(text, str(path))
    except jsonl.JSONLError as err:
        raise ReferenceError(str(err)) from None
    data = data.get("results", data) if isinstance(data, dict) else data
    if not isinstance(data, dict) or not all(isinstance(v, dict) for v in data.values()):
        raise ReferenceError(f"{path}: want {{case_id: {{item: values}}}} (as human.json's \"results\")")
    return {str(c): _entries(by_item, checklist, f"{path}: case {c}") for c, by_item in data.items()}


def read_value_rows(paths, checklist=None) -> pd.DataFrame:
    """Value rows from JSONL files (``documents collect``, ``end-to-end``, ``chunked``, ``three-pass``), checked
    against ``checklist``: a line that is not JSON, lacks a column, or names an unknown item is an error naming
    the file and the line."""
    checklist = gitems.load(checklist)
    frames = []
    for path in map(Path, paths):
        rows = []
        try:
            lines = jsonl.scan(jsonl.file_bytes(path).decode("utf-8"), str(path))
        except (jsonl.JSONLError, UnicodeDecodeError) as err:
            raise ReferenceError(f"{path}: cannot read the value rows ({err})") from None
        for line in lines:
            n, row = line.number, line.value
            if not line.ok:
                raise ReferenceError(line.problem)
            missing = [c for c in VALUE_COLUMNS if not isinstance(row, dict) or c not in row]
            if missing:
                raise ReferenceError(f"{path}: line {n}: no {', '.join(missing)} (a value row has "
                                     f"{', '.join(VALUE_COLUMNS)})")
            try:
                checklist.item(row["item"])
            except gitems.UnknownItemError as err:
                raise ReferenceError(f"{path}: line {n}: {err}") from None
            why = _text_problem(row["value"])
            if why:
                raise ReferenceError(f"{path}: line {n}: {why}")
            rows.append({**row, "case_id": str(row["case_id"])})
        frames.append(pd.DataFrame(rows, columns=None if rows else list(VALUE_COLUMNS)))
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame(columns=list(VALUE_COLUMNS))


def reworded(values: pd.DataFrame, checklist=None) -> dict:
    """``{(case_id, item key): ["VALUE (reworded from BEFORE | BEFORE)", ...]}`` for the value rows a merge or
    prune reworded (three-pass rows carry ``reworded_from``: the texts the value had before); the marks of
    ``compare_rows.csv``'s ``reworded`` column."""
    checklist = gitems.load(checklist)
    out: dict = {}
    if "reworded_from" not in values:
        return out
    for r in values.sort_values(["case_id", "item", "index"]).itertuples(index=False):
        before = r.reworded_from
        if isinstance(before, list) and before:
            out.setdefault((str(r.case_id), checklist.item(r.item).key), []).append(
                f"{r.value} (reworded from {' | '.join(map(str, before))})")
    return out


def pairs(values: pd.DataFrame, subject: str, references: dict, cases=None, checklist=None) -> list[compare.Pair]:
    """Compare pairs of one run's value rows against the references, for every item of ``checklist`` and
    ``cases`` (default: every reference case the run has rows for)."""
    checklist = gitems.load(checklist)
    got: dict = {}
    for r in values.sort_values(["case_id", "item", "index"]).itertuples(index=False):
        got.setdefault((str(r.case_id), checklist.item(r.item).key), []).append(r.value)
    cases = sorted(cases) if cases is not None else sorted({c for c, _ in got} & set(references))
    out = []
    for case_id in cases:
        for it in checklist.items:
            ref = references.get(case_id, {}).get(it.key)
            out.append(compare.Pair(subject, case_id, it.key, tuple(got.get((case_id, it.key), ())), ref))
    return out


def evaluate(pair_list: list[compare.Pair], provider, judge_model: str, workdir: str | Path, seed: int = 0,
             progress: bool = False, checklist=None, max_tokens: int | None = None, pace=None) -> dict:
    """Compare + score through the stage runner's online path: ``{"rows", "per_case", "per_run"}``, each
    table naming the checklist in its first column. Answers are capped at ``max_tokens``, else at the judge's
    own cap for the compare stage (a local model's measured one); with ``pace`` (``gavel.llm.pace``: a speed,
    or an announcer measuring it) the stage says its expected duration before it sends."""
    checklist = gitems.load(checklist)
    jobs, gated = compare.build_requests(pair_list, judge_model, seed=seed, checklist=checklist,
                                         max_tokens=max_tokens or stage_cap(judge_model, compare.STAGE))
    runner = StageRunner(compare.STAGE, provider, workdir=Path(workdir) / "compare", progress=progress,
                         namespace=checklist.cache_tag)
    announce(pace, runner, [req for req, _ in jobs], f"stage {compare.STAGE}")
    report = runner.run([req for req, _ in jobs], mode="online")
    judged = compare.table_rows([compare.parse_response(meta, report.responses.get(req.custom_id))
                                 for req, meta in jobs])
    rows = pd.DataFrame(gated + judged)
    per_case = score.checklist_scores(rows)
    out = {"rows": rows, "per_case": per_case, "per_run": score.mean_over_cases(per_case)}
    for table in out.values():
        table.insert(0, "checklist", checklist.name)
    return out
