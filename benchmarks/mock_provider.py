"""The mock provider through the stage runner at two sizes: requests per second and their ratio (a linear
runner keeps the rate; a quadratic one loses it tenfold from 1,000 to 10,000 requests), then a mock
``gavel evaluate`` (every stage, the stand-in model) on two numbers of summaries.

    .venv/bin/python benchmarks/mock_provider.py [SMALL LARGE]      # default 1000 10000

online : the runner's online mode (threads calling MockProvider.complete), cache empty
batch  : the runner's batch mode (MockProvider batches of 1,000, submitted, polled, fetched)
evaluate: pipeline.evaluate with the mock provider on SMALL/20 and LARGE/20 summaries, 3 items
"""

from __future__ import annotations

import sys
import tempfile
import time
from pathlib import Path

from gavel.llm import Request
from gavel.llm.providers.mock import MockProvider
from gavel.llm.runner import StageRunner
from gavel.runs import pipeline

TEXT = ("The plaintiffs filed the complaint on 3 March 2019 in the District Court. The court ruled for the "
        "plaintiffs on the motion to dismiss. The parties settled; the court approved the settlement in 2021.")


def stage_rate(n: int, mode: str) -> float:
    requests = [Request(stage="bench", model="mock-model", case_id=str(i),
                        messages=[{"role": "user", "content": f"question {i}"}]) for i in range(n)]
    with tempfile.TemporaryDirectory() as tmp:
        runner = StageRunner("bench", MockProvider(), Path(tmp), progress=False, poll_interval=0.0)
        t0 = time.perf_counter()
        report = runner.run(requests, mode=mode)
        elapsed = time.perf_counter() - t0
    assert report.sent == n and not report.failed, (report.sent, len(report.failed))
    return n / elapsed


def evaluate_rate(n_summaries: int) -> float:
    summaries = [("bench-model", str(i), f"Case {i}. {TEXT}") for i in range(n_summaries)]
    references = {str(i): f"Case {i}. {TEXT}" for i in range(n_summaries)}
    settings = pipeline.Settings(extractor="mock-model", judge="mock-model",
                                 items=tuple(pipeline.ITEMS[:3]), mode="online")
    with tempfile.TemporaryDirectory() as tmp:
        t0 = time.perf_counter()
        tables = pipeline.evaluate(summaries, references, pipeline.provider("mock"), tmp, settings)
        elapsed = time.perf_counter() - t0
    assert int((tables["answers"]["status"] == "failed").sum()) == 0
    return n_summaries / elapsed


def main(small: int = 1000, large: int = 10000) -> None:
    print(f"mock provider through the stage runner, {small:,} and {large:,} requests "
          f"(ratio = rate at {large:,} / rate at {small:,}; linear: about 1)")
    for mode in ("online", "batch"):
        a, b = stage_rate(small, mode), stage_rate(large, mode)
        print(f"  {mode:<7}: {a:8.0f} requests/s at {small:,}, {b:8.0f} requests/s at {large:,}; ratio {b / a:.2f}")
    s_small, s_large = max(1, small // 20), max(2, large // 20)
    a, b = evaluate_rate(s_small), evaluate_rate(s_large)
    print(f"  evaluate: {a:8.1f} summaries/s at {s_small:,}, {b:8.1f} summaries/s at {s_large:,}; "
          f"ratio {b / a:.2f} (mock, 3 items, every stage)")


if __name__ == "__main__":
    main(*(int(x) for x in sys.argv[1:3]))
