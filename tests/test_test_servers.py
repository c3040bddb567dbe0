"""Issue 38, section 3: a test run killed with SIGKILL leaves no server it started running (PostgreSQL's
processes and folder, the annotation app's server): tests/reaper.py."""

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from needs import unavailable
from pg_server import missing

TESTS = Path(__file__).resolve().parent


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError, IndexError):
        return False
    return state != "Z"


def _processes_naming(text: str) -> list[int]:
    """Processes whose command line names ``text`` (the postmaster and its children name the data folder)."""
    found = []
    for p in Path("/proc").iterdir():
        if p.name.isdigit():
            try:
                if text in (p / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace") \
                        and _alive(int(p.name)):
                    found.append(int(p.name))
            except OSError:
                pass
    return found


def test_a_killed_test_run_leaves_no_server_running(tmp_path):
    if missing():
        unavailable(missing())
    out = tmp_path / "victim.json"
    run = subprocess.Popen([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:randomly",
                            str(TESTS / "kill_run_victim.py"), "--basetemp", str(tmp_path / "victim")],
                           cwd=TESTS.parent, env={**os.environ, "GAVEL_VICTIM_OUT": str(out)},
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.time() + 180
    while not out.exists() and time.time() < deadline and run.poll() is None:
        time.sleep(0.2)
    if not out.exists():
        run.kill()
        pytest.fail(f"the test run to kill did not start its servers (exit {run.poll()})")
    victim = json.loads(out.read_text())
    assert _alive(victim["postmaster"]) and _alive(victim["app"])
    assert len(_processes_naming(victim["pg_data"])) >= 1
    run.send_signal(signal.SIGKILL)
    run.wait()
    deadline = time.time() + 60
    while time.time() < deadline and (_alive(victim["app"]) or _alive(victim["postmaster"])
                                      or _processes_naming(victim["pg_data"]) or Path(victim["pg_folder"]).exists()):
        time.sleep(0.5)
    assert not _alive(victim["app"]), "the annotation app's server outlived the killed test run"
    assert not _alive(victim["postmaster"]), "PostgreSQL outlived the killed test run"
    assert _processes_naming(victim["pg_data"]) == []
    assert not Path(victim["pg_folder"]).exists(), "PostgreSQL's temporary folder was left behind"


def test_ci_kills_a_test_run_once_servers_of_two_kinds_are_alive(tmp_path):
    """.ci/run's moment to kill a `make test` half-way (tests/leftovers.py --until-servers): it returns once
    servers of K kinds of a test run are alive, and after --wait seconds otherwise, saying which it saw."""
    from reaper import MARK

    folder = tmp_path / "run"
    folder.mkdir()
    token = f"ci-kill-{os.getpid()}"  # this test's own run: the suite's other servers carry the suite's token
    env = {**os.environ, MARK: token}
    sleeper = [sys.executable, "-c", "import time; time.sleep(60)"]
    first = subprocess.Popen([*sleeper, "llama_cpp.server"], env=env)  # a llama.cpp server of this run
    try:
        check = [sys.executable, str(TESTS / "leftovers.py"), str(tmp_path / "elsewhere"), "--token", token,
                 "--until-servers"]
        one = subprocess.run([*check, "1", "--wait", "30"], capture_output=True, text=True, timeout=60)
        assert one.returncode == 0 and one.stdout.startswith("servers of 1 kind(s) alive (llama.cpp server)"), one
        two = subprocess.run([*check, "2", "--wait", "1"], capture_output=True, text=True, timeout=60)
        assert two.stdout.startswith("after 1 s, servers of only 1 kind(s) alive (llama.cpp server)"), two
        second = subprocess.Popen([*sleeper, "/usr/lib/chromium/chromium"], env=env)
        try:
            both = subprocess.run([*check, "2", "--wait", "30"], capture_output=True, text=True, timeout=60)
            assert both.stdout.startswith("servers of 2 kind(s) alive (Chromium, llama.cpp server)"), both
        finally:
            second.kill()
            second.wait()
    finally:
        first.kill()
        first.wait()
