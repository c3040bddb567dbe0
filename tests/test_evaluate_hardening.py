"""Issue 20, points 12-16: `gavel evaluate`, the runner's exits and the providers' response readers.

12. a run whose requests failed exits non-zero and says how many failed, by stage, and why
13. bad input to `evaluate` is one `error:` line (exit 2), a bad summaries file is skipped and named while
    the good ones are evaluated, and the dry run lists the requests too long for the context window
14. every provider's response reader turns missing or null fields into a failed answer with a reason
15. the mock provider's bookkeeping is linear in the number of requests (counted, not timed)
16. notebook 11 with every request failed runs to the end and shows the failures

The failing provider is the fake OpenAI server of tests/fakes answering 401 (the SDK does not retry it)."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pandas as pd
import papermill as pm
import pytest
from fakes.anthropic_fake import FakeAnthropic
from fakes.gemini_fake import FakeGemini
from fakes.openai_fake import FakeOpenAI

from gavel.cli import main
from gavel.core import config
from gavel.llm import Request, records
from gavel.llm.providers import get_provider
from gavel.llm.providers.anthropic_batch import parse_message
from gavel.llm.providers.base import ProviderError
from gavel.llm.providers.gemini_batch import parse_generate
from gavel.llm.providers.mock import MockProvider
from gavel.llm.providers.openai_batch import parse_chat
from gavel.llm.runner import StageRunner

REPO = Path(__file__).resolve().parent.parent
KEY = "sk-evaluate-hardening-key-5151515151"
GPT = "gpt-4.1-2025-04-14"
SUMMARY = "The plaintiffs filed the complaint in 2019. The court approved a settlement in 2021."
REFERENCE = "The complaint was filed in 2019; the court approved the parties' settlement in 2021."


def inputs(folder: Path) -> tuple[Path, Path]:
    """One summary of case 1 (by "m") and its reference, written once per test folder."""
    s, r = folder / "s.jsonl", folder / "refs.json"
    if not s.exists():
        s.write_text(json.dumps({"case_id": "1", "model": "m", "summary": SUMMARY}) + "\n")
        r.write_text(json.dumps({"1": REFERENCE}))
    return s, r


def evaluate(tmp_path, *extra, summaries=None, references=None, provider="mock", items=("filing_date",)):
    s, r = inputs(tmp_path)
    argv = ["evaluate", "--summaries", *(summaries or [str(s)]), "--references", str(references or r),
            "--provider", provider, "--out", str(tmp_path / "out"), "--items", *items, *extra]
    return main(argv)


def one_error_line(err: str) -> str:
    lines = [x for x in err.strip().splitlines() if x.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: ") and "Traceback" not in err, err
    return lines[0]


# ---------------- 12. failures make the exit status ----------------

def test_evaluate_with_every_request_failed_exits_1_and_says_how_many_and_why(tmp_path):
    """Every call refused (401, not retried by the SDK): exit status 1 (was 0 with NaN scores), the count of
    failed requests by stage and the reason on stderr, the key nowhere (`stage` already exited 1)."""
    s, r = inputs(tmp_path)
    env = {**os.environ, "PYTHONPATH": str(REPO), "OPENAI_API_KEY": KEY}
    with FakeOpenAI() as srv:
        srv.reject_key = True
        done = subprocess.run([sys.executable, "-m", "gavel", "evaluate", "--summaries", str(s), "--references",
                               str(r), "--provider", "openai", "--base-url", srv.url + "/v1", "--extractor", GPT,
                               "--judge", GPT, "--items", "filing_date", "--out", str(tmp_path / "out")],
                              capture_output=True, text=True, timeout=600, env=env)
    assert done.returncode == 1, done.stdout + done.stderr
    # extract: the summary and its reference; residual: both; style: the summary (compare is gated: no values)
    assert "5 of 5 requests failed (no answer; not scored): extract 2, residual 2, style 1; why:" in done.stderr
    assert "5 x AuthenticationError" in done.stderr
    assert KEY[:12] not in done.stdout + done.stderr
    answers = pd.read_csv(tmp_path / "out" / "answers.csv")
    assert set(answers["status"]) == {"failed"}


def test_evaluate_that_got_every_answer_exits_0(tmp_path, capsys):
    assert evaluate(tmp_path) == 0
    assert "requests failed" not in capsys.readouterr().err


def test_evaluate_with_some_failures_counts_only_those(tmp_path, capsys, monkeypatch):
    from gavel.runs import pipeline

    real = pipeline.provider
    monkeypatch.setattr(pipeline, "provider", lambda name, base_url=None: real(
        name, base_url, fail=lambda r, attempt: r.stage == "style"))
    assert evaluate(tmp_path) == 1
    err = capsys.readouterr().err
    assert "1 of 6 requests failed (no answer; not scored): style 1; why:\n  1 x mock failure" in err


# ---------------- 13. one `error:` line; one bad file does not stop the good ones ----------------

@pytest.mark.parametrize("case, expected", [
    ("items", "error: unknown checklist item 'NoSuchItem': not one of the 26 GAVEL items"),
    ("extractor", "error: unknown model 'no-such-model'"),
    ("out", "cannot write there"),
    ("references", "not UTF-8 text (byte 0xe9 at offset"),
    ("no summaries", "error: no summaries to evaluate"),
])
def test_bad_evaluate_input_is_one_error_line_and_exit_2(case, expected, tmp_path, capsys):
    latin = tmp_path / "latin.json"
    latin.write_bytes('{"1": "The court\'s d\xe9cision of 2019."}'.encode("latin-1"))
    if case == "items":
        rc = evaluate(tmp_path, items=["NoSuchItem"])
    elif case == "extractor":
        rc = evaluate(tmp_path, "--extractor", "no-such-model", "--dry-run", provider="openai")
    elif case == "out":  # a folder that cannot be made or written (here: under a regular file)
        (tmp_path / "file").write_text("x")
        rc = main(["evaluate", "--summaries", str(inputs(tmp_path)[0]), "--references", str(tmp_path / "refs.json"),
                   "--provider", "mock", "--out", str(tmp_path / "file" / "out")])
    elif case == "references":
        rc = evaluate(tmp_path, references=latin)
    else:
        rc = evaluate(tmp_path, summaries=[str(latin), str(tmp_path / "missing.jsonl")])
    err = capsys.readouterr().err
    assert rc == 2
    if case == "no summaries":  # each bad file named on its own line, then the one error
        assert f"skipped {latin}: not UTF-8 text" in err and f"skipped {tmp_path / 'missing.jsonl'}: cannot read" in err
        err = err.splitlines()[-1]
    assert expected in one_error_line(err)


def test_unknown_provider_is_refused_in_one_line(capsys, tmp_path):
    with pytest.raises(SystemExit) as exited:
        evaluate(tmp_path, provider="bogus")
    assert exited.value.code == 2
    assert "argument --provider: invalid choice: 'bogus'" in capsys.readouterr().err
    with pytest.raises(ProviderError, match="unknown provider 'bogus'; known: openai"):
        get_provider("bogus")  # the notebooks' path: a ProviderError (still a ValueError)


def test_a_latin1_summaries_file_is_named_and_the_good_file_is_evaluated(tmp_path, capsys):
    latin = tmp_path / "latin.json"
    latin.write_bytes('{"1": "The court\'s d\xe9cision of 2019."}'.encode("latin-1"))
    rc = evaluate(tmp_path, summaries=[str(latin), str(tmp_path / "s.jsonl")])
    err = capsys.readouterr().err
    assert rc == 0 and "Traceback" not in err
    assert f"skipped {latin}: not UTF-8 text (byte 0xe9 at offset 20); save it as UTF-8" in err
    scores = pd.read_csv(tmp_path / "out" / "scores.csv", dtype={"case_id": str})
    assert list(scores["subject"]) == ["m"] and list(scores["case_id"]) == ["1"]


def test_a_device_is_not_read_as_summaries_and_the_good_file_is_evaluated(tmp_path, capsys):
    """--summaries /dev/zero was read until memory ran out; a device is refused by what was opened."""
    rc = evaluate(tmp_path, summaries=["/dev/zero", str(tmp_path / "s.jsonl")])
    err = capsys.readouterr().err
    assert rc == 0 and "skipped /dev/zero: not a file or a pipe (a device or socket); not read" in err


def test_a_jsonl_record_is_read_as_one_whatever_the_file_is_called(tmp_path, capsys):
    """A one-line JSONL file named .json, or given as <(cat x.jsonl) (a pipe without a name), was read as a
    {case_id: text} object: three "cases" named model, case_id and summary. A pipe is read as a file is."""
    s, _ = inputs(tmp_path)
    one = tmp_path / "record.json"
    one.write_text(s.read_text())
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    writer = subprocess.Popen([sys.executable, "-c", f"open({str(fifo)!r}, 'w').write(open({str(s)!r}).read())"])
    try:
        for given in (one, fifo):
            out = tmp_path / f"out-{given.name}"
            assert main(["evaluate", "--summaries", str(given), "--references", str(tmp_path / "refs.json"),
                         "--provider", "mock", "--items", "filing_date", "--out", str(out)]) == 0
            scores = pd.read_csv(out / "scores.csv", dtype={"case_id": str})
            assert list(scores["subject"]) == ["m"] and list(scores["case_id"]) == ["1"], given
    finally:
        writer.kill()
        writer.wait()
    capsys.readouterr()


def test_dry_run_lists_the_requests_too_long_for_the_context_window(tmp_path, capsys):
    """Qwen3-14B has a 131,072-token window: the long summary's extract and style requests are listed by
    stage, subject, case and item with the reason; the short one is priced."""
    s, r = inputs(tmp_path)
    with s.open("a") as fh:
        fh.write(json.dumps({"case_id": "1", "model": "long", "summary": "word " * 140_000}) + "\n")
    rc = evaluate(tmp_path, "--extractor", "Qwen3-14B", "--judge", "Qwen3-14B", "--base-url", "http://127.0.0.1:9/v1",
                  "--dry-run", provider="vllm")
    out = capsys.readouterr().out
    assert rc == 0
    assert "2 request(s) too long for the model's context window" in out
    assert "too long: extract long case 1 item filing_date: not sent: too long: prompt of" in out
    assert "too long: style long case 1: not sent: too long" in out
    assert "too long: extract m case" not in out


# ---------------- 14. providers' response readers: null or missing fields ----------------

RESHAPE = {  # an online answer with a field the answer needs set to null
    "anthropic": lambda body: {**body, "content": None},
    "openai": lambda body: {**body, "choices": [{**body["choices"][0], "message": {"role": "assistant",
                                                                                   "content": None}}]},
    "gemini": lambda body: {**body, "candidates": [{**body["candidates"][0], "content": None}]},
}
WHY = {"anthropic": "content is null", "openai": "choices[0].message.content is null",
       "gemini": "candidates[0].content is missing"}  # the SDK's model_dump(exclude_none) drops a null
MODELS = {"openai": GPT, "anthropic": "claude-sonnet-4-20250514-thinking", "gemini": "gemini-2.5-pro"}
FAKES = {"openai": FakeOpenAI, "anthropic": FakeAnthropic, "gemini": FakeGemini}


@pytest.mark.parametrize("provider", ["anthropic", "openai", "gemini"])
def test_a_200_answer_with_null_content_is_a_failed_answer_with_a_reason(provider, tmp_path):
    """Anthropic `content: null` raised TypeError out of the runner; OpenAI and Gemini returned a 'succeeded'
    answer with no text. Now: a failed answer naming the field; the run goes on."""
    rq = [Request(stage="judge", model=MODELS[provider], case_id=f"c{i}", item="filing_date",
                  messages=[{"role": "user", "content": f"case {i} id=judge{i}"}]) for i in range(2)]
    with FAKES[provider]() as srv:
        srv.reshape = RESHAPE[provider]
        p = get_provider(provider, base_url=srv.url + ("/v1" if provider == "openai" else ""), api_key=KEY)
        report = StageRunner("judge", p, tmp_path / "run", progress=False, max_attempts=1).run(rq, mode="online")
    assert sorted(report.failed) == sorted(r.custom_id for r in rq)
    for r in rq:
        resp = report.responses[r.custom_id]
        assert resp.status == "errored" and f"{provider}: unusable answer: {WHY[provider]}" in resp.error


@pytest.mark.parametrize("reader, body, why", [
    (parse_message, None, "the message is null"),
    (parse_message, {"stop_reason": "end_turn"}, "content is missing (stop_reason 'end_turn')"),
    (parse_message, {"content": None}, "content is null"),
    (parse_message, {"content": [None]}, "content block 0 is null"),
    (parse_message, {"content": [{"type": "text", "text": None}]}, "content block 0 (text): text is null"),
    (parse_message, {"content": [{"type": "tool_use", "name": "x"}]}, "content block 0 (tool_use): input is null"),
    (parse_chat, None, "the completion is null"),
    (parse_chat, {"choices": None}, "choices is null"),
    (parse_chat, {"choices": []}, "choices is empty"),
    (parse_chat, {"choices": [None]}, "choices[0] is null"),
    (parse_chat, {"choices": [{"finish_reason": "stop"}]}, "choices[0].message is missing"),
    (parse_chat, {"choices": [{"message": None}]}, "choices[0].message is null"),
    (parse_chat, {"choices": [{"message": {"content": None, "refusal": "I can't"}, "finish_reason": "stop"}]},
     "content is null (finish_reason 'stop'; refusal: I can't)"),
    (parse_chat, {"choices": [{"message": {"content": None, "tool_calls": [None]}}]}, "tool_calls is not a list"),
    (parse_chat, {"choices": [{"message": {"content": 5}}]}, "content is a int"),
    (parse_generate, None, "the answer is null"),
    (parse_generate, {"candidates": None}, "candidates is null"),
    (parse_generate, {"promptFeedback": {"blockReason": "SAFETY"}}, "candidates is missing (prompt feedback"),
    (parse_generate, {"candidates": [None]}, "candidates[0] is null"),
    (parse_generate, {"candidates": [{"content": None, "finishReason": "SAFETY"}]}, "content is null"),
    (parse_generate, {"candidates": [{"content": {"parts": None}}]}, "content.parts is null"),
    (parse_generate, {"candidates": [{"content": {"parts": [{"text": None}]}}]}, "parts[0].text is null"),
    (parse_generate, {"candidates": [{"content": {"parts": [None]}}]}, "parts[0] is null"),
    (parse_generate, {"candidates": [{"content": {"parts": [{"text": "ok"}]}, "finishReason": ["x"]}]}, None),
])
def test_every_reader_turns_missing_or_null_fields_into_a_failed_answer(reader, body, why):
    resp = reader("cid-1", body, "p")
    if why is None:  # a well-formed answer with an odd finish reason is still an answer
        assert resp.ok and resp.text == "ok" and resp.finish_reason is None
        return
    assert resp.status == "errored" and resp.custom_id == "cid-1", resp
    assert resp.error.startswith("p: unusable answer: ") and why in resp.error, resp.error


def test_batch_result_lines_with_null_fields_cost_only_their_request(tmp_path):
    """The same readers behind the vLLM run-batch file: a line whose body is null or has no choices is that
    request's failed answer; the good line is kept."""
    from gavel.llm.providers.vllm import VLLMServer

    rq = [Request(stage="judge", model="Qwen3-14B", case_id=str(i), messages=[{"role": "user", "content": str(i)}])
          for i in range(3)]
    good = {"choices": [{"message": {"content": "fine"}, "finish_reason": "stop"}]}
    lines = [{"custom_id": rq[0].custom_id, "response": {"status_code": 200, "body": None}},
             {"custom_id": rq[1].custom_id, "response": {"status_code": 200, "body": {"choices": None}}},
             {"custom_id": rq[2].custom_id, "response": {"status_code": 200, "body": good}}]
    path = tmp_path / "out.jsonl"
    path.write_text("".join(json.dumps(x) + "\n" for x in lines))
    got = {r.custom_id: r for r in VLLMServer(client=object()).read_run_batch(path, [r.custom_id for r in rq])}
    assert "the completion is null" in got[rq[0].custom_id].error
    assert "choices is null" in got[rq[1].custom_id].error
    assert got[rq[2].custom_id].ok and got[rq[2].custom_id].text == "fine"


# ---------------- 15. the mock provider is linear ----------------

def custom_id_computations(monkeypatch, n: int, mode: str, tmp_path) -> int:
    """How many custom_ids (a sha256 over the request) the runner and the mock compute for n requests."""
    calls = [0]
    real = records.make_custom_id

    def counting(*args, **kwargs):
        calls[0] += 1
        return real(*args, **kwargs)
    monkeypatch.setattr(records, "make_custom_id", counting)
    rq = [Request(stage="bench", model="mock-model", case_id=str(i), messages=[{"role": "user", "content": str(i)}])
          for i in range(n)]
    report = StageRunner("bench", MockProvider(), tmp_path / f"{mode}{n}", progress=False, poll_interval=0).run(
        rq, mode=mode)
    assert report.sent == n and not report.failed
    monkeypatch.setattr(records, "make_custom_id", real)
    return calls[0]


@pytest.mark.parametrize("mode", ["batch", "online"])
def test_mock_provider_work_grows_linearly_with_the_requests(mode, monkeypatch, tmp_path):
    """Counted, not timed: twice the requests cost at most about twice the hashing (the mock recomputed
    every earlier submission's custom_id for each answer: 10,000 requests took 326 s)."""
    small = custom_id_computations(monkeypatch, 100, mode, tmp_path)
    large = custom_id_computations(monkeypatch, 400, mode, tmp_path)
    assert large <= 4.2 * small, (small, large)
    assert large <= 12 * 400, large


# ---------------- 16. notebook 11 with every request failed ----------------

def test_evaluation_notebook_shows_the_failures_when_every_request_failed(tmp_path, monkeypatch):
    """The notebook ran into EmptyDataError (an empty values.csv); it now runs to the end and prints how
    many requests failed, by stage, and why."""
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    out = tmp_path / "ref"
    with FakeOpenAI() as srv:
        srv.reject_key = True
        done = pm.execute_notebook(
            str(config.REPO_ROOT / "notebooks" / "11_ref_evaluation.ipynb"), str(tmp_path / "11.out.ipynb"),
            parameters={"provider": "openai", "base_url": srv.url + "/v1", "extractor": GPT, "judge": GPT,
                        "items": ["Filing Date"], "out": str(out)},
            kernel_name="python3", progress_bar=False, cwd=str(config.REPO_ROOT / "notebooks"))
    shown = "".join(o.get("text", "") for c in done["cells"] if c["cell_type"] == "code" for o in c.get("outputs", []))
    assert "requests failed (no answer; not scored): extract" in shown
    assert "x AuthenticationError" in shown and KEY[:12] not in json.dumps(done)
    assert "EmptyDataError" not in json.dumps(done)


# ---------------- issue 37, 5: a first run tried as a new user would ----------------
def test_summaries_none_of_whose_cases_has_a_reference_name_every_case_and_point_to_references(tmp_path, capsys):
    s = tmp_path / "own.jsonl"
    s.write_text("".join(json.dumps({"case_id": c, "model": "m", "summary": SUMMARY}) + "\n" for c in ("7", "8")))
    assert evaluate(tmp_path, summaries=[str(s)]) == 2  # was: error: evaluate: KeyError: 'status', exit 1
    line = one_error_line(capsys.readouterr().err)
    assert "cases 7, 8" in line and "--references" in line and "KeyError" not in line
    problems = pd.read_csv(tmp_path / "out" / "problems.csv", dtype=str)
    assert sorted(problems["case_id"]) == ["7", "8"]
    assert set(problems["problem"]) == {"no usable reference summary for this case"}


def test_the_same_unknown_case_beside_a_good_one_is_reported_and_the_good_one_evaluated(tmp_path, capsys):
    s = tmp_path / "own.jsonl"
    s.write_text("".join(json.dumps({"case_id": c, "model": "m", "summary": SUMMARY}) + "\n" for c in ("1", "8")))
    assert evaluate(tmp_path, summaries=[str(s)]) == 0
    assert "skipped m case 8: no usable reference summary" in capsys.readouterr().err
    assert pd.read_csv(tmp_path / "out" / "scores.csv", dtype={"case_id": str})["case_id"].tolist() == ["1"]


def test_a_summary_line_without_model_is_said_to_take_the_files_name(tmp_path, capsys):
    s = tmp_path / "mine.jsonl"
    s.write_text(json.dumps({"case_id": "1", "summary": SUMMARY}) + "\n")
    assert evaluate(tmp_path, summaries=[str(s)]) == 0
    err = capsys.readouterr().err
    assert f'note: {s}: 1 line without "model" (line 1): named \'mine\' after the file' in err
    assert pd.read_csv(tmp_path / "out" / "scores.csv")["subject"].tolist() == ["mine"]


def test_a_file_mixing_lines_with_and_without_model_is_refused_from_python(tmp_path):
    from gavel.ref.inputs import InputError, read_summaries

    s = tmp_path / "mixed.jsonl"
    s.write_text(json.dumps({"case_id": "1", "model": "a", "summary": "x"}) + "\n"
                 + json.dumps({"case_id": "2", "summary": "y"}) + "\n")
    with pytest.raises(InputError, match=r'mixed.jsonl: 1 line without "model" \(line 2\)'):
        read_summaries(s)
    notes = []
    assert read_summaries(s, notes=notes) == [("a", "1", "x"), ("mixed", "2", "y")] and len(notes) == 1
