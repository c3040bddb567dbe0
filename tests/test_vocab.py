"""One definition per vocabulary (gavel.core.vocab): the LLM judge and the human annotators rate style on the
same rubric in the same direction (1 = completely different, 5 = the same), and relations are scored and
oriented by one table."""

import re
from pathlib import Path

import pytest
from needs import need_module

from gavel.core import vocab
from gavel.ref import scoring
from gavel.ref.stages import style


def test_the_style_prompt_lists_each_rating_with_the_rubric_text_of_that_rating():
    text = style.aspects_text()
    for key, (label, _what, levels) in vocab.STYLE_RUBRIC.items():
        assert f"{label} (`{key}`)" in text
        for rating in range(1, 6):
            assert f"   {rating} = {levels[rating - 1]}" in text
    # the lowest rating is the most different, the highest the same: both prompt and form say so
    assert "different" in vocab.STYLE_RUBRIC["readability_jargon"][2][0]
    assert "same" in vocab.STYLE_RUBRIC["formatting_layout"][2][4]


def test_the_annotation_form_renders_the_same_rubric_with_rating_n_for_level_n():
    need_module("flask", "the annotation extra is not installed")
    from gavel.annotation import app

    assert app.STYLE_RUBRIC is vocab.STYLE_RUBRIC
    template = (Path(app.__file__).parent / "templates" / "style.html").read_text()
    # each radio button's value is the 1-based position of the level text it shows
    assert re.search(r"for text in levels %\}\{% set n = loop.index %\}", template)
    assert 'value="{{ n }}"' in template and "{{ n }}: {{ text }}" in template
    assert "1 = completely different, 5 = identical" in template


def test_s_style_and_the_stage_schema_use_the_rubric_aspects_in_order():
    assert tuple(style.SCHEMA["schema"]["required"]) == vocab.STYLE_ASPECTS
    assert scoring.s_style(dict.fromkeys(vocab.STYLE_ASPECTS, 5)) == 100
    assert scoring.s_style(dict.fromkeys(vocab.STYLE_ASPECTS, 1)) == 0


@pytest.mark.parametrize("ab,model_is_a,expected", [
    ("a_contains_b", True, "model_contains_reference"), ("a_contains_b", False, "reference_contains_model"),
    ("b_contains_a", True, "reference_contains_model"), ("b_contains_a", False, "model_contains_reference"),
    ("a_equals_b", False, "equal"), ("a_and_b_different", True, "different")])
def test_an_ab_relation_is_oriented_by_where_the_model_stood(ab, model_is_a, expected):
    assert vocab.relation_of(ab, model_is_a) == expected
    assert expected in vocab.RELATIONS


def test_unknown_ab_relation_is_refused():
    with pytest.raises(ValueError, match="unknown A/B relation"):
        vocab.relation_of("equal-ish", True)
