"""The LLM layer against local fake servers that speak each provider's protocol (tests/fakes)."""

import json
import os
import random
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from fakes.anthropic_fake import FakeAnthropic
from fakes.gemini_fake import FakeGemini
from fakes.openai_fake import FakeOpenAI

from gavel.llm import Request
from gavel.llm.providers import get_provider
from gavel.llm.providers.base import BatchTooLargeError
from gavel.llm.runner import StageRunner

KEY = "sk-planted-secret-key-4242424242"
MODELS = {"openai": "gpt-4.1-2025-04-14", "anthropic": "claude-sonnet-4-20250514-thinking", "gemini": "gemini-2.5-pro"}
FAKES = {"openai": FakeOpenAI, "anthropic": FakeAnthropic, "gemini": FakeGemini}
CREATE = {"openai": r"^/v1/batches$", "anthropic": r"^/v1/messages/batches$", "gemini": r":batchGenerateContent$"}


def reqs(provider, n=6, stage="judge"):
    return [Request(stage=stage, model=MODELS[provider], case_id=f"c{i}", item="filing_date",
                    messages=[{"role": "system", "content": "Be terse."}, {"role": "user", "content": f"case {i}"}])
            for i in range(n)]


def make(provider, srv):
    return get_provider(provider, base_url=srv.url + ("/v1" if provider == "openai" else ""), api_key=KEY)


def runner(provider, srv, tmp_path, **kw):
    return StageRunner("judge", make(provider, srv), tmp_path / "run", poll_interval=0.01, progress=False, **kw)


def test_custom_ids_are_stable_short_and_content_derived():
    a, b = reqs("openai", 2)
    assert a.custom_id == reqs("openai", 1)[0].custom_id
    assert a.custom_id != b.custom_id
    changed = Request(**{**a.__dict__, "params": {"temperature": 0.1}})
    assert changed.custom_id != a.custom_id
    long = Request(stage="x" * 200, model="m", messages=[])
    for r in (a, long):
        assert len(r.custom_id) <= 64 and all(c.isalnum() or c in "-_" for c in r.custom_id)


@pytest.mark.parametrize("provider", ["openai", "anthropic", "gemini"])
def test_batch_with_partial_failures_and_out_of_order_results(provider, tmp_path):
    rq = reqs(provider)
    with FAKES[provider]() as srv:
        srv.polls_to_end = 2
        srv.fail_ids = {rq[1].custom_id: 1, rq[4].custom_id: 99}  # one recovers on retry, one never does
        run = runner(provider, srv, tmp_path, max_attempts=3)
        report = run.run(rq)
        assert report.failed == [rq[4].custom_id]
        assert report.responses[rq[4].custom_id].status == "errored"
        for r in rq[:4] + rq[5:]:
            got = report.responses[r.custom_id]
            assert got.ok and got.text == f"answer:{r.custom_id}"  # mapped by custom_id, not by position
        assert srv.duplicate_after_success == 0
        assert srv.submissions[rq[1].custom_id] == 2 and srv.submissions[rq[4].custom_id] == 3
        assert srv.submissions[rq[0].custom_id] == 1
        # a rerun of the unchanged stage sends nothing new for what succeeded; only the failure is retried
        calls = dict(srv.submissions)
        again = runner(provider, srv, tmp_path, max_attempts=3).run(rq)
        assert again.cached == 5
        assert {k: v for k, v in srv.submissions.items() if k != rq[4].custom_id} == \
               {k: v for k, v in calls.items() if k != rq[4].custom_id}


def test_openai_expired_batch_and_missing_output_file(tmp_path):
    rq = reqs("openai", 5)
    with FakeOpenAI(expire_after=3) as srv:
        p = make("openai", srv)
        srv.polls_to_end = 2
        bid = p.submit(rq, "t1")
        assert not p.poll(bid).ended  # the first poll sees it running; the second one ended
        assert p.poll(bid).ended
        got = {r.custom_id: r for r in p.fetch(bid, [r.custom_id for r in rq])}
        assert [got[r.custom_id].status for r in rq] == ["succeeded"] * 3 + ["expired"] * 2
    with FakeOpenAI(no_output_file=True) as srv:
        p = make("openai", srv)
        bid = p.submit(rq, "t2")
        while not p.poll(bid).ended:
            pass
        got = p.fetch(bid, [r.custom_id for r in rq])
        assert len(got) == 5 and all(r.status == "errored" and "no result" in r.error for r in got)


def test_anthropic_expired_results_and_thinking(tmp_path):
    rq = reqs("anthropic", 3)
    with FakeAnthropic(expire_ids={rq[2].custom_id}) as srv:
        p = make("anthropic", srv)
        bid = p.submit(rq, "t")
        while not p.poll(bid).ended:
            pass
        got = {r.custom_id: r for r in p.fetch(bid, [r.custom_id for r in rq])}
        assert got[rq[2].custom_id].status == "expired"
        assert got[rq[0].custom_id].reasoning == f"thinking about {rq[0].custom_id}"
        assert p.body(rq[0])["thinking"] == {"type": "enabled", "budget_tokens": 10000}


def test_gemini_expired_batch_marks_unanswered_requests(tmp_path):
    rq = reqs("gemini", 4)
    with FakeGemini(expire=True) as srv:
        p = make("gemini", srv)
        bid = p.submit(rq, "t")
        while not p.poll(bid).ended:
            pass
        got = {r.custom_id: r.status for r in p.fetch(bid, [r.custom_id for r in rq])}
        assert sorted(got.values()) == ["expired", "expired", "succeeded", "succeeded"]


@pytest.mark.parametrize("provider", ["openai", "anthropic", "gemini"])
def test_online_mode(provider, tmp_path):
    rq = reqs(provider, 3)
    with FAKES[provider]() as srv:
        report = runner(provider, srv, tmp_path).run(rq, mode="online")
        assert not report.failed and all(r.ok and r.text.startswith("answer:") for r in report.responses.values())


def test_batches_are_split_within_limits():
    p = get_provider("mock")
    p.max_batch_requests = 4
    rq = reqs("openai", 10)
    chunks = p.split(rq)
    assert [len(c) for c in chunks] == [4, 4, 2]
    p.max_batch_bytes = 10
    with pytest.raises(BatchTooLargeError):
        p.split(rq)
    with pytest.raises(BatchTooLargeError):
        get_provider("mock").check_batch(reqs("openai", 1001))


def test_dry_run_sends_nothing_and_prices_batches(tmp_path):
    rq = reqs("openai", 4)
    with FakeOpenAI() as srv:
        run = runner("openai", srv, tmp_path)
        summary = run.dry_run(rq, expected_output_tokens=1000, show=False)
        assert srv.requests_seen == []
        row = summary.iloc[0]
        assert row["requests"] == 4 and row["input_tokens"] > 0
        # GPT-4.1: $2 / $8 per M tokens, half price in batch
        expected = 0.5 * (row["input_tokens"] * 2.0 + 4000 * 8.0) / 1e6
        assert row["cost_usd_est"] == pytest.approx(expected)
        online = run.dry_run(rq, mode="online", expected_output_tokens=1000, show=False).iloc[0]
        assert online["cost_usd_est"] == pytest.approx(2 * expected)


def test_planted_key_never_written(tmp_path, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    rq = reqs("openai", 3)
    with FakeOpenAI() as srv:
        srv.fail_ids = {rq[0].custom_id: 99}
        srv.echo_key = True  # the fake quotes the key in every answer and error
        run = runner("openai", srv, tmp_path, max_attempts=1)
        report = run.run(rq)
        assert not any(KEY in json.dumps(r.to_dict()) for r in report.responses.values())
        assert "<OPENAI_API_KEY>" in report.responses[rq[0].custom_id].error  # echoed, then scrubbed
        manifest = json.loads((tmp_path / "run" / "manifest.json").read_text())
        assert manifest["git"]["commit"] and "openai" in manifest["packages"] and manifest["batch_ids"]
        assert srv.headers_seen.get("Authorization", srv.headers_seen.get("authorization")) == f"Bearer {KEY}"
    written = [p for p in (tmp_path / "run").rglob("*") if p.is_file()]
    assert written and not any(KEY in p.read_text(errors="ignore") for p in written)
    from gavel.llm.secrets import scrub
    assert scrub(f"error: bad key {KEY}") == "error: bad key <OPENAI_API_KEY>"


@pytest.mark.parametrize("provider", ["openai", "anthropic", "gemini"])
def test_kill_and_resume_gives_the_uninterrupted_result(provider, tmp_path):
    """SIGKILL the runner at random moments while it works, restart it, and compare with an uninterrupted
    run: same results, and the fake server saw no second submission of a request that had already
    succeeded (only requests that failed were ever sent twice)."""
    worker = Path(__file__).with_name("llm_kill_worker.py")
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parent.parent)}
    n = 40

    def start(srv, workdir):
        return subprocess.Popen([sys.executable, str(worker), provider, srv.url, str(workdir), str(n)], env=env)

    with FAKES[provider]() as clean:
        clean.polls_to_end, clean.latency = 3, 0.02
        assert start(clean, tmp_path / "clean").wait(timeout=600) == 0
        expected = json.loads((tmp_path / "clean" / "result.json").read_text())
    fail = {cid: 1 for cid in sorted(expected)[:3]}  # a few requests fail once in the interrupted run
    rng = random.Random(11)
    mid_run_kills = 0
    with FAKES[provider]() as srv:
        srv.polls_to_end, srv.latency, srv.fail_ids = 3, 0.02, fail
        workdir = tmp_path / "killed"
        for attempt in range(16):
            # kill on an event the server sees, not at a wall-clock guess, so kills land mid-run however busy
            # the machine is: after the worker's k-th request (plus a random moment), or -- every other time,
            # the first time included -- as soon as a batch creation arrives if that comes first (the batch
            # then exists but the runner has not recorded its id: only adoption keeps it from being sent twice)
            on_creation = attempt % 2 == 0
            before = len(srv.requests_seen)
            creations = sum(1 for m, path in srv.requests_seen if m == "POST" and re.search(CREATE[provider], path))
            target = before + rng.randint(1, 12)
            proc = start(srv, workdir)

            def created(creations=creations):
                return sum(1 for m, path in list(srv.requests_seen)
                           if m == "POST" and re.search(CREATE[provider], path)) > creations

            deadline = time.monotonic() + 600  # only a guard against a hung worker
            while (proc.poll() is None and len(srv.requests_seen) < target and not (on_creation and created())
                   and time.monotonic() < deadline):
                time.sleep(0.001)
            if not (on_creation and created()):
                time.sleep(rng.uniform(0, 0.03))
            if proc.poll() is None:
                proc.send_signal(signal.SIGKILL)
                if len(srv.requests_seen) > before:
                    mid_run_kills += 1
            proc.wait()
            if (workdir / "result.json").exists():
                break
        if not (workdir / "result.json").exists():
            assert start(srv, workdir).wait(timeout=600) == 0
        got = json.loads((workdir / "result.json").read_text())
        assert mid_run_kills >= 3, f"only {mid_run_kills} kills landed while the runner was talking to the server"
        assert got == expected and all(status == "succeeded" for status, _ in got.values())
        assert srv.duplicate_after_success == 0
        assert {cid for cid, k in srv.submissions.items() if k > 1} <= set(fail)


def test_planted_key_never_reaches_a_notebook(tmp_path):
    """The LLM stage notebook, run by papermill against the fake OpenAI server with a planted key in the
    environment: the key is used (the server saw it) but appears in no output file."""
    import papermill

    from gavel import llm

    repo = Path(__file__).resolve().parent.parent
    with FakeOpenAI() as srv:
        srv.echo_key = True  # the key comes back in answers and in the failed request's error
        srv.fail_ids = {llm.demo_requests()[0].custom_id: 99}
        old = os.environ.get("OPENAI_API_KEY")
        os.environ["OPENAI_API_KEY"] = KEY
        try:
            papermill.execute_notebook(
                str(repo / "notebooks" / "08_llm_stage.ipynb"), str(tmp_path / "out.ipynb"), kernel_name="python3",
                parameters={"provider": "openai", "base_url": srv.url + "/v1", "dry_run_only": False,
                            "workdir": str(tmp_path / "run"), "poll_interval": 0.01}, progress_bar=False)
        finally:
            if old is None:
                os.environ.pop("OPENAI_API_KEY")
            else:
                os.environ["OPENAI_API_KEY"] = old
        assert srv.headers_seen.get("Authorization", srv.headers_seen.get("authorization")) == f"Bearer {KEY}"
    notebook = (tmp_path / "out.ipynb").read_text()
    assert "1 failed" in notebook and "<OPENAI_API" in notebook  # the report table shows the scrubbed error
    written = [p for p in tmp_path.rglob("*") if p.is_file()]
    # the table cuts long cells: no prefix of the key either
    assert not any(KEY[:12] in p.read_text(errors="ignore") for p in written)


def test_rate_limited_submission_is_retried_with_backoff(tmp_path):
    rq = reqs("openai", 3)
    with FakeOpenAI() as srv:
        srv.rate_limit_next = 2
        p = get_provider("openai", base_url=srv.url + "/v1", api_key=KEY, max_retries=3)
        report = StageRunner("judge", p, tmp_path / "run", poll_interval=0.01, progress=False).run(rq)
        assert not report.failed and len(report.batches) == 1
        assert [m for m, path in srv.requests_seen if path == "/v1/batches"].count("POST") == 3  # 2 x 429, then ok


def test_vllm_run_batch_files(tmp_path):
    from gavel.llm.providers.vllm import VLLMServer

    p = VLLMServer(base_url="http://127.0.0.1:9/v1")
    rq = [Request(stage="s", model="Qwen3-32B", messages=[{"role": "user", "content": f"q{i}"}]) for i in range(3)]
    path = p.write_run_batch(rq, tmp_path / "in.jsonl")
    lines = [json.loads(x) for x in path.read_text().splitlines()]
    assert lines[0]["body"]["model"] == "Qwen/Qwen3-32B"
    assert lines[0]["body"]["chat_template_kwargs"] == {"enable_thinking": True}
    assert lines[0]["body"]["temperature"] == 0.6 and lines[0]["body"]["top_p"] == 0.95
    out = tmp_path / "out.jsonl"
    out.write_text(json.dumps({"custom_id": rq[0].custom_id, "response": {"status_code": 200, "body": {
        "choices": [{"message": {"content": "ok", "reasoning_content": "hm"}}],
        "usage": {"prompt_tokens": 3, "completion_tokens": 2}}}, "error": None}) + "\n"
        + json.dumps({"custom_id": rq[1].custom_id, "response": None, "error": {"message": "oom"}}) + "\n")
    got = {r.custom_id: r for r in p.read_run_batch(out, [r.custom_id for r in rq])}
    assert got[rq[0].custom_id].text == "ok" and got[rq[0].custom_id].reasoning == "hm"
    assert got[rq[1].custom_id].status == "errored" and "oom" in got[rq[1].custom_id].error
    assert got[rq[2].custom_id].status == "errored" and "no line" in got[rq[2].custom_id].error
    # a damaged line is its own request's (retryable) error, naming the file and line; the rest is kept
    (tmp_path / "bad.jsonl").write_text("{not json\n" + out.read_text())
    got = {r.custom_id: r for r in p.read_run_batch(tmp_path / "bad.jsonl", [r.custom_id for r in rq])}
    assert got[rq[0].custom_id].text == "ok"
    assert got[rq[2].custom_id].status == "errored" and "bad.jsonl, line 1" in got[rq[2].custom_id].error


def test_vllm_run_batch_through_the_runner(tmp_path):
    """vLLM offline batches: the runner writes run-batch input, starts the (fake) command, waits for it and
    reads the output; a rerun sends nothing."""
    fake = Path(__file__).parent / "fakes" / "vllm_run_batch.py"
    p = get_provider("vllm-batch", folder=tmp_path / "batches", command=f"{sys.executable} {fake}")
    rq = [Request(stage="summaries", model="Qwen3-14B", case_id=str(i), messages=[{"role": "user", "content": f"q{i}"}])
          for i in range(4)]
    run = StageRunner("summaries", p, tmp_path / "run", poll_interval=0.05, progress=False)
    report = run.run(rq)
    assert not report.failed and all(r.text == f"answer:{r.custom_id}" for r in report.responses.values())
    assert json.loads((tmp_path / "batches" / f"{report.batches[0]}.in.jsonl").read_text().splitlines()[0])[
        "body"]["model"] == "Qwen/Qwen3-14B"
    assert run.run(rq).sent == 0
    bad = get_provider("vllm-batch", folder=tmp_path / "bad", command="false")
    report = StageRunner("s2", bad, tmp_path / "run2", poll_interval=0.05, progress=False, max_attempts=1).run(rq[:1])
    assert report.failed and "exited 1" in report.responses[rq[0].custom_id].error


@pytest.mark.parametrize("provider", ["openai", "anthropic", "gemini"])
def test_dry_run_needs_no_credentials(provider, tmp_path, monkeypatch):
    for var in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "GEMINI_API_KEY", "GOOGLE_API_KEY"):
        monkeypatch.delenv(var, raising=False)
    run = StageRunner("judge", get_provider(provider), tmp_path / "run", progress=False)
    summary = run.dry_run(reqs(provider, 2), show=False)
    assert summary.iloc[0]["requests"] == 2 and summary.iloc[0]["cost_usd_est"] > 0
