"""A generator run in a child process beside this one, what it yields read back as it comes: `make results`
computes its two independent groups of tables at once on a machine with two cores or more.

The child is a fork (it sees the release already loaded, nothing is copied up front) and sends each item it
yields pickled through a pipe (made as large as Linux allows, so that it rarely waits for this process to
read). It never outlives the command: Linux kills it as soon as its parent dies, whatever killed the parent
(``PR_SET_PDEATHSIG``), and the parent kills and reaps it when it stops reading from it (an error, Ctrl-C,
done). Only on Linux (elsewhere a fork of a process holding numerical libraries' threads is not safe, and
there is no such death signal), with two cores or more, and where the machine had a core to spare while the
release loaded (``idle_cores``); otherwise ``run_beside`` runs the generator in this process, one item when
asked for it.
"""

from __future__ import annotations

import os
import pickle
import signal
import sys

_PR_SET_PDEATHSIG = 1  # prctl(2)
MIN_IDLE_CORES = 0.5  # a child only where at least half a core was left idle (on average) while the release loaded
_F_SETPIPE_SZ = 1031  # fcntl(2), Linux
PIPE_BYTES = 1 << 20  # Linux's default most for a user (/proc/sys/fs/pipe-max-size)


def cores() -> int:
    """The cores this process may run on."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def _cpu_times() -> tuple[int, int] | None:
    """(idle, total) time of all the machine's cores so far (Linux's /proc/stat, in clock ticks)."""
    try:
        with open("/proc/stat", encoding="ascii") as fh:
            ticks = [int(t) for t in fh.readline().split()[1:9]]
    except (OSError, ValueError):
        return None
    return (ticks[3] + ticks[4], sum(ticks)) if len(ticks) == 8 else None


_SINCE = _cpu_times()  # when this module was imported: `gavel results` imports it before loading the release
MIN_IDLE_TICKS = 20  # a shorter look (Linux counts 100 ticks a second per core) says nothing


def idle_cores() -> float:
    """How many of the machine's cores were idle, on average, since this module was imported (a number of
    cores; the machine's count where /proc/stat cannot say, or when too little time has passed to tell)."""
    now = _cpu_times()
    machine = os.cpu_count() or 1
    if now is None or _SINCE is None or now[1] - _SINCE[1] < MIN_IDLE_TICKS:
        return float(machine)
    return machine * (now[0] - _SINCE[0]) / (now[1] - _SINCE[1])


class Beside:
    """The generator ``fn()`` running in a forked child; ``items()`` what it yields, in order (its error raised
    here), ``stop()`` kills it."""

    def __init__(self, fn):
        sys.stdout.flush()  # what this process has not written yet must not be written twice, by the child too
        sys.stderr.flush()
        parent = os.getpid()
        read, write = os.pipe()
        try:
            import fcntl

            fcntl.fcntl(write, _F_SETPIPE_SZ, PIPE_BYTES)
        except OSError:  # a smaller pipe: the child waits for reads sooner, nothing else
            pass
        pid = os.fork()
        if pid == 0:  # the child: never returns
            os.close(read)
            _child(fn, write, parent)
        os.close(write)
        self.pid, self._pipe, self._done = pid, os.fdopen(read, "rb"), False

    def items(self):
        while True:
            try:
                kind, value = pickle.load(self._pipe)
            except EOFError:
                status = os.waitpid(self.pid, 0)[1]
                self._done = True
                self._pipe.close()
                raise RuntimeError("the child process computing beside this one ended before it was done "
                                   f"(wait status {status})") from None
            if kind == "error":
                raise value
            if kind == "end":
                return
            yield value

    def stop(self) -> None:
        """Kill the child (if it still runs) and reap it."""
        self._pipe.close()
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


def _child(fn, write: int, parent: int) -> None:
    code = 1
    try:
        _die_with(parent)
        with os.fdopen(write, "wb") as pipe:
            try:
                for item in fn():
                    _send(pipe, "item", item)
                _send(pipe, "end", None)
            except KeyboardInterrupt:  # Ctrl-C reached the whole process group: the parent says it
                os._exit(130)
            except BaseException as err:  # noqa: BLE001 -- handed to the parent, which raises it
                _send(pipe, "error", err)
        code = 0
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)


def _send(pipe, kind: str, value) -> None:
    try:
        data = pickle.dumps((kind, value), protocol=pickle.HIGHEST_PROTOCOL)
    except Exception as err:  # noqa: BLE001 -- what does not pickle: an error saying so
        data = pickle.dumps(("error", RuntimeError(f"in the child process, {kind} {value!r} does not pickle: {err}")))
    pipe.write(data)
    pipe.flush()


def _die_with(parent: int) -> None:
    """Ask Linux to kill this process when its parent dies; a parent already gone: exit now."""
    import ctypes

    ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    if os.getppid() != parent:
        os._exit(1)


def run_beside(fn, here, fork: bool = True):
    """``(here(items), rest)``: the generator ``fn()`` runs in a forked child while this process computes
    ``here(items)``, ``items`` iterating over what ``fn`` yields as it comes; ``rest`` is the list of what
    ``here`` did not take. Both in this process (``fn`` then runs a step each time ``items`` is asked for
    the next) with ``fork=False``, where this is not Linux or there is only one core, and where the machine
    has had less than ``MIN_IDLE_CORES`` idle since the module was imported (other work keeping the second
    core busy: two processes would share one core, and the one doing the paired comparisons would wait)."""
    if not fork or not sys.platform.startswith("linux") or cores() < 2 or idle_cores() < MIN_IDLE_CORES:
        items = iter(fn())
        mine = here(items)
        return mine, list(items)
    child = Beside(fn)
    try:
        items = child.items()
        mine = here(items)
        return mine, list(items)
    finally:
        child.stop()
