"""Structured output on the wire: each provider's request body carries the stage's answer schema in that
provider's own form, checked as its fake server received it; finish reasons are normalised."""

import json
from dataclasses import replace
from pathlib import Path

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


# ---------------------------------------------------------------- bounded schemas, per backend
LOCAL = "SmolLM2-135M-Instruct"  # its registry entry asks for bounded schemas
GOLDEN = Path(__file__).parent / "golden" / "structured_output_bounded.json"


def _bounded_requests(model):
    from gavel.answers import schemas

    params = {"thinking_budget_tokens": 0} if model.startswith("claude") else {}  # a forced tool: no thinking
    return {kind: replace(schema_request(model, schemas.bounded(kind)), params=params) for kind in schemas.PLAIN}


def _sent_schemas(provider, model):
    """{request kind: the answer schema as the provider's fake server received it} for the bounded schemas;
    every request answered (the fake takes the schema as the service documents it)."""
    out = {}
    for kind, request in _bounded_requests(model).items():
        if provider == "vllm":
            from fakes.vllm_fake_server import FakeVLLM

            with FakeVLLM() as srv:
                resp = get_provider("vllm", base_url=srv.url + "/v1").complete(request)
                out[kind] = srv.chat_bodies[-1]["structured_outputs"]["json"]
            assert resp.ok, resp.error
            continue
        if provider == "local":
            from gavel.llm.providers.local import LocalServer

            out[kind] = LocalServer().native_body(request, LOCAL, {})["response_format"]["schema"]
            continue
        fake = {"openai": FakeOpenAI, "anthropic": FakeAnthropic, "gemini": FakeGemini}[provider]
        with fake() as srv:
            p = get_provider(provider, base_url=srv.url + ("/v1" if provider == "openai" else ""), api_key=KEY)
            batch = p.submit([request], "t")
            for _ in range(10):
                if p.poll(batch).ended:
                    break
            (resp,) = p.fetch(batch, [request.custom_id])
            assert resp.ok, resp.error  # the fake took the schema
            body = _submitted(provider, srv, request)
        if provider == "openai":
            out[kind] = body["response_format"]["json_schema"]["schema"]
        elif provider == "anthropic":
            out[kind] = body["tools"][0]["input_schema"]
        else:
            cfg = body.get("generationConfig") or body.get("config")
            out[kind] = cfg["responseJsonSchema"]
    return out


MODELS = {"openai": "gpt-4.1-2025-04-14", "anthropic": "claude-sonnet-4-20250514-thinking", "gemini": "gemini-2.5-flash",
          "vllm": "Qwen3-32B", "local": LOCAL}


@pytest.mark.parametrize("provider", list(MODELS))
def test_each_backend_is_sent_the_bounded_schemas_it_takes_golden(provider):
    """Golden: the bounded schemas exactly as each provider's request carries them (tests/golden/
    structured_output_bounded.json), and none holds a keyword that provider's documented subset lacks."""
    from fakes.schema_rules import problems

    sent = _sent_schemas(provider, MODELS[provider])
    golden = json.loads(GOLDEN.read_text())[provider]
    assert sent == golden
    rules = "vllm" if provider == "local" else provider
    assert all(problems(s, rules) == [] for s in sent.values()), {k: problems(s, rules) for k, s in sent.items()}
    text = json.dumps(sent)
    lengths, counts = '"maxLength"' in text, '"maxItems"' in text
    assert (lengths, counts) == {"openai": (False, True), "gemini": (False, True), "anthropic": (False, False),
                                 "vllm": (True, True), "local": (True, True)}[provider]


def test_the_fakes_refuse_what_the_services_refuse():
    """Sent whole, a bounded schema is refused by the OpenAI and Gemini fakes (string lengths) and the
    Anthropic fake (lengths and counts), as the services document; so the golden test above would fail
    on a provider that sent it unfiltered."""
    from fakes.schema_rules import problems

    from gavel.answers import schemas

    whole = schemas.bounded("extract")["schema"]
    assert any("maxLength" in p for p in problems(whole, "openai"))
    assert any("maxLength" in p for p in problems(whole, "gemini"))
    assert any("maxItems" in p for p in problems(whole, "anthropic"))
    assert problems(whole, "vllm") == []
    with FakeOpenAI() as srv:  # online, unfiltered: a 400 naming the keyword
        import openai

        client = openai.OpenAI(base_url=srv.url + "/v1", api_key=KEY, max_retries=0)
        with pytest.raises(openai.BadRequestError, match="maxLength"):
            client.chat.completions.create(model="gpt-4.1", messages=[{"role": "user", "content": "x"}],
                                           response_format={"type": "json_schema", "json_schema": {
                                               "name": "x", "schema": whole, "strict": True}})


def test_paper_models_get_the_plain_schemas_unchanged_and_local_models_the_bounded():
    """The paper's requests (and their cache keys) do not move: every provider is sent a plain schema as the
    same object; only a model whose registry entry asks for bounds gets them."""
    from gavel.answers import schemas
    from gavel.llm.schema_subset import TAKES, for_provider

    for plain in schemas.PLAIN.values():
        for provider in set(TAKES) - {"anthropic-json"}:  # JSON outputs: no paper model sends them
            assert for_provider(plain["schema"], provider) is plain["schema"]
    s = extract.Summary("m", "1", "The summary.")
    assert extract.build_requests([s], "gpt-4.1-2025-04-14")[0].schema is schemas.PLAIN["extract"]
    assert extract.build_requests([s], LOCAL)[0].schema == schemas.bounded("extract")
    assert extract.build_requests([s], "a-model-the-registry-does-not-know")[0].schema is schemas.PLAIN["extract"]
    # a list matching's indices are held to the two lists' sizes
    multi = schemas.for_model("compare_multi", LOCAL, 2, 3)["schema"]["properties"]
    assert multi["only_in_B"]["items"]["enum"] == [1, 2, 3] and multi["only_in_A"]["maxItems"] == 2


def test_an_answer_at_every_bound_is_read_whole():
    """The bounds are what an answer needs: an answer filling every one is read, values and all."""
    from gavel.answers import read, schemas

    b = schemas.BOUNDS
    snippet = ("word " * 200)[:b["evidence"]].strip()
    summary = snippet + ". Other text."
    answer = {"reasoning": "r" * b["reasoning"],
              "extracted": [{"evidence": [snippet] * b["snippets"], "value": f"v{i}" + "x" * (b["value"] - 2)}
                            for i in range(b["values"])]}
    import jsonschema

    jsonschema.validate(answer, schemas.bounded("extract")["schema"])
    reading = read("extract", json.dumps(answer), "stop", summary=summary)
    assert len(reading["extracted"]) == b["values"] and not reading["dropped"]


# ---------------------------------------------------------------- issue 45 §2: each provider's documented keywords
#: the fake's rules each provider's requests are held to (vLLM: as a server started with backend=xgrammar)
RULES = {"openai": "openai", "gemini": "gemini", "anthropic": "anthropic", "anthropic-json": "anthropic-json",
         "vllm": "vllm-xgrammar", "vllm-batch": "vllm-xgrammar", "local": "vllm"}
BOUNDS_KEYS = ("minLength", "maxLength", "minItems", "maxItems", "minimum", "maximum", "pattern")


def _every_schema():
    """Every answer schema gavel can send: each stage's plain and bounded form, the list matching's bounded
    form held to its two list sizes."""
    from gavel.answers import schemas

    out = {f"{k}/plain": v["schema"] for k, v in schemas.PLAIN.items()}
    out |= {f"{k}/bounded": schemas.bounded(k)["schema"] for k in schemas.PLAIN}
    out["compare_multi/bounded 2x3"] = schemas.for_model("compare_multi", LOCAL, 2, 3)["schema"]
    return out


def _nodes(schema, where=""):
    """(path, node) of every value schema in ``schema``."""
    yield where or "/", schema
    for name, sub in schema.get("properties", {}).items():
        yield from _nodes(sub, f"{where}/{name}")
    if isinstance(schema.get("items"), dict):
        yield from _nodes(schema["items"], f"{where}/items")


@pytest.mark.parametrize("provider", list(RULES))
def test_every_request_stays_inside_its_providers_table_and_says_what_it_cannot_send(provider):
    """Every schema gavel can send, plain and bounded, holds only keywords its provider documents
    (schema_subset.TAKES, checked by the fakes' own rules); a bound the provider does not take is in the
    field's description (or, on OpenAI, a string length is a pattern), never dropped silently; no string
    carries both a pattern and a length for vLLM."""
    from fakes.schema_rules import problems

    from gavel.llm.schema_subset import for_provider, takes

    for name, schema in _every_schema().items():
        sent = for_provider(schema, provider)
        assert problems(sent, RULES[provider]) == [], (name, problems(sent, RULES[provider]))
        sent_nodes = dict(_nodes(sent))
        for where, node in _nodes(schema):
            out = sent_nodes[where]
            for key in BOUNDS_KEYS:
                if key not in node or out.get(key) == node[key]:
                    continue
                if provider == "openai" and key in ("minLength", "maxLength") and "pattern" not in node:
                    bound = f"{{{node.get('minLength', 0)},{node.get('maxLength', '')}}}"
                    assert out["pattern"] == f"^[\\s\\S]{bound}$", (name, where)
                else:
                    assert key not in takes(provider) or provider in ("vllm", "vllm-batch", "anthropic-json"), (name, where, key)
                    assert str(node[key]) in out["description"] and out["description"].startswith("Bounds: "), (name, where, key, out)


def test_the_golden_requests_pass_the_per_provider_tables():
    """The golden requests (the bounded ones of tests/golden, and the paper's plain schemas, the same objects
    as before) hold only what their provider takes; the fakes refuse what their service refuses."""
    from fakes.schema_rules import problems

    from gavel.answers import schemas

    golden = json.loads(GOLDEN.read_text())
    for provider, sent in golden.items():
        rules = {"local": "vllm", "vllm": "vllm-xgrammar"}.get(provider, provider)
        assert all(problems(s, rules) == [] for s in sent.values()), provider
    whole = schemas.bounded("extract")["schema"]  # unfiltered: refused where the service refuses it
    assert any("pattern with a length" in p for p in problems(whole, "vllm-xgrammar"))
    assert any("minimum" in p for p in problems(schemas.PLAIN["style"]["schema"], "anthropic-json"))
    assert any("minItems 5" in p for p in problems({"type": "array", "minItems": 5}, "anthropic-json"))


def test_the_strict_xgrammar_vllm_fake_answers_every_bounded_stage():
    """A vLLM server started with backend=xgrammar answers 400 to a string with a pattern and a length (the
    fake does too, below); every bounded stage gavel sends it is answered."""
    from fakes.vllm_fake_server import FakeVLLM

    from gavel.answers import schemas

    with FakeVLLM(strict_xgrammar=True) as srv:
        p = get_provider("vllm", base_url=srv.url + "/v1")
        for kind, request in _bounded_requests("Qwen3-32B").items():
            resp = p.complete(request)
            assert resp.ok, (kind, resp.error)
        bad = schema_request("Qwen3-32B", schemas.bounded("extract"))
        import openai

        client = openai.OpenAI(base_url=srv.url + "/v1", api_key=KEY, max_retries=0)
        with pytest.raises(openai.BadRequestError, match="pattern with a length"):
            client.chat.completions.create(model="m", messages=bad.messages,
                                           extra_body={"structured_outputs": {"json": bad.schema["schema"]}})
    assert len(_bounded_requests("Qwen3-32B")) == 5


@pytest.mark.parametrize("thinking", [True, False])
def test_anthropic_json_outputs_decode_the_answer_under_the_schema_thinking_and_batches_included(thinking):
    """A model whose registry entry sets ``json_outputs`` (Claude 4.5 and later) is sent the schema as JSON
    outputs (``output_config.format``), thinking included, in a batch and online, in the subset strict mode
    takes: the fake, which refuses minimum/maximum there, answers every stage, plain and bounded."""
    from fakes.anthropic_fake import schema_refusal

    from gavel.answers import schemas

    model = "claude-sonnet-4-20250514-thinking"
    params = {"json_outputs": True, **({} if thinking else {"thinking_budget_tokens": 0})}
    reqs = [replace(schema_request(model, s), params=params, item=f"{kind}-{form}")
            for kind in schemas.PLAIN for form, s in (("plain", schemas.PLAIN[kind]), ("bounded", schemas.bounded(kind)))]
    with FakeAnthropic() as srv:
        p = get_provider("anthropic", base_url=srv.url, api_key=KEY)
        batch = p.submit(reqs, "t")
        for _ in range(10):
            if p.poll(batch).ended:
                break
        assert all(r.ok for r in p.fetch(batch, [r.custom_id for r in reqs]))
        sent = next(iter(srv.batches.values()))["_requests"]
        assert all(r.ok for r in (p.complete(q) for q in reqs[:2]))
    for req in sent:
        body = req["params"]
        assert ("thinking" in body) is thinking and "tools" not in body and "tool_choice" not in body
        assert body["output_config"]["format"]["type"] == "json_schema" and schema_refusal(body) is None
    plain_style = next(q.custom_id for q in reqs if q.item == "style-plain")
    style = next(r["params"] for r in sent if r["custom_id"] == plain_style)
    rating = next(iter(style["output_config"]["format"]["schema"]["properties"].values()))
    assert "minimum" not in rating and rating["description"] == "Bounds: at least 1; at most 5."
    # the unfiltered schema is refused as the service refuses it
    assert "minimum" in schema_refusal({"output_config": {"format": {"type": "json_schema",
                                                                     "schema": schemas.PLAIN["style"]["schema"]}}})


def test_openai_is_sent_the_length_bounds_as_patterns():
    """OpenAI's strict schemas take a pattern, not a length: the bounded reasoning's 200 characters travel as
    a pattern its grammar enforces; the evidence snippet's too."""
    from gavel.answers import schemas
    from gavel.llm.schema_subset import for_provider

    sent = for_provider(schemas.bounded("extract")["schema"], "openai")
    assert sent["properties"]["reasoning"] == {"type": "string", "pattern": "^[\\s\\S]{0,200}$"}
    evidence = sent["properties"]["extracted"]["items"]["properties"]["evidence"]["items"]
    assert evidence == {"type": "string", "pattern": "^[\\s\\S]{0,160}$"}
    import re

    assert re.fullmatch(sent["properties"]["reasoning"]["pattern"][1:-1], "x\n" * 100)
    assert not re.fullmatch(sent["properties"]["reasoning"]["pattern"][1:-1], "x" * 201)
