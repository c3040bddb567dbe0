"""The agreement page's computation on the release's full annotation sample at the default resamples.

Builds an SQLite annotation database from the release (``annotate load-release`` defaults: every human.json
review, the 50 single-value and 100 multi-value pairs, the 25 style pairs), three annotators on every task,
each answering every field of the value pairs and style pairs (a seeded mix of agreeing and disagreeing
answers; with ``--with-reviews`` also every item of the 40 extraction reviews), then times one load of the
page's table (database read + ``agreement_table``) on this checkout and, with ``--before REV``, on the
``gavel/`` of git revision REV (extracted to a temporary folder, same database), and prints the ratio.

    GAVEL_RELEASE=... .venv/bin/python benchmarks/agreement_page.py [--before 8e0a037] [--loads 3]
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


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--before", default=None, help="git revision to compare with (its gavel/ on the same database)")
    ap.add_argument("--loads", type=int, default=3)
    ap.add_argument("--with-reviews", action="store_true", help="the annotators also answer every extraction review")
    ap.add_argument("--db", default=None, help=argparse.SUPPRESS)  # the timing child of --before
    args = ap.parse_args()
    if args.db:
        print(f"{time_loads(Path(args.db), args.loads, 'before'):.4f}")
        return 0
    sys.path.insert(0, str(ROOT))
    with tempfile.TemporaryDirectory() as tmp:
        db = Path(tmp) / "agreement.db"
        t0 = time.perf_counter()
        build(db, args.with_reviews)
        print(f"database built in {time.perf_counter() - t0:.1f} s")
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


if __name__ == "__main__":
    raise SystemExit(main())
