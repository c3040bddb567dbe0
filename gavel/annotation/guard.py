"""Slowing down password guessing without locking the owner out.

Every password try (a login, the current password of the password-change form) first claims a slot on
each of its keys, in the database (``login_guard``: shared by every server process, kept over restarts):

* the account together with where the try comes from: the browser (a device the account logged in from
  before, known by a signed cookie) or else the client address;
* from a browser the account never logged in from, also the account alone (guesses spread over many
  addresses) and the address alone (guesses at many accounts from one address);
* a password change: the account.

After ``free`` failed tries on a key, each further try on it waits: 1 s, then 2, 4, 8 ... up to
``MAX_WAIT_S`` (exponential delay, never a lockout); a try that comes too early is refused without the
password being checked, and does not count. The claim is one conditional update (compare-and-set on the
count), so concurrent tries cannot slip past the count. A successful try clears the failures on its own
account-and-device (or address) key and its own provisional count elsewhere. Failures are forgotten
``FORGET`` after the last one. So someone else's failures (another address, or the same address but not
the owner's browser) never stop the owner's browser, where the right password keeps working.

The shared keys (the account alone, the address alone) never refuse the first try of an account from an
address or browser that has no failures of its own: that try is checked and counted, and the right password
logs in. So guesses at other accounts behind the same address (a NAT, a reverse proxy), or at this account
from elsewhere, never delay the owner's first login from a new browser; a guesser gets one checked try per
account and address before the shared keys hold them, and then waits like anyone else.

``login_guard`` holds at most ``MAX_ROWS`` rows: past that, the rows with the fewest failures, oldest first,
are forgotten (a made-up name adds rows on every try; the keys that slow a real attack have most failures).
"""

from __future__ import annotations

import hashlib
import secrets
from datetime import datetime, timedelta
from typing import NamedTuple

from itsdangerous import BadSignature, URLSafeSerializer
from sqlalchemy import delete, func, select, update
from sqlalchemy.exc import IntegrityError

from .db import LoginGuard, Store, now

MAX_WAIT_S = 900
FORGET = timedelta(days=1)
DEVICE_COOKIE = "gavel_device"
DEVICE_LIFETIME = timedelta(days=180)
MAX_KNOWN = 20  # accounts remembered per browser
MAX_ROWS = 50_000  # rows of login_guard; past it the least-failed, oldest ones are forgotten


class Claim(NamedTuple):
    key: str
    failures: int  # the count this try set (provisionally a failure)
    before: tuple[int, datetime]  # the count and next time before it


def wait_after(failures: int, free: int) -> float:
    """Seconds the next try waits after ``failures`` failed tries on a key that allows ``free``."""
    return 0.0 if failures < free else float(min(2 ** (failures - free), MAX_WAIT_S))


def digest(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "replace")).hexdigest()[:32]


def claim(store: Store, key: str, free: int, through: bool = False) -> Claim | float:
    """A slot for one try on ``key`` (counted as a failure until :func:`give_back`), or the seconds to wait;
    ``through``: counted even while the key waits (a shared key, on a try its own key lets through)."""
    for _ in range(50):
        stamp = now()
        with store.sessions() as s:
            row = s.get(LoginGuard, key)
            if row is None:
                s.add(LoginGuard(key=key, failures=0, next_at=stamp, updated_at=stamp))
                try:
                    s.commit()
                except IntegrityError:
                    s.rollback()
                else:
                    _bound_rows(store, key)
                continue
            fresh = stamp - row.updated_at < FORGET
            failures = row.failures if fresh else 0
            if fresh and row.next_at > stamp and not through:
                return max(1.0, (row.next_at - stamp).total_seconds())
            new = failures + 1
            done = s.execute(update(LoginGuard)
                             .where(LoginGuard.key == key, LoginGuard.failures == row.failures,
                                    LoginGuard.updated_at == row.updated_at)
                             .values(failures=new, next_at=stamp + timedelta(seconds=wait_after(new, free)),
                                     updated_at=stamp)).rowcount
            s.commit()
            if done:
                return Claim(key, new, (failures, row.next_at if fresh else stamp))
    raise RuntimeError(f"login guard: could not count a try on {key[:20]} (too much contention)")


def give_back(store: Store, claims: list[Claim], clear_first: bool = False) -> None:
    """Undo the provisional failure of ``claims`` (a try that was refused, or that succeeded); with
    ``clear_first`` the first key's failures are cleared altogether (the owner's own key after a success)."""
    with store.sessions() as s:
        for i, c in enumerate(claims):
            if clear_first and i == 0:
                s.execute(delete(LoginGuard).where(LoginGuard.key == c.key))
                continue
            s.execute(update(LoginGuard).where(LoginGuard.key == c.key, LoginGuard.failures == c.failures)
                      .values(failures=c.before[0], next_at=c.before[1]))
        s.execute(delete(LoginGuard).where(LoginGuard.updated_at < now() - FORGET))
        s.commit()


def _bound_rows(store: Store, new: str) -> None:
    """Keep ``login_guard`` at MAX_ROWS rows: forget the least-failed, oldest rows past it (down to 90%), never
    the row ``new`` just added."""
    with store.sessions() as s:
        over = s.scalar(select(func.count()).select_from(LoginGuard)) - MAX_ROWS
        if over <= 0:
            return
        keys = (select(LoginGuard.key).where(LoginGuard.key != new)
                .order_by(LoginGuard.failures, LoginGuard.updated_at)
                .limit(over + MAX_ROWS // 10).scalar_subquery())
        s.execute(delete(LoginGuard).where(LoginGuard.key.in_(keys)))
        s.commit()


def claim_all(store: Store, keys: list[tuple[str, int]]) -> list[Claim] | float:
    """A slot on every key, or the longest wait (and nothing claimed). The first key is the try's own (the
    account with this browser or address); when it had no failures, the others (shared with other people)
    count the try but do not hold it back."""
    got: list[Claim] = []
    for key, free in keys:
        c = claim(store, key, free, through=bool(got) and got[0].before[0] == 0)
        if not isinstance(c, Claim):
            give_back(store, got)
            return c
        got.append(c)
    return got


# --- the browsers an account logged in from ----------------------------------------------------------------

def _serializer(secret: str | bytes) -> URLSafeSerializer:
    return URLSafeSerializer(secret, salt="gavel-device")


def read_device(secret, cookie: str | None) -> tuple[str, list[str]]:
    """(device id, accounts known on it) of a device cookie; a new id when there is none or it is forged."""
    if cookie:
        try:
            data = _serializer(secret).loads(cookie)
            if (isinstance(data, dict) and isinstance(data.get("d"), str) and isinstance(data.get("a"), list)
                    and all(isinstance(a, str) for a in data["a"])):
                return data["d"], data["a"][:MAX_KNOWN]
        except BadSignature:
            pass
    return secrets.token_urlsafe(16), []


def device_cookie(secret, device: str, accounts: list[str]) -> str:
    return _serializer(secret).dumps({"d": device, "a": accounts[-MAX_KNOWN:]})


def login_keys(account: str, address: str, device: str, known: bool, free_pair: int, free_address: int
               ) -> list[tuple[str, int]]:
    """The keys a login try claims: account and device (a known browser) or account and address, and from an
    unknown browser the account and the address alone."""
    if known:
        return [(f"d:{account}:{digest(device)}", free_pair)]
    return [(f"p:{account}:{address[:64]}", free_pair), (f"a:{account}", 4 * free_pair),
            (f"i:{address[:64]}", free_address)]


def when(seconds: float) -> str:
    return f"{int(seconds)} s" if seconds < 120 else f"{int(seconds // 60)} minutes"
