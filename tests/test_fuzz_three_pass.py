"""Fuzz target: the answers of the three-pass document method (docs/hardening.md, "The three-pass method").

Hypothesis writes the model's answer to every call of a run over a three-document case (each extract, each
merge join, the prune): JSON of the right shape with values and evidence drawn near the real ones (quotes of
the documents, whole and cut mid-word, one letter, a space; documents that exist and do not; locations
written `chunk N` and not), JSON of any shape, or text that is no JSON. Whatever they say, the run ends
without an exception, and what it keeps is what the method promises: every value has evidence, every
evidence object is one the first pass gave for that item, quoted whole-word and byte for byte from the
named document at a location written `chunk N`, and every value's text is one the first pass gave for the
item or a rewording the log records. Every log record gives its reason. Examples are bounded in size (a few
kilobytes of answers) and each has a deadline.
"""

from __future__ import annotations

import json
import tempfile

from fuzzing import any_text, fuzz
from hypothesis import given
from hypothesis import strategies as st
from test_three_pass import EXAMPLE, MODEL, TEXTS, corpus

from gavel.core import items as gitems
from gavel.documents import three_pass
from gavel.llm.providers.mock import MockProvider

CHECKLIST = gitems.load(EXAMPLE)
DOCS = list(TEXTS)
QUOTES = ["U.S. District Court for the District of Maine", "District of Maine", "Maine", "Main", "e", " ", "",
          "dismissed the case on June 1, 2012", "Case closed on June 1, 2012.", "No party paid any money.",
          "laintiffs filed", "ORDER.", "1, 2012", "June", "x" * 300, "caf\u00e9", "\u0000", "Docket entry 40"]
VALUES = ["Dismissed on June 1, 2012", "Settled for $1 million paid to the plaintiffs", "Maine", "Dismissed",
          "Case not dismissed; motion to dismiss denied on June 1, 2012", "The City paid the plaintiffs $1 million",
          "U.S. District Court for the District of Maine", "  ", "", "closed June 2012", "\u202egniltteS"]
LOCATIONS = ["chunk 1", "chunk 2", "chunk \u0661", "chunk 0001", "Chunk 1", "chunk 1 \u2026 also chunk 7", " chunk 1",
             "chunk 1 ", "chunk 99999999999", "", "page 3"]
KEYS = ["court", "state", "outcome", "money", "Court", "Outcome", "colour", "", "01_court"]
IDS = [f"{side}{n}" for side in "ABv" for n in range(1, 5)] + ["", "v0", "A01"]

junk = st.recursive(st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | any_text(max_size=20),
                    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(any_text(max_size=8), inner, max_size=3),
                    max_leaves=8)
#: quotes each document holds, at its one chunk: most evidence is drawn from these, so values reach every pass
FOUND = [(q, d) for d in DOCS for q in QUOTES if q and q in TEXTS[d]]
found = st.sampled_from(FOUND).map(lambda qd: {"text": qd[0], "source_document": qd[1], "location": "chunk 1"})
anywhere = st.fixed_dictionaries({"text": st.sampled_from(QUOTES), "source_document": st.sampled_from(
    DOCS + ["Nowhere", "../../etc/passwd", ""]), "location": st.sampled_from(LOCATIONS)})
evidence = st.one_of(found, found, found, anywhere, junk)
value = st.fixed_dictionaries({"value": st.sampled_from(VALUES) | st.sampled_from(VALUES) | junk,
                               "evidence": st.lists(evidence, min_size=1, max_size=3) | junk},
                              optional={"from": st.lists(st.sampled_from(IDS), max_size=3) | st.lists(
                                  st.sampled_from(IDS) | junk, max_size=3) | junk})
entry = st.one_of(*[st.fixed_dictionaries({"key": st.sampled_from(KEYS), "values": st.lists(value, min_size=1,
                                                                                           max_size=3)})] * 3,
                  st.fixed_dictionaries({"key": st.sampled_from(KEYS) | junk, "values": st.lists(value, max_size=3) | junk}),
                  junk)
items_answer = st.fixed_dictionaries({"items": st.lists(entry, max_size=4)}) | st.fixed_dictionaries({"items": junk})
prune_answer = st.fixed_dictionaries({
    "kept": st.lists(st.fixed_dictionaries({"id": st.sampled_from(IDS) | st.sampled_from(IDS) | junk, "value": st.sampled_from(VALUES) | junk,
                                            "evidence": st.lists(evidence, max_size=3) | junk}), max_size=5) | junk,
    "removed": st.lists(st.fixed_dictionaries({"id": st.sampled_from(IDS) | junk, "why": any_text(max_size=30) | junk}),
                        max_size=3) | junk})


def answer_text(obj):
    """An answer as a model may send it: the JSON alone, wrapped in prose, cut short, or no JSON at all."""
    return st.sampled_from(["json", "json", "json", "prose", "cut", "none"]).map(
        lambda how: {"json": json.dumps(obj), "prose": f"Here it is:\n```json\n{json.dumps(obj)}\n```",
                     "cut": json.dumps(obj)[:-3], "none": "I cannot help with that."}[how])


def answers(strategy):
    return strategy.flatmap(answer_text)


#: an answer that echoes what the prompt lists (every value kept, under its own id), each value's text
#: replaced by the drawn rewording where there is one, or changed in meaning with every word kept (issue 46:
#: a negation dropped or added, who did what to whom swapped, a zero-width space inside): it reaches the
#: checks on a value's text
TWISTS = ["!drop_not", "!add_not", "!swap", "!zero_width"]
echoes = st.lists(st.sampled_from(VALUES) | st.sampled_from(TWISTS) | st.sampled_from(TWISTS) | st.none(),
                  min_size=1, max_size=4).map(lambda r: ("echo", r))
#: texts a twist made: a value that changes meaning never leaves a pass as a rewording
TWISTED: set = set()


def _twist(value: str, how: str) -> str:
    words = value.split(" ")
    if how == "!drop_not" and "not" in words:
        out = " ".join(w for w in words if w != "not")
    elif how == "!add_not" and words[0]:
        out = " ".join([words[0], "not", *words[1:]]) if len(words) > 1 else value
    elif how == "!zero_width" and " " in value:  # where a space was: the words stay the same
        out = value.replace(" ", "\u200b", 1)
    elif how == "!swap":  # the first and the last word trade places around the words between them
        content = [i for i, w in enumerate(words) if w.strip(",.;$").isalpha() and len(w) > 3]
        if len(content) < 3:
            return value
        first, last = content[0], content[-1]
        words[first], words[last] = words[last], words[first]
        out = " ".join(words)
    else:
        return value
    if out != value:
        TWISTED.add(out.strip())
    return out


def _listed(prompt: str, after: str, before: str) -> list[dict]:
    block = prompt.split(after, 1)[1].split(before, 1)[0]
    key, out = None, []
    for line in block.splitlines():
        if line.startswith("## "):
            key = line[3:].strip()
        elif line.startswith("{"):
            out.append(dict(json.loads(line), **({"item": key} if key else {})))
    return out


def _echo(prompt: str, stage: str, rewordings: list) -> str:
    def text(n, v):
        said = rewordings[n % len(rewordings)]
        return _twist(v["value"], said) if said in TWISTS else said or v["value"]
    if stage == three_pass.STAGES["merge"]:
        listed = _listed(prompt, "# Checklist A", "# Answer")
        by_key: dict = {}
        for n, v in enumerate(listed):
            by_key.setdefault(v["item"], []).append({"from": [v["id"]], "value": text(n, v), "evidence": v["evidence"]})
        return json.dumps({"items": [{"key": k, "values": vs} for k, vs in by_key.items()]})
    listed = _listed(prompt, "(each value has an id)", "# Answer")
    return json.dumps({"kept": [{"id": v["id"], "value": text(n, v), "evidence": v["evidence"]}
                                for n, v in enumerate(listed)], "removed": []})


@fuzz(40)
@given(extract=st.fixed_dictionaries({d: answers(items_answer) for d in DOCS}),
       merge=st.lists(answers(items_answer) | echoes | echoes, min_size=2, max_size=2),
       prune=answers(prune_answer) | echoes | echoes)
def test_fuzz_three_pass_answers(extract, merge, prune):
    _run_and_check(extract, merge, prune)


def _good_extract(doc: str):
    """A first-pass answer of the right shape for ``doc``: values with evidence the document holds."""
    quotes = st.sampled_from([q for q, d in FOUND if d == doc]).map(
        lambda q: {"text": q, "source_document": doc, "location": "chunk 1"})
    values = st.lists(st.fixed_dictionaries({"value": st.sampled_from(VALUES[:6]),
                                             "evidence": st.lists(quotes, min_size=1, max_size=2)}),
                      min_size=1, max_size=2)
    entries = st.lists(st.fixed_dictionaries({"key": st.sampled_from(["court", "outcome", "money"]),
                                              "values": values}), min_size=1, max_size=2)
    return entries.map(lambda e: json.dumps({"items": e}))


@fuzz(40)
@given(extract=st.fixed_dictionaries({d: _good_extract(d) for d in DOCS}),
       merge=st.lists(echoes, min_size=2, max_size=2), prune=echoes)
def test_fuzz_three_pass_rewordings(extract, merge, prune):
    """Issue 46: well-formed answers whose merge and prune reword values, some changing what they say."""
    _run_and_check(extract, merge, prune)


def _run_and_check(extract, merge, prune):
    def answer(request):
        prompt = request.messages[-1]["content"]
        if request.stage == three_pass.STAGES["extract"]:
            return next(extract[d] for d in DOCS if f"Document: {d} (" in prompt)
        said = prune
        if request.stage == three_pass.STAGES["merge"]:
            said = merge[0] if request.item.startswith("level 1 ") else merge[1]
        return _echo(prompt, request.stage, said[1]) if isinstance(said, tuple) else said

    TWISTED.clear()
    with tempfile.TemporaryDirectory() as workdir:
        res = three_pass.run_three_pass(corpus(), MockProvider(answer=answer), MODEL, checklist=CHECKLIST,
                                        workdir=workdir)
    given_first = _first_pass(extract)
    reworded = {(r["item"], r["value"]) for r in res.actions("reworded")}
    for key, values in res.values.items():
        assert key in CHECKLIST.keys
        for v in values:
            assert isinstance(v["value"], str) and v["value"].strip() and v["evidence"]
            assert v["value"] in given_first["values"].get(key, set()) or (key, v["value"]) in reworded, v
            assert v["value"] in given_first["values"].get(key, set()) or v["value"] not in TWISTED, \
                f"a rewording that changes the meaning was kept: {v['value']!r}"
            for e in v["evidence"]:
                assert (key, e["text"], e["source_document"], e["location"]) in given_first["evidence"], e
                assert three_pass.CHUNK_LOCATION.fullmatch(e["location"]) and not three_pass.too_little(e["text"])
                assert e["source_document"] in DOCS and e["text"] in TEXTS[e["source_document"]]
    for record in res.log:
        assert isinstance(record["why"], str) and record["why"].strip() and len(record["why"]) < 5000, record
    for row in res.value_rows("9", CHECKLIST):
        assert row["item"] in {it.name for it in CHECKLIST.items}
        json.dumps(row, ensure_ascii=False).encode("utf-8")  # rows.jsonl is written so: no lone surrogate


def _first_pass(extract: dict) -> dict:
    """What the first pass's answers offered, per item: value texts and evidence objects (by their own key)."""
    out: dict = {"values": {}, "evidence": set()}
    for text in extract.values():
        try:
            obj = json.loads(text.split("```json\n", 1)[-1].split("\n```", 1)[0])
        except json.JSONDecodeError:
            continue
        for entry in obj.get("items") if isinstance(obj, dict) and isinstance(obj.get("items"), list) else []:
            if not isinstance(entry, dict) or not isinstance(entry.get("key"), str):
                continue
            try:
                key = CHECKLIST.item(entry["key"]).key
            except KeyError:
                continue
            for v in entry.get("values") if isinstance(entry.get("values"), list) else []:
                if isinstance(v, dict) and isinstance(v.get("value"), str):
                    out["values"].setdefault(key, set()).add(v["value"].strip())
                    for e in v.get("evidence") if isinstance(v.get("evidence"), list) else []:
                        if isinstance(e, dict):
                            out["evidence"].add((key, e.get("text"), e.get("source_document"), e.get("location")))
    return out
