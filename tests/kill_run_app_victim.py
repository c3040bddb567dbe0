"""A test run for tests/test_annotation_processes.py to kill (or, with GAVEL_VICTIM_FINISH=1, to let finish):
it starts the annotation app and loads its agreement page (the worker starts), starts a plain child with no
parent-death signal, writes their process ids, its run's token and its figures folder to $GAVEL_VICTIM_OUT,
then waits to be killed (or returns, leaving the plain child to the run's watchdog). Run only by that test
(its name does not start with test_, so a plain pytest run never collects it)."""

import json
import os
import subprocess
import sys
import time
from pathlib import Path

from annotation_server import AppServer
from reaper import MARK

from gavel.annotation.db import Store


def test_wait_to_be_killed(tmp_path):
    url = f"sqlite:///{tmp_path / 'a.db'}"
    Store(url).add_user("admin", "admin-pw-9-long", is_admin=True)
    app = AppServer(url, tmp_path / "app.log").start()
    with app.login("admin", "admin-pw-9-long").open(app.base + "/admin/agreement", timeout=120) as r:
        r.read()
    worker = next(int(p.name) for p in Path("/proc").iterdir() if p.name.isdigit()
                  and (p / "stat").read_text().rsplit(")", 1)[1].split()[1] == str(app.proc.pid))
    plain = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
    Path(os.environ["GAVEL_VICTIM_OUT"]).write_text(json.dumps(
        {"app": app.proc.pid, "worker": worker, "plain": plain.pid, "token": os.environ[MARK],
         "figures": os.environ["GAVEL_FIGURES_DIR"]}))
    if os.environ.get("GAVEL_VICTIM_FINISH"):
        app.stop()
        return
    time.sleep(600)
