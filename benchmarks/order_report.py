"""The order report's cost (`--orders both`, gavel.runs.orders) against the evaluation's own time, on a mock
run with about 10,000 judgments (target: at most 5%).

    .venv/bin/python benchmarks/order_report.py [cases]

The evaluation is `gavel.runs.pipeline.evaluate` with `orders="both"` through the mock provider (no model: the
cheapest an evaluation can be, so the ratio is an upper bound of what a real judge run sees); the judge
answers every pair with a verdict drawn from a hash of its request, so about half the pairs disagree between
orders and the majority analysis has work to do. The report is what `evaluate_repeats` adds: the judgments
table, `orders.report` and writing its tables.
"""

from __future__ import annotations

import hashlib
import json
import sys
import tempfile
import time
from pathlib import Path

from gavel.core.items import ITEMS
from gavel.core.vocab import STYLE_ASPECTS
from gavel.llm.providers.mock import MockProvider
from gavel.runs import orders, pipeline
from gavel.runs.judgments import judgment_table

LABELS = ("A contains B", "B contains A", "A equals B", "A and B are different")


def _draw(request, n: int) -> int:
    return hashlib.sha256(request.custom_id.encode()).digest()[0] % n


def answer(request) -> str:
    if request.stage == "extract":
        k = ITEMS.index(next(it for it in ITEMS if it.key == request.item))
        side = "ref" if request.subject == "human" else "model"
        values = [f"{request.item} {side} {request.case_id}"] if k % 2 else \
            [f"{request.item} value {i} {side}" for i in range(1 + (side == "ref"), 4)]
        return json.dumps({"reasoning": "r", "extracted": [{"evidence": [v], "value": v} for v in values]})
    if request.stage == "residual":
        return json.dumps({"reasoning": "r", "extracted": [{"fact": f"fact {request.subject}", "evidence_spans": [1]}]})
    if request.stage == "style":
        return json.dumps(dict.fromkeys(STYLE_ASPECTS, 3))
    user = request.messages[-1]["content"]
    if "## Information A" in user:
        return f"**Final Answer:** {LABELS[_draw(request, 4)]}"
    a = _draw(request, 2) + 1
    return "```json\n" + json.dumps({"common": [{"A_index": a, "B_index": 1}], "only_in_A": [], "only_in_B": [2]}) + "\n```"


def main(cases: int = 93) -> None:
    summaries = [(m, str(c), f"Summary of case {c} by {m}. " * 20) for m in ("model-x", "model-y") for c in range(cases)]
    references = {str(c): f"Reference summary of case {c}. " * 20 for c in range(cases)}
    settings = pipeline.Settings(extractor="gpt-oss-20b-BF16", judge="gemma-3-27b-it", orders="both")
    with tempfile.TemporaryDirectory() as tmp:
        t0, c0 = time.perf_counter(), time.process_time()
        tables = pipeline.evaluate(summaries, references, MockProvider(answer=answer), Path(tmp), settings)
        t_eval, c_eval = time.perf_counter() - t0, time.process_time() - c0
        runs = [tables]
        t0, c0 = time.perf_counter(), time.process_time()
        judgments = judgment_table(runs)
        report = orders.report(judgments, runs)
        judgments.to_csv(Path(tmp) / "judgments.csv", index=False)
        for name, table in report.items():
            table.to_csv(Path(tmp) / f"{name}.csv", index=False)
        t_report, c_report = time.perf_counter() - t0, time.process_time() - c0
    print(f"judgments: {len(judgments)} ({int((judgments['order'] == 2).sum())} in the second order), "
          f"{cases} cases x 2 models x {len(ITEMS)} items")
    print(f"evaluation (mock provider, both orders): {t_eval:.2f} s wall, {c_eval:.2f} s CPU of this process")
    print(f"order report (judgments table, report, CSVs): {t_report:.2f} s wall, {c_report:.2f} s CPU")
    print(f"ratio report / evaluation, wall: {t_report / t_eval:.3f} ({100 * t_report / t_eval:.1f}%; target <= 5%)")
    print(f"ratio report / evaluation, CPU:  {c_report / c_eval:.3f} ({100 * c_report / c_eval:.1f}%; less "
          f"sensitive to other load)")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 93)
