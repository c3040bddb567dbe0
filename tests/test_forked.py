"""gavel.paper.forked: a function run in a forked child beside this process (`make results`' two groups of
tables), its result or its error handed back, and the child never left running: not after an error here,
not after this process is killed."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import pytest

from gavel.paper import forked, results

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="forked children only on Linux")
REPO = Path(__file__).resolve().parent.parent


@pytest.fixture
def two_cores(monkeypatch):
    """The fork path, whatever this machine has."""
    monkeypatch.setattr(forked, "cores", lambda: 2)


def _gone(pid: int, within: float = 30.0) -> bool:
    """Whether process ``pid`` has ended (or is a zombie no one reaps) within ``within`` seconds."""
    end = time.monotonic() + within
    while time.monotonic() < end:
        try:
            state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except (FileNotFoundError, ProcessLookupError):
            return True
        if state == "Z":
            return True
        time.sleep(0.05)
    return False


def test_both_results_come_back_the_childs_from_another_process(two_cores):
    theirs, mine = forked.run_beside(lambda: (os.getpid(), pd.DataFrame({"a": [1.5, 2.5]})), os.getpid)
    assert theirs[0] != mine == os.getpid()
    pd.testing.assert_frame_equal(theirs[1], pd.DataFrame({"a": [1.5, 2.5]}))


def test_one_core_computes_both_here(monkeypatch):
    monkeypatch.setattr(forked, "cores", lambda: 1)
    assert forked.run_beside(os.getpid, os.getpid) == (os.getpid(), os.getpid())


def test_the_childs_error_is_raised_here(two_cores):
    def fails():
        raise ValueError("no such table")

    with pytest.raises(ValueError, match="no such table"):
        forked.run_beside(fails, lambda: 1)


def test_an_error_here_kills_and_reaps_the_child(two_cores, tmp_path):
    pid_file = tmp_path / "child.pid"

    def sleeps():
        pid_file.write_text(str(os.getpid()))
        time.sleep(600)

    def fails():
        while not pid_file.exists() or not pid_file.read_text():
            time.sleep(0.01)
        raise RuntimeError("this side failed")

    with pytest.raises(RuntimeError, match="this side failed"):
        forked.run_beside(sleeps, fails)
    child = int(pid_file.read_text())
    with pytest.raises(ChildProcessError):  # reaped: no longer a child of this process
        os.waitpid(child, os.WNOHANG)
    assert _gone(child)


@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGTERM])
def test_a_killed_parent_takes_its_child_along(tmp_path, sig):
    pid_file = tmp_path / "child.pid"
    script = (f"import os, time\nfrom gavel.paper import forked\nforked.cores = lambda: 2\n"
              f"def sleeps():\n    open({str(pid_file)!r}, 'w').write(str(os.getpid()))\n    time.sleep(600)\n"
              f"forked.run_beside(sleeps, lambda: time.sleep(600))\n")
    parent = subprocess.Popen([sys.executable, "-c", script], cwd=REPO)
    try:
        end = time.monotonic() + 60
        while not (pid_file.exists() and pid_file.read_text()) and time.monotonic() < end:
            time.sleep(0.05)
        child = int(pid_file.read_text())
        parent.send_signal(sig)
        parent.wait(timeout=60)
        assert _gone(child)
    finally:
        parent.kill()
        parent.wait()


def test_the_tables_are_the_same_computed_in_two_processes(two_cores, shared_rel):
    one = results.compute(shared_rel, text_metrics=False)
    two = results.compute(shared_rel, text_metrics=False, fork=True)
    assert list(one) == list(two) and len(one) > 10
    for name in one:
        pd.testing.assert_frame_equal(one[name], two[name], check_exact=True, obj=name)
