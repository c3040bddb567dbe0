"""Subprocess of the local-model kill test: a runner that starts the llama.cpp server and is then killed.
Usage: python local_kill_worker.py WORKDIR

It runs one request through StageRunner (so the server is started lazily from one of the runner's worker
threads, which have ended by the time it is killed), writes the server's PID to WORKDIR/server.pid, then
sends a long request and waits to be killed while the server is generating."""

import sys
import time
from pathlib import Path

from gavel.llm import Request
from gavel.llm.providers import get_provider
from gavel.llm.runner import StageRunner


def request(n: int, max_tokens: int) -> Request:
    return Request(stage="localkill", model="SmolLM2-135M-Instruct", case_id=f"case{n}",
                   messages=[{"role": "user", "content": f"Write a long story about a court case, number {n}."}],
                   params={"max_tokens": max_tokens, "temperature": 0.0})


if __name__ == "__main__":
    workdir = Path(sys.argv[1])
    provider = get_provider("local")
    runner = StageRunner("localkill", provider, workdir, progress=False, concurrency=2)
    report = runner.run([request(0, 4)], mode="online")
    assert not report.failed, report.responses
    (workdir / "server.pid").write_text(str(provider.process.pid))
    runner.run([request(1, 4000)], mode="online")  # killed while this runs
    time.sleep(600)
