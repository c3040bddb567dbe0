"""The dry run's estimate against what the run then reported, on the mock and the local provider.

    .venv/bin/python benchmarks/cost_estimate.py [N]        # N requests per set (default 6)

For each provider: a first set of N requests runs (the stage's "earlier answers"); then the dry run of a
second set estimates it -- input tokens counted with o200k_base, output tokens from the mean of the earlier
answers (gavel.llm.estimate) -- and the second set runs. Printed: estimate, actual and their ratio
(estimate / actual) for input tokens, output tokens and USD.

mock  : answers whose length varies with the request (40 to 400 characters; the mock reports a token per 4
        characters of the messages' text and of the answer), priced as GPT-4.1 (the mock stands in for the
        model's own provider): the USD ratio is meaningful.
local : SmolLM2 through llama.cpp (its own tokenizer reports the usage; short free-text answers); it runs
        on this machine, so both dollar figures are $0 and only the token ratios say something.
"""

from __future__ import annotations

import hashlib
import sys
import tempfile
from pathlib import Path

from gavel.llm import Request
from gavel.llm.providers.local import LocalServer, default_model, installed
from gavel.llm.providers.mock import MockProvider
from gavel.llm.runner import StageRunner

QUESTIONS = ["Who filed the complaint, and when?", "What relief did the plaintiffs seek?",
             "Which court heard the case?", "Did the parties settle? Say how.", "Name the judge.",
             "What statute was the claim brought under?", "Was there a consent decree?", "Was the case appealed?"]
PASSAGE = ("On 3 March 2019 residents of the county filed a class action in the District Court against the "
           "sheriff, claiming that jail conditions violated the Eighth Amendment. Judge Ana Ruiz certified the "
           "class in 2020; the parties entered a consent decree in 2021 with a monitor reporting twice a year.")


def requests(model: str, n: int, offset: int) -> list[Request]:
    out = []
    for i in range(offset, offset + n):
        q = QUESTIONS[i % len(QUESTIONS)]
        out.append(Request(stage="bench_cost", model=model, case_id=f"c{i}", params={"max_tokens": 64},
                           messages=[{"role": "user", "content": f"{PASSAGE}\n\nQuestion {i}: {q} Answer briefly."}]))
    return out


def varied_answer(request: Request) -> str:
    n = 40 + hashlib.sha256(request.custom_id.encode()).digest()[0] * 360 // 255
    return ("The court record says so. " * 20)[:n]


def compare(provider, model: str, n: int, workdir: Path) -> dict:
    runner = StageRunner("bench_cost", provider, workdir, progress=False, concurrency=1)
    runner.run(requests(model, n, 0), mode="online")  # the earlier answers
    second = requests(model, n, n)
    est = runner.dry_run(second, mode="online", show=False)
    runner.answered.clear()
    runner.run(second, mode="online")
    actual = runner.cost_table("online")
    fresh = actual[~actual["cached"].astype(bool)]
    return {"input": (float(est["input_tokens"].sum()), float(fresh["input_tokens"].sum())),
            "output": (float(est["output_tokens_est"].sum()), float(fresh["output_tokens"].sum())),
            "usd": (float(est["cost_usd_est"].sum()), float(fresh["usd"].sum())),
            "from": est["output_from"].iloc[0]}


def show(name: str, got: dict) -> None:
    print(f"{name}: output estimated from {got['from']}")
    for key in ("input", "output", "usd"):
        e, a = got[key]
        ratio = f"{e / a:.2f}" if a else "n/a (actual 0)"
        fmt = "${:.6f}" if key == "usd" else "{:,.0f}"
        print(f"  {key:6s} estimate {fmt.format(e):>12s}  actual {fmt.format(a):>12s}  estimate/actual {ratio}")


def main() -> None:
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 6
    with tempfile.TemporaryDirectory() as tmp:
        show("mock (priced as gpt-4.1-2025-04-14)",
             compare(MockProvider(answer=varied_answer), "gpt-4.1-2025-04-14", n, Path(tmp) / "mock"))
        missing = installed()
        if missing:
            print(f"local: skipped: {missing}")
            return
        with LocalServer() as local:
            show(f"local ({default_model()}, $0: runs on this machine)",
                 compare(local, default_model(), n, Path(tmp) / "local"))


if __name__ == "__main__":
    main()
