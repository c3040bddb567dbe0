"""vLLM: its OpenAI-compatible server (``vllm serve``, reached through a base URL) for online calls, and
``vllm run-batch`` JSONL files (the OpenAI batch line format) for offline batches on a GPU node.

Chat-format quirks come from the registry: Qwen3 ``enable_thinking`` travels as ``chat_template_kwargs``,
gpt-oss ``reasoning_effort`` as a request field; reasoning text comes back in ``reasoning_content``."""

from __future__ import annotations

import json
import os
from pathlib import Path

from gavel.core import config

from ..records import Request, Response
from .base import BatchStatus, Provider, ProviderError, fill_missing
from .openai_batch import OpenAIBatch, bad_line_responses, parse_chat, read_result_lines, unreadable_note


class VLLMServer(OpenAIBatch):
    name = "vllm"
    base_url_env = "VLLM_BASE_URL"
    serves_any_model = True
    vllm = True
    supports_batch = False  # no batch endpoint on the server: online calls, or run-batch files

    def __init__(self, base_url: str | None = None, client=None, api_key: str | None = None,
                 served_as: str | None = None, **kw):
        # served_as: a name standing for the server in the cache key instead of its address and served models
        # (a SLURM array's tasks each start a server on their own port; their answers are one server's)
        self.served_as = served_as
        base_url = base_url or config.env("VLLM_BASE_URL")
        if client is None and not base_url:
            raise ProviderError("vllm: give base_url (or VLLM_BASE_URL), e.g. http://127.0.0.1:8000/v1")
        super().__init__(client=client, base_url=base_url, api_key=api_key or config.env("VLLM_API_KEY") or "EMPTY",
                         **kw)

    def identity(self) -> dict:
        """Who answers: the address, and the models the server there says it serves (one server restarted
        with another model at the same URL is another identity, so its answers are never the old ones); with
        ``served_as``, that name instead (the SLURM array job names the one model its servers serve)."""
        if self.served_as:
            return {"provider": self.name, "kind": type(self).__name__, "served_as": self.served_as}
        return {**super().identity(), "serves": self.served_models()}

    def served_models(self) -> list[str] | None:
        """The model ids the server reports (``GET {base_url}/models``), asked once per provider object;
        None when there is no address or the server does not say (down, no such route)."""
        if "_served" not in self.__dict__:
            self._served = served_models(self.endpoint(), self._client_args.get("api_key"))
        return self._served

    def write_run_batch(self, requests: list[Request], path: Path) -> Path:
        """Input file for ``vllm run-batch -i PATH -o OUT --model MODEL``."""
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(self.jsonl(requests))
        return path

    def read_run_batch(self, path: Path, custom_ids: list[str]) -> list[Response]:
        """One Response per custom_id; a damaged line becomes its request's (retryable) error, naming the file
        and line, and the other lines are kept."""
        records, bad = read_result_lines(Path(path).read_text(encoding="utf-8", errors="replace"), str(path))
        responses = []
        for rec in records:
            resp = rec.get("response") if isinstance(rec.get("response"), dict) else {}
            if rec.get("error") or resp.get("status_code", 200) != 200:
                responses.append(Response(custom_id=rec["custom_id"], status="errored",
                                          error=json.dumps(rec.get("error") or resp)[:500], provider=self.name))
            else:
                responses.append(parse_chat(rec["custom_id"], resp.get("body"), self.name))
        responses += bad_line_responses(bad, self.name, None)
        return fill_missing(responses, custom_ids, self.name, str(path),
                            "no line in the run-batch output" + unreadable_note(bad))


def served_models(base_url: str | None, api_key: str | None = None, timeout: float = 10.0) -> list[str] | None:
    """The sorted model ids an OpenAI-compatible server lists at ``/models``, or None when it cannot say."""
    import urllib.request

    if not base_url:
        return None
    req = urllib.request.Request(base_url.rstrip("/") + "/models",
                                 headers={"Authorization": f"Bearer {api_key}"} if api_key else {})
    try:
        with urllib.request.urlopen(req, timeout=timeout) as answer:
            data = json.loads(answer.read(1 << 20))
        return sorted(str(m["id"]) for m in data["data"])
    except (OSError, ValueError, KeyError, TypeError):
        return None


class VLLMRunBatch(Provider):
    """Offline batches with ``vllm run-batch`` on the machine (or GPU node) the runner runs on: ``submit``
    writes the OpenAI-format JSONL input and starts the command in its own session (it outlives a killed
    runner); ``poll`` waits for its exit-code file; ``fetch`` reads the output file. Files live in
    ``folder``: ``<tag>.in.jsonl``, ``<tag>.out.jsonl``, ``<tag>.rc``, ``<tag>.log``, ``<tag>.pid``. A process
    that died without writing its exit code (killed, out of memory, node rebooted) is found by its pid: the
    batch ends as failed with that error, and its requests are sent again."""

    name = "vllm"
    serves_any_model = True
    takes_seed = True
    max_batch_requests = 100_000
    max_batch_bytes = 1024 * 1024 * 1024

    def __init__(self, folder: str | Path, command: str = "vllm run-batch", extra_args: str = ""):
        self.folder = Path(folder)
        self.command = command
        self.extra_args = extra_args
        self._procs: dict = {}  # tag -> Popen of the batches this process started
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
        return {k: self.folder / f"{tag}.{k}" for k in ("in.jsonl", "out.jsonl", "rc", "log", "started", "pid")}

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
        # the shell records its pid (the process group of the command too) before it starts; the exit code is
        # written to a temporary file and renamed, so an .rc file is never seen empty or half written
        script = (f"echo $$ > {q['pid']}.tmp && mv -f {q['pid']}.tmp {q['pid']}; touch {q['started']}; "
                  f"{self.command} -i {q['in.jsonl']} -o {q['out.jsonl']}.partial "
                  f"--model {shlex.quote(models.pop())} {self.extra_args} > {q['log']} 2>&1; rc=$?; "
                  f"[ $rc -eq 0 ] && mv {q['out.jsonl']}.partial {q['out.jsonl']}; "
                  f"echo $rc > {q['rc']}.tmp && mv -f {q['rc']}.tmp {q['rc']}")
        proc = subprocess.Popen(["bash", "-c", script], start_new_session=True, stdout=subprocess.DEVNULL,
                                stderr=subprocess.DEVNULL)
        self._procs[tag] = proc  # polled (and so reaped) while this process lives
        return tag

    def find_submitted(self, tag: str, since: float, known: set[str], custom_ids: list[str] | None = None) -> str | None:
        p = self._paths(tag)
        return tag if p["started"].exists() or p["pid"].exists() else None

    def _exit_code(self, batch_id: str) -> str | None:
        rc = self._paths(batch_id)["rc"]
        try:
            code = rc.read_text().strip()
        except FileNotFoundError:
            return None
        return code or None  # an empty file (an old, non-atomic writer caught mid-write) is no exit code yet

    def alive(self, batch_id: str) -> bool:
        """Whether the batch's shell, or anything it started (its process group), still runs. A process that
        is gone, a zombie, or a reused pid running something else (its command line does not name the batch)
        does not count."""
        proc = self._procs.get(batch_id)
        if proc is not None and proc.poll() is None:
            return True
        try:
            pid = int(self._paths(batch_id)["pid"].read_text().strip())
        except (FileNotFoundError, ValueError):
            return False
        for entry in Path("/proc").iterdir() if Path("/proc/self/stat").exists() else []:
            if not entry.name.isdigit():
                continue
            try:
                stat = (entry / "stat").read_text()
                cmdline = (entry / "cmdline").read_bytes().decode("utf-8", errors="replace")
            except OSError:
                continue
            fields = stat[stat.rindex(")") + 2:].split()  # state, ppid, pgrp, ...
            if fields[0] != "Z" and int(fields[2]) == pid and batch_id in cmdline:
                return True
        if not Path("/proc/self/stat").exists():  # no /proc: the process group, as the kernel sees it
            try:
                os.killpg(pid, 0)
                return True
            except (ProcessLookupError, PermissionError):
                return False
        return False

    def poll(self, batch_id: str) -> BatchStatus:
        if self._exit_code(batch_id) is not None:
            return BatchStatus(ended=True, state="ended")
        if self.alive(batch_id):
            return BatchStatus(ended=False, state="running")
        if self._exit_code(batch_id) is not None:  # it finished between the two looks
            return BatchStatus(ended=True, state="ended")
        return BatchStatus(ended=True, state="died")

    def fetch(self, batch_id: str, custom_ids: list[str]) -> list[Response]:
        p = self._paths(batch_id)
        code = self._exit_code(batch_id)
        tail = p["log"].read_text(errors="ignore")[-300:] if p["log"].exists() else ""
        if code is None:
            pid = p["pid"].read_text().strip() if p["pid"].exists() else "unknown"
            return fill_missing([], custom_ids, self.name, batch_id,
                                f"vllm run-batch process (pid {pid}) died without an exit code; its requests are "
                                f"sent again (log {p['log']}): {tail}")
        if code != "0":
            return fill_missing([], custom_ids, self.name, batch_id, f"vllm run-batch exited {code}: {tail}")
        return [Response(**{**r.to_dict(), "batch_id": batch_id})
                for r in self._files.read_run_batch(p["out.jsonl"], custom_ids)]

    def complete(self, request: Request) -> Response:
        raise ProviderError("vllm run-batch has no online mode; use VLLMServer with a base URL")
