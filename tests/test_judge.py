import pytest

from gavel.release import judge
from gavel.release.judge import JudgeParseError, parse_answer


@pytest.mark.parametrize("text,relation,orientation", [
    ("model equals reference", "equal", "model_reference"),
    ("reference equals model", "equal", "model_reference"),
    ("reference contains model", "reference_contains_model", "model_reference"),
    ("model contains reference", "model_contains_reference", "model_reference"),
    ("model and reference are different", "different", "model_reference"),
    ("reference and model are different", "different", "model_reference"),
    ("A equals B", "equal", "unknown"),
    ("B contains A", "b_contains_a", "unknown"),
    ("A and B are different", "different", "unknown"),
])
def test_relation_vocabularies(text, relation, orientation):
    j = parse_answer(text)
    assert (j.kind, j.relation, j.orientation) == ("relation", relation, orientation)


def test_matching_both_keyings():
    j = parse_answer({"common": [{"reference_index": 3, "model_index": 1}], "only_in_model": [2],
                      "only_in_reference": [1, 2]})
    assert j.pairs == [(1, 3)] and j.only_in_model == [2] and j.only_in_reference == [1, 2]
    assert j.orientation == "model_reference" and not j.problems
    j = parse_answer({"common": [{"A_index": 2, "B_index": 1}], "only_in_A": [1], "only_in_B": []})
    assert j.pairs == [(2, 1)] and j.orientation == "unknown"


def test_index_oddities_are_reported_not_scored():
    j = parse_answer({"common": [{"model_index": None, "reference_index": 1},
                                 {"model_index": [1, 2], "reference_index": 2},
                                 {"model_index": 3, "reference_index": 3}],
                      "only_in_model": [], "only_in_reference": []})
    assert j.pairs == [(3, 3)]
    assert j.problems == ["null model_index", "list-valued model_index [1, 2]"]
    assert judge.check_ranges(j, n_model=2, n_reference=5) == ["model index out of range [3] (list has 2)"]
    assert judge.check_ranges(j, n_model=None, n_reference=None) == []


def test_text_answers_are_salvaged():
    text = ("**Reasoning:** x\n\n**Final Answer:**\n```json\n{\"common\": [{\"A_index\": 1, \"B_index\": 1}],"
            " \"only_in_A\": [], \"only_in_B\": [2]}\n```")
    j = parse_answer(text)
    assert j.salvaged_from_text and j.pairs == [(1, 1)] and j.only_in_reference == [2]
    j = parse_answer("Some thoughts.\n**Final Answer:** reference contains model")
    assert j.salvaged_from_text and j.relation == "reference_contains_model"


def test_unreadable_and_degenerate_answers_raise_with_source():
    with pytest.raises(JudgeParseError, match="file.json: case 1") as err:
        parse_answer("the model is kind of like the reference", "file.json: case 1")
    assert not err.value.degenerate
    runaway = "```json\n{\"common\": [], \"only_in_A\": [" + ", ".join(map(str, range(300))) + "]\n ],\n}```"
    with pytest.raises(JudgeParseError) as err:
        parse_answer(runaway, "f")
    assert err.value.degenerate
    with pytest.raises(JudgeParseError):
        parse_answer(42, "f")
