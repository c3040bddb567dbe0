"""Fuzz target: a checklist file handed over by someone else (docs/hardening.md, "Checklist files").

Hypothesis writes YAML texts (near-valid checklists with fragments spliced in: anchors, aliases, merge keys,
repeated keys, deep brackets, long numbers, tags, odd Unicode) and Python data (what a parsed file or a run's
``evaluation.json`` may hold). Each is read by the one loader: it gives a checklist or one
``ChecklistError`` of one line naming the file, never another exception, and opens no file while it reads.
The examples run in a child process under a memory cap (``RLIMIT_AS``) and a CPU cap, so a regression that
expands a file shows as a failed test, not as a machine out of memory.
"""

from __future__ import annotations

import os
import resource
import subprocess
import sys
from pathlib import Path

import yaml
from fuzzing import any_text, fuzz, replay
from hypothesis import given
from hypothesis import strategies as st

from gavel.core import items as gitems

MEMORY_CAP = 1 << 30  # bytes, for the child process
CPU_CAP = 240  # seconds
SOURCE = "/fuzz/their.yaml"
FIELDS = [*gitems.TOP_FIELDS, *gitems.ITEM_FIELDS, *gitems.GROUP_FIELDS, *gitems.STYLE_FIELDS, "citation_style", "<<"]
PLACE = "PLACEHOLDER"


def _bomb(levels: int, width: int = 9) -> str:
    parts = ["&l0 [" + ",".join(["lol"] * width) + "]"]
    parts += [f"&l{i} [" + ",".join([f"*l{i - 1}"] * width) + "]" for i in range(1, levels)]
    return "[" + ", ".join(parts) + "]"


#: YAML put where a value goes: anchors, aliases and bombs, merge keys, tags, deep brackets, long numbers
FRAGMENTS = ["&a lol", "*a", "[&a lol, *a]", "&a [*a]", *(_bomb(n) for n in range(2, 10)), "{<<: {key: a}}",
             "!!int 1", "!!binary aGk=", "!!set {a, b}", "!!timestamp 2012-06-01", "!!float .nan",
             "!!python/object:os.system ls", "[" * 200 + "]" * 200, "9" * 5000, "0x" + "f" * 300, "2012-99-99",
             "? [a]\n: b", "{a: 1, a: 2}", "|\n  block", "\"\\ud800\"", "\"caf\\u0065\\u0301\"", "~", "[]", "{}"]
#: changes to a dumped file, line by line: a line said twice (a repeated key), a line cut, a fragment spliced in
LINE_EDITS = ["repeat", "drop", "splice"]

texts = any_text(max_size=40)  # lone surrogates too: a file's "\ud800" escape parses to one
scalars = st.one_of(texts, st.sampled_from(["single", "multi", "", " ", "a b", "a_b", "01_a", "A", "Court", "w" * 5000,
                                            "caf\u00e9", "cafe\u0301", "ab\u200b", PLACE]),
                    st.integers(), st.floats(allow_nan=True), st.booleans(), st.none())
values = st.recursive(scalars, lambda inner: st.one_of(st.lists(inner, max_size=4),
                                                     st.dictionaries(st.sampled_from(FIELDS) | texts, inner,
                                                                     max_size=4)), max_leaves=20)
words = st.text(alphabet="abcdefghij _-\u00e9", min_size=1, max_size=12).filter(str.strip) | \
    st.text(alphabet="abc \u00e9\ud800\udfff", min_size=1, max_size=12).filter(str.strip)
keys = st.sampled_from(["a", "b", "A", "a_b", "01_a", "court", "x", "Ab", "b_c"])
item = st.fixed_dictionaries(
    {"key": keys, "instruction": words},
    optional={"name": st.sampled_from(["a b", "A", "caf\u00e9", "cafe\u0301", "Court", "b c"]) | words,
              "label": words, "aliases": st.lists(words, max_size=3), "values": st.sampled_from(["single", "multi"]),
              "not_applicable": words, "document_instruction": words})
base = st.fixed_dictionaries(
    {"name": st.sampled_from(["x", "court_outcome"]), "items": st.lists(item, min_size=1, max_size=5)},
    optional={"task": words, "description": words,
              "groups": st.lists(st.fixed_dictionaries({"key": keys, "items": st.lists(keys, min_size=1, max_size=3)}),
                                 max_size=3),
              "style": st.dictionaries(st.sampled_from(["citation_style", "tone"]),
                                       st.fixed_dictionaries({"label": words, "what": words}), max_size=2)})


@st.composite
def checklists(draw):
    """A near-valid checklist with up to three of its fields replaced by anything (or by the placeholder)."""
    data = draw(base)
    for _ in range(draw(st.integers(0, 3))):
        where = draw(st.sampled_from(["top", "item", "group"]))
        if where == "top":
            data[draw(st.sampled_from(FIELDS))] = draw(values)
        elif where == "item":
            if not (isinstance(data.get("items"), list) and data["items"]):  # a top field replaced them
                continue
            entry = draw(st.sampled_from(data["items"]))
            if isinstance(entry, dict):  # a top field may have replaced the items with any list (of text, ...)
                entry[draw(st.sampled_from(gitems.ITEM_FIELDS))] = draw(values)
        elif isinstance(data.get("groups"), list) and data["groups"]:
            group = draw(st.sampled_from(data["groups"]))
            if isinstance(group, dict):
                group[draw(st.sampled_from(gitems.GROUP_FIELDS))] = draw(values)
    if draw(st.booleans()):  # where the file's YAML fragment goes
        if draw(st.booleans()):
            data[draw(st.sampled_from(gitems.TOP_FIELDS))] = PLACE
        elif isinstance(data.get("items"), list) and data["items"] and isinstance(data["items"][0], dict):
            data["items"][0][draw(st.sampled_from(gitems.ITEM_FIELDS))] = PLACE
    return data


def _one_line_or_checklist(read) -> None:
    _no_file_opened.armed = True
    try:
        got = read()
    except gitems.ChecklistError as err:
        said = str(err)
        assert said.startswith(SOURCE) and "\n" not in said and len(said) < 1000, said
        assert "Traceback" not in said and "Error:" not in said.split(": ", 1)[1], said
        return
    finally:
        _no_file_opened.armed = False
    assert isinstance(got, gitems.Checklist) and got.items and got.fingerprint


@fuzz(150)
@given(checklists(), st.sampled_from(FRAGMENTS),
       st.lists(st.tuples(st.sampled_from(LINE_EDITS), st.integers(0, 200), st.sampled_from(FRAGMENTS)), max_size=3),
       st.booleans())
def fuzz_checklist_files(data, fragment, edits, escaped):
    """A YAML checklist, near-valid, a field's value replaced by a YAML fragment, lines repeated, cut or
    spliced: one checklist or one line. ``escaped``: non-ASCII written as ``\\uXXXX`` escapes (as a file
    from an ASCII-only editor or a JSON tool has it; a lone surrogate is then a valid escape)."""
    text = yaml.safe_dump(data, allow_unicode=not escaped, sort_keys=False).replace(PLACE, fragment)
    lines = text.splitlines(keepends=True)
    for edit, at, spliced in edits:
        at %= len(lines) or 1
        if edit == "repeat" and lines:
            lines.insert(at, lines[at])
        elif edit == "drop" and lines:
            del lines[at]
        elif edit == "splice":
            lines.insert(at, spliced + "\n")
    text = "".join(lines)
    gitems._parsed.cache_clear()
    _one_line_or_checklist(lambda: gitems._parsed(SOURCE, text))


@fuzz(150)
@given(checklists() | values)
def fuzz_checklist_data(data):
    """Data as a parsed file or a run's evaluation.json may hold it: one checklist or one line."""
    _one_line_or_checklist(lambda: gitems.parse(data, SOURCE))


def _no_file_opened(event, args):
    if event in ("open", "os.open") and _no_file_opened.armed:
        raise AssertionError(f"a file was opened while a checklist was read: {args[0]!r}")


_no_file_opened.armed = False


def main() -> None:
    from gavel.core import vocab  # noqa: F401 -- imported before the hook: the loader reads it for `style`

    resource.setrlimit(resource.RLIMIT_AS, (MEMORY_CAP, MEMORY_CAP))
    resource.setrlimit(resource.RLIMIT_CPU, (CPU_CAP, CPU_CAP))
    gitems.parse({"name": "warm", "items": [{"key": "a", "instruction": "b"}], "style": {}}, SOURCE)
    sys.addaudithook(_no_file_opened)
    fuzz_checklist_files()
    fuzz_checklist_data()
    print("fuzzed checklist files and data")


def test_fuzz_checklist_files_and_data_under_a_memory_cap():
    root = Path(__file__).resolve().parents[1]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(root), str(root / "tests")]), "OPENBLAS_NUM_THREADS": "1"}
    done = subprocess.run([sys.executable, __file__], capture_output=True, text=True, timeout=CPU_CAP + 60, env=env,
                          cwd=root)
    said = "\n".join(line[:300] for line in (done.stdout + done.stderr).splitlines()[-60:])
    assert done.returncode == 0, said + replay()
    assert "fuzzed checklist files and data" in done.stdout


if __name__ == "__main__":
    main()
