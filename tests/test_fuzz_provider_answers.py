"""A provider's answer under attack: what a batch result file or an online call brings back is the provider's
(or a server's, or a man-in-the-middle's) text, not ours. Whatever an OpenAI-format completion (OpenAI, vLLM,
llama.cpp), a Gemini ``generateContent`` answer or an Anthropic message holds where its fields should be
(nulls, numbers, lists, nested objects, lone surrogates, deep nesting), and whatever lines an OpenAI-format
batch output file holds, the parsers give a Response (succeeded with text, or unusable naming the field) or
the bad line's own record, and raise nothing.

The properties run in a child process under an address-space cap (``RLIMIT_AS``) and a wall-clock limit,
seeded per test run (tests/fuzzing.py: a failure names ``GAVEL_FUZZ_SEED`` to replay it)."""

import json

from fuzzing import any_text, fuzz, replay, run_capped
from hypothesis import given
from hypothesis import strategies as st

from gavel.llm.providers.anthropic_batch import parse_message
from gavel.llm.providers.gemini_batch import parse_generate
from gavel.llm.providers.openai_batch import (
    bad_line_responses,
    parse_chat,
    read_result_lines,
    unreadable_note,
)
from gavel.llm.records import Response

LEAF = st.one_of(st.none(), st.booleans(), st.integers(), st.integers(min_value=10**300, max_value=10**310),
                 st.floats(allow_nan=True, allow_infinity=True), any_text(max_size=12),
                 st.sampled_from(["stop", "length", "STOP", "MAX_TOKENS", "end_turn", "tool_use", "text", "thinking",
                                  "tool_calls", "SAFETY"]))
ANY = st.recursive(LEAF, lambda kids: st.lists(kids, max_size=3) | st.dictionaries(any_text(max_size=8), kids,
                                                                                  max_size=3), max_leaves=10)


def deep(n: int):
    """A value nested ``n`` lists deep (what a JSON parser may have accepted)."""
    value: object = "x"
    for _ in range(n):
        value = [value]
    return value


def maybe(strategy):
    """The field as it should be (three times in four), or anything else in its place."""
    return st.one_of(strategy, strategy, strategy, ANY)


CHOICE = st.fixed_dictionaries({
    "finish_reason": maybe(st.sampled_from(["stop", "length", "tool_calls"])),
    "message": maybe(st.fixed_dictionaries({"content": maybe(any_text(max_size=40))}, optional={
        "tool_calls": maybe(st.lists(maybe(st.fixed_dictionaries({"function": maybe(st.fixed_dictionaries({
            "name": maybe(any_text(max_size=8)), "arguments": ANY}))})), max_size=2)),
        "reasoning_content": ANY, "refusal": ANY}))})
OPENAI = st.fixed_dictionaries({"choices": maybe(st.lists(maybe(CHOICE), min_size=1, max_size=2)), "usage": ANY},
                               optional={"x": ANY})
PART = st.fixed_dictionaries({"text": maybe(any_text(max_size=40))}, optional={"thought": ANY})
CANDIDATE = st.fixed_dictionaries({
    "finishReason": maybe(st.sampled_from(["STOP", "MAX_TOKENS", "SAFETY"])),
    "content": maybe(st.fixed_dictionaries({"parts": maybe(st.lists(maybe(PART), max_size=3))}))})
GEMINI = st.fixed_dictionaries({"candidates": maybe(st.lists(maybe(CANDIDATE), min_size=1, max_size=2)),
                                "usageMetadata": ANY}, optional={"promptFeedback": ANY})
ANTHROPIC = st.fixed_dictionaries({
    "content": maybe(st.lists(maybe(st.one_of(
        st.fixed_dictionaries({"type": st.just("text"), "text": maybe(any_text(max_size=40))}),
        st.fixed_dictionaries({"type": st.just("thinking"), "thinking": maybe(any_text(max_size=40))}),
        st.fixed_dictionaries({"type": st.just("tool_use"), "input": maybe(st.dictionaries(any_text(max_size=5), ANY,
                                                                                           max_size=3))}))),
        max_size=3)),
    "stop_reason": maybe(st.sampled_from(["end_turn", "max_tokens", "tool_use"])), "usage": ANY})


def _check(resp) -> None:
    assert isinstance(resp, Response) and resp.custom_id == "cid"
    if resp.ok:
        assert isinstance(resp.text, str) and (resp.reasoning is None or isinstance(resp.reasoning, str))
    else:
        assert isinstance(resp.error, str) and resp.error
    json.dumps(resp.to_dict())  # what the cache writes: serialisable, whatever was in the answer


@fuzz(300)
@given(body=maybe(OPENAI), gemini=maybe(GEMINI), message=maybe(ANTHROPIC), depth=st.sampled_from([0, 0, 0, 50, 900]))
def fuzz_answers(body, gemini, message, depth):
    if depth and isinstance(message, dict) and isinstance(message.get("content"), list):
        message["content"].append({"type": "tool_use", "input": {"deep": deep(depth)}})
    _check(parse_chat("cid", body, "openai"))
    _check(parse_generate("cid", gemini, "gemini"))
    _check(parse_message("cid", message, "anthropic"))


LINE = st.one_of(any_text(max_size=60), ANY.map(lambda v: json.dumps(v)),
                 st.builds(lambda cid, v: json.dumps({"custom_id": cid, "response": v}), any_text(max_size=10), ANY),
                 st.builds(lambda cid, cut: json.dumps({"custom_id": cid, "response": {"x": 1}})[:cut],
                           any_text(max_size=10), st.integers(0, 60)))


@fuzz(200)
@given(lines=st.lists(LINE, max_size=8), sep=st.sampled_from(["\n", "\r\n", "\n\n", "\u2028"]))
def fuzz_result_lines(lines, sep):
    records, bad = read_result_lines(sep.join(lines), "OUT.jsonl")
    assert all(isinstance(r, dict) and isinstance(r.get("custom_id"), str) for r in records)
    for cid, problem in bad:
        assert (cid is None or isinstance(cid, str)) and isinstance(problem, str)
    for r in bad_line_responses(bad, "openai", "batch-1"):
        assert not r.ok and r.custom_id
    assert isinstance(unreadable_note(bad), str)


def test_provider_answers_raise_nothing_under_memory_and_time_caps():
    done = run_capped("test_fuzz_provider_answers", ["fuzz_answers", "fuzz_result_lines"],
                      env={"OPENBLAS_NUM_THREADS": "1"})
    assert done.returncode == 0 and "fuzzed" in done.stdout, done.stderr[-3000:] + replay()
