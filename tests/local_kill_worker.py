"""Subprocess of the local-model kill tests.

    python local_kill_worker.py kill WORKDIR      # start the server, then be killed while it generates
    python local_kill_worker.py run WORKDIR N     # answer N requests one at a time (killed part way, resumed)

``kill``: one request through StageRunner (so the server is started lazily from one of the runner's worker
threads, which have ended by the time it is killed), the server's PID written to WORKDIR/server.pid, then a
long request, during which the test kills this process. A KeyboardInterrupt prints INTERRUPTED and exits 130.

SIGINT is given its default Python handler (KeyboardInterrupt) first, as in a terminal: a process started as
a background job of a non-interactive shell (``cmd &`` in a CI script) inherits SIGINT *ignored*, and Python
then installs no handler, so without this line Ctrl-C (SIGINT) would do nothing at all here."""

import signal
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


def resume_requests(n: int) -> list[Request]:
    """Sampled answers (temperature 1.0, the seed decides every token), one per request."""
    return [Request(stage="localresume", model="SmolLM2-135M-Instruct", case_id=f"case{i}",
                    messages=[{"role": "user", "content": f"Name a kind of lawsuit and say why it is filed. ({i})"}],
                    params={"max_tokens": 16, "temperature": 1.0}) for i in range(n)]


def kill_mode(workdir: Path) -> None:
    provider = get_provider("local")
    runner = StageRunner("localkill", provider, workdir, progress=False, concurrency=2)
    report = runner.run([request(0, 4)], mode="online")
    assert not report.failed, report.responses
    (workdir / "server.pid").write_text(str(provider.process.pid))
    try:
        runner.run([request(1, 4000)], mode="online")  # killed while this runs
        time.sleep(600)
    except KeyboardInterrupt:
        print("INTERRUPTED", flush=True)
        sys.exit(130)


def run_mode(workdir: Path, n: int) -> None:
    with get_provider("local") as provider:
        StageRunner("localresume", provider, workdir, progress=False, concurrency=1).run(resume_requests(n),
                                                                                        mode="online")


if __name__ == "__main__":
    signal.signal(signal.SIGINT, signal.default_int_handler)  # what a terminal's Ctrl-C meets (see above)
    if sys.argv[1] == "kill":
        kill_mode(Path(sys.argv[2]))
    else:
        run_mode(Path(sys.argv[2]), int(sys.argv[3]))
