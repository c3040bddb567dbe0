"""Stage-runner overhead per request, against the raw round trip to a local fake OpenAI server, in one run.

    .venv/bin/python benchmarks/runner_overhead.py [N]

raw      : the OpenAI SDK calling the fake server directly (no runner)
miss     : the runner in online mode with an empty cache (SDK call + cache write + bookkeeping)
hit      : the runner again on the same requests (everything from the cache, nothing sent)
"""

from __future__ import annotations

import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

from fakes.openai_fake import FakeOpenAI  # noqa: E402

from gavel.llm import Request  # noqa: E402
from gavel.llm.providers import get_provider  # noqa: E402
from gavel.llm.runner import StageRunner  # noqa: E402


def main(n: int = 200) -> None:
    requests = [Request(stage="bench", model="gpt-4.1-2025-04-14", case_id=str(i),
                        messages=[{"role": "user", "content": f"question {i} id=q{i}"}]) for i in range(n)]
    with FakeOpenAI() as srv, tempfile.TemporaryDirectory() as tmp:
        provider = get_provider("openai", base_url=srv.url + "/v1", api_key="sk-bench-000000000")
        bodies = [provider.body(r) for r in requests]
        provider.client.chat.completions.create(**bodies[0])  # warm up the connection
        t0 = time.perf_counter()
        for body in bodies:
            provider.client.chat.completions.create(**body)
        raw = (time.perf_counter() - t0) / n
        runner = StageRunner("bench", provider, Path(tmp), progress=False, concurrency=1)
        t0 = time.perf_counter()
        report = runner.run(requests, mode="online")
        miss = (time.perf_counter() - t0) / n
        assert report.sent == n and not report.failed
        t0 = time.perf_counter()
        report = runner.run(requests, mode="online")
        hit = (time.perf_counter() - t0) / n
        assert report.sent == 0 and report.cached == n
    print(f"requests: {n}")
    print(f"raw fake-server round trip : {raw * 1e3:.2f} ms/request")
    print(f"runner, cache miss         : {miss * 1e3:.2f} ms/request (overhead {(miss - raw) * 1e3:+.2f} ms, "
          f"{miss / raw:.2f}x raw)")
    print(f"runner, cache hit          : {hit * 1e3:.2f} ms/request ({hit / raw:.2f}x raw)")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 200)
