"""The agreement page's table, computed off the request threads and kept until the data changes.

The table is keyed on the state of the data it is computed from (how many tasks, assignments and answers,
and the sum of the answers' current revision numbers: every save made current raises it; a stale save,
kept in the history only, does not change the table). One worker thread computes it, one computation at a
time, from the current answers only (never the whole revision history). A page load whose table is
current is answered at once; otherwise it starts the worker and waits for it at most ``wait_s`` seconds,
and only ``max_waiting`` loads wait at once: the others, and a load whose wait ran out, get the last
table computed (marked as not current, the page reloads itself). So page loads never hold more than
``max_waiting`` of the server's threads, and a save never waits for a computation.

The computation shares the server's process (and its CPU) with the saves: while saves keep changing the data
and admins keep reloading the page, the table would be recomputed back to back and every save would slow
down. So a computation starts at most once per interval: the last computation's duration times
``(1 - duty) / duty`` (at least ``min_interval_s``, at most ``max_interval_s``), so that recomputing takes
at most ``duty`` of the time (5%: a 0.3 s table is recomputed at most every 6 s) unless it is so slow that
the page would lag more than ``max_interval_s`` behind (a waiting load always gets the next table). A page load in between gets the last table, marked as
not current, and its reload (or its wait, when it may wait) gets the next one.

The app computes the table in a worker process (gavel.annotation.worker: one child process kept for the
server's life, ended with it by any signal), so the computation never holds the server's interpreter lock:
saves only share the CPU with it. A computation that runs past its time limit has its worker killed; a
worker that dies or is killed is replaced at the next computation (the failed one shows on the page).
"""

from __future__ import annotations

import threading
import time
import traceback
from dataclasses import dataclass

import pandas as pd
from sqlalchemy import func, select

from .db import Answer, Assignment, Store, Task

MAX_WAITING = 4  # page loads that may wait for a computation at once
WAIT_S = 20.0  # the longest a page load waits for a computation before showing the last table
DUTY = 0.05  # the most of the time the table's recomputation may take while the data keeps changing
MIN_INTERVAL_S = 1.0  # the least time between the end of one computation and the start of the next
MAX_INTERVAL_S = 10.0  # ... and the most (below WAIT_S: a load that waits gets the next table)


@dataclass(frozen=True)
class Snapshot:
    table: pd.DataFrame | None  # None: never computed yet
    current: bool  # computed from the data as it is now
    computed_at: float | None  # time.time() of the computation's end
    seconds: float | None  # how long it took
    error: str | None  # the last computation failed (the message; the traceback went to the log)


class AgreementCache:
    def __init__(self, store: Store, compute, max_waiting: int = MAX_WAITING, wait_s: float = WAIT_S,
                 duty: float = DUTY, min_interval_s: float = MIN_INTERVAL_S, max_interval_s: float = MAX_INTERVAL_S):
        self.store, self.compute = store, compute
        self.wait_s = wait_s
        self.duty, self.min_interval_s, self.max_interval_s = duty, min_interval_s, max_interval_s
        self._next_start = 0.0  # time.monotonic() before which no computation starts
        self._cond = threading.Condition()
        self._waiting = threading.BoundedSemaphore(max_waiting)
        self._key = self._table = self._at = self._seconds = self._error = None
        self._running = False
        self._asks = 0  # page loads that asked for a table not computed yet
        self.computations = 0  # how many times the table was computed (tests, the page's footer)

    def state(self) -> tuple:
        """The key of the data's state: changes with every task, assignment and current answer."""
        with self.store.sessions() as s:
            tasks = s.scalar(select(func.count(Task.id)))
            assignments = s.scalar(select(func.count(Assignment.id)))
            answers, revisions = s.execute(select(func.count(Answer.id), func.coalesce(func.sum(Answer.revision), 0))).one()
        return (tasks, assignments, answers, int(revisions))

    def get(self, wait: bool = True) -> Snapshot:
        key = self.state()
        with self._cond:
            if self._key == key and self._error is None:
                return self._snapshot(key)
            self._asks += 1
            self._start()
        if wait and self._waiting.acquire(blocking=False):
            try:
                with self._cond:
                    self._cond.wait_for(lambda: self._key == key or not self._running, timeout=self.wait_s)
            finally:
                self._waiting.release()
        with self._cond:
            return self._snapshot(key)

    def _snapshot(self, key) -> Snapshot:
        return Snapshot(self._table, self._key == key and self._error is None, self._at, self._seconds, self._error)

    def _start(self) -> None:  # holding self._cond
        if not self._running:
            self._running = True
            threading.Thread(target=self._work, name="agreement-table", daemon=True).start()

    def _pause(self, seconds: float) -> None:
        """After a computation that took ``seconds``: when the next one may start."""
        gap = min(self.max_interval_s, max(self.min_interval_s, seconds * (1 - self.duty) / self.duty))
        self._next_start = time.monotonic() + gap

    def _work(self) -> None:
        while True:
            try:
                delay = self._next_start - time.monotonic()
                if delay > 0:  # at most one computation per interval, however many loads ask
                    time.sleep(delay)
                key = self.state()  # read before the data: a save in between makes the next load recompute
                with self._cond:
                    asks = self._asks
                    if key == self._key and self._error is None:
                        self._running = False
                        self._cond.notify_all()
                        return
                t0 = time.perf_counter()
                try:
                    table = self.compute()
                finally:
                    self._pause(time.perf_counter() - t0)
                with self._cond:
                    self._key, self._table, self._error = key, table, None
                    self._at, self._seconds = time.time(), time.perf_counter() - t0
                    self.computations += 1
                    self._cond.notify_all()
                    if self._asks == asks:  # nobody asked since: stop (saves alone never cost a computation)
                        self._running = False
                        return
            except Exception as err:  # shown on the page; the worker stops, the next load tries again
                traceback.print_exc()
                with self._cond:
                    self._error = f"{type(err).__name__}: {err}"
                    self._running = False
                    self._cond.notify_all()
                return
