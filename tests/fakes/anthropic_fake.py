"""Fake Anthropic API: message batches (create, retrieve, list, JSONL results) and messages."""

from __future__ import annotations

import itertools
import json
import random
import re
from datetime import UTC, datetime, timedelta

from . import FakeServer
from .schema_rules import refusal


def message(custom_id: str, model: str, thinking: bool, text: str | None = None) -> dict:
    content = []
    if thinking:
        content.append({"type": "thinking", "thinking": f"thinking about {custom_id}", "signature": "sig"})
    content.append({"type": "text", "text": text or f"answer:{custom_id}"})
    return {"id": f"msg_{custom_id[-8:]}", "type": "message", "role": "assistant", "model": model,
            "content": content, "stop_reason": "end_turn", "stop_sequence": None,
            "usage": {"input_tokens": 13, "output_tokens": 9}}


def schema_refusal(params: dict) -> str | None:
    """Why the service would refuse these message params' schemas, or None: a forced tool's ``input_schema``
    (strict tools and JSON outputs, ``output_config.format``, by their strict rules)."""
    found = [refusal(t.get("input_schema"), "anthropic-json" if t.get("strict") else "anthropic")
             for t in params.get("tools") or []]
    fmt = (params.get("output_config") or {}).get("format")
    if fmt is not None:
        found.append(refusal(fmt.get("schema"), "anthropic-json") if fmt.get("type") == "json_schema"
                     else f"output_config.format.type: {fmt.get('type')!r} is not 'json_schema'")
    return next((f for f in found if f), None)


def now_iso(offset: int = 0) -> str:
    return (datetime.now(UTC) + timedelta(hours=offset)).isoformat().replace("+00:00", "Z")


class FakeAnthropic(FakeServer):
    def __init__(self, expire_ids: set[str] | None = None, shuffle: bool = True):
        super().__init__()
        self.batches: dict[str, dict] = {}
        self.results: dict[str, list] = {}
        self.ids = itertools.count(1)
        self.expire_ids = expire_ids or set()
        self.shuffle = shuffle

    def _view(self, b):
        return {k: v for k, v in b.items() if not k.startswith("_")}

    def _finish(self, b):
        out = []
        for req in b["_requests"]:
            cid = req["custom_id"]
            refused = schema_refusal(req["params"])
            if cid in self.expire_ids:
                result = {"type": "expired"}
            elif refused:  # a schema the service does not take: that request errors
                result = {"type": "errored", "error": {"type": "error", "error": {
                    "type": "invalid_request_error", "message": refused}}}
            elif self.should_fail(cid, b["_attempts"][cid]):
                result = {"type": "errored", "error": {"type": "error", "error": {
                    "type": "api_error", "message": self.echo("overloaded")}}}
            else:
                thinking = "thinking" in req["params"]
                result = {"type": "succeeded", "message": self.with_usage(
                    message(cid, req["params"]["model"], thinking, self.echo(f"answer:{cid}")), cid, "usage")}
                if not (self.damage_ids.get(cid) and b["_attempts"][cid] == 1):
                    self.mark_succeeded(cid)
            out.append({"custom_id": cid, "result": result})
        if self.shuffle:
            random.Random(len(out)).shuffle(out)
        self.results[b["id"]] = out
        counts = {"processing": 0, "succeeded": 0, "errored": 0, "canceled": 0, "expired": 0}
        for r in out:
            counts[r["result"]["type"]] += 1
        b.update(processing_status="ended", ended_at=now_iso(), request_counts=counts,
                 results_url=f"{self.url}/v1/messages/batches/{b['id']}/results")

    def route(self, method, path, raw, headers, full_path):
        with self.lock:
            if method == "POST" and path == "/v1/messages/batches":
                body = json.loads(raw)
                bid = f"msgbatch_{next(self.ids):04d}"
                attempts = {r["custom_id"]: self.count_submission(r["custom_id"]) for r in body["requests"]}
                self.batches[bid] = {"id": bid, "type": "message_batch", "processing_status": "in_progress",
                                     "created_at": now_iso(), "expires_at": now_iso(24), "ended_at": None,
                                     "archived_at": None, "cancel_initiated_at": None, "results_url": None,
                                     "request_counts": {"processing": len(body["requests"]), "succeeded": 0,
                                                        "errored": 0, "canceled": 0, "expired": 0},
                                     "_requests": body["requests"], "_attempts": attempts, "_polls": 0}
                return 200, self._view(self.batches[bid]), "application/json"
            if method == "GET" and path == "/v1/messages/batches":
                data = [self._view(b) for b in reversed(list(self.batches.values()))]
                return 200, {"data": data, "has_more": False, "first_id": data[0]["id"] if data else None,
                             "last_id": data[-1]["id"] if data else None}, "application/json"
            m = re.fullmatch(r"/v1/messages/batches/([^/]+)", path)
            if method == "GET" and m:
                b = self.batches[m.group(1)]
                if b["processing_status"] == "in_progress":
                    b["_polls"] += 1
                    if b["_polls"] >= self.polls_to_end:
                        self._finish(b)
                return 200, self._view(b), "application/json"
            m = re.fullmatch(r"/v1/messages/batches/([^/]+)/results", path)
            if method == "GET" and m:
                b = self.batches[m.group(1)]
                lines = "\n".join(self.damaged(r["custom_id"], b["_attempts"][r["custom_id"]], json.dumps(r))
                                  for r in self.results[m.group(1)]) + "\n"
                return 200, lines.encode(), "application/binary"
            if method == "POST" and path == "/v1/messages":
                body = json.loads(raw)
                content = body["messages"][-1]["content"]
                text = content if isinstance(content, str) else \
                    " ".join(b.get("text", "") for b in content if isinstance(b, dict))
                cid = text.split("id=")[-1] if "id=" in text else "online"
                if schema_refusal(body):
                    return 400, {"type": "error", "error": {"type": "invalid_request_error",
                                                            "message": schema_refusal(body)}}, "application/json"
                if self.should_fail(cid, self.count_submission(cid)):
                    return 500, {"type": "error", "error": {"type": "api_error",
                                                            "message": self.echo(f"server error for {cid}")}}, \
                        "application/json"
                self.mark_succeeded(cid)
                answer = message(cid, body["model"], "thinking" in body, self.echo(f"answer:{cid}"))
                return 200, self.online_answer(self.with_usage(answer, cid, "usage")), "application/json"
        raise KeyError(path)
