"""gavel's command line, ``python -m gavel COMMAND`` (``--help`` lists them; the Makefile's targets call
them): the release (data, audit, results, replay-check), LLM stages (stage, evaluate, demo), a run's report
(report), checklists from case documents (documents ...) and the annotation app (annotate ...)."""

from __future__ import annotations

import argparse
import subprocess
import sys
import time
from pathlib import Path

from gavel.annotation import cli as annotation_cli
from gavel.core import config, options, shards
from gavel.core.spreadsheet import write_csv
from gavel.core.vocab import PROVIDERS
from gavel.documents import cli as documents_cli
from gavel.interop import cli as interop_cli
from gavel.llm import packs
from gavel.llm import slurm as slurm_cli

#: what --provider takes: every provider but replay (it answers only from recorded runs: replay-check), and for
#: evaluate not vllm-batch either (evaluate runs its stages one after another online or in provider batches)
STAGE_PROVIDERS = tuple(p for p in PROVIDERS if p != "replay")
EVALUATE_PROVIDERS = tuple(p for p in STAGE_PROVIDERS if p != "vllm-batch")


def cmd_data(args: argparse.Namespace) -> int:
    """Locate the release, or clone the public repository into data/external/gavel."""
    try:
        root = config.release_root()
        print(f"GAVEL release found: {root}")
        return 0
    except config.ReleaseNotFoundError:
        if config.env("GAVEL_RELEASE"):
            raise  # one line from ``main`` (exit 2), its trace under --traceback
    target = config.DEFAULT_RELEASE_DIR
    target.parent.mkdir(parents=True, exist_ok=True)
    print(f"Cloning {config.RELEASE_URL} into {target} ...")
    try:
        done = subprocess.run(["git", "clone", "--depth", "1", config.RELEASE_URL, str(target)],
                              timeout=args.timeout, check=False)
        ok = done.returncode == 0
    except (OSError, subprocess.TimeoutExpired) as err:
        print(f"git clone failed: {err}", file=sys.stderr)
        ok = False
    if ok:
        print(f"GAVEL release cloned: {config.release_root()}")
        return 0
    print("error: could not download the release (no network?). Set GAVEL_RELEASE to a local copy of the "
          "release (the folder holding data/summaries), e.g. `export GAVEL_RELEASE=/path/to/gavel-release`, "
          "or put it in .env.", file=sys.stderr)
    return 2


def cmd_audit(args: argparse.Namespace) -> int:
    from .release import audit, load_release

    release = load_release(args.release)
    print(audit.report(release))
    if args.csv:
        write_csv(release.audit, args.csv)
        print(f"\naudit table written to {args.csv}")
    return 0


def cmd_results(args: argparse.Namespace) -> int:
    """Recompute data/results/ and docs/REPRODUCTION.md from the release (or both into --out)."""
    with config.few_collections():  # the imports too: pandas' and scipy's objects live as long as the release
        from gavel.paper import reproduction, results
        from gavel.release import audit, load_release

        start, release = time.perf_counter(), load_release(args.release)
        print(f"{len(release.audit)} defects in the release, each with its file and record (file | record  (detail)):")
        print("\n".join(audit.defect_lines(release.audit)))
        out = Path(args.out) if args.out else None
        tables = results.compute(release, fork=True)  # two groups of tables at once where there are two cores
        for path in results.write(tables, out):
            print(f"wrote {_shown(path)}")
        # REPRODUCTION.md is rendered from the tables as written (what make figures also reads)
        doc = reproduction.write(results.read(out), out / "REPRODUCTION.md") if out else reproduction.write(results.read())
        print(f"wrote {_shown(doc)}\n{results.share_line(time.perf_counter() - start)}")
    return 0


def _shown(path: Path) -> str:
    path = Path(path).resolve()
    return str(path.relative_to(config.REPO_ROOT)) if path.is_relative_to(config.REPO_ROOT) else str(path)


#: the message of an interrupted command (Ctrl-C): one line, exit status 130 (128 + SIGINT), as shells expect
INTERRUPTED = ("interrupted (Ctrl-C); answers already received are kept in the run's cache, and the same command "
               "resumes where it stopped")


def user_errors() -> tuple[type[BaseException], ...]:
    """The errors a user meets (bad input, a provider that cannot send, a busy workdir, an unknown model,
    item, document or release): shown as one ``error:`` line, exit status 2."""
    from gavel.core.items import ChecklistError, UnknownItemError
    from gavel.documents.agent import AgentError
    from gavel.documents.corpus import CorpusError, DocumentNotFoundError
    from gavel.documents.evaluate import ReferenceError
    from gavel.runs.pipeline import InputError

    from .llm.providers.base import ProviderError
    from .llm.records import RequestError
    from .llm.runner import WorkdirBusyError

    return (RequestError, ProviderError, WorkdirBusyError, config.ModelsFileError, UnknownItemError,
            config.ReleaseNotFoundError, CorpusError, DocumentNotFoundError, AgentError, InputError, ChecklistError,
            ReferenceError, annotation_cli.AnnotateError, packs.PackError)


def one_line_errors(label: str, run, expected: tuple = (), traceback: bool = False) -> int:
    """``run()``, with every error as one line on stderr instead of a traceback (API keys removed): the
    errors of :func:`user_errors` (and ``expected``, the command's own) as ``error: ...``, exit status 2;
    Ctrl-C as one line, exit status 130; anything else as ``error: LABEL: TYPE: message``, exit status 1
    (``traceback``: ``gavel --traceback ...`` shows every error's trace before its line). Every command reports through here once
    (``main``)."""
    from .llm.secrets import scrub

    try:
        return run()
    except KeyboardInterrupt:
        _close_progress_bars()
        print(INTERRUPTED, file=sys.stderr)
        return 130
    except config.SettingsFileError as err:  # .env itself cannot be read: nothing to scrub with
        _trace(err, traceback, scrubbed=False)
        print(f"error: {err}", file=sys.stderr)
        return 2
    except (*user_errors(), *expected) as err:
        _trace(err, traceback)
        print(scrub(f"error: {err}"), file=sys.stderr)
        return 2
    except KeyError as err:  # a model the registry does not know; any other KeyError is a bug: below
        if not str(err.args[0] if err.args else "").startswith(("unknown model", "model ")):
            return _unexpected(label, err, traceback)
        _trace(err, traceback)
        print(f"error: {err.args[0]}", file=sys.stderr)
        return 2
    except Exception as err:  # a provider's error may quote the key ("Incorrect API key provided: sk-...")
        return _unexpected(label, err, traceback)


def _close_progress_bars() -> None:
    """Close the progress bars an interrupt left open (tqdm's), so the message starts on a line of its own."""
    try:
        from tqdm.std import tqdm
    except ImportError:
        return
    for bar in list(getattr(tqdm, "_instances", ())):
        bar.close()
    sys.stderr.flush()


def _trace(err: BaseException, traceback: bool, scrubbed: bool = True) -> None:
    """``gavel --traceback``: where ``err`` came from, on stderr (API keys removed unless ``scrubbed`` is
    False: .env itself could not be read), before its one line."""
    if traceback:
        import traceback as tb

        from .llm.secrets import scrub

        text = "".join(tb.format_exception(err))
        print(scrub(text) if scrubbed else text, file=sys.stderr, end="")


def _unexpected(label: str, err: Exception, traceback: bool) -> int:
    from .llm.secrets import scrub

    _trace(err, traceback)
    print(scrub(f"error: {label}: {type(err).__name__}: {err}"
                + ("" if traceback else " (gavel --traceback ... shows where)")), file=sys.stderr)
    return 1


def cmd_stage(args: argparse.Namespace) -> int:
    """Run (or dry-run) one stage's requests through a provider with the resumable runner (errors: one line,
    from ``main``)."""
    import pandas as pd

    from gavel.core.items import load as load_checklist

    from .llm import estimate, ledger
    from .llm.providers import get_provider
    from .llm.records import read_requests, repeats
    from .llm.runner import DEFAULT_RUNS_DIR, StageRunner
    from .llm.secrets import scrub

    checklist = load_checklist(args.checklist)
    lines: list[int] = []
    requests = read_requests(args.requests, lines)
    if not requests:
        print(f"error: {args.requests}: no requests", file=sys.stderr)
        return 2
    from gavel.ref.stages.compare import RESIDUAL_ITEM

    for n, r in zip(lines, requests):  # with a checklist of one's own, every item a request names is one of its
        if r.item and r.item != RESIDUAL_ITEM and not checklist.is_default:
            try:
                checklist.item(r.item)
            except KeyError as err:
                raise type(err)(f"{args.requests}, line {n}: {err}") from None
    for i, first in repeats(requests).items():
        print(f"{args.requests}, line {lines[i]}: same request as line {lines[first]} (custom_id "
              f"{requests[i].custom_id}); sent once, answered for both", file=sys.stderr)
    stage = args.stage or requests[0].stage
    kwargs = {"base_url": args.base_url} if args.base_url else {}
    if args.served_as:
        kwargs["served_as"] = args.served_as
    workdir, cache_dir = args.workdir, None
    if args.shard:  # one shard of the stage (a SLURM array task): its own state, the stage's cache
        from .llm import slurm

        workdir = slurm.shard_workdir(args.workdir or DEFAULT_RUNS_DIR / stage, args.shard)
        cache_dir = Path(args.workdir or DEFAULT_RUNS_DIR / stage) / "cache"
        requests = slurm.shard_requests(requests, args.shard)
        print(f"stage {stage}: shard {args.shard[0]}/{args.shard[1]}: {len(requests)} requests", flush=True)
    if args.provider == "vllm-batch":
        kwargs = {"folder": Path(workdir or DEFAULT_RUNS_DIR / stage) / "batches",
                  "command": args.vllm_command}
    if args.provider == "local":  # llama.cpp server started here, stopped at exit
        kwargs = {"model_path": args.gguf} if args.gguf else {}
    runner = StageRunner(stage, get_provider(args.provider, **kwargs), workdir, cache_dir=cache_dir,
                         poll_interval=args.poll_interval, concurrency=args.concurrency,
                         max_attempts=args.max_attempts, lock_timeout=args.lock_timeout,
                         namespace=checklist.cache_tag)  # a non-default checklist's answers are cached apart
    if args.dry_run:
        runner.dry_run(requests, mode=args.mode, allow_unserved=args.allow_unserved)
        return 0
    todo = [r for r in requests if not runner.is_cached(r)]
    if args.provider == "local" and todo:  # a model on this CPU: its speed measured, the duration said first
        from .llm import pace

        seconds = pace.forecast(todo, pace.measure(runner.provider, todo[0].model))
        print(f"stage {stage}: {len(todo)} requests to send; expected duration {pace.duration(seconds)}", flush=True)
    report = runner.run(requests, mode=args.mode)
    print(f"stage {stage}: {len(report.responses)} requests, {report.cached} cached, {report.sent} sent, "
          f"{len(report.too_long)} too long (not sent), {len(report.failed)} failed; responses in "
          f"{runner.cache.folder}")
    table = runner.cost_table(args.mode)
    if args.slurm_job and args.slurm_job != "local":  # your own GPUs: the job's elapsed time, priced per GPU-hour
        from .llm.slurm import job_usage

        try:
            seconds, gpus = job_usage(args.slurm_job)
        except RuntimeError as err:  # no accounting on this cluster: the time is unknown, the run stands
            print(f"warning: {err}; the job's GPU time is not in cost.csv", file=sys.stderr)
            seconds, gpus = None, 0
        row = ledger.gpu_row(stage, sorted({r.model for r in requests}), args.provider, args.slurm_job, seconds, gpus)
        table = ledger.table([row]) if not len(table) else pd.concat([table, ledger.table([row])], ignore_index=True)
        ledger.write(runner.workdir / "cost.csv", table)
    print(ledger.closing_line(table, runner.workdir / "cost.csv", estimate.read_estimate(runner.workdir)))
    for cid in report.failed[:20]:
        print(scrub(f"  failed {cid}: {report.responses[cid].error}"))  # this output goes to SLURM job logs
    return 1 if report.failed else 0


def _sharding():
    from gavel.runs import sharding  # gavel.runs.sharding: evaluate --shard and merge (loaded when they run)

    return sharding


def cmd_evaluate(args: argparse.Namespace) -> int:
    """GAVEL-REF for summaries in files: extract, compare, residual, style, scores (gavel.runs.pipeline).
    Exit status 0 when every request was answered, 1 when some failed (how many, by stage, and why are
    printed), 2 for input or setup that cannot run (one ``error:`` line, from ``main``)."""
    import pandas as pd

    from gavel.core.items import load as load_checklist
    from gavel.ref import tables as tables_mod
    from gavel.runs import comparisons, costing, label_orders, orders, pipeline, sharding, stability
    from gavel.runs import repeats as repeated

    from .llm.secrets import scrub

    # everything that can be checked before reading or sending anything: a wrong name stops here
    checklist = load_checklist(args.checklist)
    items = checklist.select(args.items)
    if args.gguf is not None and args.provider != "local":
        raise pipeline.InputError(f"--gguf serves a model file with --provider local, not --provider {args.provider}")
    if args.gguf is not None and not (args.gguf and Path(args.gguf).expanduser().is_file()):
        raise pipeline.InputError(f"--gguf {args.gguf!r}: no such model file (a regular file is needed)")
    if args.gguf:  # its header, before anything is hashed or started (issue 46)
        from .llm.providers import local
        try:
            local.check_model_file(Path(args.gguf).expanduser())
        except local.ProviderError as err:
            raise pipeline.InputError(f"--gguf: {err}") from None
    pipeline.writable_folder(args.out, "--out")
    summaries = []
    for path in args.summaries:  # a file in an unknown shape, or a bad record, is reported; the rest goes on
        problems: list[str] = []
        notes: list[str] = []
        try:
            summaries += interop_cli.read_summaries(path, args.name, problems, notes=notes)  # also .eval logs
        except pipeline.InputError as err:
            print(f"skipped {err}", file=sys.stderr)
        for note in notes:
            print(f"note: {note}", file=sys.stderr)
        for message in problems:
            print(f"skipped {message}", file=sys.stderr)
    if not summaries:
        raise pipeline.InputError(f"no summaries to evaluate in {', '.join(args.summaries)}")
    summaries = sharding.select(summaries, args)  # --shard I/N: its cases only
    if args.references:
        references, bins = {c: t for _, c, t in pipeline.read_summaries(args.references, pipeline.REFERENCE,
                                                                          reference=True)}, {}
    else:
        from .release import load_release

        references, bins = pipeline.release_references(load_release(args.release))
    roles = pipeline.default_roles(args.provider)
    settings = pipeline.Settings(extractor=args.extractor or roles["extractor"], judge=args.judge or roles["judge"],
                                 items=items, checklist=checklist, alpha=args.alpha, seed=args.seed, mode=args.mode,
                                 max_tokens=args.max_tokens, progress=True, orders=args.orders,
                                 label_orders=args.label_orders, usage_from=tuple(args.usage_from),
                                 allow_unserved=args.allow_unserved, chunk=args.group_size)
    if args.mock_judge and args.provider != "mock":
        raise pipeline.InputError(f"--mock-judge sets the mock's judge, not --provider {args.provider}'s")
    from gavel.runs.stand_in import mock_options

    made = pipeline.provider(args.provider, args.base_url, **({"model_path": args.gguf} if args.gguf else {}),
                             **mock_options(args.mock_judge))
    if args.provider == "mock":  # its log of what was sent: read by no one here, held per request of a long run
        made.record = False
    provider = sharding.guard(made, args)
    if args.dry_run:
        table = pipeline.dry_run(summaries, references, provider, settings, args.out)
        if args.repeats > 1:
            print(repeated.repeats_cost(table, args.repeats, provider))
        return 0
    if args.provider == "local":  # a model on this CPU: its speed measured, the run's duration said first
        from gavel.runs.forecast import announcer

        settings.pace = announcer(summaries, references, settings, provider, args.repeats, out=args.out)
    result = repeated.evaluate_repeats(summaries, references, provider, args.out, settings, args.repeats, bins=bins,
                                       hand_over=settings.pace is None)  # not when the local forecast reads them
    tables = result["runs"][0]
    if args.repeats > 1:
        print(stability.summary_line(result, args.out))
    if args.orders == "both":
        print(orders.summary_line(result, args.out))
    if args.label_orders > 1:
        print(label_orders.summary_line(result, args.out))

    line = comparisons.summary_line(result.get("comparisons", tables["comparisons"]),
                                    result.get("comparison_models", tables["comparison_models"]), args.out)
    if line:
        print(line)
    print(comparisons.board_heading(tables["model_scores"], args.repeats > 1 or args.orders == "both"))
    with pd.option_context("display.width", 200, "display.max_columns", 20):
        print(tables["model_scores"].to_string(index=False))
    print(f"{tables_mod.counts_line(result['runs'])}; tables in {args.out}")
    for line in tables_mod.score_lines(tables):  # a missing score says why
        print(f"  {line}")
    print(costing.cost_line(result, args.out))
    for rec in tables["problems"].to_dict("records"):
        print(f"  skipped {rec['subject']} case {rec['case_id']}: {rec['problem']}", file=sys.stderr)
    per_run = [pipeline.failed_requests(run) for run in result["runs"]]  # every repeat's failures
    failed = pd.concat(per_run, ignore_index=True)
    failed.attrs["requests"] = sum(f.attrs.get("requests", 0) for f in per_run)
    if len(failed):
        print(scrub(pipeline.failure_report(failed)), file=sys.stderr)
        return 1
    return 0


def cmd_plan(args: argparse.Namespace) -> int:
    """The cases x repeats x orders a difference needs, and their price (gavel.runs.plan_cli, docs/plan.md)."""
    from gavel.runs.plan_cli import run

    return run(args)


def cmd_report(args: argparse.Namespace) -> int:
    """One self-contained HTML file of an evaluation folder (``--against``: what changed from a baseline run),
    or of the release's 12 models (``--release``); docs/report.md."""
    from gavel.report.page import ReportInputError

    return one_line_errors("report", lambda: _report(args), expected=(ReportInputError,))


def _report(args: argparse.Namespace) -> int:
    from gavel.report import page as report

    if args.release == bool(args.run):
        raise report.ReportInputError("give a run folder (the --out of `gavel evaluate`) or --release, not both")
    if args.release:
        if args.against:
            raise report.ReportInputError("--against compares two run folders; it does not apply to --release")
        path = report.write(report.release_data(), args.output or "release.html")
    else:
        run = Path(args.run).absolute()  # a relative folder: from the working directory, once
        against = report.run_data(Path(args.against).absolute()) if args.against else None
        data = report.run_data(run)
        if against is not None:
            d = report.diff(data, against)
            sys.stderr.write("".join(f"warning: {w}\n" for w in d["warnings"]))
            print("\n".join([d["headline"], *d["sentences"]]))
        path = report.write(data, args.output or Path(args.run) / "report.html", against=against)
    print(f"wrote {path} ({path.stat().st_size / 1e6:.1f} MB); open it in a browser (it fetches nothing)")
    return 0


def cmd_replay_check(args: argparse.Namespace) -> int:
    """Replay the release's document judgments through compare + score; compare with data/results/."""
    import pandas as pd

    from gavel.paper import replay as release_replay

    from .release import load_release

    out = release_replay.replay_check(load_release(args.release), args.workdir,
                                      config.RESULTS_DIR / "document_s_checklist.csv")
    cols = ["subject", "s_checklist", "committed", "difference", "listed_cells", "left_after_listed_cells", "reproduced"]
    with pd.option_context("display.width", 200, "display.max_colwidth", 120):
        print(out["table"][cols].to_string(index=False))
        print("\nrequests with no recorded answer:")
        print(out["missing"].to_string())
        print("\ncells that differ, by reason:")
        print(out["cells"]["reason"].value_counts().to_string())
    return 0 if out["table"]["reproduced"].all() else 1


def cmd_items(args: argparse.Namespace) -> int:
    """The checklist: number, key and name of each item (as the annotation app shows them), by group; any of
    the spellings is accepted wherever an item is named (``--items``, configurations)."""
    from gavel.core import items as gitems

    width = max(len(it.key) for it in gitems.ITEMS)
    for g in gitems.GROUPS:
        print(f"{g.label}:")
        for it in gitems.items_in_group(g.key):
            print(f"  {it.number:2d}  {it.key:<{width}}  {it.name}")
            if args.definitions:
                print(f"      {it.definition}")
    return 0


def cmd_demo(args: argparse.Namespace) -> int:
    """A real local model answering through the stage runner (gavel/runs/demo.py)."""
    from gavel.runs import demo

    return demo.main()


class OneLineParser(argparse.ArgumentParser):
    """argparse's own refusals (a bad option value, a missing argument) as one ``error:`` line with exit
    status 2, like every other error of gavel's; subcommands' parsers are of this class too."""

    def error(self, message: str):
        self.exit(2, f"error: {self.prog}: {message} ({self.prog} --help lists the options)\n")


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    parser = OneLineParser(prog="gavel", description=__doc__)
    parser.add_argument("--traceback", action="store_true", help="show the traceback of every error")
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("data", help="find the release, or clone it into data/external/gavel")
    p.add_argument("--timeout", type=options.positive_int, default=600)
    p.set_defaults(func=cmd_data)
    p = sub.add_parser("audit", help="print every defect of the release")
    p.add_argument("--release", default=None, help="release folder (default: GAVEL_RELEASE)")
    p.add_argument("--csv", default=None, help="also write the audit table to this CSV file")
    p.set_defaults(func=cmd_audit)
    p = sub.add_parser("results", help="recompute data/results/ and docs/REPRODUCTION.md from the release")
    p.add_argument("--release", default=None, help="release folder (default: GAVEL_RELEASE)")
    p.add_argument("--out", default=None, help="write the tables and REPRODUCTION.md into this folder instead "
                                               "of data/results/ and docs/")
    p.set_defaults(func=cmd_results)
    p = sub.add_parser("stage", help="run one LLM stage's requests (JSONL) through a provider, resumably")
    p.add_argument("--requests", required=True, help="JSONL file of requests (gavel.llm.records.write_requests)")
    p.add_argument("--provider", required=True, choices=STAGE_PROVIDERS,
                   help="vllm: a running server (--base-url); vllm-batch: `vllm run-batch` on this machine")
    p.add_argument("--vllm-command", default="vllm run-batch", help="run-batch command for --provider vllm-batch")
    p.add_argument("--base-url", default=None, help="provider endpoint (a vLLM server, a proxy, a fake)")
    p.add_argument("--gguf", default=None, help="--provider local: serve this GGUF file instead of the packaged model")
    p.add_argument("--workdir", default=None, help="cache, state and manifest folder (default data/interim/runs/STAGE)")
    p.add_argument("--stage", default=None)
    p.add_argument("--shard", type=shards.option, default=None, help="I/N: only the requests of shard I of N (by case "
                   "id), state in WORKDIR/shards/I-of-N, answers in WORKDIR/cache (a task of `gavel stage-array`)")
    p.add_argument("--served-as", default=None, help="vllm: the name the server answers under in the cache key "
                   "instead of its address (the servers of a `gavel stage-array` job)")
    documents_cli.add_checklist_option(p)
    p.add_argument("--mode", default="batch", choices=["batch", "online"])
    p.add_argument("--dry-run", action="store_true", help="print requests, tokens and estimated cost; send nothing")
    p.add_argument("--allow-unserved", action="store_true",
                   help="dry run: price a model the provider does not serve (with a warning) instead of refusing")
    p.add_argument("--slurm-job", default=None,
                   help="the SLURM job this stage runs in (vLLM on your GPUs): its elapsed time goes into cost.csv, "
                        "priced by the price table's gpu_hour_usd ('local': not in a job, nothing added)")
    p.add_argument("--poll-interval", type=options.positive_float, default=30.0)
    p.add_argument("--concurrency", type=options.positive_int, default=8)
    p.add_argument("--max-attempts", type=options.positive_int, default=3)
    p.add_argument("--lock-timeout", type=options.non_negative_float, default=60.0,
                   help="seconds to wait for another runner using the same workdir before giving up")
    p.set_defaults(func=cmd_stage)
    p = sub.add_parser("evaluate", help="GAVEL-REF scores for summaries in files (extract, compare, residual, style)")
    p.add_argument("--summaries", required=True, nargs="+", action="extend",
                   help="the release's summary file, a {case_id: text} JSON, JSONL, or inspect .eval logs (a file or a folder; repeatable)")
    p.add_argument("--name", default=None, help="whose summaries (default: the file name, or JSONL's model)")
    p.add_argument("--references", default=None, help="reference summaries file (default: the release's)")
    p.add_argument("--release", default=None, help="release folder (default: GAVEL_RELEASE)")
    p.add_argument("--provider", required=True, choices=EVALUATE_PROVIDERS,
                   help="mock: the stand-in model (no model, scores mean nothing); vllm: a server at --base-url")
    p.add_argument("--mock-judge", type=options.judge_spec, default=None, metavar="SPEC",
                   help="--provider mock: 'noisy:seed=S,flip=F,first_bias=P,a_bias=Q', a seeded noisy, order-biased "
                        "judge (default: none, every repeat and order answers alike; docs/orders.md)")
    p.add_argument("--base-url", default=None)
    p.add_argument("--gguf", default=None,
                   help="--provider local: serve this GGUF file instead of the packaged model (its settings stay "
                        "the packaged model's; its answers are cached apart, by the file's content)")
    p.add_argument("--extractor", default=None, help="registry model extracting checklists (default: models.yaml roles)")
    p.add_argument("--judge", default=None, help="registry model comparing and rating (default: models.yaml roles)")
    p.add_argument("--items", nargs="*", default=None, help="item names (default: every item of the checklist)")
    documents_cli.add_checklist_option(p)
    p.add_argument("--alpha", type=options.fraction, default=0.9)
    p.add_argument("--seed", type=options.seed, default=0)
    p.add_argument("--mode", default="online", choices=["batch", "online"])
    p.add_argument("--max-tokens", type=options.positive_int, default=None,
                   help="output cap of every request (default: the model's; --provider local: its measured cap per stage)")
    p.add_argument("--group-size", type=options.non_negative_int, default=1000, metavar="N",
                   help="more than N summaries: case groups of about N, one after another (flat memory; 0: one group)")
    p.add_argument("--repeats", type=options.positive_int, default=1,
                   help="run the LLM stages N times with distinct seeds (or cache namespaces) and write the stability "
                        "report (stability*.csv); 1 (default) is a single run with today's cache keys")
    p.add_argument("--orders", default="one", choices=["one", "both"],
                   help="both: ask the judge every compared pair again with the sides swapped and write the order "
                        "report (order*.csv, docs/orders.md); one (default) is today's run")
    p.add_argument("--label-orders", type=int, default=1, choices=[1, 2, 4],
                   help="K > 1: ask every single-value pair with the relation options in K balanced orders (rows of a "
                        "Latin square) and write the label-order report (label_order*.csv, docs/orders.md); 1 "
                        "(default) is today's run")
    p.add_argument("--dry-run", action="store_true", help="print requests, tokens and estimated cost; send nothing")
    p.add_argument("--allow-unserved", action="store_true",
                   help="dry run: price a model the provider does not serve (with a warning) instead of refusing")
    p.add_argument("--usage-from", action="append", default=[], metavar="RUN",
                   help="dry run: an earlier run's folder or cost.csv whose measured usage gives a reasoning model's "
                        "central estimate (repeatable; docs/cost.md)")
    p.add_argument("--out", required=True, help="folder for the tables and the runs' caches")
    shards.add_option(p)
    p.set_defaults(func=lambda args: _sharding().run_shard(cmd_evaluate, args))
    evaluate_parser, p = p, sub.add_parser("merge", help="join the N shard folders of `gavel evaluate --shard I/N` into one run folder")
    p.add_argument("shards", nargs="+", help="the shard folders (the --out of each `gavel evaluate --shard I/N`)")
    p.add_argument("--out", required=True, help="the merged run folder (new or empty)")
    p.set_defaults(func=lambda args: _sharding().merge(args.shards, args.out, cmd_evaluate, evaluate_parser))
    p = sub.add_parser("report", help="one self-contained HTML file showing a run (or the release, or what "
                                      "changed between two runs)")
    p.add_argument("run", nargs="?", default=None, help="an evaluation folder (the --out of `gavel evaluate`)")
    p.add_argument("--against", default=None, metavar="RUN_B",
                   help="a baseline evaluation folder of the same summaries: list what changed from it, cell by cell")
    p.add_argument("--release", action="store_true", help="the paper's 12 models from the release (GAVEL_RELEASE)")
    p.add_argument("-o", "--output", default=None, help="the HTML file (default: RUN/report.html, or release.html)")
    p.set_defaults(func=cmd_report)
    p = sub.add_parser("replay-check", help="replay the release's document judgments through compare + score")
    p.add_argument("--release", default=None)
    p.add_argument("--workdir", default=str(config.INTERIM_DIR / "replay"), help="cache folder of the replayed run")
    p.set_defaults(func=cmd_replay_check)
    p = sub.add_parser("items", help="list the checklist items: number, key, name, by group")
    p.add_argument("--definitions", action="store_true", help="also print what each item holds")
    p.set_defaults(func=cmd_items)
    p = sub.add_parser("demo", help="send a free-text and a JSON request to the local model (make demo)")
    p.set_defaults(func=cmd_demo)
    # the wings add their own commands to the same parser
    documents_cli.add_parser(sub)
    annotation_cli.add_parser(sub)
    p = sub.add_parser("plan", help="before paying: the cases x repeats x orders a difference between two models "
                                    "needs, and their price (docs/plan.md)")
    source = p.add_mutually_exclusive_group(required=True)
    source.add_argument("--pilot", metavar="RUN", help="a run folder: its cells' variances, its ledger's costs")
    source.add_argument("--release", action="store_true", help="the release's case scores (one cell a case)")
    p.add_argument("--pair", nargs=2, action="append", metavar=("MODEL_A", "MODEL_B"),
                   help="a pair to compare (repeatable: the family Holm adjusts over); default: every pair")
    p.add_argument("--difference", type=options.positive_float, help="the smallest difference worth detecting")
    p.add_argument("--cases", type=options.positive_int, help="instead: what N cases detect")
    p.add_argument("--alpha", type=options.fraction, default=0.05)
    p.add_argument("--power", type=options.fraction, default=0.8)
    p.add_argument("--repeats", type=options.positive_int, nargs="+", default=[1, 2, 3])
    p.add_argument("--orders", type=int, nargs="+", choices=[1, 2], default=[1, 2])
    p.add_argument("--mode", default="batch", choices=["batch", "online"])
    p.add_argument("--cost-from", metavar="RUN", help="price from this run's ledger (default: the pilot's)")
    p.add_argument("--price-as", metavar="MODEL", help="price every stage of the ledger as this registry model")
    for flag in ("--provider", "--extractor", "--judge"):  # --release: the dry run that prices its summaries
        p.add_argument(flag, help="--release without --cost-from: the dry run's (docs/plan.md)")
    p.set_defaults(func=cmd_plan)
    slurm_cli.add_parser(sub)
    packs.add_parser(sub)
    interop_cli.add_parser(sub)
    args = parser.parse_args(argv)
    label = " ".join(str(x) for x in (args.command, getattr(args, "documents_command", None),
                                      getattr(args, "cmd", None)) if x)
    return one_line_errors(label, lambda: args.func(args), traceback=args.traceback)


if __name__ == "__main__":
    sys.exit(main())
