"""The ``gavel_ref`` inspect scorer's overhead per sample against gavel's own pipeline on the same requests:
N summaries (each its own case, 5 items), every request answered by gavel's stand-in (``mockllm`` in inspect,
the ``mock`` provider in gavel), so what is timed is the machinery, not a model.

    .venv/bin/python benchmarks/inspect_overhead.py [N]      # default 10

pipeline   : pipeline.evaluate on the N summaries in one run (``gavel evaluate``)
per-sample : pipeline.evaluate once per summary (the pass the scorer runs for each sample)
scorer     : inspect eval of a task whose N samples are scored by gavel_ref (mockllm stand-in roles)

Prints seconds per sample, the requests each sent (they must be equal: the same requests), and the ratios.
"""

from __future__ import annotations

import sys
import tempfile
import time

from inspect_ai import Task, eval
from inspect_ai.dataset import Sample
from inspect_ai.model import get_model

from gavel.core.items import item
from gavel.interop.scorer import gavel_ref, stand_in_output
from gavel.interop.task import given_summary
from gavel.runs import pipeline

SUBJECT = "mockllm/model"
ITEMS = ["filing_date", "judge_name", "parties", "appeals", "decree_dates"]
TEXT = ("The ACLU filed this class action on March {i}, 2020 in the Northern District of Illinois against the "
        "City of Chicago. Judge Mary Smith presided. No appeals were filed. The court entered a consent decree.")
REF = ("On March {i}, 2020 the ACLU sued the City of Chicago. Judge Mary Smith presided. No appeals were filed. "
       "The parties settled by a consent decree in 2021.")



def settings() -> pipeline.Settings:
    return pipeline.Settings(extractor=SUBJECT, judge=SUBJECT, items=tuple(item(k) for k in ITEMS), structured=False)


def run_pipeline(cases: dict) -> tuple[float, int]:
    with tempfile.TemporaryDirectory() as tmp:
        t0 = time.perf_counter()
        tables = pipeline.evaluate([(SUBJECT, c, t) for c, (t, _) in cases.items()], {c: r for c, (_, r) in cases.items()},
                                   pipeline.provider("mock"), tmp, settings())
        return time.perf_counter() - t0, sum(tables["manifest"]["sent"].values())


def run_per_sample(cases: dict) -> tuple[float, int]:
    total, sent = 0.0, 0
    for c, (t, r) in cases.items():
        elapsed, n = run_pipeline({c: (t, r)})
        total, sent = total + elapsed, sent + n
    return total, sent


def run_scorer(cases: dict) -> tuple[float, int]:
    calls = []

    def counted(*args):
        calls.append(1)
        return stand_in_output(*args)

    roles = {r: get_model("mockllm/model", custom_outputs=counted, memoize=False) for r in ("extractor", "judge")}
    task = Task(dataset=[Sample(id=c, input="Summarize.", target=r, metadata={"summary": t})
                         for c, (t, r) in cases.items()], solver=given_summary(), scorer=gavel_ref(items=ITEMS))
    with tempfile.TemporaryDirectory() as tmp:
        t0 = time.perf_counter()
        [log] = eval(task, model=SUBJECT, model_roles=roles, log_dir=tmp, display="none")
        elapsed = time.perf_counter() - t0
    assert log.status == "success", log.error
    return elapsed, len(calls)


def main(n: int = 10) -> None:
    cases = {str(i): (TEXT.format(i=i), REF.format(i=i)) for i in range(1, n + 1)}
    run_per_sample({"0": (TEXT.format(i=0), REF.format(i=0))})  # warm imports and caches
    rows = [("pipeline", *run_pipeline(cases)), ("per-sample", *run_per_sample(cases)), ("scorer", *run_scorer(cases))]
    for name, seconds, sent in rows:
        print(f"{name:<11} {seconds / n * 1000:8.1f} ms/sample  {sent:5d} requests")
    base, each, scored = (r[1] for r in rows)
    print(f"scorer / pipeline: {scored / base:.2f}x; scorer / per-sample pipeline: {scored / each:.2f}x "
          f"(what inspect itself adds); per-sample / pipeline: {each / base:.2f}x (one pass per sample)")
    print(f"same requests: {len({r[2] for r in rows}) == 1}")


if __name__ == "__main__":
    main(*(int(a) for a in sys.argv[1:2]))
