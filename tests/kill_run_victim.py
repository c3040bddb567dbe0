"""A test run for tests/test_test_servers.py to kill: it starts PostgreSQL (the pg_server fixture) and the
annotation app's server, writes their process ids and folders to $GAVEL_VICTIM_OUT, then waits to be killed.
Run only by that test (its name does not start with test_, so a plain pytest run never collects it)."""

import json
import os
import time
from pathlib import Path

from annotation_server import AppServer


def test_wait_to_be_killed(pg_server, tmp_path):
    app = AppServer(f"sqlite:///{tmp_path / 'a.db'}", tmp_path / "app.log").start()
    postmaster = int((pg_server.data / "postmaster.pid").read_text().split()[0])
    Path(os.environ["GAVEL_VICTIM_OUT"]).write_text(json.dumps(
        {"postmaster": postmaster, "pg_folder": str(pg_server.root), "pg_data": str(pg_server.data),
         "app": app.proc.pid}))
    time.sleep(600)
