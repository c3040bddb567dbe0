"""The real local model: llama.cpp's server with the packaged SmolLM2-135M-Instruct, started by these tests on
127.0.0.1 and stopped afterwards. Nothing is downloaded. Without llama-cpp-python (the `local` extra, `make
install-local`) the tests are skipped with the reason printed; in CI (CI=true) that is an error instead."""

from __future__ import annotations

import json
import os
import re
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import pytest
from needs import unavailable

from gavel.llm import Request
from gavel.llm.providers.local import LocalServer, installed
from gavel.llm.providers.mock import MockProvider
from gavel.llm.runner import StageRunner
from gavel.runs import demo

SCORE = r"(\d+\.\d|missing: .+)"  # a score as a demo's repeat line prints it, or why it is missing

MODEL = "SmolLM2-135M-Instruct"
SMALL_SCHEMA = {
    "name": "case_facts",
    "schema": {
        "type": "object",
        "properties": {
            "court": {"type": "string", "maxLength": 60},
            "filing_year": {"type": "integer"},
            "plaintiffs": {"type": "array", "items": {"type": "string", "maxLength": 40}, "minItems": 1,
                           "maxItems": 2},
        },
        "required": ["court", "filing_year", "plaintiffs"],
        "additionalProperties": False,
    },
}


def alive(pid: int) -> bool:
    """True while the process exists and is not a zombie."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError):
        return False
    return state not in ("Z", "X")


def wait_until_gone(pid: int, limit: float = 60.0) -> bool:
    deadline = time.monotonic() + limit
    while time.monotonic() < deadline:
        if not alive(pid):
            return True
        time.sleep(0.1)
    return not alive(pid)


def listening_addresses(pid: int) -> list[tuple[str, int]]:
    """(address, port) of every TCP socket the process listens on, from /proc."""
    inodes = set()
    for fd in Path(f"/proc/{pid}/fd").iterdir():
        try:
            target = os.readlink(fd)
        except OSError:
            continue
        if target.startswith("socket:["):
            inodes.add(target[8:-1])
    out = []
    for table, family in (("/proc/net/tcp", socket.AF_INET), ("/proc/net/tcp6", socket.AF_INET6)):
        if not Path(table).exists():
            continue
        for line in Path(table).read_text().splitlines()[1:]:
            fields = line.split()
            local, state, inode = fields[1], fields[3], fields[9]
            if state != "0A" or inode not in inodes:  # 0A: LISTEN
                continue
            addr_hex, port_hex = local.split(":")
            raw = bytes.fromhex(addr_hex)
            raw = b"".join(raw[i:i + 4][::-1] for i in range(0, len(raw), 4))  # kernel words are little-endian
            out.append((socket.inet_ntop(family, raw), int(port_hex, 16)))
    return out


def server_children() -> set[int]:
    """PIDs of llama.cpp servers whose parent is this test process."""
    pids = set()
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            cmd = (proc / "cmdline").read_bytes().split(b"\0")
            ppid = int((proc / "stat").read_text().rsplit(")", 1)[1].split()[1])
        except (OSError, IndexError, ValueError):
            continue
        if ppid == os.getpid() and b"llama_cpp.server" in cmd and alive(int(proc.name)):
            pids.add(int(proc.name))
    return pids


@pytest.fixture(scope="module")
def local_server():
    problem = installed()
    if problem:
        unavailable(f"the local model is not installed: {problem}")
    server = LocalServer().start()
    pid = server.process.pid
    yield server
    server.stop()
    assert wait_until_gone(pid), f"llama.cpp server {pid} still running after stop()"


def ask(model_text: str, **params) -> Request:
    return Request(stage="localtest", model=MODEL, case_id="t", params={"temperature": 0.0, **params},
                   messages=[{"role": "user", "content": model_text}])


def test_the_server_takes_half_the_cpus_it_may_use(monkeypatch):
    """Not every CPU: llama.cpp's threads wait for each other, so a busy neighbour would stall them all."""
    from gavel.llm.providers import local

    for cpus, threads in ((1, 1), (2, 1), (3, 1), (8, 4)):
        monkeypatch.setattr(local.os, "sched_getaffinity", lambda _pid, n=cpus: set(range(n)))
        assert local.default_threads() == threads
        cmd = local.LocalServer().command(1234)
        assert cmd[cmd.index("--n_threads") + 1] == cmd[cmd.index("--n_threads_batch") + 1] == str(threads)
    assert local.LocalServer(n_threads=3).command(1234)[-1] == "3"


def test_schema_constrained_answer_parses(local_server, tmp_path):
    import jsonschema

    req = ask("The Tenants Union sued the City of Lakemont in the District Court of Ohio in 2014. "
              "Give the court, the filing year and the plaintiffs as JSON.", max_tokens=400)
    req.schema = SMALL_SCHEMA
    body = local_server.body(req)
    assert body["response_format"] == {"type": "json_object", "schema": SMALL_SCHEMA["schema"]}
    report = StageRunner("localtest", local_server, tmp_path, progress=False).run([req], mode="online")
    resp = report.responses[req.custom_id]
    assert resp.ok and resp.provider == "local", resp.error
    assert resp.finish_reason == "stop" and not resp.truncated
    record = json.loads(resp.text, strict=False)  # raw newlines may sit in strings (see demo.extract_rows)
    jsonschema.validate(record, SMALL_SCHEMA["schema"])  # the grammar kept the answer inside the schema
    assert set(record) == {"court", "filing_year", "plaintiffs"}


def test_free_text_answer_comes_with_token_usage(local_server, tmp_path):
    req = ask("In one sentence: what is a class action?", max_tokens=120)
    report = StageRunner("localtest", local_server, tmp_path, progress=False).run([req], mode="online")
    resp = report.responses[req.custom_id]
    assert resp.ok, resp.error
    assert resp.text and resp.text.strip()
    assert resp.input_tokens > 5 and 0 < resp.output_tokens <= 120
    assert resp.finish_reason in ("stop", "length")
    cached = StageRunner("localtest", local_server, tmp_path, progress=False).cached(req)
    assert (cached.input_tokens, cached.output_tokens, cached.text) == (resp.input_tokens, resp.output_tokens,
                                                                        resp.text)


def test_answer_cut_by_max_tokens_is_truncated_and_not_parsed(local_server, tmp_path):
    req = ask("List the parties of a long civil rights case as JSON.", max_tokens=6)
    req.schema = SMALL_SCHEMA
    runner = StageRunner("localtest", local_server, tmp_path, progress=False)
    resp = runner.run([req], mode="online").responses[req.custom_id]
    assert resp.ok and resp.finish_reason == "length" and resp.truncated
    assert resp.output_tokens == 6
    with pytest.raises(json.JSONDecodeError):  # what came back really is cut JSON
        json.loads(resp.text, strict=False)
    assert runner.cached(req).truncated  # the cache keeps the mark
    outcome = demo.parse_response(req, resp, demo.extract_rows)
    assert outcome["status"] == "truncated" and outcome["rows"] == []


def test_server_binds_loopback_only(local_server):
    pid, port = local_server.process.pid, int(local_server.base_url.rsplit(":", 1)[1].split("/")[0])
    addresses = listening_addresses(pid)
    assert addresses, f"server {pid} listens on nothing"
    assert addresses == [("127.0.0.1", port)], addresses
    assert os.getpgid(pid) == pid  # leads its own process group, so stop() reaches everything it starts


def cpu_seconds(pid: int) -> float:
    """User + system CPU time the process has used so far, from /proc."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def worker_cmd(*args: str) -> list[str]:
    return [sys.executable, str(Path(__file__).with_name("local_kill_worker.py")), *args]


ROOT = Path(__file__).resolve().parent.parent
WORKER_ENV = {**os.environ, "PYTHONPATH": str(ROOT)}


@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGTERM, signal.SIGINT], ids=lambda s: s.name)
def test_killed_runner_leaves_no_server(local_server, tmp_path, sig):
    """The runner process starts the server (from a worker thread that has ended since), is killed while the
    server generates, and the server must be gone by PID. SIGINT is Ctrl-C: the runner itself stops the server
    (it is gone by the time the runner has exited) and the KeyboardInterrupt reaches the caller, whatever was
    in flight. The worker gives SIGINT Python's default handler, as a terminal would: under `cmd &` in a
    non-interactive shell (CI) the test process, and so the worker, inherit SIGINT ignored."""
    # TMPDIR: a worker killed with SIGKILL cannot remove its server's log; it goes with tmp_path
    proc = subprocess.Popen(worker_cmd("kill", str(tmp_path)), cwd=ROOT, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, env={**WORKER_ENV, "TMPDIR": str(tmp_path)})
    pid_file = tmp_path / "server.pid"
    try:
        deadline = time.monotonic() + 300  # guards against a hung worker only
        while not pid_file.exists() and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.1)
        assert pid_file.exists(), f"worker never started a server: {proc.communicate()[0].decode()[-2000:]}"
        server_pid = int(pid_file.read_text())
        # kill on an event, not after a guessed delay: the server has spent CPU on the long request
        start = cpu_seconds(server_pid)
        while alive(server_pid) and cpu_seconds(server_pid) < start + 0.5 and time.monotonic() < deadline:
            time.sleep(0.05)
        assert alive(server_pid), "the server died with the worker thread that started it"
        assert proc.poll() is None, proc.communicate()[0].decode()[-2000:]
        proc.send_signal(sig)
        output = proc.communicate(timeout=120)[0].decode()  # a guard: Ctrl-C takes seconds
        if sig == signal.SIGINT:
            assert proc.returncode == 130 and "INTERRUPTED" in output, (proc.returncode, output[-2000:])
            assert not alive(server_pid), "Ctrl-C: the runner returned while its server still ran"
        else:
            assert proc.returncode == -sig, (proc.returncode, output[-2000:])
        assert wait_until_gone(server_pid), f"llama.cpp server {server_pid} outlived its runner ({sig.name})"
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def test_killed_and_resumed_run_answers_like_an_uninterrupted_one(local_server, tmp_path):
    """16 sampled requests (temperature 1.0): a run killed (SIGKILL) after 6 answers and resumed with another
    server gives the same 16 answers, answer for answer, as an uninterrupted run -- each answer depends on its
    request alone (a seed derived from it), not on what the server answered before it. The uninterrupted run
    goes through the module's server, which has answered other tests' requests before."""
    from local_kill_worker import resume_requests

    n, kill_after = 16, 6
    requests = resume_requests(n)
    assert len({local_server.body(r)["seed"] for r in requests}) == n  # one seed per request
    assert local_server.body(requests[0]) == local_server.body(resume_requests(n)[0])  # fixed, not drawn
    clean = StageRunner("localresume", local_server, tmp_path / "clean", progress=False, concurrency=1)
    expected = {cid: r.text for cid, r in clean.run(requests, mode="online").responses.items()}
    assert len(expected) == n and all(expected.values())
    assert len(set(expected.values())) > n // 2  # sampled, varied answers: a seed that did nothing would show

    workdir = tmp_path / "killed"
    proc = subprocess.Popen(worker_cmd("run", str(workdir), str(n)), cwd=ROOT, env={**WORKER_ENV, "TMPDIR": str(tmp_path)},
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + 600  # guards against a hung worker only
        while (proc.poll() is None and time.monotonic() < deadline
               and len(list((workdir / "cache").rglob("*.json"))) < kill_after):
            time.sleep(0.02)
        assert proc.poll() is None, f"the worker ended before it was killed: {proc.communicate()[0].decode()[-2000:]}"
        proc.send_signal(signal.SIGKILL)
        proc.wait()
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    answered = len(list((workdir / "cache").rglob("*.json")))
    assert kill_after <= answered < n

    with LocalServer() as fresh:  # a server that has answered nothing yet
        resumed = StageRunner("localresume", fresh, workdir, progress=False, concurrency=1).run(requests,
                                                                                            mode="online")
    assert resumed.cached == answered and resumed.sent == n - answered and not resumed.failed
    got = {cid: r.text for cid, r in resumed.responses.items()}
    differ = [cid for cid in expected if got[cid] != expected[cid]]
    assert not differ, f"{len(differ)} of {n} answers differ from the uninterrupted run, e.g. " \
                       f"{got[differ[0]]!r} != {expected[differ[0]]!r}"


def test_mock_then_local_run_sends_to_the_local_model(local_server, tmp_path):
    """Same requests, same workdir: the mock's cached answers must not be served as the local model's."""
    requests = [ask(f"Name one U.S. federal court. ({i})", max_tokens=24) for i in range(2)]
    mock = StageRunner("localtest", MockProvider(), tmp_path, progress=False).run(requests, mode="online")
    assert mock.sent == 2
    local = StageRunner("localtest", local_server, tmp_path, progress=False).run(requests, mode="online")
    assert local.sent == 2 and local.cached == 0
    assert {r.provider for r in local.responses.values()} == {"local"}


def test_demo_runs_then_answers_from_the_cache(local_server, tmp_path):
    before = server_children()
    lines: list[str] = []
    first = demo.run(workdir=tmp_path, show=lines.append)  # its own server, stopped at the end
    assert server_children() == before, "the demo left its server running"
    assert "llama.cpp server stopped" in lines[-1]
    sent = int(lines[-1].split("demo: ")[1].split(" request")[0])
    assert sent > 2 and ", 0 answered from the cache" in lines[-1]  # 2 demo requests + the GAVEL-REF run
    # two repeats of the GAVEL-REF run (the demo's stability table): 2 extract requests each
    assert first["gavel_ref"]["manifest"]["sent"]["extract"] == 4 and len(first["gavel_ref"]["scores"]) == 1
    assert any(line.startswith("== stability over 2 repeats") for line in lines)
    assert len(first["gavel_ref"]["repeats"]["stability"]) > 0
    # every score a number on every repeat (the bounded schemas: before them both extraction answers were
    # cut at the cap and S_checklist, S_residual and S_GAVEL-REF were NaN)
    for run in first["gavel_ref"]["repeats"]["runs"]:
        row = run["scores"].iloc[0]
        assert all(pd.notna(row[c]) for c in ("s_checklist", "s_residual", "s_style", "s_gavel_ref")), \
            (row.to_dict(), run["answers"][["stage", "subject", "status", "detail"]].to_string())
    assert sum(line.startswith("repeat ") and "missing" not in line for line in lines) == 2
    # issue 28: the expected duration is said before the first answer, and each repeat ends with its
    # S_checklist and S_GAVEL-REF or exactly why one is missing (this demo run checks both; one run is minutes)
    said = [i for i, line in enumerate(lines) if "expected" in line]
    first_answer = next(i for i, line in enumerate(lines) if line.startswith("-- "))
    assert said and said[0] < first_answer, lines
    assert any(line.startswith("local model: ") and "expected duration" in line for line in lines)
    finals = [line for line in lines if line.startswith("repeat ")]
    assert len(finals) == 2, lines
    for line in finals:
        assert re.fullmatch(rf"repeat \d: S_checklist {SCORE}; S_GAVEL-REF {SCORE}", line), line
    answer = next(iter(first["demo_answer"]["outcomes"].values()))
    assert answer["status"] == "parsed" and answer["rows"][0]["answer"]
    extract = next(iter(first["demo_extract"]["outcomes"].values()))
    assert extract["status"] == "parsed", extract["problem"]  # schema-constrained JSON, validated
    assert any(row.get("party") == "plaintiff" for row in extract["rows"])
    assert demo.failures(first) == []
    assert first["cost"]["usd"].sum() == 0 and first["cost"]["requests"].sum() > 2  # the (zero) ledger
    assert any(line.startswith("cost: $0.0000 for ") for line in lines)
    lines.clear()
    second = demo.run(workdir=tmp_path, show=lines.append)
    assert lines[-1].startswith("demo: 0 request(s) sent to the model")
    assert second["demo_extract"]["outcomes"] == first["demo_extract"]["outcomes"]
    lines.clear()
    assert demo.main(workdir=tmp_path, show=lines.append) == 0  # what `make demo` runs, from the cache
    assert lines[-1].startswith("demo: 0 request(s) sent to the model")


def test_release_summary_through_the_local_model(local_server, shared_rel, tmp_path):
    """Real data no one here wrote: a released human summary, asked for its facts under a schema."""
    import jsonschema

    human = shared_rel.summaries[shared_rel.summaries["model"] == "human"].sort_values("case_id").iloc[0]
    req = Request(stage="localtest", model=MODEL, case_id=str(human["case_id"]), schema=SMALL_SCHEMA,
                  params={"temperature": 0.0, "max_tokens": 400},
                  messages=[{"role": "system", "content": "Fill in the JSON record from the case summary."},
                            {"role": "user", "content": human["text"]}])
    resp = StageRunner("localtest", local_server, tmp_path, progress=False).run([req], mode="online").responses[
        req.custom_id]
    assert resp.ok and not resp.truncated, (resp.error, resp.finish_reason)
    assert resp.input_tokens > len(human["text"].split()) // 2  # the whole summary reached the model
    jsonschema.validate(json.loads(resp.text, strict=False), SMALL_SCHEMA["schema"])
