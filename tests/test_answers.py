"""The answer-reading contract (docs/ANSWERS.md): every answer of tests/data/answers/*.jsonl (written for this
project, the release's oddities among them) through ``gavel.answers.read``, each with its expected reading or
``unusable`` reason; and a property test: any text, any nesting, any truncation gives a reading or ``Unusable``,
never another exception and never a reading of a cut object."""

import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gavel.answers import STAGES, Unusable, read

CORPUS = [json.loads(line) for f in sorted((Path(__file__).parent / "data" / "answers").glob("*.jsonl"))
          for line in f.open(encoding="utf-8")]


def _reading(case):
    try:
        got = read(case["stage"], case["text"], case["finish_reason"], **case["context"])
    except Unusable as err:
        return {"unusable": err.reason}
    if "dropped" in got:  # the corpus names what was dropped by its reason, in order
        assert all(set(d) == {"field", "value", "why"} for d in got["dropped"])  # never past MAX_DROPPED here
        got = {**got, "dropped": [d["why"] for d in got["dropped"]]}
    return got


def test_corpus_covers_every_stage():
    assert len(CORPUS) >= 150
    per_stage = {s: sum(c["stage"] == s for c in CORPUS) for s in STAGES}
    assert all(n >= 20 for n in per_stage.values()), per_stage


@pytest.mark.parametrize("case", CORPUS, ids=[f"{c['stage']}:{c['what']}" for c in CORPUS])
def test_answer_reads_as_the_contract_says(case):
    assert _reading(case) == case["expect"]


def test_unusable_names_its_reason():
    with pytest.raises(Unusable) as err:
        read("compare_multi", '{"common": [{"A_index": 1', "length")
    assert err.value.reason == "truncated" and "character 0" in err.value.detail


VALID = [c for c in CORPUS if "unusable" not in c["expect"] and c["finish_reason"] == "stop"]
json_values = st.recursive(st.none() | st.booleans() | st.integers(-5, 50) | st.text(max_size=12),
                           lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
                           max_leaves=20)


@settings(max_examples=300, deadline=None)
@given(stage=st.sampled_from(STAGES), text=st.text(max_size=300),
       finish=st.sampled_from(["stop", "length", None]))
def test_random_unicode_reads_or_is_unusable(stage, text, finish):
    try:
        assert isinstance(read(stage, text, finish, n_a=3, n_b=3, n_spans=3, summary="x"), dict)
    except Unusable:
        pass


@settings(max_examples=300, deadline=None)
@given(stage=st.sampled_from(STAGES), value=json_values, key=st.sampled_from(
    ["extracted", "common", "relation", "readability_jargon", "tool", "decision", "name", "x"]))
def test_random_nesting_reads_or_is_unusable(stage, value, key):
    for text in (json.dumps({key: value}), repr({key: value}), f"**Final Answer:** {json.dumps({key: value})}"):
        try:
            assert isinstance(read(stage, text, "stop", n_a=2, n_b=2, n_spans=2), dict)
        except Unusable:
            pass


@settings(max_examples=1500, deadline=None)
@given(case=st.sampled_from(VALID), cut=st.floats(0, 1, exclude_max=True))
def test_truncated_valid_answer_is_never_read_from_a_cut_object(case, cut):
    text = case["text"]
    at = int(len(text) * cut)
    cut_text = text[:at]
    got = _reading({**case, "text": cut_text, "finish_reason": "length"})
    # read at all, a cut answer reads exactly as the whole answer does: a complete answer preceded the cut
    assert "unusable" in got or got == case["expect"], (cut_text, got)
