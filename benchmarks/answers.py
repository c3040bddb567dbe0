"""Reading speed of ``gavel.answers.read``: throughput on the release's recorded answers (target >= 5,000
answers/s), and growth on hostile answers (reading is linear: 10x the text takes at most 12x the time).

The answers are the release's own: every judge answer of ``evaluation*/`` (a relation string is written as
the judge's text ``**Reasoning:** ... **Final Answer:** <A/B label>``, a list matching as the JSON block the
judge wrote, model side as A), the raw judge texts of the truncated Claude Sonnet evaluation file, and every
extractor answer of ``summary_checklists/`` (``{"reasoning", "extracted"}``) as JSON text. Needs GAVEL_RELEASE.

    .venv/bin/python benchmarks/answers.py                 # both parts
    .venv/bin/python benchmarks/answers.py hostile         # only the hostile shapes (no release needed)
    .venv/bin/python benchmarks/answers.py hostile --mb 1 10 --timeout 300 --only brace_prose

The hostile shapes are what a runaway or adversarial model writes, each read at 1 MB and 10 MB of text
(``finish_reason`` "stop" and, for the cut shapes, "length"): a runaway extraction list (distinct and repeated
entries), a runaway matching list, prose full of brace fragments, a ``Scores`` line padded with spaces,
thousands of tool calls, deep nesting. Each size runs in a subprocess with a time limit and is timed in CPU
seconds (a busy machine does not skew the ratio); the growth ratio (time at 10 MB / time at 1 MB) must be at
most 12.
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # this checkout's gavel, not an installed one

from gavel.answers import Unusable, read  # noqa: E402
from gavel.core.config import release_root  # noqa: E402

TARGET = 5_000
GROWTH_TARGET = 12.0
MB = 1_000_000
_LABEL = {"equal": "A equals B", "different": "A and B are different", "contains_model": "B contains A",
          "contains_reference": "A contains B"}
_RAW_TEXT = re.compile(r'"((?:[^"\\]|\\.)*\*\*Final Answer(?:[^"\\]|\\.)*)"')


def _label(relation: str) -> str:
    r = relation.lower()
    if "equal" in r:
        return _LABEL["equal"]
    if "different" in r:
        return _LABEL["different"]
    left = r.split(" contains ")[0].strip()
    return "A contains B" if left in ("model", "a") else "B contains A"


def _matching(answer: dict) -> str:
    def side(key):
        return "A" if key.startswith("model") or key.endswith("A") or key == "A_index" else "B"
    common = [{f"{side(k)}_index": v for k, v in p.items()} if isinstance(p, dict) else p
              for p in answer.get("common") or []]
    body = {"common": common}
    for k, v in answer.items():
        if k.startswith("only_in_"):
            body["only_in_A" if side(k[8:]) == "A" else "only_in_B"] = v
    return "**Reasoning:** recorded\n**Final Answer:**\n```json\n" + json.dumps(body, indent=1) + "\n```"


def answers(root: Path) -> list[tuple[str, str]]:
    out = []
    for path in sorted(root.glob("evaluation*/**/*.json")):
        raw = path.read_text(encoding="utf-8")
        try:
            results = json.loads(raw).get("results") or {}
        except json.JSONDecodeError:  # the file cut at 131,072 bytes: its complete raw judge texts
            out += [("compare_multi" if "common" in t else "compare_single", json.loads(f'"{t}"'))
                    for t in _RAW_TEXT.findall(raw)]
            continue
        for items in results.values():
            for answer in (items or {}).values() if isinstance(items, dict) else ():
                if isinstance(answer, str) and len(answer) < 80:
                    out.append(("compare_single", f"**Reasoning:** recorded\n**Final Answer:** {_label(answer)}"))
                elif isinstance(answer, dict):
                    out.append(("compare_multi", _matching(answer)))
                elif isinstance(answer, str):
                    out.append(("compare_multi", answer))
    for path in sorted((root / "summary_checklists").glob("*/*.json")):
        try:
            results = json.loads(path.read_text(encoding="utf-8")).get("results") or {}
        except (json.JSONDecodeError, UnicodeDecodeError):
            continue
        for items in results.values():
            for entry in (items or {}).values() if isinstance(items, dict) else ():
                out.append(("extract", json.dumps(entry, ensure_ascii=False)))
    return out


def _repeat(head: str, unit, tail: str, size: int) -> str:
    """``head`` + units (``unit(i)`` or a fixed string) up to ``size`` characters + ``tail``."""
    parts, n, i = [head], len(head) + len(tail), 0
    while n < size:
        u = unit(i) if callable(unit) else unit
        parts.append(u)
        n += len(u)
        i += 1
    parts.append(tail)
    return "".join(parts)


_PROSE = ("The court {held} that the {plaintiffs' claims} were moot; see {Doc. 12} and {id. at 3}.\n"
          "A contains B? {not really} — {\"a\": [1, 2} {x: y} {{ }} 'quoted {brace' }\n")
_ENTRY = '{{"value": "value {0}", "evidence": ["quote {0}"]}}, '
_TOOL = '<tool_call>\n{{"name": "read_document", "arguments": {{"doc_name": "D{0}", "start_token": 0, "end_token": 10}}}}\n</tool_call>\n'
_HARMONY = ("<|start|>assistant<|channel|>commentary to=functions.read_document<|message|>"
            '{{"doc_name": "D{0}", "start_token": 0, "end_token": 10}}<|call|>')

#: name -> (stage, finish_reason, context, text of about ``size`` characters)
HOSTILE = {
    "runaway_extract_distinct": ("extract", "stop", {"summary": "value 1"},
                                 lambda n: _repeat('{"extracted": [', _ENTRY.format, '{"value": "end"}]}', n)),
    "runaway_extract_repeated": ("extract", "stop", {}, lambda n: _repeat('{"extracted": [', _ENTRY.format(7),
                                                                         '{"value": "end"}]}', n)),
    "runaway_extract_cut": ("extract", "length", {}, lambda n: _repeat('{"extracted": [', _ENTRY.format, "", n)),
    "runaway_residual": ("residual_facts", "stop", {"n_spans": 50},
                         lambda n: _repeat('{"extracted": [', lambda i: f'{{"fact": "f{i}", "evidence_spans": [{i % 50 + 1}, {i % 7 + 1}]}}, ',
                                           '{"fact": "end"}]}', n)),
    "runaway_matching": ("compare_multi", "stop", {"n_a": 40, "n_b": 40},
                         lambda n: _repeat('**Final Answer:**\n{"common": [', lambda i: f'{{"A_index": {i % 40 + 1}, "B_index": [{i % 40 + 1}, {i % 39 + 1}, {i % 40 + 1}]}}, ',
                                           '{"A_index": 1, "B_index": 1}], "only_in_A": [], "only_in_B": []}', n)),
    "brace_prose_extract": ("extract", "stop", {}, lambda n: _repeat("", _PROSE, '{"extracted": []}', n)),
    "brace_prose_single": ("compare_single", "stop", {}, lambda n: _repeat("", _PROSE, "**Final Answer:** A equals B", n)),
    "brace_prose_style": ("style", "stop", {}, lambda n: _repeat("", _PROSE, "", n)),
    "brace_prose_agent": ("agent_action", "stop", {}, lambda n: _repeat("", _PROSE, '{"decision": "stop"}', n)),
    "brace_prose_cut": ("compare_multi", "length", {}, lambda n: _repeat("", _PROSE, "", n)),
    "score_line_padded": ("style", "stop", {}, lambda n: _repeat("Scores:\nReadability & Jargon", " ", "4\nNarrative Order: 3", n)),
    "score_lines_many": ("style", "stop", {}, lambda n: _repeat("**Scores:**\n", lambda i: f"- Narrative Order {' ' * (i % 60)}: 3\n", "", n)),
    "tool_calls_distinct": ("agent_action", "stop", {}, lambda n: _repeat("", _TOOL.format, "", n)),
    "tool_calls_same": ("agent_action", "stop", {}, lambda n: _repeat("", _TOOL.format(1), "", n)),
    "tool_calls_open": ("agent_action", "length", {}, lambda n: _repeat("", lambda i: "<tool_call>{\"name\": \"x\", ", "", n)),
    "harmony_calls": ("agent_action", "stop", {}, lambda n: _repeat("", _HARMONY.format, "", n)),
    "deep_braces": ("compare_multi", "stop", {}, lambda n: "{" * (n // 2) + "}" * (n // 2)),
    "deep_lists": ("extract", "stop", {}, lambda n: '{"extracted": ' + "[" * (n // 2) + "]" * (n // 2) + "}"),
    "deep_unclosed": ("style", "length", {}, lambda n: '{"a": ' * (n // 6)),
    "json_string_prose": ("compare_single", "stop", {}, lambda n: _repeat('{"reasoning": "', "A contains B {x} ", '", "relation": "A equals B"}', n)),
}


def _time_one(name: str, size: int) -> float:
    stage, finish, context, make = HOSTILE[name]
    text = make(size)
    start = time.process_time()  # CPU time: on a shared machine, other processes' load does not count
    try:
        read(stage, text, finish, **context)
    except Unusable:
        pass
    return time.process_time() - start


def hostile(names: list[str], sizes: list[int], timeout: float, repeat: int = 1) -> bool:
    """Reads each shape at each size (MB) in a subprocess (the fastest of ``repeat`` runs: a shared machine's
    load only ever adds time); prints seconds, s/MB and the growth ratio."""
    ok = True
    print(f"CPU seconds to read each shape ({repeat} run(s) per size, the fastest counts)")
    print(f"{'shape':<26} " + " ".join(f"{str(s) + ' MB':>10}" for s in sizes) + f" {'s/MB (max)':>11} {'growth':>8}")
    for name in names:
        times = []
        for size in sizes:
            runs = []
            for _ in range(repeat):
                try:
                    out = subprocess.run([sys.executable, __file__, "--one", name, str(size)], capture_output=True,
                                         text=True, timeout=timeout, check=True).stdout
                    runs.append(float(out.split()[-1]))
                except subprocess.TimeoutExpired:
                    break
                except subprocess.CalledProcessError as err:
                    print(f"{name}: crashed: {err.stderr.strip().splitlines()[-1:]}")
                    runs.append(float("nan"))
                    break
            times.append(min(runs) if runs else None)
        cells = " ".join(f"{t:>10.2f}" if t is not None else f"{'>' + str(int(timeout)):>10}" for t in times)
        per_mb = max((t / s for t, s in zip(times, sizes) if t is not None), default=float("nan"))
        if len(times) >= 2 and times[0] is not None and times[-1] is not None:
            growth = times[-1] / max(times[0], 1e-3)
            verdict = growth <= GROWTH_TARGET * (sizes[-1] / sizes[0]) / 10
        else:
            growth, verdict = float("inf"), False
        ok &= verdict
        print(f"{name:<26} {cells} {per_mb:>11.3f} {growth:>7.1f}x {'' if verdict else ' NOT met'}")
    print(f"growth target: at most {GROWTH_TARGET:g}x for 10x the text (1 ms floor on the small time)")
    return ok


def throughput() -> None:
    data = answers(release_root())
    kinds = Counter(stage for stage, _ in data)
    outcome = Counter()
    start = time.perf_counter()
    for stage, text in data:
        try:
            read(stage, text, "stop", n_a=None, n_b=None)
            outcome["read"] += 1
        except Unusable as err:
            outcome[err.reason] += 1
    elapsed = time.perf_counter() - start
    rate = len(data) / elapsed
    print(f"answers: {len(data):,} ({', '.join(f'{k} {n:,}' for k, n in sorted(kinds.items()))})")
    print(f"outcome: {dict(outcome)}")
    print(f"read in {elapsed:.2f} s: {rate:,.0f} answers/s; target {TARGET:,}/s; ratio {rate / TARGET:.1f}x "
          f"({'met' if rate >= TARGET else 'NOT met'})")


def main() -> None:
    if len(sys.argv) == 4 and sys.argv[1] == "--one":  # one timing, in its own process
        print(_time_one(sys.argv[2], int(float(sys.argv[3]) * MB)))
        return
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("part", nargs="?", choices=["all", "release", "hostile"], default="all")
    ap.add_argument("--mb", nargs="+", type=float, default=[1, 10])
    ap.add_argument("--timeout", type=float, default=300)
    ap.add_argument("--repeat", type=int, default=1, help="runs per size; the fastest counts")
    ap.add_argument("--only", nargs="+", choices=sorted(HOSTILE), default=list(HOSTILE))
    args = ap.parse_args()
    if args.part in ("all", "release"):
        throughput()
    if args.part in ("all", "hostile"):
        hostile(args.only, args.mb, args.timeout, args.repeat)


if __name__ == "__main__":
    main()
