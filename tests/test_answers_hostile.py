"""``gavel.answers.read`` raises nothing but ``Unusable`` for any ``str``: property tests over what breaks
readers (every Unicode digit category, integers Python refuses to convert, NaN/Infinity, lone surrogates,
100,000-deep nesting, the agent's tool-call dialects) and the bounds that keep reading linear (a
``compare_multi`` answer cannot multiply its pairs; a runaway list is read once). Timings are the
benchmark's (benchmarks/answers.py hostile), never asserted here."""

import json
import math
import re
import sys
import unicodedata
from pathlib import Path

import pytest
from fuzzing import any_text, fuzz
from hypothesis import given
from hypothesis import strategies as st

from gavel.answers import STAGES, Unusable, placeholder_why, read, scan_objects
from gavel.answers.stages import MAX_PAIRS, MAX_SHARED_EVIDENCE
from gavel.answers.text import MAX_DROPPED

CONTEXT = {"n_a": 3, "n_b": 3, "n_spans": 3, "summary": "The mayor resigned in 2022."}
FINISH = ["stop", "length", None, "content_filter", "tool_calls", "weird"]

#: one character of each kind that has tripped a reader: every digit a str method or regex accepts
DIGITS = sorted({c for c in map(chr, range(0x110000))
                 if unicodedata.category(c) in ("Nd", "No", "Nl") or c.isdigit() or c.isnumeric()}
                - {chr(x) for x in range(0xD800, 0xE000)})


def _reads_or_unusable(stage, text, finish="stop"):
    try:
        got = read(stage, text, finish, **CONTEXT)
    except Unusable as err:
        assert err.reason and isinstance(err.detail, str)
        return None
    assert isinstance(got, dict)
    json.dumps(got)  # a reading is plain data (NaN and Infinity only where dropped values hold them)
    return got


def _shapes(value: str) -> list[tuple[str, str]]:
    """``value`` in every place each stage reads a number or a text."""
    v = json.dumps(value)
    return [("compare_multi", f'{{"common": [{{"A_index": {v}, "B_index": 1}}], "only_in_A": [{v}], "only_in_B": []}}'),
            ("compare_multi", f'{{"common": [{{"A_index": {value}, "B_index": 1}}], "only_in_A": [], "only_in_B": []}}'),
            ("residual_facts", f'{{"extracted": [{{"fact": {v}, "evidence_spans": [{v}, {value}]}}]}}'),
            ("extract", f'{{"extracted": [{{"value": {v}, "evidence": [{v}]}}, {{"value": {value}}}]}}'),
            ("style", f'{{"readability_jargon": {v}, "narrative_order": {value}, "citation_style": 3}}'),
            ("style", f"**Scores:**\nReadability & Jargon: {value}\nNarrative Order: 3"),
            ("compare_single", f'{{"relation": {v}}}'),
            ("agent_action", f'{{"name": "get_checklist", "arguments": "{{\\"item\\": {value}}}"}}'),
            ("agent_action", f'{{"tool": {v}, "args": {{"item": {v}}}}}')]


@pytest.mark.parametrize("chunk", range(0, len(DIGITS), 400))
def test_every_unicode_digit_reads_or_is_unusable(chunk):
    for c in DIGITS[chunk:chunk + 400]:
        for stage, text in _shapes(c) + _shapes(c * 3) + _shapes("1" + c):
            _reads_or_unusable(stage, text)


def test_unicode_digits_are_never_indices_or_ratings():
    for c in ("\u00b2", "\uff11", "\u0661", "\u0967", "\u2460"):
        got = read("compare_multi", f'{{"common": [{{"A_index": "{c}", "B_index": 1}}], "only_in_A": ["{c}"], "only_in_B": []}}',
                   n_a=3, n_b=3)
        assert got["common"] == [] and got["only_in_a"] == [] and {d["why"] for d in got["dropped"]} == {"not_an_index"}
        got = read("style", f'{{"readability_jargon": "{c}", "narrative_order": 3}}')
        assert got["scores"]["readability_jargon"] is None


@pytest.mark.parametrize("digits", [4300, 4301, 5000, 100_000])
def test_integers_python_refuses_to_convert(digits):
    big = "9" * digits
    for value in (big, "-" + big, f'"{big}"'):
        for stage, text in _shapes(value):
            _reads_or_unusable(stage, text)
    got = read("compare_multi", f'{{"common": [{{"A_index": {big}, "B_index": 1}}], "only_in_A": [], "only_in_B": []}}',
               n_a=3, n_b=3)
    assert got["common"] == [] and got["dropped"][0]["why"] == "out_of_range"
    got = read("compare_multi", f'{{"common": [{{"A_index": {big}, "B_index": 1}}], "only_in_A": [], "only_in_B": []}}')
    assert got["common"] == []  # no n given: still never an index


@pytest.mark.parametrize("word", ["NaN", "Infinity", "-Infinity", "1e999", "-1e999"])
def test_nan_and_infinity_are_never_read_as_numbers(word):
    for stage, text in _shapes(word):
        got = _reads_or_unusable(stage, text)
        if got and stage == "style":
            assert all(v is None or math.isfinite(v) for v in got["scores"].values())
        if got and stage == "extract":
            assert all(e["value"] not in ("nan", "inf", "-inf") for e in got["extracted"])
        if got and stage in ("compare_multi", "residual_facts"):
            assert all(isinstance(i, int) for p in got.get("common", []) for i in p)


@pytest.mark.parametrize("surrogate", ["\\ud800", "\\udfff", "\\ude00\\ud83d", "\ud800", "\udc00x"])
def test_lone_surrogates_are_no_text(surrogate):
    for stage, text in _shapes("a" + surrogate):
        got = _reads_or_unusable(stage, text)
        if got is not None and stage != "agent_action":  # whatever a scoring stage reads can be written as UTF-8
            json.dumps(got, ensure_ascii=False).encode("utf-8")
    with pytest.raises(Unusable) as err:
        read("extract", f'{{"extracted": [{{"value": "a{surrogate}b"}}]}}')
    assert err.value.reason == "schema"
    # the agent's arguments are the tools' to check (the checklist tool refuses them, the ledger escapes them)
    assert read("agent_action", f'{{"decision": "stop", "reason": "done {surrogate}"}}')["decision"] == "stop"


@pytest.mark.parametrize("depth", [100, 1000, 100_000])
@pytest.mark.parametrize("opener,closer", [("[", "]"), ('{"a": ', "}")])
def test_deep_nesting(depth, opener, closer):
    deep = opener * depth + "1" + closer * depth
    limit = sys.getrecursionlimit()
    texts = [deep, opener * depth, f'{{"extracted": {deep}}}', f'{{"common": [{{"A_index": {deep}, "B_index": 1}}]}}',
             f'{{"readability_jargon": {deep}}}', f'{{"tool": "get_checklist", "args": {{"x": {deep}}}}}',
             f'{{"name": "get_checklist", "arguments": {json.dumps(deep)}}}', f"<tool_call>{deep}</tool_call>"]
    for stage in STAGES:
        for text in texts if depth < 10_000 else texts[:1]:  # the deepest: one shape per stage (linear, but long)
            for finish in ("stop", "length") if depth < 10_000 else ("stop",):
                _reads_or_unusable(stage, text, finish)
    assert sys.getrecursionlimit() == limit
    assert scan_objects("{" * depth)[1] == 0


@pytest.mark.parametrize("opener,closer,inner", [("[", "]", 0), ('{"a": ', "}", 0), ('{"s": "{{[[", "a": ', "}", 0),
                                                 ('[{"a": 1}, ', "]", 1)])
def test_nesting_at_the_depth_limit_reads_alike_alone_or_scanned(opener, closer, inner):
    """An answer nested to just below and just past MAX_DEPTH (objects, lists, brackets inside strings, wide
    lists of objects) reads the same whether it is the text's one object (read at once, its depth bounded by
    the objects decoded and its "[") or the text is scanned (a first object before it): read to
    MAX_DEPTH + 1 levels, never deeper."""
    from gavel.answers.scan import MAX_DEPTH

    for k in range(MAX_DEPTH - 8, MAX_DEPTH + 4):
        text = '{"extracted": [{"value": "a", "evidence": [], "x": %s}]}' % (opener * k + "1" + closer * k)
        alone, scanned = _reads_or_unusable("extract", text), _reads_or_unusable("extract", "{}\n" + text)
        assert alone == scanned
        # three levels above x (object, list, entry), k levels of x, ``inner`` more inside its last one
        assert (alone is not None) == (3 + k + inner <= MAX_DEPTH + 1)
    wide = '{"extracted": [' + ", ".join(f'{{"value": "v{i}", "evidence": [{{"a": {{"b": [1]}}}}]}}' for i in range(200)) + "]}"
    assert len(_reads_or_unusable("extract", wide)["extracted"]) == 200 == len(
        _reads_or_unusable("extract", "{}\n" + wide)["extracted"])


def test_an_integer_of_more_than_max_digits_is_out_of_range_wherever_it_stands():
    """An integer of MAX_DIGITS + 1 digits (one Python still converts) reads as infinite, out of range, at every
    offset in a long answer: the look for a run of MAX_DIGITS digits samples every MAX_DIGITS // 2 characters
    and must never step over one."""
    from gavel.answers.scan import MAX_DIGITS

    for digits in (MAX_DIGITS + 1, MAX_DIGITS + 250):
        for pad in [*range(0, MAX_DIGITS // 2 + 1, 97), MAX_DIGITS // 2 - 1, MAX_DIGITS - 1, MAX_DIGITS + 1]:
            text = ('{"reasoning": "' + "x" * pad + '", "common": [], "only_in_A": [' + "7" * digits
                    + '], "only_in_B": [' + "1" * pad + "]}")
            got = read("compare_multi", text)
            assert got["only_in_a"] == [] and [(d["why"], d["value"]) for d in got["dropped"]][0] == (
                "out_of_range", float("inf")), (digits, pad)


_json_values = st.recursive(st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=8)
                            | st.sampled_from(["9" * 4400, "\ud800", "\u00b2", "\uff13", "<one atomic fact>", "4/5"]),
                            lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
                            max_leaves=16)
_keys = st.sampled_from(["extracted", "common", "relation", "readability_jargon", "Citation & Reference Style", "tool",
                         "name", "decision", "tool_calls", "function", "parameters", "a_index", "value", "fact"])


@fuzz(400)
@given(stage=st.sampled_from(STAGES), key=_keys, value=_json_values, finish=st.sampled_from(FINISH),
       wrap=st.sampled_from(["{}", "[{}]", "**Final Answer:** {}", "<tool_call>{}", "<|python_tag|>{}<|eom_id|>",
                             "[TOOL_CALLS]{}", "[TOOL_CALLS]get_checklist[ARGS]{}", "Scores:\n{}", "<think>x</think>{}",
                             "<|start|>assistant<|channel|>commentary to=functions.get_checklist<|message|>{}"]))
def test_any_json_value_in_any_dialect_reads_or_is_unusable(stage, key, value, finish, wrap):
    body = json.dumps({key: value}, allow_nan=True)
    for text in (wrap.format(body), wrap.format(repr({key: value})), wrap.format(body)[:-3]):
        _reads_or_unusable(stage, text, finish)


@fuzz(400)
@given(stage=st.sampled_from(STAGES), text=any_text(max_size=200)
       | st.text(alphabet='{}[]"\':,\\ 0123456789aeNIn\u201c\u201d\n<>|/tT', max_size=200), finish=st.sampled_from(FINISH))
def test_any_str_reads_or_is_unusable(stage, text, finish):
    _reads_or_unusable(stage, text, finish)


def test_compare_multi_repeats_cannot_multiply_pairs():
    """A 16 kB answer of repeated list-valued indices once made 4 million pairs (5.4 GB, 41 s): repeats inside
    a side are dropped before the product, so pairs never outnumber n_a x n_b."""
    side = json.dumps([1] * 2000)
    text = f'{{"common": [{{"A_index": {side}, "B_index": {side}}}], "only_in_A": [], "only_in_B": []}}'
    got = read("compare_multi", text, n_a=3, n_b=3)
    assert got["common"] == [[1, 1]] and _dropped_total(got) == 2 * 1999
    many = json.dumps(list(range(1, 1001)))
    with pytest.raises(Unusable) as err:  # without n, distinct indices are bounded by MAX_PAIRS
        read("compare_multi", f'{{"common": [{{"A_index": {many}, "B_index": {many}}}]}}')
    assert err.value.reason == "schema" and f"{MAX_PAIRS:,}" in err.value.detail
    entries = ", ".join([f'{{"A_index": {json.dumps(list(range(1, 41)))}, "B_index": {json.dumps(list(range(1, 41)))}}}'] * 10)
    with pytest.raises(Unusable):  # the bound counts every entry's product, repeated entries included
        read("compare_multi", f'{{"common": [{entries}]}}', n_a=40, n_b=40)


def _dropped_total(reading) -> int:
    return sum(d.get("count", 1) for d in reading["dropped"])


def test_runaway_list_keeps_each_distinct_entry_once():
    entries = ", ".join(f'{{"value": "v{i % 500}", "evidence": ["e{i % 500}"]}}' for i in range(20_000))
    got = read("extract", f'{{"extracted": [{entries}]}}')
    assert len(got["extracted"]) == 500 and _dropped_total(got) == 19_500


@pytest.mark.parametrize("stage,unit,context", [
    ("extract", '{"value": "same", "evidence": ["q"]}, ', {}),
    ("residual_facts", '{"fact": "same", "evidence_spans": [1]}, ', {"n_spans": 3}),
    ("compare_multi", '{"A_index": 1, "B_index": [1, 1, 0, "x"]}, ', {"n_a": 3, "n_b": 3})])
def test_a_runaway_list_keeps_a_bounded_reading(stage, unit, context):
    """A runaway list once kept one ``dropped`` entry per repeat (10 MB: 1.4 GB, the reading 21x the answer):
    the first MAX_DROPPED are listed, the rest counted in one closing entry per reason, nothing lost."""
    key = "common" if stage == "compare_multi" else "extracted"
    got = read(stage, f'{{"{key}": [' + unit * 5000 + unit.rstrip(", ") + "]}", **context)
    listed = [d for d in got["dropped"] if "count" not in d]
    more = [d for d in got["dropped"] if "count" in d]
    assert len(listed) == MAX_DROPPED and 1 <= len(more) <= 3
    assert all(d["field"] == "(more)" and d["value"] is None and d["count"] >= 1 for d in more)
    assert len({d["why"] for d in more}) == len(more)
    per_unit = {"extract": 1, "residual_facts": 1, "compare_multi": 4}[stage]  # a repeat, 0, "x", the pair again
    assert _dropped_total(got) == 5001 * per_unit - 1  # the first unit keeps its entry or pair
    assert len(json.dumps(got)) < 200_000


def test_a_list_value_times_its_evidence_is_bounded():
    """M values sharing K quotes give M·K references: 1 MB of them once ended in MemoryError (not Unusable)."""
    values = json.dumps([f"v{i}" for i in range(40_000)])
    quotes = json.dumps([f"q{i}" for i in range(40_000)])
    with pytest.raises(Unusable) as err:
        read("extract", f'{{"extracted": [{{"value": {values}, "evidence": {quotes}}}]}}', summary="v1 q1")
    assert err.value.reason == "schema" and f"{MAX_SHARED_EVIDENCE:,}" in err.value.detail
    got = read("extract", '{"extracted": [{"value": ["a", "b", "a"], "evidence": ["q", "r"]}]}')
    assert got["extracted"] == [{"value": "a", "evidence": ["q", "r"]}, {"value": "b", "evidence": ["q", "r"]}]
    assert [d["why"] for d in got["dropped"]] == ["duplicate"]


def test_many_duplicate_keys_name_each_conflict_once():
    text = "{" + ", ".join(f'"k{i % 3000}": {i}' for i in range(9000)) + ', "relation": "A equals B"}'
    with pytest.raises(Unusable) as err:
        read("compare_single", text)
    assert err.value.reason == "ambiguous" and "'k0'" in err.value.detail
    from gavel.answers.scan import loads
    assert loads("{" + ", ".join(f'"k{i % 3000}": {i}' for i in range(9000)) + "}").conflicts == [f"k{i}" for i in range(3000)]


def test_brace_fragments_before_the_answer_are_skipped():
    prose = "The court {held} that {x: y} and {'a': [1, 2} were moot.\n" * 2000
    got = read("extract", prose + '{"extracted": [{"value": "a", "evidence": []}]}')
    assert got["extracted"] == [{"value": "a", "evidence": []}]


def test_score_line_padded_with_spaces():
    text = "Scores:\nReadability & Jargon" + " " * 30_000 + ": 4\nNarrative Order" + " " * 30_000 + "\n"
    got = read("style", text)
    assert got["scores"]["readability_jargon"] == 4 and got["scores"]["narrative_order"] is None


def test_thousands_of_tool_calls():
    call = '<tool_call>{{"name": "read_document", "arguments": {{"doc_name": "D{}", "start_token": 0, "end_token": 9}}}}</tool_call>\n'
    with pytest.raises(Unusable) as err:
        read("agent_action", "".join(call.format(i) for i in range(5000)))
    assert err.value.reason == "ambiguous"
    got = read("agent_action", call.format(1) * 5000)
    assert got["args"]["doc_name"] == "D1"


PROMPTS = Path(__file__).resolve().parent.parent / "gavel" / "prompts"


def test_every_placeholder_the_prompts_show_is_dropped_when_echoed():
    shown = {m for p in PROMPTS.glob("*.txt") for m in re.findall(r'"(<[^"<>]+>)"', p.read_text(encoding="utf-8"))}
    assert "<one distinct piece of information>" in shown and len(shown) >= 10
    for placeholder in sorted(shown):
        assert placeholder_why(placeholder) == "prompt_placeholder", placeholder
        got = read("extract", json.dumps({"extracted": [{"value": placeholder, "evidence": [placeholder]}]}))
        assert got["extracted"] == [] and {d["why"] for d in got["dropped"]} == {"prompt_placeholder"}
    assert placeholder_why("Doe <counsel>") is None and placeholder_why("<5") is None


def test_prompt_placeholder_echoes_are_dropped_with_a_reason_in_documents():
    from gavel.documents import end_to_end
    from gavel.documents.corpus import Corpus, Document
    from gavel.documents.store import PatchError, check_value

    corpus = Corpus("c1", [Document("Complaint", "The ACLU sued the city on March 3, 2020.")])
    quote = {"text": "March 3, 2020", "source_document": "Complaint", "location": "p. 1"}
    text = json.dumps({"reasoning": "r", "extracted": [{"value": "<one distinct piece of information>", "evidence": [quote]},
                                                        {"value": "March 3, 2020", "evidence": [quote]}]})
    rows, problems = end_to_end.parse(text, corpus, "Filing_Date")
    assert [r["value"] for r in rows] == ["March 3, 2020"]
    assert len(problems) == 1 and "placeholder" in problems[0] and "value 1" in problems[0]
    with pytest.raises(PatchError, match="placeholder"):  # the agent's patches and the chunked merge
        check_value({"value": "<the information>", "evidence": [quote]}, "patch.0.extracted.0")
    assert check_value({"value": "March 3, 2020", "evidence": [quote]}, "patch.0.extracted.0")["value"] == "March 3, 2020"


def test_a_long_answer_leaves_the_cycle_collector_as_it_was():
    import gc

    text = '{"extracted": [' + '{"value": "a", "evidence": []}, ' * 40_000 + '{"value": "b"}]}'
    assert len(text) > 1_000_000 and gc.isenabled()
    assert len(read("extract", text)["extracted"]) == 2 and gc.isenabled()
    with pytest.raises(Unusable):
        read("extract", text[:-2], "length")
    assert gc.isenabled()
    gc.disable()
    try:
        read("extract", text)
        assert not gc.isenabled()  # a caller's own choice is kept
    finally:
        gc.enable()
