"""Runs both ways between gavel and inspect_ai.

``export_run`` writes a gavel run folder as inspect ``.eval`` logs, one per summarizing model: every summary a
sample (id: the case; output: the summary; target: the reference) scored as the ``gavel_ref`` scorer scores it
(``gavel.interop.scores``), the answers' token usage per sample, the ledger's usage and cost per model, the
run's settings and checklist in the log's metadata. ``read_summaries`` reads inspect logs (a ``.eval`` file or
a folder of them) as summaries for ``gavel evaluate``: the model from the log, the case from the sample id.
An inspect log is untrusted input: what cannot be mapped is refused in one line naming the file and sample."""

from __future__ import annotations

import hashlib
import math
import re
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
import pandas as pd
from inspect_ai.log import (
    EvalConfig,
    EvalDataset,
    EvalLog,
    EvalMetric,
    EvalResults,
    EvalSample,
    EvalScore,
    EvalSpec,
    EvalStats,
    read_eval_log,
    write_eval_log,
)
from inspect_ai.model import ModelConfig, ModelOutput, ModelUsage
from inspect_ai.scorer import Score

from gavel.core import stats
from gavel.ref.inputs import REFERENCE, InputError

from .scores import COMPONENTS, plain, score_parts

SCORER = "gavel_ref"
EXTRACTOR_STAGES = ("extract", "residual")
#: the reports' tables a sample's score carries too, where the run wrote them (--orders both, --label-orders K)
EXTRA_TABLES = ("order_summaries", "label_judgments")


def log_name(subject: str) -> str:
    """The log file of one summarizing model: its name made safe for a file name, and a short hash of the name
    (two names made alike stay two files)."""
    slug = re.sub(r"[^A-Za-z0-9._-]+", "_", subject).strip("._")[:80] or "model"
    return f"{slug}-{hashlib.sha256(subject.encode('utf-8')).hexdigest()[:8]}.eval"


def _read_run(run: Path) -> tuple[dict, dict, dict, pd.DataFrame, str | None]:
    """(manifest, tables, texts, cost, checklist text) of a run folder, read as ``gavel report`` reads one made
    by someone else (``gavel.report.folder``: regular files inside the folder, of bounded size, every cell
    the score uses checked); anything else raises :class:`InputError` naming the file."""
    from gavel.report import folder

    try:
        manifest = folder.json_file(run, "evaluation.json")
        if not isinstance(manifest, dict):
            raise folder.ReportInputError(f"{run}: not a gavel run folder (no evaluation.json object)")
        tables = folder.tables(run)
        for name in EXTRA_TABLES + ("cost",):
            path = folder.regular_file(run, f"{name}.csv")
            if path is not None:
                tables[name] = folder.table(path)
        if "scores" not in tables:
            raise folder.ReportInputError(f"{run}: not a gavel run folder (no scores.csv)")
        lacking = [c for c in ("subject", "case_id") if c not in tables["scores"]]
        if lacking:  # an empty or cut file reads as a table without its columns
            raise folder.ReportInputError(f"{run / 'scores.csv'}: no {' and no '.join(lacking)} column")
        folder.check(run, {k: v for k, v in tables.items() if k in folder.COLUMNS})
        texts = {}
        path = folder.regular_file(run, "texts.jsonl")
        for n, line in enumerate(folder.read_text(path, folder.MAX_TABLE_BYTES).splitlines() if path else [], 1):
            rec = folder.json_value(line, f"{path}, line {n}")
            if not (isinstance(rec, dict) and all(isinstance(rec.get(k), str) for k in ("subject", "case_id", "text"))):
                raise folder.ReportInputError(f"{path}, line {n}: expected subject, case_id and text")
            texts[(rec["subject"], rec["case_id"])] = rec["text"]
        path = folder.regular_file(run, "checklist.yaml", folder.MAX_SMALL_BYTES)
        checklist = folder.read_text(path, folder.MAX_SMALL_BYTES) if path else None
    except folder.ReportInputError as err:
        raise InputError(str(err)) from None
    return manifest, tables, texts, tables.pop("cost", pd.DataFrame()), checklist


def _usage(rows: pd.DataFrame) -> ModelUsage:
    def total(col):
        return int(pd.to_numeric(rows[col], errors="coerce").fillna(0).sum()) if col in rows else 0

    usd = pd.to_numeric(rows["usd"], errors="coerce") if "usd" in rows else pd.Series(dtype=float)
    i, o = total("input_tokens"), total("output_tokens")
    return ModelUsage(input_tokens=i, output_tokens=o, total_tokens=i + o,
                      total_cost=float(usd.sum()) if usd.notna().any() else None)


def _metrics(values: list[float]) -> dict[str, EvalMetric]:
    kept = [v for v in values if not math.isnan(v)]
    low, high = stats.mean_interval(kept)
    return {"mean": EvalMetric(name="mean", value=float(np.mean(kept)) if kept else math.nan),
            "gavel/interval_low": EvalMetric(name="low", group="interval", value=low),
            "gavel/interval_high": EvalMetric(name="high", group="interval", value=high)}


def repeat_folders(run: Path) -> list[tuple[int, Path]]:
    """(repeat, folder) of a run of ``--repeats N``: the run itself (repeat 1) and ``repeats/r2`` .. ``rN``,
    each a real folder (a link is refused), numbered without a gap; a run of one repeat has the first alone."""
    found = [(1, run)]
    root = run / "repeats"
    if root.is_symlink() or (root.exists() and not root.is_dir()):
        raise InputError(f"{root}: not a folder of repeats (a link or a file)")
    if root.is_dir():
        named = {}
        for p in root.iterdir():
            m = re.fullmatch(r"r([2-9]|[1-9][0-9]{1,3})", p.name)
            if not m or p.is_symlink() or not p.is_dir():
                raise InputError(f"{p}: not a repeat's folder (repeats/r2, r3, ...; real folders)")
            named[int(m.group(1))] = p
        want = list(range(2, len(named) + 2))
        if sorted(named) != want:
            raise InputError(f"{root}: repeats {sorted(named)} are not r2..r{len(named) + 1} without a gap")
        found += [(r, named[r]) for r in want]
    return found


def _of_repeat(table: pd.DataFrame | None, r: int) -> pd.DataFrame | None:
    """The rows of repeat ``r`` of a table of every repeat (a ``repeat`` column); a table without one is
    repeat 1's."""
    if table is None or not len(table):
        return table
    if "repeat" not in table:
        return table if r == 1 else table.iloc[0:0]
    return table[pd.to_numeric(table["repeat"], errors="coerce") == r]


def _epoch_means(samples: list[EvalSample], key: str) -> list[float]:
    """Per sample id, the mean of ``key`` over its epochs (inspect's default reducer; NaN epochs left out,
    NaN when every epoch is): one value a case, as the metrics of a log with epochs are computed."""
    by_id: dict = {}
    for s in samples:
        by_id.setdefault(s.id, []).append(s.scores[SCORER].value[key])
    return [float(np.mean(kept)) if (kept := [v for v in vs if not math.isnan(v)]) else math.nan
            for vs in by_id.values()]


def export_run(run: str | Path, out: str | Path) -> list[Path]:
    """``run`` (a gavel evaluate folder) as one ``.eval`` log per summarizing model in ``out``; their paths.
    With ``--repeats N`` every repeat is exported, repeat r as epoch r of each sample."""
    run, out = Path(run).resolve(), Path(out)
    if not run.is_dir():
        raise InputError(f"{run}: not a folder (give the --out folder of gavel evaluate)")
    manifest, tables, texts, cost, checklist = _read_run(run)
    repeats = [(1, tables)]
    for r, folder in repeat_folders(run)[1:]:
        own = _read_run(folder)[1]
        for name in EXTRA_TABLES + ("judgments",):  # the reports of every repeat are written beside repeat 1's
            if name in tables:
                own[name] = _of_repeat(tables[name], r)
        repeats.append((r, own))
    for name in EXTRA_TABLES + ("judgments",):
        if name in tables:
            tables[name] = _of_repeat(tables[name], 1)
    items = manifest.get("items") if isinstance(manifest.get("items"), list) else []
    items = list(dict.fromkeys(str(k) for k in items))
    named = manifest["checklist"].get("name") if isinstance(manifest.get("checklist"), dict) else None
    scores = tables["scores"]
    answers = tables.get("answers", pd.DataFrame())
    created = datetime.fromtimestamp((run / "evaluation.json").stat().st_mtime, UTC).isoformat()
    out.mkdir(parents=True, exist_ok=True)
    roles = {r: ModelConfig(model=str(manifest.get(r))) for r in ("extractor", "judge") if manifest.get(r)}
    usage = {str(m): _usage(g) for m, g in cost.groupby("model")} if "model" in cost else {}
    written = []
    k = manifest.get("label_orders") if isinstance(manifest.get("label_orders"), int) else 1
    for subject in sorted(set(scores["subject"].astype(str))):
        samples = []
        for r, own in repeats:
            answers = own.get("answers", pd.DataFrame())
            rows = own["scores"][own["scores"]["subject"].astype(str) == subject]
            for row in rows.to_dict("records"):
                case_id = str(row["case_id"])
                parts = score_parts(row, own, items, str(row.get("checklist") or named), k)
                parts["metadata"]["repeat"] = r
                mine = answers[(answers["subject"].astype(str) == subject)
                               & (answers["case_id"].astype(str) == case_id)] if len(answers) else answers
                by_role = {manifest.get("extractor" if any(s in EXTRACTOR_STAGES for s in g["stage"]) else "judge"): g
                           for _, g in mine.groupby(mine["stage"].isin(EXTRACTOR_STAGES))} if len(mine) else {}
                samples.append(EvalSample(
                    id=case_id, epoch=r, input=f"case {case_id}", target=texts.get((REFERENCE, case_id), ""),
                    output=ModelOutput.from_content(model=subject, content=texts.get((subject, case_id), "")),
                    scores={SCORER: Score(**parts)}, metadata={"case_id": case_id, "repeat": r},
                    model_usage={str(m): _usage(g) for m, g in by_role.items() if m}))
        keys = [*COMPONENTS, *items]
        ids = list(dict.fromkeys(s.id for s in samples))
        results = EvalResults(
            total_samples=len(samples), completed_samples=len(samples),
            scores=[EvalScore(name=k, scorer=SCORER,
                              scored_samples=sum(not math.isnan(s.scores[SCORER].value[k]) for s in samples),
                              unscored_samples=sum(math.isnan(s.scores[SCORER].value[k]) for s in samples),
                              metrics=_metrics(_epoch_means(samples, k))) for k in keys])
        log = EvalLog(
            status="success",
            eval=EvalSpec(created=created, task="gavel_ref", model=subject, config=EvalConfig(epochs=len(repeats)),
                          dataset=EvalDataset(name=run.name, samples=len(ids), sample_ids=ids),
                          model_roles=roles or None, task_args={k: manifest.get(k) for k in ("alpha", "seed", "items")},
                          metadata={"gavel": plain(manifest), "checklist_yaml": checklist, "run": str(run),
                                    "cost": [plain(r) for r in cost.to_dict("records")]}),
            results=results, stats=EvalStats(started_at=created, completed_at=created, model_usage=usage),
            samples=samples)
        path = out / log_name(subject)
        write_eval_log(log, path, format="eval")
        written.append(path)
    return written


def log_files(path: str | Path) -> list[Path]:
    """The inspect logs at ``path``: the file itself, or a folder's ``*.eval`` files in name order."""
    path = Path(path)
    return sorted(path.glob("*.eval")) if path.is_dir() else [path]


def read_summaries(path: str | Path, subject: str | None = None,
                   problems: list[str] | None = None) -> list[tuple[str, str, str]]:
    """(model, case_id, summary) of every sample of the inspect log(s) at ``path``: the model is the log's
    (``subject`` renames it), the case the sample id, the summary the sample's output. A file that is not an
    inspect log raises :class:`InputError` naming it; a sample that cannot be mapped (an error, no output, a
    second epoch of a case with another summary; the same summary again is read once) is reported in ``problems`` (raised when None), naming file and sample."""
    out = []
    files = log_files(path)
    if not files:
        raise InputError(f"{path}: a folder without inspect logs (*.eval)")
    for file in files:
        out += _read_log(file, subject, problems)
    return out


def _read_log(file: Path, subject: str | None, problems: list[str] | None) -> list[tuple[str, str, str]]:
    def bad(message: str) -> None:
        if problems is None:
            raise InputError(message)
        problems.append(message)

    try:
        log = read_eval_log(str(file))
    except Exception as err:  # noqa: BLE001 -- anything inspect's reader raises: the file is not a log we can read
        first = (str(err).strip().splitlines() or [""])[0][:200]
        raise InputError(f"{file}: not a readable inspect log ({type(err).__name__}: {first!r})") from None
    model = subject or log.eval.model
    if not isinstance(model, str) or not model.strip():
        raise InputError(f"{file}: the log names no model; name its summaries with --name")
    if not log.samples:
        raise InputError(f"{file}: the log holds no samples (status {log.status!r})")
    out, seen = [], {}
    for sample in log.samples:
        where = f"{file}, sample {sample.id!r} epoch {sample.epoch}"
        case_id = str(sample.id)
        if sample.error is not None:
            bad(f"{where}: the sample ended in an error; no summary")
        elif not isinstance(sample.output.completion, str) or not sample.output.completion.strip():
            bad(f"{where}: no output (the summary is empty)")
        elif case_id in seen:
            if sample.output.completion != seen[case_id]:  # the same summary again (a scored epoch) is no problem
                bad(f"{where}: a second epoch of this case with another summary; gavel evaluates one summary per "
                    f"model and case (the first epoch is kept)")
        else:
            seen[case_id] = sample.output.completion
            out.append((model, case_id, sample.output.completion))
    return out
