"""vLLM: its OpenAI-compatible server (``vllm serve``, reached through a base URL) for online calls, and
``vllm run-batch`` JSONL files (the OpenAI batch line format) for offline batches on a GPU node.

Chat-format quirks come from the registry: Qwen3 ``enable_thinking`` travels as ``chat_template_kwargs``,
gpt-oss ``reasoning_effort`` as a request field; reasoning text comes back in ``reasoning_content``."""

from __future__ import annotations

import json
from pathlib import Path

from ..records import Request, Response
from .base import ProviderError, fill_missing
from .openai_batch import OpenAIBatch, parse_chat


class VLLMServer(OpenAIBatch):
    name = "vllm"
    vllm = True
    supports_batch = False  # no batch endpoint on the server: online calls, or run-batch files

    def __init__(self, base_url: str | None = None, client=None, api_key: str | None = None, **kw):
        import os

        base_url = base_url or os.environ.get("VLLM_BASE_URL")
        if client is None and not base_url:
            raise ProviderError("vllm: give base_url (or VLLM_BASE_URL), e.g. http://127.0.0.1:8000/v1")
        super().__init__(client=client, base_url=base_url, api_key=api_key or os.environ.get("VLLM_API_KEY", "EMPTY"),
                         **kw)

    def write_run_batch(self, requests: list[Request], path: Path) -> Path:
        """Input file for ``vllm run-batch -i PATH -o OUT --model MODEL``."""
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(self.jsonl(requests))
        return path

    def read_run_batch(self, path: Path, custom_ids: list[str]) -> list[Response]:
        responses = []
        for n, line in enumerate(Path(path).read_text(encoding="utf-8").splitlines(), 1):
            if not line.strip():
                continue
            try:
                rec = json.loads(line)
            except json.JSONDecodeError as err:
                raise ProviderError(f"{path}, line {n}: not JSON ({err})") from None
            resp = rec.get("response") or {}
            if rec.get("error") or resp.get("status_code", 200) != 200:
                responses.append(Response(custom_id=rec.get("custom_id"), status="errored",
                                          error=json.dumps(rec.get("error") or resp)[:500], provider=self.name))
            else:
                responses.append(parse_chat(rec.get("custom_id"), resp.get("body") or {}, self.name))
        return fill_missing(responses, custom_ids, self.name, str(path), "no line in the run-batch output")
