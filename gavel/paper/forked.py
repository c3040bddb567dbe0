"""One function run in a child process beside this one, its result read back: `make results` computes its
two independent groups of tables at once on a machine with two cores or more.

The child is a fork (it sees the release already loaded, nothing is copied up front) and sends its result
back pickled through a pipe. It never outlives the command: Linux kills it as soon as its parent dies,
whatever killed the parent (``PR_SET_PDEATHSIG``), and the parent kills and reaps it when it stops waiting
for it (an error, Ctrl-C). Only on Linux (elsewhere a fork of a process holding numerical libraries' threads
is not safe, and there is no such death signal) and with two cores or more; otherwise ``run_beside`` runs
the function in this process.
"""

from __future__ import annotations

import os
import pickle
import signal
import sys

_PR_SET_PDEATHSIG = 1  # prctl(2)


def cores() -> int:
    """The cores this process may run on."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


class Beside:
    """``fn()`` running in a forked child; ``result()`` waits for it (re-raising its error), ``stop()`` kills it."""

    def __init__(self, fn):
        sys.stdout.flush()  # what this process has not written yet must not be written twice, by the child too
        sys.stderr.flush()
        parent = os.getpid()
        read, write = os.pipe()
        pid = os.fork()
        if pid == 0:  # the child: never returns
            os.close(read)
            _child(fn, write, parent)
        os.close(write)
        self.pid, self._read, self._done = pid, read, False

    def result(self):
        try:
            with os.fdopen(self._read, "rb") as pipe:
                data = pipe.read()
            _, status = os.waitpid(self.pid, 0)
            self._done = True
        finally:
            self.stop()
        if not data:  # killed, or it could not send what it computed
            raise RuntimeError(f"the child process computing beside this one ended without a result "
                               f"(wait status {status})")
        ok, value = pickle.loads(data)
        if not ok:
            raise value
        return value

    def stop(self) -> None:
        """Kill the child (if it still runs) and reap it."""
        if self._done:
            return
        self._done = True
        try:
            os.kill(self.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        try:
            os.waitpid(self.pid, 0)
        except ChildProcessError:
            pass
        try:
            os.close(self._read)
        except OSError:
            pass


def _child(fn, write: int, parent: int) -> None:
    code = 1
    try:
        _die_with(parent)
        try:
            outcome = (True, fn())
        except KeyboardInterrupt:  # Ctrl-C reached the whole process group: the parent says it
            os._exit(130)
        except BaseException as err:  # noqa: BLE001 -- handed to the parent, which raises it
            outcome = (False, err)
        try:
            data = pickle.dumps(outcome, protocol=pickle.HIGHEST_PROTOCOL)
        except Exception as err:  # noqa: BLE001 -- an error that does not pickle: its text instead
            data = pickle.dumps((False, RuntimeError(f"in the child process: {outcome[1]!r} ({err})")))
        with os.fdopen(write, "wb") as pipe:
            pipe.write(data)
        code = 0
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)


def _die_with(parent: int) -> None:
    """Ask Linux to kill this process when its parent dies; a parent already gone: exit now."""
    import ctypes

    ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    if os.getppid() != parent:
        os._exit(1)


def run_beside(fn, here):
    """``(fn(), here())``, ``fn`` in a forked child while this process computes ``here()`` (both in this
    process where this is not Linux or there is only one core)."""
    if not sys.platform.startswith("linux") or cores() < 2:
        return fn(), here()
    child = Beside(fn)
    try:
        mine = here()
        return child.result(), mine
    finally:
        child.stop()
