"""Storage of the annotation app: SQLAlchemy tables, one code path for SQLite (default, a file) and PostgreSQL.

Tables
* ``users``       accounts; passwords hashed with argon2 (argon2-cffi), an admin flag;
* ``tasks``       one unit of work (an extraction review of one summary, one value pair, one style pair);
                  ``payload`` holds what the page shows (JSON), ``key`` is unique so loading twice adds nothing;
* ``assignments`` a task given to one annotator, role ``annotate`` or ``adjudicate``; unique per (task, user);
* ``answers``     the current value of one field of one assignment (``label``, ``item:filing_date``,
                  ``aspect:narrative_order`` ...); unique per (assignment, field), so a single-choice answer
                  exists once whatever the clicks or retries;
* ``revisions``   every saved value, appended and never changed; ``answers.revision`` points at the latest.
                  ``client_token`` (unique) makes a resent save (a retry, a flush on tab close) a no-op;
* ``settings``    the app's own settings (the session signing key, made once, so sessions survive a restart).

A save writes the answer and its revision in one transaction and returns only after the commit.
"""

from __future__ import annotations

import json
import secrets
from datetime import UTC, datetime

from sqlalchemy import (
    Boolean,
    DateTime,
    ForeignKey,
    Integer,
    String,
    Text,
    UniqueConstraint,
    create_engine,
    event,
    select,
)
from sqlalchemy.engine import Engine
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column, sessionmaker

SQLITE_BUSY_TIMEOUT_MS = 30_000
TASK_KINDS = ("extraction", "comparison", "style")
ROLES = ("annotate", "adjudicate")


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
    client_token: Mapped[str | None] = mapped_column(String(64), unique=True, nullable=True)
    created_at: Mapped[datetime] = mapped_column(DateTime, default=now)


class Setting(Base):
    __tablename__ = "settings"
    key: Mapped[str] = mapped_column(String(80), primary_key=True)
    value: Mapped[str] = mapped_column(Text)


def sqlite_url(path) -> str:
    return f"sqlite:///{path}"


def make_engine(url: str) -> Engine:
    """An engine for ``url``; SQLite files get WAL mode, a busy timeout and foreign keys on every connection."""
    if url.startswith("sqlite"):
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

    def __init__(self, url: str):
        self.url = url
        self.engine = make_engine(url)
        self.sessions = sessionmaker(self.engine, expire_on_commit=False)
        Base.metadata.create_all(self.engine)

    # settings -------------------------------------------------------------------------------------------
    def secret_key(self) -> str:
        """The session signing key, made on first use and kept in the database (never printed)."""
        with self.sessions() as s:
            row = s.get(Setting, "secret_key")
            if row is not None:
                return row.value
            s.add(Setting(key="secret_key", value=secrets.token_hex(32)))
            try:
                s.commit()
            except IntegrityError:  # another process made it first
                s.rollback()
            return s.get(Setting, "secret_key").value

    # users ----------------------------------------------------------------------------------------------
    def add_user(self, username: str, password: str, is_admin: bool = False) -> User:
        from .auth import hash_password

        if not username or not password:
            raise ValueError("a user needs a name and a password")
        with self.sessions() as s:
            if s.scalar(select(User).where(User.username == username)) is not None:
                raise ValueError(f"user {username!r} exists already")
            user = User(username=username, password_hash=hash_password(password), is_admin=is_admin)
            s.add(user)
            s.commit()
            return user

    def user(self, username: str) -> User | None:
        with self.sessions() as s:
            return s.scalar(select(User).where(User.username == username))

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
    def save(self, assignment_id: int, user_id: int, field: str, value, client_token: str | None = None) -> int:
        """Store ``value`` for ``field`` of an assignment as a new revision; returns the revision number.
        A save whose ``client_token`` was stored before returns that revision and writes nothing.
        Committed before it returns."""
        text = json.dumps(value, sort_keys=True)
        for _attempt in range(20):
            with self.sessions() as s:
                try:
                    if client_token:
                        seen = s.scalar(select(Revision).where(Revision.client_token == client_token))
                        if seen is not None:
                            return seen.revision
                    answer = s.scalar(select(Answer).where(Answer.assignment_id == assignment_id,
                                                           Answer.field == field).with_for_update())
                    stamp = now()
                    if answer is None:
                        answer = Answer(assignment_id=assignment_id, field=field, value=text, revision=1,
                                        updated_at=stamp)
                        s.add(answer)
                        s.flush()
                    else:
                        answer.revision += 1
                        answer.value = text
                        answer.updated_at = stamp
                    s.add(Revision(answer_id=answer.id, revision=answer.revision, value=text, user_id=user_id,
                                   client_token=client_token or None, created_at=stamp))
                    s.commit()
                    return answer.revision
                except IntegrityError:
                    # a concurrent save of the same field (or the same token) won the race: read again
                    s.rollback()
        raise RuntimeError(f"could not save {field!r} of assignment {assignment_id} after 20 attempts")

    def answers(self, assignment_id: int) -> dict:
        with self.sessions() as s:
            rows = s.execute(select(Answer.field, Answer.value).where(Answer.assignment_id == assignment_id))
            return {f: json.loads(v) for f, v in rows}

    def export_rows(self) -> list[dict]:
        """Every revision with its task, annotator, role, time and whether it is the current value."""
        with self.sessions() as s:
            q = (select(Revision, Answer, Assignment, Task, User)
                 .join(Answer, Revision.answer_id == Answer.id)
                 .join(Assignment, Answer.assignment_id == Assignment.id)
                 .join(Task, Assignment.task_id == Task.id)
                 .join(User, Assignment.user_id == User.id)
                 .order_by(Revision.id))
            out = []
            for rev, ans, asg, task, user in s.execute(q):
                out.append({"task": task.key, "kind": task.kind, "case_id": task.case_id,
                            "annotator": user.username, "role": asg.role, "assignment": asg.id,
                            "field": ans.field, "value": json.loads(rev.value), "revision": rev.revision,
                            "current": rev.revision == ans.revision,
                            "saved_at": rev.created_at.isoformat(timespec="milliseconds") + "Z"})
            return out
