"""A provider that answers locally and deterministically (for notebooks, docs and tests): each answer is a
function of the request (by default an echo of its custom_id), batches end after ``polls_to_end`` polls.

Its bookkeeping is linear in the number of requests: each request's custom_id (a hash of its content) is
computed once per submission, and the attempt number comes from a per-id counter, not from a scan of every
earlier submission (``benchmarks/mock_provider.py`` prints requests/s at two sizes and their ratio)."""

from __future__ import annotations

import itertools
import json
import threading
from collections import Counter

from .. import usage as usage_of
from ..records import Request, Response
from .base import BatchStatus, Provider, fill_missing, scrubbed


class MockProvider(Provider):
    name = "mock"
    serves_any_model = True
    takes_seed = True
    max_batch_requests = 1000
    max_batch_bytes = 10 * 1024 * 1024

    def __init__(self, answer=None, polls_to_end: int = 1, fail=None, variant: str | None = None,
                 record: bool = True):
        self.answer = answer or (lambda r: json.dumps({"echo": r.custom_id}))
        # what answers, when it is not the default stand-in (a seeded noisy judge, gavel.runs.stand_in): it
        # enters the cache key, so that its answers and the default's are never served as each other's
        self.variant = variant
        self.fail = fail or (lambda r, attempt: False)
        self.polls_to_end = polls_to_end
        self.batches: dict[str, dict] = {}
        self.submissions: list[tuple[str, str]] = []  # (batch id or "online", custom id), in order
        self.attempts: Counter = Counter()  # custom id -> times submitted
        self._ids = itertools.count(1)
        self._lock = threading.Lock()  # online mode calls complete() from several threads
        # record=False: no log of what was sent (``submissions`` stays empty; ``attempts`` is counted only for
        # a ``fail`` of one's own): the command line's mock holds nothing per request of a long run
        self.record = record
        self._counts_attempts = fail is not None

    def identity(self) -> dict:
        """The default identity; a ``variant`` adds itself (the default mock's cache keys do not change)."""
        return {**super().identity(), **({"variant": self.variant} if self.variant else {})}

    def body(self, request: Request) -> dict:
        return {"messages": request.messages, **request.params}

    def _record(self, where: str, custom_ids: list[str]) -> None:
        if not self.record and not self._counts_attempts:
            return
        with self._lock:
            if self.record:
                self.submissions += [(where, cid) for cid in custom_ids]
            self.attempts.update(custom_ids)

    def submit(self, requests: list[Request], tag: str) -> str:
        self.check_batch(requests)
        bid = f"mock-{next(self._ids)}"
        ids = [r.custom_id for r in requests]
        self.batches[bid] = {"tag": tag, "requests": list(zip(ids, requests)), "polls": 0}
        self._record(bid, ids)
        return bid

    def find_submitted(self, tag: str, since: float, known: set[str], custom_ids: list[str] | None = None) -> str | None:
        return next((b for b, v in self.batches.items() if v["tag"] == tag), None)

    def poll(self, batch_id: str) -> BatchStatus:
        b = self.batches[batch_id]
        b["polls"] += 1
        return BatchStatus(ended=b["polls"] >= self.polls_to_end, state="ended" if b["polls"] >= self.polls_to_end else "running")

    def _answer(self, cid: str, r: Request, batch_id: str | None) -> Response:
        if self.fail(r, self.attempts[cid]):
            return Response(custom_id=cid, status="errored", error="mock failure", provider=self.name,
                            batch_id=batch_id)
        text = self.answer(r)
        # the stand-in keeps no prompt cache: it knows it read and wrote none
        usage = usage_of.made(input=len(str(r.messages)) // 4, output=len(text) // 4, cache_read=0, cache_write=0)
        return Response(custom_id=cid, status="succeeded", text=text, input_tokens=usage["input"],
                        output_tokens=usage["output"], usage=usage, provider=self.name, batch_id=batch_id)

    def fetch(self, batch_id: str, custom_ids: list[str]) -> list[Response]:
        return fill_missing([self._answer(cid, r, batch_id) for cid, r in self.batches[batch_id]["requests"]],
                            custom_ids, self.name, batch_id, "no result")

    def complete(self, request: Request) -> Response:
        cid = request.custom_id
        self._record("online", [cid])
        return scrubbed(self._answer(cid, request, None))
