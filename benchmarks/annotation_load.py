"""Load benchmark of the annotation app: N simulated annotators (default 20) save answers as fast as they can
for a while (default 60 s) against the real server process (waitress) on a fresh SQLite file (or --db URL).

Each annotator logs in, opens their own style task and cycles through its fields, sending each save with a
fresh token. The server runs as deployed: its failed-login limits on (the app's defaults unless
GAVEL_LOGIN_LIMIT_ACCOUNT / GAVEL_LOGIN_LIMIT_ADDRESS say otherwise); all annotators log in from one address. Printed: saves per second, median / 95th percentile / slowest save, refused saves, and the
check that nothing was lost: the revisions in the database equal the saves the server confirmed, and equal
the saves sent.

    .venv/bin/python benchmarks/annotation_load.py [--annotators 20] [--seconds 60] [--db URL | --postgres]
"""

from __future__ import annotations

import argparse
import http.cookiejar
import itertools
import json
import os
import re
import sys
import tempfile
import threading
import time
import urllib.parse
import urllib.request
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))

from annotation_server import AppServer  # noqa: E402

from gavel.annotation import tasks as T  # noqa: E402
from gavel.annotation.app import (  # noqa: E402
    ENV_LIMIT_ACCOUNT,
    ENV_LIMIT_ADDRESS,
    LOGIN_LIMIT_ACCOUNT,
    LOGIN_LIMIT_ADDRESS,
)
from gavel.annotation.db import Revision, Store  # noqa: E402
from gavel.core.vocab import STYLE_RUBRIC  # noqa: E402


def _opener():
    jar = http.cookiejar.CookieJar()
    return urllib.request.build_opener(urllib.request.HTTPCookieProcessor(jar))


def _csrf(html: str) -> str:
    m = re.search(r'name="csrf[-_]token" (?:content|value)="([^"]+)"', html)
    if not m:
        raise RuntimeError("no CSRF token in the page")
    return m.group(1)


def annotator(base: str, user: str, password: str, aid: int, stop: float, out: dict) -> None:
    op = _opener()
    page = op.open(base + "/login").read().decode()
    op.open(base + "/login", urllib.parse.urlencode(
        {"username": user, "password": password, "csrf_token": _csrf(page)}).encode()).read()
    token = _csrf(op.open(f"{base}/a/{aid}").read().decode())
    fields = [(f"aspect:{a}", str(n)) for a in STYLE_RUBRIC for n in range(1, 6)] + \
             [("preference", f'"{p}"') for p in T.PREFERENCES]
    sent = confirmed = refused = 0
    latencies = []
    bases: dict[str, int] = {}  # field -> the revision this annotator last saved (each save carries it)
    for field, value in itertools.cycle(fields):
        if time.time() >= stop:
            break
        body = urllib.parse.urlencode({"csrf_token": token, "field": field, "value": value,
                                       "token": uuid.uuid4().hex, "base": bases.get(field, 0)}).encode()
        req = urllib.request.Request(f"{base}/a/{aid}/save", body, headers={"X-Requested-With": "fetch"})
        t0 = time.perf_counter()
        sent += 1
        try:
            with op.open(req, timeout=60) as r:
                answer = json.loads(r.read())
            ok = answer.get("saved") is True
            if ok:
                bases[field] = answer["revision"]
        except OSError:
            ok = False
        latencies.append(time.perf_counter() - t0)
        confirmed += ok
        refused += not ok
    out[user] = {"sent": sent, "confirmed": confirmed, "refused": refused, "latencies": latencies}


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--annotators", type=int, default=20)
    p.add_argument("--seconds", type=float, default=60)
    p.add_argument("--db", default=None, help="database URL (default: a new SQLite file)")
    p.add_argument("--postgres", action="store_true", help="start a throwaway PostgreSQL server and use it")
    args = p.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="gavel-load-"))
    pg = None
    if args.postgres:
        from pg_server import PgServer

        pg = PgServer(tmp / "pg").start()
        args.db = pg.url()
    try:
        return _run(args, tmp)
    finally:
        if pg:
            pg.stop()


def _run(args, tmp: Path) -> int:
    url = args.db or f"sqlite:///{tmp / 'load.db'}"
    store = Store(url)
    users = [f"ann{i:02d}" for i in range(args.annotators)]
    pairs = [{"case_id": f"c{i}", "model": "m", "model_text": f"model text {i}", "human_text": f"human text {i}"}
             for i in range(args.annotators)]
    tasks = T.style_tasks(pairs, "benchmark")
    store.add_tasks(tasks)
    for u in users:
        store.add_user(u, f"load-pw-{u}")
    store.assign([(t["key"], u, "annotate") for t, u in zip(tasks, users)])
    from sqlalchemy import select

    from gavel.annotation.db import Assignment, User

    with store.sessions() as s:
        aids = dict(s.execute(select(User.username, Assignment.id).join(Assignment, Assignment.user_id == User.id)).all())
    server = AppServer(url, tmp / "server.log").start()
    out: dict = {}
    try:
        stop = time.time() + args.seconds
        threads = [threading.Thread(target=annotator, args=(server.base, u, f"load-pw-{u}", aids[u], stop, out))
                   for u in users]
        t0 = time.perf_counter()
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        elapsed = time.perf_counter() - t0
    finally:
        server.stop()
    with store.sessions() as s:
        stored = s.query(Revision).count()
    sent = sum(o["sent"] for o in out.values())
    confirmed = sum(o["confirmed"] for o in out.values())
    refused = sum(o["refused"] for o in out.values())
    lat = sorted(x for o in out.values() for x in o["latencies"])
    store.engine.dispose()
    backend = url.split(":")[0]
    print(f"annotation load: {len(out)} of {len(users)} annotators logged in and saved for {args.seconds:.0f} s on "
          f"{backend} (server: waitress, 24 threads)")
    print(f"  failed-login limits on: per account {os.environ.get(ENV_LIMIT_ACCOUNT) or LOGIN_LIMIT_ACCOUNT!r}, "
          f"per address {os.environ.get(ENV_LIMIT_ADDRESS) or LOGIN_LIMIT_ADDRESS!r}")
    print(f"  saves sent {sent}, confirmed {confirmed}, refused {refused}, revisions in the database {stored}")
    print(f"  saves per second: {confirmed / elapsed:.1f}")
    print(f"  save latency: median {1000 * lat[len(lat) // 2]:.0f} ms, 95th percentile "
          f"{1000 * lat[int(len(lat) * 0.95)]:.0f} ms, slowest {1000 * lat[-1]:.0f} ms")
    lost = confirmed - stored
    print(f"  lost saves (confirmed but not in the database): {lost}; "
          f"{'none lost' if lost == 0 and stored == sent else 'MISMATCH'} (sent {sent} = stored {stored})")
    return 0 if lost == 0 and stored == sent and len(out) == len(users) else 1


if __name__ == "__main__":
    sys.exit(main())
