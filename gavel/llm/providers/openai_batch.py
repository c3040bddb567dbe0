"""OpenAI: the Batch API (upload a JSONL file, create a batch, poll it, read its output AND error files
in every terminal state, expired and cancelled included) and synchronous chat completions.

The API key comes from OPENAI_API_KEY (environment or .env); OPENAI_BASE_URL or ``base_url`` points the
SDK elsewhere (a local fake server in the tests, a vLLM server in gavel.llm.providers.vllm)."""

from __future__ import annotations

import io
import json
import re

from gavel.core import jsonl

from .. import usage as usage_of
from ..records import Request, Response
from ..registry import llm_model
from ..schema_subset import for_provider
from ..secrets import register
from .base import (
    BatchStatus,
    Provider,
    error_response,
    field_state,
    fill_missing,
    scrub_errors,
    scrubbed,
    unusable_answer,
    what,
)

TERMINAL = {"completed", "failed", "expired", "cancelled"}
SDK_FIELDS = {"model", "messages", "max_tokens", "max_completion_tokens", "temperature", "top_p", "reasoning_effort",
              "seed", "stop", "n", "response_format"}
ENDPOINT = "/v1/chat/completions"
#: how many seconds one HTTP call may take, and how often the SDK retries 408/409/429/5xx and connection
#: errors (with exponential backoff, honouring Retry-After) before the call fails -- every provider's default
DEFAULT_TIMEOUT = 600.0
DEFAULT_MAX_RETRIES = 5
_CUSTOM_ID = re.compile(r'"custom_id"\s*:\s*"([^"\\]+)"')


def read_result_lines(raw: str, where: str) -> tuple[list[dict], list[tuple[str | None, str]]]:
    """The records of an OpenAI-format batch output (JSONL) and, for every line that is not a JSON object,
    ``(custom_id or None, problem)`` -- the custom_id read from the damaged text where it is there -- so one
    bad line costs its own request (errored, retried), not the batch."""
    records, bad = [], []
    for read in jsonl.scan(raw, where):
        n, line, rec = read.number, read.text, read.value
        if not read.ok:
            problem = f"{read.problem}: {line[:120]!r}"
        else:
            problem = f"{where}, line {n}: not a JSON object with a custom_id: {line[:120]!r}"
        if isinstance(rec, dict) and isinstance(rec.get("custom_id"), str):
            records.append(rec)
        else:
            found = _CUSTOM_ID.search(line)
            bad.append((found.group(1) if found else None, problem))
    return records, bad


def bad_line_responses(bad: list[tuple[str | None, str]], provider: str, batch_id: str | None) -> list[Response]:
    """Errored (retryable) Responses for damaged result lines whose custom_id could be read."""
    return [Response(custom_id=cid, status="errored", error=f"malformed result line ({problem})"[:500],
                     provider=provider, batch_id=batch_id) for cid, problem in bad if cid]


def unreadable_note(bad: list[tuple[str | None, str]]) -> str:
    """What fill_missing says about requests with no result when some lines could not be read at all."""
    lost = [problem for cid, problem in bad if not cid]
    return f"; {len(lost)} result line(s) unreadable, e.g. {lost[0]}" if lost else ""


def chat_body(request: Request, model_id: str, params: dict, vllm: bool = False) -> dict:
    body = {"model": model_id, "messages": request.messages}
    p = dict(params)
    if "reasoning_effort" in p:
        body["reasoning_effort"] = p.pop("reasoning_effort")
        if not vllm:  # reasoning models: no sampling parameters, output cap named differently
            p.pop("temperature", None)
            p.pop("top_p", None)
    if "max_tokens" in p:
        body["max_tokens" if vllm else "max_completion_tokens"] = p.pop("max_tokens")
    if "enable_thinking" in p:
        enable = p.pop("enable_thinking")
        if vllm:
            body["chat_template_kwargs"] = {"enable_thinking": bool(enable)}
    for key in ("temperature", "top_p"):
        if key in p:
            body[key] = p.pop(key)
    p.pop("thinking_budget", None)
    p.pop("thinking_budget_tokens", None)
    body.update(p)
    if request.schema:
        body.update(structured_output(request.schema, vllm))
    return body


def structured_output(schema: dict, vllm: bool = False) -> dict:
    """The request's answer schema in the chat-completions body: OpenAI's strict ``json_schema`` response
    format (string lengths left out: ``gavel.llm.schema_subset``); vLLM's ``structured_outputs`` (guided
    decoding by the whole schema)."""
    if vllm:
        return {"structured_outputs": {"json": for_provider(schema["schema"], "vllm")}}
    return {"response_format": {"type": "json_schema",
                                "json_schema": {"name": schema["name"], "schema": for_provider(schema["schema"], "openai"),
                                                "strict": True}}}


#: provider words for why generation stopped -> Response.finish_reason
FINISH = {"stop": "stop", "length": "length", "tool_calls": "tool_calls", "function_call": "tool_calls",
          "content_filter": "content_filter", "max_tokens": "length", "end_turn": "stop", "stop_sequence": "stop",
          "tool_use": "stop", "MAX_TOKENS": "length", "STOP": "stop", "SAFETY": "content_filter"}


def parse_chat(custom_id: str, body: dict, provider: str, batch_id: str | None = None) -> Response:
    """A chat completion as a Response. A completion without what an answer needs (``choices`` missing, null
    or empty; a choice or ``message`` that is missing or null; ``content`` null with no tool calls, e.g. a
    refusal; a tool call that is not an object) is a failed answer naming the field (errored: the runner asks
    again), never an exception."""
    def failed(reason: str) -> Response:
        return unusable_answer(custom_id, provider, batch_id, reason)

    if not isinstance(body, dict):
        return failed(f"the completion is {what(body)}, not an object")
    choices = body.get("choices")
    if not isinstance(choices, list) or not choices:
        state = "missing" if "choices" not in body else "empty" if choices == [] else what(choices)
        return failed(f"choices is {state}: {str(body)[:200]}")
    choice = choices[0]
    if not isinstance(choice, dict):
        return failed(f"choices[0] is {what(choice)}, not an object")
    message = choice.get("message")
    finish = choice.get("finish_reason")
    if not isinstance(message, dict):
        return failed(f"choices[0].message is {field_state(choice, 'message')} "
                      f"(finish_reason {finish!r})")
    text = message.get("content")
    calls = message.get("tool_calls") or []
    if not isinstance(calls, list) or not all(isinstance(c, dict) for c in calls):
        return failed(f"choices[0].message.tool_calls is not a list of objects: {str(calls)[:120]}")
    if text is not None and not isinstance(text, str):
        return failed(f"choices[0].message.content is {what(text)}, not text")
    if calls and not (text or "").strip():  # native tool calls (a server's tool-call parser): kept as JSON text
        functions = [c.get("function") if isinstance(c.get("function"), dict) else {} for c in calls]
        text = json.dumps({"tool_calls": [{"name": f.get("name"), "arguments": f.get("arguments")} for f in functions]})
    if text is None:
        refusal = message.get("refusal")
        return failed(f"choices[0].message.content is null (finish_reason {finish!r}"
                      + (f"; refusal: {str(refusal)[:200]}" if refusal else "") + ")")
    usage = usage_of.openai(body)
    reasoning = message.get("reasoning_content") or message.get("reasoning")
    return Response(custom_id=custom_id, status="succeeded", text=text,
                    reasoning=reasoning if isinstance(reasoning, str) else None,
                    input_tokens=(usage or {}).get("input"), output_tokens=(usage or {}).get("output"), usage=usage,
                    provider=provider, batch_id=batch_id, finish_reason=FINISH.get(finish) if isinstance(finish, str) else None)


class OpenAIBatch(Provider):
    name = "openai"
    base_url_env = "OPENAI_BASE_URL"
    takes_seed = True
    max_batch_requests = 50_000
    max_batch_bytes = 200 * 1024 * 1024
    vllm = False

    def __init__(self, client=None, base_url: str | None = None, api_key: str | None = None,
                 max_retries: int = DEFAULT_MAX_RETRIES, timeout: float = DEFAULT_TIMEOUT):
        self._client = client
        register(api_key)
        self._client_args = {"base_url": base_url, "api_key": api_key, "max_retries": max_retries, "timeout": timeout}

    def make_client(self):
        from openai import OpenAI

        return OpenAI(**self._client_args)

    def native_body(self, request: Request, model_id: str, params: dict) -> dict:
        return chat_body(request, model_id, params, vllm=self.vllm)

    def queue_limit(self, requests: list[Request]) -> int | None:
        """The registry's enqueued-token limit of these requests' model (``batch_queue_tokens``), or None."""
        limits = {llm_model(m).batch_queue_tokens for m in {r.model for r in requests}} - {None}
        return min(limits) if limits else None

    @staticmethod
    def enqueued_tokens(request: Request) -> int:
        """Input tokens a request puts in the batch queue: its messages in o200k tokens, a few per message
        (the chat format's own); a text is at most one token per byte, so a short one is not counted."""
        from gavel.core.tokens import count_tokens

        return sum(count_tokens(m["content"]) + 4 for m in request.messages)

    def split(self, requests: list[Request]) -> list[list[Request]]:
        """Within the count and byte limits (``Provider.split``) and, for a model with an enqueued-token limit,
        each batch's input tokens within it (several such batches are queued one after another by the
        runner). A request alone over the limit is refused, naming it."""
        chunks = super().split(requests)
        limit = self.queue_limit(requests) if requests else None
        if not limit:
            return chunks
        unit = (f"enqueued tokens, over {requests[0].model}'s batch_queue_tokens (your tier's limit goes in your "
                "models file, docs/scale.md; or --mode online)")
        return [part for chunk in chunks
                for part in self.chunks(chunk, [self.enqueued_tokens(r) for r in chunk], None, limit, unit)]

    def jsonl(self, requests: list[Request]) -> bytes:
        lines = [json.dumps({"custom_id": r.custom_id, "method": "POST", "url": ENDPOINT, "body": self.body(r)})
                 for r in requests]
        return ("\n".join(lines) + "\n").encode("utf-8")

    @scrub_errors
    def submit(self, requests: list[Request], tag: str) -> str:
        self.check_batch(requests)
        upload = self.client.files.create(file=(f"{tag}.jsonl", io.BytesIO(self.jsonl(requests))), purpose="batch")
        batch = self.client.batches.create(input_file_id=upload.id, endpoint=ENDPOINT, completion_window="24h",
                                           metadata={"gavel_tag": tag})
        return batch.id

    @scrub_errors
    def find_submitted(self, tag: str, since: float, known: set[str], custom_ids: list[str] | None = None) -> str | None:
        for batch in self.client.batches.list(limit=100):
            if (batch.metadata or {}).get("gavel_tag") == tag:
                return batch.id
        return None

    @scrub_errors
    def poll(self, batch_id: str) -> BatchStatus:
        b = self.client.batches.retrieve(batch_id)
        counts = b.request_counts.model_dump() if b.request_counts else {}
        return BatchStatus(ended=b.status in TERMINAL, state=b.status, counts=counts)

    def _lines(self, file_id: str | None) -> tuple[list[dict], list[tuple[str | None, str]]]:
        if not file_id:
            return [], []
        raw = self.client.files.content(file_id).read().decode("utf-8", errors="replace")
        return read_result_lines(raw, f"openai file {file_id}")

    @scrub_errors
    def fetch(self, batch_id: str, custom_ids: list[str]) -> list[Response]:
        b = self.client.batches.retrieve(batch_id)
        out_records, out_bad = self._lines(b.output_file_id)
        err_records, err_bad = self._lines(b.error_file_id)
        responses = []
        for rec in out_records + err_records:
            cid = rec.get("custom_id")
            resp = rec.get("response") if isinstance(rec.get("response"), dict) else {}
            if rec.get("error") or resp.get("status_code", 200) != 200:
                body = resp.get("body") if isinstance(resp.get("body"), dict) else {}
                err = rec.get("error") or body.get("error") or resp
                code = err.get("code") if isinstance(err, dict) else None
                status = "expired" if code == "batch_expired" else "canceled" if code == "batch_cancelled" else "errored"
                responses.append(Response(custom_id=cid, status=status, error=json.dumps(err)[:500],
                                          provider=self.name, batch_id=batch_id))
            else:
                responses.append(parse_chat(cid, resp.get("body"), self.name, batch_id))
        reason = {"expired": "batch expired before this request ran",
                  "cancelled": "batch cancelled before this request ran",
                  "failed": f"batch failed: {getattr(b, 'errors', None)}"}.get(b.status, "no result line returned")
        bad = out_bad + err_bad
        responses += bad_line_responses(bad, self.name, batch_id)  # after the good lines: a good one wins
        return fill_missing(responses, custom_ids, self.name, batch_id, reason + unreadable_note(bad))

    def complete(self, request: Request) -> Response:
        body = self.body(request)
        # fields the SDK's signature does not name (vLLM's chat_template_kwargs, ...) go as extra body
        extra = {k: body.pop(k) for k in list(body) if k not in SDK_FIELDS}
        try:
            out = self.client.chat.completions.create(**body, extra_body=extra or None)
        except Exception as err:  # the SDK already retried rate limits, 5xx and timeouts
            return error_response(request, err, self.name)
        return scrubbed(parse_chat(request.custom_id, out.model_dump(), self.name))
