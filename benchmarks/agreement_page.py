"""The agreement page's computation on the release's full annotation sample at the default resamples.

Builds an SQLite annotation database from the release (``annotate load-release`` defaults: every human.json
review, the 50 single-value and 100 multi-value pairs, the 25 style pairs), three annotators on every task,
each answering every field of the value pairs and style pairs (a seeded mix of agreeing and disagreeing
answers; with ``--with-reviews`` also every item of the 40 extraction reviews), then times one load of the
page's table (database read + ``agreement_table``) on this checkout and, with ``--before REV``, on the
``gavel/`` of git revision REV (extracted to a temporary folder, same database), and prints the ratio.

    GAVEL_RELEASE=... .venv/bin/python benchmarks/agreement_page.py [--before 8e0a037] [--loads 3]

``--saves S``: instead, saves under admin load (issue 38): for S seconds, one annotator saves back to back
while 16 admins reload the agreement page back to back (the app in this process, as the server runs it:
Flask test clients on threads); prints the saves' median and p95 latency, alone and under that load, on this
checkout and (``--before REV``) on REV's ``gavel/`` with the same database.
"""

from __future__ import annotations

import argparse
import os
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PEOPLE = ("ann1", "ann2", "ann3")


def build(db: Path, reviews: bool = False) -> None:
    from sqlalchemy import select

    from gavel.annotation.db import Assignment, Store, Task
    from gavel.annotation.tasks import COMPARISON_LABELS, PREFERENCES, release_tasks
    from gavel.core.vocab import STYLE_RUBRIC
    from gavel.release import load_release

    store = Store(f"sqlite:///{db}")
    tasks = release_tasks(load_release(None))
    store.add_tasks(tasks)
    for p in PEOPLE:
        store.add_user(p, f"{p}-password-x")
    store.assign([(t["key"], p, "annotate") for t in tasks for p in PEOPLE])
    rng = random.Random(0)
    with store.sessions() as s:
        rows = s.execute(select(Assignment.id, Assignment.user_id, Task.kind, Task.payload)
                         .join(Task, Assignment.task_id == Task.id)).all()
    import json

    for aid, uid, kind, payload in rows:
        data = json.loads(payload)
        if kind == "style":
            for aspect in STYLE_RUBRIC:
                store.save(aid, uid, f"aspect:{aspect}", rng.choice([2, 3, 3, 4, 4, 5]))
            store.save(aid, uid, "preference", rng.choice(PREFERENCES))
        elif kind == "comparison" and data["mode"] == "single":
            store.save(aid, uid, "label", rng.choice(["equal", "equal", "equal", *COMPARISON_LABELS]))
        elif kind == "comparison":
            pairs = [[i, i] for i in range(1, min(len(data["a"]), len(data["b"])) + 1) if rng.random() < 0.7]
            store.save(aid, uid, "matches", pairs)
        elif reviews:
            for key, values in data["prefill"].items():
                kept = [v for v in values if rng.random() < 0.85]
                store.save(aid, uid, f"item:{key}", kept)


def time_loads(db: Path, loads: int, label: str) -> float:
    """Median seconds of one load of the page's table (database read and computation)."""
    import pandas as pd

    from gavel.annotation.db import Store
    from gavel.metrics.metaeval import agreement_table

    store = Store(f"sqlite:///{db}")
    times = []
    for _ in range(loads):
        t0 = time.perf_counter()
        table = agreement_table(pd.DataFrame(store.export_rows()), pd.DataFrame(store.task_rows()))
        times.append(time.perf_counter() - t0)
    table.to_csv(db.with_suffix(f".{label}.csv"), index=False)
    return sorted(times)[len(times) // 2]


def time_saves(db: Path, seconds: float, admins: int = 16) -> dict:
    """Save latencies (s) of one annotator saving back to back, alone and while ``admins`` threads reload the
    agreement page back to back."""
    import json
    import re
    import threading

    from gavel.annotation.app import create_app
    from gavel.annotation.db import Store

    store = Store(f"sqlite:///{db}")
    if store.user("admin") is None:
        store.add_user("admin", "admin-password-x", is_admin=True)
    app = create_app(store.url, secret_key_file=db.with_suffix(".key"), login_limit_account=10_000,
                     login_limit_address=10_000)

    def client(user, password):
        c = app.test_client()
        token = re.search(r'name="csrf_token" value="([^"]+)"', c.get("/login").text).group(1)
        assert c.post("/login", data={"username": user, "password": password, "csrf_token": token}).status_code == 302
        return c

    ann = client(PEOPLE[0], f"{PEOPLE[0]}-password-x")
    from sqlalchemy import select

    from gavel.annotation.db import Assignment, Task, User

    with store.sessions() as s:  # one of the annotator's single-value pairs
        aid = next(a for a, p in s.execute(select(Assignment.id, Task.payload).join(Task).join(User)
                                          .where(User.username == PEOPLE[0], Task.kind == "comparison"))
                   if json.loads(p)["mode"] == "single")
    token = re.search(r'name="csrf[-_]token" (?:content|value)="([^"]+)"', ann.get(f"/a/{aid}").text).group(1)
    field, values = "label", ["equal", "different"]

    def saves(until: float) -> list[float]:
        out, base, i = [], 0, 0
        while time.perf_counter() < until:
            i += 1
            data = {"field": field, "value": json.dumps(values[i % 2]), "csrf_token": token, "base": str(base)}
            t0 = time.perf_counter()
            r = ann.post(f"/a/{aid}/save", data=data, headers={"X-Requested-With": "fetch"})
            out.append(time.perf_counter() - t0)
            answer = r.get_json()
            base = answer.get("current", answer.get("revision"))  # a stale first save says the current one
        return out

    alone = saves(time.perf_counter() + seconds / 2)
    stop = threading.Event()
    loads = [0]

    def reload(c):
        while not stop.is_set():
            c.get("/admin/agreement")
            loads[0] += 1

    threads = [threading.Thread(target=reload, args=(client("admin", "admin-password-x"),)) for _ in range(admins)]
    for t in threads:
        t.start()
    loaded = saves(time.perf_counter() + seconds)
    stop.set()
    for t in threads:
        t.join()
    cache = app.extensions["gavel_agreement"]

    def q(xs, f):
        return sorted(xs)[min(len(xs) - 1, int(f * len(xs)))]
    return {"alone_median": q(alone, 0.5), "alone_p95": q(alone, 0.95), "loaded_median": q(loaded, 0.5),
            "loaded_p95": q(loaded, 0.95), "saves": len(loaded), "page_loads": loads[0],
            "computations": cache.computations}


def print_saves(label: str, r: dict) -> None:
    print(f"{label}: saves alone median {r['alone_median'] * 1000:.0f} ms, p95 {r['alone_p95'] * 1000:.0f} ms; "
          f"with 16 admins reloading: median {r['loaded_median'] * 1000:.0f} ms, p95 {r['loaded_p95'] * 1000:.0f} ms "
          f"({r['saves']} saves, {r['page_loads']} page loads, {r['computations']} computations of the table)")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--before", default=None, help="git revision to compare with (its gavel/ on the same database)")
    ap.add_argument("--loads", type=int, default=3)
    ap.add_argument("--with-reviews", action="store_true", help="the annotators also answer every extraction review")
    ap.add_argument("--saves", type=float, default=None, help="time saves under admin load for this many seconds")
    ap.add_argument("--db", default=None, help=argparse.SUPPRESS)  # the timing child of --before
    args = ap.parse_args()
    if args.db and args.saves:
        import json

        print(json.dumps(time_saves(Path(args.db), args.saves)))
        return 0
    if args.db:
        print(f"{time_loads(Path(args.db), args.loads, 'before'):.4f}")
        return 0
    sys.path.insert(0, str(ROOT))
    with tempfile.TemporaryDirectory() as tmp:
        db = Path(tmp) / "agreement.db"
        t0 = time.perf_counter()
        build(db, args.with_reviews)
        print(f"database built in {time.perf_counter() - t0:.1f} s")
        if args.saves:
            return saves_before_after(db, args)
        after = time_loads(db, args.loads, "after")
        print(f"this checkout: {after:.3f} s per load (median of {args.loads})")
        if args.before:
            old = Path(tmp) / "before"
            old.mkdir()
            archive = subprocess.run(["git", "-C", str(ROOT), "archive", args.before, "gavel"], check=True,
                                     capture_output=True).stdout
            subprocess.run(["tar", "-x", "-C", str(old)], input=archive, check=True)
            out = subprocess.run([sys.executable, __file__, "--db", str(db), "--loads", str(args.loads)],
                                 env={**os.environ, "PYTHONPATH": str(old)}, check=True, capture_output=True,
                                 text=True, cwd=old).stdout
            before = float(out.split()[-1])
            print(f"{args.before}: {before:.3f} s per load (median of {args.loads})")
            print(f"ratio before/after: {before / after:.1f}x")
            tables = [db.with_suffix(".after.csv"), db.with_suffix(".before.csv")]
            if all(t.exists() for t in tables):
                import pandas as pd

                a, b = (pd.read_csv(t) for t in tables)
                keys = ["kind", "item", "raters", "statistic"]
                m = a.merge(b, on=keys, suffixes=("_a", "_b"))
                both = m[(m["status_a"] == "ok") & (m["status_b"] == "ok")]
                same = all(both[f"{c}_a"].round(4).fillna(-9).equals(both[f"{c}_b"].round(4).fillna(-9))
                           for c in ("value", "agreement", "low", "high"))
                changed = m[m["status_a"] != m["status_b"]]
                print(f"rows with a value in both: {len(both)}, equal to 4 dp (value, agreement, interval): {same}")
                print(f"rows whose status changed (now, before): {len(changed)} "
                      f"{sorted(set(zip(changed['status_a'], changed['status_b'])))}")
    return 0


def saves_before_after(db: Path, args) -> int:
    import json
    import shutil

    fresh = db.with_suffix(".fresh.db")
    shutil.copy(db, fresh)  # both sides start from the same database
    print_saves("this checkout", time_saves(db, args.saves))
    if args.before:
        old = db.parent / "before"
        old.mkdir()
        archive = subprocess.run(["git", "-C", str(ROOT), "archive", args.before, "gavel"], check=True,
                                 capture_output=True).stdout
        subprocess.run(["tar", "-x", "-C", str(old)], input=archive, check=True)
        done = subprocess.run([sys.executable, __file__, "--db", str(fresh), "--saves", str(args.saves)],
                              env={**os.environ, "PYTHONPATH": str(old)}, capture_output=True, text=True, cwd=old)
        if done.returncode != 0:
            print(f"{args.before}: the timing child failed:\n{done.stderr[-3000:]}")
            return 1
        print_saves(args.before, json.loads(done.stdout.strip().splitlines()[-1]))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
