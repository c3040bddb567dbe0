"""A key given twice in one object of an answer (docs/ANSWERS.md): with different values the answer is
``ambiguous``, wherever the object sits (nested deep, in a list of objects, beside the answer, spelled with
escapes); with the same value it reads as if written once. The decoder of ``gavel.answers.scan`` finds it
while decoding (``object_pairs_hook``); these tests hold any quicker way of finding it to the same readings,
and a property compares every reading with one worked out independently from the generated object."""

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gavel.answers import Unusable, read

ENTRY = '{"value": "a", "evidence": []}'


def _reason(text: str, stage: str = "extract") -> str | dict:
    try:
        return read(stage, text)
    except Unusable as err:
        return err.reason


@pytest.mark.parametrize("text", [
    # nested four objects deep inside an evidence object
    '{"extracted": [{"value": "a", "evidence": [{"text": "q", "m": {"a": {"b": {"c": {"d": 1, "d": 2}}}}}]}]}',
    # the second of two entries only: a list of objects, the first clean
    '{"extracted": [' + ENTRY + ', {"value": "b", "value": "c", "evidence": []}]}',
    # the top key spelled once plainly and once with an escape (\u0065 is "e")
    '{"extracted": [' + ENTRY + '], "\\u0065xtracted": [{"value": "b", "evidence": []}]}',
    # both spellings escaped differently (\u0076 "v", \u0061 "a")
    '{"extracted": [{"\\u0076alue": "a", "v\\u0061lue": "b", "evidence": []}]}',
    # in the reasoning, which is never read otherwise
    '{"reasoning": {"x": 1, "x": 2}, "extracted": [' + ENTRY + ']}',
    # in an object beside the answer, inside a wrapper
    '{"answer": {"extracted": [' + ENTRY + ']}, "note": {"k": 1, "k": 2}}',
    # in the answer object after a first object that is clean (the text is scanned, not read at once)
    'draft {"note": 1}\n{"extracted": [{"value": "a", "evidence": [], "evidence": ["q"]}]}',
    # values that differ only inside: lists, nested objects, number types
    '{"extracted": [{"value": "a", "evidence": ["q", "r"], "evidence": ["q"]}]}',
    '{"extracted": [' + ENTRY + '], "m": {"o": {"x": 1}, "o": {"x": 1, "y": 2}}}',
    '{"extracted": [' + ENTRY + '], "m": {"n": 1, "n": "1"}}',
    # a key given three times, the last two alike
    '{"extracted": [' + ENTRY + '], "m": {"n": 1, "n": 2, "n": 2}}',
])
def test_a_key_given_twice_with_different_values_is_ambiguous(text):
    assert _reason(text) == "ambiguous"
    with pytest.raises(Unusable) as err:
        read("extract", text)
    assert "given twice with different values" in err.value.detail


@pytest.mark.parametrize(("text", "once"), [
    ('{"extracted": [{"value": "a", "v\\u0061lue": "a", "evidence": []}]}', '{"extracted": [' + ENTRY + ']}'),
    ('{"extracted": [{"value": "a", "evidence": ["q"], "evidence": ["q"]}]}',
     '{"extracted": [{"value": "a", "evidence": ["q"]}]}'),
    ('{"extracted": [' + ENTRY + '], "extracted": [' + ENTRY + ']}', '{"extracted": [' + ENTRY + ']}'),
    ('{"extracted": [' + ENTRY + '], "m": {"o": {"x": 1, "x": 1}, "o": {"x": 1}}}',
     '{"extracted": [' + ENTRY + '], "m": {"o": {"x": 1}}}'),
])
def test_a_key_given_twice_with_the_same_value_reads_as_once(text, once):
    assert _reason(text) == _reason(once) and isinstance(_reason(text), dict)


def test_keys_alike_only_inside_strings_are_no_duplicates():
    text = '{"extracted": [{"value": "\\"value\\": 1, \\"value\\": 2", "evidence": ["\\"q\\": 1", "\\"q\\":2"]}]}'
    assert read("extract", text)["extracted"] == [{"value": '"value": 1, "value": 2', "evidence": ['"q": 1', '"q":2']}]


def test_every_stage_refuses_a_key_given_twice():
    assert _reason('{"common": [{"A_index": 1, "B_index": 1, "B_index": 2}], "only_in_A": []}',
                   "compare_multi") == "ambiguous"
    assert _reason('{"relation": "A equals B", "relation": "A contains B"}', "compare_single") == "ambiguous"
    assert _reason('{"extracted": [{"fact": "f", "evidence_spans": [1], "evidence_spans": [2]}]}',
                   "residual_facts") == "ambiguous"
    assert _reason('{"citation_style": 3, "narrative_order": 4, "narrative_order": 2}', "style") == "ambiguous"
    assert _reason('{"tool": "list_documents", "args": {"a": 1, "a": 2}}', "agent_action") == "ambiguous"


# ---------------------------------------------------------------------- property: any nesting, any spelling
_KEYS = ["k", "value", "evidence", "a"]  # few keys: repeats are common
_leaf = st.one_of(st.integers(-3, 3), st.sampled_from(["x", "y", "value", "\"k\": 1"]), st.none(), st.booleans())


def _node(children):
    pairs = st.lists(st.tuples(st.sampled_from(_KEYS), children), max_size=4).map(lambda p: ("obj", p))
    return st.one_of(pairs, st.lists(children, max_size=3).map(lambda x: ("list", x)))


_trees = st.recursive(_leaf, _node, max_leaves=25)


def _canon(node, conflicts: list):
    """The value a decoder keeping the last of repeated keys gives, and (in ``conflicts``) every key given
    again with a value unlike the one it replaces: worked out from the generated tree, not from any text."""
    if isinstance(node, tuple) and node[0] == "obj":
        out = {}
        for k, v in node[1]:
            v = _canon(v, conflicts)
            if k in out and out[k] != v:
                conflicts.append(k)
            out[k] = v
        return out
    if isinstance(node, tuple):
        return [_canon(v, conflicts) for v in node[1]]
    return node


def _write(node, escape: list, blank: str) -> str:
    """The tree as JSON text, each key's first letter written as a ``\\u`` escape where ``escape`` says so
    (drawn in order), blanks around the colons."""
    if isinstance(node, tuple) and node[0] == "obj":
        parts = []
        for k, v in node[1]:
            key = (f"\\u{ord(k[0]):04x}" + k[1:]) if escape and escape.pop() else k
            parts.append(f'"{key}"{blank}:{blank}{_write(v, escape, blank)}')
        return "{" + ", ".join(parts) + "}"
    if isinstance(node, tuple):
        return "[" + ", ".join(_write(v, escape, blank) for v in node[1]) + "]"
    return json.dumps(node)


@settings(max_examples=400, deadline=None)
@given(tree=_trees, escape=st.lists(st.booleans(), max_size=40), blank=st.sampled_from(["", " ", "\n\t"]),
       where=st.sampled_from(["entry", "beside", "evidence"]))
def test_readings_with_repeated_keys_match_the_tree(tree, escape, blank, where):
    """A generated tree of objects and lists (keys repeated, some spelled with escapes) put into an extract
    answer: the reading is ``ambiguous`` exactly when some object of the tree gives a key again with another
    value, and otherwise the reading of the same answer written with each key once."""
    conflicts = []
    once = json.dumps(_canon(tree, conflicts))
    written = _write(tree, list(escape), blank)
    shape = {"entry": '{{"extracted": [{{"value": "v", "evidence": ["q"], "x": {0}}}]}}',
             "beside": '{{"extracted": [{{"value": "v", "evidence": ["q"]}}], "x": {0}}}',
             "evidence": '{{"extracted": [{{"value": "v", "evidence": [{{"text": "q", "x": {0}}}]}}]}}'}[where]
    got, expected = _reason(shape.format(written)), _reason(shape.format(once))
    if conflicts:
        assert got == "ambiguous"
    else:
        assert got == expected


def test_a_conflict_inside_a_value_a_repeated_key_replaces_is_still_ambiguous():
    """A property run found it (seed of the eighth session): ``evidence`` given twice, the first value an
    object with ``k`` given twice with different values, the second the same as the first's last reading.
    The outer repeat looked harmless (equal values), and the decoder dropped the inner object with its
    conflict, so the answer was read. A key given again with another value anywhere is ambiguous."""
    inner = '{"k": 0, "k": [2, null, 0]}'
    for where in ('{{"extracted": [{{"value": "v", "evidence": ["q"], "x": {0}}}]}}',
                  '{{"extracted": [{{"value": "v", "evidence": ["q"]}}], "x": {0}}}'):
        text = where.format('{"evidence": ' + inner + ', "evidence": {"k": [2, null, 0]}}')
        assert _reason(text) == "ambiguous", text
    # the same repeat with no conflict inside is read as once
    clean = '{"extracted": [{"value": "v", "evidence": ["q"], "x": {"e": {"k": 1}, "e": {"k": 1}}}]}'
    assert isinstance(_reason(clean), dict)
