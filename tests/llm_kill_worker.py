"""Subprocess of the kill test: run one stage against a fake provider server until done.
Usage: python llm_kill_worker.py PROVIDER BASE_URL WORKDIR N_REQUESTS"""

import json
import sys
from pathlib import Path

from gavel.llm import Request
from gavel.llm.providers import get_provider
from gavel.llm.runner import StageRunner

MODELS = {"openai": "gpt-4.1-2025-04-14", "anthropic": "claude-sonnet-4-20250514-thinking", "gemini": "gemini-2.5-pro"}


def requests(provider: str, n: int) -> list[Request]:
    return [Request(stage="killtest", model=MODELS[provider], case_id=f"case{i}",
                    messages=[{"role": "system", "content": "Answer briefly."},
                              {"role": "user", "content": f"Question {i}"}]) for i in range(n)]


if __name__ == "__main__":
    provider, base_url, workdir, n = sys.argv[1], sys.argv[2], Path(sys.argv[3]), int(sys.argv[4])
    url = base_url + "/v1" if provider == "openai" else base_url
    runner = StageRunner("killtest", get_provider(provider, base_url=url, api_key="sk-kill-test-key-000000"),
                         workdir, poll_interval=0.01, progress=False, max_attempts=5)
    # small batches so that a run has many submissions to be killed between
    runner.provider.max_batch_requests = 5
    report = runner.run(requests(provider, n))
    out = {cid: (r.status, r.text) for cid, r in report.responses.items()}
    (workdir / "result.json").write_text(json.dumps(out, sort_keys=True))
