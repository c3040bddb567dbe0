"""Issue 27, sections 3 and 4 (outside the reader and the annotation app): what a process imports, the dry
run's counting, the cache key naming who answers, reserved names, numeric options, and hostile files
(.env, nested JSON, oversize summaries, a big corpus's searches, locks of killed runs)."""

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from fakes.openai_fake import FakeOpenAI

from gavel.cli import main
from gavel.core.items import ITEMS
from gavel.llm import Request
from gavel.llm.providers import get_provider
from gavel.llm.runner import StageRunner

REPO = Path(__file__).resolve().parent.parent
SUMMARY = "The plaintiffs filed the complaint in 2019. The court approved a settlement in 2021."
REFERENCE = "The complaint was filed in 2019; the court approved the parties' settlement in 2021."
QWEN = "Qwen3-14B"


def run_gavel(*argv, env=None, cwd=REPO, timeout=120):
    return subprocess.run([sys.executable, "-m", "gavel", *argv], capture_output=True, text=True, cwd=cwd,
                          env={**os.environ, **(env or {})}, timeout=timeout)


def one_line(err: str) -> str:
    lines = [x for x in err.strip().splitlines() if x.strip()]
    assert len(lines) == 1 and "Traceback" not in err, err
    return lines[0]


def inputs(folder: Path, summary: str = SUMMARY, model: str = "m") -> tuple[Path, Path]:
    s, r = folder / "s.jsonl", folder / "refs.json"
    s.write_text(json.dumps({"case_id": "1", "model": model, "summary": summary}) + "\n")
    r.write_text(json.dumps({"1": REFERENCE}))
    return s, r


# ---------------------------------------------------------------- 2. what every process imports
@pytest.mark.parametrize("code", ["import gavel.cli",
                                  "import sys; sys.argv = ['gavel', '--help']\n"
                                  "import runpy\ntry:\n    runpy.run_module('gavel', run_name='__main__')\n"
                                  "except SystemExit:\n    pass"])
def test_the_command_line_does_not_import_jsonschema(code):
    done = subprocess.run([sys.executable, "-c", code + "\nimport sys\nprint('jsonschema' in sys.modules)"],
                          capture_output=True, text=True, cwd=REPO, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip().splitlines()[-1] == "False"


def test_schema_checks_still_work_where_jsonschema_is_used():
    from gavel.answers import Unusable, read_object

    schema = {"type": "object", "properties": {"score": {"type": "integer"}}, "required": ["score"]}
    assert read_object('{"score": 3}', keys={"score"}, schema=schema)["score"] == 3
    with pytest.raises(Unusable, match="score"):
        read_object('{"score": "high"}', keys={"score"}, schema=schema)


# ---------------------------------------------------------------- 3. the dry run counts each text once
def test_the_dry_run_tokenises_each_text_once(tmp_path, monkeypatch, capsys):
    """Two summaries x 26 items: every extract request repeats its summary; each distinct message text is
    tokenised once (today: once per request that carries it)."""
    from gavel.core import tokens

    calls = []
    enc = tokens.encoding()
    real = enc.encode
    monkeypatch.setattr(enc, "encode", lambda text, *a, **k: calls.append(text) or real(text, *a, **k))
    tokens._count.cache_clear()
    s = tmp_path / "s.jsonl"
    s.write_text("".join(json.dumps({"case_id": "1", "model": m, "summary": f"{SUMMARY} ({m})"}) + "\n"
                         for m in ("a", "b")))
    r = tmp_path / "refs.json"
    r.write_text(json.dumps({"1": REFERENCE}))
    rc = main(["evaluate", "--summaries", str(s), "--references", str(r), "--provider", "mock", "--dry-run",
               "--out", str(tmp_path / "out")])
    assert rc == 0, capsys.readouterr().err
    assert calls, "the dry run counted nothing"
    assert len(calls) == len(set(calls)), f"{len(calls)} countings of {len(set(calls))} distinct texts"


# ---------------------------------------------------------------- 4. printed interval digits
def test_interval_digits_follow_the_monte_carlo_error():
    import numpy as np

    from gavel.core.stats import endpoint_digits, round_interval

    rng = np.random.default_rng(0)
    wide = rng.normal(50, 2.0, 2000)  # endpoints move by ~0.1 between seeds: 1 decimal at most
    narrow = rng.normal(0.5, 0.0005, 2000)
    assert endpoint_digits(wide, 2.5) <= 1
    assert endpoint_digits(narrow, 2.5) >= 4
    # rounded to those digits, two seeds' endpoints differ by at most a unit or so of the last digit
    a, b = (np.random.default_rng(s).normal(50, 2.0, 2000) for s in (1, 2))
    (lo_a, hi_a), (lo_b, hi_b) = round_interval(a), round_interval(b)
    d = endpoint_digits(a, 2.5)
    assert abs(lo_a - lo_b) <= 2 * 10 ** -d and abs(hi_a - hi_b) <= 2 * 10 ** -d
    assert round_interval(np.array([])) == (None, None) or all(np.isnan(round_interval(np.array([]))))


def test_the_fig5_chunk_note_says_how_many_cells_have_a_judge_entry():
    from gavel.paper import reproduction, results

    claims = reproduction.evaluate(results.read())
    note = claims.set_index("id").loc["fig5_chunk_oss_s", "note"]
    assert "every cell rests on rule-6" not in note
    assert "607 of the 1,040 cells" in note and "433" in note


# ---------------------------------------------------------------- 5. the cache key names who answers
def _chat(provider, workdir, text="case 1 id=c1", model=QWEN):
    req = Request(stage="judge", model=model, case_id="c1", item="filing_date",
                  messages=[{"role": "user", "content": text}])
    run = StageRunner("judge", provider, workdir, progress=False).run([req], mode="online")
    return run.responses[req.custom_id], run


def _servers(n=2):
    out = []
    for i in range(n):
        srv = FakeOpenAI().start()
        srv.reshape = lambda body, i=i: {**body, "choices": [{**body["choices"][0], "message": {
            **body["choices"][0]["message"], "content": f"server {'AB'[i]}"}}]}
        out.append(srv)
    return out


def test_openai_base_url_from_the_environment_is_part_of_the_cache_key(tmp_path, monkeypatch):
    a, b = _servers()
    try:
        monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
        monkeypatch.setenv("OPENAI_BASE_URL", a.url + "/v1")
        got, _ = _chat(get_provider("openai"), tmp_path, model="gpt-4.1-2025-04-14")
        assert got.text == "server A"
        monkeypatch.setenv("OPENAI_BASE_URL", b.url + "/v1")
        got, run = _chat(get_provider("openai"), tmp_path, model="gpt-4.1-2025-04-14")
        assert got.text == "server B" and run.sent == 1 and b.chat_calls == 1
    finally:
        a.stop()
        b.stop()


@pytest.mark.parametrize("name,var", [("anthropic", "ANTHROPIC_BASE_URL"), ("gemini", "GEMINI_BASE_URL")])
def test_every_hosted_provider_names_the_address_from_the_environment(name, var, monkeypatch):
    monkeypatch.setenv(var, "http://127.0.0.1:9/a")
    first = StageRunner("judge", get_provider(name, api_key="k"), progress=False).identity_key()
    monkeypatch.setenv(var, "http://127.0.0.1:9/b")
    assert StageRunner("judge", get_provider(name, api_key="k"), progress=False).identity_key() != first
    monkeypatch.delenv(var)
    given = get_provider(name, api_key="k", base_url="http://127.0.0.1:9/a")
    assert StageRunner("judge", given, progress=False).identity_key() == first  # given or from the environment


def test_a_vllm_server_serving_another_model_at_the_same_url_gets_its_own_cache_entries(tmp_path):
    """The server at one address is restarted with another model: its answers are not the old model's."""
    (srv,) = _servers(1)
    served = {"model": "Qwen/Qwen3-14B", "text": "first model"}
    route = srv.route

    def answer(method, path, raw, headers, full_path):
        if method == "GET" and path == "/v1/models":
            return 200, {"object": "list", "data": [{"id": served["model"], "object": "model"}]}, "application/json"
        return route(method, path, raw, headers, full_path)

    srv.route = answer
    srv.reshape = lambda body: {**body, "choices": [{**body["choices"][0], "message": {
        **body["choices"][0]["message"], "content": served["text"]}}]}
    try:
        got, _ = _chat(get_provider("vllm", base_url=srv.url + "/v1"), tmp_path)
        assert got.text == "first model"
        served.update(model="meta-llama/Llama-3.1-8B-Instruct", text="second model")
        got, run = _chat(get_provider("vllm", base_url=srv.url + "/v1"), tmp_path)
        assert got.text == "second model" and run.sent == 1
        got, run = _chat(get_provider("vllm", base_url=srv.url + "/v1"), tmp_path)  # the same model again
        assert got.text == "second model" and run.sent == 0 and run.cached == 1
    finally:
        srv.stop()


def test_a_replaced_gguf_file_at_the_same_path_is_another_identity(tmp_path):
    from gavel.llm.providers.local import LocalServer

    path = tmp_path / "model.gguf"
    path.write_bytes(b"GGUF first model")
    first = StageRunner("judge", LocalServer(model_path=path), progress=False).identity_key()
    assert StageRunner("judge", LocalServer(model_path=path), progress=False).identity_key() == first
    tmp = tmp_path / "other.gguf"
    tmp.write_bytes(b"GGUF another model")
    os.replace(tmp, path)
    assert StageRunner("judge", LocalServer(model_path=path), progress=False).identity_key() != first


def test_the_mock_providers_cache_keys_are_unchanged():
    """Keys computed before issue 27 (the mock's identity has no address): recorded runs stay valid."""
    from gavel.llm.providers.mock import MockProvider

    req = Request(stage="judge", model="m", case_id="c1", item="filing_date",
                  messages=[{"role": "user", "content": "case 1"}])
    assert MockProvider().identity() == {"provider": "mock", "kind": "MockProvider", "base_url": None}
    assert StageRunner("judge", MockProvider(), progress=False).key(req) == KEY_BEFORE


KEY_BEFORE = "judge-8912173b2f6e2b527ac7487d39dc7b0765f39f7d"  # computed by the code before issue 27


# ---------------------------------------------------------------- 6. a reserved name
@pytest.mark.parametrize("how", ["jsonl", "name", "file"])
def test_summaries_named_human_are_refused_naming_the_file(how, tmp_path, capsys):
    s, r = inputs(tmp_path, model="human" if how == "jsonl" else "m")
    if how == "file":
        s = tmp_path / "human.json"
        s.write_text(json.dumps({"1": SUMMARY}))
    extra = ["--name", "human"] if how == "name" else []
    rc = main(["evaluate", "--summaries", str(s), "--references", str(r), "--provider", "mock",
               "--out", str(tmp_path / "out"), "--items", "filing_date", *extra])
    err = capsys.readouterr().err
    assert rc == 2 and "Traceback" not in err
    assert str(s) in err and "reserved" in err
    assert not (tmp_path / "out" / "scores.csv").exists()


def test_the_pipeline_api_keeps_a_human_subject_apart(tmp_path):
    from gavel.runs import pipeline

    settings = pipeline.Settings(extractor=QWEN, judge=QWEN, items=(ITEMS[0],))
    tables = pipeline.evaluate([("human", "1", SUMMARY), ("m", "1", SUMMARY)], {"1": REFERENCE},
                               pipeline.provider("mock"), tmp_path, settings)
    assert set(tables["scores"]["subject"]) == {"m"}
    assert any("reserved" in p for p in tables["problems"]["problem"])


# ---------------------------------------------------------------- 7. numeric options
@pytest.mark.parametrize("argv", [
    ["stage", "--concurrency", "0"], ["stage", "--concurrency", "-1"], ["stage", "--max-attempts", "0"],
    ["stage", "--poll-interval", "0"], ["stage", "--lock-timeout", "-1"],
    ["evaluate", "--alpha", "1.5"], ["evaluate", "--alpha", "-0.1"], ["evaluate", "--alpha", "nan"],
    ["evaluate", "--max-tokens", "-5"], ["evaluate", "--max-tokens", "0"], ["evaluate", "--repeats", "0"],
    ["evaluate", "--seed", "-1"],
    ["documents", "patterns", "--timeout", "0"], ["documents", "agent", "x", "--max-steps", "0"],
    ["annotate", "serve", "--port", "70000"], ["annotate", "serve", "--threads", "0"],
    ["annotate", "assign", "a", "--k", "0"],
])
def test_every_numeric_option_is_checked_before_anything_is_sent(argv, tmp_path, capsys):
    base = {"stage": ["--requests", str(tmp_path / "r.jsonl"), "--provider", "mock"],
            "evaluate": ["--summaries", "s.jsonl", "--provider", "mock", "--out", str(tmp_path / "o")],
            "documents": ["--provider", "mock", "--model", QWEN] if argv[1] == "agent" else [],
            "annotate": []}[argv[0]]
    with pytest.raises(SystemExit) as stop:
        main([*argv, *base])
    err = capsys.readouterr().err
    assert stop.value.code == 2 and argv[-2] in err and "Traceback" not in err
    assert not (tmp_path / "o").exists()


def test_the_library_refuses_the_same_values():
    from gavel.llm.providers.mock import MockProvider
    from gavel.runs import pipeline

    for kw in ({"concurrency": 0}, {"max_attempts": 0}):
        with pytest.raises(ValueError, match=next(iter(kw))):
            StageRunner("judge", MockProvider(), **kw)
    with pytest.raises(ValueError, match="alpha"):
        pipeline.Settings(extractor=QWEN, judge=QWEN, alpha=2)
    with pytest.raises(ValueError, match="max_tokens"):
        pipeline.Settings(extractor=QWEN, judge=QWEN, max_tokens=-3)


def test_option_types_accept_their_range():
    from gavel.core import options

    assert options.positive_int("3") == 3 and options.fraction("1") == 1.0 and options.non_negative_int("0") == 0
    assert options.port("0") == 0 and options.seed("4294967295") == 2**32 - 1


# ---------------------------------------------------------------- 8. hostile files
def test_a_non_utf8_env_file_is_one_error_line_naming_it(tmp_path):
    (tmp_path / ".env").write_bytes(b"GAVEL_RELEASE=/nowhere\nOPENAI_API_KEY=caf\xe9\n")
    done = run_gavel("audit", env={"GAVEL_HOME": str(tmp_path), "GAVEL_RELEASE": ""}, cwd=tmp_path)
    line = one_line(done.stderr)
    assert done.returncode == 2 and ".env, line 2" in line and "UTF-8" in line


def test_a_deeply_nested_metadata_file_is_a_corpus_error_naming_it(tmp_path):
    from gavel.documents.corpus import CorpusError, load_folder

    (tmp_path / "metadata.json").write_text("[" * 200_000 + "]" * 200_000)
    with pytest.raises(CorpusError, match="metadata.json: JSON nested too deeply"):
        load_folder(tmp_path)
    with pytest.raises(CorpusError, match="nested too deeply"):
        from gavel.documents.corpus import load_full_case_data

        load_full_case_data(tmp_path / "metadata.json")


def test_a_deeply_nested_summaries_file_is_named_and_skipped(tmp_path, capsys):
    s, r = inputs(tmp_path)
    deep = tmp_path / "deep.json"
    deep.write_text('{"1": ' + "[" * 200_000 + "]" * 200_000 + "}")
    deep_lines = tmp_path / "deep.jsonl"
    deep_lines.write_text('{"case_id": "1", "model": "d", "summary": ' + "[" * 200_000 + "]" * 200_000 + "}\n")
    rc = main(["evaluate", "--summaries", str(deep), str(deep_lines), str(s), "--references", str(r),
               "--provider", "mock", "--out", str(tmp_path / "out"), "--items", "filing_date"])
    err = capsys.readouterr().err
    assert rc == 0 and "Traceback" not in err
    too_deep = "JSON nested too deeply to read"
    assert f"skipped {deep}: {too_deep}" in err and f"{deep_lines}, line 1: {too_deep}" in err
    assert (tmp_path / "out" / "scores.csv").exists()


def test_an_oversize_summary_is_skipped_with_a_message_before_any_request(tmp_path, capsys):
    from gavel.runs import pipeline

    s, r = inputs(tmp_path)
    big = tmp_path / "big.jsonl"
    big.write_text(json.dumps({"case_id": "1", "model": "big", "summary": "word " * (pipeline.MAX_SUMMARY_CHARS // 5 + 1)}) + "\n")
    rc = main(["evaluate", "--summaries", str(big), str(s), "--references", str(r), "--provider", "mock",
               "--out", str(tmp_path / "out"), "--items", "filing_date"])
    err = capsys.readouterr().err
    assert rc == 0 and f"{big}, line 1: summary of" in err and "over the limit" in err
    import pandas as pd

    assert list(pd.read_csv(tmp_path / "out" / "scores.csv")["subject"]) == ["m"]


def test_a_search_touches_only_the_documents_it_found_something_in():
    """A search over a big corpus tokenises (and maps offsets of) no document without a match."""
    from gavel.documents.corpus import Corpus
    from gavel.documents.store import AgentStore
    from gavel.documents.tools import Workspace

    texts = ["needle in this one. " * 10] + [f"plain text number {i}. " * 200 for i in range(20)]
    ws = Workspace(Corpus.build("c", texts, [f"Doc {i}" for i in range(len(texts))]), AgentStore(["unused"]),
                   clock=lambda: None)
    try:
        outcome = ws.call("search_document_regex", {"pattern": "needle"}, 1)
        assert outcome.result["matches_found"] == 10
        touched = [d.name for d in ws.corpus.documents if "offsets" in d.__dict__]
        assert touched == ["Doc 0"], touched
    finally:
        ws.close()


def test_a_killed_run_leaves_no_lock_the_next_run_waits_on(tmp_path):
    """A runner killed while it holds the workdir: the next run starts at once, and leaves no lock file."""
    from gavel.llm.providers.mock import MockProvider

    holder = subprocess.Popen([sys.executable, "-c", (
        "import sys, time\nfrom gavel.llm.providers.mock import MockProvider\n"
        "from gavel.llm.runner import StageRunner\n"
        f"r = StageRunner('judge', MockProvider(), {str(tmp_path)!r}, progress=False)\n"
        "with r.locked():\n    print('held', flush=True)\n    time.sleep(600)\n")],
        stdout=subprocess.PIPE, text=True, cwd=REPO)
    try:
        assert holder.stdout.readline().strip() == "held"
        assert (tmp_path / "runner.lock").exists()
        os.kill(holder.pid, signal.SIGKILL)
        holder.wait(timeout=30)
    finally:
        if holder.poll() is None:
            holder.kill()
            holder.wait()
    runner = StageRunner("judge", MockProvider(), tmp_path, progress=False, lock_timeout=0)
    req = Request(stage="judge", model="m", case_id="c1", item="filing_date",
                  messages=[{"role": "user", "content": "case 1"}])
    started = time.monotonic()
    report = runner.run([req], mode="online")
    assert report.sent == 1 and time.monotonic() - started < 60
    assert not (tmp_path / "runner.lock").exists()
