"""Checklists as files: the packaged default is the 26 legal items and keeps every id and key; a bad file is one
error naming the file and the entry; a checklist of one's own (gavel/core/checklists/court_outcome.yaml) reaches every
stage that builds prompts, its name reaches the tables, and its content the cache keys."""

from __future__ import annotations

import json
import os
import shutil

import pytest

from gavel import cli
from gavel.core import config
from gavel.core import items as gitems
from gavel.core.items import ChecklistError
from gavel.documents import configs, end_to_end
from gavel.documents.corpus import Corpus
from gavel.ref.stages import compare, extract, style
from gavel.ref.tables import read_table
from gavel.runs import pipeline

EXAMPLE = config.PACKAGE_DIR / "core" / "checklists" / "court_outcome.yaml"
MODEL = "gpt-4.1-2025-04-14"


def test_the_default_is_the_packaged_legal_file_and_keeps_the_module_api():
    legal = gitems.load("legal")
    assert legal is gitems.default() and legal.is_default and legal.cache_tag is None
    assert gitems.ITEMS == legal.items and len(legal.items) == 26 and len(legal.groups) == 9
    assert legal.source.endswith("gavel/core/checklists/legal.yaml")
    assert gitems.item("All Reported Opinions Cited").key == "reported_opinions"  # an alias from the file
    # the default's text is what the prompts always had: the document and summary instructions are the definition
    assert all(it.document_instruction == it.summary_instruction == it.definition for it in legal.items)


def test_a_copy_of_the_default_is_the_default(tmp_path):
    copy = tmp_path / "mine.yaml"
    shutil.copy(gitems.PACKAGED_DIR / "legal.yaml", copy)
    assert gitems.load(copy).is_default and gitems.load(copy).cache_tag is None
    copy.write_text(copy.read_text().replace("The date on which", "The day on which"))
    changed = gitems.load(copy)
    assert not changed.is_default and changed.cache_tag == f"checklist:legal:{changed.fingerprint}"


def test_the_example_checklist():
    c = gitems.load(EXAMPLE)
    assert c.name == "court_outcome" and c.keys == ("court", "state", "outcome", "money")
    assert [g.key for g in c.groups] == ["venue", "outcome"] and c.items_in_group("outcome")[1].key == "money"
    assert c.item("court").usually_single and not c.item("outcome").usually_single
    assert c.item("court").document_instruction.startswith("The court where the case was first filed. Docket")
    assert c.item("money").summary_instruction.endswith("Not applicable when: no payment of money was ordered or agreed.")
    assert "citation_style" in c.style
    with pytest.raises(gitems.UnknownItemError, match="court_outcome"):
        c.item("Filing Date")


GOOD = """name: tiny
groups:
  - key: g
    items: [a, b]
items:
  - key: a
    instruction: The first thing.
  - key: b
    name: Bee
    instruction: The second thing.
"""


@pytest.mark.parametrize("change,message", [
    (("  - key: b\n    name: Bee", "  - key: a\n    name: Bee"), r"item 2 \('a'\): 'a' is used twice \(first by item 1\)"),
    (("The second thing.", "''"), r"item 2 \('b'\): `instruction` must be a non-empty text"),
    (("    name: Bee", "    name: Bee\n    colour: red"), r"item 2 \('b'\): unknown field 'colour'"),
    (("items: [a, b]", "items: [a, c]"), r"group 1 \('g'\): names item 'c', which the checklist does not define"),
    (("name: tiny", "name: tiny\nauthor: me"), r"unknown field 'author'"),
    (("    instruction: The first thing.", "    instruction: The first thing.\n    values: several"),
     r"item 1 \('a'\): `values` must be one of single, multi"),
])
def test_a_bad_checklist_is_one_error_naming_file_and_entry(tmp_path, change, message):
    path = tmp_path / "bad.yaml"
    gitems.load(_write(path, GOOD))  # the good one loads
    bad = tmp_path / "worse.yaml"
    _write(bad, GOOD.replace(*change))
    with pytest.raises(ChecklistError, match=message) as err:
        gitems.load(bad)
    assert str(err.value).startswith(str(bad.resolve()))


def test_bad_checklist_on_the_command_line_is_one_line(tmp_path, capsys):
    bad = _write(tmp_path / "bad.yaml", GOOD.replace("The first thing.", "''"))
    code = cli.main(["evaluate", "--summaries", str(tmp_path / "none.json"), "--provider", "mock",
                     "--checklist", str(bad), "--out", str(tmp_path / "out")])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and err == [f"error: {bad.resolve()}, item 1 ('a'): `instruction` must be a non-empty text"]
    code = cli.main(["documents", "three-pass", str(tmp_path), "--provider", "mock", "--model", MODEL,
                     "--checklist", "no_such_checklist"])
    assert code == 2 and "no checklist 'no_such_checklist'" in capsys.readouterr().err


@pytest.mark.parametrize("suffix, text, where", [
    (".json", '{"name": "x\\ud800", "task": "t", "items": [{"key": "a", "instruction": "i"}]}', "`name`"),
    (".yaml", 'name: x\nitems:\n  - key: a\n    name: "A \\ud800 b"\n    instruction: i\n', "item 1 ('a'): `name`"),
    (".yaml", 'name: x\nitems:\n  - key: a\n    instruction: i\n    aliases: ["\\udc00"]\n', "item 1 ('a'): an alias"),
])
def test_a_lone_surrogate_escape_is_one_line_with_status_2(tmp_path, capsys, suffix, text, where):
    """Issue 46 (5): a ``\\ud800`` escape parses to a lone surrogate, which no UTF-8 file can hold; it ended the
    run in UnicodeEncodeError (exit status 1) when the fingerprint was hashed."""
    bad = _write(tmp_path / f"bad{suffix}", text)
    code = cli.main(["evaluate", "--summaries", str(tmp_path / "none.json"), "--provider", "mock",
                     "--checklist", str(bad), "--out", str(tmp_path / "out")])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1, err
    assert err[0].startswith(f"error: {bad.resolve()}, {where} holds a lone surrogate (U+D") or \
        err[0].startswith(f"error: {bad.resolve()}: {where} holds a lone surrogate (U+D"), err
    assert err[0].endswith("which is not a character; write the text as UTF-8")


def _write(path, text):
    path.write_text(text, encoding="utf-8")
    return path


def test_the_example_reaches_the_prompts_and_the_cache_keys():
    c = gitems.load(EXAMPLE)
    req = extract.build_requests([extract.Summary("m", "1", "A summary.")], MODEL, c.items)[2]
    assert req.item == "outcome" and "still pending and nothing in it has been resolved" in req.messages[-1]["content"]
    jobs, _ = compare.build_requests([compare.Pair("m", "1", "money", ("$5",), ("$6",))], MODEL, checklist=c)
    assert "Money Awarded or Agreed" in jobs[0][0].messages[-1]["content"]
    sty = style.build_requests([("m", "1", "a", "b")], MODEL, checklist=c)[0][0].messages[0]["content"]
    assert "References to the record" in sty and "Citation" not in sty.split("References to the record")[0][-200:]
    corpus = Corpus.build("1", ["The court sits in Maine."], ["Complaint"])
    built = end_to_end.build_requests(corpus, MODEL, checklist=c, context_window=8000, reserve_output=500)
    assert [r.item for r in built.requests] == ["Court", "State", "Outcome", "Money Awarded or Agreed"]
    assert "Docket sheets and the first page" in built.requests[0].messages[-1]["content"]
    assert [cfg.path for cfg in configs.resolve("grouped", c)] == ["grouped/court_outcome.01_venue",
                                                                  "grouped/court_outcome.02_outcome"]
    assert {cfg.cache_tag for cfg in configs.resolve("individual", c)} == {c.cache_tag}  # the agent's runner key
    assert {cfg.cache_tag for cfg in configs.resolve("individual")} == {None}
    # the default adds nothing to a runner's key; another checklist adds its tag
    assert pipeline.Settings("x", "y").runner_namespace == {}
    assert pipeline.Settings("x", "y", checklist=c).runner_namespace == {"namespace": c.cache_tag}
    repeat = pipeline.Settings("x", "y", checklist=c, runner_options={"namespace": "repeat-2"})
    assert repeat.runner_namespace == {"namespace": f"{c.cache_tag}|repeat-2"}


def test_evaluate_with_the_example_names_it_in_tables_and_keeps_its_cache_apart(tmp_path):
    summaries = [("m", "1", "The U.S. District Court in Maine dismissed the case in 2012.")]
    refs = {"1": "Filed in the District of Maine; dismissed on June 1, 2012."}
    provider = pipeline.provider("mock")
    out = tmp_path / "ex"
    tables = pipeline.evaluate(summaries, refs, provider, out,
                               pipeline.Settings(MODEL, MODEL, checklist=EXAMPLE))
    assert set(tables["compare"]["item"]) == {"court", "state", "outcome", "money"}
    assert set(tables["scores"]["checklist"]) == {"court_outcome"}
    assert set(tables["model_scores"]["checklist"]) == {"court_outcome"}
    manifest = json.loads((out / "evaluation.json").read_text())
    assert manifest["checklist"]["name"] == "court_outcome" and manifest["items"] == ["court", "state", "outcome", "money"]
    # the same checklist again: every answer from the cache
    again = pipeline.evaluate(summaries, refs, provider, out, pipeline.Settings(MODEL, MODEL, checklist=EXAMPLE))
    assert sum(again["manifest"]["sent"].values()) == 0 and again["manifest"]["cached"]["extract"] == 8
    # a change that no prompt shows (a label) is still another checklist: nothing of the first is reused
    relabelled = _write(tmp_path / "relabelled.yaml", EXAMPLE.read_text().replace("label: Money", "label: Sums"))
    other = pipeline.evaluate(summaries, refs, provider, out, pipeline.Settings(MODEL, MODEL, checklist=relabelled))
    assert sum(other["manifest"]["cached"].values()) == 0 and other["manifest"]["sent"]["extract"] == 8
    # the run's report names the checklist and its items as the checklist spells them
    from gavel.report.run import run_data

    data = run_data(out)
    assert data["manifest"]["checklist"] == "court_outcome"
    assert ["money", "Money Awarded or Agreed"] in data["items"]


def test_the_run_tables_and_figures_drawn_from_them_name_the_checklist(tmp_path):
    """Issue 32: the results-shaped tables of a run (what Figure 2 draws a run from) and the stability and
    order reports carry the checklist's name, and so do the figures drawn from them; the paper's own tables
    have no checklist column and their figures' titles are unchanged."""
    import matplotlib

    matplotlib.use("Agg")
    from gavel.paper import figures
    from gavel.runs import orders, stability
    from gavel.runs import repeats as repeated

    summaries = [("m", "1", "The U.S. District Court in Maine dismissed the case in 2012."),
                 ("m", "2", "A federal court in Ohio approved a settlement of $5,000 in 2019.")]
    refs = {"1": "Filed in the District of Maine; dismissed on June 1, 2012.",
            "2": "Filed in the Southern District of Ohio; settled for $5,000 in 2019."}
    out = tmp_path / "run"
    settings = pipeline.Settings(MODEL, MODEL, checklist=EXAMPLE, orders="both")
    result = repeated.evaluate_repeats(summaries, refs, pipeline.provider("mock"), out, settings, repeats=2)
    tables = pipeline.read_tables(out)
    for name in ("summary_s_checklist", "summary_bootstrap", "gavel_ref_scores", "stability", "order", "judgments"):
        table = read_table(out / f"{name}.csv")
        assert set(table["checklist"]) == {"court_outcome"}, name
    assert set(tables["scores"]["checklist"]) == {"court_outcome"}
    run_tables = {n: read_table(out / f"{n}.csv") for n in ("summary_s_checklist", "summary_bootstrap")}
    fig = figures.fig_benchmark(run_tables)
    assert any("checklist: court_outcome" in ax.get_title() for ax in fig.axes)
    assert not any("reconstruction rule 6" in t.get_text() for t in fig.texts)  # a run has no estimated cells
    assert "checklist: court_outcome" in stability.flip_figure(result["stability"]).axes[0].get_title()
    assert "checklist: court_outcome" in orders.order_figure(result["order"])._suptitle.get_text()
    from gavel.paper import results

    paper = figures.fig_benchmark(results.read())
    assert not any("checklist:" in ax.get_title() for ax in paper.axes)
    assert any("reconstruction rule 6" in t.get_text() for t in paper.texts)


def test_documents_evaluate_takes_any_checklist_with_its_own_references(tmp_path, capsys, release_root):
    """Issue 32: ``documents evaluate --checklist FILE --references FILE`` scores value rows of the example
    checklist against references of its own (human.json-shaped or value rows), names the checklist in every
    table, and keeps its answers apart in the cache; the release's human.json is refused for another
    checklist, and a value row or reference naming an unknown item is one error naming the file and line.
    Needs the release (``release_root``: the refusal of human.json reads it; without the release the test
    failed on the message "GAVEL release not found" instead of skipping)."""
    from gavel.documents import evaluate as devaluate

    rows = tmp_path / "rows.jsonl"
    rows.write_text("\n".join(json.dumps(r) for r in [
        {"case_id": "7", "item": "Court", "index": 1, "value": "District of Maine"},
        {"case_id": "7", "item": "outcome", "index": 1, "value": "dismissed 2012"},
        {"case_id": "7", "item": "outcome", "index": 2, "value": "fees awarded"}]) + "\n")
    refs_json = tmp_path / "refs.json"
    refs_json.write_text(json.dumps({"results": {"7": {"court": ["U.S. District Court for the District of Maine"],
                                                       "Outcome": {"extracted": [{"value": "dismissed June 1, 2012"}]},
                                                       "money": []}}}))
    out = tmp_path / "eval"
    argv = ["documents", "evaluate", str(rows), "--subject", "e2e/m", "--provider", "mock", "--judge", MODEL,
            "--checklist", str(EXAMPLE), "--references", str(refs_json), "--out", str(out)]
    assert cli.main(argv) == 0
    per_run = read_table(out / "s_checklist.csv")
    assert set(per_run["checklist"]) == {"court_outcome"} and per_run["subject"].tolist() == ["e2e/m"]
    compared = read_table(out / "compare_rows.csv")
    assert sorted(compared["item"]) == ["court", "money", "outcome", "state"]
    gates = compared.set_index("item")["gate"].to_dict()
    # state: the reference has no entry (not scored as 0); money: empty on both sides (not applicable)
    assert gates["state"] == "unknown" and gates["money"] == "not_applicable" and gates["outcome"] == "multi"
    # the same references as value rows give the same pairs
    refs_rows = tmp_path / "refs.jsonl"
    refs_rows.write_text("\n".join(json.dumps({"case_id": "7", "item": i, "index": 1, "value": v}) for i, v in
                                   [("court", "U.S. District Court for the District of Maine"),
                                    ("outcome", "dismissed June 1, 2012")]) + "\n")
    checklist = gitems.load(EXAMPLE)
    values = devaluate.read_value_rows([rows], checklist)
    from_rows, from_json = (devaluate.pairs(values, "s", devaluate.read_references(r, checklist), checklist=checklist)
                            for r in (refs_rows, refs_json))
    assert [p for p in from_rows if p.item != "money"] == [p for p in from_json if p.item != "money"]
    capsys.readouterr()
    # the release's human.json is the legal checklist's reference only
    assert cli.main(argv[:-4] + ["--out", str(out)]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("error:") and "legal checklist only" in err and "--references" in err and "\n" not in err
    # an unknown item: the file and the line
    bad = tmp_path / "bad.jsonl"
    bad.write_text(rows.read_text() + json.dumps({"case_id": "7", "item": "Filing Date", "index": 1, "value": "x"}) + "\n")
    assert cli.main([*argv[:2], str(bad), *argv[3:]]) == 2
    err = capsys.readouterr().err.strip()
    assert f"{bad}: line 4:" in err and "Filing Date" in err and "\n" not in err
    refs_bad = tmp_path / "refs_bad.json"
    refs_bad.write_text(json.dumps({"7": {"Judge": ["x"]}}))
    assert cli.main(argv[:-4] + ["--references", str(refs_bad), "--out", str(out)]) == 2
    err = capsys.readouterr().err.strip()
    assert f"{refs_bad}: case 7:" in err and "'Judge'" in err


# ------------------------------------------------------------------ what a checklist file handed over may hold
def alias_bomb(levels: int = 9, width: int = 9) -> str:
    """The issue's reproduction: a few hundred bytes of nested YAML aliases in `task`, each level ``width``
    times the one below (9 levels: 9**9 strings once expanded, more than 4 GB)."""
    names = "abcdefghijklmnopqrstuvwxyz"
    parts = [f"&{names[0]} [" + ",".join(["lol"] * width) + "]"]
    parts += [f"&{names[i]} [" + ",".join([f"*{names[i - 1]}"] * width) + "]" for i in range(1, levels)]
    return "name: bomb\nitems: [{key: a, instruction: b}]\ntask: [" + ", ".join(parts) + "]\n"


def test_an_alias_bomb_is_one_line_before_anything_is_expanded(tmp_path):
    """Run as a user would, in a process capped at 1.5 GB: before, it took more than 4 GB (a MemoryError)."""
    import resource
    import subprocess
    import sys

    bomb = _write(tmp_path / "bomb.yaml", alias_bomb())
    assert len(bomb.read_bytes()) < 600

    def cap():
        resource.setrlimit(resource.RLIMIT_AS, (1536 << 20, 1536 << 20))
    done = subprocess.run([sys.executable, "-m", "gavel", "evaluate", "--summaries", str(tmp_path / "none.json"),
                           "--provider", "mock", "--checklist", str(bomb), "--out", str(tmp_path / "out")],
                          capture_output=True, text=True, timeout=300, preexec_fn=cap,
                          env={**os.environ, "OPENBLAS_NUM_THREADS": "1"})
    assert done.returncode == 2 and done.stderr.strip().splitlines() == [
        f"error: {bomb.resolve()}, line 3: anchors and aliases (& and *) are not allowed in a checklist"]


def test_every_field_is_checked_before_the_fingerprint_is_hashed(monkeypatch):
    """parse() given data with shared lists (what aliases compose to) refuses `task` without hashing it."""
    level = ["lol"] * 9
    for _ in range(8):
        level = [level] * 9

    def no_hash(*a, **k):
        raise AssertionError("hashed before the fields were checked")
    monkeypatch.setattr(gitems.hashlib, "sha256", no_hash)
    with pytest.raises(ChecklistError, match=r"^mine.yaml: `task` must be text$"):
        gitems.parse({"name": "x", "items": [{"key": "a", "instruction": "b"}], "task": level}, "mine.yaml")


@pytest.mark.parametrize("text,message", [
    ("name: x\nitems:\n  - key: a\n    instruction: b\n    instruction: c\n",
     r", line 5: key 'instruction' is given twice in one entry \(first on line 4\)$"),
    ("name: x\nname: y\nitems: [{key: a, instruction: b}]\n", r", line 2: key 'name' is given twice"),
    ("name: x\nitems: [{key: a, instruction: b, key: c}]\n", r", line 2: key 'key' is given twice"),
    ("name: x\nitems: [&one {key: a, instruction: b}]\n", r", line 2: anchors and aliases"),
    ("name: x\nitems: [{<<: {key: a}, instruction: b}]\n", r", line 2: merge keys \(<<\) are not allowed"),
    # explicit tags: on the wrong value, PyYAML's own constructors crashed (found by the fuzz target, seed
    # 1331597991: AttributeError from !!timestamp; KeyError from !!bool, TypeError from !!set)
    ("name: x\nitems: !!timestamp 2012-06-01x\n", r", line 2: tags \('tag:yaml.org,2002:timestamp'\) are not allowed"),
    ("name: x\nitems: [{key: a, instruction: b, ok: !!bool maybe}]\n", r", line 2: tags \('tag:yaml.org,2002:bool'\)"),
    ("name: x\nitems: !!set [1]\n", r", line 2: tags \('tag:yaml.org,2002:set'\)"),
    ("name: ! x\nitems: [{key: a, instruction: b}]\n", r", line 1: tags \('!'\) are not allowed"),
    ("name: x\nitems:\n  - !mine {key: a, instruction: b}\n", r", line 3: tags \('!mine'\) are not allowed"),
    ("name: x\nitems: " + "[" * 400 + "]" * 400 + "\n", r", line 2: nested deeper than 8 levels$"),
    ("name: x\nitems: " + "9" * 5000 + "\n", r": not a usable YAML value \("),
    ("name: x\ntask: [1, 2]\nitems: [{key: a, instruction: b}]\n", r": `task` must be text$"),
    ("name: x\nitems: [{key: a, instruction: " + "w" * 5000 + "}]\n",
     r", item 1 \('a'\): `instruction` is 5,000 characters long \(at most 4,000\)$"),
    ("name: x\nitems: [{key: a, instruction: b, aliases: [" + ",".join(f"n{i}" for i in range(60)) + "]}]\n",
     r", item 1 \('a'\): `aliases` lists 60 entries \(at most 50\)$"),
    ("name: x\nitems: [" + ",".join(f"{{key: k{i}, instruction: b}}" for i in range(501)) + "]\n",
     r": `items` lists 501 entries \(at most 500\)$"),
    ("name: x\nitems: [{key: " + "k" * 5000 + ", instruction: b}]\n", r"`key` is 5,000 characters long"),
])
def test_what_a_checklist_file_may_hold_is_bounded_and_each_refusal_is_one_line(tmp_path, text, message):
    path = _write(tmp_path / "c.yaml", text)
    with pytest.raises(ChecklistError, match=message) as err:
        gitems.load(path)
    said = str(err.value)
    assert said.startswith(str(path.resolve())) and "\n" not in said and len(said) < 400


def test_a_file_too_big_not_utf8_or_not_a_file_is_one_line(tmp_path):
    big = tmp_path / "big.yaml"
    big.write_bytes(b"name: x\n" + b"# padding\n" * (gitems.MAX_FILE_BYTES // 10 + 1))
    with pytest.raises(ChecklistError, match=r"big.yaml: a checklist file is at most 512,000 bytes"):
        gitems.load(big)
    latin = tmp_path / "latin.yaml"
    latin.write_bytes(b"name: caf\xe9\n")
    with pytest.raises(ChecklistError, match=r"latin.yaml: not UTF-8 text \(byte 9\)$"):
        gitems.load(latin)
    fifo = tmp_path / "pipe.yaml"
    os.mkfifo(fifo)
    for spec, said in [({"a": 1}, "a checklist is a packaged name or a file path, not dict"),
                       ("a\x00b.yaml", "a\\x00b.yaml: cannot read checklist (embedded null byte)"),
                       ("/dev/zero", "/dev/zero: cannot read checklist (not a regular file)"),
                       (str(tmp_path), f"{tmp_path}: cannot read checklist (not a regular file)"),
                       (str(fifo), f"{fifo}: cannot read checklist (not a regular file)"),  # opened without waiting
                       ("/" + "x" * 5000 + ".yaml", "/" + "x" * 196 + "...: cannot read checklist (File name too long)")]:
        with pytest.raises(ChecklistError) as err:
            gitems.load(spec)
        assert str(err.value) == said


@pytest.mark.parametrize("first,second,message", [
    ("{key: Court, instruction: b}", "{key: court, instruction: b}",
     r"item 2 \('court'\): its key 'court' is the same name as item 1's key 'Court'"),
    ("{key: a, name: \"caf\u00e9\", instruction: b}", "{key: b, name: \"cafe\u0301\", instruction: b}",
     r"item 2 \('b'\): its name 'cafe\u0301' is the same name as item 1's name 'caf\u00e9'"),
    ("{key: a, name: a b, instruction: b}", "{key: a_b, instruction: b}",
     r"item 2 \('a_b'\): its key 'a_b' is the same name as item 1's name 'a b'"),
    ("{key: a, name: Money  paid, instruction: b}", "{key: b, name: money paid, instruction: b}",
     r"item 2 \('b'\): its name 'money paid' is the same name as item 1's name 'Money  paid'"),
    ("{key: x, instruction: b}", "{key: 01_x, instruction: b}",
     r"item 2 \('01_x'\): its key '01_x' is the same name as item 1's slug '01_x'"),
    ("{key: a, instruction: b, aliases: [The Court]}", "{key: the_court, instruction: b}",
     r"item 2 \('the_court'\): its key 'the_court' is the same name as item 1's alias 'The Court'"),
    ("{key: a, name: \"ab\u200b\", instruction: b}", "{key: ab, instruction: b}",
     r"item 2 \('ab'\): its key 'ab' is the same name as item 1's name"),
])
def test_names_that_collide_in_any_spelling_the_code_uses_are_refused(tmp_path, first, second, message):
    """Before, the second item's spelling silently took over the first's: its values were read as the other's."""
    path = _write(tmp_path / "c.yaml", f"name: x\nitems:\n  - {first}\n  - {second}\n")
    with pytest.raises(ChecklistError, match=message) as err:
        gitems.load(path)
    assert "\n" not in str(err.value)


def test_spellings_are_found_in_any_unicode_form_and_case():
    c = gitems.parse({"name": "x", "items": [{"key": "cafe", "name": "Caf\u00e9 owner", "instruction": "b"},
                                              {"key": "other", "instruction": "c"}]}, "mine.yaml")
    assert c.item("CAFE\u0301 OWNER").key == c.item("caf\u00e9_owner").key == "cafe"
