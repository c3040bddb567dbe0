"""A throwaway PostgreSQL server for the tests (Debian's postgresql): initdb into a temporary folder, pg_ctl
start on 127.0.0.1 with a free port and its socket in that folder, trust authentication for the one local
test role, pg_ctl stop afterwards. PostgreSQL refuses to run as root, so as root the server runs as the
``postgres`` system user (created by the Debian package). A watchdog (tests/reaper.py) stops the server
(``pg_ctl stop -m immediate``) and removes its folder when the test run dies before ``stop``; so the server
is started without the test run's token (the run's own watchdog, which kills what carries it, waits for this
one instead)."""

from __future__ import annotations

import os
import pwd
import shutil
import socket
import subprocess
from pathlib import Path

from reaper import Watchdog, unmarked_env


def bindir() -> Path | None:
    for d in sorted(Path("/usr/lib/postgresql").glob("*/bin"), reverse=True):
        if (d / "initdb").exists() and (d / "pg_ctl").exists():
            return d
    found = shutil.which("pg_ctl")
    return Path(found).parent if found else None


def missing() -> str | None:
    if bindir() is None:
        return "PostgreSQL test needs initdb/pg_ctl (apt-get install postgresql)"
    if os.geteuid() == 0:
        try:
            pwd.getpwnam("postgres")
        except KeyError:
            return "PostgreSQL cannot run as root and there is no 'postgres' user"
    return None


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class PgServer:
    def __init__(self, root: Path, discard: Path | None = None):
        """A server in ``root``; ``discard``: the folder removed when the test run dies (default ``root``)."""
        self.root = Path(root)
        self.discard = Path(discard or root)
        self.watchdog: Watchdog | None = None
        self.data = self.root / "pgdata"
        self.port = _free_port()
        self.bin = bindir()
        self.started = False

    def _argv(self, *cmd: str) -> list[str]:
        argv = [str(self.bin / cmd[0]), *cmd[1:]]
        return ["runuser", "-u", "postgres", "--", *argv] if os.geteuid() == 0 else argv

    def _run(self, *cmd: str) -> subprocess.CompletedProcess:
        argv = self._argv(*cmd)
        out = subprocess.run(argv, capture_output=True, text=True, timeout=120, env=unmarked_env())
        if out.returncode != 0:
            log = self.root / "pg.log"
            tail = log.read_text(errors="ignore")[-2000:] if log.exists() else ""
            raise RuntimeError(f"{' '.join(cmd[:2])} failed: {out.stdout}\n{out.stderr}\n{tail}")
        return out

    def start(self) -> PgServer:
        self.root.mkdir(parents=True, exist_ok=True)
        if os.geteuid() == 0:
            shutil.chown(self.root, "postgres", "postgres")
            self.root.parent.chmod(self.root.parent.stat().st_mode | 0o711)  # let postgres reach its folder
        self.watchdog = Watchdog(self._argv("pg_ctl", "-D", str(self.data), "-m", "immediate", "-w", "stop"),
                                 self.discard)
        self._run("initdb", "-D", str(self.data), "-U", "gavel", "--auth=trust", "-E", "UTF8", "--no-instructions")
        self._run("pg_ctl", "-D", str(self.data), "-l", str(self.root / "pg.log"), "-w", "-t", "60", "-o",
                  f"-p {self.port} -k {self.root} -c listen_addresses=127.0.0.1 -c fsync=on", "start")
        self.started = True
        self._run("createdb", "-h", "127.0.0.1", "-p", str(self.port), "-U", "gavel", "gavel_test")
        return self

    def url(self, db: str = "gavel_test") -> str:
        return f"postgresql+psycopg://gavel@127.0.0.1:{self.port}/{db}"

    def createdb(self, name: str) -> str:
        self._run("createdb", "-h", "127.0.0.1", "-p", str(self.port), "-U", "gavel", name)
        return self.url(name)

    def stop(self) -> None:
        if self.started:
            self._run("pg_ctl", "-D", str(self.data), "-m", "fast", "-w", "stop")
            self.started = False
        if self.watchdog is not None:
            self.watchdog.cancel()
            self.watchdog = None
