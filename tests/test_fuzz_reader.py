"""Fuzz targets for ``gavel.answers.read``, one per stage: answers assembled from the pieces the contract
(docs/ANSWERS.md) names — markers, relation phrases and negations, ``<think>`` and Harmony tokens, tool-call
tags of every dialect, JSON fragments with repeated keys, lists, index and rating strings, Unicode digits,
lone surrogates, blanks, the prompts' own example and rule texts, score lines with a dash or a remark, indices
of 19 digits and more, Harmony tokens inside JSON strings — cut anywhere and read under every finish reason. ``read`` returns a plain dict or
raises ``Unusable``; nothing else.

Each target runs in its own process under a memory cap (``RLIMIT_AS``) and a time cap (a hypothesis deadline
per example, a timeout for the whole target), with a fixed number of examples and derandomised, so a CI run
takes seconds and is the same every time. ``python tests/test_fuzz_reader.py STAGE N`` runs one target by
hand (more examples: a larger N)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

STAGES = ("extract", "compare_single", "compare_multi", "residual_facts", "style", "agent_action")
MEMORY_CAP = 2 * 1024 ** 3  # bytes of address space for one target's process
EXAMPLES = 150
DEADLINE_MS = 10_000  # per example: a reading of a few kB takes milliseconds; 10 s catches a runaway, never a busy machine
TIMEOUT_S = 240  # the whole target

#: what answers are made of: each piece is something the reader looks at
PIECES = [
    "{", "}", "[", "]", ",", ":", '"', "'", "\u201c", "\u201d", "\\", "\\u", "\\ud800", "\\ude00", "\ud800", "\n", " ",
    "\t", "\r\n", "\ufeff", "\u3000", "   ", "```json\n", "```", "**Final Answer:**", "## Final Answer:\n",
    "FINAL ANSWER", "**Scores:**\n", "Scores:\n", "A contains B", "B contains A", "A equals B", "A is equal to B",
    "A and B are different", "a_contains_b", "Information A", "not ", "neither ", "<think>", "</think>",
    "<|start|>assistant", "<|channel|>final", "<|channel|>analysis", "<|channel|>commentary to=functions.read_document",
    "<|message|>", "<|end|>", "<|call|>", "<tool_call>", "</tool_call>", "<|python_tag|>", "<|eom_id|>",
    "[TOOL_CALLS]", "[ARGS]", "read_document", "stop", '"extracted": ', '"value": ', '"evidence": ', '"fact": ',
    '"evidence_spans": ', '"relation": ', '"answer": ', '"reasoning": ', '"common": ', '"A_index": ', '"B_index": ',
    '"a_index": ', '"only_in_A": ', '"readability_jargon": ', '"Narrative Order": ', '"citation_style": ',
    '"score": ', '"rating": ', '"name": ', '"tool": ', '"arguments": ', '"args": ', '"decision": ', '"tool_calls": ',
    "Readability & Jargon: ", "- Narrative Order: ", "4 out of 5", "4/5", " 3", "3 ", "0", "1", "2", "-1", "1.5",
    "1e999", "9" * 5000, "NaN", "Infinity", "-Infinity", "null", "None", "true", "True", "\u00b2", "\uff11", "\u0661",
    "N/A", "not applicable", "<exact quote from the summary>", "...", "[" * 70, "]" * 70, "{\"a\": " * 70,
    # issue 45: echoes of the prompt's own text, score lines a little off, long indices, Harmony tokens in strings
    "the information, stated briefly", "one atomic fact", "copied character for character from the summary",
    "Readability & Jargon - ", " - 4/5", "4 (out of 5)", " (clear)", " (or 5)", '"0000000000000000002"',
    "0" * 30 + "1", '"reasoning": "<|start|>assistant<|channel|>final<|message|>', '"confidence": ',
]


def _target(stage: str, examples: int) -> None:
    """Reads ``examples`` generated answers for ``stage``; fails on anything but a dict or ``Unusable``."""
    from fuzzing import any_text, fuzz
    from hypothesis import given
    from hypothesis import strategies as st

    from gavel.answers import Unusable, read

    context = {"extract": {"summary": "The mayor resigned in 2022. 4 out of 5"},
               "compare_multi": {"n_a": 3, "n_b": 4}, "residual_facts": {"n_spans": 3}}.get(stage, {})
    piece = st.one_of(st.sampled_from(PIECES), any_text(max_size=8))
    answers = st.lists(piece, max_size=60).map("".join)
    finish = st.sampled_from(["stop", "length", None, "content_filter", "tool_calls", "max_tokens", "Weird"])

    @fuzz(examples, deadline=DEADLINE_MS)
    @given(text=answers, cut=st.integers(min_value=0, max_value=10_000), finish=finish)
    def read_anything(text, cut, finish):
        text = text[:cut] if finish not in ("stop", None) else text
        try:
            reading = read(stage, text, finish, **context)
        except Unusable as err:
            assert isinstance(err.reason, str) and isinstance(err.detail, str)
            return
        assert isinstance(reading, dict)
        json.dumps(reading)  # plain data

    read_anything()


def _capped(stage: str, examples: int) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, __file__, stage, str(examples)], capture_output=True, text=True,
                          timeout=TIMEOUT_S, cwd=Path(__file__).resolve().parent.parent)


@pytest.mark.parametrize("stage", STAGES)
def test_read_raises_nothing_but_unusable(stage):
    done = _capped(stage, EXAMPLES)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert f"{stage}: {EXAMPLES} examples" in done.stdout


def test_the_cap_holds_a_reading_that_would_not_fit():
    """The memory cap is real: a target process that allocates past it fails (MemoryError), it is not let
    through; a value list times its evidence (M·K) that once ended in MemoryError reads within it."""
    probe = subprocess.run([sys.executable, __file__, "--probe"], capture_output=True, text=True, timeout=TIMEOUT_S,
                           cwd=Path(__file__).resolve().parent.parent)
    assert probe.returncode == 0, probe.stderr[-3000:]
    assert probe.stdout.split() == ["capped", "schema"]


def test_a_text_of_one_clean_object_is_found_as_a_scan_finds_it():
    """A text of one clean object is read without a scan (``first_object``), and a scan given the first object's
    reading does not decode it again: whatever the text, a scan finds the same either way, and a text called
    clean is one object that a scan finds alone and unmarked."""
    from fuzzing import any_text, fuzz
    from hypothesis import given
    from hypothesis import strategies as st

    from gavel.answers.scan import first_object, scan

    piece = st.one_of(st.sampled_from(PIECES), any_text(max_size=8))
    values = st.recursive(st.none() | st.booleans() | st.integers() | st.floats() | any_text(max_size=6),
                          lambda inner: st.lists(inner, max_size=3) | st.dictionaries(any_text(max_size=4), inner,
                                                                                     max_size=3), max_leaves=12)
    objects = st.dictionaries(st.sampled_from(["extracted", "common", "relation", "a", "A"]), values, min_size=1,
                              max_size=3).map(json.dumps)

    @fuzz(300)
    @given(before=st.lists(piece, max_size=4).map("".join), obj=objects, inside=st.lists(piece, max_size=3),
           after=st.lists(piece, max_size=4).map("".join))
    def same(before, obj, inside, after):
        text = before + obj[:-1] + "".join(inside) + obj[-1] + after
        fresh = scan(text)
        first, clean = first_object(text)
        assert repr(scan(text, first)) == repr(fresh)
        if clean:
            found, broken, unclosed, suspect = fresh
            assert repr(found) == repr([first[:3]]) and not broken and unclosed is None and not suspect

    same()


def _cap_memory() -> None:
    import resource

    resource.setrlimit(resource.RLIMIT_AS, (MEMORY_CAP, MEMORY_CAP))


def _probe() -> None:
    try:
        bytearray(MEMORY_CAP)
        print("uncapped")
    except MemoryError:
        print("capped")
    from gavel.answers import Unusable, read

    values = json.dumps([f"v{i}" for i in range(60_000)])
    quotes = json.dumps([f"q{i}" for i in range(60_000)])
    try:
        read("extract", f'{{"extracted": [{{"value": {values}, "evidence": {quotes}}}]}}', summary="v1")
        print("read")
    except Unusable as err:
        print(err.reason)


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    _cap_memory()
    if sys.argv[1] == "--probe":
        _probe()
    else:
        _target(sys.argv[1], int(sys.argv[2]))
        print(f"{sys.argv[1]}: {sys.argv[2]} examples, nothing but Unusable")
