"""``python -m gavel documents ...``: the release checks and the three extraction methods from the shell.

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


def cmd_replay(args) -> int:
    from ..config import release_root
    from .checklist import replay_release, replay_report

    t0 = time.perf_counter()
    results = replay_release(release_root(args.release))
    print(replay_report(results))
    print(f"({time.perf_counter() - t0:.1f} s)")
    ok = sum(r.reproduced for r in results)
    return 0 if ok / max(len(results), 1) >= 0.99 else 1


def cmd_patterns(args) -> int:
    from ..config import release_root
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
    from ..config import release_root
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


def cmd_agent(args) -> int:
    from . import configs, corpus as corpus_mod
    from .agent import run_agent

    corpus = corpus_mod.load(args.corpus, args.case_id)
    provider = provider_from_args(args)
    for cfg in configs.resolve(args.config):
        out = Path(args.out) / args.model / corpus.case_id / cfg.path
        res = run_agent(corpus, cfg, provider, args.model, out, max_steps=args.max_steps, resume=not args.fresh)
        print(json.dumps({"run": str(out), "end": res.end_reason, "steps": res.steps, "llm_calls": res.llm_calls,
                          "resumed": res.resumed}))
    return 0


def add_parser(sub) -> None:
    p = sub.add_parser("documents", help="checklists from case documents: release checks and the three methods")
    dsub = p.add_subparsers(dest="documents_command", required=True)
    q = dsub.add_parser("replay", help="replay every released agent ledger through our checklist store")
    q.add_argument("--release", default=None)
    q.set_defaults(func=cmd_replay)
    q = dsub.add_parser("patterns", help="run the released regex patterns through the search tool")
    q.add_argument("--release", default=None)
    q.add_argument("--tokens", type=int, default=128_000, help="size of the real-text corpus (release summaries)")
    q.add_argument("--timeout", type=float, default=2.0, help="time limit per search, seconds")
    q.add_argument("--limit", type=int, default=0, help="only the first N patterns (0: all)")
    q.set_defaults(func=cmd_patterns)
    q = dsub.add_parser("chunk-check", help="chunk every summary and checklist text of the release")
    q.add_argument("--release", default=None)
    q.add_argument("--sizes", type=int, nargs="+", default=[16_000, 256])
    q.set_defaults(func=cmd_chunk_check)
    q = dsub.add_parser("agent", help="run the Gavel-Agent on one case")
    q.add_argument("corpus", help="a case folder, or a full_case_data JSON file (with --case-id)")
    q.add_argument("--case-id", default=None)
    q.add_argument("--config", default="all", help="all | grouped | individual | grouped/03_judge_info | a YAML file")
    q.add_argument("--provider", required=True, help="openai, anthropic, gemini, vllm, local, mock")
    q.add_argument("--base-url", default=None)
    q.add_argument("--model", required=True, help="registry name (gavel/models.yaml)")
    q.add_argument("--out", default="data/interim/agent", help="output root: OUT/MODEL/CASE/KIND/NAME/")
    q.add_argument("--max-steps", type=int, default=100)
    q.add_argument("--fresh", action="store_true", help="start over instead of resuming a saved run")
    q.set_defaults(func=cmd_agent)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(prog="gavel-documents")
    add_parser(parser.add_subparsers(dest="command", required=True))
    a = parser.parse_args()
    sys.exit(a.func(a))
