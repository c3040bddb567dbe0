"""The corruption suite on the shared public release (issue 8): a copy of the release (unchanged files are
symlinks) is corrupted in every way the loader must survive, at once, in files that do not touch each
other. ``python -m gavel audit`` and ``python -m gavel results --out`` (what ``make audit``/``make results``
run) exit 0 and print each defect with its file and record, and the loaded tables differ from the clean
release's only in records the audit names."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from gavel.core import config
from gavel.release import load_release

STEM = "50_cases_for_benchmarking"
KEYS = ["file", "record", "defect"]


def part_file(data: Path, folder: str, part: int) -> Path:
    (path,) = (data / folder).glob(f"{STEM}{'_2' if part == 2 else ''}_complex_*.json")
    return path


def real(path: Path) -> Path:
    """Replace a symlink by a real copy of the file, so it can be corrupted without touching the release."""
    if path.is_symlink():
        target = path.resolve()
        path.unlink()
        shutil.copyfile(target, path)
    return path


def edit_json(path: Path, change) -> None:
    data = json.loads(real(path).read_text(encoding="utf-8"))
    path.write_text(json.dumps(change(data)), encoding="utf-8")


def corrupt(data: Path) -> dict[str, tuple[str, str]]:
    """Corrupt the copy in every way; returns what each corruption must show as (file, record) audit rows."""
    rel = lambda p: str(p.relative_to(data))  # noqa: E731
    expect = {}
    # invalid UTF-8 inside one summary of a model file
    p = real(part_file(data, "summaries/gpt-4.1-2025-04-14", 1))
    d = json.loads(p.read_text(encoding="utf-8"))
    case = sorted(d["results"])[3]
    raw = p.read_bytes()
    start = raw.index(json.dumps(case).encode() + b":")
    cut = raw.index(b" ", start + 40)
    p.write_bytes(raw[:cut] + b" \xff\xfe" + raw[cut:])
    expect["invalid_utf8"] = (rel(p), f"case {case}")
    # a directory where a file should be
    p = part_file(data, "evaluation/gemma-3-12b-it_summarization", 2)
    p.unlink()
    p.mkdir()
    expect["not_a_file"] = (rel(p), "")
    # top level 42, null, a results list
    p = part_file(data, "summary_checklists/gpt-oss-20b-BF16_summarization", 1)
    real(p).write_text("42", encoding="utf-8")
    expect["wrong_shape 42"] = (rel(p), "")
    p = part_file(data, "evaluation/gpt-oss-20b-BF16_summarization", 2)
    real(p).write_text("null", encoding="utf-8")
    expect["wrong_shape null"] = (rel(p), "")
    p = part_file(data, "summary_checklists/gemini-2.5-flash_summarization", 2)
    edit_json(p, lambda d: {**d, "results": list(d["results"].values())})
    expect["wrong_shape results list"] = (rel(p), "results")
    # a judge file whose top level is a list (salvaged: its one object is read)
    p = part_file(data, "evaluation/gpt-5-2025-08-07_summarization", 2)
    edit_json(p, lambda d: [d])
    expect["wrong_shape judge list"] = (rel(p), "")
    # "Results" for "results" (salvaged)
    p = part_file(data, "summaries/Qwen3-30B-A3B-Thinking-2507", 2)
    edit_json(p, lambda d: {("Results" if k == "results" else k): v for k, v in d.items()})
    expect["misnamed_field"] = (rel(p), "")
    # a rerun beside a part file, with 3 summaries (not read: the larger file is)
    p = part_file(data, "summaries/gemini-2.5-pro", 1)
    rerun = p.with_name(p.name.replace(".json", "_rerun.json"))
    shutil.copyfile(p.resolve(), rerun)
    edit_json(rerun, lambda d: {**d, "results": dict(list(d["results"].items())[:3])})
    expect["duplicate_part_file"] = (rel(rerun), "")
    # a case of part 1 also in part 2 of the reference summaries (its copy is not read)
    h1, h2 = data / "summaries" / f"{STEM}.json", data / "summaries" / f"{STEM}_2.json"
    first = next(iter(json.loads(h1.read_text(encoding="utf-8"))))
    edit_json(h2, lambda d: {**d, first: {**next(iter(d.values())), "summary/long": "A copy."}})
    expect["duplicate_case"] = (rel(h2), f"case {first}")
    # a judged case that matches no summary (not read)
    p = part_file(data, "evaluation/gemini-2.5-flash_summarization", 1)
    edit_json(p, lambda d: {**d, "results": {**d["results"], "99999": next(iter(d["results"].values()))}})
    expect["unmatched_case"] = (rel(p), "case 99999")
    # a truncated reference-summaries file: the complete cases before the cut are kept, the lost ones named
    text = real(h1).read_text(encoding="utf-8")
    cases = list(json.loads(text))
    cut = int(len(text) * 0.6)
    h1.write_text(text[:cut], encoding="utf-8")
    starts = [text.index(f"{json.dumps(c)}:") for c in cases]  # a case is complete if the next one starts before the cut
    kept = [c for c, nxt in zip(cases, starts[1:]) if nxt < cut]
    lost = cases[len(kept):]
    expect["truncated_file"] = (rel(h1), f"cases after {kept[-1]}")
    expect["missing_case"] = (rel(h1), f"case {lost[-1]}")
    # a model folder that is not in the registry
    shutil.copytree(data / "summaries" / "gpt-5-2025-08-07", data / "summaries" / "my-model", copy_function=os.symlink)
    expect["unregistered_model"] = ("summaries/my-model", "")
    return expect


@pytest.fixture(scope="module")
def corrupted(tmp_path_factory, shared_rel):
    root = tmp_path_factory.mktemp("corrupted")
    data = root / "data"
    data.mkdir()
    clean = config.release_root()
    for name in sorted(os.listdir(clean)):
        if name in ("summaries", "summary_checklists", "evaluation"):
            shutil.copytree(clean / name, data / name, copy_function=os.symlink)
        else:  # untouched folders: one link each
            os.symlink(clean / name, data / name)
    expect = corrupt(data)
    return root, expect, load_release(root)


def test_every_corruption_is_an_audit_row_naming_file_and_record(corrupted, shared_rel):
    _, expect, rel = corrupted
    new = rel.audit.merge(shared_rel.audit[KEYS], on=KEYS, how="left", indicator=True)
    new = new[new["_merge"] == "left_only"]
    for what, (file, record) in expect.items():
        defect = what.split()[0]
        hit = new[(new["defect"] == defect) & (new["file"] == file) & (new["record"] == record)]
        assert len(hit) == 1, f"{what}: no audit row for {file} | {record}"


def _owner_rows(rel, table: str) -> pd.DataFrame:
    """The table's rows as text, each with the file it was read from and its case."""
    df = getattr(rel, table).copy()
    if table in ("summaries", "cases"):
        human = (df["model"] == "human") if table == "summaries" else pd.Series(True, index=df.index)
        stem = df["set"].map({"benchmark": STEM, "human_eval": "20_human_eval_cases"})
        df["owner"] = "summaries/" + stem + df["part"].map({1: "", 2: "_2"}).astype(str) + ".json"
        if table == "summaries":
            f = rel.files[rel.files["kind"] == "model_summaries"].set_index(["model", "part"])["file"].to_dict()
            df.loc[~human, "owner"] = [f.get((m, p)) for m, p in zip(df.loc[~human, "model"], df.loc[~human, "part"])]
    elif table == "checklist_values":
        ident = ["origin", "method", "model", "configuration", "unit", "part", "case_id", "item"]
        files = rel.checklist_items[ident + ["file"]].drop_duplicates(ident)
        df = df.merge(files.rename(columns={"file": "owner"}), on=ident, how="left")
    else:
        df["owner"] = df["file"]
    return df.astype(str)


@pytest.mark.parametrize("table", ["cases", "summaries", "checklist_items", "checklist_values", "judgments",
                                   "agent_runs", "token_stats"])
def test_tables_differ_only_in_named_records(corrupted, shared_rel, table):
    _, _, rel = corrupted
    a, b = _owner_rows(shared_rel, table), _owner_rows(rel, table)
    cols = [c for c in a.columns if c != "owner"]
    both = a.merge(b, on=cols, how="outer", indicator=True)
    differ = both[both["_merge"] != "both"]
    owners = differ["owner_x"].where(differ["_merge"] == "left_only", differ["owner_y"])
    named = rel.audit[~rel.audit[KEYS].apply(tuple, axis=1).isin(set(shared_rel.audit[KEYS].apply(tuple, axis=1)))]
    whole = set(named.loc[~named["record"].str.startswith("case"), "file"])  # rows naming the whole file or field
    records = set(zip(named["file"], named["record"]))
    unexplained = [(o, c) for o, c in zip(owners, differ["case_id"] if "case_id" in differ else owners)
                   if o not in whole and (o, f"case {c}") not in records]
    assert not unexplained, f"{table}: {len(unexplained)} rows differ with no audit row, e.g. {unexplained[:3]}"
    if table in ("cases", "summaries", "judgments", "checklist_items"):
        assert len(differ), f"{table}: the corruption should change something"


@pytest.mark.parametrize("command", ["audit", "results"])
def test_make_audit_and_results_exit_0_and_print_each_defect(corrupted, tmp_path, command):
    root, expect, _ = corrupted
    argv = [sys.executable, "-m", "gavel", command] + (["--out", str(tmp_path / "results")] if command == "results"
                                                       else [])
    done = subprocess.run(argv, cwd=config.REPO_ROOT, env={**os.environ, "GAVEL_RELEASE": str(root)},
                          capture_output=True, text=True, timeout=1800)  # a hang guard: a cold embedding cache takes minutes
    assert done.returncode == 0, done.stderr[-2000:]
    for what, (file, record) in expect.items():
        line = f"{file} | {record}" if record else file
        assert f"  {line}" in done.stdout, f"{command} does not print {what}: {line}"
    if command == "results":
        assert (tmp_path / "results" / "REPRODUCTION.md").is_file()
        assert (tmp_path / "results" / "summary_s_checklist.csv").is_file()
