"""Replay: answer requests from answers recorded earlier (e.g. the GAVEL release's LLM outputs).

The provider knows nothing about stages: it is given a ``lookup(request) -> str | None`` function. A request
the lookup has no answer for is answered ``errored`` with an error starting ``missing:`` and counted in
``missing`` (by stage), so a run says exactly how much of it the recording covers. Online only; no network.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable

from ..records import Request, Response
from .base import Provider, scrubbed


class ReplayProvider(Provider):
    name = "replay"
    supports_batch = False

    def __init__(self, lookup: Callable[[Request], str | None], why_missing: Callable[[Request], str] | None = None):
        self.lookup = lookup
        self.why_missing = why_missing or (lambda r: "no recorded answer")
        self.missing: Counter = Counter()

    def body(self, request: Request) -> dict:
        return {"model": request.model, "messages": request.messages}

    def complete(self, request: Request) -> Response:
        text = self.lookup(request)
        if text is None:
            reason = self.why_missing(request)
            self.missing[(request.stage, reason)] += 1
            return Response(custom_id=request.custom_id, status="errored", error=f"missing: {reason}",
                            provider=self.name)
        return scrubbed(Response(custom_id=request.custom_id, status="succeeded", text=text, provider=self.name,
                                 finish_reason="stop"))
