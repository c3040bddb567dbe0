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
    """The fork path, whatever this machine has and whatever else it is doing."""
    monkeypatch.setattr(forked, "cores", lambda: 2)
    monkeypatch.setattr(forked, "idle_cores", lambda: 2.0)


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


def test_what_the_child_yields_comes_back_in_order_from_another_process(two_cores):
    def child():
        yield os.getpid()
        yield pd.DataFrame({"a": [1.5, 2.5]})
        yield "last"

    def here(items):
        return os.getpid(), next(items)

    (mine, theirs), rest = forked.run_beside(child, here)
    assert theirs != mine == os.getpid()
    pd.testing.assert_frame_equal(rest[0], pd.DataFrame({"a": [1.5, 2.5]}))
    assert rest[1:] == ["last"]


def test_one_core_or_no_fork_computes_both_here_a_step_at_a_time(monkeypatch):
    steps = []

    def child():
        steps.append("first")
        yield os.getpid()
        steps.append("second")
        yield 2

    def here(items):
        assert steps == []  # nothing runs before it is asked for
        got = next(items)
        assert steps == ["first"]
        return got

    assert forked.run_beside(child, here, fork=False) == (os.getpid(), [2])
    monkeypatch.setattr(forked, "idle_cores", lambda: 2.0)
    monkeypatch.setattr(forked, "cores", lambda: 1)
    steps.clear()
    assert forked.run_beside(child, here) == (os.getpid(), [2])
    # two cores, but the second kept busy by other work while the release loaded: one process too
    monkeypatch.setattr(forked, "cores", lambda: 2)
    monkeypatch.setattr(forked, "idle_cores", lambda: forked.MIN_IDLE_CORES / 2)
    steps.clear()
    assert forked.run_beside(child, here) == (os.getpid(), [2])


def test_idle_cores_are_read_from_the_machines_counts(monkeypatch):
    ticks = iter([(1_000, 4_000), (1_150, 4_200)])  # 150 of 200 ticks idle since the import
    monkeypatch.setattr(forked, "_cpu_times", lambda: next(ticks))
    monkeypatch.setattr(forked, "_SINCE", forked._cpu_times())
    monkeypatch.setattr(os, "cpu_count", lambda: 2)
    assert forked.idle_cores() == pytest.approx(1.5)
    monkeypatch.setattr(forked, "_cpu_times", lambda: (1_001, 4_000 + forked.MIN_IDLE_TICKS - 1))  # too soon
    assert forked.idle_cores() == 2.0
    monkeypatch.setattr(forked, "_cpu_times", lambda: None)  # no /proc/stat
    assert forked.idle_cores() == 2.0
    monkeypatch.undo()
    assert 0 <= forked.idle_cores() <= (os.cpu_count() or 1)


def test_the_childs_error_is_raised_here_after_what_it_yielded_before(two_cores):
    def child():
        yield 1
        raise ValueError("no such table")

    with pytest.raises(ValueError, match="no such table"):
        forked.run_beside(child, lambda items: next(items))


def test_what_does_not_pickle_is_an_error_here(two_cores):
    with pytest.raises(RuntimeError, match="does not pickle"):
        forked.run_beside(lambda: iter([lambda: 0]), lambda items: next(items))


def test_an_error_here_kills_and_reaps_the_child(two_cores, tmp_path):
    pid_file = tmp_path / "child.pid"

    def sleeps():
        pid_file.write_text(str(os.getpid()))
        time.sleep(600)
        yield None

    def fails(items):
        while not pid_file.exists() or not pid_file.read_text():
            time.sleep(0.01)
        raise RuntimeError("this side failed")

    with pytest.raises(RuntimeError, match="this side failed"):
        forked.run_beside(sleeps, fails)
    child = int(pid_file.read_text())
    with pytest.raises(ChildProcessError):  # reaped: no longer a child of this process
        os.waitpid(child, os.WNOHANG)
    assert _gone(child)


def test_a_child_killed_midway_is_an_error_here(two_cores):
    def dies():
        yield 1
        os.kill(os.getpid(), signal.SIGKILL)
        yield 2

    with pytest.raises(RuntimeError, match="ended before it was done"):
        forked.run_beside(dies, lambda items: next(items))


@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGTERM])
def test_a_killed_parent_takes_its_child_along(tmp_path, sig):
    pid_file = tmp_path / "child.pid"
    script = (f"import os, time\nfrom gavel.paper import forked\nforked.cores = lambda: 2\n"
              f"forked.idle_cores = lambda: 2.0\ndef sleeps():\n    open({str(pid_file)!r}, 'w').write(str(os.getpid()))\n    time.sleep(600)\n"
              f"    yield None\nforked.run_beside(sleeps, lambda items: time.sleep(600))\n")
    parent = subprocess.Popen([sys.executable, "-c", script], cwd=REPO)
    try:
        end = time.monotonic() + 60
        while not (pid_file.exists() and pid_file.read_text()) and time.monotonic() < end:
            time.sleep(0.05)
        child = int(pid_file.read_text())
        assert child != parent.pid  # a child of its own, not the parent running both
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
