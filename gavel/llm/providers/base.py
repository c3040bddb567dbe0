"""What every provider module offers the stage runner."""

from __future__ import annotations

import dataclasses
import functools
import json
import threading
from dataclasses import dataclass, field

from ..records import Request, Response
from ..secrets import KEY_VARIABLES, scrub


class ProviderError(RuntimeError):
    pass


class BatchTooLargeError(ProviderError):
    pass


class UnknownProviderError(ProviderError, ValueError):
    """A provider name ``get_provider`` does not know (a ValueError too, as it was)."""


@dataclass
class BatchStatus:
    ended: bool
    state: str  # provider's own word
    counts: dict = field(default_factory=dict)


class Provider:
    """Interface. ``submit`` sends one batch (tagged so a crashed run can find it again) and returns its
    id; ``find_submitted`` looks a tagged batch up; ``poll`` says whether it ended; ``fetch`` returns one
    Response per request of the batch (a request with no result line becomes an errored Response, never
    silently missing); ``complete`` is the synchronous (online) call."""

    name = "base"
    #: capabilities: a server that answers with whatever model it was started with (a registry model is
    #: served there whatever its own provider), and a provider whose requests take a sampling ``seed``
    serves_any_model = False
    takes_seed = False
    _client = None
    max_batch_requests = 10_000
    max_batch_bytes = 100 * 1024 * 1024
    supports_batch = True
    #: the setting (config.ENVIRONMENT) whose address the SDK uses when no base_url is given
    base_url_env: str | None = None

    @property
    def client(self):
        """The SDK client, built once on first use (a dry run needs no credentials). Online mode calls this
        from several threads at once: construction is under a per-provider lock, so all share one client."""
        if self._client is None:
            # dict.setdefault is atomic: every thread gets the same lock
            with self.__dict__.setdefault("_client_lock", threading.Lock()):
                if self._client is None:
                    from gavel.core.config import load_dotenv_once

                    load_dotenv_once()
                    self._client = self.make_client()
        return self._client

    def make_client(self):
        raise NotImplementedError

    def check_ready(self) -> None:
        """Raise ProviderError, one line saying what to set, when this provider cannot send anything (no API
        key, a missing program). The runner calls it before it records or sends anything; a dry run does
        not. Default: a hosted provider given no client and no api_key needs its key variable set."""
        if self._client is not None:
            return
        from gavel.core.config import env

        names = KEY_VARIABLES.get(self.name, ())
        if names and not (getattr(self, "_client_args", None) or {}).get("api_key") \
                and not any(env(v) for v in names):
            raise ProviderError(f"{self.name}: no API key; set {' or '.join(names)} in the environment or in .env")

    def identity(self) -> dict:
        """Who answers, beyond the request itself: the runner's cache key covers it, so an answer from one
        provider, server or model file is never served as another's. Default: the provider's name and kind
        and the address it sends to: the base URL it was given, else the one its SDK takes from the environment
        (``base_url_env``: OPENAI_BASE_URL, ANTHROPIC_BASE_URL, GEMINI_BASE_URL), else None (the SDK's own)."""
        return {"provider": self.name, "kind": type(self).__name__, "base_url": self.endpoint()}

    def endpoint(self) -> str | None:
        """The address requests go to, or None for the SDK's default."""
        from gavel.core.config import env

        given = (getattr(self, "_client_args", None) or {}).get("base_url")
        return given or (env(self.base_url_env) if self.base_url_env else None)

    def body(self, request: Request) -> dict:
        """The provider-native request body: registry settings of the request's model, overridden by the
        request's own params, mapped by ``native_body``."""
        from ..registry import body_params, llm_model

        model = llm_model(request.model)
        return self.native_body(request, model.model_id, {**body_params(model), **request.params})

    def native_body(self, request: Request, model_id: str, params: dict) -> dict:
        raise NotImplementedError

    def request_size(self, request: Request) -> int:
        return len(json.dumps(self.body(request)).encode("utf-8")) + 200

    def check_batch(self, requests: list[Request]) -> None:
        if len(requests) > self.max_batch_requests:
            raise BatchTooLargeError(f"{self.name}: {len(requests)} requests > {self.max_batch_requests} per batch")
        size = sum(self.request_size(r) for r in requests)
        if size > self.max_batch_bytes:
            raise BatchTooLargeError(f"{self.name}: batch of {size} bytes > {self.max_batch_bytes}")

    def queue_limit(self, requests: list[Request]) -> int | None:
        """The provider's limit on the input tokens of all its unfinished batches of these requests' model, or
        None (no such limit: every batch is submitted at once)."""
        return None

    def enqueued_tokens(self, request: Request) -> int:
        """What a request counts against ``queue_limit``."""
        return 0

    def split(self, requests: list[Request]) -> list[list[Request]]:
        """Split requests into batches within the provider's count and size limits."""
        return self.chunks(requests, [self.request_size(r) for r in requests], self.max_batch_requests,
                           self.max_batch_bytes)

    def chunks(self, requests: list, sizes: list[int], max_count: int | None, max_bytes: int,
               unit: str = "bytes") -> list[list]:
        """``requests`` in order, cut where the next would pass ``max_count`` requests or ``max_bytes`` (``sizes``:
        each one's, in ``unit``); one alone over ``max_bytes`` is refused, naming it. Works on any items (a dry
        run counts batches from sizes alone)."""
        out, current, size = [], [], 0
        for r, s in zip(requests, sizes):
            if s > max_bytes:
                raise BatchTooLargeError(f"{self.name}: request {getattr(r, 'custom_id', r)} alone is {s:,} {unit} > "
                                         f"{max_bytes:,}")
            if current and ((max_count and len(current) >= max_count) or size + s > max_bytes):
                out.append(current)
                current, size = [], 0
            current.append(r)
            size += s
        if current:
            out.append(current)
        return out

    def submit(self, requests: list[Request], tag: str) -> str:
        raise NotImplementedError

    def find_submitted(self, tag: str, since: float, known: set[str], custom_ids: list[str] | None = None) -> str | None:
        """The id of the batch submitted under ``tag`` (after ``since``, not one of ``known``, holding exactly
        ``custom_ids``), or None if it never reached the provider."""
        raise NotImplementedError

    def poll(self, batch_id: str) -> BatchStatus:
        raise NotImplementedError

    def fetch(self, batch_id: str, custom_ids: list[str]) -> list[Response]:
        raise NotImplementedError

    def complete(self, request: Request) -> Response:
        raise NotImplementedError


def scrubbed(response: Response) -> Response:
    """The response with any API key removed from its text, reasoning and error."""
    fields = {k: scrub(getattr(response, k)) for k in ("text", "reasoning", "error")}
    return dataclasses.replace(response, **fields)


def scrub_errors(method):
    """Decorator for provider methods that call an SDK: an exception whose message holds an API key (an
    SDK's "Incorrect API key provided: sk-...") is raised again as a ProviderError without it."""
    @functools.wraps(method)
    def wrapper(*args, **kwargs):
        try:
            return method(*args, **kwargs)
        except Exception as err:
            text = f"{type(err).__name__}: {err}"
            if scrub(text) == text:
                raise
            raise ProviderError(scrub(text)) from None
    return wrapper


def error_response(request: Request, err: BaseException, provider: str) -> Response:
    """An online call that failed (after the SDK's own retries): errored, retryable, its message scrubbed."""
    return Response(custom_id=request.custom_id, status="errored", error=scrub(f"{type(err).__name__}: {err}")[:500],
                    provider=provider)


def fill_missing(responses: list[Response], custom_ids: list[str], provider: str, batch_id: str,
                 reason: str) -> list[Response]:
    """Make sure every requested id has a Response: ids the provider returned nothing for get an errored
    one saying so; ids the provider returned twice keep the first."""
    seen, out, wanted = set(), [], set(custom_ids)
    for r in responses:
        if r.custom_id in seen or r.custom_id not in wanted:
            continue
        seen.add(r.custom_id)
        out.append(scrubbed(r))
    reason = scrub(reason)
    for cid in custom_ids:
        if cid not in seen:
            out.append(Response(custom_id=cid, status="errored", error=reason, provider=provider, batch_id=batch_id))
    return out


def unusable_answer(custom_id: str, provider: str, batch_id: str | None, reason: str) -> Response:
    """A provider's answer that arrived (HTTP 200, a result line) but lacks what an answer needs: a missing or
    null field, a field of the wrong type. It is a failed answer (errored, so the runner asks again) whose
    error says which field, never an exception that stops the run."""
    return Response(custom_id=custom_id, status="errored", error=scrub(f"{provider}: unusable answer: {reason}")[:500],
                    provider=provider, batch_id=batch_id)


def what(value) -> str:
    """How a field that is not what was expected is described in an error: ``null``, or its type."""
    return "null" if value is None else f"a {type(value).__name__}"


def field_state(container: dict, key: str) -> str:
    """``missing`` when ``key`` is absent from ``container``, else :func:`what` its value is."""
    return "missing" if key not in container else what(container[key])
