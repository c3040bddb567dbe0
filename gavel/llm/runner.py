"""The stage runner: send a stage's requests through a provider without losing anything or paying twice.

    runner = StageRunner("judge", get_provider("openai"))
    runner.dry_run(requests)                 # requests, o200k input tokens, estimated cost; sends nothing
    responses = runner.run(requests)         # batch mode; online mode with run(..., mode="online")

Guarantees:

* **Content-addressed cache.** Every succeeded response is stored, as soon as it is retrieved, under a cache
  key: a hash of the request's ``custom_id`` (stage, model, case, item, prompt, the request's parameters),
  of who answers (provider, its kind, the base URL of a server or proxy, the model file of a local model)
  and of the body as sent (model id and sampling parameters after the registry, user models file included,
  is applied). A rerun of an unchanged stage sends nothing; another provider, server or setting never gets
  an answer that was not its own.
* **One runner per workdir.** A run holds an exclusive lock on ``<workdir>/runner.lock``; a second runner
  on the same workdir waits for it up to ``lock_timeout`` seconds, then stops with a message naming the
  holder (WorkdirBusyError). Nothing is submitted twice because two runners shared a state file.
* **Checked before anything is recorded.** The provider's ``check_ready`` (an API key, a program) runs
  before any intent is written; a request whose prompt (o200k tokens) plus ``max_tokens`` does not fit
  the model's context window is refused unsent (a failed Response saying so; the dry run lists it).
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

import dataclasses
import datetime as dt
import hashlib
import json
import os
import platform
import queue
import socket
import subprocess
import sys
import threading
import time
import uuid
from contextlib import closing, contextmanager
from dataclasses import dataclass, field
from importlib import metadata
from pathlib import Path

from gavel.core import config, options, prices

from . import ledger, measured, packs
from . import usage as usage_of
from .atomic import atomic_write
from .lock import WorkdirBusyError, hold  # noqa: F401 (WorkdirBusyError: the runner's error)
from .records import MAX_CUSTOM_ID, Request, Response, canonical_json, repeats
from .registry import llm_model

DEFAULT_RUNS_DIR = config.INTERIM_DIR / "runs"


#: the error of a response whose batch has not ended yet (a later run collects it; nothing is resent)
PENDING_ERROR = "not finished (batch still running)"
#: the start of the error of a request refused before sending (prompt + max_tokens over the context window)
TOO_LONG_ERROR = "not sent: too long"


class ResponseCache:
    """Succeeded responses on disk, one JSON file per custom_id, or packed into one file per cache folder
    (``gavel.llm.packs``: ``gavel cache pack``); a loose file is looked for first."""

    def __init__(self, folder: Path):
        self.folder = Path(folder)
        self._pack: packs.Pack | None = None
        self._pack_lock = threading.Lock()

    def _path(self, key: str) -> Path:
        return self.folder / key[-2:] / f"{key}.json"

    def _packed(self, key: str) -> str | None:
        """The packed answer of ``key``; the pack is opened once, and again when a miss finds it replaced."""
        with self._pack_lock:
            for fresh in (False, True):
                if fresh or self._pack is None:
                    try:
                        info = os.stat(self.folder / packs.PACK)
                    except FileNotFoundError:
                        return None
                    now = (info.st_dev, info.st_ino, info.st_mtime_ns, info.st_size)
                    if self._pack is not None and self._pack.identity == now:
                        return None  # not replaced since: the miss stands
                    if self._pack is not None:
                        self._pack.close()
                    self._pack = packs.open_pack(self.folder / packs.PACK)
                text = self._pack.get(key)
                if text is not None:
                    return text
            return None

    def close(self) -> None:
        """Close the pack if open (the next lookup opens it again): a run in case groups makes a cache per stage
        and group, and each kept its pack open (a 100,000-summary merge: 219 SQLite connections and rising)."""
        with self._pack_lock:
            if self._pack is not None:
                self._pack.close()
                self._pack = None

    def get(self, key: str) -> Response | None:
        path = self._path(key)
        try:
            text = path.read_text(encoding="utf-8")
        except FileNotFoundError:
            text = self._packed(key)
            if text is None:
                return None
            path = self.folder / packs.PACK
        try:
            return Response.from_dict(json.loads(text))
        except (json.JSONDecodeError, TypeError, ValueError) as err:
            raise RuntimeError(f"cache file {path} is unreadable at {key} ({err}); delete it to refetch") from None

    def put(self, response: Response, key: str | None = None) -> None:
        """Store a succeeded response under ``key`` (a StageRunner's cache key; default its custom_id)."""
        if not response.ok:
            raise ValueError(f"only succeeded responses are cached ({response.custom_id}: {response.status})")
        atomic_write(self._path(key or response.custom_id), json.dumps(response.to_dict(), ensure_ascii=False))

    def __contains__(self, key: str) -> bool:
        return self._path(key).exists() or self._packed(key) is not None


@dataclass
class RunReport:
    responses: dict[str, Response]
    sent: int
    cached: int
    failed: list[str]
    batches: list[str]
    too_long: list[str] = field(default_factory=list)  # refused unsent: prompt + max_tokens > context window
    repeated: int = 0  # requests that repeated an earlier one (same custom_id): sent once, answered each


class StageRunner:
    def __init__(self, stage: str, provider, workdir: str | os.PathLike | None = None, poll_interval: float = 30.0,
                 max_attempts: int = 3, progress: bool = True, concurrency: int = 8, lock_timeout: float = 60.0,
                 namespace: str | None = None, since: dt.datetime | None = None, cache_dir: str | os.PathLike | None = None):
        options.check_positive("concurrency", concurrency)
        options.check_positive("max_attempts", max_attempts)
        self.stage = stage
        # the ledger (cost.csv): answers received from the provider since `since` are this run's spending
        self.since = since or ledger.now()
        self.answered: dict[str, tuple[Request, Response]] = {}
        # a cache namespace (a repeat of a provider that ignores seeds): enters the key only when set, so a
        # runner without one keeps the keys it had before
        self.namespace = namespace
        self.provider = provider
        self.workdir = Path(workdir) if workdir else DEFAULT_RUNS_DIR / stage
        # a shard of a stage (an array task) keeps its own state, lock and ledger in its workdir and answers into
        # the stage's cache (one file per key, written atomically: shards never write the same key)
        self.cache = ResponseCache(Path(cache_dir) if cache_dir else self.workdir / "cache")
        self.state_path = self.workdir / "state.json"
        self.lock_path = self.workdir / "runner.lock"
        self.poll_interval = poll_interval
        self.max_attempts = max_attempts
        self.progress = progress
        self.concurrency = concurrency
        self.lock_timeout = lock_timeout
        self.forecasts: list[str] = []  # a running batch's re-forecasts, one as each batch ends (measured.reforecast)

    # ---------------- cache keys ----------------
    def _registry_model(self, name: str):
        return llm_model(name, self.provider.name if self.provider.serves_any_model else None)

    def identity_key(self) -> str:
        """A short hash of ``provider.identity()``: who answers this runner's requests."""
        return hashlib.sha256(canonical_json(self.provider.identity()).encode()).hexdigest()[:16]

    def key(self, request: Request) -> str:
        """The cache key of a request sent through this runner's provider: its custom_id, who answers
        (``provider.identity()``) and the body as sent (model id and effective sampling parameters after the
        registry is applied). Same readable prefix as the custom_id; at most 64 characters."""
        try:
            model_id = self._registry_model(request.model).model_id
        except KeyError:
            model_id = None  # a model only the mock knows: its body is what it answers from
        cid = request.custom_id  # a hash of the whole request: computed once
        material = {"custom_id": cid, "identity": self.provider.identity(), "model_id": model_id,
                    "body": self.provider.body(request)}
        if self.namespace is not None:
            material["namespace"] = self.namespace
        digest = hashlib.sha256(canonical_json(material).encode("utf-8")).hexdigest()[:40]
        prefix = cid.rsplit("-", 1)[0][: MAX_CUSTOM_ID - 41] or "req"
        return f"{prefix}-{digest}"

    def cached(self, request: Request) -> Response | None:
        """The cached answer of this request from this runner's provider and settings, or None."""
        return self.cache.get(self.key(request))

    def is_cached(self, request: Request) -> bool:
        return self.key(request) in self.cache

    # ---------------- lock ----------------
    @contextmanager
    def locked(self):
        """Hold ``runner.lock`` of the workdir (``gavel.llm.lock``); wait up to ``lock_timeout`` s for
        another runner holding it. A killed runner holds nothing; a finished one leaves no lock file."""
        holder = (f"runner pid {os.getpid()} on {socket.gethostname()} (stage {self.stage}, provider "
                  f"{self.provider.name}) since {time.strftime('%Y-%m-%d %H:%M:%S')}")
        with hold(self.lock_path, self.lock_timeout, holder, f"{self.stage}: workdir {self.workdir}"):
            yield

    # ---------------- state ----------------
    def load_state(self) -> dict:
        try:
            return json.loads(self.state_path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return {"stage": self.stage, "provider": self.provider.name, "submissions": {}, "attempts": {},
                    "failed": {}}

    def save_state(self, state: dict) -> None:
        atomic_write(self.state_path, json.dumps(state, indent=1, sort_keys=True))

    # ---------------- checks before sending ----------------
    def too_long(self, request: Request) -> str | None:
        """Why the request cannot fit its model's context window (prompt in o200k tokens + max_tokens), or
        None. A model the registry does not know is left to the provider (the mock answers any name)."""
        from gavel.core.tokens import count_tokens

        try:
            m = self._registry_model(request.model)
        except KeyError:
            if self.provider.name in ("mock", "replay"):
                return None
            raise
        cap = request.params.get("max_tokens") or m.max_output_tokens
        if sum(len(msg["content"].encode("utf-8")) for msg in request.messages) + cap <= m.context_window:
            return None  # a token is at least one byte: it fits without counting
        n_in = sum(count_tokens(msg["content"]) for msg in request.messages)
        if n_in + cap <= m.context_window:
            return None
        return (f"{TOO_LONG_ERROR}: prompt of {n_in:,} tokens (o200k) + max_tokens {cap:,} > context window "
                f"{m.context_window:,} of {request.model}; shorten the prompt or set a smaller params.max_tokens")

    # ---------------- dry run ----------------
    def dry_run(self, requests: list[Request], mode: str = "batch", expected_output_tokens=None,
                cached_prefix_tokens: int = 0, show: bool = True, allow_unserved: bool = False):
        """Requests, input tokens (o200k_base) and estimated cost per provider and model, before anything is
        sent (gavel.llm.estimate: output from measured answer lengths, the run's real mode, the price table).
        Requests that do not fit their model's context window are not priced but listed
        (``attrs["too_long"]``); ``cached_prefix_tokens`` per request are priced at the prompt-cache rate."""
        from .estimate import dry_run

        return dry_run(self, requests, mode, expected_output_tokens, cached_prefix_tokens, show, allow_unserved)

    # ---------------- running ----------------
    def run(self, requests: list[Request], mode: str = "batch", timeout: float | None = None) -> RunReport:
        if mode not in ("batch", "online"):
            raise ValueError(f"mode must be 'batch' or 'online', got {mode!r}")
        prices.table()  # a malformed price table stops the run before anything is sent
        by_id: dict[str, Request] = {}
        for r in requests:
            by_id.setdefault(r.custom_id, r)
        try:
            return self._run(requests, by_id, mode, timeout)
        finally:
            self.cache.close()  # a pack this run's lookups opened is not held until the runner is dropped

    def _run(self, requests: list[Request], by_id: dict, mode: str, timeout: float | None) -> RunReport:
        with self.locked():
            keys = {cid: self.key(r) for cid, r in by_id.items()}
            todo = [cid for cid in by_id if keys[cid] not in self.cache]
            refused = {}
            for cid in todo:
                why = self.too_long(by_id[cid])
                if why:
                    refused[cid] = Response(custom_id=cid, status="errored", error=why, provider=self.provider.name)
            if len(todo) > len(refused) or self._has_open_submissions():
                self.provider.check_ready()  # before anything is recorded or sent
            sendable = {cid: r for cid, r in by_id.items() if cid not in refused}
            if mode == "online" or not self.provider.supports_batch:
                report = self._run_online(sendable, keys)
            else:
                report = self._run_batch(sendable, keys, timeout)
            report.responses.update(refused)
            report.failed += list(refused)
            report.too_long = list(refused)
            report.repeated = len(repeats(requests))
            self.write_manifest(list(by_id.values()), report, mode)
            # what the ledger needs of each answer, not its prompt or text: a run of many requests would
            # otherwise hold every prompt until it ends (the memory of a 1,000-summary run, issue 48 §3)
            self.answered.update({cid: (Request(stage=self.stage, model=by_id[cid].model, messages=[]),
                                        dataclasses.replace(report.responses[cid], text=None, reasoning=None))
                                  for cid in by_id if report.responses.get(cid) is not None
                                  and report.responses[cid].ok})
            ledger.write(self.workdir / "cost.csv", self.cost_table(mode))
        return report

    def cost_table(self, mode: str = "batch"):
        """This run's ledger (gavel.llm.ledger): every request answered through this runner, priced."""
        rows = [ledger.request_row(self.stage, req, resp, self.provider.name, self.since, mode)
                for req, resp in self.answered.values()]
        return ledger.table(rows)

    def _stamped(self, response: Response, mode: str) -> Response:
        """A fresh answer with its usage stamped: the mode it went through and when it arrived."""
        return dataclasses.replace(response, usage=usage_of.stamped(response.usage, mode, ledger.stamp_time()))

    def _has_open_submissions(self) -> bool:
        try:
            subs = self.load_state().get("submissions", {})
        except (json.JSONDecodeError, OSError):
            return False
        return any(s.get("status") in ("intent", "submitted") and self._mine(s) for s in subs.values())

    def _mine(self, sub: dict, state: dict | None = None) -> bool:
        """A submission made through this runner's provider (one from before identities were recorded
        belongs to the provider named in the state)."""
        if "identity" in sub:
            return sub["identity"] == self.identity_key()
        return state is None or state.get("provider") == self.provider.name

    def _bar(self, total: int, desc: str):
        from tqdm.auto import tqdm

        return tqdm(total=total, desc=desc, disable=not self.progress, leave=False)

    def _run_online(self, by_id: dict[str, Request], keys: dict[str, str]) -> RunReport:
        state = self.load_state()
        responses = {}
        for cid in by_id:
            hit = self.cache.get(keys[cid])
            if hit is not None:
                responses[cid] = hit
        todo = [r for cid, r in by_id.items() if cid not in responses]
        cached, sent, failed = len(responses), 0, []
        bar = self._bar(len(todo), f"{self.stage}: online")
        attempt = 0
        while todo and attempt < self.max_attempts:
            attempt += 1
            retry = []
            try:
                with closing(self._calls(todo)) as calls:
                    for r, resp in calls:
                        sent += 1
                        if resp.ok:
                            resp = self._stamped(resp, "online")
                            self.cache.put(resp, keys[r.custom_id])
                            bar.update(1)
                        else:
                            retry.append(r)
                        responses[r.custom_id] = resp
            except BaseException:
                # interrupted (Ctrl-C, a kernel interrupt) or a call raised: queued requests are not sent, and a
                # provider that runs its own server (local) stops it, so calls in flight end now, not when answered
                if callable(getattr(self.provider, "stop", None)):
                    self.provider.stop()
                raise
            todo = retry
            if todo and attempt < self.max_attempts:
                time.sleep(min(60.0, 2.0 ** attempt * 0.5))
        bar.close()
        failed = [r.custom_id for r in todo]
        for cid in by_id:
            state["failed"].pop(keys[cid], None)
        state["failed"].update({keys[cid]: responses[cid].error for cid in failed})
        self.save_state(state)
        return RunReport(responses=responses, sent=sent, cached=cached, failed=failed, batches=[])

    def _calls(self, requests: list[Request]):
        """``provider.complete`` of each request on up to ``concurrency`` threads; yields ``(request, response)``
        as calls end. The threads are daemons and nothing joins them: an interrupted run (Ctrl-C, a kernel
        interrupt) returns at once instead of waiting for the calls in flight (a hosted API call may take
        minutes; the interpreter joins a ThreadPoolExecutor's threads before it exits). Requests not yet
        started when the run is interrupted, or when a call raises, are never sent; an answer that arrives
        after that is dropped (not cached: the workdir lock is no longer held)."""
        jobs: queue.SimpleQueue = queue.SimpleQueue()
        done: queue.SimpleQueue = queue.SimpleQueue()
        for r in requests:
            jobs.put(r)
        cancelled = threading.Event()

        def work():
            while not cancelled.is_set():
                try:
                    r = jobs.get_nowait()
                except queue.Empty:
                    return
                try:
                    done.put((r, self.provider.complete(r), None))
                except BaseException as err:  # noqa: BLE001 -- re-raised in the runner's thread
                    done.put((r, None, err))

        for i in range(min(self.concurrency, len(requests))):
            threading.Thread(target=work, name=f"gavel-{self.stage}-{i}", daemon=True).start()
        try:
            for _ in range(len(requests)):
                while True:
                    try:  # a timed wait, so a signal is handled while nothing arrives
                        r, resp, err = done.get(timeout=0.5)
                        break
                    except queue.Empty:
                        continue
                if err is not None:
                    raise err
                yield r, resp
        finally:
            cancelled.set()

    def _submit(self, state: dict, chunk: list[Request], keys: dict[str, str], tokens: int = 0) -> None:
        """Record an intent, submit, record the batch id. A submission that raises leaves no intent behind
        unless the provider may have the batch (then the next run adopts it)."""
        subs = state["submissions"]
        tag = f"gavel-{self.stage[:20]}-{uuid.uuid4().hex[:12]}"
        subs[tag] = {"status": "intent", "created": time.time(), "batch_id": None, "identity": self.identity_key(),
                     **({"tokens": tokens} if tokens else {}),
                     "custom_ids": [r.custom_id for r in chunk], "keys": {r.custom_id: keys[r.custom_id] for r in chunk}}
        self.save_state(state)
        try:
            batch_id = self.provider.submit(chunk, tag)
        except BaseException:
            known = {s["batch_id"] for s in subs.values() if s.get("batch_id")}
            try:
                found = self.provider.find_submitted(tag, subs[tag]["created"], known)
            except Exception:  # noqa: BLE001 -- cannot tell: keep the intent, the next run asks again
                found = None
                keep = True
            else:
                keep = False
            if found:
                subs[tag].update(batch_id=found, status="submitted")
            elif not keep:
                del subs[tag]
            self.save_state(state)
            if not found:
                raise
            batch_id = found
        subs[tag].update(batch_id=batch_id, status="submitted")
        for r in chunk:
            state["attempts"][keys[r.custom_id]] = state["attempts"].get(keys[r.custom_id], 0) + 1
        self.save_state(state)

    def _run_batch(self, by_id: dict[str, Request], keys: dict[str, str], timeout: float | None) -> RunReport:
        started = time.monotonic()
        state = self.load_state()
        subs = state["submissions"]
        ident = self.identity_key()
        # submissions from before identities and keys were recorded: this provider's, keyed as now
        for sub in subs.values():
            if "identity" not in sub and self._mine(sub, state):
                sub["identity"] = ident
                sub["keys"] = {cid: keys[cid] for cid in sub["custom_ids"] if cid in keys}
        mine = {tag: s for tag, s in subs.items() if s.get("identity") == ident}
        # 1. intents left by a crash between recording and submitting: adopt the batch if the provider has it
        known = {s["batch_id"] for s in mine.values() if s.get("batch_id")}
        for tag, sub in list(mine.items()):
            if sub["status"] == "intent":
                found = self.provider.find_submitted(tag, sub["created"], known, custom_ids=sub["custom_ids"])
                if found:
                    sub.update(batch_id=found, status="submitted")
                    known.add(found)
                else:
                    del subs[tag]  # never reached the provider: its requests are simply pending again
                self.save_state(state)
        wanted = set(keys[cid] for cid in by_id)
        cached_at_start = sum(1 for cid in by_id if keys[cid] in self.cache)
        sent = 0
        bar = self._bar(len(by_id) - cached_at_start, f"{self.stage}: batch")
        seen = measured.Measured(source="this run")  # the re-forecast's
        while True:
            mine = {tag: s for tag, s in subs.items() if s.get("identity") == ident}
            done = {k for k in wanted if k in self.cache}
            in_flight = {k for s in mine.values() if s["status"] == "submitted" for k in s["keys"].values()}
            exhausted = {k for k in wanted if state["attempts"].get(k, 0) >= self.max_attempts} - done
            settled = done | in_flight | exhausted  # once, not per request (that was quadratic)
            pending = [r for cid, r in by_id.items() if keys[cid] not in settled]
            # 2. submit what is pending, in batches within the provider's limits; with an enqueued-token limit
            # (OpenAI's batch queue), only while the batches not yet ended leave room (the rest waits its turn)
            queued = sum(s.get("tokens", 0) for s in mine.values() if s["status"] == "submitted")
            for chunk in self.provider.split(pending) if pending else []:
                limit = self.provider.queue_limit(chunk)
                tokens = sum(map(self.provider.enqueued_tokens, chunk)) if limit else 0
                if limit and queued and queued + tokens > limit:
                    break
                self._submit(state, chunk, keys, tokens)
                queued += tokens
                sent += len(chunk)
            active = [(tag, s) for tag, s in subs.items() if s.get("identity") == ident and s["status"] == "submitted"]
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
                    key = sub["keys"].get(resp.custom_id)
                    if key is None:
                        continue  # an id of a request no longer asked for, from before keys were recorded
                    if resp.ok and key not in self.cache:
                        self.cache.put(self._stamped(resp, "batch"), key)
                        bar.update(1)
                        if resp.custom_id in by_id:
                            measured.count(seen, by_id[resp.custom_id], resp, self.provider.name)
                    elif not resp.ok:
                        state["failed"][key] = resp.error
                sub["status"] = "fetched"
                sub["final_state"] = status.state
                self.save_state(state)
                progressed = True
                waiting = sum(len(s["keys"]) for s in subs.values()
                              if s.get("identity") == ident and s["status"] == "submitted")
                if seen.requests and waiting:  # a running batch: the rest forecast from what has come back
                    self.forecasts.append(measured.reforecast(self.stage, seen, waiting))
                    if self.progress:
                        bar.write(self.forecasts[-1], file=sys.stderr)
            if timeout is not None and time.monotonic() - started > timeout:
                break
            if not progressed:
                time.sleep(self.poll_interval)
        bar.close()
        responses: dict[str, Response] = {}
        failed = []
        for cid in by_id:
            cached = self.cache.get(keys[cid])
            if cached:
                responses[cid] = cached
                state["failed"].pop(keys[cid], None)
            else:
                failed.append(cid)
                responses[cid] = Response(custom_id=cid, status="errored",
                                          error=state["failed"].get(keys[cid]) or PENDING_ERROR,
                                          provider=self.provider.name)
        self.save_state(state)
        batches = [s["batch_id"] for s in subs.values() if s.get("batch_id") and s.get("identity") == ident]
        return RunReport(responses=responses, sent=sent, cached=cached_at_start, failed=failed, batches=batches)

    # ---------------- manifest ----------------
    def write_manifest(self, requests: list[Request], report: RunReport, mode: str) -> Path:
        models = sorted({r.model for r in requests})
        prompts = sorted({hashlib.sha256(canonical_json(r.messages).encode()).hexdigest() for r in requests})
        manifest = {
            "stage": self.stage, "provider": self.provider.name, "mode": mode,
            "written_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            "git": git_state(), "python": platform.python_version(), "packages": package_versions(),
            "models": {m: _model_params(m, self.provider) for m in models},
            "requests": len(requests), "prompt_sha256": prompts if len(prompts) <= 50 else None,
            "prompts_sha256": hashlib.sha256("".join(prompts).encode()).hexdigest(),
            "sent": report.sent, "cached": report.cached, "failed": report.failed, "batch_ids": report.batches,
            "too_long": report.too_long, "repeated": report.repeated, "identity_sha256": self.identity_key(),
        }
        path = self.workdir / "manifest.json"
        atomic_write(path, json.dumps(manifest, indent=1, sort_keys=True))
        return path


def _model_params(name: str, provider) -> dict:
    try:
        m = llm_model(name, provider.name if provider.serves_any_model else None)
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
