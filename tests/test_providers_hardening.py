"""Provider hardening (issue 8): exact Anthropic adoption, retries/timeouts/one client for every provider,
damaged result lines, vLLM run-batch process death, and API keys kept out of everything written, printed or
returned. Everything runs against the fake servers in tests/fakes through the real SDKs."""

import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from fakes import SilentServer
from fakes.anthropic_fake import FakeAnthropic
from fakes.gemini_fake import FakeGemini
from fakes.openai_fake import FakeOpenAI

from gavel.llm import Request
from gavel.llm.providers import get_provider
from gavel.llm.providers.base import Provider
from gavel.llm.records import Response, write_requests
from gavel.llm.runner import StageRunner

KEY = "sk-hardening-planted-key-7373737373"
MODELS = {"openai": "gpt-4.1-2025-04-14", "anthropic": "claude-sonnet-4-20250514-thinking", "gemini": "gemini-2.5-pro",
          "vllm": "Qwen3-32B"}
FAKES = {"openai": FakeOpenAI, "anthropic": FakeAnthropic, "gemini": FakeGemini}
REPO = Path(__file__).resolve().parent.parent
RUN_BATCH_FAKE = Path(__file__).parent / "fakes" / "vllm_run_batch.py"


def reqs(provider, n=4, stage="judge"):
    """Requests whose last message carries an ``id=`` tag (the fakes' online answers name it)."""
    return [Request(stage=stage, model=MODELS[provider], case_id=f"c{i}", item="filing_date",
                    messages=[{"role": "system", "content": "Be terse."},
                              {"role": "user", "content": f"{stage} case {i} id={stage}{i}"}]) for i in range(n)]


def make(provider, url, **kw):
    return get_provider(provider, base_url=url + ("/v1" if provider in ("openai", "vllm") else ""), api_key=KEY, **kw)


def runner(p, tmp_path, name="run", **kw):
    return StageRunner("judge", p, tmp_path / name, poll_interval=0.01, progress=False, **kw)


def no_key_in(folder: Path) -> list[Path]:
    """Files holding the key or a prefix of it (tables cut long cells)."""
    return [p for p in Path(folder).rglob("*") if p.is_file() and KEY[:12] in p.read_text(errors="ignore")]


# ---------------- 3. Anthropic adoption after a crash ----------------

def test_anthropic_adopts_its_own_batch_when_another_was_created_meanwhile(tmp_path):
    """Crash between the intent and the recorded batch id, while another stage on the same account created a
    batch of the same size: the runner adopts the batch holding the intent's custom_ids; nothing is resent."""
    ours, other = reqs("anthropic", 4), reqs("anthropic", 4, stage="otherstage")
    with FakeAnthropic() as srv:
        p = make("anthropic", srv.url)
        created = time.time()
        tag = "gavel-judge-crashed0000"
        bid = p.submit(ours, tag)  # reached the provider; then the runner died before recording bid
        foreign = p.submit(other, "another-stage")  # someone else's batch, created meanwhile
        run = runner(p, tmp_path)
        run.save_state({"stage": "judge", "provider": "anthropic", "failed": {},
                        "attempts": {r.custom_id: 1 for r in ours},
                        "submissions": {tag: {"status": "intent", "created": created, "batch_id": None,
                                              "custom_ids": [r.custom_id for r in ours]}}})
        report = run.run(ours)
        assert not report.failed and report.batches == [bid] and foreign not in report.batches
        assert all(report.responses[r.custom_id].text == f"answer:{r.custom_id}" for r in ours)
        assert all(srv.submissions[r.custom_id] == 1 for r in ours)  # zero duplicate submissions


def test_anthropic_adoption_of_a_running_batch_by_its_size(tmp_path):
    """Both batches still running: ours is the only one as large as the intent; an ambiguous pair is an error
    that resends nothing."""
    ours, other = reqs("anthropic", 3), reqs("anthropic", 5, stage="otherstage")
    with FakeAnthropic() as srv:
        srv.polls_to_end = 1000  # neither ends while adoption looks at them
        p = make("anthropic", srv.url)
        created = time.time()
        bid = p.submit(ours, "t")
        p.submit(other, "x")
        assert p.find_submitted("t", created, set(), custom_ids=[r.custom_id for r in ours]) == bid
        p.submit(reqs("anthropic", 3, stage="third"), "y")  # now two running batches of our size
        with pytest.raises(Exception, match="still running"):
            p.find_submitted("t", created, set(), custom_ids=[r.custom_id for r in ours])


# ---------------- 4. retries, timeouts, one client ----------------

ROUTES = {"openai": (r"^/v1/batches$", r"^/v1/batches/batch_", r"/chat/completions$"),
          "anthropic": (r"^/v1/messages/batches$", r"^/v1/messages/batches/msgbatch_\d+$", r"^/v1/messages$"),
          "gemini": (r":batchGenerateContent$", r"/batches/fake\d+$", r":generateContent$")}


@pytest.mark.parametrize("provider", ["openai", "anthropic", "gemini"])
def test_transient_http_errors_on_create_poll_and_online_are_retried(provider, tmp_path):
    create, poll, online = ROUTES[provider]
    rq = reqs(provider, 3)
    with FAKES[provider]() as srv:
        srv.http_errors = [("POST", create, 429), ("GET", poll, 503), ("POST", online, 429), ("POST", online, 503)]
        p = make(provider, srv.url)
        report = runner(p, tmp_path).run(rq)
        assert not report.failed and all(r.ok for r in report.responses.values())
        online_report = runner(p, tmp_path, name="online").run(reqs(provider, 2, stage="onl"), mode="online")
        assert not online_report.failed
        assert srv.http_errors == []  # every injected error was met, and retried past
        assert all(n == 1 for n in srv.submissions.values())


@pytest.mark.parametrize("provider", ["openai", "anthropic", "gemini", "vllm"])
def test_a_silent_server_fails_within_the_timeout(provider):
    """A server that accepts the connection and never answers: the call ends with a timeout error (not a hang).
    The bound of the wait below is only a guard against hanging the test suite, far above the timeout."""
    with SilentServer() as srv:
        p = make(provider, srv.url, timeout=0.5, max_retries=1)
        box = {}
        t = threading.Thread(target=lambda: box.setdefault("resp", p.complete(reqs(provider, 1)[0])), daemon=True)
        t.start()
        t.join(120)
        assert not t.is_alive(), "the call to a silent server never returned"
        resp = box["resp"]
        assert resp.status == "errored" and "time" in resp.error.lower(), resp.error
        if provider != "vllm":
            with pytest.raises(Exception, match="(?i)time"):
                p.poll("batch_x" if provider != "gemini" else "batches/x")


@pytest.mark.parametrize("provider", ["openai", "anthropic", "gemini"])
def test_online_mode_with_8_threads_uses_one_client(provider, tmp_path):
    rq = reqs(provider, 40)
    with FAKES[provider]() as srv:
        srv.latency = 0.02
        p = make(provider, srv.url)
        built = []
        original = p.make_client

        def counting():
            built.append(1)
            time.sleep(0.2)  # a slow construction widens any race between the threads
            return original()

        p.make_client = counting
        report = runner(p, tmp_path, concurrency=8).run(rq, mode="online")
        assert report.failed == [] and len(built) == 1
        online = ROUTES[provider][2]
        import re
        assert sum(1 for m, path in srv.requests_seen if m == "POST" and re.search(online, path)) == 40


@pytest.mark.parametrize("provider", ["openai", "anthropic", "gemini"])
def test_online_failures_are_retried_and_only_successes_cached(provider, tmp_path):
    rq = reqs(provider, 3)
    with FAKES[provider]() as srv:
        srv.fail_ids = {"judge0": 1, "judge1": 99}  # the fakes' online answers are keyed by the id= tag
        p = make(provider, srv.url, max_retries=0)
        run = runner(p, tmp_path, max_attempts=3)
        report = run.run(rq, mode="online")
        assert report.failed == [rq[1].custom_id]
        assert report.responses[rq[0].custom_id].ok and run.key(rq[0]) in run.cache
        bad = report.responses[rq[1].custom_id]
        assert bad.status == "errored" and "judge1" in bad.error and run.key(rq[1]) not in run.cache
        assert run.load_state()["failed"] == {run.key(rq[1]): bad.error}
        assert srv.submissions == {"judge0": 2, "judge1": 3, "judge2": 1}


# ---------------- 5. one bad line ----------------

@pytest.mark.parametrize("provider", ["openai", "anthropic"])
def test_a_damaged_result_line_costs_only_its_request(provider, tmp_path):
    rq = reqs(provider, 5)
    with FAKES[provider]() as srv:
        srv.damage_ids = {rq[0].custom_id: "truncate", rq[1].custom_id: "garbage"}
        p = make(provider, srv.url)
        bid = p.submit(rq, "t")
        while not p.poll(bid).ended:
            pass
        got = {r.custom_id: r for r in p.fetch(bid, [r.custom_id for r in rq])}
        assert got[rq[0].custom_id].status == "errored" and "line" in got[rq[0].custom_id].error
        assert bid in got[rq[0].custom_id].error or "file-" in got[rq[0].custom_id].error  # names where
        assert got[rq[1].custom_id].status == "errored" and "unreadable" in got[rq[1].custom_id].error
        assert all(got[r.custom_id].text == f"answer:{r.custom_id}" for r in rq[2:])
    # through the runner: the good answers are cached, the two damaged ones are sent again and succeed
    with FAKES[provider]() as srv:
        srv.damage_ids = {rq[0].custom_id: "truncate", rq[1].custom_id: "garbage"}
        report = runner(make(provider, srv.url), tmp_path).run(rq)
        assert not report.failed and srv.duplicate_after_success == 0
        assert [srv.submissions[r.custom_id] for r in rq] == [2, 2, 1, 1, 1]


def test_gemini_inlined_response_without_key_costs_only_its_request(tmp_path):
    rq = reqs("gemini", 4)
    with FakeGemini() as srv:
        srv.damage_ids = {rq[2].custom_id: "garbage"}
        report = runner(make("gemini", srv.url), tmp_path).run(rq)
        assert not report.failed and srv.submissions[rq[2].custom_id] == 2 and srv.submissions[rq[0].custom_id] == 1


# ---------------- 6. vLLM run-batch process death ----------------

def vllm_requests(n=3):
    return [Request(stage="summaries", model="Qwen3-14B", case_id=str(i), messages=[{"role": "user", "content": f"q{i}"}])
            for i in range(n)]


def test_vllm_run_batch_process_death_ends_the_batch_with_a_clear_error(tmp_path):
    p = get_provider("vllm-batch", folder=tmp_path / "b", command=f"{sys.executable} {RUN_BATCH_FAKE} --die")
    rq = vllm_requests()
    # the timeout only bounds the test on code that waits forever; the process dies at once
    run = StageRunner("s", p, tmp_path / "run", poll_interval=0.05, progress=False, max_attempts=2)
    report = run.run(rq, timeout=60)
    assert sorted(report.failed) == sorted(r.custom_id for r in rq)
    err = report.responses[rq[0].custom_id].error
    assert "died without an exit code" in err and "pid" in err
    state = json.loads((tmp_path / "run" / "state.json").read_text())
    assert all(state["attempts"][run.key(r)] == 2 for r in rq)  # retryable: sent again, died again


def test_vllm_run_batch_empty_rc_while_running_is_not_an_end(tmp_path):
    flag = tmp_path / "go"
    p = get_provider("vllm-batch", folder=tmp_path / "b", command=f"{sys.executable} {RUN_BATCH_FAKE} --hold {flag}")
    rq = vllm_requests()
    bid = p.submit(rq, "tag1")
    deadline = time.monotonic() + 60
    while not (tmp_path / "b" / "tag1.pid").exists() and time.monotonic() < deadline:
        time.sleep(0.02)
    assert not p.poll(bid).ended
    (tmp_path / "b" / "tag1.rc").write_text("")  # what an interrupted non-atomic writer leaves
    assert not p.poll(bid).ended
    # a restarted runner (a new provider object, no child process handle) sees it running by its pid
    p2 = get_provider("vllm-batch", folder=tmp_path / "b", command="unused")
    assert p2.find_submitted("tag1", 0, set()) == "tag1" and not p2.poll(bid).ended
    flag.touch()
    while not p.poll(bid).ended and time.monotonic() < deadline:
        time.sleep(0.05)
    got = p.fetch(bid, [r.custom_id for r in rq])
    assert all(r.ok and r.text == f"answer:{r.custom_id}" for r in got)
    assert (tmp_path / "b" / "tag1.rc").read_text().strip() == "0"
    assert not list((tmp_path / "b").glob("*.tmp"))


# ---------------- 8. keys never written, printed or returned ----------------

@pytest.mark.parametrize("provider", ["openai", "anthropic", "gemini"])
@pytest.mark.parametrize("mode", ["batch", "online"])
def test_a_key_the_api_echoes_is_in_no_file_and_no_response(provider, mode, tmp_path):
    """The fake quotes the caller's key in every answer and error; the key was given as an argument only."""
    rq = reqs(provider, 3)
    with FAKES[provider]() as srv:
        srv.echo_key = True
        srv.fail_ids = {rq[0].custom_id: 99, "judge0": 99}
        report = runner(make(provider, srv.url, max_retries=0), tmp_path, max_attempts=1).run(rq, mode=mode)
        assert srv.current_key == KEY
    assert report.failed == [rq[0].custom_id]
    texts = [json.dumps(r.to_dict()) for r in report.responses.values()]
    assert not any(KEY in t for t in texts)
    assert any("<api_key>" in t for t in texts)  # the key was there, and was scrubbed
    assert not no_key_in(tmp_path)


def test_write_path_scrubs_what_a_provider_returns_raw(tmp_path, monkeypatch):
    """A provider that returns the key unscrubbed (a user's own provider): every file the runner writes
    (cache, state, manifest) is scrubbed all the same."""
    monkeypatch.setenv("OPENAI_API_KEY", KEY)

    class Raw(Provider):  # only what a user's own online provider must write
        name, supports_batch = "raw", False

        def body(self, r):
            return {"messages": r.messages}

        def complete(self, r):
            if r.case_id == "c0":
                return Response(custom_id=r.custom_id, status="errored", error=f"bad key {KEY}", provider="raw")
            return Response(custom_id=r.custom_id, status="succeeded", text=f"echo {KEY}", provider="raw")

    report = StageRunner("raw", Raw(), tmp_path / "run", progress=False, max_attempts=1).run(reqs("openai", 3),
                                                                                              mode="online")
    assert len(report.failed) == 1
    written = [p for p in (tmp_path / "run").rglob("*") if p.is_file()]
    assert len(written) >= 4  # two cache files, state, manifest
    assert not no_key_in(tmp_path / "run")
    assert "<OPENAI_API_KEY>" in (tmp_path / "run" / "state.json").read_text()


def test_cli_stage_prints_no_key(tmp_path):
    """`python -m gavel stage` (what the SLURM job logs): failed requests' errors and a provider exception
    that quote the key are printed scrubbed."""
    rq = reqs("openai", 3)
    write_requests(tmp_path / "r.jsonl", rq)
    env = {**os.environ, "OPENAI_API_KEY": KEY, "PYTHONPATH": str(REPO)}
    with FakeOpenAI() as srv:
        srv.echo_key = True
        srv.fail_ids = {"judge0": 99}
        srv.fail_status = 400  # an error the SDK does not retry with backoff (quoting the key all the same)
        online = subprocess.run([sys.executable, "-m", "gavel", "stage", "--provider", "openai", "--base-url",
                                 srv.url + "/v1", "--requests", str(tmp_path / "r.jsonl"), "--workdir",
                                 str(tmp_path / "w1"), "--mode", "online", "--max-attempts", "1"],
                                capture_output=True, text=True, env=env, cwd=tmp_path, timeout=300)
        srv.reject_key = True  # every call: 401 "Incorrect API key provided: <key>"
        batch = subprocess.run([sys.executable, "-m", "gavel", "stage", "--provider", "openai", "--base-url",
                                srv.url + "/v1", "--requests", str(tmp_path / "r.jsonl"), "--workdir",
                                str(tmp_path / "w2"), "--poll-interval", "0.01"],
                               capture_output=True, text=True, env=env, cwd=tmp_path, timeout=300)
    assert online.returncode == 1 and "failed" in online.stdout and "<OPENAI_API_KEY>" in online.stdout
    assert batch.returncode == 2 and "Incorrect API key provided: <OPENAI_API_KEY>" in batch.stderr, batch.stderr
    for out in (online.stdout, online.stderr, batch.stdout, batch.stderr):
        assert KEY[:12] not in out
    assert not no_key_in(tmp_path)
