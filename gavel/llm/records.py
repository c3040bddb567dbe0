"""Requests and responses as plain typed records.

``custom_id`` is derived from the request's content (stage, model, case, item, rendered messages, the
request's own parameters, schema, subject): the same request always gets the same id, and any change to
the prompt or the parameters makes a new request. It is the request's identity, sent to batch APIs as the
request id; the runner caches answers under a key that adds who answers and the body as sent
(``StageRunner.key``). Ids are at most 64 characters of ``[A-Za-z0-9_-]``,
within every provider's limit (Anthropic's is the tightest: 64).
"""

from __future__ import annotations

import copy
import hashlib
import json
import re
import weakref
from dataclasses import asdict, dataclass, field, fields

from gavel.core import jsonl

MAX_CUSTOM_ID = 64
_SAFE = re.compile(r"[^A-Za-z0-9_-]+")
ROLES = ("system", "user", "assistant")
#: the fields of one line of a requests JSONL file (``custom_id`` is optional and must match the content)
REQUEST_FIELDS = ("stage", "model", "messages", "params", "case_id", "item", "schema", "subject", "custom_id")


#: id(request) -> (a weak reference to it, its custom_id): each live request's id, computed once
_IDS: dict[int, tuple] = {}


class RequestError(ValueError):
    """A request that cannot be sent as given; the message names the field and what to set."""


def canonical_json(obj) -> str:
    return json.dumps(obj, sort_keys=True, ensure_ascii=False, separators=(",", ":"))


def make_custom_id(stage: str, model: str, case_id: str | None, item: str | None, messages: list[dict],
                   params: dict, schema: dict | None = None, subject: str | None = None) -> str:
    """``<stage>-<hash>``: a readable prefix plus 40 hex digits of sha256 over the whole content."""
    body = {"stage": stage, "model": model, "case": case_id, "item": item, "messages": messages, "params": params}
    # optional fields enter the hash only when set: requests without them keep the ids they had before
    if schema is not None:
        body["schema"] = schema
    if subject is not None:
        body["subject"] = subject
    content = canonical_json(body)
    digest = hashlib.sha256(content.encode("utf-8")).hexdigest()[:40]
    prefix = _SAFE.sub("_", stage)[: MAX_CUSTOM_ID - 41] or "req"
    return f"{prefix}-{digest}"


@dataclass
class Request:
    """One LLM call. ``messages`` are ``{"role": "system"|"user"|"assistant", "content": str}``;
    ``params`` are the sampling parameters sent (temperature, top_p, max_tokens, provider quirks).
    ``schema`` is the JSON Schema the answer must follow, ``{"name": str, "schema": {...}}``; each provider
    sends it in its own structured-output form where it has one (and the stage parser checks it anyway)."""

    stage: str
    model: str  # gavel registry name (release_name)
    messages: list[dict]
    params: dict = field(default_factory=dict)
    case_id: str | None = None
    item: str | None = None
    schema: dict | None = None
    subject: str | None = None  # whose text the request is about (the summarizing model, "human", a run)

    def __post_init__(self):
        for name in ("stage", "model"):
            if not isinstance(getattr(self, name), str) or not getattr(self, name):
                raise RequestError(f"field {name!r} must be a non-empty string, got {getattr(self, name)!r}")
        if not isinstance(self.messages, list):
            raise RequestError(f"field 'messages' must be a list of {{\"role\": ..., \"content\": ...}}, got "
                               f"{type(self.messages).__name__}")
        for n, msg in enumerate(self.messages):
            if not isinstance(msg, dict) or msg.get("role") not in ROLES or not isinstance(msg.get("content"), str):
                raise RequestError(f"field 'messages', message {n}: must be {{\"role\": one of {', '.join(ROLES)}, "
                                   f"\"content\": a string}}, got {str(msg)[:80]!r}")
        if not isinstance(self.params, dict):
            raise RequestError(f"field 'params' must be an object of sampling parameters (e.g. "
                               f"{{\"temperature\": 0.2, \"max_tokens\": 512}}), got {type(self.params).__name__}")
        if self.schema is not None and not (isinstance(self.schema, dict) and "schema" in self.schema):
            raise RequestError("field 'schema' must be {\"name\": ..., \"schema\": {a JSON Schema}}")

    def __setattr__(self, name, value):  # a field set anew: the id is computed again
        _IDS.pop(id(self), None)
        object.__setattr__(self, name, value)

    @property
    def custom_id(self) -> str:
        """Computed once per request (a hash of its whole content; a request is not changed in place after it
        is made: ``dataclasses.replace`` makes another, and setting a field computes the id again). Kept
        beside the request, not in it: ``Request(**request.__dict__)`` is the same request."""
        known = _IDS.get(id(self))
        if known is not None and known[0]() is self:
            return known[1]
        cid = make_custom_id(self.stage, self.model, self.case_id, self.item, self.messages, self.params,
                             self.schema, self.subject)
        key = id(self)
        _IDS[key] = (weakref.ref(self, lambda _, key=key: _IDS.pop(key, None)), cid)
        return cid

    def to_dict(self) -> dict:
        return {**asdict(self), "custom_id": self.custom_id}


STATUSES = ("succeeded", "errored", "expired", "canceled")


@dataclass
class Response:
    """A provider's answer to one request. ``status`` is one of STATUSES; only ``succeeded`` responses are
    cached. ``reasoning`` holds separated thinking text where the model returns it. ``finish_reason`` is
    the provider's word for why generation stopped, normalised to ``stop``, ``length`` (cut by the output
    limit: ``truncated``), ``tool_calls`` or ``content_filter`` where the provider says. ``usage`` is the
    usage the provider reported, by token class (gavel.llm.usage; None in a class = not reported), with the
    mode and time it was answered; ``input_tokens`` / ``output_tokens`` are its input and output."""

    custom_id: str
    status: str
    text: str | None = None
    reasoning: str | None = None
    input_tokens: int | None = None
    output_tokens: int | None = None
    error: str | None = None
    provider: str | None = None
    batch_id: str | None = None
    finish_reason: str | None = None
    usage: dict | None = None

    def __post_init__(self):
        if self.status not in STATUSES:
            raise ValueError(f"response {self.custom_id}: unknown status {self.status!r}")

    @property
    def ok(self) -> bool:
        return self.status == "succeeded"

    @property
    def truncated(self) -> bool:
        """Cut by the output-token limit: the text is incomplete and must not be parsed as a full answer."""
        return self.finish_reason == "length"

    def to_dict(self) -> dict:
        """The fields as a dict (``usage`` a copy): what ``dataclasses.asdict`` gives, without its recursion."""
        d = {name: getattr(self, name) for name in _RESPONSE_FIELDS}
        if d["usage"] is not None:
            d["usage"] = copy.deepcopy(d["usage"])
        return d

    @classmethod
    def from_dict(cls, data: dict) -> Response:
        return cls(**{k: data.get(k) for k in cls.__dataclass_fields__})


_RESPONSE_FIELDS = tuple(f.name for f in fields(Response))


def write_requests(path, requests: list[Request]) -> None:
    """Requests as JSONL (one Request per line), the input of ``python -m gavel stage``."""
    from pathlib import Path

    Path(path).parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", encoding="utf-8") as fh:
        for r in requests:
            fh.write(json.dumps({k: v for k, v in r.to_dict().items() if k != "custom_id"}, ensure_ascii=False) + "\n")


def read_requests(path, lines: list[int] | None = None) -> list[Request]:
    """Read a requests JSONL file. A bad line raises RequestError naming the file, the line, the field and
    what to set; nothing is skipped. An unknown top-level field is an error (sampling parameters such as
    ``temperature`` go inside ``params``), not ignored. ``lines``, when given, receives each request's line
    number."""
    out = []
    try:
        read = jsonl.read_file(path)
    except jsonl.JSONLError as err:
        raise RequestError(str(err)) from None
    for rec in read:
        n, data = rec.number, rec.value
        where = f"{path}, line {n}"
        if not isinstance(data, dict):
            raise RequestError(f"{where}: a request must be a JSON object, got {type(data).__name__}")
        unknown = sorted(set(data) - set(REQUEST_FIELDS))
        if unknown:
            hint = (' (sampling parameters go inside "params", e.g. "params": {"temperature": 0.2})'
                    if set(unknown) & {"temperature", "top_p", "max_tokens", "seed", "reasoning_effort"} else "")
            raise RequestError(f"{where}: unknown field {unknown[0]!r}{hint}; known fields: "
                               f"{', '.join(REQUEST_FIELDS)}")
        missing = [k for k in ("stage", "model", "messages") if k not in data]
        if missing:
            raise RequestError(f"{where}: field {missing[0]!r} is missing; every request needs stage, model "
                               f"and messages")
        try:
            request = Request(**{k: data[k] for k in ("stage", "model", "messages")},
                              params={} if data.get("params") is None else data["params"],
                              case_id=data.get("case_id"), item=data.get("item"), schema=data.get("schema"),
                              subject=data.get("subject"))
        except RequestError as err:
            raise RequestError(f"{where}: {err}") from None
        if "custom_id" in data and data["custom_id"] != request.custom_id:
            raise RequestError(f"{where}: field 'custom_id' is {data['custom_id']!r} but the request's content "
                               f"gives {request.custom_id!r} (ids are derived from the content); remove the field")
        out.append(request)
        if lines is not None:
            lines.append(n)
    return out


def repeats(requests: list[Request]) -> dict[int, int]:
    """Requests that repeat an earlier one (same custom_id, hence the same content): {index: index of the
    first}. The runner sends each distinct request once and answers every repeat from it."""
    first: dict[str, int] = {}
    out = {}
    for i, r in enumerate(requests):
        cid = r.custom_id
        if cid in first:
            out[i] = first[cid]
        else:
            first[cid] = i
    return out
