"""An answer that echoes its own prompt (issue 45): the prompts' format examples have one definition
(``gavel.answers.examples``), written into the templates when they are read and used by the reader; a value,
fact or quote that is the prompt's own example or rule is dropped (``prompt_echo``) and never reaches the
comparison's ``identical`` gate. The corpus cases are in tests/data/answers/*.jsonl."""

import json
import re

from gavel.answers import read
from gavel.answers.examples import EXAMPLES, TEMPLATES, echo
from gavel.core.config import PROMPTS_DIR
from gavel.llm.records import Request, Response
from gavel.ref import prompts
from gavel.ref.stages import extract
from gavel.ref.stages.compare import gate

SUMMARY = "The court ruled on May 21, 2019. The information, stated briefly, is in the docket."


def _values(answer: dict) -> tuple[str, ...]:
    req = Request(stage="extract", model="m", messages=[{"role": "user", "content": "x"}], case_id="c", item="i")
    rows, status = extract.parse_response(req, Response(custom_id="x", status="succeeded", text=json.dumps(answer),
                                                        finish_reason="stop"), SUMMARY)
    assert status["status"] == "ok", status
    return tuple(r["value"] for r in rows)


def test_echoed_format_examples_never_meet_the_identical_gate():
    """Gemma 3 270M's answer on both sides: the format example's words as the value. Read as values they were
    the same on both sides, and the gate scored the pair 1 without a comparison."""
    echoed = {"reasoning": "the summary", "extracted": [{"evidence": ["The information, stated briefly"],
                                                         "value": "the information, stated briefly"}]}
    model, reference = _values(echoed), _values(echoed)
    assert model == reference == ()
    assert gate(model, reference) == "not_applicable"
    real = {"extracted": [{"evidence": ["May 21, 2019"], "value": "May 21, 2019"}]}
    assert gate(_values(real), _values(real)) == "identical"  # a real value still meets the gate


def test_the_echo_is_named_in_the_status_row():
    req = Request(stage="extract", model="m", messages=[{"role": "user", "content": "x"}], case_id="c", item="i")
    _, status = extract.parse_response(req, Response(custom_id="x", status="succeeded", finish_reason="stop", text=json.dumps(
        {"extracted": [{"evidence": [], "value": "one entry per distinct piece of information"}]})), SUMMARY)
    assert (status["n_values"], status["problems"]) == (0, "extracted[0].value: prompt echo")


def test_prompt_examples_have_one_definition_the_templates_name():
    """Each example text stands in the code once: the template files name it (``${example_...}``) and hold
    no copy, the rendered prompt carries it, and the reader knows it as an echo."""
    used = set()
    for path in sorted(PROMPTS_DIR.glob("*.txt")):
        raw = path.read_text(encoding="utf-8")
        used |= set(re.findall(r"\$\{(example_[a-z_]+)\}", raw))
        assert not [t for t in EXAMPLES.values() if t in raw], path.name
    assert used == set(EXAMPLES)
    for stage, name in TEMPLATES.items():
        text = prompts.render(name, **{f: "FIELD" for f in prompts.placeholders(name)})
        mine = [t for k, t in EXAMPLES.items() if k.startswith(f"example_{name}_")]
        assert mine and all(t in text for t in mine)
        assert all(echo(stage, t) for t in mine) and all(echo(stage, t.strip("<>")) for t in mine)
        assert not any(k.startswith("example_") for k in prompts.placeholders(name))


def test_the_paper_templates_render_byte_identical():
    """The templates as the paper's configurations send them: their hashes (in every run's evaluation.json)
    are those of the files before the examples moved (306ab37), and so are the rendered prompts."""
    assert prompts.template_hash("extract") == "b30a217e7ffdb8c0"
    assert prompts.template_hash("residual") == "6377a295709cff94"
    assert '"value": "<the information, stated briefly>"' in prompts.template_text("extract")
    assert '"evidence_spans": [<numbers of the spans it comes from>]' in prompts.template_text("residual")


def test_rule_echoes_and_values_that_share_words():
    assert echo("extract", "The items are copied character for character from the summary")
    assert echo("extract", "If the summary says nothing about the item")
    assert echo("residual_facts", "Skip spans that are filler, fragments, or carry no information")
    # a value sharing a run of the prompt's words that are mostly function words, or under half of it
    assert not echo("extract", "Settlement of a legal case in 2019")
    assert not echo("extract", "the information, stated briefly: filed May 21, 2019 by Doe")
    assert not echo("extract", "May 21, 2019") and not echo("compare_multi", "one atomic fact")
    # a field filled in per request is no part of the prompt's own text: no run reaches across it
    assert not echo("extract", "Case summary Checklist item")
    got = read("residual_facts", json.dumps({"extracted": [{"fact": "One atomic fact.", "evidence_spans": [1]}]}),
               n_spans=2)
    assert got == {"extracted": [], "dropped": [{"field": "extracted[0].fact", "value": "One atomic fact.",
                                                 "why": "prompt_echo"}]}


# ---------------------------------------------------------------- properties (hypothesis)
import pytest  # noqa: E402
from fuzzing import any_text, fuzz  # noqa: E402
from hypothesis import given  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from gavel.answers import Unusable  # noqa: E402

TOKENS = ["<|start|>", "<|channel|>", "<|message|>", "<|end|>", "<|return|>", "<|call|>", "assistant", "final",
          "analysis", "commentary to=functions.x", "{'extracted': []}", " "]


@fuzz(200)
@given(reasoning=st.lists(st.sampled_from(TOKENS) | any_text(max_size=6), max_size=12).map("".join),
       harmony=st.booleans())
def test_tokens_inside_a_json_string_never_change_the_reading(reasoning, harmony):
    """Whatever Harmony tokens a string of the answer object holds, the reading is that of the object (inside
    a final message or alone)."""
    answer = json.dumps({"reasoning": reasoning, "extracted": [{"value": "May 21, 2019", "evidence": []}]})
    if harmony:
        answer = "<|channel|>analysis<|message|>think<|end|><|start|>assistant<|channel|>final<|message|>" + answer
    parsed = json.loads(json.dumps(reasoning))  # a surrogate pair's \u escapes parse to one character
    if any("\ud800" <= c <= "\udfff" for c in parsed):  # a lone surrogate is no text: refused, by name
        with pytest.raises(Unusable, match="lone surrogate"):
            read("extract", answer)
        return
    assert read("extract", answer)["extracted"] == [{"value": "May 21, 2019", "evidence": []}]


@fuzz(200)
@given(example=st.sampled_from(sorted(t for k, t in EXAMPLES.items() if k.startswith("example_extract_"))), case=st.sampled_from([str.lower, str.upper, str.title]),
       around=st.sampled_from(["", " ", ".", "<", ">", "\n"]),
       kind=st.sampled_from(["reasoning", "fact", "spans"]))
def test_an_echoed_example_is_never_a_value(example, case, around, kind):
    text = case(around + example.strip("<>") + around)
    got = read("extract", json.dumps({"extracted": [{"value": text, "evidence": [text]}]}))
    assert got["extracted"] == [] and {d["why"] for d in got["dropped"]} <= {"prompt_echo", "prompt_placeholder"}
    residual = case(around + EXAMPLES[f"example_residual_{kind}"].strip("<>") + around)
    got = read("residual_facts", json.dumps({"extracted": [{"fact": residual, "evidence_spans": [1]}]}), n_spans=1)
    assert got["extracted"] == []  # the stage's own examples: an extract example is no echo of residual's prompt


def test_an_unknown_key_beside_an_empty_matching_is_no_lost_index():
    """``dropped`` now lists unknown keys: the compare stage's ``indices`` status (every index dropped) counts
    dropped indices only, so a key beside an empty matching leaves it a matching (F1 0), as before."""
    from gavel.ref.stages import compare

    meta = {"model_is_a": True, "n_model": 2, "n_reference": 2, "gate": "multi", "order": 1}
    text = json.dumps({"common": [], "only_in_A": [], "only_in_B": [], "confidence": "high"})
    row = compare.parse_response(meta, Response(custom_id="x", status="succeeded", text=text, finish_reason="stop"))
    assert (row["status"], row["score"]) == ("ok", 0.0), row
    assert row["problems"] == "confidence 'high': unknown key"
    lost = json.dumps({"common": [{"A_index": 7, "B_index": 9}], "only_in_A": [], "only_in_B": []})
    row = compare.parse_response(meta, Response(custom_id="x", status="succeeded", text=lost, finish_reason="stop"))
    assert row["status"] == "indices"


def test_no_character_beyond_ascii_lowers_into_a_word():
    """The echo check splits a text into words as ASCII bytes, lowered as bytes, when each of its characters
    beyond ASCII is a blank to ``_WORD`` (no letter, no digit): right only while none of them becomes a letter
    or a digit in lower case (checked for every character this Python knows)."""
    turned = [hex(c) for c in range(0x80, 0x110000)
              if not chr(c).isalnum() and any(x.isalnum() for x in chr(c).lower())]
    assert turned == []


PIECES = ["the", "Information", "stated", "briefly", "EXACT", "quote", "from", "summary", "one", "atomic", "fact",
          "copied", "character", "for", "é", "\u212a", "\u0130", "\u2019", "\u2014", "?", "\ufb01", "\u00b2", "\u0663",
          "\u24b6", "\u00a0", " ", ".", "<", ">"]


@fuzz(300)
@given(parts=st.lists(st.sampled_from(PIECES) | any_text(max_size=4), max_size=40),
       glue=st.sampled_from(["", " ", "\u2019", ". "]), stage=st.sampled_from(sorted(TEMPLATES)),
       rules=st.booleans())
def test_words_split_as_bytes_tell_what_the_words_tell(parts, glue, stage, rules, monkeypatch):
    """Split as ASCII bytes (the common case), a text has the words :func:`words` finds, and the echo check
    tells the same from them as from the words as strings."""
    from gavel.answers import examples

    text = glue.join(parts)
    split = examples._split(text)
    assert split is None or tuple(split) == tuple(w.encode() for w in examples.words(text))
    fast = examples._echo(stage, text, rules)
    with monkeypatch.context() as m:
        m.setattr(examples, "_split", lambda _: None)
        assert examples._echo(stage, text, rules) == fast
