"""Anthropic: Message Batches (create, poll, stream results; every result type -- succeeded, errored,
canceled, expired -- becomes a Response) and synchronous messages. Key: ANTHROPIC_API_KEY;
ANTHROPIC_BASE_URL or ``base_url`` points the SDK elsewhere (the tests' fake server)."""

from __future__ import annotations

import json
from datetime import datetime

from .. import usage as usage_of
from ..records import Request, Response
from ..schema_subset import for_provider
from ..secrets import register
from .base import (
    BatchStatus,
    Provider,
    ProviderError,
    error_response,
    field_state,
    fill_missing,
    scrub_errors,
    scrubbed,
    unusable_answer,
    what,
)
from .openai_batch import (
    DEFAULT_MAX_RETRIES,
    DEFAULT_TIMEOUT,
    FINISH,
    bad_line_responses,
    read_result_lines,
    unreadable_note,
)


def message_params(request: Request, model_id: str, params: dict) -> dict:
    system = "\n\n".join(m["content"] for m in request.messages if m["role"] == "system")
    messages = [{"role": m["role"], "content": m["content"]} for m in request.messages if m["role"] != "system"]
    if len(messages) >= 2 and messages[0]["role"] == messages[1]["role"] == "user":
        # the prompt layout puts what many requests share in the first user message (e.g. the summary):
        # a cache breakpoint after it lets the later requests read it from Anthropic's prompt cache
        messages[0] = {"role": "user", "content": [{"type": "text", "text": messages[0]["content"],
                                                    "cache_control": {"type": "ephemeral"}}]}
    p = dict(params)
    out = {"model": model_id, "max_tokens": p.pop("max_tokens", 4096), "messages": messages}
    if system:
        out["system"] = system
    budget = p.pop("thinking_budget_tokens", None)
    if budget:
        out["thinking"] = {"type": "enabled", "budget_tokens": int(budget)}
        out["temperature"] = 1.0  # extended thinking requires temperature 1
        p.pop("temperature", None)
        p.pop("top_p", None)
    for key in ("temperature", "top_p"):
        if key in p:
            out[key] = p.pop(key)
    json_outputs = p.pop("json_outputs", False)
    if request.schema and json_outputs:
        # JSON outputs (Claude 4.5 and later; registry quirk ``json_outputs``): the answer's text is decoded
        # under the schema, thinking and batches included; sent the subset its strict mode takes
        out["output_config"] = {"format": {"type": "json_schema",
                                           "schema": for_provider(request.schema["schema"], "anthropic-json")}}
    elif request.schema and not budget:
        # structured output as a forced tool call whose input must follow the schema; extended thinking
        # does not allow a forced tool, so thinking requests rely on the prompt and the tolerant parser
        out["tools"] = [{"name": request.schema["name"], "description": "Record the answer in this structure.",
                         "input_schema": for_provider(request.schema["schema"], "anthropic")}]
        out["tool_choice"] = {"type": "tool", "name": request.schema["name"]}
    return out


def parse_message(custom_id: str, message: dict, provider: str, batch_id: str | None = None) -> Response:
    """A Messages API answer as a Response. A message without what an answer needs (``content`` missing,
    null or not a list; a block that is not an object; a text block whose ``text`` is not text; a
    ``tool_use`` block whose ``input`` is missing or null) is a failed answer naming the field (errored: the
    runner asks again), never an exception. An empty content list is an answer with no text (the stage's
    parser calls it empty or truncated)."""
    def failed(reason: str) -> Response:
        return unusable_answer(custom_id, provider, batch_id, reason)

    if not isinstance(message, dict):
        return failed(f"the message is {what(message)}, not an object")
    blocks = message.get("content")
    stop = message.get("stop_reason")
    if not isinstance(blocks, list):
        return failed(f"content is {field_state(message, 'content')} "
                      f"(stop_reason {stop!r})")
    for n, b in enumerate(blocks):
        if not isinstance(b, dict):
            return failed(f"content block {n} is {what(b)}, not an object")
        if b.get("type") == "text" and not isinstance(b.get("text"), str):
            return failed(f"content block {n} (text): text is {what(b.get('text'))}")
        if b.get("type") == "tool_use" and not isinstance(b.get("input"), (dict, list)):
            return failed(f"content block {n} (tool_use): input is {what(b.get('input'))}")
    texts = [b["text"] for b in blocks if b.get("type") == "text"]
    tool = next((b for b in blocks if b.get("type") == "tool_use"), None)
    text = json.dumps(tool["input"], ensure_ascii=False) if tool is not None else "".join(texts)
    thinking = "".join(b["thinking"] for b in blocks if b.get("type") == "thinking" and isinstance(b.get("thinking"), str))
    usage = usage_of.anthropic(message)
    return Response(custom_id=custom_id, status="succeeded", text=text, reasoning=thinking or None,
                    input_tokens=(usage or {}).get("input"), output_tokens=(usage or {}).get("output"), usage=usage,
                    provider=provider, batch_id=batch_id, finish_reason=FINISH.get(stop) if isinstance(stop, str) else None)


class AnthropicBatch(Provider):
    name = "anthropic"
    base_url_env = "ANTHROPIC_BASE_URL"
    max_batch_requests = 100_000
    max_batch_bytes = 256 * 1024 * 1024

    def __init__(self, client=None, base_url: str | None = None, api_key: str | None = None,
                 max_retries: int = DEFAULT_MAX_RETRIES, timeout: float = DEFAULT_TIMEOUT):
        self._client = client
        register(api_key)
        self._client_args = {"base_url": base_url, "api_key": api_key, "max_retries": max_retries, "timeout": timeout}

    def make_client(self):
        from anthropic import Anthropic

        return Anthropic(**self._client_args)

    def native_body(self, request: Request, model_id: str, params: dict) -> dict:
        return message_params(request, model_id, params)

    @scrub_errors
    def submit(self, requests: list[Request], tag: str) -> str:
        self.check_batch(requests)
        batch = self.client.messages.batches.create(
            requests=[{"custom_id": r.custom_id, "params": self.body(r)} for r in requests])
        return batch.id

    @scrub_errors
    def find_submitted(self, tag: str, since: float, known: set[str], custom_ids: list[str] | None = None) -> str | None:
        """Message batches carry no metadata, so our batch is recognised by its requests' custom_ids. Candidates
        are the batches created after the recorded intent that this run does not know. An ended candidate is
        ours when it holds as many requests as the intent and every custom_id its results show is the
        intent's. One still in progress shows only its request count: it is adopted when it is the only candidate whose count matches (an adopted batch that
        turns out to be another's yields no result for our ids; fetch keeps none of its foreign ids). Two or
        more such candidates: a ProviderError, and nothing is resent (rerun once they ended). No candidate:
        None (the batch never reached the provider)."""
        wanted = set(custom_ids or [])
        candidates = []
        for batch in self.client.messages.batches.list(limit=100):
            created = batch.created_at.timestamp() if isinstance(batch.created_at, datetime) else float(batch.created_at)
            if created >= since - 5 and batch.id not in known:
                candidates.append(batch.id)
        if not candidates:
            return None
        if not wanted:  # a caller that does not say which requests it sent: only an unambiguous candidate
            return candidates[0] if len(candidates) == 1 else None
        running = []
        for bid in candidates:
            b = self.client.messages.batches.retrieve(bid)  # the list may be stale: ask for the current state
            size = sum((b.request_counts.model_dump() if b.request_counts else {}).values())
            if b.processing_status == "ended":
                # every request has a result line; a damaged line may hide its id, so: as many requests, and
                # every id that can be read is one of ours (ids are content hashes naming stage and prompt)
                ids = {cid for cid, _rec, _bad in self._result_records(bid)} - {None}
                if size == len(wanted) and ids and ids <= wanted:
                    return bid
            elif size == len(wanted):
                running.append(bid)
        if len(running) == 1:
            return running[0]
        if running:
            raise ProviderError(f"anthropic: batches {', '.join(running)} are all still running and as large as the "
                                f"intent {tag}; which one is ours shows once they ended (rerun then; nothing was resent)")
        return None

    @scrub_errors
    def poll(self, batch_id: str) -> BatchStatus:
        b = self.client.messages.batches.retrieve(batch_id)
        return BatchStatus(ended=b.processing_status == "ended", state=b.processing_status,
                           counts=b.request_counts.model_dump() if b.request_counts else {})

    def _result_records(self, batch_id: str):
        """(custom_id or None, record or None, problem) for every line of a batch's results, read as raw JSONL
        so that one damaged line does not stop the others."""
        decoder = self.client.messages.batches.results(batch_id)
        raw = decoder.http_response.read().decode("utf-8", errors="replace")
        records, bad = read_result_lines(raw, f"anthropic batch {batch_id} results")
        return [(rec["custom_id"], rec, None) for rec in records] + [(cid, None, problem) for cid, problem in bad]

    @scrub_errors
    def fetch(self, batch_id: str, custom_ids: list[str]) -> list[Response]:
        responses, bad = [], []
        for cid, rec, problem in self._result_records(batch_id):
            if rec is None:
                bad.append((cid, problem))
                continue
            result = rec.get("result") if isinstance(rec.get("result"), dict) else {}
            kind = result.get("type")
            try:
                if kind == "succeeded":
                    responses.append(parse_message(cid, result.get("message") or {}, self.name, batch_id))
                    continue
            except (AttributeError, TypeError, ValueError) as err:
                bad.append((cid, f"anthropic batch {batch_id}, result of {cid}: malformed message ({err})"))
                continue
            status = {"errored": "errored", "canceled": "canceled", "expired": "expired"}.get(kind, "errored")
            responses.append(Response(custom_id=cid, status=status,
                                      error=json.dumps(result.get("error") or {"type": kind})[:500],
                                      provider=self.name, batch_id=batch_id))
        responses += bad_line_responses(bad, self.name, batch_id)
        return fill_missing(responses, custom_ids, self.name, batch_id, "no result line returned" + unreadable_note(bad))

    def complete(self, request: Request) -> Response:
        body = self.body(request)
        # sampling fields the SDK's signature may not name travel as extra body fields
        sampling = {k: body.pop(k) for k in ("temperature", "top_p", "top_k") if k in body}
        try:
            msg = self.client.messages.create(**body, extra_body=sampling or None)
        except Exception as err:  # the SDK already retried rate limits, overload, 5xx and timeouts
            return error_response(request, err, self.name)
        return scrubbed(parse_message(request.custom_id, msg.model_dump(), self.name))
