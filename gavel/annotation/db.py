"""Storage of the annotation app: SQLAlchemy tables, one code path for SQLite (default, a file) and PostgreSQL.

Tables
* ``users``       accounts; passwords hashed with argon2 (argon2-cffi), an admin flag;
* ``tasks``       one unit of work (an extraction review of one summary, one value pair, one style pair);
                  ``payload`` holds what the page shows (JSON), ``key`` is unique so loading twice adds nothing;
* ``assignments`` a task given to one annotator, role ``annotate`` or ``adjudicate``; unique per (task, user);
* ``answers``     the current value of one field of one assignment (``label``, ``item:filing_date``,
                  ``aspect:narrative_order`` ...); unique per (assignment, field), so a single-choice answer
                  exists once whatever the clicks or retries;
* ``revisions``   every saved value, appended and never changed; ``answers.revision`` points at the current
                  one. ``client_token`` (unique) makes a resent save (a retry, a flush on tab close) a no-op;
                  ``base_revision`` is the revision the client edited: a save based on an older revision than
                  the current one (a second tab left open) is kept here with ``stale`` set and is not made
                  current, so neither edit is lost and the newer answer is not overwritten;
* ``login_sessions`` one row per logged-in browser: the SHA-256 of the random session id its signed cookie
                  holds, and when it expires. Logging out deletes the row; a password change deletes all of
                  the user's rows, so a copied cookie is worth nothing afterwards;
* ``login_guard`` failed password tries per account and address (or known device), per account, per
                  address and per password change, and when the next try may come (gavel.annotation.guard);
* ``settings``    unused (an older version kept the session signing key here; it is deleted on start: the
                  key lives in a private file or the environment, see :mod:`gavel.annotation.secret`).

A save writes the answer and its revision in one transaction and returns only after the commit. A new SQLite
database file is created readable by its owner only (0600), and an existing one is made so.
"""

from __future__ import annotations

import hashlib
import json
import os
import secrets
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import NamedTuple

from sqlalchemy import (
    Boolean,
    DateTime,
    ForeignKey,
    Integer,
    String,
    Text,
    UniqueConstraint,
    create_engine,
    delete,
    event,
    func,
    inspect,
    or_,
    select,
    text,
    update,
)
from sqlalchemy.engine import Engine
from sqlalchemy.exc import IntegrityError, OperationalError
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column, sessionmaker

SQLITE_BUSY_TIMEOUT_MS = 30_000
TASK_KINDS = ("extraction", "comparison", "style")
ROLES = ("annotate", "adjudicate")
MAX_TOKEN_CHARS = 64  # revisions.client_token is String(64)
MAX_REVISIONS = 50  # revisions kept per answer (the newest, and always the current one); older ones are deleted
# what the revisions of one annotator, and of one task (every annotator's together), may hold in all, in
# characters of stored JSON: over it, the oldest revisions that are not current are deleted; a save that would
# still leave it over (the current answers alone) is refused
MAX_USER_CHARS = 64 * 1024 * 1024
MAX_TASK_CHARS = 32 * 1024 * 1024


class TokenReused(ValueError):
    """A save token already stored for a different save (another user, field or value)."""


class QuotaExceeded(ValueError):
    """A save that would leave an annotator's or a task's stored answers over their bound."""


class SaveResult(NamedTuple):
    revision: int  # the revision this save is stored as
    current: int  # the answer's current revision after the save
    stale: bool  # the save was based on an older revision than the current one: kept, not made current


def now() -> datetime:
    return datetime.now(UTC).replace(tzinfo=None)


class Base(DeclarativeBase):
    pass


class User(Base):
    __tablename__ = "users"
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    username: Mapped[str] = mapped_column(String(80), unique=True)
    password_hash: Mapped[str] = mapped_column(String(255))
    is_admin: Mapped[bool] = mapped_column(Boolean, default=False)
    created_at: Mapped[datetime] = mapped_column(DateTime, default=now)


class Task(Base):
    __tablename__ = "tasks"
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    key: Mapped[str] = mapped_column(String(255), unique=True)
    kind: Mapped[str] = mapped_column(String(20))
    case_id: Mapped[str] = mapped_column(String(40), default="")
    source: Mapped[str] = mapped_column(String(255), default="")
    payload: Mapped[str] = mapped_column(Text)
    created_at: Mapped[datetime] = mapped_column(DateTime, default=now)

    @property
    def data(self) -> dict:
        return json.loads(self.payload)


class Assignment(Base):
    __tablename__ = "assignments"
    __table_args__ = (UniqueConstraint("task_id", "user_id"),)
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    task_id: Mapped[int] = mapped_column(ForeignKey("tasks.id"))
    user_id: Mapped[int] = mapped_column(ForeignKey("users.id"))
    role: Mapped[str] = mapped_column(String(20), default="annotate")
    done: Mapped[bool] = mapped_column(Boolean, default=False)
    created_at: Mapped[datetime] = mapped_column(DateTime, default=now)
    stored: Mapped[int] = mapped_column(Integer, default=0, server_default="0")  # its revisions' sizes


class Answer(Base):
    __tablename__ = "answers"
    __table_args__ = (UniqueConstraint("assignment_id", "field"),)
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    assignment_id: Mapped[int] = mapped_column(ForeignKey("assignments.id"))
    field: Mapped[str] = mapped_column(String(120))
    value: Mapped[str] = mapped_column(Text)
    revision: Mapped[int] = mapped_column(Integer, default=1)
    updated_at: Mapped[datetime] = mapped_column(DateTime, default=now)


class Revision(Base):
    __tablename__ = "revisions"
    __table_args__ = (UniqueConstraint("answer_id", "revision"),)
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    answer_id: Mapped[int] = mapped_column(ForeignKey("answers.id"))
    revision: Mapped[int] = mapped_column(Integer)
    value: Mapped[str] = mapped_column(Text)
    user_id: Mapped[int] = mapped_column(ForeignKey("users.id"))
    client_token: Mapped[str | None] = mapped_column(String(MAX_TOKEN_CHARS), unique=True, nullable=True)
    created_at: Mapped[datetime] = mapped_column(DateTime, default=now)
    base_revision: Mapped[int | None] = mapped_column(Integer, nullable=True)
    stale: Mapped[bool] = mapped_column(Boolean, default=False)
    size: Mapped[int] = mapped_column(Integer, default=0, server_default="0")  # characters of value


class LoginSession(Base):
    __tablename__ = "login_sessions"
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    digest: Mapped[str] = mapped_column(String(64), unique=True)  # SHA-256 of the id the cookie holds
    user_id: Mapped[int] = mapped_column(ForeignKey("users.id"), index=True)
    created_at: Mapped[datetime] = mapped_column(DateTime, default=now)
    expires_at: Mapped[datetime] = mapped_column(DateTime)


class LoginGuard(Base):
    """Failed password tries per key (an account and address or device, an account, an address, a password
    change), kept in the database so that they survive a restart and are shared by every server process:
    see :mod:`gavel.annotation.guard`."""
    __tablename__ = "login_guard"
    key: Mapped[str] = mapped_column(String(160), primary_key=True)
    failures: Mapped[int] = mapped_column(Integer, default=0)
    next_at: Mapped[datetime] = mapped_column(DateTime)  # no try before this time
    updated_at: Mapped[datetime] = mapped_column(DateTime, index=True)


class Setting(Base):
    __tablename__ = "settings"
    key: Mapped[str] = mapped_column(String(80), primary_key=True)
    value: Mapped[str] = mapped_column(Text)


def sqlite_url(path) -> str:
    return f"sqlite:///{path}"


def sqlite_path(url: str) -> Path | None:
    """The file of an SQLite URL (None for an in-memory database or another backend)."""
    if not url.startswith("sqlite"):
        return None
    path = url.split(":///", 1)[1] if ":///" in url else ""
    path = path.split("?", 1)[0]
    return Path(path) if path and path != ":memory:" else None


def make_private(path: Path) -> None:
    """Create the SQLite file ``path`` readable and writable by its owner only, or make an existing one so.
    (SQLite gives its -wal and -shm files the database file's mode.)"""
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
    os.close(fd)
    for p in (path, Path(f"{path}-wal"), Path(f"{path}-shm"), Path(f"{path}-journal")):
        if p.exists() and p.stat().st_mode & 0o077:
            try:
                p.chmod(0o600)
            except PermissionError as err:
                raise PermissionError(f"{p} is readable by others and cannot be made private "
                                      f"(chmod 600 it): {err}") from err
            print(f"gavel annotate: {p} was readable by others; made private (0600)", file=sys.stderr)


def make_engine(url: str) -> Engine:
    """An engine for ``url``; SQLite files get WAL mode, a busy timeout and foreign keys on every connection."""
    if url.startswith("sqlite"):
        path = sqlite_path(url)
        if path is not None:
            make_private(path)
        engine = create_engine(url, connect_args={"timeout": SQLITE_BUSY_TIMEOUT_MS / 1000,
                                                  "check_same_thread": False})

        @event.listens_for(engine, "connect")
        def _pragmas(dbapi_conn, _record):
            cur = dbapi_conn.cursor()
            cur.execute("PRAGMA journal_mode=WAL")
            cur.execute(f"PRAGMA busy_timeout={SQLITE_BUSY_TIMEOUT_MS}")
            cur.execute("PRAGMA foreign_keys=ON")
            cur.execute("PRAGMA synchronous=FULL")
            cur.close()
        return engine
    if url.startswith("postgresql://"):
        url = "postgresql+psycopg://" + url[len("postgresql://"):]
    return create_engine(url, pool_pre_ping=True, pool_size=10, max_overflow=20)


class Store:
    """The database of one app: engine, session factory and the few writes the app makes."""

    def __init__(self, url: str, max_user_chars: int = MAX_USER_CHARS, max_task_chars: int = MAX_TASK_CHARS):
        self.url = url
        self.max_user_chars, self.max_task_chars = max_user_chars, max_task_chars
        self.engine = make_engine(url)
        self.sessions = sessionmaker(self.engine, expire_on_commit=False)
        Base.metadata.create_all(self.engine)
        self._upgrade()

    def _upgrade(self) -> None:
        """Bring a database made by an older version up to date: the revision columns added since, and the
        session signing key that version kept in ``settings`` deleted (the key is no longer stored here)."""
        have = {c["name"] for c in inspect(self.engine).get_columns("revisions")}
        have_stored = "stored" in {c["name"] for c in inspect(self.engine).get_columns("assignments")}
        with self.engine.begin() as c:
            if "base_revision" not in have:
                c.execute(text("ALTER TABLE revisions ADD COLUMN base_revision INTEGER"))
            if "stale" not in have:
                c.execute(text("ALTER TABLE revisions ADD COLUMN stale BOOLEAN NOT NULL DEFAULT FALSE"))
            if "size" not in have:
                c.execute(text("ALTER TABLE revisions ADD COLUMN size INTEGER NOT NULL DEFAULT 0"))
                c.execute(text("UPDATE revisions SET size = length(value)"))
            if not have_stored:
                c.execute(text("ALTER TABLE assignments ADD COLUMN stored INTEGER NOT NULL DEFAULT 0"))
                c.execute(text("UPDATE assignments SET stored = (SELECT coalesce(sum(r.size), 0) FROM revisions r "
                               "JOIN answers a ON r.answer_id = a.id WHERE a.assignment_id = assignments.id)"))
            gone = c.execute(delete(Setting).where(Setting.key == "secret_key")).rowcount
        if gone:
            print("gavel annotate: deleted the session signing key an older version kept in the database "
                  "(sessions signed with it no longer open)", file=sys.stderr)

    # login sessions -------------------------------------------------------------------------------------
    @staticmethod
    def _digest(sid: str) -> str:
        return hashlib.sha256(sid.encode()).hexdigest()

    def open_session(self, user_id: int, lifetime: timedelta) -> str:
        """A new login session of ``user_id``; returns its id (kept in the signed cookie, only its hash here)."""
        sid = secrets.token_urlsafe(32)
        stamp = now()
        with self.sessions() as s:
            s.execute(delete(LoginSession).where(LoginSession.expires_at < stamp))
            s.add(LoginSession(digest=self._digest(sid), user_id=user_id, created_at=stamp,
                               expires_at=stamp + lifetime))
            s.commit()
        return sid

    def session_user(self, sid) -> User | None:
        """The user of a live login session, or None (unknown, ended or expired)."""
        if not isinstance(sid, str) or not sid or len(sid) > 100:
            return None
        with self.sessions() as s:
            return s.scalar(select(User).join(LoginSession, LoginSession.user_id == User.id)
                            .where(LoginSession.digest == self._digest(sid), LoginSession.expires_at > now()))

    def close_session(self, sid) -> None:
        if isinstance(sid, str) and sid:
            with self.sessions() as s:
                s.execute(delete(LoginSession).where(LoginSession.digest == self._digest(sid)))
                s.commit()

    def close_sessions(self, user_id: int) -> int:
        """End every login session of ``user_id``; returns how many there were."""
        with self.sessions() as s:
            n = s.execute(delete(LoginSession).where(LoginSession.user_id == user_id)).rowcount
            s.commit()
        return n

    # users ----------------------------------------------------------------------------------------------
    def add_user(self, username: str, password: str, is_admin: bool = False) -> User:
        from .auth import check_password, check_username, hash_password

        check_username(username)
        check_password(password, username)
        with self.sessions() as s:
            if s.scalar(select(User).where(User.username == username)) is not None:
                raise ValueError(f"user {username!r} exists already")
            user = User(username=username, password_hash=hash_password(password), is_admin=is_admin)
            s.add(user)
            s.commit()
            return user

    def user(self, username: str) -> User | None:
        from .auth import valid_username

        if not valid_username(username):  # never sent to the database (NUL bytes, over-long names)
            return None
        with self.sessions() as s:
            return s.scalar(select(User).where(User.username == username))

    def set_password(self, username: str, password: str) -> None:
        """Change a user's password and end every login session of theirs, in one transaction."""
        from .auth import check_password, hash_password

        check_password(password, username)
        user = self.user(username)
        if user is None:
            raise ValueError(f"no user {username!r}")
        with self.sessions() as s:
            s.execute(update(User).where(User.id == user.id).values(password_hash=hash_password(password)))
            s.execute(delete(LoginSession).where(LoginSession.user_id == user.id))
            s.commit()

    # tasks ----------------------------------------------------------------------------------------------
    def add_tasks(self, tasks: list[dict]) -> int:
        """Insert tasks (dicts with key, kind, case_id, source, payload); keys already present are skipped.
        Returns how many were added."""
        added = 0
        with self.sessions() as s:
            have = set(s.scalars(select(Task.key)))
            for t in tasks:
                if t["kind"] not in TASK_KINDS:
                    raise ValueError(f"task {t['key']}: unknown kind {t['kind']!r}")
                if t["key"] in have:
                    continue
                s.add(Task(key=t["key"], kind=t["kind"], case_id=str(t.get("case_id", "")),
                           source=t.get("source", ""), payload=json.dumps(t["payload"])))
                have.add(t["key"])
                added += 1
            s.commit()
        return added

    def assign(self, plan: list[tuple[str, str, str]]) -> int:
        """Store an assignment plan of (task key, username, role) rows; existing ones are kept. Returns the
        number added. Unknown task keys or users are an error naming them."""
        added = 0
        with self.sessions() as s:
            tasks = dict(s.execute(select(Task.key, Task.id)).all())
            users = dict(s.execute(select(User.username, User.id)).all())
            have = set(s.execute(select(Assignment.task_id, Assignment.user_id)).all())
            for key, username, role in plan:
                if key not in tasks:
                    raise ValueError(f"assignment plan: no task {key!r}")
                if username not in users:
                    raise ValueError(f"assignment plan: no user {username!r}")
                if role not in ROLES:
                    raise ValueError(f"assignment plan: unknown role {role!r}")
                pair = (tasks[key], users[username])
                if pair in have:
                    continue
                s.add(Assignment(task_id=pair[0], user_id=pair[1], role=role))
                have.add(pair)
                added += 1
            s.commit()
        return added

    # answers --------------------------------------------------------------------------------------------
    def save(self, assignment_id: int, user_id: int, field: str, value, client_token: str | None = None,
             base_revision: int | None = None, after_token: str | None = None) -> SaveResult:
        """Store ``value`` for ``field`` of an assignment as a new revision; committed before it returns.

        ``base_revision`` is the revision the client edited (0: none yet; None: not checked). When the answer
        has moved on since (another tab saved), the value is stored as a stale revision and the current one
        is kept. ``after_token``: the token of this page's own save of the field still under way when this one
        was sent (the page-close beacon): the save is also current when that save is the current revision.
        A save whose ``client_token`` was stored before writes nothing and answers as it did then;
        a token stored for a different save (another user, field or value) raises TokenReused. Each answer
        keeps its newest MAX_REVISIONS revisions (and the current one): a field saved again and again costs
        bounded space; and the revisions of one annotator, and of one task, hold at most ``max_user_chars``
        and ``max_task_chars`` in all: over that, their oldest revisions that are not current are deleted (never
        the one this save stores), and a save that would still leave them over raises QuotaExceeded, storing
        nothing. The quotas are counted under a lock (:meth:`_lock_counted`), so concurrent saves hold them too."""
        text_value = json.dumps(value, sort_keys=True)
        for _attempt in range(20):
            with self.sessions() as s:
                try:
                    self._lock_counted(s, assignment_id)
                    answer = s.scalar(select(Answer).where(Answer.assignment_id == assignment_id,
                                                           Answer.field == field).with_for_update())
                    if client_token:
                        seen = s.scalar(select(Revision).where(Revision.client_token == client_token))
                        if seen is not None:
                            if (answer is None or seen.answer_id != answer.id or seen.user_id != user_id
                                    or seen.value != text_value):
                                raise TokenReused("this save token was already used for another save")
                            return SaveResult(seen.revision, answer.revision, seen.stale)
                    stamp = now()
                    stale = answer is not None and base_revision is not None and base_revision != answer.revision
                    if stale and after_token:  # based on this page's own save under way, now current?
                        stale = s.scalar(select(Revision.id).where(
                            Revision.answer_id == answer.id, Revision.revision == answer.revision,
                            Revision.client_token == after_token, Revision.user_id == user_id)) is None
                    if answer is None:
                        answer = Answer(assignment_id=assignment_id, field=field, value=text_value, revision=1,
                                        updated_at=stamp)
                        s.add(answer)
                        s.flush()
                        number = 1
                    else:
                        number = 1 + (s.scalar(select(func.max(Revision.revision))
                                               .where(Revision.answer_id == answer.id)) or 0)
                        if not stale:
                            answer.revision = number
                            answer.value = text_value
                            answer.updated_at = stamp
                    new = Revision(answer_id=answer.id, revision=number, value=text_value, user_id=user_id,
                                   client_token=client_token or None, created_at=stamp,
                                   base_revision=base_revision, stale=stale, size=len(text_value))
                    s.add(new)
                    s.execute(update(Assignment).where(Assignment.id == assignment_id)
                              .values(stored=Assignment.stored + len(text_value)))
                    s.flush()
                    if number > MAX_REVISIONS:
                        self._drop(s, [Revision.answer_id == answer.id, Revision.revision <= number - MAX_REVISIONS,
                                       Revision.revision != answer.revision])
                    asg = s.get(Assignment, assignment_id)
                    self._bound(s, Assignment.user_id == asg.user_id, self.max_user_chars, new.id,
                                "your saved answers")
                    self._bound(s, Assignment.task_id == asg.task_id, self.max_task_chars, new.id,
                                "this task's saved answers")
                    s.commit()
                    return SaveResult(number, answer.revision, stale)
                except IntegrityError:
                    # a concurrent save of the same field (or the same token) won the race: read again
                    s.rollback()
                except OperationalError as err:  # PostgreSQL's deadlock detector chose this save: again
                    if getattr(err.orig, "sqlstate", None) != "40P01":
                        raise
                    s.rollback()
        raise RuntimeError(f"could not save {field!r} of assignment {assignment_id} after 20 attempts")

    @staticmethod
    def _lock_counted(s, assignment_id: int) -> None:
        """Lock (PostgreSQL: ``FOR NO KEY UPDATE``) every assignment whose ``stored`` this save counts against
        a quota -- the annotator's and the task's -- in one order (by id), before anything else, so that
        concurrent saves count one after another (none sums sizes another has not committed yet) and never
        wait for each other in a circle. SQLite needs none: one writer at a time holds the whole file."""
        owner = s.execute(select(Assignment.user_id, Assignment.task_id).where(Assignment.id == assignment_id)).first()
        if owner is not None and s.get_bind().dialect.name != "sqlite":
            s.execute(select(Assignment.id).where(or_(Assignment.user_id == owner.user_id,
                                                      Assignment.task_id == owner.task_id))
                      .order_by(Assignment.id).with_for_update(key_share=True)).all()

    @staticmethod
    def _drop(s, where: list) -> None:
        """Delete the revisions matching ``where`` and take their size off their assignments' ``stored``."""
        gone = s.execute(select(Answer.assignment_id, func.sum(Revision.size))
                         .join(Answer, Revision.answer_id == Answer.id).where(*where)
                         .group_by(Answer.assignment_id)).all()
        if not gone:
            return
        ids = select(Revision.id).where(*where).scalar_subquery()
        s.execute(delete(Revision).where(Revision.id.in_(ids)))
        for aid, size in gone:
            s.execute(update(Assignment).where(Assignment.id == aid).values(stored=Assignment.stored - int(size)))

    @staticmethod
    def _bound(s, scope, limit: int, keep: int, what: str) -> None:
        """Bring the revisions of the assignments in ``scope`` down to ``limit`` characters by deleting their
        oldest revisions that are not current (never ``keep``, the one being saved); QuotaExceeded when even
        that is not enough."""
        total = s.scalar(select(func.coalesce(func.sum(Assignment.stored), 0)).where(scope))
        if total <= limit:
            return
        excess, last, drop = total - limit, 0, []
        while excess > 0:
            rows = s.execute(select(Revision.id, Revision.size)
                             .join(Answer, Revision.answer_id == Answer.id)
                             .join(Assignment, Answer.assignment_id == Assignment.id)
                             .where(scope, Revision.revision != Answer.revision, Revision.id != keep,
                                    Revision.id > last)
                             .order_by(Revision.id).limit(500)).all()
            if not rows:
                raise QuotaExceeded(f"{what} would take more than {limit:,} characters in all, even "
                                    "with their history cleared; make this answer shorter or ask an admin")
            for rid, size in rows:
                if excess <= 0:
                    break
                drop.append(rid)
                excess -= size
            last = rows[-1][0]
        for i in range(0, len(drop), 500):
            Store._drop(s, [Revision.id.in_(drop[i:i + 500])])

    def revisions(self, assignment_id: int) -> dict:
        """The current revision number of each saved field of an assignment."""
        with self.sessions() as s:
            return dict(s.execute(select(Answer.field, Answer.revision)
                                  .where(Answer.assignment_id == assignment_id)).all())

    def answers(self, assignment_id: int) -> dict:
        with self.sessions() as s:
            rows = s.execute(select(Answer.field, Answer.value).where(Answer.assignment_id == assignment_id))
            return {f: json.loads(v) for f, v in rows}

    def task_rows(self) -> list[dict]:
        """Every task with its payload (which holds the pipeline's or the release's answers), in load order."""
        with self.sessions() as s:
            return [{"task": t.key, "kind": t.kind, "case_id": t.case_id, "source": t.source, "payload": t.data}
                    for t in s.scalars(select(Task).order_by(Task.id))]

    def export_rows(self) -> list[dict]:
        """Every revision with its task, annotator, role, time and whether it is the current value."""
        return list(self.iter_export_rows())

    def iter_export_rows(self, current_only: bool = False, batch: int = 500):
        """:meth:`export_rows` one at a time, read in batches of ``batch`` (an export streams; it never holds
        every revision at once); ``current_only``: the current revision of each answer only."""
        q = (select(Task.key, Task.kind, Task.case_id, User.username, Assignment.role, Assignment.id,
                    Answer.field, Revision.value, Revision.revision, Answer.revision, Revision.stale,
                    Revision.base_revision, Revision.created_at)
             .join(Answer, Revision.answer_id == Answer.id)
             .join(Assignment, Answer.assignment_id == Assignment.id)
             .join(Task, Assignment.task_id == Task.id)
             .join(User, Assignment.user_id == User.id)
             .order_by(Revision.id))
        if current_only:
            q = q.where(Revision.revision == Answer.revision)
        with self.engine.connect() as c:
            result = c.execution_options(yield_per=batch).execute(q)
            for key, kind, case_id, user, role, aid, field, value, rev, cur, stale, base, at in result:
                yield {"task": key, "kind": kind, "case_id": case_id, "annotator": user, "role": role,
                       "assignment": aid, "field": field, "value": json.loads(value), "revision": rev,
                       "current": rev == cur, "stale": bool(stale), "base_revision": base,
                       "saved_at": at.isoformat(timespec="milliseconds") + "Z"}
