"""The local model's speed and the stage runner's overhead on it, in one run.

    .venv/bin/python benchmarks/local_model.py [N]        # N requests per measurement (default 8)

startup     : seconds from start() to the server answering (model load included)
prompt      : prompt tokens per second (a ~1,000-token prompt, 1 token generated; each prompt unique, so
              llama.cpp's prefix cache cannot help)
generation  : generated tokens per second (the same prompt again, prefix cached, up to 128 tokens), free text
              and under a JSON-schema grammar
overhead    : the same short requests sent directly with the openai SDK and through StageRunner (online,
              concurrency 1, empty cache): runner minus direct, per request, interleaved to share the load
interrupt   : seconds from a Ctrl-C (``_thread.interrupt_main``, what SIGINT does) to the run's return, while
              the server generates a long answer (the runner then stops the server)

The machine's load average is printed with the numbers: on shared cores they move with it.
"""

from __future__ import annotations

import _thread
import os
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

from gavel.llm import Request
from gavel.llm.pace import timed
from gavel.llm.providers.local import LocalServer, installed
from gavel.llm.runner import StageRunner

MODEL = "SmolLM2-135M-Instruct"
FILLER = ("The court reviewed the consent decree, the monitor's reports and the parties' filings on compliance, "
          "and it set a schedule for further briefing on attorney fees and the remaining claims. ")


def req(text: str, max_tokens: int, schema: dict | None = None) -> Request:
    return Request(stage="bench_local", model=MODEL, messages=[{"role": "user", "content": text}],
                   params={"max_tokens": max_tokens, "temperature": 0.0}, schema=schema)


def interrupt_latency(provider, workdir: Path) -> float:
    """Interrupt the main thread once the server has generated for a second; seconds until the run returns."""
    runner = StageRunner("bench_local_interrupt", provider, workdir, progress=False, concurrency=1)
    fired: dict = {}

    def interrupt():
        fired["at"] = time.perf_counter()
        _thread.interrupt_main()

    timer = threading.Timer(3.0, interrupt)  # the (already running) server is generating by then
    timer.start()
    try:
        runner.run([req("Write a long story about a court case.", 4000)], mode="online")
    except KeyboardInterrupt:
        return time.perf_counter() - fired["at"]
    finally:
        timer.cancel()
    raise SystemExit("the long request ended before the interrupt: nothing measured")


def main(n: int = 8) -> None:
    problem = installed()
    if problem:
        raise SystemExit(problem)
    schema = {"name": "facts", "schema": {"type": "object", "required": ["court", "parties"],
              "properties": {"court": {"type": "string", "maxLength": 60},
                             "parties": {"type": "array", "maxItems": 4,
                                         "items": {"type": "string", "maxLength": 40}}}}}
    with LocalServer() as provider, tempfile.TemporaryDirectory() as tmp:
        t0 = time.perf_counter()
        provider.start()
        startup = time.perf_counter() - t0
        timed(provider, req("warm up", 1))
        prompt_rates, gen_rates, grammar_rates = [], [], []
        for i in range(n):
            text = f"Case {i}. " + FILLER * 30 + "Summarise the case in a paragraph."
            t, resp = timed(provider, req(text, 1))
            prompt_rates.append(resp.input_tokens / t)
            t, resp = timed(provider, req(text, 128))  # the prompt is now cached: this is generation
            gen_rates.append(resp.output_tokens / t)
            if i < max(2, n // 4):  # grammar-constrained sampling is slow: fewer samples
                t, resp = timed(provider, req(text + " Answer as JSON.", 96, schema))
                grammar_rates.append(resp.output_tokens / t)
        prompt_tokens = resp.input_tokens

        direct, through = [], []
        runner = StageRunner("bench_local", provider, Path(tmp), progress=False, concurrency=1)
        client = provider.client
        for i in range(n):
            body = provider.body(req(f"Name a court. ({i}, direct)", 8))
            t0 = time.perf_counter()
            client.chat.completions.create(**body)
            direct.append(time.perf_counter() - t0)
            r = req(f"Name a court. ({i}, runner)", 8)
            t0 = time.perf_counter()
            report = runner.run([r], mode="online")
            through.append(time.perf_counter() - t0)
            assert report.sent == 1 and not report.failed
        batch = [req(f"Name a court. ({i}, batch)", 8) for i in range(n)]
        t0 = time.perf_counter()
        runner.run(batch, mode="online")
        in_one_run = (time.perf_counter() - t0) / n
        interrupt = interrupt_latency(provider, Path(tmp))

    med = statistics.median
    print(f"model {MODEL} (llama.cpp, {provider.n_threads} threads, {os.cpu_count()} cores); "
          f"load average {os.getloadavg()[0]:.2f}; {n} samples each, medians")
    print(f"startup (start() to first answer)  : {startup:.1f} s")
    print(f"prompt processing                  : {med(prompt_rates):.0f} tokens/s ({prompt_tokens} prompt tokens)")
    print(f"generation, free text              : {med(gen_rates):.1f} tokens/s")
    print(f"generation, JSON-schema grammar    : {med(grammar_rates):.1f} tokens/s ({len(grammar_rates)} samples)")
    print(f"direct openai SDK call             : {med(direct) * 1e3:.0f} ms/request (8-token answers)")
    print(f"through StageRunner (1 per run)    : {med(through) * 1e3:.0f} ms/request; overhead "
          f"{(med(through) - med(direct)) * 1e3:+.0f} ms ({med(through) / med(direct):.2f}x direct)")
    print(f"through StageRunner ({n} in one run) : {in_one_run * 1e3:.0f} ms/request; overhead "
          f"{(in_one_run - med(direct)) * 1e3:+.0f} ms ({in_one_run / med(direct):.2f}x direct)")
    print(f"Ctrl-C to return, generation in flight: {interrupt:.1f} s")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 8)
