"""``python -m gavel documents ...``: the release checks and the four extraction methods from the shell.

    python -m gavel documents replay                 # released agent ledgers -> checklist.json, how many match
    python -m gavel documents patterns --tokens 128000  # released regex patterns through the search tool
    python -m gavel documents chunk-check            # chunking over every summary and checklist text
    python -m gavel documents agent CORPUS --config grouped --provider vllm --model NAME --out DIR
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

from gavel.core import config, options
from gavel.core.items import load as load_checklist
from gavel.core.spreadsheet import write_csv

from .chunking import CHUNK_TOKENS


def cmd_replay(args) -> int:
    from gavel.core.config import release_root

    from .store import replay_release, replay_report

    t0 = time.perf_counter()
    results = replay_release(release_root(args.release))
    print(replay_report(results))
    print(f"({time.perf_counter() - t0:.1f} s)")
    ok = sum(r.reproduced for r in results)
    return 0 if ok / max(len(results), 1) >= 0.99 else 1


def cmd_patterns(args) -> int:
    from gavel.core.config import release_root

    from .corpus import large_corpus
    from .tools import check_patterns, release_patterns

    root = release_root(args.release)
    patterns = release_patterns(root)[: args.limit or None]
    corpus = large_corpus(root, args.tokens)
    print(f"{len(patterns)} distinct (pattern, flags) from the released ledgers; corpus: {len(corpus.documents)} "
          f"release summaries, {corpus.total_tokens:,} tokens; time limit {args.timeout:g} s per search")
    t0 = time.perf_counter()
    check = check_patterns(corpus, patterns, args.timeout)
    print(f"answered with matches or none: {check.completed}; refused at once (validation / compile): "
          f"{check.refused} {check.refusal_reasons}; stopped at the time limit with an error: "
          f"{len(check.timed_out)}")
    print(f"slowest call: {check.slowest_s:.3f} s ({check.slowest_pattern[:80]!r}); total {time.perf_counter() - t0:.0f} s")
    for pattern, flags in check.timed_out:
        print(f"  time limit: {pattern[:100]!r} {flags}")
    return 0


def cmd_chunk_check(args) -> int:
    from gavel.core.config import release_root

    from .chunking import check_release

    bad = 0
    for c in check_release(release_root(args.release), tuple(args.sizes)):
        print(f"chunk size {c.max_tokens}: {c.texts} texts, {c.chunks} chunks, {c.multi_chunk_texts} texts cut, "
              f"longest text {c.longest_text_tokens} tokens, largest chunk {c.largest_chunk_tokens} tokens, "
              f"failures {len(c.failures)}")
        for source, what in c.failures[:20]:
            print(f"  {source}: {what}")
        bad += len(c.failures)
    return 1 if bad else 0


def provider_from_args(args):
    from ..llm.providers import get_provider

    kwargs = {"base_url": args.base_url} if args.base_url else {}
    return get_provider(args.provider, **kwargs)


def local_pace(args, provider, say):
    """With ``--provider local``: a ``gavel.llm.pace.Announcer`` (on first need it measures the server's
    speed and prints ``say(speed)``, the run's expected duration); None for every other provider."""
    if args.provider != "local":
        return None
    from ..llm.pace import Announcer

    return Announcer(provider, args.model, say)


def _params(args) -> dict:
    """The requests' params the command line sets: ``--max-tokens`` (else each stage's own cap)."""
    return {"max_tokens": args.max_tokens} if args.max_tokens else {}


def load_case(args):
    """The case a command runs on (a folder or a full_case_data file); CorpusError when it holds no text."""
    from . import corpus as corpus_mod

    corpus = corpus_mod.load(args.corpus, args.case_id)
    if corpus.total_tokens == 0:
        raise corpus_mod.CorpusError(f"{args.corpus}: case {corpus.case_id}: its {len(corpus.documents)} "
                                     f"document(s) hold no text; nothing to run")
    return corpus


def _max_steps(args) -> int:
    """--max-steps, or the agent's default (the agent is imported only by the commands that run it)."""
    from .agent import MAX_STEPS

    return MAX_STEPS if args.max_steps is None else args.max_steps


def cmd_agent(args) -> int:
    from . import configs, pacing
    from .agent import run_agent

    args.max_steps = _max_steps(args)

    corpus = load_case(args)
    provider = provider_from_args(args)
    runs = []
    chosen = configs.resolve(args.config, args.checklist)
    speed = local_pace(args, provider, pacing.agent_say(corpus, chosen, args.model, args.max_steps, _params(args),
                                                        tool_mode=args.tool_mode))
    for cfg in chosen:
        out = Path(args.out) / args.model / corpus.case_id / cfg.path
        if speed is not None:
            print(f"agent {cfg.path}:", flush=True)
        res = run_agent(corpus, cfg, provider, args.model, out, max_steps=args.max_steps, resume=not args.fresh,
                        tool_mode=args.tool_mode, pace=speed, params=_params(args))
        runs.append(out / "llm")
        print(json.dumps({"run": str(out), "end": res.end_reason, "steps": res.steps, "llm_calls": res.llm_calls,
                          "resumed": res.resumed}))
    print(cost_line(runs), file=sys.stderr)  # stdout stays one JSON line per run
    return 0


def run_folder(args, corpus, checklist) -> Path:
    """OUT/MODEL/CASE for the default checklist (as before), OUT/MODEL/CASE/CHECKLIST for another."""
    out = Path(args.out) / args.model / corpus.case_id
    return out if checklist.is_default else out / checklist.name


def cost_line(folders: list[Path]) -> str:
    """The closing line of a documents command: the ledgers (cost.csv) of its runs in one."""
    from ..llm import ledger

    where = folders[0] / "cost.csv" if len(folders) == 1 else f"cost.csv in each of {len(folders)} runs' llm/ folders"
    return ledger.closing_line(ledger.read(folders), where)


def _write_rows(path: Path, rows: list[dict]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    # a lone surrogate (model output) can only stand inside a JSON string: written as its \\uXXXX escape
    path.write_bytes("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows).encode("utf-8",
                                                                                        "backslashreplace"))


def cmd_end_to_end(args) -> int:
    from ..llm.runner import StageRunner
    from . import end_to_end, pacing

    checklist = load_checklist(args.checklist)
    corpus = load_case(args)
    built = end_to_end.build_requests(corpus, args.model, items=args.items or None, checklist=checklist,
                                      params=_params(args))
    out = run_folder(args, corpus, checklist)
    runner = StageRunner(end_to_end.STAGE, provider_from_args(args), out / "llm", namespace=checklist.cache_tag)
    t = built.truncation
    print(f"case {corpus.case_id}: {len(built.requests)} requests; documents {sum(t.original_tokens):,} tokens, "
          f"kept {sum(t.kept_tokens):,} (budget {built.budget:,})")
    if args.dry_run:
        runner.dry_run(built.requests, mode=args.mode)
        return 0
    todo = [r for r in built.requests if not runner.is_cached(r)]
    speed = local_pace(args, runner.provider, pacing.requests_say(todo))
    if speed is not None and todo:  # the speed measured now, the duration said; then the runner's progress bar
        speed()
    report = runner.run(built.requests, mode=args.mode)
    rows, problems = [], []
    for r in built.requests:
        resp = report.responses[r.custom_id]
        if not resp.ok:
            problems.append(f"item {r.item}: call failed: {resp.error}")
            continue
        got, issues = end_to_end.parse(resp.text, corpus, r.item)
        rows += got
        problems += issues
    _write_rows(out / "rows.jsonl", rows)
    (out / "problems.txt").write_text("".join(p + "\n" for p in problems), encoding="utf-8")
    print(f"{len(rows)} values -> {out / 'rows.jsonl'}; {len(problems)} problems -> {out / 'problems.txt'}")
    print(cost_line([out / "llm"]))
    return 1 if report.failed else 0


def _piecewise(args, say, run):
    """The run of a method over the case's pieces (chunked, three-pass): the checklist, the case, its folder,
    with ``--provider local`` the forecast ``say(...)`` gives, then ``run(...)``'s result; both get the same
    settings from the command line."""
    checklist = load_checklist(args.checklist)
    corpus = load_case(args)
    out = run_folder(args, corpus, checklist)
    provider = provider_from_args(args)
    settings = {"items": args.items or None, "max_tokens": args.chunk_tokens, "checklist": checklist,
                "params": _params(args)}
    speed = local_pace(args, provider, say(corpus, args.model, **settings))
    return checklist, corpus, out, run(corpus, provider, args.model, workdir=out / "llm", pace=speed, **settings)


def cmd_chunked(args) -> int:
    from . import chunked, pacing

    checklist, corpus, out, res = _piecewise(args, pacing.chunked_say, chunked.run_chunked)
    _write_rows(out / "rows.jsonl", res.value_rows(corpus.case_id))
    _write_rows(out / "merge_log.jsonl", res.log)
    (out / "token_stats.json").write_text(json.dumps({"by_item_case": res.token_stats}, indent=1), encoding="utf-8")
    errors = sum(1 for e in res.log if "error" in e)
    print(f"{sum(len(v) for v in res.states.values())} values -> {out / 'rows.jsonl'}; {errors} pieces not "
          f"merged (see merge_log.jsonl)")
    print(cost_line([out / "llm"]))
    return 0


def cmd_three_pass(args) -> int:
    from . import pacing, three_pass

    checklist, corpus, out, res = _piecewise(args, pacing.three_pass_say, three_pass.run_three_pass)
    _write_rows(out / "rows.jsonl", res.value_rows(corpus.case_id, checklist))
    _write_rows(out / "log.jsonl", res.log)
    (out / "token_stats.json").write_text(json.dumps({"checklist": checklist.name, "by_case": res.token_stats},
                                                     indent=1), encoding="utf-8")
    counts = {a: len(res.actions(a)) for a in ("merged", "restored", "removed", "dropped_evidence", "dropped_value",
                                                "reworded", "rewording_refused")}
    print(f"{sum(len(v) for v in res.values.values())} values -> {out / 'rows.jsonl'}; "
          + ", ".join(f"{n} {a.replace('_', ' ')}" for a, n in counts.items()) + f" (reasons in {out / 'log.jsonl'})")
    print(cost_line([out / "llm" / p for p in three_pass.PASSES]))
    return 0


def cmd_collect(args) -> int:
    """Value rows and per-case tokens of agent runs (ours or the release's), for the compare stage."""
    from .agent import collect_runs, tokens_per_case

    values, tokens = collect_runs(args.root)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    values.to_json(out / "agent_values.jsonl", orient="records", lines=True, force_ascii=False)
    write_csv(tokens, out / "agent_run_tokens.csv")
    per_case = tokens_per_case(tokens)
    write_csv(per_case, out / "agent_tokens_per_case.csv")
    summary = per_case.groupby(["model", "configuration"])[["input_tokens", "output_tokens", "total_tokens"]].mean()
    print(f"{len(tokens)} runs, {len(values)} values -> {out}")
    print((summary / 1e6).round(3).rename(columns=lambda c: c + " (M/case)").to_string())
    return 0


def cmd_evaluate(args) -> int:
    """S_checklist of one run's value rows against the human reference (compare + score stages)."""
    from gavel.core.config import release_root

    from . import evaluate

    checklist = load_checklist(args.checklist)
    values = evaluate.read_value_rows(args.values, checklist)
    for col, want in (("model", args.model_filter), ("configuration", args.configuration)):
        if want and col in values:
            values = values[values[col] == want]
    refs = (evaluate.read_references(args.references, checklist) if args.references
            else evaluate.human_references(release_root(args.release), checklist))
    pair_list = evaluate.pairs(values, args.subject, refs, checklist=checklist)
    if not pair_list:
        print(f"error: no value rows for any reference case ({args.references or 'human.json'})", file=sys.stderr)
        return 2
    provider = provider_from_args(args)
    speed = local_pace(argparse.Namespace(provider=args.provider, model=args.judge), provider,
                       lambda _: f"judge {args.judge}; the compare stage's forecast follows")
    res = evaluate.evaluate(pair_list, provider, args.judge, args.out, seed=args.seed, checklist=checklist,
                            max_tokens=args.max_tokens, progress=speed is not None, pace=speed)
    out = Path(args.out)
    marks = evaluate.reworded(values, checklist)  # three-pass values a merge or prune reworded, marked per row
    res["rows"]["reworded"] = ["; ".join(marks.get((str(c), k), [])) for c, k in zip(res["rows"]["case_id"],
                                                                                   res["rows"]["item"])]
    if marks:
        print(f"{sum(map(len, marks.values()))} values reworded by a merge or prune (their earlier text in "
              f"compare_rows.csv's reworded column)")
    write_csv(res["rows"], out / "compare_rows.csv")
    write_csv(res["per_case"], out / "s_checklist_per_case.csv")
    write_csv(res["per_run"], out / "s_checklist.csv")
    print(res["per_run"].to_string(index=False))
    return 0


def write_agent_tasks(corpora: list[str], configs_spec: str, path: Path, case_ids=None, checklist=None) -> int:
    """The tasks file of the agent job array: one line per (case, configuration run)."""
    from . import configs
    from . import corpus as corpus_mod

    lines = []
    for src in corpora:
        src_path = Path(src)
        if src_path.is_dir() and not (src_path / "metadata.json").exists() and not list(src_path.glob("*.txt")):
            cases = [(str(p), "") for p in sorted(src_path.iterdir()) if p.is_dir()]  # a folder of case folders
        elif src_path.is_dir():
            cases = [(str(src_path), "")]
        else:
            cases = [(str(src_path), c.case_id) for c in corpus_mod.load_full_case_data(src_path, case_ids)]
        for corpus_path, case_id in cases:
            lines += [f"{Path(corpus_path).resolve()}\t{case_id}\t{cfg.path if cfg.kind != 'custom' else configs_spec}"
                      for cfg in configs.resolve(configs_spec, checklist)]
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    return len(lines)


def unfinished_tasks(tasks: Path, runs: Path, max_steps: int) -> tuple[int, int]:
    """Keep in the tasks file only the runs that have not ended (a rerun of `agent-array` submits only what is
    missing; a task resumes its run from state.json): a run under ``runs/CASE/CONFIG`` ended when its
    ``state.json`` says it stopped, or used ``max_steps``. Returns (tasks kept, tasks left out)."""
    from .corpus import load_folder

    keep, done = [], 0
    for line in tasks.read_text(encoding="utf-8").splitlines():
        corpus, case_id, cfg = line.split("\t")
        state = runs / (case_id or load_folder(corpus).case_id) / cfg / "state.json"
        try:
            rec = json.loads(state.read_text(encoding="utf-8"))
            ended = rec.get("ended") == "stop" or (rec.get("ended") == "max_steps" and rec.get("step", 0) >= max_steps)
        except (OSError, ValueError, AttributeError):  # no run yet, or one that cannot be read: it runs
            ended = False
        if ended:
            done += 1
        else:
            keep.append(line)
    tasks.write_text("".join(x + "\n" for x in keep), encoding="utf-8")
    return len(keep), done


def cmd_agent_array(args) -> int:
    import sys as _sys
    from string import Template

    from gavel.core import config
    from gavel.core.config import REPO_ROOT

    out_dir = Path(args.script).resolve().parent
    tasks = out_dir / "agent_tasks.tsv"
    total = write_agent_tasks(args.corpus, args.config, tasks, args.case_id, args.checklist)
    n, done = unfinished_tasks(tasks, Path(args.out) / args.model, _max_steps(args))
    if not n:
        print(f"all {total} agent runs under {Path(args.out) / args.model} have ended; nothing to submit")
        return 0
    checklist = load_checklist(args.checklist)
    directives = [f"#SBATCH --partition={args.partition}"] if args.partition else []
    script = Template((config.SLURM_DIR / "agent_array.sbatch.in").read_text()).substitute(
        job_name=f"gavel-agent-{args.model}"[:60], log_dir=str((out_dir / "logs").resolve()),
        time_limit=args.time_limit, cpus=args.cpus, n_tasks=n, max_parallel=args.max_parallel,
        optional_directives="\n".join(directives), repo_dir=str(REPO_ROOT), tasks=str(tasks),
        python=args.python or _sys.executable, provider=args.provider,
        base_url_arg=f"--base-url {args.base_url}" if args.base_url else "", model=args.model,
        out=str(Path(args.out).resolve()), max_steps=_max_steps(args),
        checklist_arg="" if checklist.is_default else f"--checklist {checklist.source}")
    (out_dir / "logs").mkdir(parents=True, exist_ok=True)
    Path(args.script).write_text(script, encoding="utf-8")
    print(f"wrote {args.script} ({n} array tasks, listed in {tasks}"
          + (f"; {done} of {total} runs have ended and are left out" if done else "")
          + f"); submit with: sbatch {args.script}")
    return 0


def add_checklist_option(q) -> None:
    """``--checklist NAME|FILE`` (the same on ``evaluate``, ``stage`` and ``annotate``)."""
    q.add_argument("--checklist", default=None,
                   help="a packaged checklist's name or a checklist file (docs/checklists.md); default: legal")


def add_max_tokens_option(q) -> None:
    """``--max-tokens N``: one output cap for every request of the method."""
    q.add_argument("--max-tokens", type=options.positive_int, default=None,
                   help="output cap of every request (default: each stage's own: a local model's measured caps, "
                        "else the model's)")


def add_parser(sub) -> None:
    p = sub.add_parser("documents", help="checklists from case documents: release checks and the four methods")
    dsub = p.add_subparsers(dest="documents_command", required=True)
    q = dsub.add_parser("replay", help="replay every released agent ledger through the agent's store")
    q.add_argument("--release", default=None)
    q.set_defaults(func=cmd_replay)
    q = dsub.add_parser("patterns", help="run the released regex patterns through the search tool")
    q.add_argument("--release", default=None)
    q.add_argument("--tokens", type=options.positive_int, default=128_000, help="size of the real-text corpus (release summaries)")
    q.add_argument("--timeout", type=options.positive_float, default=2.0, help="time limit per search, seconds")
    q.add_argument("--limit", type=options.non_negative_int, default=0, help="only the first N patterns (0: all)")
    q.set_defaults(func=cmd_patterns)
    q = dsub.add_parser("chunk-check", help="chunk every summary and checklist text of the release")
    q.add_argument("--release", default=None)
    q.add_argument("--sizes", type=options.positive_int, nargs="+", default=[CHUNK_TOKENS, 256])
    q.set_defaults(func=cmd_chunk_check)
    q = dsub.add_parser("agent", help="run the Gavel-Agent on one case")
    q.add_argument("corpus", help="a case folder, or a full_case_data JSON file (with --case-id)")
    q.add_argument("--case-id", default=None)
    q.add_argument("--config", default="all", help="all | grouped | individual | grouped/03_judge_info | a YAML file")
    q.add_argument("--provider", required=True, help="openai, anthropic, gemini, vllm, local, mock")
    q.add_argument("--base-url", default=None)
    q.add_argument("--model", required=True, help="registry name (gavel/core/models.yaml)")
    q.add_argument("--out", default=str(config.INTERIM_DIR / "agent"), help="output root: OUT/MODEL/CASE/KIND/NAME/")
    q.add_argument("--max-steps", type=options.positive_int, default=None,
                   help="most steps per run (default: the agent's MAX_STEPS)")
    q.add_argument("--fresh", action="store_true", help="start over instead of resuming a saved run")
    add_checklist_option(q)
    add_max_tokens_option(q)
    q.add_argument("--tool-mode", default="json", choices=["json", "native"],
                   help="json: actions as JSON text (any model); native: the server's tool-call API (vLLM)")
    q.set_defaults(func=cmd_agent)
    for name, func, helptext in (("end-to-end", cmd_end_to_end, "end-to-end extraction, one request per item"),
                                 ("chunked", cmd_chunked, "chunk-by-chunk extraction"),
                                 ("three-pass", cmd_three_pass, "three passes: per-chunk recall, merge tree, prune")):
        q = dsub.add_parser(name, help=helptext)
        q.add_argument("corpus", help="a case folder, or a full_case_data JSON file (with --case-id)")
        q.add_argument("--case-id", default=None)
        q.add_argument("--items", nargs="*", default=None, help="item names or keys (default: every item)")
        add_checklist_option(q)
        q.add_argument("--provider", required=True)
        q.add_argument("--base-url", default=None)
        q.add_argument("--model", required=True)
        q.add_argument("--out", default=str(config.INTERIM_DIR / name.replace('-', '_')))
        add_max_tokens_option(q)
        if name == "end-to-end":
            q.add_argument("--mode", default="batch", choices=["batch", "online"])
            q.add_argument("--dry-run", action="store_true")
        else:
            q.add_argument("--chunk-tokens", type=options.positive_int, default=None,
                           help=f"piece size in tokens (default: {CHUNK_TOKENS:,}, or half of what a smaller model's "
                                f"context window leaves after the output cap)")
        q.set_defaults(func=func)
    q = dsub.add_parser("collect", help="value rows and token tables of agent runs (MODEL/CASE/KIND/NAME folders)")
    q.add_argument("root", help="our --out folder, or the release's document_checklists/gavel_agent")
    q.add_argument("--out", default=str(config.INTERIM_DIR / "agent_collected"))
    q.set_defaults(func=cmd_collect)
    q = dsub.add_parser("evaluate", help="S_checklist of value rows against human.json (compare + score stages)")
    q.add_argument("values", nargs="+", help="value-row JSONL files (documents collect / end-to-end / chunked)")
    q.add_argument("--subject", required=True, help="name of the run in the tables, e.g. agent/MODEL/individual")
    q.add_argument("--model-filter", default=None, help="keep rows of this model only (collect output)")
    q.add_argument("--configuration", default=None, help="keep rows of this configuration only (collect output)")
    q.add_argument("--provider", required=True)
    q.add_argument("--base-url", default=None)
    q.add_argument("--judge", default="gemma-3-27b-it", help="registry model of the compare stage")
    q.add_argument("--seed", type=options.seed, default=0)
    q.add_argument("--release", default=None)
    q.add_argument("--references", default=None,
                   help="the reference values (human.json-shaped JSON, or value-row JSONL); default: the release's "
                        "human.json (legal checklist only)")
    add_checklist_option(q)
    add_max_tokens_option(q)
    q.add_argument("--out", required=True)
    q.set_defaults(func=cmd_evaluate)
    q = dsub.add_parser("agent-array", help="write a SLURM job array script: one task per case x configuration")
    q.add_argument("corpus", nargs="+", help="case folders, folders of case folders, or full_case_data JSON files")
    q.add_argument("--case-id", nargs="*", default=None, help="only these cases of the JSON files")
    q.add_argument("--config", default="individual")
    q.add_argument("--provider", required=True)
    q.add_argument("--base-url", default=None)
    q.add_argument("--model", required=True)
    q.add_argument("--out", default=str(config.INTERIM_DIR / "agent"))
    q.add_argument("--max-steps", type=options.positive_int, default=None,
                   help="most steps per run (default: the agent's MAX_STEPS)")
    q.add_argument("--script", default=str(config.INTERIM_DIR / "agent" / "agent_array.sbatch"))
    q.add_argument("--time-limit", default="04:00:00")
    q.add_argument("--cpus", type=options.positive_int, default=2)
    q.add_argument("--max-parallel", type=options.positive_int, default=32)
    add_checklist_option(q)
    q.add_argument("--partition", default=None)
    q.add_argument("--python", default=None)
    q.set_defaults(func=cmd_agent_array)

