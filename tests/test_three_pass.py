"""The three-pass document method with scripted models: planted duplicates are merged, an unsupported entry is
removed, an altered evidence quote and evidence at the wrong place are dropped with their reasons; nothing else
happens, a rerun is answered from the cache, and tokens are counted per case and pass."""

from __future__ import annotations

import json
import re

import pytest

from gavel.core import config
from gavel.documents import three_pass
from gavel.documents.corpus import Corpus
from gavel.llm.providers.mock import MockProvider

MODEL = "gpt-4.1-2025-04-14"
EXAMPLE = config.PACKAGE_DIR / "core" / "checklists" / "court_outcome.yaml"
COURT = "U.S. District Court for the District of Maine"
TEXTS = {
    "Complaint": f"The plaintiffs filed this suit in the {COURT} on March 3, 2011, against the county jail.",
    "Order": f"ORDER. The {COURT} dismissed the case on June 1, 2012. No party paid any money.",
    "Docket": "Docket entry 40: Case closed on June 1, 2012.",
}


def corpus() -> Corpus:
    return Corpus.build("9", list(TEXTS.values()), list(TEXTS), dates=["2011-03-03", "2012-06-01", "2012-06-02"])


def ev(text, doc, location="chunk 1"):
    return {"text": text, "source_document": doc, "location": location}


#: what the first pass finds in each document: the court twice (a duplicate), the outcome twice (a duplicate
#: one level further up the tree), and a payment the evidence does not support
EXTRACT = {
    "Complaint": [{"key": "court", "values": [{"value": COURT, "evidence": [ev(COURT, "Complaint")]}]},
                  {"key": "state", "values": [{"value": "Maine", "evidence": [ev("District of Maine", "Complaint")]}]}],
    "Order": [{"key": "court", "values": [{"value": COURT, "evidence": [ev(COURT, "Order")]}]},
              {"key": "outcome", "values": [{"value": "Dismissed on June 1, 2012",
                                             "evidence": [ev("dismissed the case on June 1, 2012", "Order")]}]},
              {"key": "money", "values": [{"value": "$1 million paid to the plaintiffs",
                                           "evidence": [ev("No party paid any money.", "Order")]}]}],
    "Docket": [{"key": "outcome", "values": [{"value": "Dismissed on June 1, 2012",
                                              "evidence": [ev("Case closed on June 1, 2012.", "Docket")]}]}],
}
ALTERED = "dismissed the case on 1 June 2012"  # the merge answer's copy of an Order quote, reworded


def _listed(block: str) -> list[tuple[str, dict]]:
    out, key = [], None
    for line in block.splitlines():
        if line.startswith("## "):
            key = line[3:].strip()
        elif line.startswith("{"):
            out.append((key, json.loads(line)))
    return out


def scripted(calls: list):
    def answer(request):
        calls.append(request.stage)
        prompt = request.messages[-1]["content"]
        if request.stage == three_pass.STAGES["extract"]:
            doc = re.search(r"^Document: (\w+) \(", prompt, re.M).group(1)
            return json.dumps({"items": EXTRACT[doc]})
        if request.stage == three_pass.STAGES["merge"]:
            a = _listed(prompt.split("# Checklist A", 1)[1].split("# Checklist B", 1)[0])
            b = _listed(prompt.split("# Checklist B", 1)[1].split("# Answer", 1)[0])
            items: dict = {}
            for key, v in a + b:  # join values with the same text (the planted duplicates)
                same = next((x for x in items.setdefault(key, []) if x["value"] == v["value"]), None)
                evidence = [dict(e, text=ALTERED) if e["text"] == "dismissed the case on June 1, 2012" else e
                            for e in v["evidence"]]
                if same:
                    same["from"].append(v["id"])
                    same["evidence"] += evidence
                else:
                    items[key].append({"from": [v["id"]], "value": v["value"], "evidence": evidence})
            return json.dumps({"items": [{"key": k, "values": vs} for k, vs in items.items()]})
        values = [json.loads(line) for line in prompt.split("(each value has an id)", 1)[1].split("# Answer", 1)[0].splitlines()
                  if line.startswith("{")]
        return json.dumps({"kept": [{"id": v["id"], "value": v["value"], "evidence": v["evidence"]}
                                    for v in values if v["item"] != "money"],
                           "removed": [{"id": v["id"], "why": "the quote says no money was paid"}
                                       for v in values if v["item"] == "money"]})
    return MockProvider(answer=answer)


def test_duplicates_merged_unsupported_removed_altered_quote_dropped(tmp_path):
    calls: list = []
    res = three_pass.run_three_pass(corpus(), scripted(calls), MODEL, checklist=EXAMPLE, workdir=tmp_path / "w")
    merged = [(r["item"], r["value"]) for r in res.actions("merged")]
    assert merged == [("court", COURT), ("outcome", "Dismissed on June 1, 2012")]
    assert [(r["item"], r["value"], r["why"]) for r in res.actions("removed")] == [
        ("money", "$1 million paid to the plaintiffs", "the quote says no money was paid")]
    dropped = res.actions("dropped_evidence")
    assert [(r["item"], r["evidence"]["text"], r["why"]) for r in dropped] == [
        ("outcome", ALTERED, "evidence not byte-equal to a candidate's")]
    assert {r["action"] for r in res.log} == {"merged", "removed", "dropped_evidence"}  # nothing else happened
    assert res.values == {
        "court": [{"value": COURT, "evidence": [ev(COURT, "Complaint"), ev(COURT, "Order")]}],
        "state": [{"value": "Maine", "evidence": [ev("District of Maine", "Complaint")]}],
        "outcome": [{"value": "Dismissed on June 1, 2012", "evidence": [ev("Case closed on June 1, 2012.", "Docket")]}]}
    # a tree: 3 pieces -> join(Complaint, Order) at level 1, then join(that, Docket) at level 2
    assert calls == ["doc_3pass_extract"] * 3 + ["doc_3pass_merge"] * 2 + ["doc_3pass_prune"]
    stats = res.token_stats["9"]
    assert stats["merge_levels"] == 2 and stats["total_prompts"] == 6
    assert [stats["by_pass"][p]["prompts"] for p in three_pass.PASSES] == [3, 2, 1]
    assert stats["total_input_tokens"] > 0 and stats["total_output_tokens"] > 0
    rows = res.value_rows("9", EXAMPLE)
    assert {r["item"] for r in rows} == {"Court", "State", "Outcome"}
    # resumable: a rerun over the same workdir is answered from the runner caches, nothing is sent again
    again_calls: list = []
    again = three_pass.run_three_pass(corpus(), scripted(again_calls), MODEL, checklist=EXAMPLE,
                                      workdir=tmp_path / "w")
    assert again_calls == [] and again.values == res.values


def test_first_pass_evidence_checked_in_the_named_document_at_the_named_location(tmp_path):
    wrong = {"items": [{"key": "court", "values": [
        {"value": "a", "evidence": [ev(COURT, "Docket")]},  # not in that document
        {"value": "b", "evidence": [ev(COURT, "Complaint", "chunk 7")]},  # no such chunk
        {"value": "c", "evidence": [ev(COURT, "Nowhere")]},  # no such document
        {"value": "d", "evidence": [ev(COURT.upper(), "Complaint")]},  # not byte-equal
        {"value": "e", "evidence": [ev(COURT, "Complaint"), ev("District of Maine", "Order")]}]},
        {"key": "colour", "values": []}]}
    two = Corpus.build("9", [TEXTS["Complaint"], TEXTS["Docket"]], ["Complaint", "Docket"])

    def answer(request):
        if "extract" not in request.stage:
            return json.dumps({"kept": [], "removed": []})
        return json.dumps(wrong if "Document: Complaint" in request.messages[-1]["content"] else {"items": []})
    res = three_pass.run_three_pass(two, MockProvider(answer=answer), MODEL, checklist=EXAMPLE, workdir=tmp_path / "w")
    whys = [(r["value"], r["why"]) for r in res.actions("dropped_evidence")]
    assert whys == [("a", "quote not in 'Docket' at 'chunk 1': not byte-equal to any text of the document"),
                    ("b", "location 'chunk 7' is no chunk of 'Complaint'"),
                    ("c", "no document named 'Nowhere'"),
                    ("d", "quote not in 'Complaint' at 'chunk 1': not byte-equal to any text of the document"),
                    ("e", "no document named 'Order'")]
    assert [(r["item"], r["value"]) for r in res.actions("dropped_value")] == [
        ("court", "a"), ("court", "b"), ("court", "c"), ("court", "d"), ("colour", None)]
    # the prune answered with neither kept nor removed: the one value left is kept, and that is recorded
    assert [r["value"] for r in res.actions("kept_unmentioned")] == ["e"]
    assert res.values == {"court": [{"value": "e", "evidence": [ev(COURT, "Complaint")]}]}


def _by_stage(extract, merge, prune):
    """A model answering each pass with a function of the prompt."""
    def answer(request):
        prompt = request.messages[-1]["content"]
        for p, fn in (("extract", extract), ("merge", merge), ("prune", prune)):
            if request.stage == three_pass.STAGES[p]:
                return json.dumps(fn(prompt))
    return MockProvider(answer=answer)


def _prune_values(prompt):
    return [json.loads(line) for line in prompt.split("(each value has an id)", 1)[1].split("# Answer", 1)[0]
            .splitlines() if line.startswith("{")]


SETTLED = "Settled for $1 million paid to the plaintiffs"


def test_merge_and_prune_cannot_rewrite_a_value_while_keeping_its_evidence(tmp_path):
    """The probe's reproduction: a merge answer turned the pass-1 value "Dismissed on June 1, 2012" into a
    settlement while keeping its evidence, and nothing was logged. Now a value leaves a pass with the text of a
    value that entered it, or with a rewording whose every word is in that value or its evidence (logged)."""
    two = Corpus.build("9", [TEXTS["Order"], TEXTS["Docket"]], ["Order", "Docket"])
    found = {"Order": ev("dismissed the case on June 1, 2012", "Order"),
             "Docket": ev("Case closed on June 1, 2012.", "Docket")}

    def extract(prompt):
        doc = re.search(r"^Document: (\w+) \(", prompt, re.M).group(1)
        return {"items": [{"key": "outcome", "values": [{"value": "Dismissed on June 1, 2012",
                                                          "evidence": [found[doc]]}]}]}

    def merge(prompt):  # joins A1 and B1 under a wording none of them supports
        return {"items": [{"key": "outcome", "values": [{"from": ["A1", "B1"], "value": SETTLED,
                                                          "evidence": list(found.values())}]}]}

    def prune(prompt):  # keeps the value, reworded twice over: once supported by it, once not
        v = _prune_values(prompt)[0]
        return {"kept": [dict(v, value="Dismissed")], "removed": []}
    res = three_pass.run_three_pass(two, _by_stage(extract, merge, prune), MODEL, checklist=EXAMPLE,
                                    workdir=tmp_path / "w")
    refused = res.actions("rewording_refused")
    assert [(r["pass"], r["value"], r["rewording"]) for r in refused] == [
        ("merge", "Dismissed on June 1, 2012", SETTLED)]
    assert "(Settled, for, million, paid, to, plaintiffs)" in refused[0]["why"]
    assert [(r["pass"], r["value"], r["before"]) for r in res.actions("reworded")] == [
        ("prune", "Dismissed", ["Dismissed on June 1, 2012"])]
    assert res.values == {"outcome": [{"value": "Dismissed", "evidence": list(found.values())}]}

    def prune_settles(prompt):
        v = _prune_values(prompt)[0]
        return {"kept": [dict(v, value=SETTLED)], "removed": []}
    res = three_pass.run_three_pass(two, _by_stage(extract, merge, prune_settles), MODEL, checklist=EXAMPLE,
                                    workdir=tmp_path / "w2")
    assert [r["pass"] for r in res.actions("rewording_refused")] == ["merge", "prune"]
    assert res.values["outcome"][0]["value"] == "Dismissed on June 1, 2012"


def test_a_merged_value_keeps_only_evidence_of_the_values_it_joins(tmp_path):
    """Evidence of another candidate of the same item cannot be moved onto a value; that candidate is restored."""
    two = Corpus.build("9", [TEXTS["Order"], TEXTS["Docket"]], ["Order", "Docket"])
    order, docket = ev("dismissed the case on June 1, 2012", "Order"), ev("Case closed on June 1, 2012.", "Docket")

    def extract(prompt):
        doc = re.search(r"^Document: (\w+) \(", prompt, re.M).group(1)
        return {"items": [{"key": "outcome", "values": [
            {"value": "Dismissed" if doc == "Order" else "Closed", "evidence": [order if doc == "Order" else docket]}]}]}

    def merge(prompt):  # A1 named alone, but given B1's evidence too
        return {"items": [{"key": "outcome", "values": [{"from": ["A1"], "value": "Dismissed",
                                                          "evidence": [order, docket]}]}]}
    res = three_pass.run_three_pass(two, _by_stage(extract, merge, lambda p: {"kept": [], "removed": []}), MODEL,
                                    checklist=EXAMPLE, workdir=tmp_path / "w")
    assert [(r["value"], r["why"], r["evidence"]) for r in res.actions("dropped_evidence")] == [
        ("Dismissed", "evidence of no value it joins", docket)]
    assert [r["value"] for r in res.actions("restored")] == ["Closed"]
    assert res.values == {"outcome": [{"value": "Dismissed", "evidence": [order]},
                                      {"value": "Closed", "evidence": [docket]}]}


def test_evidence_must_be_whole_words_of_some_length_at_a_location_written_chunk_n(tmp_path):
    """Before, a quote of one letter or a space passed the byte-exact check, and `chunk ١`, `chunk 0001` or
    `chunk 1 ... also chunk 7` were read as chunk 1."""
    one = Corpus.build("9", [TEXTS["Complaint"]], ["Complaint"])
    quotes = [("e", "chunk 1"), (" ", "chunk 1"), ("Main", "chunk 1"), ("laintiffs filed", "chunk 1"),
              ("District of Maine", "chunk \u0661"), ("District of Maine", "chunk 0001"),
              ("District of Maine", "chunk 1 \u2026 also chunk 7"), ("District of Maine", "Chunk 1"),
              ("Maine", "chunk 1")]

    def extract(prompt):
        return {"items": [{"key": "state", "values": [
            {"value": f"v{n}", "evidence": [ev(text, "Complaint", where)]} for n, (text, where) in enumerate(quotes)]}]}
    res = three_pass.run_three_pass(one, _by_stage(extract, None, lambda p: {"kept": [], "removed": []}), MODEL,
                                    checklist=EXAMPLE, workdir=tmp_path / "w")
    assert [(r["value"], r["why"]) for r in res.actions("dropped_evidence")] == [
        ("v0", "quote 'e' too short to support a value (at least 4 characters, a letter or digit among them)"),
        ("v1", "quote ' ' too short to support a value (at least 4 characters, a letter or digit among them)"),
        ("v2", "quote 'Main' starts or ends inside a word of 'Complaint' at 'chunk 1'"),
        ("v3", "quote 'laintiffs filed' starts or ends inside a word of 'Complaint' at 'chunk 1'"),
        ("v4", "location 'chunk \u0661' is not written 'chunk N'"),
        ("v5", "location 'chunk 0001' is not written 'chunk N'"),
        ("v6", "location 'chunk 1 \u2026 also chunk 7' is not written 'chunk N'"),
        ("v7", "location 'Chunk 1' is not written 'chunk N'")]
    assert res.values == {"state": [{"value": "v8", "evidence": [ev("Maine", "Complaint")]}]}


# ---------------------------------------------------------------- issue 46 (3): a rewording keeps the meaning
NOT_DISMISSED = "Case not dismissed; motion to dismiss denied on June 1, 2012"
PAID = "The City paid the plaintiffs $1 million"
LONG = " ".join(f"word{i}" for i in range(three_pass.MAX_ORDER_WORDS + 1))
PROBE_TEXT = f"ORDER. {NOT_DISMISSED}. {PAID} in settlement."


@pytest.mark.parametrize("key, original, rewording, why", [
    ("outcome", NOT_DISMISSED, "Case dismissed on June 1, 2012", "it drops the negation of 'dismissed'"),
    ("money", PAID, "The plaintiffs paid the City $1 million", "words trade sides around 'paid' (who did what to "
                                                               "whom)"),
    ("outcome", NOT_DISMISSED, "Case not\u200bdismissed on June 1, 2012", "it holds an invisible character (U+200B)"),
    ("outcome", "Motion to dismiss denied on June 1, 2012", "Motion to dismiss not denied on June 1, 2012",
     "it adds a negation before 'denied'"),
    ("outcome", NOT_DISMISSED, "Case not dismissed on June 1, 2012", None),  # shorter, same meaning: reworded
    ("money", PAID, "City paid plaintiffs $1 million", None),
    ("outcome", NOT_DISMISSED, "Case not dismissed\ud800 on June 1, 2012", "a lone surrogate (not text)"),
    # a fuzz finding (CI, seed of stop 53): the words traded are said once, the word between them twice
    ("court", "U.S. District Court for the District of Maine", "U.S. Maine Court for the District of District",
     "words trade sides around 'court' (who did what to whom)"),
    ("court", "District Court for the District of Maine", "District Maine for the District of Court",
     "words trade sides around 'district' (who did what to whom)"),
    ("outcome", "Dismissed on June 1, 2012", "On June 1, 2012, dismissed", None),  # moved, nothing traded
    ("outcome", LONG, LONG.upper(), f"it is too long to compare its word order (over {three_pass.MAX_ORDER_WORDS} "
                                    "words)"),
])
def test_a_prune_rewording_that_changes_the_meaning_keeps_the_text(tmp_path, key, original, rewording, why):
    """The probe's cases: every word of each rewording is in the value, so the word check passed them (logged
    ``reworded``). Now a rewording that adds or drops a negation, swaps who did what to whom, or carries an
    invisible character is refused with its reason, and the value keeps its text."""
    one = Corpus.build("9", [PROBE_TEXT], ["Order"])
    quote = original if original in PROBE_TEXT else NOT_DISMISSED

    def extract(prompt):
        return {"items": [{"key": key, "values": [{"value": original, "evidence": [ev(quote, "Order")]}]}]}

    def prune(prompt):
        v = _prune_values(prompt)[0]
        return {"kept": [dict(v, value=rewording)], "removed": []}
    res = three_pass.run_three_pass(one, _by_stage(extract, None, prune), MODEL, checklist=EXAMPLE,
                                    workdir=tmp_path / "w")
    rows = res.value_rows("9", EXAMPLE)
    if why is None:
        assert [r["value"] for r in res.actions("reworded")] == [rewording] and not res.actions("rewording_refused")
        assert res.values[key][0]["value"] == rewording and rows[0]["reworded_from"] == [original]
        return
    refused = res.actions("rewording_refused")
    assert [(r["pass"], r["value"], r["rewording"]) for r in refused] == [("prune", original, rewording)]
    assert refused[0]["why"].endswith(f"would change the meaning: {why}; the value keeps its text"), refused[0]["why"]
    assert not res.actions("reworded") and res.values[key][0]["value"] == original
    assert rows[0]["value"] == original and rows[0]["reworded_from"] is None


def test_a_merge_rewording_that_drops_a_negation_keeps_the_text(tmp_path):
    two = Corpus.build("9", [PROBE_TEXT, PROBE_TEXT.replace("ORDER.", "OPINION.")], ["Order", "Opinion"])

    def extract(prompt):
        doc = re.search(r"^Document: (\w+) \(", prompt, re.M).group(1)
        return {"items": [{"key": "outcome", "values": [{"value": NOT_DISMISSED,
                                                          "evidence": [ev(NOT_DISMISSED, doc)]}]}]}

    def merge(prompt):
        return {"items": [{"key": "outcome", "values": [{"from": ["A1", "B1"], "value": "Case dismissed",
                                                          "evidence": [ev(NOT_DISMISSED, "Order"),
                                                                       ev(NOT_DISMISSED, "Opinion")]}]}]}

    def prune(prompt):
        return {"kept": _prune_values(prompt), "removed": []}
    res = three_pass.run_three_pass(two, _by_stage(extract, merge, prune), MODEL, checklist=EXAMPLE,
                                    workdir=tmp_path / "w")
    refused = res.actions("rewording_refused")
    assert [(r["pass"], r["value"], r["rewording"]) for r in refused] == [("merge", NOT_DISMISSED, "Case dismissed")]
    assert "it drops the negation of 'dismissed'" in refused[0]["why"]
    assert [v["value"] for v in res.values["outcome"]] == [NOT_DISMISSED]


def test_a_value_with_a_lone_surrogate_is_dropped_with_its_reason_and_the_log_is_written(tmp_path):
    """A model's JSON may escape a lone surrogate (``"\\ud800"``): no character, it cannot be sent in the merge
    prompt (the request's id is a hash of its UTF-8) nor written as UTF-8. Found by the fuzz target
    (UnicodeEncodeError in the fresh-clone CI run): now the value is dropped with its reason, the other value of
    the answer is kept, and the log file is written with the surrogate as its JSON escape."""
    from gavel.documents.cli import _write_rows

    one = Corpus.build("9", [PROBE_TEXT], ["Order"])

    def extract(prompt):
        return {"items": [{"key": "outcome", "values": [
            {"value": "Case not dismissed\ud800", "evidence": [ev(NOT_DISMISSED, "Order")]},
            {"value": NOT_DISMISSED, "evidence": [ev(NOT_DISMISSED, "Order")]}]}]}

    def prune(prompt):
        return {"kept": _prune_values(prompt), "removed": []}
    res = three_pass.run_three_pass(one, _by_stage(extract, None, prune), MODEL, checklist=EXAMPLE,
                                    workdir=tmp_path / "w")
    assert [v["value"] for v in res.values["outcome"]] == [NOT_DISMISSED]
    dropped = [r for r in res.actions("dropped_value") if "surrogate" in r["why"]]
    assert [(r["pass"], r["item"]) for r in dropped] == [("extract", "outcome")]
    assert dropped[0]["why"] == "a lone surrogate (not text) in 'Case not dismissed\\ud800'"
    log = tmp_path / "log.jsonl"
    _write_rows(log, res.log + [{"note": "raw \ud800 text", "ok": "caf\u00e9"}])
    last = json.loads(log.read_text(encoding="utf-8").splitlines()[-1])
    assert last == {"note": "raw \ud800 text", "ok": "caf\u00e9"}


def test_reworded_values_and_refused_rewordings_are_marked_where_the_run_is_read(tmp_path, capsys):
    """Issue 46 §3: reworded values are marked in the report. A three-pass run whose prune rewords one value
    (kept: every word in the value) and is refused another (it drops the negation): the run's line counts
    both, its rows carry the earlier text, and `gavel documents evaluate` on those rows marks the reworded
    value in compare_rows.csv's `reworded` column (and says how many), the refused one keeping its text."""
    import pandas as pd

    from gavel import cli
    from gavel.documents.cli import _write_rows

    one = Corpus.build("9", [PROBE_TEXT], ["Order"])

    def extract(prompt):
        return {"items": [{"key": "outcome", "values": [{"value": NOT_DISMISSED, "evidence": [ev(NOT_DISMISSED, "Order")]}]},
                          {"key": "money", "values": [{"value": PAID, "evidence": [ev(PAID, "Order")]}]}]}

    def prune(prompt):
        kept = []
        for v in _prune_values(prompt):
            new = "Case dismissed on June 1, 2012" if v["value"] == NOT_DISMISSED else "City paid plaintiffs $1 million"
            kept.append(dict(v, value=new))
        return {"kept": kept, "removed": []}
    res = three_pass.run_three_pass(one, _by_stage(extract, None, prune), MODEL, checklist=EXAMPLE,
                                    workdir=tmp_path / "w")
    assert len(res.actions("reworded")) == 1 and len(res.actions("rewording_refused")) == 1
    rows = tmp_path / "rows.jsonl"
    _write_rows(rows, res.value_rows("9", EXAMPLE))
    refs = tmp_path / "refs.json"
    refs.write_text(json.dumps({"results": {"9": {"outcome": ["Motion to dismiss denied"], "money": ["$1 million"]}}}))
    out = tmp_path / "eval"
    assert cli.main(["documents", "evaluate", str(rows), "--subject", "3pass", "--provider", "mock", "--judge", MODEL,
                     "--checklist", str(EXAMPLE), "--references", str(refs), "--out", str(out)]) == 0
    assert "1 values reworded by a merge or prune (their earlier text in compare_rows.csv's reworded column)" \
        in capsys.readouterr().out
    marks = pd.read_csv(out / "compare_rows.csv", dtype=str, keep_default_na=False).set_index("item")["reworded"]
    assert marks["money"] == f"City paid plaintiffs $1 million (reworded from {PAID})"
    assert marks["outcome"] == ""  # refused: the value kept its text, nothing to mark
    assert marks["court"] == marks["state"] == ""
