"""Structured output on the wire: each provider's request body carries the stage's answer schema in that
provider's own form, checked as its fake server received it; finish reasons are normalised."""

import json

import pytest
from fakes.anthropic_fake import FakeAnthropic
from fakes.gemini_fake import FakeGemini
from fakes.openai_fake import FakeOpenAI

from gavel.llm import Request
from gavel.llm.providers import get_provider
from gavel.llm.providers.anthropic_batch import parse_message
from gavel.llm.providers.gemini_batch import parse_generate
from gavel.llm.providers.openai_batch import chat_body, parse_chat
from gavel.ref.stages import compare, extract

KEY = "sk-test-structured-0000000000"


def schema_request(model, schema=extract.SCHEMA):
    return Request(stage="extract", model=model, case_id="1", item="filing_date", subject="m", schema=schema,
                   messages=[{"role": "system", "content": "Extract."}, {"role": "user", "content": "summary"}])


def _submitted(provider, srv, request):
    p = get_provider(provider, base_url=srv.url + ("/v1" if provider == "openai" else ""), api_key=KEY)
    p.submit([request], "t")
    if provider == "openai":
        content = next(v for k, v in srv.files.items())
        return json.loads(content.decode().splitlines()[0])["body"]
    if provider == "anthropic":
        return next(iter(srv.batches.values()))["_requests"][0]["params"]
    return next(iter(srv.batches.values()))["requests"][0]["request"]


def test_openai_sends_strict_json_schema():
    with FakeOpenAI() as srv:
        body = _submitted("openai", srv, schema_request("gpt-4.1-2025-04-14"))
    fmt = body["response_format"]
    assert fmt["type"] == "json_schema" and fmt["json_schema"]["strict"] is True
    assert fmt["json_schema"]["name"] == "checklist_item" and fmt["json_schema"]["schema"] == extract.SCHEMA["schema"]


def test_anthropic_forces_a_tool_with_the_schema_unless_thinking():
    with FakeAnthropic() as srv:
        body = _submitted("anthropic", srv, schema_request("claude-sonnet-4-20250514-thinking"))
    # the registry gives Claude Sonnet 4 extended thinking: a forced tool is not allowed with it
    assert "tool_choice" not in body and body["thinking"]["type"] == "enabled"
    plain = Request(**{**schema_request("claude-sonnet-4-20250514-thinking").__dict__,
                       "params": {"thinking_budget_tokens": 0}})
    with FakeAnthropic() as srv:
        body = _submitted("anthropic", srv, plain)
    assert body["tool_choice"] == {"type": "tool", "name": "checklist_item"}
    # an extraction request (summary, then item, as two user messages) carries a cache breakpoint after the summary
    from gavel.ref.stages import extract as ex

    req = ex.build_requests([ex.Summary("m", "1", "The summary.")], "claude-sonnet-4-20250514-thinking")[0]
    sent = get_provider("anthropic", api_key=KEY).body(req)
    assert sent["messages"][0]["content"][0]["cache_control"] == {"type": "ephemeral"}
    assert "The summary." in sent["messages"][0]["content"][0]["text"] and sent["messages"][1]["role"] == "user"
    assert body["tools"][0]["input_schema"] == extract.SCHEMA["schema"]
    # a tool_use answer is read as the JSON text of its input
    msg = {"content": [{"type": "tool_use", "name": "checklist_item", "input": {"reasoning": "r", "extracted": []}}],
           "stop_reason": "tool_use", "usage": {"input_tokens": 5, "output_tokens": 3}}
    resp = parse_message("x", msg, "anthropic")
    assert json.loads(resp.text) == {"reasoning": "r", "extracted": []} and resp.finish_reason == "stop"
    assert parse_message("x", {"content": [], "stop_reason": "max_tokens"}, "anthropic").truncated


def test_gemini_sends_response_json_schema():
    with FakeGemini() as srv:
        body = _submitted("gemini", srv, schema_request("gemini-2.5-flash", compare.MULTI_SCHEMA))
    cfg = body.get("generationConfig") or body.get("generation_config") or body.get("config")
    assert cfg["responseMimeType"] == "application/json"
    assert cfg["responseJsonSchema"] == compare.MULTI_SCHEMA["schema"]
    resp = parse_generate("x", {"candidates": [{"content": {"parts": [{"text": "{"}]}, "finish_reason": "MAX_TOKENS"}]},
                          "gemini")
    assert resp.truncated


def test_vllm_server_receives_structured_outputs():
    from fakes.vllm_fake_server import FakeVLLM

    with FakeVLLM() as srv:
        p = get_provider("vllm", base_url=srv.url + "/v1")
        resp = p.complete(schema_request("Qwen3-32B", compare.SINGLE_SCHEMA))
        body = srv.chat_bodies[-1]
    assert resp.ok and body["structured_outputs"] == {"json": compare.SINGLE_SCHEMA["schema"]}
    assert body["model"] == "Qwen/Qwen3-32B" and "response_format" not in body


def test_vllm_sends_structured_outputs_and_requests_without_schema_send_none():
    r = schema_request("Qwen3-32B")
    body = chat_body(r, "Qwen/Qwen3-32B", {}, vllm=True)
    assert body["structured_outputs"] == {"json": extract.SCHEMA["schema"]} and "response_format" not in body
    bare = Request(stage="x", model="Qwen3-32B", messages=r.messages)
    assert "structured_outputs" not in chat_body(bare, "m", {}, vllm=True)
    assert "response_format" not in chat_body(bare, "m", {})


@pytest.mark.parametrize("reason,expected", [("length", True), ("stop", False)])
def test_openai_finish_reason_marks_truncation(reason, expected):
    body = {"choices": [{"message": {"content": "{"}, "finish_reason": reason}], "usage": {}}
    assert parse_chat("x", body, "openai").truncated is expected
