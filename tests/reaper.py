"""The servers a test run starts die with it, however it ends (a SIGKILL included).

* :func:`die_with_parent`: a ``preexec_fn`` for a server that stays our child (the annotation app, the SLURM
  daemons): the kernel sends it SIGKILL when the thread that started it dies (``prctl(PR_SET_PDEATHSIG)``).
* :class:`Watchdog`: for a server that leaves our process tree (PostgreSQL: ``pg_ctl start`` daemonises the
  postmaster, which forks its own children). A small process, in its own session so that a signal to the
  test run's process group does not reach it, waits for the test run to end (a pidfd on Linux >= 5.3, else
  polling its parent), then runs the cleanup command and removes the server's folder. A clean stop cancels it.
* The test run's own watchdog (conftest.py): every test run (``pytest``, and a pytest started by a test)
  puts a token of its own in its environment (``GAVEL_TEST_RUN``), so every process it starts, and theirs,
  carries it; when the run ends, however it ends, its watchdog kills each process still carrying the token
  (:func:`marked`), waits for the run's other watchdogs (they carry the token as ``GAVEL_TEST_WATCHDOG``)
  and removes the run's temporary folder. A process with a watchdog of its own (PostgreSQL, the watchdogs
  themselves) is started without the token (:func:`unmarked_env`).

    python tests/reaper.py PARENT_PID FOLDER [--kill NAME=VALUE] -- CLEANUP COMMAND ...   (what Watchdog starts)
"""

from __future__ import annotations

import os
import select
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

MARK = "GAVEL_TEST_RUN"  # a test run's token, in the environment of every process it starts
WATCHDOG = "GAVEL_TEST_WATCHDOG"  # ... and of its watchdogs, in this variable instead


def unmarked_env() -> dict:
    """This process's environment without the test run's token (for a process with its own watchdog)."""
    return {k: v for k, v in os.environ.items() if k != MARK}


def marked(name: str, value: str) -> list[int]:
    """The live processes (this one aside) whose environment, as they were started, holds ``NAME=VALUE``."""
    entry, found = f"{name}={value}".encode(), []
    for p in Path("/proc").iterdir():
        if not p.name.isdigit() or int(p.name) == os.getpid():
            continue
        try:
            if entry in (p / "environ").read_bytes().split(b"\0"):
                found.append(int(p.name))
        except OSError:  # gone, or not ours to read
            pass
    return found


def kill_marked(name: str, value: str) -> None:
    """SIGKILL every process :func:`marked` ``NAME=VALUE`` until none is left (a killed one forks no more)."""
    for _ in range(50):
        pids = marked(name, value)
        if not pids:
            return
        for pid in pids:
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
        time.sleep(0.1)


def die_with_parent():
    """preexec_fn: the child gets SIGKILL when the thread that started it dies (the local model's server uses
    the same, ``gavel.llm.providers.local.die_with_parent``)."""
    from gavel.llm.providers.local import die_with_parent as kernel_kill

    return kernel_kill(os.getpid())


class Watchdog:
    """Runs ``cleanup`` (an argv) and removes ``folder`` when this process dies before :meth:`cancel`."""

    def __init__(self, cleanup: list[str], folder: str | os.PathLike | None = None, kill: str | None = None):
        """``kill``: ``NAME=VALUE``, the processes to kill first (:func:`kill_marked`)."""
        self.proc = subprocess.Popen([sys.executable, __file__, str(os.getpid()), str(folder or ""),
                                      *(["--kill", kill] if kill else []), "--", *cleanup],
                                     stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                     start_new_session=True,
                                     env={**unmarked_env(), WATCHDOG: os.environ.get(MARK, "")})

    def cancel(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()


def _wait_for_exit(pid: int) -> None:
    try:
        fd = os.pidfd_open(pid)
    except (AttributeError, OSError):
        fd = None
    if fd is not None:
        select.select([fd], [], [])  # readable once the process has exited
        os.close(fd)
        return
    while os.getppid() == pid:
        time.sleep(0.5)


def main(argv: list[str]) -> int:
    parent, folder, rest = int(argv[0]), argv[1], argv[2:]
    kill = rest[1] if rest[0] == "--kill" else None
    cleanup = rest[rest.index("--") + 1:]
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # a Ctrl-C of the test run is the test run's to handle
    _wait_for_exit(parent)
    if kill:  # the run's own watchdog: its processes first, then it waits for its other watchdogs
        name, value = kill.split("=", 1)
        kill_marked(name, value)
        deadline = time.monotonic() + 150
        while marked(WATCHDOG, value) and time.monotonic() < deadline:
            time.sleep(0.2)
    if cleanup:
        try:
            subprocess.run(cleanup, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                           timeout=120, check=False)
        except (OSError, subprocess.TimeoutExpired):
            pass
    if folder:
        shutil.rmtree(Path(folder), ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
