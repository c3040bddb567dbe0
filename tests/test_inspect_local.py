"""A real model end to end inside inspect_ai: the local llama.cpp model (SmolLM2-135M, offline) summarizes one
short case through inspect's OpenAI-compatible provider, and is the extractor and the judge of the
``gavel_ref`` scorer on that summary. A 135M model answers badly; what is checked is that the task runs,
every answer is used or recorded with a reason from the reader's vocabulary, and the score says per item what
became of it. Skipped (with the reason) without llama-cpp-python or the inspect extra; in CI that is an
error."""

from __future__ import annotations

import math

from needs import need_module
from test_local_model import local_server  # noqa: F401  (the local-model fixture, defined once)
from test_pipeline_local import DOCUMENTS, REFERENCE

need_module("inspect_ai", "the inspect extra (pip install '.[inspect]') is what this file tests")
need_module("openai", "inspect speaks to the local server with the openai package (providers extra)")

from inspect_ai import Task  # noqa: E402
from inspect_ai.dataset import Sample  # noqa: E402
from inspect_ai.model import ChatMessageSystem, ChatMessageUser, get_model  # noqa: E402
from inspect_ai.solver import generate  # noqa: E402
from test_inspect import eval  # noqa: E402  (inspect's eval in a thread of its own)

from gavel.answers import REASONS  # noqa: E402
from gavel.interop.scorer import gavel_ref  # noqa: E402
from gavel.ref.stages.summarize import case_messages  # noqa: E402


def test_one_case_summarized_and_scored_by_the_local_model_inside_inspect(local_server, tmp_path):  # noqa: F811
    server = local_server
    model = get_model(f"openai-api/llamacpp/{server.alias}", base_url=server.base_url, api_key="none",
                      memoize=False)
    kinds = {"system": ChatMessageSystem, "user": ChatMessageUser}
    sample = Sample(id="c1", target=REFERENCE,
                    input=[kinds[m["role"]](content=m["content"]) for m in case_messages(DOCUMENTS)])
    task = Task(dataset=[sample], solver=generate(), scorer=gavel_ref(items=["filing_date"], max_tokens=120))
    [log] = eval(task, model=model, model_roles={"extractor": model, "judge": model}, log_dir=str(tmp_path),
                 display="none", max_tokens=150, temperature=0.0)
    assert log.status == "success", log.error
    [done] = log.samples
    score = done.scores["gavel_ref"]
    assert set(score.value) >= {"s_checklist", "s_residual", "s_style", "s_gavel_ref", "filing_date"}
    assert score.explanation.startswith("filing_date: ")
    for answer in score.metadata["unusable_answers"]:
        assert answer["status"] in REASONS and answer["detail"], answer
    for key, value in score.value.items():
        assert math.isnan(value) or 0 <= value <= 100, (key, value)
    roles = {k for k in log.stats.role_usage} if log.stats.role_usage else set()
    print(score.explanation, score.value, roles)
