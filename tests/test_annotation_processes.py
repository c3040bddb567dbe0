"""Issue 46 (1): every process dies with what started it. The annotation server's agreement worker ends when
the server ends, by any signal (SIGTERM, SIGINT after a load, SIGKILL), with no multiprocessing resource
tracker beside it; a computation that hangs is stopped at its time limit and its worker replaced; a test run
killed with SIGKILL (started as a script's background job, SIGINT ignored) leaves no process and no
temporary folder, and neither does the run after it.

Processes are found by a token in their environment (tests/reaper.py ``marked``): each test server carries
its own (``GAVEL_TEST_SERVER``), each test run its own (``GAVEL_TEST_RUN``); children inherit it wherever
they are reparented."""

from __future__ import annotations

import http.client
import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from needs import need_module

need_module("waitress", "annotation tests need the annotation extra")

from annotation_server import AppServer  # noqa: E402
from reaper import MARK, marked  # noqa: E402

TESTS = Path(__file__).resolve().parent
ADMIN_PW = "admin-pw-9-long"


def _store(url: str, n_tasks: int = 120):
    """Tasks answered by three annotators: a table that takes a moment to compute at many resamples."""
    from gavel.annotation import tasks as T
    from gavel.annotation.db import Store

    store = Store(url)
    store.add_user("admin", ADMIN_PW, is_admin=True)
    people = ("ann", "bea", "cy")
    for p in people:
        store.add_user(p, f"{p}-password-1")
    pairs = [{"case_id": f"c{i}", "item": "filing_date", "a": [f"a{i}"], "b": [f"b{i}"], "origin": "t",
              "judge": {"relation": "equal"}} for i in range(n_tasks)]
    store.add_tasks(T.comparison_tasks(pairs, "t"))
    store.assign([(f"comparison:t:c{i}:filing_date", p, "annotate") for i in range(n_tasks) for p in people])
    labels = ("equal", "different", "a_contains_b")
    for aid in range(1, 3 * n_tasks + 1):
        store.save(aid, 2 + (aid - 1) % 3, "label", labels[(aid * 7) % 3 if aid % 4 else 0])
    return store


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state != "Z"


def _children(pid: int) -> list[tuple[int, str]]:
    """(pid, command line) of the live children of ``pid``."""
    found = []
    for p in Path("/proc").iterdir():
        try:
            if p.name.isdigit() and int((p / "stat").read_text().rsplit(")", 1)[1].split()[1]) == pid \
                    and _alive(int(p.name)):
                found.append((int(p.name), (p / "cmdline").read_bytes().replace(b"\0", b" ").decode()))
        except (OSError, IndexError):
            pass
    return found


def _wait_gone(pids_of, seconds: float = 30) -> list[int]:
    deadline = time.monotonic() + seconds
    while (left := pids_of()) and time.monotonic() < deadline:
        time.sleep(0.2)
    return left


def _load(opener, base: str, timeout: float = 120) -> str:
    with opener.open(base + "/admin/agreement", timeout=timeout) as r:
        return r.read().decode()


@pytest.fixture
def server(tmp_path):
    url = f"sqlite:///{tmp_path / 'a.db'}"
    store = _store(url)
    app = AppServer(url, tmp_path / "server.log", serve_args=["--agreement-resamples", "20000"])
    yield app, store
    app.stop()
    store.engine.dispose()


@pytest.mark.parametrize("how", ["SIGTERM", "SIGINT after load", "SIGINT during load", "SIGKILL"])
def test_the_server_leaves_no_process_behind(server, how):
    """The server is started, the agreement page loaded (its worker computing); then the server is stopped
    one way. Before: SIGTERM and SIGKILL left the worker and multiprocessing's resource tracker under PID 1;
    after a load, SIGINT did not end the server at all."""
    app, store = server
    app.start()
    admin = app.login("admin", ADMIN_PW)
    assert "agreement" in _load(admin, app.base)
    kids = _children(app.proc.pid)
    assert len(kids) == 1 and "gavel.annotation.worker" in kids[0][1], kids  # the worker, nothing beside it
    stop, loaders = threading.Event(), []
    if "load" in how:  # admins reload while saves arrive, for 10 s (and on, "during load")
        def reload():
            while not stop.is_set():
                try:
                    _load(admin, app.base)
                except (OSError, http.client.HTTPException):  # the server went away
                    return

        loaders = [threading.Thread(target=reload) for _ in range(4)]
        for t in loaders:
            t.start()
        t0, i = time.monotonic(), 0
        while time.monotonic() - t0 < 10:
            i += 1
            store.save(1 + i % 30, 2 + i % 3, "label", ("equal", "different")[i % 2])
            time.sleep(0.05)
        if how == "SIGINT after load":
            stop.set()
            for t in loaders:
                t.join()
    assert len(app.processes()) >= 2
    os.kill(app.proc.pid, getattr(signal, how.split()[0]))
    stop.set()
    for t in loaders:
        t.join()
    try:
        app.proc.wait(timeout=60)
    except subprocess.TimeoutExpired:
        pytest.fail(f"the server did not end within 60 s of {how}")
    assert _wait_gone(app.processes) == [], f"left running after {how}: {app.processes()}"


def _until(what: str, check, seconds: float = 300):
    """Call ``check()`` every half second until it returns something true, at most ``seconds``."""
    deadline = time.monotonic() + seconds
    while not (result := check()):
        assert time.monotonic() < deadline, f"not within {seconds} s: {what}"
        time.sleep(0.5)
    return result


def test_a_hung_computation_is_stopped_at_its_time_limit_and_its_worker_replaced(tmp_path):
    """Before: a worker stopped mid-computation was waited for forever (every admin load waited 20 s and the
    table never updated). Now the computation's time limit kills it and the next load starts a new one. (The
    page is loaded until each step shows: how long a busy machine takes changes nothing but the wait.)"""
    url = f"sqlite:///{tmp_path / 'a.db'}"
    store = _store(url, n_tasks=10)
    app = AppServer(url, tmp_path / "server.log", serve_args=["--agreement-time-limit", "20",
                                                                      "--agreement-max-interval", "0.5"]).start()
    try:
        admin = app.login("admin", ADMIN_PW)
        _until("a current table", lambda: 'id="agreement-stale"' not in _load(admin, app.base))
        (worker, _), = _children(app.proc.pid)
        os.kill(worker, signal.SIGSTOP)  # stopped: it never answers
        store.save(1, 2, "label", "different")  # a new state of the data: the next load asks for a table
        said = "WorkerDied: the computation ran past its time limit (20 s; serve --agreement-time-limit)"
        _until("the time limit's message in the server's log",
               lambda: _load(admin, app.base) and said in app.log.read_text())
        assert _wait_gone(lambda: [worker] if _alive(worker) else []) == [], "the stopped worker was left"
        _until("a current table from a new worker", lambda: 'id="agreement-stale"' not in _load(admin, app.base))
        (new, _), = _children(app.proc.pid)
        assert new != worker
    finally:
        app.stop()
        store.engine.dispose()


def _background(argv: list[str], **kw) -> subprocess.Popen:
    """``argv`` as a script's background job starts it (``cmd &``: SIGINT ignored), in a process group of its
    own so that the whole run can be killed at once."""
    return subprocess.Popen(argv, start_new_session=True, stdin=subprocess.DEVNULL,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_IGN), **kw)


def test_a_killed_test_run_and_the_run_after_it_leave_no_process_and_no_folder(tmp_path):
    """A pytest run in the background (SIGINT ignored) starts the app (its worker computing), a plain child
    with no parent-death signal, and its figures folder; the run is killed with SIGKILL: pytest alone, then
    (another run) its whole process group. Nothing carrying the run's token is left, and its temporary
    folder ($TMPDIR, empty before) is empty again; then the same run, to its end, leaves nothing either.
    Before: the plain child, the app's worker and the figures folder were left."""
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    for end in ("SIGKILL of pytest", "SIGKILL of its process group", "its end"):
        finish = end == "its end"
        out = tmp_path / f"victim-{end.split()[-1]}.json"
        run = _background([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:randomly",
                           str(TESTS / "kill_run_app_victim.py"), "--basetemp", str(out.with_suffix(""))],
                          cwd=TESTS.parent, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                          env={**os.environ, "TMPDIR": str(tmp), "GAVEL_VICTIM_OUT": str(out),
                               "GAVEL_VICTIM_FINISH": "1" if finish else ""})
        deadline = time.monotonic() + 180
        while not out.exists() and run.poll() is None and time.monotonic() < deadline:
            time.sleep(0.2)
        if not out.exists():
            os.killpg(run.pid, signal.SIGKILL)
            pytest.fail(f"the test run did not start its processes (exit {run.poll()})")
        victim = json.loads(out.read_text())
        assert os.environ.get(MARK) != victim["token"]  # a run of its own
        assert all(_alive(victim[k]) for k in ("app", "worker", "plain")) or finish
        assert Path(victim["figures"]).is_relative_to(tmp)
        if finish:
            assert run.wait(timeout=300) == 0
        elif "group" in end:
            os.killpg(run.pid, signal.SIGKILL)
            run.wait()
        else:
            run.kill()
            run.wait()
        left = _wait_gone(lambda token=victim["token"]: marked(MARK, token), 60)
        assert left == [], f"left running after {end}: {left}"
        # a process being torn down by SIGKILL has already given up its memory (its environment reads empty, so
        # it is no longer "marked") but is not yet a zombie: its state still reads running for a moment (seen
        # once on a busy CI machine); waited for like the rest, never skipped
        alive = _wait_gone(lambda pids=victim: [k for k in ("app", "worker", "plain") if _alive(pids[k])], 60)
        assert alive == [], f"left running after {end}: {alive}"
        deadline = time.monotonic() + 30
        while list(tmp.iterdir()) and time.monotonic() < deadline:
            time.sleep(0.2)
        assert list(tmp.iterdir()) == [], f"left in $TMPDIR after {end}: {list(tmp.iterdir())}"
