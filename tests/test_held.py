"""A run in case groups keeps the texts it was handed on disk while its groups run (gavel.runs.held, issue 48
§3): the same tables byte for byte as a run that keeps them in memory, the caller's list and dict emptied,
every text read back exactly (odd Unicode, a lone surrogate), and nothing left in the run's folder."""

import json

import pytest
from test_sharding import ITEMS, inputs, outputs

from gavel.core.items import item
from gavel.runs import held, pipeline
from gavel.runs import repeats as repeated

ODD = ["caf\u00e9 \u202eevil\u202c", "\ud800 alone", "nul \x00 inside", "\U0001f600 emoji", "tab\tand\nnewline", " "]


def test_texts_read_back_exactly(tmp_path):
    summaries = {(f"m{i % 2}", f"c{i}" + ODD[i % len(ODD)]): f"summary {i} " + ODD[i % len(ODD)] for i in range(30)}
    summaries[("", "c-empty-model")] = "a model named by nothing"
    references = {c: f"reference of {c}" for _, c in summaries}
    store = held.Texts(tmp_path, summaries, references)
    try:
        keys = list(reversed(summaries))
        assert store.summaries(keys) == {k: summaries[k] for k in keys}
        assert list(store.summaries(keys)) == keys  # in the order asked
        cases = sorted(references)
        assert store.references(cases) == {c: references[c] for c in cases}
    finally:
        store.close()
    assert list(tmp_path.iterdir()) == []


def test_a_killed_runs_texts_are_removed_by_the_next_and_a_link_is_not_followed(tmp_path):
    stale = tmp_path / f"{held.PREFIX}old"
    stale.mkdir()
    (stale / "texts.sqlite").write_text("left by a killed run")
    outside = tmp_path.parent / f"{tmp_path.name}-outside"
    outside.mkdir()
    (outside / "keep.txt").write_text("not ours")
    (tmp_path / f"{held.PREFIX}link").symlink_to(outside)
    store = held.Texts(tmp_path, {("m", "c"): "t"}, {"c": "r"})
    store.close()
    assert not stale.exists() and (outside / "keep.txt").read_text() == "not ours"
    assert [p.name for p in tmp_path.iterdir()] == [f"{held.PREFIX}link"]


def _read(folder):
    folder.mkdir()
    s, r = inputs(folder)
    summaries = [(json.loads(x)["model"], json.loads(x)["case_id"], json.loads(x)["summary"])
                 for x in s.read_text().splitlines()]
    return summaries, json.loads(r.read_text())


@pytest.mark.parametrize("group_size", [3, 1000])
def test_handed_over_inputs_give_the_same_run_and_are_let_go(tmp_path, group_size):
    """In groups (3: eight groups of one case) the inputs handed over are emptied and the tables are the same
    byte for byte as with the inputs kept; in one group (1000) a run reads them in memory and leaves them."""
    from gavel.llm.providers.mock import MockProvider

    settings = pipeline.Settings(extractor="mock-x", judge="mock-j", items=tuple(item(i) for i in ITEMS),
                                 chunk=group_size)
    kept_s, kept_r = _read(tmp_path / "a")
    repeated.evaluate_repeats(kept_s, kept_r, MockProvider(), tmp_path / "kept", settings)
    given_s, given_r = _read(tmp_path / "b")
    repeated.evaluate_repeats(given_s, given_r, MockProvider(), tmp_path / "given", settings, hand_over=True)
    grouped = group_size == 3
    assert (given_s == [] and given_r == {}) if grouped else (len(given_s) == 16 and len(given_r) == 8)
    assert len(kept_s) == 16 and len(kept_r) == 8
    a, b = outputs(tmp_path / "kept"), outputs(tmp_path / "given")
    assert a.keys() == b.keys() and [k for k in a if a[k] != b[k]] == []
    assert not [p for p in (tmp_path / "given").iterdir() if p.name.startswith(held.PREFIX)]
    manifest = json.loads((tmp_path / "given" / "evaluation.json").read_text())
    assert manifest.get("groups", 0) == (8 if grouped else 0)
