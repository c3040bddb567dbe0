"""Requests and responses as plain typed records.

``custom_id`` is derived from the request's content (stage, model, case, item, rendered messages, sampling
parameters): the same request always gets the same id, so a rerun finds its cached answer, and any change
to the prompt or the parameters makes a new request. Ids are at most 64 characters of ``[A-Za-z0-9_-]``,
within every provider's limit (Anthropic's is the tightest: 64).
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import asdict, dataclass, field

MAX_CUSTOM_ID = 64
_SAFE = re.compile(r"[^A-Za-z0-9_-]+")


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

    @property
    def custom_id(self) -> str:
        return make_custom_id(self.stage, self.model, self.case_id, self.item, self.messages, self.params,
                              self.schema, self.subject)

    def to_dict(self) -> dict:
        return {**asdict(self), "custom_id": self.custom_id}


STATUSES = ("succeeded", "errored", "expired", "canceled")


@dataclass
class Response:
    """A provider's answer to one request. ``status`` is one of STATUSES; only ``succeeded`` responses are
    cached. ``reasoning`` holds separated thinking text where the model returns it. ``finish_reason`` is
    the provider's word for why generation stopped, normalised to ``stop``, ``length`` (cut by the output
    limit: ``truncated``), ``tool_calls`` or ``content_filter`` where the provider says."""

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
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict) -> Response:
        return cls(**{k: data.get(k) for k in cls.__dataclass_fields__})


def write_requests(path, requests: list[Request]) -> None:
    """Requests as JSONL (one Request per line), the input of ``python -m gavel stage``."""
    from pathlib import Path

    Path(path).parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", encoding="utf-8") as fh:
        for r in requests:
            fh.write(json.dumps({k: v for k, v in r.to_dict().items() if k != "custom_id"}, ensure_ascii=False) + "\n")


def read_requests(path) -> list[Request]:
    """Read a requests JSONL file; a bad line raises naming the file and line, nothing is skipped."""
    out = []
    with open(path, encoding="utf-8") as fh:
        for n, line in enumerate(fh, 1):
            if not line.strip():
                continue
            try:
                data = json.loads(line)
                out.append(Request(**{k: data[k] for k in ("stage", "model", "messages")},
                                   params=data.get("params") or {}, case_id=data.get("case_id"),
                                   item=data.get("item"), schema=data.get("schema"),
                                   subject=data.get("subject")))
            except (json.JSONDecodeError, KeyError, TypeError) as err:
                raise ValueError(f"{path}, line {n}: not a request ({type(err).__name__}: {err})") from None
    return out
