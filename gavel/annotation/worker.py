"""The app's worker process: computes what the server asks for (the agreement table) off the server's
interpreter, and never outlives the server.

:class:`WorkerProcess` starts ``python -c 'from gavel.annotation.worker import main; main()'`` as a plain
child (no multiprocessing: nothing else, such as its resource tracker, is started beside it) and talks to
it over its stdin and stdout in frames (an 8-byte length, then a pickle: both ends are this package's own
code). The child reads its stdin in a thread of its own: when the server ends, by any signal, a SIGKILL
included, the kernel closes the server's end of that pipe and the child exits at once, mid-computation or
not. (A parent-death signal, ``PR_SET_PDEATHSIG``, fires when the *thread* that started the child ends; the
computation's thread ends after each table, so the pipe is the parent's life here.) Ctrl-C in a terminal
reaches the server's whole process group: the child ignores SIGINT and ends with the server.

Each call has a time limit: a computation that runs past it (hung, or the child stopped) has its child
killed, the call fails with a one-line reason, and the next call starts a new child.
"""

from __future__ import annotations

import os
import pickle
import queue
import selectors
import signal
import struct
import subprocess
import sys
import threading
import time
import traceback
from pathlib import Path

TIME_LIMIT_S = 300.0  # the longest one computation may run before its worker is killed and replaced
_HEADER = struct.Struct(">Q")
_PACKAGE_ROOT = str(Path(__file__).resolve().parent.parent.parent)  # the folder that holds gavel/
_START = "import sys; sys.path.insert(0, sys.argv[1]); from gavel.annotation.worker import main; main()"


class WorkerDied(RuntimeError):
    """The worker process ended, or ran past its time limit and was killed; the next call starts a new one."""


def _read_exactly(fd: int, n: int, deadline: float | None) -> bytes | None:
    """``n`` bytes from ``fd`` (None at end of file); TimeoutError once ``deadline`` (monotonic) passes."""
    chunks, got = [], 0
    with selectors.DefaultSelector() as sel:
        sel.register(fd, selectors.EVENT_READ)
        while got < n:
            if deadline is not None:
                left = deadline - time.monotonic()
                if left <= 0 or not sel.select(left):
                    raise TimeoutError
            chunk = os.read(fd, min(n - got, 1 << 20))
            if not chunk:
                return None
            chunks.append(chunk)
            got += len(chunk)
    return b"".join(chunks)


def _read_frame(fd: int, deadline: float | None = None) -> bytes | None:
    head = _read_exactly(fd, _HEADER.size, deadline)
    if head is None:
        return None
    return _read_exactly(fd, _HEADER.unpack(head)[0], deadline)


def _write_frame(fd: int, data: bytes) -> None:
    view = memoryview(_HEADER.pack(len(data)) + data)
    while view:
        view = view[os.write(fd, view):]


class WorkerProcess:
    """``run(fn, *args)``: ``fn(*args)`` in one worker process (started at the first call, kept for the next),
    its result returned within ``time_limit_s``; ``fn`` and the arguments must be picklable (a module-level
    function, plain values). One call at a time."""

    def __init__(self, time_limit_s: float = TIME_LIMIT_S):
        self.time_limit_s = time_limit_s
        self.proc: subprocess.Popen | None = None
        self._lock = threading.Lock()
        self._closed = False

    def _start(self) -> subprocess.Popen:
        if self._closed:
            raise WorkerDied("the server is stopping")
        if self.proc is None or self.proc.poll() is not None:
            self.proc = subprocess.Popen([sys.executable, "-c", _START, _PACKAGE_ROOT], stdin=subprocess.PIPE,
                                         stdout=subprocess.PIPE, bufsize=0, close_fds=True)
        return self.proc

    def run(self, fn, *args):
        with self._lock:
            proc = self._start()
            try:
                _write_frame(proc.stdin.fileno(), pickle.dumps((fn, args)))
                frame = _read_frame(proc.stdout.fileno(), time.monotonic() + self.time_limit_s)
            except TimeoutError:
                self._stop()
                raise WorkerDied(f"the computation ran past its time limit ({self.time_limit_s:g} s; serve "
                                 "--agreement-time-limit); its worker process was stopped, the next load starts "
                                 "a new one") from None
            except OSError:
                frame = None
            if frame is None:
                self._stop()
                raise WorkerDied("the worker process died; the next load starts a new one")
        reply = pickle.loads(frame)
        if reply[0] == "error":
            raise RuntimeError(reply[1])
        return reply[1]

    def _stop(self) -> None:
        proc, self.proc = self.proc, None
        if proc is not None:
            if proc.poll() is None:
                proc.kill()
            proc.wait()
            for pipe in (proc.stdin, proc.stdout):
                pipe.close()

    def close(self) -> None:
        """Kill the worker process now, a computation under way included (its call ends with WorkerDied), and
        start no other: never waits for the computation (the server's exit does not wait for it either)."""
        self._closed = True
        proc = self.proc
        if proc is not None and proc.poll() is None:
            proc.kill()


def main() -> None:
    """The worker process: answer each request frame on stdin with a reply frame on stdout, until stdin ends."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the server decides what Ctrl-C does; its end ends this process
    out = os.dup(1)
    os.dup2(2, 1)  # anything the computation prints goes to the server's log, never into the replies
    requests: queue.Queue = queue.Queue()

    def read() -> None:
        while True:
            try:
                frame = _read_frame(0)
            except OSError:
                frame = None
            if frame is None:  # the server is gone (or closed the pipe): so is this process, at once
                os._exit(0)
            requests.put(frame)

    threading.Thread(target=read, name="lifeline", daemon=True).start()
    while True:
        fn, args = pickle.loads(requests.get())
        try:
            reply = ("ok", fn(*args))
        except Exception as err:  # noqa: BLE001 - sent back to the server, which shows it on the page
            traceback.print_exc()
            reply = ("error", f"{type(err).__name__}: {err}")
        _write_frame(out, pickle.dumps(reply))
