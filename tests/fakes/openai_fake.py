"""Fake OpenAI API: files, batches (with output and error files) and chat completions."""

from __future__ import annotations

import itertools
import json
import random
import re
import time

from . import FakeServer
from .schema_rules import refusal


def completion(custom_id: str, model: str, reasoning: bool = False, text: str | None = None) -> dict:
    msg = {"role": "assistant", "content": text or f"answer:{custom_id}"}
    if reasoning:
        msg["reasoning_content"] = f"thinking about {custom_id}"
    return {"id": f"chatcmpl-{custom_id[-8:]}", "object": "chat.completion", "created": int(time.time()),
            "model": model, "choices": [{"index": 0, "message": msg, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": 11, "completion_tokens": 7, "total_tokens": 18}}


def schema_refusal(body: dict, vllm_rules: str = "vllm") -> str | None:
    """Why the service would refuse this chat body's answer schema (``schema_rules``), or None: OpenAI's
    strict ``response_format``, or vLLM's ``structured_outputs`` (by ``vllm_rules``: ``vllm-xgrammar`` for a
    server started with ``backend=xgrammar``)."""
    fmt = (body.get("response_format") or {}).get("json_schema")
    if fmt is not None:
        return refusal(fmt.get("schema"), "openai") if fmt.get("strict") else None
    guided = body.get("structured_outputs")
    return refusal(guided.get("json"), vllm_rules) if isinstance(guided, dict) and "json" in guided else None


def parse_multipart(raw: bytes, content_type: str) -> bytes:
    boundary = re.search(r"boundary=([^;]+)", content_type).group(1).strip('"').encode()
    for part in raw.split(b"--" + boundary):
        if b'name="file"' in part:
            body = part.split(b"\r\n\r\n", 1)[1]
            return body.rsplit(b"\r\n", 1)[0]
    raise KeyError("no file part")


def queue_tokens(body: dict) -> int:
    """A request's input tokens as OpenAI's batch queue counts them (here: o200k per message, 4 per message)."""
    import tiktoken

    enc = tiktoken.get_encoding("o200k_base")
    return sum(len(enc.encode(m["content"], disallowed_special=())) + 4 for m in body["messages"])


class FakeOpenAI(FakeServer):
    vllm_rules = "vllm"  # the structured-output rules of a vLLM server (``schema_rules``)

    def __init__(self, expire_after: int | None = None, no_output_file: bool = False, shuffle: bool = True,
                 reasoning: bool = False):
        super().__init__()
        self.files: dict[str, bytes] = {}
        self.batches: dict[str, dict] = {}
        self.ids = itertools.count(1)
        self.expire_after = expire_after  # process only this many lines, then expire the batch
        self.no_output_file = no_output_file
        self.shuffle = shuffle
        self.reasoning = reasoning
        self.chat_calls = 0
        self.chat_bodies: list[dict] = []  # every chat-completions body received (online calls)
        self.rate_limit_next = 0  # answer this many batch creations with 429 before accepting
        # OpenAI's batch queue limit: a batch whose input tokens (o200k, as the client counts them) would take the
        # unfinished batches' total over it fails at once with token_limit_exceeded; None: no limit
        self.queue_limit: int | None = None
        self.queue_peak = 0  # the most enqueued tokens at once
        self.over_queue = 0  # batches failed for the queue limit

    @staticmethod
    def with_tier(body: dict) -> dict:
        """OpenAI names the service tier beside the usage, not in it: a usage_for answer's service_tier moves out."""
        usage = body.get("usage")
        if isinstance(usage, dict) and "service_tier" in usage:
            body["service_tier"] = usage.pop("service_tier")
        return body

    def _batch_view(self, b: dict) -> dict:
        return {k: v for k, v in b.items() if not k.startswith("_")}

    def _finish(self, b: dict):
        lines = [json.loads(x) for x in self.files[b["input_file_id"]].decode().splitlines() if x.strip()]
        out, err = [], []
        for n, rec in enumerate(lines):
            cid = rec["custom_id"]
            attempt = b["_attempts"][cid]
            if self.expire_after is not None and n >= self.expire_after:
                err.append({"id": f"r{n}", "custom_id": cid, "response": None,
                            "error": {"code": "batch_expired", "message": "This request could not be executed before the completion window expired."}})
            elif schema_refusal(rec["body"]):  # refused as the service refuses it, on this line alone
                err.append({"id": f"r{n}", "custom_id": cid, "response": {"status_code": 400, "request_id": "x",
                            "body": {"error": {"message": schema_refusal(rec["body"]),
                                               "type": "invalid_request_error"}}}, "error": None})
            elif self.should_fail(cid, attempt):
                err.append({"id": f"r{n}", "custom_id": cid, "response": {"status_code": 500, "request_id": "x",
                            "body": {"error": {"message": self.echo("server error"), "type": "server_error"}}},
                            "error": None})
            else:
                out.append({"id": f"r{n}", "custom_id": cid, "response": {"status_code": 200, "request_id": "x",
                            "body": self.with_tier(self.with_usage(completion(cid, rec["body"]["model"], self.reasoning,
                                               self.echo(f"answer:{cid}")), cid, "usage"))}, "error": None})
                if not (self.damage_ids.get(cid) and attempt == 1):
                    self.mark_succeeded(cid)
        if self.shuffle:
            random.Random(len(lines)).shuffle(out)
        out = [self.damaged(x["custom_id"], b["_attempts"][x["custom_id"]], json.dumps(x)) for x in out]
        status = "expired" if self.expire_after is not None and len(lines) > self.expire_after else "completed"
        if out and not self.no_output_file:
            fid = f"file-out-{next(self.ids)}"
            self.files[fid] = ("\n".join(out) + "\n").encode()
            b["output_file_id"] = fid
        if err:
            fid = f"file-err-{next(self.ids)}"
            self.files[fid] = ("\n".join(json.dumps(x) for x in err) + "\n").encode()
            b["error_file_id"] = fid
        b["status"] = status
        b["request_counts"] = {"total": len(lines), "completed": len(out), "failed": len(err)}

    def route(self, method, path, raw, headers, full_path):
        with self.lock:
            if method == "POST" and path == "/v1/files":
                content = parse_multipart(raw, headers.get("Content-Type") or headers.get("content-type"))
                fid = f"file-{next(self.ids)}"
                self.files[fid] = content
                return 200, {"id": fid, "object": "file", "bytes": len(content), "created_at": int(time.time()),
                             "filename": "input.jsonl", "purpose": "batch", "status": "processed"}, "application/json"
            if method == "POST" and path == "/v1/batches":
                if self.rate_limit_next > 0:
                    self.rate_limit_next -= 1
                    return 429, {"error": {"message": "Rate limit reached", "type": "requests",
                                           "code": "rate_limit_exceeded"}}, "application/json"
                body = json.loads(raw)
                bid = f"batch_{next(self.ids)}"
                lines = [json.loads(x) for x in self.files[body["input_file_id"]].decode().splitlines() if x.strip()]
                tokens = sum(queue_tokens(rec["body"]) for rec in lines)
                queued = sum(b["_tokens"] for b in self.batches.values() if b["status"] in ("validating", "in_progress"))
                if self.queue_limit is not None and queued + tokens > self.queue_limit:
                    self.over_queue += 1
                    self.batches[bid] = {"id": bid, "object": "batch", "endpoint": body["endpoint"], "status": "failed",
                                         "errors": {"object": "list", "data": [{"code": "token_limit_exceeded",
                                                    "message": f"Enqueued token limit reached ({queued + tokens} > "
                                                               f"{self.queue_limit})", "param": None, "line": None}]},
                                         "input_file_id": body["input_file_id"], "completion_window": "24h",
                                         "output_file_id": None, "error_file_id": None, "created_at": int(time.time()),
                                         "metadata": body.get("metadata"), "_tokens": 0,
                                         "request_counts": {"total": len(lines), "completed": 0, "failed": 0}}
                    return 200, self._batch_view(self.batches[bid]), "application/json"
                self.queue_peak = max(self.queue_peak, queued + tokens)
                attempts = {rec["custom_id"]: self.count_submission(rec["custom_id"]) for rec in lines}
                self.batches[bid] = {"_tokens": tokens, "id": bid, "object": "batch", "endpoint": body["endpoint"], "errors": None,
                                     "input_file_id": body["input_file_id"], "completion_window": "24h",
                                     "status": "validating", "output_file_id": None, "error_file_id": None,
                                     "created_at": int(time.time()), "metadata": body.get("metadata"),
                                     "request_counts": {"total": len(lines), "completed": 0, "failed": 0},
                                     "_polls": 0, "_attempts": attempts}
                return 200, self._batch_view(self.batches[bid]), "application/json"
            if method == "GET" and path == "/v1/batches":
                data = [self._batch_view(b) for b in reversed(list(self.batches.values()))]
                return 200, {"object": "list", "data": data, "has_more": False,
                             "first_id": data[0]["id"] if data else None, "last_id": data[-1]["id"] if data else None}, "application/json"
            m = re.fullmatch(r"/v1/batches/([^/]+)", path)
            if method == "GET" and m:
                b = self.batches[m.group(1)]
                if b["status"] in ("validating", "in_progress"):
                    b["_polls"] += 1
                    b["status"] = "in_progress"
                    if b["_polls"] >= self.polls_to_end:
                        self._finish(b)
                return 200, self._batch_view(b), "application/json"
            m = re.fullmatch(r"/v1/files/([^/]+)/content", path)
            if method == "GET" and m:
                return 200, self.files[m.group(1)], "application/octet-stream"
            if method == "POST" and path == "/v1/chat/completions":
                body = json.loads(raw)
                self.chat_calls += 1
                self.chat_bodies.append(body)
                if schema_refusal(body, self.vllm_rules):
                    return 400, {"error": {"message": schema_refusal(body, self.vllm_rules),
                                           "type": "invalid_request_error"}}, \
                        "application/json"
                cid = body["messages"][-1]["content"].split("id=")[-1] if "id=" in body["messages"][-1]["content"] else f"call{self.chat_calls}"
                if self.should_fail(cid, self.count_submission(cid)):
                    return self.fail_status, {"error": {"message": self.echo(f"server error for {cid}"), "type": "server_error"}}, \
                        "application/json"
                self.mark_succeeded(cid)
                answer = completion(cid, body["model"], self.reasoning, self.echo(f"answer:{cid}"))
                return 200, self.online_answer(self.with_tier(self.with_usage(answer, cid, "usage"))), \
                    "application/json"
        raise KeyError(path)
