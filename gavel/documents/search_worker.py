"""The regex search of ``search_document_regex`` runs in a worker process with bounded memory and time.

A pattern is compiled *and* matched in the worker: some 20-character patterns (``(?:x{65535}){65535}``) make
the ``regex`` engine allocate tens of gigabytes while compiling, before any time limit on matching can apply.
The worker is a plain ``python -I`` process running this file as a script (stdlib + ``regex`` only, no
``gavel`` import) that sets its own limits first thing:

* ``RLIMIT_AS`` (address space): ``SEARCH_MEMORY_BYTES`` plus room for the corpus text it holds; past it an
  allocation fails with ``MemoryError`` (answered as a refusal) or the worker dies (also a refusal);
* ``RLIMIT_CPU`` raised per request to the CPU time used so far plus the request's budget, so that a worker
  whose parent is gone cannot spin on for long;
* matching uses ``regex``'s own ``timeout``; the parent waits at most the search time limit plus
  ``COMPILE_GRACE_S`` for an answer and kills the worker (by its pid) past that.

One worker per workspace holds the corpus texts (sent once, one message per document, so the parent never
holds a second copy of the corpus); a worker that died or was killed is started
afresh on the next search. Messages are ``marshal``-ed tuples with a 4-byte length prefix on the worker's
stdin/stdout.
"""

from __future__ import annotations

import marshal
import os
import resource
import select
import signal
import struct
import subprocess
import sys
import threading
import time
import weakref

SEARCH_MEMORY_BYTES = 512 * 2**20  # the worker's address space beyond what its texts need
TEXT_MEMORY_FACTOR = 10  # bytes of address space allowed per character of corpus text (str + transfer copy)
COMPILE_GRACE_S = 3.0  # time allowed beyond the search time limit (compiling, start-up) before the kill
_HEADER = struct.Struct(">I")


class SearchRefused(Exception):
    """The pattern could not be searched within the limits; the message is for the model."""


# ------------------------------------------------------------------ framing (both sides)
def _send(fh, obj) -> None:
    data = marshal.dumps(obj)
    fh.write(_HEADER.pack(len(data)))  # apart, not header + data: that would copy a big message once more
    fh.write(data)
    fh.flush()


def _recv_blocking(fh):
    head = fh.read(_HEADER.size)
    if len(head) < _HEADER.size:
        return None
    (n,) = _HEADER.unpack(head)
    data = fh.read(n)
    return marshal.loads(data) if len(data) == n else None


# ------------------------------------------------------------------ the worker (run as a script)
def _worker_search(regex_mod, texts, pattern, flags, indices, keep, timeout):
    """``(counts, spans)``: the number of matches in each document of ``indices`` and the spans of the first
    ``keep`` matches over all of them (in that order); or ``("timeout",)``."""
    compiled = regex_mod.compile(pattern, flags | regex_mod.V0)
    deadline = time.monotonic() + timeout
    counts, spans = [], []
    for i in indices:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            return ("timeout",)
        n = 0
        try:
            for m in compiled.finditer(texts[i], timeout=remaining):
                if len(spans) < keep:
                    spans.append((i, m.start(), m.end()))
                n += 1
        except TimeoutError:
            return ("timeout",)
        counts.append(n)
    return ("ok", counts, spans)


def worker_main(memory_bytes: int) -> None:
    resource.setrlimit(resource.RLIMIT_AS, (memory_bytes, memory_bytes))
    import regex  # after the limit: nothing below may grow past it

    inp, out = sys.stdin.buffer, sys.stdout.buffer
    texts: list = []
    while True:
        msg = _recv_blocking(inp)
        if msg is None:
            return  # the parent closed the pipe (or is gone)
        if msg[0] == "texts":  # ("texts", n), then n messages of one text each
            texts = []
            for _ in range(msg[1]):
                text = _recv_blocking(inp)
                if text is None:
                    return
                texts.append(text)
            _send(out, ("ready",))
            continue
        _, pattern, flags, indices, keep, timeout, cpu_budget = msg
        used = resource.getrusage(resource.RUSAGE_SELF)
        soft = int(used.ru_utime + used.ru_stime + cpu_budget) + 1
        hard = resource.getrlimit(resource.RLIMIT_CPU)[1]
        resource.setrlimit(resource.RLIMIT_CPU, (soft if hard == resource.RLIM_INFINITY else min(soft, hard), hard))
        try:
            answer = _worker_search(regex, texts, pattern, flags, indices, keep, timeout)
        except MemoryError:
            answer = ("memory",)
        except (regex.error, OverflowError, RecursionError, ValueError, TypeError) as err:
            answer = ("invalid", str(err))
        _send(out, answer)
        if answer[0] == "memory":
            return  # start clean next time


# ------------------------------------------------------------------ the parent's handle
class SearchWorker:
    """A worker process for one corpus's texts (catalog order); started on first use, restarted after a
    death or a kill."""

    def __init__(self, texts: list[str], memory_bytes: int = SEARCH_MEMORY_BYTES,
                 compile_grace: float = COMPILE_GRACE_S):
        self.texts = [str(t) for t in texts]
        self.memory_bytes = memory_bytes + TEXT_MEMORY_FACTOR * sum(len(t) for t in self.texts)
        self.compile_grace = compile_grace
        self.proc: subprocess.Popen | None = None
        self.starts = 0  # how many workers were started (tests and the benchmark read it)
        self._lock = threading.Lock()
        self._finalizer = None

    # ---- process lifecycle ----
    def _start(self) -> None:
        self.proc = subprocess.Popen([sys.executable, "-I", os.path.abspath(__file__), str(self.memory_bytes)],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                                     close_fds=True)
        self.starts += 1
        self._finalizer = weakref.finalize(self, _stop, self.proc)
        try:
            _send(self.proc.stdin, ("texts", len(self.texts)))
            for text in self.texts:  # one at a time: the parent never holds a copy of the whole corpus
                _send(self.proc.stdin, text)
            answer = self._read(time.monotonic() + 60)
        except OSError:
            answer = None
        if answer != ("ready",):
            self._kill()
            raise SearchRefused("the search worker could not start (it could not hold the documents within "
                                f"{self.memory_bytes // 2**20} MiB)")

    def _kill(self) -> None:
        if self._finalizer is not None:
            self._finalizer()  # kills and reaps self.proc
        self.proc, self._finalizer = None, None

    def close(self) -> None:
        with self._lock:
            self._kill()

    def _read(self, deadline: float):
        """One message from the worker, or None when it died or the deadline passed."""
        fd = self.proc.stdout.fileno()
        buf = b""
        need = _HEADER.size
        header_done = False
        while True:
            while len(buf) < need:
                left = deadline - time.monotonic()
                if left <= 0 or not select.select([fd], [], [], left)[0]:
                    return None
                chunk = os.read(fd, need - len(buf))
                if not chunk:
                    return None
                buf += chunk
            if header_done:
                return marshal.loads(buf)
            (n,) = _HEADER.unpack(buf)
            buf, need, header_done = b"", n, True

    # ---- one search ----
    def search(self, pattern: str, flags: int, indices: list[int], keep: int, timeout: float):
        """``(counts, spans)`` as computed by the worker; raises SearchRefused with the model's message."""
        with self._lock:
            if self.proc is None or self.proc.poll() is not None:
                self._kill()
                self._start()
            limit = timeout + self.compile_grace
            try:
                _send(self.proc.stdin, ("search", str(pattern), int(flags), [int(i) for i in indices], int(keep),
                                       float(timeout), float(limit)))
            except (BrokenPipeError, OSError):
                self._kill()
                raise SearchRefused("the search worker stopped; try the search again") from None
            answer = self._read(time.monotonic() + limit)
            if answer is None:
                died = self.proc.poll() is not None
                self._kill()
                if died:
                    raise SearchRefused(f"the pattern needs more memory or time than a search may use "
                                        f"({SEARCH_MEMORY_BYTES // 2**20} MiB, {limit:g} s); use a simpler "
                                        f"pattern (smaller repetition counts)")
                raise SearchRefused(f"search timed out after {limit:g} s (compiling and matching); use a "
                                    f"simpler or more specific pattern")
            if answer[0] == "memory":
                self._kill()
                raise SearchRefused(f"the pattern needs more memory than a search may use "
                                    f"({SEARCH_MEMORY_BYTES // 2**20} MiB); use a simpler pattern (smaller "
                                    f"repetition counts)")
            if answer[0] == "invalid":
                raise SearchRefused(f"invalid regular expression: {answer[1]}")
            if answer[0] == "timeout":
                raise SearchRefused(f"search timed out after {timeout:g} s; use a simpler or more specific "
                                    f"pattern")
            return answer[1], answer[2]


def _stop(proc: subprocess.Popen) -> None:
    if proc.poll() is None:
        try:
            proc.send_signal(signal.SIGKILL)
        except ProcessLookupError:
            pass
    for fh in (proc.stdin, proc.stdout):
        try:
            fh.close()
        except OSError:
            pass
    proc.wait()


if __name__ == "__main__":
    worker_main(int(sys.argv[1]))
