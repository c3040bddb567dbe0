"""Issue 8, the runner's part: nothing paid twice, nothing served from the wrong model.

The cache key covers who answers and what is sent; one runner per workdir; requests too long for the
context window are refused unsent; a provider that cannot send stops before anything is recorded; bad
request files get one line naming file, line and field; users add models in their own file."""

import json
import sys
import threading
from collections import Counter
from pathlib import Path

import pytest
from fakes.anthropic_fake import FakeAnthropic
from fakes.gemini_fake import FakeGemini
from fakes.openai_fake import FakeOpenAI

from gavel.cli import main
from gavel.core import config
from gavel.llm import Request
from gavel.llm.providers import get_provider
from gavel.llm.providers.base import ProviderError
from gavel.llm.providers.mock import MockProvider
from gavel.llm.records import RequestError, read_requests, write_requests
from gavel.llm.registry import llm_model
from gavel.llm.runner import StageRunner, WorkdirBusyError

KEY = "sk-planted-secret-key-4242424242"
MODELS = {"openai": "gpt-4.1-2025-04-14", "anthropic": "claude-sonnet-4-20250514-thinking", "gemini": "gemini-2.5-pro",
          "vllm": "Qwen3-14B"}
FAKES = {"openai": FakeOpenAI, "anthropic": FakeAnthropic, "gemini": FakeGemini}
FAKE_RUN_BATCH = Path(__file__).parent / "fakes" / "vllm_run_batch.py"
KEY_VARS = ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "GEMINI_API_KEY", "GOOGLE_API_KEY")


def reqs(model, n=3, stage="judge", **params):
    return [Request(stage=stage, model=model, case_id=f"c{i}", item="filing_date", params=dict(params),
                    messages=[{"role": "system", "content": "Be terse."}, {"role": "user", "content": f"case {i} id=c{i}"}])
            for i in range(n)]


def hosted(provider, srv):
    return get_provider(provider, base_url=srv.url + ("/v1" if provider == "openai" else ""), api_key=KEY)


def runner(provider, workdir, **kw):
    return StageRunner("judge", provider, workdir, poll_interval=0.01, progress=False, **kw)


@pytest.fixture
def no_keys(monkeypatch):
    for var in KEY_VARS:
        monkeypatch.delenv(var, raising=False)


@pytest.fixture
def models_file(tmp_path, monkeypatch):
    """Write a user models file and point GAVEL_MODELS at it."""
    def write(text, name="my_models.yaml"):
        path = tmp_path / name
        path.write_text(text, encoding="utf-8")
        monkeypatch.setenv("GAVEL_MODELS", str(path))
        return path
    return write


# ---------------- 1. the cache key covers provider, server and settings ----------------

def test_mock_then_openai_run_sends_to_openai(tmp_path):
    """Same requests, same workdir: the mock's cached echoes are never returned as OpenAI's answers."""
    rq = reqs(MODELS["openai"])
    mock = runner(MockProvider(), tmp_path / "run").run(rq, mode="online")
    assert mock.sent == 3 and all("echo" in r.text for r in mock.responses.values())
    with FakeOpenAI() as srv:
        report = runner(hosted("openai", srv), tmp_path / "run").run(rq)
        assert (report.cached, report.sent, report.failed) == (0, 3, [])
        assert srv.submissions == {r.custom_id: 1 for r in rq}
    assert {r.provider for r in report.responses.values()} == {"openai"}
    assert all(report.responses[r.custom_id].text == f"answer:{r.custom_id}" for r in rq)
    again = runner(MockProvider(), tmp_path / "run").run(rq, mode="online")  # each keeps its own answers
    assert again.cached == 3 and all("echo" in r.text for r in again.responses.values())


def test_mock_then_openai_without_key_sends_nothing_and_says_what_to_set(tmp_path, no_keys):
    rq = reqs(MODELS["openai"])
    runner(MockProvider(), tmp_path / "run").run(rq, mode="online")
    with pytest.raises(ProviderError, match="no API key; set OPENAI_API_KEY"):
        runner(get_provider("openai"), tmp_path / "run").run(rq)
    state = json.loads((tmp_path / "run" / "state.json").read_text())
    assert state["submissions"] == {}


def test_two_vllm_servers_do_not_share_answers(tmp_path):
    rq = reqs(MODELS["vllm"])
    with FakeOpenAI() as one, FakeOpenAI() as two:
        first = runner(get_provider("vllm", base_url=one.url + "/v1"), tmp_path / "run").run(rq, mode="online")
        second = runner(get_provider("vllm", base_url=two.url + "/v1"), tmp_path / "run").run(rq, mode="online")
        again = runner(get_provider("vllm", base_url=one.url + "/v1"), tmp_path / "run").run(rq, mode="online")
        assert (first.sent, second.sent, second.cached, again.sent, again.cached) == (3, 3, 0, 0, 3)
        assert (one.chat_calls, two.chat_calls) == (3, 3)


def test_editing_the_registry_temperature_or_model_id_sends_again(tmp_path, models_file):
    rq = reqs(MODELS["vllm"], n=2)
    with FakeOpenAI() as srv:
        def run():
            return runner(get_provider("vllm", base_url=srv.url + "/v1"), tmp_path / "run").run(rq, mode="online")

        assert run().sent == 2 and run().sent == 0
        models_file("models:\n  - release_name: Qwen3-14B\n    llm: {sampling: {temperature: 0.1, top_p: 0.95}}\n")
        assert llm_model("Qwen3-14B").sampling["temperature"] == 0.1
        assert run().sent == 2
        assert srv.chat_bodies[-1]["temperature"] == 0.1
        models_file("models:\n  - release_name: Qwen3-14B\n    llm: {model_id: Qwen/Qwen3-14B-AWQ}\n", "other.yaml")
        assert run().sent == 2
        assert srv.chat_bodies[-1]["model"] == "Qwen/Qwen3-14B-AWQ"
        assert srv.chat_calls == 6


def test_replay_still_answers_from_its_recording_in_a_shared_workdir(tmp_path):
    rq = reqs(MODELS["openai"])
    runner(MockProvider(), tmp_path / "run").run(rq, mode="online")
    recorded = {("judge", r.model, r.case_id, r.item): f"recorded {r.case_id}" for r in rq[:2]}
    replay = get_provider("replay", lookup=lambda r: recorded.get((r.stage, r.model, r.case_id, r.item)))
    report = runner(replay, tmp_path / "run", max_attempts=1).run(rq)
    assert [report.responses[r.custom_id].text for r in rq[:2]] == ["recorded c0", "recorded c1"]
    assert report.failed == [rq[2].custom_id] and report.responses[rq[2].custom_id].error.startswith("missing:")


# ---------------- 2. one runner per workdir ----------------

def _count_vllm_batch(folder: Path) -> Counter:
    return Counter(json.loads(line)["custom_id"] for f in folder.glob("*.in.jsonl")
                   for line in f.read_text().splitlines() if line.strip())


@pytest.mark.parametrize("kind", ["openai", "anthropic", "gemini", "vllm-batch", "online"])
def test_two_runners_on_one_workdir_submit_every_request_once(kind, tmp_path):
    """Two runners (threads, each with its own StageRunner and provider) start together on one workdir;
    every request reaches the server exactly once and both runners return every answer."""
    n = 8
    model = MODELS["vllm" if kind == "vllm-batch" else "openai" if kind == "online" else kind]
    rq = reqs(model, n)
    fake = FAKES.get(kind, FakeOpenAI)
    with fake() as srv:
        srv.polls_to_end, srv.latency = 3, 0.02

        def provider():
            if kind == "vllm-batch":
                return get_provider("vllm-batch", folder=tmp_path / "run" / "batches",
                                    command=f"{sys.executable} {FAKE_RUN_BATCH}")
            return hosted("openai" if kind == "online" else kind, srv)

        start = threading.Barrier(2)
        reports, errors = [], []

        def work():
            run = runner(provider(), tmp_path / "run")
            run.lock_timeout = 600  # a bound, not an expectation: the other runner ends long before
            start.wait()
            try:
                reports.append(run.run(rq, mode="online" if kind == "online" else "batch"))
            except BaseException as err:  # noqa: BLE001 -- reported below
                errors.append(err)

        threads = [threading.Thread(target=work) for _ in range(2)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert not errors, errors
        if kind == "vllm-batch":
            counts = _count_vllm_batch(tmp_path / "run" / "batches")
        elif kind == "online":
            counts = Counter(b["messages"][-1]["content"] for b in srv.chat_bodies)
        else:
            counts = Counter(srv.submissions)
        assert sorted(counts.values()) == [1] * n, counts
        assert sorted(r.sent for r in reports) == [0, n]
        for report in reports:
            assert not report.failed and len(report.responses) == n
    state = json.loads((tmp_path / "run" / "state.json").read_text())
    if kind != "online":
        assert sum(len(s["custom_ids"]) for s in state["submissions"].values()) == n


WORKER = """
import sys
from gavel.llm import Request
from gavel.llm.providers import get_provider
from gavel.llm.runner import StageRunner
url, workdir, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
rq = [Request(stage="judge", model="gpt-4.1-2025-04-14", case_id=f"c{i}", messages=[{"role": "user", "content": f"q{i}"}])
      for i in range(n)]
run = StageRunner("judge", get_provider("openai", base_url=url, api_key="sk-two-process-test-0000"), workdir,
                  poll_interval=0.01, progress=False)
run.lock_timeout = 600  # a bound, not an expectation: the other runner ends long before
run.provider.max_batch_requests = 3
report = run.run(rq)
sys.exit(1 if report.failed else 0)
"""


def test_two_runner_processes_on_one_workdir_submit_every_request_once(tmp_path):
    import os
    import subprocess

    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parent.parent)}
    with FakeOpenAI() as srv:
        srv.polls_to_end, srv.latency = 3, 0.02
        procs = [subprocess.Popen([sys.executable, "-c", WORKER, srv.url + "/v1", str(tmp_path / "run"), "9"], env=env)
                 for _ in range(2)]
        assert [p.wait(timeout=300) for p in procs] == [0, 0]
        assert len(srv.submissions) == 9 and set(srv.submissions.values()) == {1}, srv.submissions


def test_a_busy_workdir_is_refused_with_a_message_naming_the_holder(tmp_path):
    rq = reqs(MODELS["openai"], 1)
    holder = runner(MockProvider(), tmp_path / "run")
    other = runner(MockProvider(), tmp_path / "run", lock_timeout=0)
    with holder.locked():
        with pytest.raises(WorkdirBusyError, match=r"is in use by runner pid \d+ .*another workdir"):
            other.run(rq, mode="online")
    assert other.run(rq, mode="online").sent == 1  # free again once the holder is done


# ---------------- 7. context window ----------------

def test_a_prompt_over_the_context_window_is_refused_unsent_and_named_in_the_dry_run(tmp_path):
    big = Request(stage="judge", model="Qwen3-14B", case_id="big", item="x",  # 131,072-token model
                  messages=[{"role": "user", "content": "word " * 140_000}])
    cap = Request(stage="judge", model="Qwen3-14B", case_id="cap", item="x", params={"max_tokens": 131_050},
                  messages=[{"role": "user", "content": "a short prompt " * 20}])
    ok = reqs(MODELS["vllm"], 1)[0]
    with FakeOpenAI() as srv:
        run = runner(get_provider("vllm", base_url=srv.url + "/v1"), tmp_path / "run")
        summary = run.dry_run([big, cap, ok], show=False)
        assert set(summary.attrs["too_long"]) == {big.custom_id, cap.custom_id}
        assert "context window 131,072" in summary.attrs["too_long"][big.custom_id]
        assert summary.iloc[0]["requests"] == 1
        report = run.run([big, cap, ok], mode="online")
        assert srv.chat_calls == 1 and report.sent == 1
    assert set(report.too_long) == set(report.failed) == {big.custom_id, cap.custom_id}
    assert report.responses[big.custom_id].error.startswith("not sent: too long")
    assert report.responses[ok.custom_id].ok


def test_dry_run_caps_the_output_estimate_by_the_requests_max_tokens(tmp_path):
    run = runner(get_provider("openai"), tmp_path / "run")
    small = reqs(MODELS["openai"], 1, max_tokens=100)
    # no earlier answer to measure: the request's cap (100, not the model's 32,768), said so
    est = run.dry_run(small, show=False).iloc[0]
    assert est["output_tokens_est"] == 100 and est["output_from"] == "cap (no measurement)"
    assert run.dry_run(small, expected_output_tokens=1000, show=False).iloc[0]["output_tokens_est"] == 100


# ---------------- 9. errors a user meets ----------------

def test_missing_key_is_one_line_before_anything_is_recorded(tmp_path, no_keys, capsys):
    path = tmp_path / "requests.jsonl"
    write_requests(path, reqs(MODELS["anthropic"]))
    rc = main(["stage", "--requests", str(path), "--provider", "anthropic", "--workdir", str(tmp_path / "run")])
    err = capsys.readouterr().err.strip().splitlines()
    assert rc == 2 and err == ["error: anthropic: no API key; set ANTHROPIC_API_KEY in the environment or in .env"]
    assert not (tmp_path / "run" / "state.json").exists()


def test_vllm_not_installed_is_one_line_and_no_intent(tmp_path, capsys):
    path = tmp_path / "requests.jsonl"
    write_requests(path, reqs(MODELS["vllm"]))
    rc = main(["stage", "--requests", str(path), "--provider", "vllm-batch", "--workdir", str(tmp_path / "run"),
               "--vllm-command", "no-such-vllm-gavel-test run-batch"])
    err = capsys.readouterr().err.strip().splitlines()
    assert rc == 2 and len(err) == 1 and "'no-such-vllm-gavel-test' not found" in err[0] and "install vLLM" in err[0]
    assert not (tmp_path / "run" / "state.json").exists()


def test_a_submission_that_fails_leaves_no_dangling_intent(tmp_path):
    rq = reqs(MODELS["openai"])
    with FakeOpenAI() as srv:
        srv.rate_limit_next = 1
        p = get_provider("openai", base_url=srv.url + "/v1", api_key=KEY, max_retries=0)
        with pytest.raises(Exception, match="Rate limit"):
            runner(p, tmp_path / "run").run(rq)
        state = json.loads((tmp_path / "run" / "state.json").read_text())
        assert state["submissions"] == {} and state["attempts"] == {}
        report = runner(p, tmp_path / "run").run(rq)  # the next run sends each request once
        assert report.sent == 3 and srv.submissions == {r.custom_id: 1 for r in rq}


@pytest.mark.parametrize("line, field", [
    ({"stage": "s", "model": "m", "messages": "hello"}, "field 'messages' must be a list"),
    ({"stage": "s", "model": "m", "messages": [{"role": "robot", "content": "x"}]}, "field 'messages', message 0"),
    ({"stage": "s", "model": "m", "messages": [], "temperature": 0.2}, "unknown field 'temperature' (sampling"),
    ({"stage": "s", "model": "m", "messages": [], "params": [1]}, "field 'params' must be an object"),
    ({"stage": "s", "messages": []}, "field 'model' is missing"),
    ({"stage": "s", "model": "m", "messages": [], "custom_id": "x-1"}, "field 'custom_id' is 'x-1'"),
])
def test_bad_request_lines_are_one_line_naming_file_line_and_field(line, field, tmp_path, capsys):
    path = tmp_path / "requests.jsonl"
    good = {"stage": "s", "model": "m", "messages": [{"role": "user", "content": "q"}]}
    path.write_text(json.dumps(good) + "\n" + json.dumps(line) + "\n", encoding="utf-8")
    with pytest.raises(RequestError) as info:
        read_requests(path)
    assert str(info.value).startswith(f"{path}, line 2: ") and field in str(info.value)
    rc = main(["stage", "--requests", str(path), "--provider", "mock", "--workdir", str(tmp_path / "run")])
    err = capsys.readouterr().err.strip().splitlines()
    assert rc == 2 and len(err) == 1 and field in err[0] and "line 2" in err[0]


def test_repeated_requests_are_named_and_sent_once(tmp_path, capsys):
    rq = reqs(MODELS["openai"], 2)
    path = tmp_path / "requests.jsonl"
    write_requests(path, [rq[0], rq[1], rq[0]])
    rc = main(["stage", "--requests", str(path), "--provider", "mock", "--mode", "online",
               "--workdir", str(tmp_path / "run")])
    out = capsys.readouterr()
    assert rc == 0 and f"line 3: same request as line 1 (custom_id {rq[0].custom_id})" in out.err
    assert "2 requests, 0 cached, 2 sent" in out.out
    manifest = json.loads((tmp_path / "run" / "manifest.json").read_text())
    assert manifest["repeated"] == 1 and manifest["sent"] == 2


def test_online_run_without_key_counts_nothing_as_sent(tmp_path, no_keys):
    with pytest.raises(ProviderError, match="GEMINI_API_KEY or GOOGLE_API_KEY"):
        runner(get_provider("gemini"), tmp_path / "run").run(reqs(MODELS["gemini"]), mode="online")
    assert not (tmp_path / "run" / "manifest.json").exists()


# ---------------- 10. users' own models ----------------

def test_user_models_file_adds_and_overrides_models(models_file, tmp_path):
    models_file("""models:
  - release_name: my-llama
    provider: vllm
    llm: {model_id: meta-llama/Llama-3.1-8B-Instruct, context_window: 1000, max_output_tokens: 200,
          sampling: {temperature: 0.3}}
  - release_name: gpt-4.1-2025-04-14
    llm: {price: {input: 1.0, output: 4.0, batch_discount: 0.5}}
""")
    m = llm_model("my-llama")
    assert (m.provider, m.model_id, m.context_window, m.sampling) == ("vllm", "meta-llama/Llama-3.1-8B-Instruct",
                                                                      1000, {"temperature": 0.3})
    gpt = llm_model("gpt-4.1-2025-04-14")
    assert gpt.price["input"] == 1.0 and gpt.sampling == {"temperature": 0.7, "top_p": 1.0}  # the rest kept
    assert len(config.models()) == 12 and "my-llama" not in {x.release_name for x in config.models()}
    long = Request(stage="s", model="my-llama", messages=[{"role": "user", "content": "word " * 900}])
    with FakeOpenAI() as srv:
        report = runner(get_provider("vllm", base_url=srv.url + "/v1"), tmp_path / "run").run([long], mode="online")
        assert report.too_long == [long.custom_id] and srv.chat_calls == 0  # its own context window applies


def test_user_models_file_read_from_dotenv(tmp_path, monkeypatch):
    (tmp_path / "mine.yaml").write_text("models:\n  - release_name: dotenv-model\n    provider: openai\n"
                                        "    llm: {model_id: gpt-x, context_window: 9000, max_output_tokens: 100}\n")
    (tmp_path / ".env").write_text("GAVEL_MODELS=mine.yaml\n")
    monkeypatch.setenv("GAVEL_MODELS", "unset")
    monkeypatch.delenv("GAVEL_MODELS")
    monkeypatch.setattr(config, "REPO_ROOT", tmp_path)
    config.load_dotenv_once.cache_clear()
    try:
        assert llm_model("dotenv-model").model_id == "gpt-x"
    finally:
        config.load_dotenv_once.cache_clear()


@pytest.mark.parametrize("text, message", [
    ("models: [\n  {release_name: x,\n", r"line \d+: not valid YAML"),
    ("models:\n  - release_name: x\n    provider: openai\n    llm: {model_id: y, context_window: 10}\n",
     "model x: a model not in gavel/core/models.yaml needs field 'llm.max_output_tokens'"),
    ("models:\n  - release_name: Qwen3-14B\n    llm: {context_window: big}\n",
     r"models entry 1 \(Qwen3-14B\): field 'llm.context_window' must be a positive whole number"),
    ("models:\n  - release_name: x\n    provider: azure\n", "field 'provider' is 'azure'; set one of"),
    ("models:\n  - release_name: x\n    temperature: 0.2\n", "unknown field 'temperature'"),
    ("roles: {}\n", "a mapping with the key `models:`"),
])
def test_a_malformed_user_models_file_is_named(text, message, models_file):
    path = models_file(text)
    with pytest.raises(config.ModelsFileError, match=message) as info:
        llm_model("Qwen3-14B")
    assert str(info.value).startswith(str(path))


def test_a_missing_user_models_file_is_named(monkeypatch, tmp_path):
    monkeypatch.setenv("GAVEL_MODELS", str(tmp_path / "nope.yaml"))
    with pytest.raises(config.ModelsFileError, match="nope.yaml: models file named by GAVEL_MODELS does not exist"):
        config.model("Qwen3-14B")


def test_an_unknown_model_is_one_line_naming_the_models_file_variable(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    path = tmp_path / "requests.jsonl"
    write_requests(path, reqs("no-such-model-xyz", 1))
    rc = main(["stage", "--requests", str(path), "--provider", "openai", "--workdir", str(tmp_path / "run")])
    err = capsys.readouterr().err.strip().splitlines()
    assert rc == 2 and len(err) == 1 and "unknown model 'no-such-model-xyz'" in err[0] and "GAVEL_MODELS" in err[0]
    assert not (tmp_path / "run" / "state.json").exists()
