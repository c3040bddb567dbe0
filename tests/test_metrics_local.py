"""The pointwise metric and the CaseGen-style judge on the real local model (llama.cpp serving the packaged
SmolLM2-135M, gavel.llm.providers.local) and a real release case: the model summary of GPT-4.1 against the
human reference. The model is tiny, so its answers are poor; what is checked is that every answer is either
scored within its range or recorded with its reason, and that nothing else happens. A sample keeps it short:
the first paragraph of each summary for the pointwise metric (every pair judged, so the pre-selection
loss is measured), the whole texts for the judge."""

from __future__ import annotations

import pytest
from needs import need_module, unavailable

local = need_module("gavel.llm.providers.local", "no local provider in this checkout")
need_module("sentence_transformers", "sentence-transformers not installed (metrics extra)")

from gavel.answers import REASONS  # noqa: E402
from gavel.llm.runner import StageRunner  # noqa: E402
from gavel.metrics import (  # noqa: E402
    casegen_judge,
    pointwise_points,
    pointwise_run,  # noqa: E402
)

MODEL = "SmolLM2-135M-Instruct"
SUBJECT = "gpt-4.1-2025-04-14"


@pytest.fixture(scope="module")
def server():
    missing = local.installed()
    if missing:
        unavailable(missing)
    with local.LocalServer() as provider:
        yield provider


@pytest.fixture(scope="module")
def case(shared_rel):
    s = shared_rel.summaries[shared_rel.summaries["set"] == "benchmark"].set_index(["model", "case_id"])["text"]
    case_id = sorted(s.loc["human"].index)[0]
    return case_id, s[(SUBJECT, case_id)], s[("human", case_id)]


def test_pointwise_end_to_end_on_a_release_case(server, case, tmp_path):
    case_id, summary, reference = case
    first = [pointwise_points.paragraphs(t)[0] for t in (summary, reference)]
    row = pointwise_run.evaluate(SUBJECT, case_id, first[0], first[1], model=MODEL, k=2, judge_all=True,
                                 runner=lambda stage: StageRunner(stage, server, tmp_path / stage, progress=False),
                                 embed_kwargs={"cache_dir": None})
    print({k: v for k, v in row.items() if not k.startswith("points_")})
    assert row["status"] in ("ok", "some_pairs_unjudged", "points_failed"), row
    if row["status"] != "points_failed":
        assert row["pairs_judged"] == row["reference_points"] * row["candidate_points"]
        for method in ("greedy", "optimal"):
            assert 0 <= row[f"{method}_recall"] <= row[f"{method}_recall_high"] <= 1 + 1e-9
            assert 0 <= row[f"{method}_precision"] <= 1 + 1e-9
        assert 0 <= row["preselection_dropped"] <= row["preselection_true_pairs"]


def test_judge_on_the_local_model(server, case, tmp_path):
    case_id, summary, reference = case
    jobs = casegen_judge.build_requests([(SUBJECT, case_id, summary, reference)], MODEL, max_tokens=600)
    report = StageRunner(casegen_judge.STAGE, server, tmp_path / "judge", progress=False).run(
        [r for r, _ in jobs], mode="online")
    row = casegen_judge.parse_response(jobs[0][1], report.responses[jobs[0][0].custom_id])
    print({k: row[k] for k in ("status", "detail", "overall")})
    if row["status"] == "ok":
        assert 1 <= row["overall"] <= 10
        assert all(1 <= row[k] <= 10 for k in casegen_judge.load_criteria().keys)
    else:
        assert row["status"] in REASONS and row["overall"] is None
