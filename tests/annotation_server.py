"""The annotation app as the tests run it: ``python -m gavel annotate serve`` in a subprocess on 127.0.0.1,
stopped by PID. Restarting keeps the port and the session key file (beside the log), so a browser page can
reload after the restart. ``serve_args`` are passed to ``serve`` (e.g. the login limits a test needs). The
server dies with the test run (parent-death signal, tests/reaper.py), a SIGKILL of the run included. Each
server carries a token of its own in its environment (``GAVEL_TEST_SERVER``), which its children inherit:
:meth:`AppServer.processes` finds the server and every process it started, wherever they were reparented."""

from __future__ import annotations

import http.cookiejar
import os
import re
import signal
import socket
import subprocess
import sys
import time
import urllib.parse
import urllib.request
import uuid
from pathlib import Path

from reaper import die_with_parent, marked

REPO = Path(__file__).resolve().parent.parent


def _child_setup():
    """preexec_fn: the server dies with the thread that started it, and meets Ctrl-C (SIGINT) as in a terminal:
    a test run started in the background by a script (``pytest ... &``) inherits SIGINT ignored."""
    die = die_with_parent()

    def setup():
        signal.signal(signal.SIGINT, signal.SIG_DFL)
        die()
    return setup


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class AppServer:
    def __init__(self, db_url: str, log: Path, port: int | None = None, serve_args: list[str] | None = None):
        self.db_url, self.log, self.port = db_url, Path(log), port or free_port()
        self.key_file = self.log.parent / "secret_key"
        self.serve_args = list(serve_args or [])
        self.proc: subprocess.Popen | None = None
        self.token = uuid.uuid4().hex

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self, timeout: float = 60) -> AppServer:
        fh = open(self.log, "a")
        self.proc = subprocess.Popen([sys.executable, "-m", "gavel", "annotate", "--db", self.db_url, "serve",
                                      "--port", str(self.port), "--threads", "24",
                                      "--secret-key-file", str(self.key_file), *self.serve_args],
                                     cwd=REPO, stdout=fh, stderr=subprocess.STDOUT,
                                     env={**os.environ, "GAVEL_TEST_SERVER": self.token},
                                     preexec_fn=_child_setup())
        fh.close()
        deadline = time.time() + timeout
        while time.time() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"annotation server exited: {self.log.read_text()[-2000:]}")
            try:
                with urllib.request.urlopen(self.base + "/login", timeout=2) as r:
                    if r.status == 200:
                        return self
            except OSError:
                time.sleep(0.2)
        self.stop()
        raise RuntimeError(f"annotation server did not answer: {self.log.read_text()[-2000:]}")

    def stop(self) -> None:
        if self.proc and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.proc = None

    def processes(self) -> list[int]:
        """The live processes carrying this server's token: the server and what it started (its worker)."""
        return marked("GAVEL_TEST_SERVER", self.token)

    def login(self, username: str, password: str) -> urllib.request.OpenerDirector:
        """An HTTP client logged in as ``username`` (its cookies kept; the login form's CSRF token sent)."""
        opener = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(http.cookiejar.CookieJar()))
        with opener.open(self.base + "/login", timeout=60) as r:
            token = re.search(r'name="csrf_token" value="([^"]+)"', r.read().decode())[1]
        form = urllib.parse.urlencode({"csrf_token": token, "username": username, "password": password}).encode()
        with opener.open(self.base + "/login", data=form, timeout=60) as r:
            assert not r.geturl().endswith("/login"), f"login of {username} failed"
        return opener

    def restart(self) -> None:
        self.stop()
        self.start()
