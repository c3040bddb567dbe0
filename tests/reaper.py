"""The servers a test run starts die with it, however it ends (a SIGKILL included).

* :func:`die_with_parent`: a ``preexec_fn`` for a server that stays our child (the annotation app, the SLURM
  daemons): the kernel sends it SIGKILL when the thread that started it dies (``prctl(PR_SET_PDEATHSIG)``).
* :class:`Watchdog`: for a server that leaves our process tree (PostgreSQL: ``pg_ctl start`` daemonises the
  postmaster, which forks its own children). A small process, in its own session so that a signal to the
  test run's process group does not reach it, waits for the test run to end (a pidfd on Linux >= 5.3, else
  polling its parent), then runs the cleanup command and removes the server's folder. A clean stop cancels it.

    python tests/reaper.py PARENT_PID FOLDER -- CLEANUP COMMAND ...   (what Watchdog starts)
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


def die_with_parent():
    """preexec_fn: the child gets SIGKILL when the thread that started it dies (the local model's server uses
    the same, ``gavel.llm.providers.local.die_with_parent``)."""
    from gavel.llm.providers.local import die_with_parent as kernel_kill

    return kernel_kill(os.getpid())


class Watchdog:
    """Runs ``cleanup`` (an argv) and removes ``folder`` when this process dies before :meth:`cancel`."""

    def __init__(self, cleanup: list[str], folder: str | os.PathLike | None = None):
        self.proc = subprocess.Popen([sys.executable, __file__, str(os.getpid()), str(folder or ""), "--",
                                      *cleanup], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                     stderr=subprocess.DEVNULL, start_new_session=True)

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
    parent, folder, cleanup = int(argv[0]), argv[1], argv[3:]
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # a Ctrl-C of the test run is the test run's to handle
    _wait_for_exit(parent)
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
