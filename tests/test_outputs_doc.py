"""docs/outputs.md lists every table and column a run writes: a mock `gavel evaluate` (with length bins and
two repeats) and the document-extraction commands run here, and each table they write, with each of its
columns, must be in the page. A new column fails this test until it is documented."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pandas as pd
from agent_script import MODEL, corpus

from gavel.cli import main
from gavel.documents.corpus import write_folder
from gavel.runs.stand_in import stand_in_answer

DOC = Path(__file__).resolve().parent.parent / "docs" / "outputs.md"
DATA = Path(__file__).parent / "data"


def documented() -> dict[str, set[str]]:
    """{heading: columns}: the backticked names in the first cell of each table row under a heading; a
    section that says "The columns of `X`" has X's columns too."""
    sections, current, inherit = {}, None, {}
    for line in DOC.read_text(encoding="utf-8").splitlines():
        if line.startswith("#"):
            current = line.lstrip("#").strip()
            sections[current] = set()
        elif current and line.startswith("| `"):
            sections[current] |= set(re.findall(r"`([^`]+)`", line.split("|")[1]))
        elif current and (m := re.search(r"The columns of `([^`]+)`", line)):
            inherit[current] = m.group(1)
    for heading, source in inherit.items():
        sections[heading] |= next(cols for h, cols in sections.items() if f"`{source}`" in h)
    return sections


def columns_of(name: str, hint: str = "") -> set[str]:
    found = [cols for h, cols in documented().items() if f"`{name}`" in h and hint in h]
    assert found, f"docs/outputs.md has no section for {name} {hint}".strip()
    return found[0]


def undocumented(name: str, columns, hint: str = "") -> list[str]:
    """Columns neither listed in the file's section nor, where the section says the table is documented on
    another page of docs/ (a link), named there (``X_ci_low``, ``X_low``... count as ``X``'s)."""
    listed = columns_of(name, hint)
    section = next(h for h in documented() if f"`{name}`" in h and hint in h)
    body = DOC.read_text(encoding="utf-8").split(section, 1)[1].split("\n#", 1)[0]
    pages = [DOC.parent / page for page in re.findall(r"documented once, in \[[^]]+\]\(([^)]+\.md)\)", body)]
    elsewhere = "".join(p.read_text(encoding="utf-8") for p in pages)
    assert all(f"`{name}`" in p.read_text(encoding="utf-8") for p in pages), (name, pages)

    def named_elsewhere(col: str) -> bool:
        base = re.sub(r"_(ci_low|ci_high|low|high)$", "", col)
        return bool(elsewhere) and (f"`{col}`" in elsewhere or f"`{base}`" in elsewhere)

    return [c for c in columns if c not in listed and not named_elsewhere(c)]


def test_every_table_and_column_of_an_evaluation_is_documented(tmp_path, monkeypatch):
    from gavel.runs import pipeline

    def with_bins(rel):  # the release's references come with length bins: a `bin` column
        refs = {c: t for _, c, t in pipeline.read_summaries(DATA / "ref_references.json", "human", reference=True)}
        return refs, {c: "64K" for c in refs}

    monkeypatch.setattr(pipeline, "release_references", with_bins)
    monkeypatch.setattr("gavel.release.load_release", lambda release=None: None)
    out = tmp_path / "out"
    assert main(["evaluate", "--summaries", str(DATA / "ref_summaries.jsonl"), "--provider", "mock",
                 "--items", "filing_date", "court_rulings", "--repeats", "2", "--orders", "both", "--label-orders", "2",
                 "--out", str(out)]) == 0
    tables = sorted(p for p in out.rglob("*.csv") if "runs" not in p.relative_to(out).parts)
    assert {p.name for p in tables} >= {"values.csv", "answers.csv", "compare.csv", "residual.csv", "scores.csv",
                                        "residual_match.csv", "gavel_ref_scores.csv", "stability_models.csv"}
    missing = {p.relative_to(out).as_posix(): undocumented(p.name, pd.read_csv(p).columns) for p in tables}
    for p in (p for p in out.rglob("*.jsonl") if "runs" not in p.relative_to(out).parts):
        keys = {k for line in p.read_text(encoding="utf-8").splitlines() for k in json.loads(line)}
        missing[p.relative_to(out).as_posix()] = undocumented(p.name, keys)
    assert not {k: v for k, v in missing.items() if v}, missing
    manifest = json.loads((out / "evaluation.json").read_text())
    assert not [k for k in manifest if f"`{k}`" not in DOC.read_text()]


def test_every_status_and_gate_is_documented():
    from gavel.answers import REASONS
    from gavel.ref.grounding import STATUSES
    from gavel.ref.stages.compare import GATES

    text = DOC.read_text(encoding="utf-8")
    for word in (*REASONS, *GATES, *STATUSES, "ok", "gated", "no_values"):
        assert f"`{word}`" in text, word


def test_every_column_of_the_document_commands_is_documented(tmp_path, fixture_root, monkeypatch):
    import gavel.documents.cli as dcli
    from gavel.llm.providers.mock import MockProvider

    case = write_folder(corpus(), tmp_path / "case")
    extracted = {"extracted": [{"value": "Judge Ann Lee", "evidence": [
        {"text": "Judge Ann Lee", "source_document": "Order Granting Preliminary Injunction", "location": "p. 1"}]}]}
    # an end-to-end / chunk answer naming one value with its evidence
    monkeypatch.setattr(dcli, "provider_from_args", lambda args: MockProvider(answer=lambda r: json.dumps(extracted)))
    for cmd, extra in (("end-to-end", []), ("chunked", ["--chunk-tokens", "500"])):
        assert main(["documents", cmd, str(case), "--provider", "mock", "--model", MODEL, "--items", "judge_name",
                     "--out", str(tmp_path / cmd), *extra]) == 0
        run = tmp_path / cmd / MODEL / "fake-1"
        rows = [json.loads(x) for x in (run / "rows.jsonl").read_text().splitlines()]
        assert rows, cmd
        assert not undocumented("rows.jsonl", {k for r in rows for k in r}, f"`{cmd}`"), cmd
        if cmd == "chunked":
            log = [json.loads(x) for x in (run / "merge_log.jsonl").read_text().splitlines()]
            assert not undocumented("merge_log.jsonl", {k for r in log for k in r})
    values = tmp_path / "values.jsonl"
    values.write_text(json.dumps({"case_id": "h1", "item": "filing_date", "index": 1, "value": "2023"}) + "\n")
    out = tmp_path / "docs_eval"
    monkeypatch.setattr(dcli, "provider_from_args", lambda args: MockProvider(answer=stand_in_answer))
    assert main(["documents", "evaluate", str(values), "--subject", "mine", "--provider", "mock",
                 "--judge", MODEL, "--release", str(fixture_root), "--out", str(out)]) == 0
    for name in ("compare_rows.csv", "s_checklist_per_case.csv", "s_checklist.csv"):
        assert not undocumented(name, pd.read_csv(out / name).columns), name


def test_the_agent_files_are_documented(tmp_path):
    from agent_script import config

    from gavel.documents.agent import run_agent
    from gavel.llm.providers.mock import MockProvider

    res = run_agent(corpus(), config(), MockProvider(), MODEL, tmp_path / "run", max_steps=2)
    text = DOC.read_text(encoding="utf-8")
    stats = json.loads((res.out_dir / "stats.json").read_text())
    assert not [k for k in stats if f"`{k}`" not in text]
    event = json.loads((res.out_dir / "ledger.jsonl").read_text().splitlines()[0])
    assert not [k for k in event if f"`{k}`" not in text]
    assert "`corpus_hash`" in text
