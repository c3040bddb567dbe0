"""CaseGen-style judge (gavel.metrics.casegen_judge): criteria from YAML, structured output on the wire of
every provider's fake server, good answers scored, bad answers recorded with their reason and not scored."""

from __future__ import annotations

import json

import pytest
from fakes import anthropic_fake, gemini_fake, openai_fake
from fakes.anthropic_fake import FakeAnthropic
from fakes.gemini_fake import FakeGemini
from fakes.openai_fake import FakeOpenAI

from gavel.llm.providers import get_provider
from gavel.llm.records import Response
from gavel.llm.runner import StageRunner
from gavel.metrics import casegen_judge as cj

KEY = "sk-test-judge-0000000000"
CRIT = cj.load_criteria()
GOOD = {"reasoning": "Misses the settlement; otherwise accurate.",
        "scores": {k: 6 for k in CRIT.keys}, "overall": 6}


def ok(text, finish="stop"):
    return Response(custom_id="x", status="succeeded", text=text, finish_reason=finish)


def test_shipped_criteria_and_schema_put_reasoning_first():
    assert CRIT.name == "legal_summary" and len(CRIT.keys) == 5 and "factual_accuracy" in CRIT.keys
    schema = CRIT.schema()["schema"]
    assert list(schema["properties"]) == ["reasoning", "scores", "overall"]
    assert schema["properties"]["scores"]["required"] == CRIT.keys


def test_malformed_criteria_file_names_the_file(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text("name: x\ncriteria:\n  - label: no key\n")
    with pytest.raises(ValueError, match="bad.yaml: not a criteria file"):
        cj.load_criteria(bad)
    for tagged in ("name: !!timestamp x\n", "name: !!bool maybe\n", "name: !!set [1]\n"):  # PyYAML's own crashes
        bad.write_text(tagged)
        with pytest.raises(ValueError, match="bad.yaml: not a criteria file"):
            cj.load_criteria(bad)
    dup = tmp_path / "dup.yaml"
    dup.write_text("name: x\ncriteria:\n  - {key: a, label: A, description: d}\n  - {key: a, label: B, description: d}\n")
    with pytest.raises(ValueError, match="distinct keys"):
        cj.load_criteria(dup)


def test_prompt_carries_criteria_reference_and_candidate():
    (req, meta), = cj.build_requests([("gpt-5", "c1", "CANDIDATE TEXT", "REFERENCE TEXT")], "gpt-4.1-2025-04-14")
    text = "\n".join(m["content"] for m in req.messages)
    assert "REFERENCE TEXT" in text and "CANDIDATE TEXT" in text and "Legal accuracy" in text
    assert text.index("REFERENCE TEXT") < text.index("CANDIDATE TEXT")
    assert req.schema == CRIT.schema() and meta == {"subject": "gpt-5", "case_id": "c1", "criteria": "legal_summary"}


@pytest.mark.parametrize("text,finish,status", [
    ("Here is my view: it is good.", "stop", "no_json"),
    (json.dumps({**GOOD, "scores": {**GOOD["scores"], "completeness": 11}}), "stop", "schema"),
    (json.dumps({**GOOD, "scores": {k: 5 for k in CRIT.keys[:-1]}}), "stop", "schema"),
    (json.dumps({**GOOD, "overall": 6.5}), "stop", "schema"),
    (json.dumps(GOOD)[:40], "length", "truncated"),
])
def test_bad_answers_are_recorded_not_scored(text, finish, status):
    row = cj.parse_response({"subject": "m"}, ok(text, finish))
    assert row["status"] == status and row["overall"] is None and all(row[k] is None for k in CRIT.keys)
    failed = cj.parse_response({"subject": "m"}, Response(custom_id="x", status="errored", error="boom"))
    assert failed["status"] == "failed" and failed["detail"] == "boom"


def test_good_answer_is_scored_even_in_a_fenced_block():
    row = cj.parse_response({"subject": "m"}, ok("Reasoning...\n```json\n" + json.dumps(GOOD) + "\n```"))
    assert row["status"] == "ok" and row["overall"] == 6 and row["completeness"] == 6
    assert row["reasoning"].startswith("Misses")


def _scripted(monkeypatch, module, fn_name, getter, answers):
    """Make a fake server answer ``answers[custom_id]`` instead of its echo."""
    original = getattr(module, fn_name)

    def patched(key, *args, **kwargs):
        body = original(key, *args, **kwargs)
        container, field = getter(body)
        container[field] = answers.get(key, "no answer scripted")
        return body
    monkeypatch.setattr(module, fn_name, patched)


FAKES = {
    "openai": (FakeOpenAI, openai_fake, "completion", lambda b: (b["choices"][0]["message"], "content"),
               "gpt-4.1-2025-04-14"),
    "anthropic": (FakeAnthropic, anthropic_fake, "message", lambda b: (b["content"][-1], "text"),
                  "claude-sonnet-4-20250514-thinking"),
    "gemini": (FakeGemini, gemini_fake, "generate_response",
               lambda b: (b["candidates"][0]["content"]["parts"][-1], "text"), "gemini-2.5-flash"),
}


@pytest.mark.parametrize("provider", list(FAKES))
def test_judge_through_each_providers_fake_server(provider, tmp_path, monkeypatch):
    server_cls, module, fn, getter, model = FAKES[provider]
    jobs = cj.build_requests([("m1", "c1", "A good summary.", "The reference."),
                              ("m2", "c1", "A poor summary.", "The reference.")], model)
    answers = {jobs[0][0].custom_id: json.dumps(GOOD), jobs[1][0].custom_id: '{"overall": "great"}'}
    _scripted(monkeypatch, module, fn, getter, answers)
    with server_cls() as srv:
        p = get_provider(provider, base_url=srv.url + ("/v1" if provider == "openai" else ""), api_key=KEY)
        report = StageRunner(cj.STAGE, p, tmp_path / "run", poll_interval=0.01, progress=False).run(
            [r for r, _ in jobs])
    rows = [cj.parse_response(meta, report.responses[req.custom_id]) for req, meta in jobs]
    assert rows[0]["status"] == "ok" and rows[0]["overall"] == 6
    assert rows[1]["status"] == "schema" and rows[1]["overall"] is None


@pytest.mark.parametrize("provider", ["openai", "gemini"])
def test_schema_is_sent_as_structured_output(provider):
    server_cls, _, _, _, model = FAKES[provider]
    (req, _), = cj.build_requests([("m1", "c1", "A summary.", "The reference.")], model)
    with server_cls() as srv:
        p = get_provider(provider, base_url=srv.url + ("/v1" if provider == "openai" else ""), api_key=KEY)
        p.submit([req], "t")
        if provider == "openai":
            body = json.loads(next(iter(srv.files.values())).decode().splitlines()[0])["body"]
            assert body["response_format"]["json_schema"]["schema"] == CRIT.schema()["schema"]
        else:
            cfg = next(iter(srv.batches.values()))["requests"][0]["request"]["generationConfig"]
            assert cfg["responseJsonSchema"] == CRIT.schema()["schema"]
