"""Many processes, one result (issue 48 §3): `gavel evaluate --shard I/N` in separate runs and `gavel merge`
give the tables, comparisons and report of the single-process run, byte for byte; a missing, partial, foreign
or tampered shard is named and nothing is merged."""

import json
import shutil
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gavel.cli import main
from gavel.core import shards
from gavel.runs import sharding
from gavel.runs.pipeline import InputError

DATA = Path(__file__).parent / "data"
ITEMS = ["filing_date", "court_rulings"]


def inputs(tmp_path: Path, n_cases: int = 8) -> tuple[Path, Path]:
    """Summaries of two models on n_cases cases (the demo texts, varied per case) and their references."""
    demo = [json.loads(x) for x in (DATA / "ref_summaries.jsonl").read_text().splitlines()]
    refs = json.loads((DATA / "ref_references.json").read_text())
    lines, references = [], {}
    for i in range(n_cases):
        base = demo[i % len(demo)]
        case = f"case-{i}"
        references[case] = refs[base["case_id"]] + f" Docket {i}."
        for model in ("model-a", "model-b"):
            text = base["summary"] + (f" Filed {i} days later." if model == "model-b" else "")
            lines.append(json.dumps({"model": model, "case_id": case, "summary": text}))
    s, r = tmp_path / "summaries.jsonl", tmp_path / "references.json"
    s.write_text("\n".join(lines) + "\n")
    r.write_text(json.dumps(references))
    return s, r


def evaluate(s: Path, r: Path, out: Path, *extra: str) -> int:
    return main(["evaluate", "--summaries", str(s), "--references", str(r), "--provider", "mock",
                 "--items", *ITEMS, "--out", str(out), *extra])


def outputs(run: Path) -> dict[str, bytes]:
    """Every table, comparison, text and ledger of a run folder (not its stages' caches and logs)."""
    keep = {}
    for p in sorted(run.rglob("*")):
        rel = p.relative_to(run)
        if p.is_file() and rel.parts[0] != "runs" and p.name != sharding.SHARD_FILE:
            keep[str(rel)] = p.read_bytes()
    return keep


@pytest.fixture(scope="module")
def shard_runs(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("shards")
    s, r = inputs(tmp)
    assert evaluate(s, r, tmp / "single" / "run") == 0
    for i in (1, 2, 3):
        assert evaluate(s, r, tmp / f"s{i}", "--shard", f"{i}/3") == 0
    return tmp, s, r


def test_merge_is_the_single_process_run(shard_runs, capsys):
    tmp, s, r = shard_runs
    cases = {i: json.loads((tmp / f"s{i}" / "shard.json").read_text())["cases"] for i in (1, 2, 3)}
    assert sorted(c for v in cases.values() for c in v) == [f"case-{i}" for i in range(8)]
    assert all(shards.shard_of(c, 3) == i for i, v in cases.items() for c in v)
    assert all(json.loads((tmp / f"s{i}" / "shard.json").read_text())["complete"] for i in (1, 2, 3))
    capsys.readouterr()
    assert main(["merge", str(tmp / "s3"), str(tmp / "s1"), str(tmp / "s2"), "--out", str(tmp / "merged" / "run")]) == 0
    out = capsys.readouterr().out
    assert "merge: 3 shards complete, 8 cases" in out
    single, merged = outputs(tmp / "single" / "run"), outputs(tmp / "merged" / "run")
    assert "model_scores.csv" in single and any(k.startswith("comparison") for k in single)
    assert single.keys() == merged.keys()
    assert [k for k in single if single[k] != merged[k]] == []
    stages = [json.loads(p.read_text()) for p in (tmp / "merged" / "run" / "runs").glob("*/manifest.json")]
    assert len(stages) == 5 and all(m["sent"] == 0 for m in stages)  # every answer came from the shards
    # the report of each (a folder of the same name): the same page
    for run in ("single", "merged"):
        assert main(["report", str(tmp / run / "run"), "-o", str(tmp / f"{run}.html")]) == 0
    assert (tmp / "single.html").read_bytes() == (tmp / "merged.html").read_bytes()


def test_missing_partial_and_foreign_shards_are_named(shard_runs, tmp_path, capsys):
    tmp, s, r = shard_runs
    capsys.readouterr()
    assert main(["merge", str(tmp / "s1"), str(tmp / "s3"), "--out", str(tmp_path / "m1")]) == 2
    err = capsys.readouterr().err
    assert "shard 2/3 missing" in err and not (tmp_path / "m1").exists()
    partial = tmp_path / "s2"
    shutil.copytree(tmp / "s2", partial)
    rec = json.loads((partial / "shard.json").read_text())
    (partial / "shard.json").write_text(json.dumps({**rec, "complete": False}))
    assert main(["merge", str(tmp / "s1"), str(partial), str(tmp / "s3"), "--out", str(tmp_path / "m2")]) == 2
    assert f"{partial} (shard 2/3) is partial" in capsys.readouterr().err
    (partial / "shard.json").write_text(json.dumps({**rec, "settings": {**rec["settings"], "seed": 5}}))
    assert main(["merge", str(tmp / "s1"), str(partial), str(tmp / "s3"), "--out", str(tmp_path / "m3")]) == 2
    assert "is of another run" in capsys.readouterr().err
    assert main(["merge", str(tmp / "s1"), str(tmp / "s1"), str(tmp / "s3"), "--out", str(tmp_path / "m4")]) == 2
    assert "is shard 1/3 again" in capsys.readouterr().err
    assert not any((tmp_path / m).exists() for m in ("m2", "m3", "m4"))


def copy_shards(tmp: Path, to: Path) -> list[str]:
    """Copies of the three shard folders (a test spoils its own)."""
    for i in (1, 2, 3):
        shutil.copytree(tmp / f"s{i}", to / f"s{i}")
    return [str(to / f"s{i}") for i in (1, 2, 3)]


def test_a_shard_missing_answers_sends_nothing(shard_runs, tmp_path, capsys):
    """A shard that says complete but lacks a cached answer: the merge stops before sending anything."""
    tmp, s, r = shard_runs
    copies = copy_shards(tmp, tmp_path)
    victim = sorted((tmp_path / "s2" / "runs" / "style" / "cache").rglob("*.json"))[0]
    victim.unlink()
    capsys.readouterr()
    assert main(["merge", *copies, "--out", str(tmp_path / "m")]) == 2
    assert "the shards lack answers this run needs" in capsys.readouterr().err
    assert not (tmp_path / "m" / "model_scores.csv").exists()


def test_packed_shards_merge_to_the_single_run_and_keep_their_answers_packed(shard_runs, tmp_path, capsys):
    """Two of three shards packed (`gavel cache pack`), one loose: the merge is the single run byte for byte,
    its stage caches are packs holding every answer (no loose file), and nothing was sent."""
    from gavel.llm import packs

    tmp, s, r = shard_runs
    copies = copy_shards(tmp, tmp_path)
    loose_before = len(list((tmp_path / "s2").rglob("cache/*/*.json")))
    assert main(["cache", "pack", copies[0], copies[1]]) == 0
    assert not list((tmp_path / "s2").rglob("cache/*/*.json")) and loose_before > 0
    capsys.readouterr()
    assert main(["merge", *copies, "--out", str(tmp_path / "m")]) == 0
    total = sum(len(list((tmp / f"s{i}").rglob("cache/*/*.json"))) for i in (1, 2, 3))
    assert f"{total} answers copied" in capsys.readouterr().out
    assert [k for k, v in outputs(tmp / "single" / "run").items() if outputs(tmp_path / "m").get(k) != v] == []
    caches = sorted((tmp_path / "m" / "runs").glob("*/cache"))
    assert len(caches) == 5 and not list((tmp_path / "m").rglob("cache/*/*.json"))
    held = 0
    for c in caches:
        p = packs.open_pack(c / packs.PACK)
        held += len(list(p.rows()))
        p.close()
    assert held == total


def test_a_packed_shard_missing_an_answer_or_holding_a_foreign_one_is_named(shard_runs, tmp_path, capsys):
    import sqlite3

    from gavel.llm import packs

    tmp, s, r = shard_runs
    copies = copy_shards(tmp, tmp_path)
    assert main(["cache", "pack", *copies]) == 0
    pack = tmp_path / "s2" / "runs" / "style" / "cache" / packs.PACK
    db = sqlite3.connect(pack)
    key = db.execute("SELECT key FROM answers ORDER BY key LIMIT 1").fetchone()[0]
    db.execute("DELETE FROM answers WHERE key = ?", (key,))
    db.commit()
    capsys.readouterr()
    assert main(["merge", *copies, "--out", str(tmp_path / "m")]) == 2
    assert "the shards lack answers this run needs" in capsys.readouterr().err
    from gavel.llm.records import Response

    failed = Response(custom_id="x", status="errored", error="boom").to_dict()
    db.execute("INSERT INTO answers VALUES (?, 0, ?)", (key, json.dumps(failed)))
    db.commit()
    db.close()
    assert main(["merge", *copies, "--out", str(tmp_path / "m2")]) == 2
    assert f"{pack} (key {key}): a cached answer must have succeeded" in capsys.readouterr().err
    pack.unlink()
    pack.symlink_to(tmp_path / "s1" / "runs" / "style" / "cache" / packs.PACK)
    assert main(["merge", *copies, "--out", str(tmp_path / "m3")]) == 2
    assert "a link, not an answer pack" in capsys.readouterr().err


def test_a_killed_shard_is_partial(tmp_path, capsys, monkeypatch):
    """A shard whose run stops (here: a provider error) leaves shard.json saying complete: false."""
    s, r = inputs(tmp_path, 4)
    from gavel.runs import pipeline

    def broken(name, base_url=None, **kw):
        raise RuntimeError("the provider went away")

    monkeypatch.setattr(pipeline, "provider", broken)
    assert evaluate(s, r, tmp_path / "s1", "--shard", "1/2") == 1
    rec = json.loads((tmp_path / "s1" / "shard.json").read_text())
    assert rec["complete"] is False and rec["shard"] == [1, 2]


def test_changed_input_is_named(shard_runs, tmp_path, capsys):
    tmp, s, r = shard_runs
    copies = copy_shards(tmp, tmp_path)
    other = tmp_path / "summaries.jsonl"
    other.write_text("{}\n")
    for c in copies:
        rec = json.loads(Path(c, "shard.json").read_text())
        rec["settings"]["summaries"] = [str(other)]
        rec["inputs"] = {str(other): "0" * 64, **{k: v for k, v in rec["inputs"].items() if k != str(s)}}
        Path(c, "shard.json").write_text(json.dumps(rec))
    assert main(["merge", *copies, "--out", str(tmp_path / "m")]) == 2
    assert f"input {other} changed since the shards ran" in capsys.readouterr().err


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(record=st.one_of(st.binary(max_size=200), st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=8),
    lambda kids: st.lists(kids, max_size=3) | st.dictionaries(st.sampled_from(
        ["shard", "settings", "inputs", "cases", "complete", "summaries"]), kids, max_size=6), max_leaves=12)))
def test_fuzz_shard_record(tmp_path_factory, record):
    """Any shard.json is a shard record or refused with InputError naming the file, never another error."""
    folder = tmp_path_factory.mktemp("fz")
    raw = record if isinstance(record, bytes) else json.dumps(record).encode()
    (folder / "shard.json").write_bytes(raw)
    try:
        rec = sharding.read_shard(folder)
    except InputError as err:
        assert str(folder) in str(err)
    else:
        assert 1 <= rec["shard"][0] <= rec["shard"][1]


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(name=st.text(min_size=1, max_size=20).filter(lambda x: "/" not in x and x not in (".", "..") and "\0" not in x),
       body=st.binary(max_size=120))
def test_fuzz_cached_answers(tmp_path_factory, name, body):
    """A shard's cache files are copied only when they are answers gavel writes; anything else is refused
    naming the file, and nothing is written outside the merged folder."""
    folder, out = tmp_path_factory.mktemp("fc"), tmp_path_factory.mktemp("fo")
    target = folder / "runs" / "extract" / "cache" / "ab" / f"{name}.json"
    target.parent.mkdir(parents=True)
    try:
        target.write_bytes(body)
    except OSError:
        return
    try:
        n = sharding.copy_answers(folder, out)
    except InputError as err:
        assert "cache" in str(err)
    else:
        assert n in (0, 1)
        written = [p for p in out.rglob("*") if p.is_file()]
        assert len(written) == n and all(out in p.parents for p in written)


def test_case_groups_keep_cases_whole_in_their_first_order():
    from gavel.runs.pipeline import case_groups

    kept = {(m, c): "t" for c in ("c3", "c1", "c2", "c9") for m in ("a", "b", "c")[: 3 if c == "c2" else 2]}
    assert case_groups(kept, 4) == [["c3", "c1"], ["c2"], ["c9"]]  # c2's three summaries do not join c1's group
    assert case_groups(kept, 2) == [["c3"], ["c1"], ["c2"], ["c9"]]  # a case larger than a group is one
    assert case_groups(kept, 0) == [["c3", "c1", "c2", "c9"]] == case_groups(kept, 100)


def _rows(run: Path) -> dict:
    """Each table of a run folder as its rows, sorted (a run in case groups writes them group by group)."""
    import pandas as pd

    from gavel.core.spreadsheet import read_csv

    out = {}
    for p in sorted(run.glob("*.csv")):
        try:
            t = read_csv(p)
        except pd.errors.EmptyDataError:
            out[p.name] = None
            continue
        t = t[sorted(t.columns)]
        out[p.name] = sorted(map(repr, t.astype(object).where(t.notna(), None).itertuples(index=False, name=None)))
    out["texts.jsonl"] = sorted((run / "texts.jsonl").read_text().splitlines())
    return out


def test_a_run_in_case_groups_has_the_rows_of_one_group_and_its_shards_merge_to_it(shard_runs, tmp_path, capsys):
    """--group-size 3 (8 cases x 2 models: 8 groups of one case) gives the tables of the run in one group, row
    for row; the run's shards, each in groups, merge to it byte for byte; its report renders."""
    tmp, s, r = shard_runs
    grouped = tmp_path / "grouped"
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "keep.txt").write_text("not ours")
    grouped.mkdir()
    (grouped / ".groups").symlink_to(outside)  # a link swapped in where the groups' folder goes: not followed
    assert evaluate(s, r, grouped, "--group-size", "3") == 0
    assert (outside / "keep.txt").read_text() == "not ours" and [p.name for p in outside.iterdir()] == ["keep.txt"]
    assert json.loads((grouped / "evaluation.json").read_text())["groups"] == 8
    assert not (grouped / ".groups").exists()
    assert _rows(grouped) == _rows(tmp / "single" / "run")
    for i in (1, 2):
        assert evaluate(s, r, tmp_path / f"g{i}", "--shard", f"{i}/2", "--group-size", "3") == 0
    assert main(["merge", str(tmp_path / "g1"), str(tmp_path / "g2"), "--out", str(tmp_path / "merged")]) == 0
    single, merged = outputs(grouped), outputs(tmp_path / "merged")
    assert single.keys() == merged.keys() and [k for k in single if single[k] != merged[k]] == []
    capsys.readouterr()
    assert main(["report", str(grouped), "-o", str(tmp_path / "grouped.html")]) == 0
    assert "model-a" in (tmp_path / "grouped.html").read_text()


def test_a_group_with_batches_pending_does_not_stop_the_others(shard_runs, tmp_path, monkeypatch, capsys):
    """A group whose stage is still pending (batches running past the time limit) lets every other group run;
    one StagePending counts them all, nothing half-joined is left, and the rerun completes the run."""
    from gavel.runs import stages

    tmp, s, r = shard_runs
    real, seen = stages.Stages.run, []

    def run(self, stage, jobs, parse):
        cases = {req.case_id for req, _ in jobs if hasattr(req, "case_id")}
        seen.append((stage, tuple(sorted(cases))))
        if stage == "extract" and cases & {"case-2", "case-5"}:
            raise stages.StagePending(stage, len(jobs) - 1, len(jobs))
        return real(self, stage, jobs, parse)

    monkeypatch.setattr(stages.Stages, "run", run)
    out = tmp_path / "pending"
    capsys.readouterr()
    assert evaluate(s, r, out, "--group-size", "3") == 1  # the command line waits for batches: no limit there
    assert "stage extract: 10 of 12 answers still pending" in capsys.readouterr().err  # two groups of 6 requests
    assert {c for st, cs in seen if st == "style" for c in cs} == {f"case-{i}" for i in range(8)} - {"case-2", "case-5"}
    assert not (out / ".groups").exists() and not (out / "scores.csv").exists()
    monkeypatch.setattr(stages.Stages, "run", real)
    assert evaluate(s, r, out, "--group-size", "3") == 0
    rows, single = _rows(out), _rows(tmp / "single" / "run")
    assert rows.pop("cost.csv") != single.pop("cost.csv")  # the rerun's ledger: the first try's answers cached
    assert rows == single


def test_the_memos_of_a_group_are_forgotten_before_the_next():
    """What a group's texts left in the memos (summaries normalised, snippets located, sections rendered,
    tokens counted) is emptied between groups: kept, its entries pin the memory the group used."""
    from gavel.core import tokens
    from gavel.ref import grounding, prompts
    from gavel.runs import pipeline

    text = "The plaintiffs filed the complaint on 3 March 2019 in the District Court."
    assert grounding.located("filed the COMPLAINT", text).status == "normalized"
    tokens.count_tokens(text)
    memos = (grounding.normalize, grounding._located, tokens._count)
    assert all(m.cache_info().currsize for m in memos)
    pipeline._release_freed()
    assert [m.cache_info().currsize for m in (*memos, grounding.normalized_str, grounding._alignment,
                                              prompts._section)] == [0] * 6


def test_a_fifo_among_a_shards_answers_is_named_not_waited_on(shard_runs, tmp_path, capsys):
    import os

    tmp, s, r = shard_runs
    copies = copy_shards(tmp, tmp_path)
    victim = sorted((tmp_path / "s2" / "runs" / "style" / "cache").rglob("*.json"))[0]
    victim.unlink()
    os.mkfifo(victim)
    capsys.readouterr()
    assert main(["merge", *copies, "--out", str(tmp_path / "m")]) == 2
    assert f"{victim}: not a regular file" in capsys.readouterr().err


def test_a_shard_holding_no_case_is_complete_and_merges(tmp_path, capsys):
    """Two cases in four shards: the shards without a case end at once, complete, and the merge of all four
    is the single run (a user with few cases and many shards got 'no summary left' and a partial shard)."""
    s, r = inputs(tmp_path, 2)
    assert evaluate(s, r, tmp_path / "single") == 0
    held = {shards.shard_of(f"case-{i}", 4) for i in range(2)}
    empty = sorted(set(range(1, 5)) - held)
    assert empty  # two cases cannot fill four shards
    for i in range(1, 5):
        assert evaluate(s, r, tmp_path / f"s{i}", "--shard", f"{i}/4") == 0
    out = capsys.readouterr().out
    assert f"shard {empty[0]}/4 holds none of the 2 cases: nothing to evaluate; complete" in out
    assert all(json.loads((tmp_path / f"s{i}" / "shard.json").read_text())["complete"] for i in range(1, 5))
    assert main(["merge", *(str(tmp_path / f"s{i}") for i in range(1, 5)), "--out", str(tmp_path / "m")]) == 0
    single, merged = outputs(tmp_path / "single"), outputs(tmp_path / "m")
    assert single.keys() == merged.keys() and [k for k in single if single[k] != merged[k]] == []


def set_everywhere(copies: list[str], key: str, value) -> list[str]:
    """The setting ``key`` written as ``value`` into every shard's record (so that the shards still agree)."""
    for c in copies:
        rec = json.loads(Path(c, "shard.json").read_text())
        rec["settings"][key] = value
        Path(c, "shard.json").write_text(json.dumps(rec))
    return copies


# what a shard's settings could say instead of what `gavel evaluate` recorded: each crashed the merge
# (TypeError, AttributeError, ValueError: exit status 1) or was taken as it was (a negative group size, a
# usage file that is a string, a setting no option has), before the merge checked them as the command line
HOSTILE_SETTINGS = [("items", 5), ("items", [["a"]]), ("alpha", "x"), ("alpha", 7.0), ("alpha", float("nan")),
                    ("group_size", -1), ("label_orders", 3), ("mode", "x"), ("summaries", [5]), ("summaries", []),
                    ("seed", 1.5), ("seed", True), ("seed", 2**40), ("seed", int("9" * 300)),
                    ("mock_judge", {"seed": "x"}), ("mock_judge", {"flip": 2.0}), ("mock_judge", [1]),
                    ("usage_from", "abc"), ("name", ["a"]), ("provider", "nope"), ("checklist", 3), ("repeats", 0),
                    ("dry_run", "yes"), ("zzz", 1), ("alpha", None), ("provider", None)]


@pytest.mark.parametrize(("key", "value"), HOSTILE_SETTINGS, ids=[f"{k}={v!r}"[:40] for k, v in HOSTILE_SETTINGS])
def test_settings_a_shard_did_not_record_are_refused_in_one_line_naming_the_file(shard_runs, tmp_path, capsys,
                                                                                 key, value):
    tmp, s, r = shard_runs
    copies = set_everywhere(copy_shards(tmp, tmp_path), key, value)  # every shard alike: one run's settings
    capsys.readouterr()
    assert main(["merge", *copies, "--out", str(tmp_path / "m")]) == 2
    err = capsys.readouterr().err.splitlines()
    assert len(err) == 1 and err[0].startswith(f"error: {Path(copies[0]) / 'shard.json'}: not merged: settings "), err
    assert repr(key) in err[0]
    assert not (tmp_path / "m").exists()


def test_a_missing_setting_is_named_and_the_recorded_settings_of_a_real_run_pass():
    import argparse

    from gavel.core import options

    p = argparse.ArgumentParser()
    p.add_argument("--alpha", type=options.fraction, default=0.9)
    p.add_argument("--items", nargs="*", default=None)
    p.add_argument("--judge", type=options.judge_spec, default=None)
    p.add_argument("--flag", action="store_true")
    p.add_argument("--out", required=True)
    real = vars(p.parse_args(["--alpha", "0.25", "--items", "a", "b", "--judge", "noisy:seed=3,flip=0.1",
                              "--flag", "--out", "o"]))
    del real["out"]
    assert options.recorded(p, json.loads(json.dumps(real)), skip=("out",)) == (real, [])
    values, problems = options.recorded(p, {k: v for k, v in real.items() if k != "flag"}, skip=("out",))
    assert problems == ["setting 'flag' (--flag) missing"] and "flag" not in values
    assert options.recorded(p, [1], skip=("out",))[1] == ["settings are list, not an object of options"]


def test_a_shard_of_a_huge_number_of_shards_is_refused_and_missing_shards_are_counted(shard_runs, tmp_path, capsys):
    """A shard record saying [1, 10**12] made the merge list every missing shard (a list of a trillion); N is
    at most shards.MAX, and past NAMED missing shards the rest are counted."""
    tmp, s, r = shard_runs
    copies = copy_shards(tmp, tmp_path)
    rec = json.loads(Path(copies[0], "shard.json").read_text())
    Path(copies[0], "shard.json").write_text(json.dumps({**rec, "shard": [1, 10**12]}))
    capsys.readouterr()
    assert main(["merge", copies[0], "--out", str(tmp_path / "m")]) == 2
    assert f"{Path(copies[0]) / 'shard.json'}: not a shard record gavel writes" in capsys.readouterr().err
    Path(copies[0], "shard.json").write_text(json.dumps({**rec, "shard": [1, shards.MAX]}))
    assert main(["merge", copies[0], "--out", str(tmp_path / "m")]) == 2
    err = capsys.readouterr().err
    assert "shards 2/1000000, 3/1000000," in err and f"and {shards.MAX - 1 - sharding.NAMED:,} more missing" in err
    assert len(err) < 2000


_JSON = st.recursive(st.none() | st.booleans() | st.integers() | st.integers(min_value=10**18, max_value=10**400)
                     | st.floats(allow_nan=True, allow_infinity=True) | st.text(max_size=12),
                     lambda kids: st.lists(kids, max_size=3) | st.dictionaries(st.text(max_size=6), kids, max_size=3),
                     max_leaves=8)
_KEYS = ["items", "alpha", "seed", "group_size", "mock_judge", "summaries", "references", "provider", "mode",
         "label_orders", "orders", "repeats", "usage_from", "dry_run", "checklist", "name", "max_tokens", "gguf"]


def test_fuzz_the_settings_of_every_shard_end_in_a_merge_or_one_line(shard_runs, tmp_path_factory, capsys):
    """Seeded (tests/fuzzing.py): any JSON value in place of a recorded setting, in every shard alike, or a
    setting added or removed: the merge either runs (the value is one `gavel evaluate` could have recorded) or
    ends with one line, exit status 2; never exit status 1 (an error the merge did not expect)."""
    from fuzzing import any_text, fuzz, replay

    tmp, s, r = shard_runs

    @fuzz(25)
    @given(key=st.sampled_from(_KEYS) | any_text(max_size=8), value=_JSON | any_text(max_size=20),
           drop=st.booleans())
    def spoil(key, value, drop):
        where = tmp_path_factory.mktemp("fzs")
        copies = copy_shards(tmp, where)
        for c in copies:
            rec = json.loads(Path(c, "shard.json").read_text())
            if drop:
                rec["settings"].pop(key, None)
            else:
                rec["settings"][key] = value
            Path(c, "shard.json").write_text(json.dumps(rec))
        capsys.readouterr()
        rc = main(["merge", *copies, "--out", str(where / "m")])
        printed = capsys.readouterr()
        lines = printed.err.strip().splitlines()
        assert rc in (0, 2), (key, value, drop, printed.err[-2000:], replay())
        if rc == 2:
            assert lines and lines[-1].startswith("error: "), (key, value, printed.err[-2000:], replay())
        shutil.rmtree(where, ignore_errors=True)

    spoil()


def test_inputs_a_shard_record_names_are_only_the_runs_own_and_never_read_without_end(shard_runs, tmp_path, capsys):
    """A record naming /dev/zero among its inputs made the merge hash it forever; a FIFO would have blocked it.
    Now a merge opens only the files its settings name (summaries, references), each opened, then checked a
    regular file, and a file named without a digest is refused."""
    import os

    tmp, s, r = shard_runs
    fifo = tmp_path / "fifo.jsonl"
    os.mkfifo(fifo)
    cases = [("inputs", lambda rec: {**rec["inputs"], "/dev/zero": "0" * 64},
              "input '/dev/zero' is none of the run's summaries or references"),
             ("summaries", lambda rec: [str(fifo)], f"input '{fifo}' has no recorded digest and is not a file or a "
                                                    "folder"),
             ("references", lambda rec: "/dev/zero", "input '/dev/zero' has no recorded digest and is not a file or "
                                                     "a folder"),
             ("inputs", lambda rec: {k: v for k, v in rec["inputs"].items() if k != str(r.resolve())},
              f"input '{r.resolve()}' has no recorded digest")]
    for n, (field, change, said) in enumerate(cases):
        copies = copy_shards(tmp, tmp_path / f"c{n}")
        for c in copies:
            rec = json.loads(Path(c, "shard.json").read_text())
            if field == "inputs":
                rec["inputs"] = change(rec)
            else:
                rec["settings"][field] = change(rec)
            Path(c, "shard.json").write_text(json.dumps(rec))
        capsys.readouterr()
        assert main(["merge", *copies, "--out", str(tmp_path / f"m{n}")]) == 2
        err = capsys.readouterr().err
        assert said in err, (field, err)
        assert not (tmp_path / f"m{n}").exists()


def test_every_kind_of_option_a_shard_records_passes_the_merges_check(tmp_path, capsys):
    """The settings check refuses what `gavel evaluate` would not record; what it does record, with the
    options of every kind set (a judge spec, choices, typed numbers, lists, a checklist, a name), merges."""
    s, r = inputs(tmp_path, 3)
    extra = ["--mock-judge", "noisy:seed=3,flip=0.1", "--orders", "both", "--repeats", "2", "--label-orders", "2",
             "--max-tokens", "300", "--group-size", "1", "--seed", "7", "--alpha", "0.8", "--checklist", "legal",
             "--name", "mm"]
    for i in (1, 2):
        assert evaluate(s, r, tmp_path / f"s{i}", *extra, "--shard", f"{i}/2") == 0
    settings = json.loads((tmp_path / "s1" / "shard.json").read_text())["settings"]
    assert settings["mock_judge"]["flip"] == 0.1 and settings["label_orders"] == 2 and settings["alpha"] == 0.8
    capsys.readouterr()
    assert main(["merge", str(tmp_path / "s1"), str(tmp_path / "s2"), "--out", str(tmp_path / "m")]) == 0, \
        capsys.readouterr().err


def test_a_run_in_case_groups_holds_no_pack_open_once_its_stages_ran(tmp_path, capsys):
    """Each case group makes a runner, and a response cache, per stage: each kept its pack open (one SQLite
    connection more per stage and group: 219 and rising in a 100,000-summary merge, its memory rising with
    them). A run answered from packs now ends with none of them open."""
    import os

    s, r = inputs(tmp_path, 8)
    out = tmp_path / "run"
    assert evaluate(s, r, out, "--group-size", "2") == 0
    assert main(["cache", "pack", str(out)]) == 0
    capsys.readouterr()

    def open_packs() -> int:
        fds = Path("/proc/self/fd")
        return sum(1 for fd in fds.iterdir() if os.path.realpath(fd).endswith("answers.sqlite"))

    before = open_packs()
    assert evaluate(s, r, out, "--group-size", "2") == 0
    assert "sent 0, cached " in capsys.readouterr().out  # every answer from the packs
    assert open_packs() == before


@pytest.mark.parametrize(("key", "value"), [("references", "\ud800"), ("references", "a\x00b"),
                                            ("summaries", ["\ud800"])], ids=["surrogate", "nul", "summaries"])
def test_an_input_path_no_file_name_can_hold_is_one_line(shard_runs, tmp_path, capsys, key, value):
    """Found by the settings fuzz target in CI (e675dd2): a lone surrogate as the references' path ended the
    merge in `error: merge: UnicodeEncodeError`, exit status 1 (os.stat cannot encode it); a NUL likewise."""
    tmp, s, r = shard_runs
    copies = set_everywhere(copy_shards(tmp, tmp_path), key, value)
    capsys.readouterr()
    assert main(["merge", *copies, "--out", str(tmp_path / "m")]) == 2
    err = capsys.readouterr().err.splitlines()
    assert len(err) == 1 and err[0].startswith("error: not merged: input ") and (
        "cannot be read (ValueError" in err[0] or "cannot be read (UnicodeEncodeError" in err[0]), err
    assert not (tmp_path / "m").exists()
