"""Issue 28 on the real local model (llama.cpp + SmolLM2-135M): a first own run says its expected duration before
it starts and keeps each stage's answers within the model's measured caps. (That `make demo` ends with each
repeat's S_checklist and S_GAVEL-REF or exactly why one is missing is checked on the demo run of
tests/test_local_model.py: one demo run is minutes here.) Slow on a shared machine: a handful
of requests each."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pandas as pd
import pytest
from needs import unavailable

from gavel.cli import main
from gavel.llm import pace
from gavel.llm.providers.local import default_model, installed

DATA = Path(__file__).parent / "data"


@pytest.fixture(autouse=True)
def _local_model():
    problem = installed()
    if problem:
        unavailable(f"the local model is not installed: {problem}")


def test_a_first_own_run_says_its_duration_and_keeps_the_caps(tmp_path, capsys):
    summaries = tmp_path / "my_summaries.jsonl"
    summaries.write_text((DATA / "ref_summaries.jsonl").read_text(encoding="utf-8").splitlines()[0] + "\n")
    out = tmp_path / "runs" / "first"
    rc = main(["evaluate", "--summaries", str(summaries), "--references", str(DATA / "ref_references.json"),
               "--provider", "local", "--items", "Filing Date", "--out", str(out)])
    assert rc in (0, 1)  # 1: a request failed; said below
    printed = capsys.readouterr().out
    assert printed.index("expected duration") < printed.index("stage extract: ") < printed.index("sent ")
    answers = pd.read_csv(out / "answers.csv")
    local = default_model()
    for stage, g in answers.groupby("stage"):
        assert g["output_tokens"].max() <= pace.stage_cap(local, stage), stage  # each stage within its cap
    manifest = json.loads((out / "evaluation.json").read_text())
    assert manifest["extractor"] == manifest["judge"] == local
    assert re.search(r"^sent \d+, cached 0; unusable answers: \d+; tables in ", printed, re.M)


def test_evaluate_serves_a_gguf_file_of_ones_own_and_the_run_names_it(tmp_path, capsys):
    from gavel.llm.providers.local import file_sha256, packaged_gguf

    packaged, _ = packaged_gguf(default_model())
    own = tmp_path / "my model.gguf"  # a file of one's own: here a copy of the packaged weights
    own.write_bytes(packaged.read_bytes())
    summaries = tmp_path / "s.jsonl"
    summaries.write_text((DATA / "ref_summaries.jsonl").read_text(encoding="utf-8").splitlines()[0] + "\n")
    out = tmp_path / "run"
    rc = main(["evaluate", "--summaries", str(summaries), "--references", str(DATA / "ref_references.json"),
               "--provider", "local", "--gguf", str(own), "--items", "Filing Date", "--out", str(out)])
    assert rc in (0, 1), capsys.readouterr()
    manifest = json.loads((out / "evaluation.json").read_text())
    assert manifest["model_file"] == {"path": str(own), "sha256": file_sha256(packaged)}
    assert len(pd.read_csv(out / "answers.csv")) >= 4  # extract (both sides), compare, residual, style
