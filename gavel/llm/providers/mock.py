"""A provider that answers locally and deterministically (for notebooks, docs and tests): each answer is a
function of the request (by default an echo of its custom_id), batches end after ``polls_to_end`` polls."""

from __future__ import annotations

import itertools
import json

from ..records import Request, Response
from .base import BatchStatus, Provider, fill_missing, scrubbed


class MockProvider(Provider):
    name = "mock"
    max_batch_requests = 1000
    max_batch_bytes = 10 * 1024 * 1024

    def __init__(self, answer=None, polls_to_end: int = 1, fail=None):
        self.answer = answer or (lambda r: json.dumps({"echo": r.custom_id}))
        self.fail = fail or (lambda r, attempt: False)
        self.polls_to_end = polls_to_end
        self.batches: dict[str, dict] = {}
        self.submissions: list[tuple[str, str]] = []  # (batch id, custom id)
        self._ids = itertools.count(1)

    def body(self, request: Request) -> dict:
        return {"messages": request.messages, **request.params}

    def submit(self, requests: list[Request], tag: str) -> str:
        self.check_batch(requests)
        bid = f"mock-{next(self._ids)}"
        self.batches[bid] = {"tag": tag, "requests": list(requests), "polls": 0}
        self.submissions += [(bid, r.custom_id) for r in requests]
        return bid

    def find_submitted(self, tag: str, since: float, known: set[str], custom_ids: list[str] | None = None) -> str | None:
        return next((b for b, v in self.batches.items() if v["tag"] == tag), None)

    def poll(self, batch_id: str) -> BatchStatus:
        b = self.batches[batch_id]
        b["polls"] += 1
        return BatchStatus(ended=b["polls"] >= self.polls_to_end, state="ended" if b["polls"] >= self.polls_to_end else "running")

    def _answer(self, r: Request, batch_id: str | None) -> Response:
        attempt = sum(1 for _, cid in self.submissions if cid == r.custom_id)
        if self.fail(r, attempt):
            return Response(custom_id=r.custom_id, status="errored", error="mock failure", provider=self.name,
                            batch_id=batch_id)
        text = self.answer(r)
        return Response(custom_id=r.custom_id, status="succeeded", text=text, input_tokens=len(str(r.messages)) // 4,
                        output_tokens=len(text) // 4, provider=self.name, batch_id=batch_id)

    def fetch(self, batch_id: str, custom_ids: list[str]) -> list[Response]:
        return fill_missing([self._answer(r, batch_id) for r in self.batches[batch_id]["requests"]], custom_ids,
                            self.name, batch_id, "no result")

    def complete(self, request: Request) -> Response:
        self.submissions.append(("online", request.custom_id))
        return scrubbed(self._answer(request, None))
