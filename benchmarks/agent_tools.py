"""Gavel-Agent tool costs per call on ~512K tokens of real release text (the summaries of benchmark cases,
one document per summary), in one run. Needs the release (GAVEL_RELEASE).

    .venv/bin/python benchmarks/agent_tools.py [TARGET_TOKENS]

search   : search_document_regex over all documents, top_k 20, 200 context tokens (patterns of the kind the
           released ledgers use) vs. a bare ``re.finditer`` over the same documents collecting every match
           span (target <= 2x); also vs. a bare ``regex.finditer`` (the engine the tool uses, for its timeout),
           which is often much faster than ``re`` on these patterns, so that the tool's own overhead shows
read     : read_document of a 10,000-token window vs. slicing the token list and decoding it (target <= 2x)
snapshot : building the step's snapshot with 100 actions in the history, the 5 newest full 10,000-token
           reads, a 26-key checklist half filled (target <= 50 ms)
worker   : the search runs in a memory-limited worker process: its start (once per workspace, sending the
           corpus text) and the time to refuse the 19-character pattern ``(?:x{65535}){65535}`` that grew to
           22 GB in-process before (no target: printed so a regression shows)
"""

from __future__ import annotations

import random
import re
import sys
import time
from pathlib import Path

import regex

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # this checkout's gavel, not an installed one

from gavel.core.config import release_root  # noqa: E402
from gavel.core.tokens import encoding  # noqa: E402
from gavel.documents.agent import AgentState, _record, build_snapshot  # noqa: E402
from gavel.documents.configs import all_items  # noqa: E402
from gavel.documents.corpus import large_corpus  # noqa: E402
from gavel.documents.store import AgentStore  # noqa: E402
from gavel.documents.tools import Workspace  # noqa: E402

PATTERNS = [r"Case No\.", r"consolidated", r"\b\d{1,2}:\d{2,3}-cv-\d{3,6}", r"settle(ment)?", r"Judge\s+[A-Z][a-z]+",
            r"consent decree", r"\d{4} WL \d+", r"class action", r"appeal(ed|s)?", r"monitor"]


def per_call(fn, repeat: int) -> float:
    fn()  # warm
    t0 = time.perf_counter()
    for _ in range(repeat):
        fn()
    return (time.perf_counter() - t0) / repeat


def main(target: int = 512_000) -> None:
    corpus = large_corpus(release_root(), target)
    docs = corpus.documents
    for d in docs:  # tokenise up front: the agent does this once per corpus, not per call
        d.offsets  # noqa: B018
    cfg = all_items()
    ws = Workspace(corpus, AgentStore(cfg.keys), clock=lambda: "")
    ws.catalog_listed = True
    print(f"corpus: {len(docs)} documents, {corpus.total_tokens:,} tokens, "
          f"{sum(len(d.text) for d in docs):,} characters")

    print("\nsearch (top_k 20) vs bare re.finditer, per call:")
    ratios, rx_ratios = [], []
    for pattern in PATTERNS:
        compiled = re.compile(pattern, re.IGNORECASE)
        compiled_rx = regex.compile(pattern, regex.IGNORECASE | regex.V0)

        def bare(compiled=compiled):
            return [m.span() for d in docs for m in compiled.finditer(d.text)]

        def bare_rx(compiled_rx=compiled_rx):
            return [m.span() for d in docs for m in compiled_rx.finditer(d.text)]

        def tool(pattern=pattern):
            out = ws.call("search_document_regex", {"pattern": pattern, "flags": ["IGNORECASE"], "top_k": 20}, 1)
            assert out.success, out.result
        t_bare, t_rx, t_tool = per_call(bare, 5), per_call(bare_rx, 5), per_call(tool, 5)
        ratios.append(t_tool / t_bare)
        rx_ratios.append(t_tool / t_rx)
        print(f"  {pattern:30s} matches {len(bare()):5d}  re {t_bare * 1e3:6.2f} ms  regex {t_rx * 1e3:6.2f} ms  "
              f"tool {t_tool * 1e3:6.2f} ms  tool/re {t_tool / t_bare:5.2f}x  tool/regex {t_tool / t_rx:5.2f}x")
    print(f"  tool / bare re.finditer: median {sorted(ratios)[len(ratios) // 2]:.2f}x, worst {max(ratios):.2f}x "
          f"(target <= 2x)")
    print(f"  tool / bare regex.finditer (same engine, no timeout): median "
          f"{sorted(rx_ratios)[len(rx_ratios) // 2]:.2f}x, worst {max(rx_ratios):.2f}x")

    print("\nread of a 10,000-token window vs token-list slice + decode, per call:")
    enc = encoding()
    big = [d for d in docs if d.token_count > 2_000] or docs
    rng = random.Random(0)
    windows = []
    for _ in range(200):
        d = rng.choice(big)
        s = rng.randrange(0, max(1, d.token_count - 1))
        windows.append((d, s, min(d.token_count, s + 10_000)))
    it_a, it_b = iter(windows * 50), iter(windows * 50)

    def slice_decode():
        d, s, e = next(it_a)
        return enc.decode(d.tokens[s:e])

    def read():
        d, s, e = next(it_b)
        return ws.call("read_document", {"doc_name": d.name, "start_token": s, "end_token": e}, 1)
    t_slice, t_read = per_call(slice_decode, 2000), per_call(read, 2000)
    print(f"  slice+decode {t_slice * 1e6:8.1f} us  read_document {t_read * 1e6:8.1f} us  "
          f"ratio {t_read / t_slice:.2f}x (target <= 2x)")

    print("\nsnapshot with a full history, per call:")
    state = AgentState(run_id="b", case_id=corpus.case_id, configuration=cfg.path, model="bench")
    for step in range(1, 101):
        d = docs[step % len(docs)]
        if step % 3:
            out = ws.call("read_document", {"doc_name": d.name, "start_token": 0, "end_token": 10_000}, step)
        else:
            out = ws.call("search_document_regex", {"pattern": PATTERNS[step % len(PATTERNS)], "top_k": 5,
                                                    "flags": ["IGNORECASE"]}, step)
        state.step = step
        _record(state, out)
    for k in cfg.keys[::2]:
        ws.store.apply("append", [{"key": k, "extracted": [{"value": "v", "evidence": [
            {"text": "t", "source_document": docs[0].name, "location": "l"}]}]}])
    t_snap = per_call(lambda: build_snapshot(cfg, ws, state, 200), 50)
    size = len(build_snapshot(cfg, ws, state, 200))
    print(f"  build_snapshot {t_snap * 1e3:.2f} ms ({size:,} characters) (target <= 50 ms)")

    print("\nsearch worker:")
    fresh = Workspace(corpus, AgentStore(cfg.keys), clock=lambda: "")
    t0 = time.perf_counter()
    assert fresh.call("search_document_regex", {"pattern": "monitor"}, 1).success
    t_first = time.perf_counter() - t0
    t0 = time.perf_counter()
    bomb = fresh.call("search_document_regex", {"pattern": "(?:x{65535}){65535}"}, 2)
    t_bomb = time.perf_counter() - t0
    t0 = time.perf_counter()
    assert fresh.call("search_document_regex", {"pattern": "consent decree"}, 3).success
    t_after = time.perf_counter() - t0
    fresh.close()
    print(f"  first search (worker start + corpus sent) {t_first * 1e3:.0f} ms; limit "
          f"{fresh.search_worker.memory_bytes / 2**20:.0f} MiB")
    print(f"  (?:x{{65535}}){{65535}} refused in {t_bomb:.2f} s: {bomb.result.get('error', '')[:70]!r}")
    print(f"  next search (worker restarted) {t_after * 1e3:.0f} ms")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 512_000)
