"""The stage runner: send a stage's requests through a provider without losing anything or paying twice.

    runner = StageRunner("judge", get_provider("openai"))
    runner.dry_run(requests)                 # requests, o200k input tokens, estimated cost; sends nothing
    responses = runner.run(requests)         # batch mode; online mode with run(..., mode="online")

Guarantees:

* **Content-addressed cache.** Every succeeded response is stored under its request's ``custom_id`` (a hash
  of stage, model, case, item, prompt and parameters) as soon as it is retrieved. A rerun of an unchanged
  stage sends nothing.
* **Persisted state.** ``state.json`` is rewritten atomically before and after every submission and after
  every retrieval, so a run killed at any point resumes where it stopped. A batch is recorded as an
  *intent* (with a tag) before it is sent; after a crash the runner asks the provider for a batch with that
  tag and adopts it instead of sending it again.
* **Only failures are resent.** Errored, expired and cancelled requests (never succeeded ones) go into the
  next batch, up to ``max_attempts`` times; what still fails is returned as failed Responses and listed.
* **Nothing secret is written.** Files written here pass through ``scrub``, which removes the values of the
  API-key variables; the manifest records versions, git state, prompt hashes and model parameters only.

Everything is synchronous (threads for online concurrency), so it runs inside Jupyter's event loop too.
"""

from __future__ import annotations

import hashlib
import json
import os
import platform
import subprocess
import time
import uuid
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path

from .. import config
from .records import Request, Response, canonical_json
from .registry import llm_model
from .secrets import scrub

DEFAULT_RUNS_DIR = config.DATA_DIR / "interim" / "runs"


def atomic_write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    with open(tmp, "w", encoding="utf-8") as fh:
        fh.write(scrub(text))
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(tmp, path)


#: the error of a response whose batch has not ended yet (a later run collects it; nothing is resent)
PENDING_ERROR = "not finished (batch still running)"


class ResponseCache:
    """Succeeded responses on disk, one JSON file per custom_id."""

    def __init__(self, folder: Path):
        self.folder = Path(folder)

    def _path(self, custom_id: str) -> Path:
        return self.folder / custom_id[-2:] / f"{custom_id}.json"

    def get(self, custom_id: str) -> Response | None:
        path = self._path(custom_id)
        try:
            return Response.from_dict(json.loads(path.read_text(encoding="utf-8")))
        except FileNotFoundError:
            return None
        except (json.JSONDecodeError, TypeError, ValueError) as err:
            raise RuntimeError(f"cache file {path} is unreadable ({err}); delete it to refetch") from None

    def put(self, response: Response) -> None:
        if not response.ok:
            raise ValueError(f"only succeeded responses are cached ({response.custom_id}: {response.status})")
        atomic_write(self._path(response.custom_id), json.dumps(response.to_dict(), ensure_ascii=False))

    def __contains__(self, custom_id: str) -> bool:
        return self._path(custom_id).exists()


@dataclass
class RunReport:
    responses: dict[str, Response]
    sent: int
    cached: int
    failed: list[str]
    batches: list[str]


class StageRunner:
    def __init__(self, stage: str, provider, workdir: str | os.PathLike | None = None, poll_interval: float = 30.0,
                 max_attempts: int = 3, progress: bool = True, concurrency: int = 8):
        self.stage = stage
        self.provider = provider
        self.workdir = Path(workdir) if workdir else DEFAULT_RUNS_DIR / stage
        self.cache = ResponseCache(self.workdir / "cache")
        self.state_path = self.workdir / "state.json"
        self.poll_interval = poll_interval
        self.max_attempts = max_attempts
        self.progress = progress
        self.concurrency = concurrency

    # ---------------- state ----------------
    def load_state(self) -> dict:
        try:
            return json.loads(self.state_path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return {"stage": self.stage, "provider": self.provider.name, "submissions": {}, "attempts": {},
                    "failed": {}}

    def save_state(self, state: dict) -> None:
        atomic_write(self.state_path, json.dumps(state, indent=1, sort_keys=True))

    # ---------------- dry run ----------------
    def dry_run(self, requests: list[Request], mode: str = "batch", expected_output_tokens: int | None = None,
                cached_prefix_tokens: int = 0, show: bool = True):
        """Requests, input tokens (o200k_base) and estimated cost per provider and model, before anything is
        sent. Output tokens are estimated as ``expected_output_tokens`` (default: a quarter of the model's
        output cap); ``cached_prefix_tokens`` per request are priced at the prompt-cache rate."""
        import pandas as pd

        from ..tokens import count_tokens

        rows = []
        for r in requests:
            m = llm_model(r.model, self.provider.name if self.provider.name in ("vllm", "local", "mock") else None)
            n_in = sum(count_tokens(msg["content"]) for msg in r.messages)
            n_out = expected_output_tokens or m.max_output_tokens // 4
            price = m.price or {}
            cached = min(cached_prefix_tokens, n_in)
            cost = ((n_in - cached) * price.get("input", 0.0) + cached * price.get("cached_input", price.get("input", 0.0))
                    + n_out * price.get("output", 0.0)) / 1e6
            if mode == "batch":
                cost *= 1 - price.get("batch_discount", 0.0)
            rows.append({"provider": self.provider.name, "model": r.model, "cached": r.custom_id in self.cache,
                         "input_tokens": n_in, "output_tokens_est": n_out, "cost_usd_est": cost})
        df = pd.DataFrame(rows, columns=["provider", "model", "cached", "input_tokens", "output_tokens_est",
                                         "cost_usd_est"])
        to_send = df[~df["cached"]]
        summary = to_send.groupby(["provider", "model"]).agg(
            requests=("input_tokens", "size"), input_tokens=("input_tokens", "sum"),
            output_tokens_est=("output_tokens_est", "sum"), cost_usd_est=("cost_usd_est", "sum")).reset_index()
        summary.attrs["already_cached"] = int(df["cached"].sum())
        if show:
            print(f"dry run of stage {self.stage!r} ({mode}): {len(to_send)} to send, "
                  f"{int(df['cached'].sum())} already cached; nothing was sent")
            print(summary.to_string(index=False))
        return summary

    # ---------------- running ----------------
    def run(self, requests: list[Request], mode: str = "batch", timeout: float | None = None) -> RunReport:
        by_id: dict[str, Request] = {}
        for r in requests:
            by_id.setdefault(r.custom_id, r)
        if mode == "online" or not self.provider.supports_batch:
            report = self._run_online(by_id)
        elif mode == "batch":
            report = self._run_batch(by_id, timeout)
        else:
            raise ValueError(f"mode must be 'batch' or 'online', got {mode!r}")
        self.write_manifest(list(by_id.values()), report, mode)
        return report

    def _bar(self, total: int, desc: str):
        from tqdm.auto import tqdm

        return tqdm(total=total, desc=desc, disable=not self.progress, leave=False)

    def _run_online(self, by_id: dict[str, Request]) -> RunReport:
        state = self.load_state()
        responses = {cid: self.cache.get(cid) for cid in by_id if cid in self.cache}
        todo = [r for cid, r in by_id.items() if cid not in responses]
        cached, sent, failed = len(responses), 0, []
        bar = self._bar(len(todo), f"{self.stage}: online")
        attempt = 0
        while todo and attempt < self.max_attempts:
            attempt += 1
            retry = []
            pool = ThreadPoolExecutor(max_workers=self.concurrency)
            try:
                futures = {pool.submit(self.provider.complete, r): r for r in todo}
                for fut in as_completed(futures):
                    r = futures[fut]
                    resp = fut.result()
                    sent += 1
                    if resp.ok:
                        self.cache.put(resp)
                        bar.update(1)
                    else:
                        retry.append(r)
                    responses[r.custom_id] = resp
            except BaseException:
                # interrupted (Ctrl-C, a kernel interrupt): queued requests are not sent, and a provider that
                # runs its own server (local) stops it, so calls in flight end now instead of when answered
                pool.shutdown(wait=False, cancel_futures=True)
                if callable(getattr(self.provider, "stop", None)):
                    self.provider.stop()
                raise
            pool.shutdown()
            todo = retry
            if todo and attempt < self.max_attempts:
                time.sleep(min(60.0, 2.0 ** attempt * 0.5))
        bar.close()
        failed = [r.custom_id for r in todo]
        state["failed"] = {cid: responses[cid].error for cid in failed}
        self.save_state(state)
        return RunReport(responses=responses, sent=sent, cached=cached, failed=failed, batches=[])

    def _run_batch(self, by_id: dict[str, Request], timeout: float | None) -> RunReport:
        started = time.monotonic()
        state = self.load_state()
        subs = state["submissions"]
        # 1. intents left by a crash between recording and submitting: adopt the batch if the provider has it
        known = {s["batch_id"] for s in subs.values() if s.get("batch_id")}
        for tag, sub in list(subs.items()):
            if sub["status"] == "intent":
                found = self.provider.find_submitted(tag, sub["created"], known, custom_ids=sub["custom_ids"])
                if found:
                    sub.update(batch_id=found, status="submitted")
                    known.add(found)
                else:
                    del subs[tag]  # never reached the provider: its requests are simply pending again
                self.save_state(state)
        cached_at_start = sum(1 for cid in by_id if cid in self.cache)
        sent = 0
        bar = self._bar(len(by_id) - cached_at_start, f"{self.stage}: batch")
        while True:
            done = {cid for cid in by_id if cid in self.cache}
            in_flight = {cid for s in subs.values() if s["status"] == "submitted" for cid in s["custom_ids"]}
            exhausted = {cid for cid in by_id if state["attempts"].get(cid, 0) >= self.max_attempts} - done
            pending = [r for cid, r in by_id.items() if cid not in done and cid not in in_flight and cid not in exhausted]
            # 2. submit what is pending, in batches within the provider's limits
            for chunk in self.provider.split(pending) if pending else []:
                tag = f"gavel-{self.stage[:20]}-{uuid.uuid4().hex[:12]}"
                subs[tag] = {"status": "intent", "created": time.time(), "batch_id": None,
                             "custom_ids": [r.custom_id for r in chunk]}
                self.save_state(state)
                batch_id = self.provider.submit(chunk, tag)
                subs[tag].update(batch_id=batch_id, status="submitted")
                for r in chunk:
                    state["attempts"][r.custom_id] = state["attempts"].get(r.custom_id, 0) + 1
                self.save_state(state)
                sent += len(chunk)
            active = [(tag, s) for tag, s in subs.items() if s["status"] == "submitted"]
            if not active:
                break
            # 3. poll; retrieve ended batches
            progressed = False
            for _tag, sub in active:
                status = self.provider.poll(sub["batch_id"])
                if not status.ended:
                    continue
                ids = list(sub["custom_ids"])
                for resp in self.provider.fetch(sub["batch_id"], ids):
                    if resp.ok and resp.custom_id not in self.cache:
                        self.cache.put(resp)
                        bar.update(1)
                    elif not resp.ok:
                        state["failed"][resp.custom_id] = resp.error
                sub["status"] = "fetched"
                sub["final_state"] = status.state
                self.save_state(state)
                progressed = True
            if timeout is not None and time.monotonic() - started > timeout:
                break
            if not progressed:
                time.sleep(self.poll_interval)
        bar.close()
        responses: dict[str, Response] = {}
        failed = []
        for cid in by_id:
            cached = self.cache.get(cid)
            if cached:
                responses[cid] = cached
                state["failed"].pop(cid, None)
            else:
                failed.append(cid)
                responses[cid] = Response(custom_id=cid, status="errored",
                                          error=state["failed"].get(cid) or PENDING_ERROR,
                                          provider=self.provider.name)
        self.save_state(state)
        batches = [s["batch_id"] for s in subs.values() if s.get("batch_id")]
        return RunReport(responses=responses, sent=sent, cached=cached_at_start, failed=failed, batches=batches)

    # ---------------- manifest ----------------
    def write_manifest(self, requests: list[Request], report: RunReport, mode: str) -> Path:
        models = sorted({r.model for r in requests})
        prompts = sorted({hashlib.sha256(canonical_json(r.messages).encode()).hexdigest() for r in requests})
        manifest = {
            "stage": self.stage, "provider": self.provider.name, "mode": mode,
            "written_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            "git": git_state(), "python": platform.python_version(), "packages": package_versions(),
            "models": {m: _model_params(m, self.provider.name) for m in models},
            "requests": len(requests), "prompt_sha256": prompts if len(prompts) <= 50 else None,
            "prompts_sha256": hashlib.sha256("".join(prompts).encode()).hexdigest(),
            "sent": report.sent, "cached": report.cached, "failed": report.failed, "batch_ids": report.batches,
        }
        path = self.workdir / "manifest.json"
        atomic_write(path, json.dumps(manifest, indent=1, sort_keys=True))
        return path


def _model_params(name: str, provider: str) -> dict:
    try:
        m = llm_model(name, provider if provider in ("vllm", "local", "mock") else None)
    except (KeyError, ValueError):
        return {}
    return {"model_id": m.model_id, "provider": m.provider, "context_window": m.context_window,
            "max_output_tokens": m.max_output_tokens, "sampling": m.sampling, "quirks": m.quirks}


def git_state() -> dict:
    def git(*args):
        return subprocess.run(["git", *args], cwd=config.REPO_ROOT, capture_output=True, text=True, timeout=10)
    try:
        commit = git("rev-parse", "HEAD").stdout.strip() or None
        dirty = bool(git("status", "--porcelain").stdout.strip())
    except (OSError, subprocess.TimeoutExpired):
        commit, dirty = None, None
    return {"commit": commit, "dirty": dirty}


def package_versions() -> dict:
    out = {}
    for name in ("gavel", "openai", "anthropic", "google-genai", "vllm", "tiktoken", "pandas"):
        try:
            out[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            out[name] = None
    return out
