"""vLLM: its OpenAI-compatible server (``vllm serve``, reached through a base URL) for online calls, and
``vllm run-batch`` JSONL files (the OpenAI batch line format) for offline batches on a GPU node.

Chat-format quirks come from the registry: Qwen3 ``enable_thinking`` travels as ``chat_template_kwargs``,
gpt-oss ``reasoning_effort`` as a request field; reasoning text comes back in ``reasoning_content``."""

from __future__ import annotations

import json
from pathlib import Path

from ..records import Request, Response
from .base import BatchStatus, Provider, ProviderError, fill_missing
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


class VLLMRunBatch(Provider):
    """Offline batches with ``vllm run-batch`` on the machine (or GPU node) the runner runs on: ``submit``
    writes the OpenAI-format JSONL input and starts the command in its own session (it outlives a killed
    runner); ``poll`` waits for its exit-code file; ``fetch`` reads the output file. Files live in
    ``folder``: ``<tag>.in.jsonl``, ``<tag>.out.jsonl``, ``<tag>.rc``, ``<tag>.log``."""

    name = "vllm"
    max_batch_requests = 100_000
    max_batch_bytes = 1024 * 1024 * 1024

    def __init__(self, folder: str | Path, command: str = "vllm run-batch", extra_args: str = ""):
        self.folder = Path(folder)
        self.command = command
        self.extra_args = extra_args
        self._files = VLLMServer(client=object())  # body/JSONL/reading helpers only, no client needed

    def native_body(self, request: Request, model_id: str, params: dict) -> dict:
        return self._files.native_body(request, model_id, params)

    def check_ready(self) -> None:
        import shlex
        import shutil

        program = (shlex.split(self.command) or [""])[0]
        if not shutil.which(program):
            raise ProviderError(f"vllm run-batch: command {program!r} not found on this machine; install vLLM "
                                f"(pip install vllm) where the runner runs, or give --vllm-command")

    def _paths(self, tag: str) -> dict:
        return {k: self.folder / f"{tag}.{k}" for k in ("in.jsonl", "out.jsonl", "rc", "log", "started")}

    def submit(self, requests: list[Request], tag: str) -> str:
        import shlex
        import subprocess

        from ..registry import llm_model

        self.check_batch(requests)
        models = {llm_model(r.model).model_id for r in requests}
        if len(models) != 1:
            raise ProviderError(f"vllm run-batch: one model per batch, got {sorted(models)}")
        p = self._paths(tag)
        self._files.write_run_batch(requests, p["in.jsonl"])
        q = {k: shlex.quote(str(v)) for k, v in p.items()}
        script = (f"touch {q['started']}; {self.command} -i {q['in.jsonl']} -o {q['out.jsonl']}.partial "
                  f"--model {shlex.quote(models.pop())} {self.extra_args} > {q['log']} 2>&1; rc=$?; "
                  f"[ $rc -eq 0 ] && mv {q['out.jsonl']}.partial {q['out.jsonl']}; echo $rc > {q['rc']}")
        subprocess.Popen(["bash", "-c", script], start_new_session=True, stdout=subprocess.DEVNULL,
                         stderr=subprocess.DEVNULL)
        return tag

    def find_submitted(self, tag: str, since: float, known: set[str]) -> str | None:
        return tag if self._paths(tag)["started"].exists() else None

    def poll(self, batch_id: str) -> BatchStatus:
        rc = self._paths(batch_id)["rc"]
        return BatchStatus(ended=rc.exists(), state="ended" if rc.exists() else "running")

    def fetch(self, batch_id: str, custom_ids: list[str]) -> list[Response]:
        p = self._paths(batch_id)
        code = p["rc"].read_text().strip()
        if code != "0":
            tail = p["log"].read_text(errors="ignore")[-300:] if p["log"].exists() else ""
            return fill_missing([], custom_ids, self.name, batch_id, f"vllm run-batch exited {code}: {tail}")
        return [Response(**{**r.to_dict(), "batch_id": batch_id})
                for r in self._files.read_run_batch(p["out.jsonl"], custom_ids)]

    def complete(self, request: Request) -> Response:
        raise ProviderError("vllm run-batch has no online mode; use VLLMServer with a base URL")
