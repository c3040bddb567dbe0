"""Reading speed of ``gavel.answers.read``: the release's recorded answers against the ``json.loads`` floor
(goal: at most 3x), and growth on hostile answers against ``json.loads``'s growth on the same texts (goal: read
grows at most 1.2x what json.loads grows from 1 MB to 10 MB).

The answers are the release's own: every judge answer of ``evaluation*/`` (a relation string is written as
the judge's text ``**Reasoning:** ... **Final Answer:** <A/B label>``, a list matching as the JSON block the
judge wrote, model side as A), the raw judge texts of the truncated Claude Sonnet evaluation file, and every
extractor answer of ``summary_checklists/`` (``{"reasoning", "extracted"}``) as JSON text. Needs GAVEL_RELEASE.

    .venv/bin/python benchmarks/answers.py                 # both parts
    .venv/bin/python benchmarks/answers.py hostile         # only the hostile shapes (no release needed)
    .venv/bin/python benchmarks/answers.py hostile --mb 1 10 --timeout 300 --only brace_prose gen:common
    .venv/bin/python benchmarks/answers.py release --before DIR  # also DIR's reader (git archive REV | tar -x -C DIR)

The release part prints the answers/s and the ratio to its floor: ``json.loads`` (the C decoder) of each
answer's JSON object, or of the text as a JSON string when it has none, in CPU seconds, the fastest of three
runs each (goal: at most 3x); and the answers/s (target >= 5,000/s). ``--before DIR`` times another gavel source tree's reader the same way in
the same minutes (its own ``benchmarks/answers.py``), and reads every answer with both readers, as complete
(``stop``) and as cut (``length``), and counts the readings that differ (goal: none).

The hostile shapes are what a runaway or adversarial model writes, each read at 1 MB and 10 MB of text
(``finish_reason`` "stop" and, for the cut shapes, "length"): a runaway extraction list (distinct and repeated
entries), a runaway matching list, prose full of brace fragments, a ``Scores`` line padded with spaces,
thousands of tool calls, deep nesting; and the generated shapes (``gen:<slot>:<constructs>``): every loop of
the reader is a slot (prose before an answer, the region after a Final-Answer marker, a JSON string, an
object's keys, the extracted list, a value list, an evidence list, the common list, only_in, evidence spans,
a rating string, score lines, the agent's dialects), each construct of a slot repeated alone, every two of
one slot alternated, and all of them together; ``value_list_times_evidence`` grows M values and K quotes of
one entry together. Each size runs in a subprocess with a time limit and is timed in CPU seconds (a busy
machine does not skew the ratio). Growth alone (time at 10 MB / time at 1 MB) is not a fair goal: ``json.loads``
itself grows up to twice as fast as the text on some valid JSON texts of these sizes (one object of up to a
million distinct keys: memory, not the algorithm). So each shape's JSON object is also decoded by ``json.loads`` in its own subprocess, with the
cycle collector paused as ``read`` pauses it for texts of ``GC_PAUSE_CHARS`` or more; the printed ratio is
read's growth over json.loads's growth, and the goal is at most 1.2 on every shape. A text that is not JSON
(prose, brace fragments, tool-call tags, lists nested past the C decoder's limit) gives json.loads nothing to
decode: its growth is taken as linear (10x), so the goal there is read growing at most 12x. (Decoding such a
text as one JSON string instead grows only 6.5-8.6x from 1 to 10 MB: a 3 ms decode is mostly fixed costs, a
floor no reader of the text itself can follow.)
"""

from __future__ import annotations

import argparse
import gc
import json
import re
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # this checkout's gavel, not an installed one

from gavel.answers import GC_PAUSE_CHARS, Unusable, read  # noqa: E402
from gavel.answers.examples import forget  # noqa: E402
from gavel.core.config import release_root  # noqa: E402

TARGET = 5_000
FLOOR_RATIO = 3.0  # the reader on the release's answers costs at most this many times json.loads of their JSON
#: on each hostile shape, read's growth from the smallest to the largest size over json.loads's on the same texts
GROWTH_RATIO = 1.2
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


# ---------------------------------------------------------------------- generated shapes: every loop of the reader
#: slot -> (stage, finish_reason, context, head, tail, {construct: unit(i)}): a construct is one repeatable piece
#: of an answer at one place (a slot); each is repeated alone, and every two of one slot alternately (combined)
SLOTS = {
    "prose_single": ("compare_single", "stop", {}, "", "\n**Final Answer:** A equals B", {
        "braces": lambda i: "{held} {x: y} {'a': [1, 2} ",
        "phrases": lambda i: "maybe A contains B, not B contains A. ",
        "quotes": lambda i: "it's \"quoted\" \u201ccurly\u201d ' ",
        "think": lambda i: "<think>A equals B?</think> ",
        "objects": lambda i: '{"reasoning": "A contains B", "note": [1, {"x": "y"}]} ',
        "blank_lines": lambda i: "   \n\n",
    }),
    "marker_region": ("compare_single", "length", {}, "**Final Answer:** ", "\n\n   ", {
        "phrases": lambda i: "A equals B ",
        "negated": lambda i: "not **\"A contains B\"** ",
        "codes": lambda i: "a_equals_b, ",
    }),
    "json_strings": ("compare_single", "stop", {}, '{"relation": "A equals B", "answer": "', '"}', {
        "phrases": lambda i: "A equals B and ",
        "escapes": lambda i: "\\n\\\"\\u00e9 ",
        "blanks": lambda i: "          ",
    }),
    "object_keys": ("compare_single", "stop", {}, '{"relation": "A equals B", ', '"z": 0}', {
        "duplicate_keys": lambda i: f'"k{i % 1000}": {i}, ',
        "same_keys": lambda i: f'"k{i % 1000}": 1, ',
        "distinct_keys": lambda i: f'"k{i}": "v", ',
        "case_keys": lambda i: f'"K{i % 1000}": 1, "k{i % 1000}": 1, ',
    }),
    "extracted": ("extract", "stop", {"summary": "quote 1 and value 2"}, '{"extracted": [', '{"value": "end"}]}', {
        "distinct": lambda i: f'{{"value": "value {i}", "evidence": ["quote {i}"]}}, ',
        "repeated": lambda i: '{"value": "value 7", "evidence": ["quote 7"]}, ',
        "placeholders": lambda i: '{"value": "N/A", "evidence": ["<exact quote from the summary>"]}, ',
        "list_values": lambda i: f'{{"value": ["a{i}", "b{i}", null, 3], "evidence": "q{i % 9}"}}, ',
        "object_values": lambda i: f'{{"Value": {{"date": "d{i}", "n": {i}}}, "Evidence": [{{"text": "t{i}"}}]}}, ',
        "not_objects": lambda i: f'"{i}", [{i}], ',
    }),
    "value_list": ("extract", "stop", {}, '{"extracted": [{"evidence": ["q"], "value": [', '"end"]}]}', {
        "texts": lambda i: f'"v{i}", ',
        "repeats": lambda i: '"v", ',
        "non_texts": lambda i: "true, [1], null, ",
    }),
    "evidence_list": ("extract", "stop", {"summary": "q1"}, '{"extracted": [{"value": "v", "evidence": [', '"end"]}]}', {
        "quotes": lambda i: f'"q{i}", ',
        "objects": lambda i: f'{{"text": "q{i}", "source_document": "D"}}, ',
        "non_texts": lambda i: "1.5, true, null, ",
    }),
    "common": ("compare_multi", "stop", {"n_a": 40, "n_b": 40}, '**Final Answer:**\n{"only_in_A": [1], "common": [',
               '{"A_index": 1, "B_index": 1}], "only_in_B": []}', {
        "pairs": lambda i: f'{{"A_index": {i % 40 + 1}, "B_index": {i % 39 + 1}}}, ',
        "string_indices": lambda i: f'{{"a_index": "{i % 40 + 1}", "b_index": " {i % 40}"}}, ',
        "list_sides": lambda i: f'{{"A_index": [{i % 40 + 1}, 1, 1], "B_index": [2, 0, "x"]}}, ',
        "not_pairs": lambda i: f'{{"A_index": {i}}}, 7, ',
    }),
    "only_in": ("compare_multi", "stop", {"n_a": 40, "n_b": 40}, '{"common": [{"A_index": 1, "B_index": 1}], "only_in_A": [',
                '2]}', {
        "indices": lambda i: f"{i % 40 + 1}, ",
        "bad_indices": lambda i: '0, null, "x", 1e999, ',
    }),
    "evidence_spans": ("residual_facts", "stop", {"n_spans": 50}, '{"extracted": [', '{"fact": "end"}]}', {
        "facts": lambda i: f'{{"fact": "f{i}", "evidence_spans": [{i % 50 + 1}, "{i % 7 + 1}", 99]}}, ',
        "repeated_facts": lambda i: '{"fact": "same  fact", "evidence_spans": 1}, ',
    }),
    "ratings": ("style", "stop", {}, '{"readability_jargon": "4', 'x", "narrative_order": 3}', {
        "blanks": lambda i: " ",
        "digits": lambda i: "4",
    }),
    "score_lines": ("style", "stop", {}, "**Scores:**\n", "Citation Style: 3\n", {
        "lines": lambda i: f"- Narrative Order {' ' * (i % 60)}: 3\n",
        "out_of": lambda i: "Readability & Jargon: 4 out of 5\n",
        "not_lines": lambda i: "just prose here: none = x\n",
    }),
    "agent_text": ("agent_action", "stop", {}, "", '{"decision": "stop"}', {
        "tool_calls": lambda i: _TOOL.format(1),
        "harmony": lambda i: _HARMONY.format(1),
        "analysis": lambda i: "<|start|>assistant<|channel|>analysis<|message|>thinking {x}<|end|>",
        "python_tag": lambda i: '<|python_tag|>{"name": "list_documents", "parameters": {}}<|eom_id|>',
        "mistral": lambda i: '[TOOL_CALLS]list_documents[ARGS]{} ',
    }),
}


def _generated(slot: str, units: list[str]):
    stage, finish, context, head, tail, constructs = SLOTS[slot]
    makers = [constructs[u] for u in units]
    return (stage, finish, context, lambda n: _repeat(head, lambda i: makers[i % len(makers)](i), tail, n))


def _value_times_evidence(n: int) -> str:
    """An extract entry whose value is a list of M texts and whose evidence a list of K (M = K)."""
    half = n // 2
    return (_repeat('{"extracted": [{"value": [', lambda i: f'"v{i}", ', '"v"], "evidence": [', half)
            + _repeat("", lambda i: f'"q{i}", ', '"q"]}]}', half))


for _slot, (_stage, _finish, _context, _head, _tail, _units) in SLOTS.items():
    _names = sorted(_units)
    for _u in _names:
        HOSTILE[f"gen:{_slot}:{_u}"] = _generated(_slot, [_u])
    for _k, _a in enumerate(_names):
        for _b in _names[_k + 1:]:
            HOSTILE[f"gen:{_slot}:{_a}+{_b}"] = _generated(_slot, [_a, _b])
    if len(_names) > 2:
        HOSTILE[f"gen:{_slot}:all"] = _generated(_slot, _names)
HOSTILE["value_list_times_evidence"] = ("extract", "stop", {"summary": "v1"}, _value_times_evidence)


def _json_payload(text: str) -> str | None:
    """The JSON object of ``text`` (first ``{`` to last ``}``) when ``json.loads`` decodes it, else None: a text
    that is not JSON (prose, brace fragments, tool-call tags, an object nested past the C decoder's limit) has
    no ``json.loads`` time to compare with. Prose without any object is no JSON either: decoding it as one JSON
    string is no floor (see the module doc), unlike :func:`_payload` for the release's answers."""
    i, j = text.find("{"), text.rfind("}")
    if not 0 <= i < j:
        return None
    payload = text[i:j + 1]
    try:
        json.loads(payload)
    except (ValueError, RecursionError):
        return None
    return payload


def _time_one(name: str, size: int, what: str = "read") -> float:
    """CPU seconds of ``read`` on shape ``name`` at ``size`` characters, or (``what="floor"``) of ``json.loads`` on
    the same text's JSON object, with the cycle collector paused as ``read`` pauses it (-1: not JSON)."""
    stage, finish, context, make = HOSTILE[name]
    text = make(size)
    if what == "floor":
        payload = _json_payload(text)
        if payload is None:
            return -1.0
        pause = len(text) >= GC_PAUSE_CHARS and gc.isenabled()
        if pause:
            gc.disable()
        start = time.process_time()
        json.loads(payload)
        elapsed = time.process_time() - start
        if pause:
            gc.enable()
        return elapsed
    start = time.process_time()  # CPU time: on a shared machine, other processes' load does not count
    try:
        read(stage, text, finish, **context)
    except Unusable:
        pass
    return time.process_time() - start


def _fastest(name: str, size: float, what: str, repeat: int, timeout: float) -> float | None:
    """The fastest of ``repeat`` timings, each in a fresh subprocess; None past ``timeout``, NaN on a crash."""
    runs = []
    for _ in range(repeat):
        try:
            out = subprocess.run([sys.executable, __file__, "--one", name, str(size), what], capture_output=True,
                                 text=True, timeout=timeout, check=True).stdout
            runs.append(float(out.split()[-1]))
        except subprocess.TimeoutExpired:
            break
        except subprocess.CalledProcessError as err:
            print(f"{name}: crashed: {err.stderr.strip().splitlines()[-1:]}")
            return float("nan")
    return min(runs) if runs else None


def hostile(names: list[str], sizes: list[float], timeout: float, repeat: int = 1) -> bool:
    """Reads each shape at each size (MB) in a subprocess (the fastest of ``repeat`` runs: a shared machine's
    load only ever adds time), and decodes its JSON object with ``json.loads`` likewise at the smallest and the
    largest size; prints seconds, s/MB, both growths and their ratio (goal: at most ``GROWTH_RATIO``). A shape
    whose text is not JSON is held to linear growth (``json.loads`` has nothing to decode: ``linear``)."""
    ok = True
    linear = sizes[-1] / sizes[0]
    print(f"CPU seconds to read each shape ({repeat} run(s) per size, the fastest counts); json.loads: of its "
          f"JSON object, the fastest of {max(repeat, 3)} runs, cycle collector paused as read pauses it")
    print(f"{'shape':<44} " + " ".join(f"{str(s) + ' MB':>9}" for s in sizes)
          + f" {'s/MB':>7} {'growth':>7} {'json.loads':>10} {'ratio':>6}")
    for name in names:
        times = [_fastest(name, size, "read", repeat, timeout) for size in sizes]
        floors = [_fastest(name, size, "floor", max(repeat, 3), timeout) for size in (sizes[0], sizes[-1])]
        cells = " ".join(f"{t:>9.2f}" if t is not None else f"{'>' + str(int(timeout)):>9}" for t in times)
        per_mb = max((t / s for t, s in zip(times, sizes) if t is not None), default=float("nan"))
        if times[0] is None or times[-1] is None or None in floors:
            growth = reference = ratio = float("inf")
            label = "?"
        else:
            growth = times[-1] / max(times[0], 1e-3)
            if min(floors) < 0:  # not JSON at some size
                reference, label = linear, "linear"
            else:
                reference = floors[1] / max(floors[0], 1e-4)
                label = f"{reference:.1f}x"
            ratio = growth / reference
        verdict = ratio <= GROWTH_RATIO
        ok &= verdict
        print(f"{name:<44} {cells} {per_mb:>7.3f} {growth:>6.1f}x {label:>10} {ratio:>6.2f}"
              f"{'' if verdict else '  NOT met'}")
    print(f"goal: read grows at most {GROWTH_RATIO:g}x what json.loads grows on the same texts, or {GROWTH_RATIO:g}x "
          f"linear where they are not JSON (1 ms floor on read's smallest time, 0.1 ms on json.loads's)")
    return ok


def _payload(text: str) -> str:
    """What any reader must at least decode of one answer: its JSON object (first ``{`` to last ``}``), or
    the text itself as a JSON string when it holds none."""
    i, j = text.find("{"), text.rfind("}")
    return text[i:j + 1] if 0 <= i < j else json.dumps(text)


def _cpu(fn, repeat: int) -> float:
    """The fastest of ``repeat`` runs of ``fn``, in CPU seconds (a shared machine's load only ever adds)."""
    best = float("inf")
    for _ in range(repeat):
        start = time.process_time()
        fn()
        best = min(best, time.process_time() - start)
    return best


def throughput(repeat: int = 3) -> None:
    data = answers(release_root())
    kinds = Counter(stage for stage, _ in data)
    outcome = Counter()
    payloads = [_payload(text) for _, text in data]

    def floor():
        for p in payloads:
            try:
                json.loads(p)
            except ValueError:
                pass

    def reader():
        forget()  # cold: the echo checks a fresh process has not made yet (each run alike)
        outcome.clear()
        for stage, text in data:
            try:
                read(stage, text, "stop", n_a=None, n_b=None)
                outcome["read"] += 1
            except Unusable as err:
                outcome[err.reason] += 1

    base, elapsed = _cpu(floor, repeat), _cpu(reader, repeat)
    rate, ratio = len(data) / elapsed, elapsed / base
    print(f"answers: {len(data):,} ({', '.join(f'{k} {n:,}' for k, n in sorted(kinds.items()))})")
    print(f"outcome: {dict(outcome)}")
    print(f"read in {elapsed:.3f} CPU s: {rate:,.0f} answers/s (target {TARGET:,}/s: "
          f"{'met' if rate >= TARGET else 'NOT met'}); floor (json.loads of each answer's JSON, C decoder): "
          f"{base:.3f} CPU s; ratio {ratio:.1f}x the floor (goal at most {FLOOR_RATIO:g}x: "
          f"{'met' if ratio <= FLOOR_RATIO else 'NOT met'}); fastest of {repeat} runs each")


#: run in a subprocess with a gavel tree first on sys.path: reads each (stage, text) of a pickle as complete
#: and as cut, and writes the repr of each reading (or of the reason and detail of each Unusable)
_READ_ALL = """
import pickle, sys
sys.path.insert(0, sys.argv[1])
from gavel.answers import Unusable, read
out = []
for stage, text in pickle.load(open(sys.argv[2], "rb")):
    for finish in ("stop", "length"):
        try:
            out.append(repr(read(stage, text, finish, n_a=None, n_b=None)))
        except Unusable as err:
            out.append(repr((err.reason, err.detail)))
pickle.dump(out, open(sys.argv[3], "wb"))
"""


def readings(tree: Path, data: list[tuple[str, str]], tmp: Path) -> list[str]:
    """Every answer of ``data`` read by the reader of the gavel source tree ``tree`` (see ``_READ_ALL``)."""
    import pickle

    (tmp / "in.pickle").write_bytes(pickle.dumps(data))
    subprocess.run([sys.executable, "-c", _READ_ALL, str(tree), str(tmp / "in.pickle"), str(tmp / "out.pickle")],
                   check=True, cwd=tree)
    return pickle.loads((tmp / "out.pickle").read_bytes())


def before(tree: Path, repeat: int) -> None:
    """The throughput of ``tree``'s reader (its own benchmark, run now), and every release answer read by both
    readers: the count of readings that differ."""
    import tempfile

    tree = tree.resolve()
    done = subprocess.run([sys.executable, str(tree / "benchmarks" / "answers.py"), "release", "--repeat",
                           str(repeat)], check=True, capture_output=True, text=True)
    print("[before] " + done.stdout.strip().splitlines()[-1])
    data = answers(release_root())
    with tempfile.TemporaryDirectory() as tmp:
        ours, theirs = readings(Path(__file__).resolve().parent.parent, data, Path(tmp)), readings(tree, data, Path(tmp))
    differ = [k for k, (a, b) in enumerate(zip(ours, theirs)) if a != b]
    print(f"same readings: {len(data):,} answers, {len(ours):,} readings (each as complete and as cut), "
          f"{len(differ) + abs(len(ours) - len(theirs)):,} differ from the other tree's"
          + (f" (first: answer {differ[0] // 2}: {ours[differ[0]][:200]} / {theirs[differ[0]][:200]})" if differ else ""))


def main() -> None:
    if len(sys.argv) == 5 and sys.argv[1] == "--one":  # one timing, in its own process
        print(_time_one(sys.argv[2], int(float(sys.argv[3]) * MB), sys.argv[4]))
        return
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("part", nargs="?", choices=["all", "release", "hostile"], default="all")
    ap.add_argument("--mb", nargs="+", type=float, default=[1, 10])
    ap.add_argument("--timeout", type=float, default=300)
    ap.add_argument("--repeat", type=int, default=1, help="runs per size; the fastest counts")
    ap.add_argument("--only", nargs="+", default=[""], help="shapes whose name contains one of these")
    ap.add_argument("--before", type=Path, default=None, help="another gavel source tree: its reader timed and "
                    "its readings of the release compared")
    args = ap.parse_args()
    args.only = [n for n in HOSTILE if any(part in n for part in args.only)]
    if not args.only:
        ap.error(f"no shape matches; shapes: {', '.join(HOSTILE)}")
    if args.part in ("all", "release"):
        throughput(args.repeat if args.repeat > 1 else 3)
        if args.before:
            before(args.before, args.repeat if args.repeat > 1 else 3)
    if args.part in ("all", "hostile"):
        hostile(args.only, args.mb, args.timeout, args.repeat)


if __name__ == "__main__":
    main()
