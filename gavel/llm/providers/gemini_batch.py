"""Gemini (Developer API) through ``google-genai``: batch jobs with inlined requests (create, poll, read
inlined responses and per-request errors), batch jobs from an uploaded JSONL file (the Files API) where the
requests pass the inline limit (20 MB, 10,000 requests), and synchronous generate_content. Key: GEMINI_API_KEY (or
GOOGLE_API_KEY); ``base_url`` (or GEMINI_BASE_URL) points the SDK elsewhere (the tests' fake server)."""

from __future__ import annotations

import json
import tempfile

from gavel.core import config

from .. import usage as usage_of
from ..records import Request, Response
from ..registry import llm_model
from ..schema_subset import for_provider
from ..secrets import register, scrub
from .base import (
    BatchStatus,
    BatchTooLargeError,
    Provider,
    error_response,
    field_state,
    fill_missing,
    scrub_errors,
    scrubbed,
    unusable_answer,
    what,
)
from .openai_batch import DEFAULT_MAX_RETRIES, DEFAULT_TIMEOUT, FINISH

TERMINAL = {"JOB_STATE_SUCCEEDED", "JOB_STATE_FAILED", "JOB_STATE_CANCELLED", "JOB_STATE_EXPIRED"}


def gemini_request(request: Request, params: dict) -> dict:
    system = "\n\n".join(m["content"] for m in request.messages if m["role"] == "system")
    contents = [{"role": "model" if m["role"] == "assistant" else "user", "parts": [{"text": m["content"]}]}
                for m in request.messages if m["role"] != "system"]
    p = dict(params)
    cfg = {}
    if system:
        cfg["system_instruction"] = system
    if "max_tokens" in p:
        cfg["max_output_tokens"] = p.pop("max_tokens")
    for key in ("temperature", "top_p"):
        if key in p:
            cfg[key] = p.pop(key)
    if "thinking_budget" in p:
        cfg["thinking_config"] = {"thinking_budget": p.pop("thinking_budget"), "include_thoughts": True}
    if request.schema:
        cfg["response_mime_type"] = "application/json"
        cfg["response_json_schema"] = for_provider(request.schema["schema"], "gemini")  # its subset
    return {"contents": contents, "config": cfg}


def parse_generate(custom_id: str, resp: dict, provider: str, batch_id: str | None = None) -> Response:
    """A generateContent answer as a Response. An answer without what it needs (``candidates`` missing, null
    or empty, e.g. a blocked prompt; a candidate, its ``content`` or ``parts`` missing or null; a part that is
    not an object or whose ``text`` is not text) is a failed answer naming the field (errored: the runner asks
    again), never an exception."""
    def failed(reason: str) -> Response:
        return unusable_answer(custom_id, provider, batch_id, reason)

    if not isinstance(resp, dict):
        return failed(f"the answer is {what(resp)}, not an object")
    cands = resp.get("candidates")
    if not isinstance(cands, list) or not cands:
        feedback = resp.get("prompt_feedback") or resp.get("promptFeedback")
        state = "missing" if "candidates" not in resp else "empty" if cands == [] else what(cands)
        return failed(f"candidates is {state}" + (f" (prompt feedback: {str(feedback)[:200]})" if feedback else
                                                   f": {str(resp)[:200]}"))
    cand = cands[0]
    if not isinstance(cand, dict):
        return failed(f"candidates[0] is {what(cand)}, not an object")
    finish = cand.get("finish_reason") or cand.get("finishReason")
    content = cand.get("content")
    if not isinstance(content, dict):
        return failed(f"candidates[0].content is {field_state(cand, 'content')} "
                      f"(finish_reason {finish!r})")
    parts = content.get("parts")
    if not isinstance(parts, list):
        return failed(f"candidates[0].content.parts is {field_state(content, 'parts')} "
                      f"(finish_reason {finish!r})")
    for n, p in enumerate(parts):
        if not isinstance(p, dict):
            return failed(f"candidates[0].content.parts[{n}] is {what(p)}, not an object")
        if "text" in p and not isinstance(p["text"], str):
            return failed(f"candidates[0].content.parts[{n}].text is {what(p['text'])}")
    answer = [p["text"] for p in parts if isinstance(p.get("text"), str) and not p.get("thought")]
    text = "".join(answer)
    thought = "".join(p["text"] for p in parts if isinstance(p.get("text"), str) and p.get("thought"))
    usage = usage_of.gemini(resp)
    return Response(custom_id=custom_id, status="succeeded", text=text, reasoning=thought or None,
                    input_tokens=(usage or {}).get("input"), output_tokens=(usage or {}).get("output"), usage=usage,
                    provider=provider, batch_id=batch_id, finish_reason=FINISH.get(finish) if isinstance(finish, str) else None)


def sdk_config(cfg: dict):
    """The plain config as the SDK's typed object, so nested fields are serialised in the API's casing."""
    from google.genai import types

    cfg = dict(cfg)
    if "thinking_config" in cfg:
        cfg["thinking_config"] = types.ThinkingConfig(**cfg["thinking_config"])
    return types.GenerateContentConfig(**cfg)


class GeminiBatch(Provider):
    name = "gemini"
    base_url_env = "GEMINI_BASE_URL"
    max_batch_requests = 10_000
    max_batch_bytes = 20 * 1024 * 1024  # inlined requests; larger runs go as JSONL files
    max_file_bytes = 2 * 1024 ** 3  # one batch's JSONL input file (the Files API's limit per file)

    def __init__(self, client=None, base_url: str | None = None, api_key: str | None = None,
                 max_retries: int = DEFAULT_MAX_RETRIES, timeout: float = DEFAULT_TIMEOUT,
                 retry_initial_delay: float = 1.0, retry_max_delay: float = 60.0):
        self._client = client
        register(api_key)
        self._client_args = {"base_url": base_url, "api_key": api_key}
        self.max_retries, self.timeout = max_retries, timeout
        self.retry_delays = (retry_initial_delay, retry_max_delay)

    def make_client(self):
        """google-genai's own retries (HttpRetryOptions: 408/429/5xx, timeouts and connection errors, with
        exponential backoff and jitter) and per-call timeout (HttpOptions.timeout, milliseconds); without
        them the SDK neither retries nor times out."""
        from google import genai
        from google.genai import types

        base_url = self.endpoint()
        api_key = self._client_args["api_key"] or config.env("GEMINI_API_KEY") or config.env("GOOGLE_API_KEY")
        register(api_key)
        retry = types.HttpRetryOptions(attempts=self.max_retries + 1, initial_delay=self.retry_delays[0],
                                       max_delay=self.retry_delays[1])
        options = types.HttpOptions(base_url=base_url, timeout=max(1, round(self.timeout * 1000)), retry_options=retry)
        return genai.Client(api_key=api_key, http_options=options)

    def native_body(self, request: Request, model_id: str, params: dict) -> dict:
        return gemini_request(request, params)

    def split(self, requests: list[Request]) -> list[list[Request]]:
        """Inline batches (within the count limit) when the requests fit the inline byte limit; else JSONL
        files of up to ``max_file_bytes`` each (no count limit): 100,000 summaries are some 22 file batches, not
        some 2,200 inline ones."""
        return self.plan(requests, [self.request_size(r) for r in requests])

    def plan(self, requests: list, sizes: list[int]) -> list[list]:
        """``split`` on sizes alone (what a dry run counts with): inline chunks when they all fit the inline
        byte limit, else file chunks."""
        if sum(sizes) <= self.max_batch_bytes:
            return self.chunks(requests, sizes, self.max_batch_requests, self.max_batch_bytes)
        return self.chunks(requests, sizes, None, self.max_file_bytes)

    def inline_chunks(self, requests: list, sizes: list[int]) -> list[list]:
        """What inline batches alone (the SDK's inlined requests, no files) would make of them."""
        return self.chunks(requests, sizes, self.max_batch_requests, self.max_batch_bytes)

    def jsonl_line(self, request: Request) -> bytes:
        """One line of a batch input file: ``{"key", "request"}``, the request in the API's own JSON (the SDK's
        converter of an inlined request, so a file batch asks exactly what an inline one asks)."""
        from google.genai import _common, batches, types

        body = self.body(request)
        inlined = types.InlinedRequest(contents=body["contents"], config=sdk_config(body["config"]))
        rest = batches._InlinedRequest_to_mldev(self.client._api_client, inlined)
        rest = _common.encode_unserializable_types(_common.convert_to_dict(rest))  # as the SDK sends it
        return json.dumps({"key": request.custom_id, "request": rest["request"]}, ensure_ascii=False).encode() + b"\n"

    @scrub_errors
    def submit(self, requests: list[Request], tag: str) -> str:
        models = {llm_model(r.model).model_id for r in requests}
        if len(models) != 1:
            raise ValueError(f"gemini: one model per batch, got {sorted(models)}")
        sizes = [self.request_size(r) for r in requests]
        if sum(sizes) > self.max_batch_bytes:  # a JSONL file, uploaded (spooled on disk, never whole in memory)
            if sum(sizes) > self.max_file_bytes:
                raise BatchTooLargeError(f"{self.name}: batch file of {sum(sizes)} bytes > {self.max_file_bytes}")
            with tempfile.TemporaryFile() as fh:
                for r in requests:
                    fh.write(self.jsonl_line(r))
                fh.seek(0)
                uploaded = self.client.files.upload(file=fh, config={"mime_type": "jsonl", "display_name": tag})
            job = self.client.batches.create(model=models.pop(), src=uploaded.name, config={"display_name": tag})
            return job.name
        self.check_batch(requests)
        src = []
        for r in requests:
            body = self.body(r)
            src.append({"contents": body["contents"], "config": sdk_config(body["config"]),
                        "metadata": {"key": r.custom_id}})
        job = self.client.batches.create(model=models.pop(), src=src, config={"display_name": tag})
        return job.name

    @scrub_errors
    def find_submitted(self, tag: str, since: float, known: set[str], custom_ids: list[str] | None = None) -> str | None:
        for job in self.client.batches.list(config={"page_size": 100}):
            if job.display_name == tag:
                return job.name
        return None

    @scrub_errors
    def poll(self, batch_id: str) -> BatchStatus:
        job = self.client.batches.get(name=batch_id)
        state = job.state.value if hasattr(job.state, "value") else str(job.state)
        return BatchStatus(ended=state in TERMINAL, state=state)

    @scrub_errors
    def fetch(self, batch_id: str, custom_ids: list[str]) -> list[Response]:
        job = self.client.batches.get(name=batch_id)
        state = job.state.value if hasattr(job.state, "value") else str(job.state)
        responses, unreadable = [], []
        if job.dest and job.dest.file_name:  # a file batch: its answers are a JSONL file to download
            records = self._file_records(job.dest.file_name, unreadable)
        else:
            records = (item.model_dump(exclude_none=True)
                       for item in (job.dest.inlined_responses if job.dest else None) or [])
        for n, rec in enumerate(records):
            if rec is None:
                continue
            key = (rec.get("metadata") or {}).get("key") if "key" not in rec else rec["key"]
            if not isinstance(key, str):
                unreadable.append(f"inlined response {n} has no metadata key: {str(rec)[:120]}")
                continue
            try:
                if rec.get("error"):
                    responses.append(Response(custom_id=key, status="errored", error=json.dumps(rec["error"])[:500],
                                              provider=self.name, batch_id=batch_id))
                else:
                    responses.append(parse_generate(key, rec.get("response") or {}, self.name, batch_id))
            except (AttributeError, TypeError, ValueError) as err:  # a malformed record costs only its request
                responses.append(Response(custom_id=key, status="errored", provider=self.name, batch_id=batch_id,
                                          error=f"gemini batch {batch_id}, inlined response {n}: malformed ({err})"))
        reason = {"JOB_STATE_EXPIRED": "batch expired", "JOB_STATE_CANCELLED": "batch cancelled",
                  "JOB_STATE_FAILED": "batch failed"}.get(state, "no inlined response returned")
        if unreadable:
            reason += f"; {len(unreadable)} inlined response(s) unreadable, e.g. {unreadable[0]}"
        status_for_missing = "expired" if state == "JOB_STATE_EXPIRED" else None
        filled = fill_missing(responses, custom_ids, self.name, batch_id, reason)
        if status_for_missing:
            filled = [Response(**{**r.to_dict(), "status": status_for_missing}) if r.error == scrub(reason) else r
                      for r in filled]
        return filled

    def _file_records(self, name: str, unreadable: list[str]):
        """The lines of a file batch's answers file, downloaded into a spooled file and read one at a time; a
        line that is not a JSON object is named in ``unreadable`` (its request is then filled as missing)."""
        with tempfile.TemporaryFile() as fh:
            fh.write(self.client.files.download(file=name))
            fh.seek(0)
            for n, line in enumerate(fh, 1):
                if not line.strip():
                    continue
                try:
                    rec = json.loads(line)
                except (UnicodeDecodeError, json.JSONDecodeError):
                    rec = None
                if not isinstance(rec, dict):
                    unreadable.append(f"{name} line {n} is not a JSON object: {line[:80]!r}")
                    yield None
                    continue
                yield rec

    def complete(self, request: Request) -> Response:
        model = llm_model(request.model)
        body = self.body(request)
        try:
            out = self.client.models.generate_content(model=model.model_id, contents=body["contents"],
                                                      config=sdk_config(body["config"]))
        except Exception as err:  # the SDK already retried (HttpRetryOptions) rate limits, 5xx and timeouts
            return error_response(request, err, self.name)
        return scrubbed(parse_generate(request.custom_id, out.model_dump(exclude_none=True), self.name))
