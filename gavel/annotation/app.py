"""The annotation web app (Flask, server-rendered pages; a small script saves each edit as it is made).

Every page needs a login (argon2-hashed passwords). The signed session cookie (HttpOnly, SameSite=Lax, its
key from the environment or a private file, never the database) holds only a random session id; the session
itself lives in the database, so logging out or changing the password ends it even for a copied cookie.
Failed password tries make further tries wait (gavel.annotation.guard, counted in the database); ``next`` after a login is followed
only to a path of this site. Every POST needs the CSRF token (Flask-WTF). An annotator reaches only their own
assignments; the admin page lists people and progress and exports every revision. A save is validated field
by field (a clear 400 otherwise, the same on SQLite and PostgreSQL), answers only after the database commit,
and carries the revision the page edited: a save from a stale tab is kept in the history, not made current,
and the page says so. The comparison and style forms also save without JavaScript; the extraction review
says that it needs JavaScript.
"""

from __future__ import annotations

import csv
import io
import json
import math
import os
import re
import threading
from datetime import timedelta
from urllib.parse import urlsplit

import pandas as pd
from flask import (
    Flask,
    Response,
    abort,
    flash,
    g,
    jsonify,
    redirect,
    render_template,
    request,
    session,
    url_for,
)
from flask_wtf.csrf import CSRFError, CSRFProtect
from markupsafe import Markup
from sqlalchemy import case, func, select

from gavel.core import config
from gavel.core import items as gitems
from gavel.core.spreadsheet import csv_text, safe_cell
from gavel.core.stats import BOOTSTRAP_RESAMPLES, STATUSES
from gavel.core.vocab import STYLE_RUBRIC

from . import guard
from .agreement_cache import MAX_INTERVAL_S, AgreementCache
from .auth import hasher, verify_password
from .db import MAX_TOKEN_CHARS, Answer, Assignment, QuotaExceeded, Store, Task, TokenReused, User
from .secret import load_secret_key
from .tasks import COMPARISON_LABELS, PREFERENCES, checklist_items
from .worker import TIME_LIMIT_S, WorkerProcess

MAX_VALUE_CHARS = 20_000
MAX_VALUES = 200  # values of one item
MAX_EVIDENCE = 200  # evidence spans of one value
SESSION_LIFETIME = timedelta(hours=12)
AGREEMENT_RESAMPLES = BOOTSTRAP_RESAMPLES  # the one bootstrap, as notebook 13
AGREEMENT_SEED = 0
MIN_RESAMPLES, MAX_RESAMPLES = 10, 20_000
MAX_AGREEMENT_LOADS = 2  # agreement pages rendered at once (the others wait their turn)
# failed password tries before each further one waits (1 s, doubling, up to guard.MAX_WAIT_S): per account
# and address or known browser (the account alone from unknown browsers: 4x), and per client address
LOGIN_LIMIT_ACCOUNT = 5
LOGIN_LIMIT_ADDRESS = 50
ENV_LIMIT_ACCOUNT = "GAVEL_LOGIN_LIMIT_ACCOUNT"
ENV_LIMIT_ADDRESS = "GAVEL_LOGIN_LIMIT_ADDRESS"
_TOKEN = re.compile(rf"[A-Za-z0-9_-]{{1,{MAX_TOKEN_CHARS}}}")
_REVISION = re.compile(r"[0-9]{1,9}")
CONFLICT_MESSAGE = ("this answer was changed in another tab or window since this page was loaded; your edit is "
                    "kept in the history but not applied. Reload the page to see the current answer.")


class BadAnswer(ValueError):
    pass


def create_app(db_url: str, secure_cookies: bool = False, secret_key_file: str | os.PathLike | None = None,
               login_limit_account: int | str | None = None, login_limit_address: int | str | None = None,
               agreement_resamples: int | None = None, agreement_time_limit: float | None = None,
               agreement_max_interval: float | None = None) -> Flask:
    """The app on the database ``db_url``. The failed password tries allowed before each further one waits
    (gavel.annotation.guard, counted in the database) default to the environment (GAVEL_LOGIN_LIMIT_ACCOUNT,
    GAVEL_LOGIN_LIMIT_ADDRESS), else LOGIN_LIMIT_ACCOUNT / LOGIN_LIMIT_ADDRESS. ``agreement_resamples``: bootstrap resamples of the agreement page's intervals (default gavel.core.stats.BOOTSTRAP_RESAMPLES, as
    notebook 13); ``agreement_time_limit``: seconds one computation of it may take (gavel.annotation.worker);
    ``agreement_max_interval``: the longest pause between two computations (gavel.annotation.agreement_cache)."""
    check_resamples(agreement_resamples)
    hasher()  # a GAVEL_PASSWORD_HASH_PROFILE naming no profile stops the start, not the first login
    store = Store(db_url)
    app = Flask(__name__)
    app.config.update(
        SECRET_KEY=load_secret_key(secret_key_file),
        SESSION_COOKIE_HTTPONLY=True,
        SESSION_COOKIE_SAMESITE="Lax",
        SESSION_COOKIE_SECURE=secure_cookies,
        PERMANENT_SESSION_LIFETIME=SESSION_LIFETIME,
        WTF_CSRF_TIME_LIMIT=None,  # valid as long as the session: a page left open for hours still saves
        MAX_CONTENT_LENGTH=2 * 1024 * 1024,
        LOGIN_LIMIT_ACCOUNT=login_limit(login_limit_account, ENV_LIMIT_ACCOUNT, LOGIN_LIMIT_ACCOUNT),
        LOGIN_LIMIT_ADDRESS=login_limit(login_limit_address, ENV_LIMIT_ADDRESS, LOGIN_LIMIT_ADDRESS),
        AGREEMENT_RESAMPLES=agreement_resamples or AGREEMENT_RESAMPLES,
    )
    app.extensions["gavel_store"] = store
    CSRFProtect(app)

    def too_many(wait: float, template: str, status: int = 429):
        return render_template(template, error=f"Too many failed password tries: wait {guard.when(wait)} "
                               "before trying again (each failure doubles the wait), or ask an admin."), status

    @app.before_request
    def _load_user():
        g.user = store.session_user(session.get("sid"))
        if g.user is None and "sid" in session:
            session.clear()  # ended (logout, password change) or expired on the server
        if g.user is None and request.endpoint not in ("login", "static"):
            if request.method == "POST" or request.accept_mimetypes.best == "application/json":
                return jsonify(error="not logged in"), 401
            return redirect(url_for("login", next=request.path))

    @app.after_request
    def _headers(resp):
        resp.headers.setdefault("X-Content-Type-Options", "nosniff")
        resp.headers.setdefault("X-Frame-Options", "DENY")
        resp.headers.setdefault("Content-Security-Policy",
                                "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'")
        return resp

    @app.errorhandler(CSRFError)
    def _csrf(err):
        if _wants_json():
            return jsonify(error=f"refused: {err.description}"), 400
        return render_template("error.html", message=f"Refused: {err.description}"), 400

    def login_session(user: User) -> None:
        sid = store.open_session(user.id, SESSION_LIFETIME)
        session.clear()
        session["sid"] = sid
        session.permanent = True

    # --- login ------------------------------------------------------------------------------------------
    @app.route("/login", methods=["GET", "POST"])
    def login():
        if request.method == "POST":
            # the account as typed, hashed: what a user types as a name (sometimes a password) never reaches
            # the database or a log
            account = guard.digest(request.form.get("username", "").strip().casefold())
            device, known = guard.read_device(app.secret_key, request.cookies.get(guard.DEVICE_COOKIE))
            keys = guard.login_keys(account, request.remote_addr or "?", device, account in known,
                                    app.config["LOGIN_LIMIT_ACCOUNT"], app.config["LOGIN_LIMIT_ADDRESS"])
            claims = guard.claim_all(store, keys)
            if not isinstance(claims, list):
                return too_many(claims, "login.html")
            user = store.user(request.form.get("username", ""))
            if not verify_password(user.password_hash if user else None, request.form.get("password", "")):
                return render_template("login.html", error="Wrong user name or password."), 401
            guard.give_back(store, claims, clear_first=True)
            login_session(user)
            resp = redirect(safe_next(request.args.get("next")) or url_for("home"))
            resp.set_cookie(guard.DEVICE_COOKIE,
                            guard.device_cookie(app.secret_key, device, [a for a in known if a != account] + [account]),
                            max_age=int(guard.DEVICE_LIFETIME.total_seconds()), httponly=True, samesite="Lax",
                            secure=secure_cookies)
            return resp
        return render_template("login.html", error=None)

    @app.post("/logout")
    def logout():
        store.close_session(session.get("sid"))
        session.clear()
        return redirect(url_for("login"))

    @app.route("/password", methods=["GET", "POST"])
    def change_password():
        if request.method == "POST":
            new = request.form.get("new", "")
            # a stolen session guessing the current password is slowed down like a login
            claims = guard.claim_all(store, [(f"c:{g.user.id}", app.config["LOGIN_LIMIT_ACCOUNT"])])
            if not isinstance(claims, list):
                return too_many(claims, "password.html")
            if not verify_password(g.user.password_hash, request.form.get("current", "")):
                return render_template("password.html", error="The current password is wrong."), 400
            guard.give_back(store, claims, clear_first=True)
            if new != request.form.get("repeat", ""):
                error = "The two new passwords differ."
            else:
                try:
                    store.set_password(g.user.username, new)  # ends every session of this user
                except ValueError as err:
                    error = f"Not changed: {err}."
                else:
                    login_session(g.user)  # this browser stays logged in with a new session
                    flash("Password changed; every other session of yours has been logged out.")
                    return redirect(url_for("home"))
            return render_template("password.html", error=error), 400
        return render_template("password.html", error=None)

    # --- work -------------------------------------------------------------------------------------------
    @app.get("/")
    def home():
        with store.sessions() as s:
            rows = s.execute(
                select(Assignment, Task, func.count(Answer.id))
                .join(Task, Assignment.task_id == Task.id)
                .outerjoin(Answer, Answer.assignment_id == Assignment.id)
                .where(Assignment.user_id == g.user.id)
                .group_by(Assignment.id, Task.id)
                .order_by(Task.kind, Task.id)).all()
        return render_template("home.html", rows=rows)

    def own_assignment(assignment_id: int) -> tuple[Assignment, Task]:
        with store.sessions() as s:
            asg = s.get(Assignment, assignment_id)
            if asg is None or asg.user_id != g.user.id:
                abort(404)  # someone else's work does not exist for this user
            return asg, s.get(Task, asg.task_id)

    @app.get("/a/<int:assignment_id>")
    def task_page(assignment_id: int):
        asg, task = own_assignment(assignment_id)
        data = task.data
        answers = store.answers(asg.id)
        others = _others(store, task, asg) if asg.role == "adjudicate" else []
        common = dict(asg=asg, task=task, data=data, answers=answers, others=others,
                      revisions=store.revisions(asg.id))
        if task.kind == "extraction":
            item_info = checklist_items(data)
            state = {it["key"]: answers.get(f"item:{it['key']}", data["prefill"].get(it["key"], [])) for it in item_info}
            text = data["text"]
            paras = [{"start": a, "end": b, "text": text[a:b]} for a, b in data["paragraphs"]]
            item_info = [{"key": it["key"], "label": it["name"], "definition": it["definition"]} for it in item_info]
            return render_template("extraction.html", paras=paras, state=state, item_info=item_info, **common)
        if task.kind == "comparison":
            return render_template("comparison.html", labels=COMPARISON_LABELS,
                                   item=gitems.item(data["item"]), **common)
        return render_template("style.html", scales=STYLE_RUBRIC, preferences=PREFERENCES, **common)

    @app.post("/a/<int:assignment_id>/save")
    def save(assignment_id: int):
        asg, task = own_assignment(assignment_id)
        try:
            field, value, token, base, after = parse_save(task, request.form)
            result = store.save(asg.id, g.user.id, field, value, token, base, after)
        except (BadAnswer, TokenReused, QuotaExceeded) as err:
            status = {TokenReused: 409, QuotaExceeded: 413}.get(type(err), 400)
            if _wants_json():
                return jsonify(saved=False, error=str(err)), status
            flash(f"Not saved: {err}")
            return redirect(url_for("task_page", assignment_id=asg.id))
        if result.stale:
            if _wants_json():
                return jsonify(saved=False, conflict=True, field=field, revision=result.revision,
                               current=result.current, error=CONFLICT_MESSAGE), 409
            flash(f"Not saved as the answer: {CONFLICT_MESSAGE}")
            return redirect(url_for("task_page", assignment_id=asg.id))
        if _wants_json():
            return jsonify(saved=True, field=field, revision=result.revision)
        flash("Saved.")
        return redirect(url_for("task_page", assignment_id=asg.id))

    @app.post("/a/<int:assignment_id>/done")
    def mark_done(assignment_id: int):
        asg, _ = own_assignment(assignment_id)
        with store.sessions() as s:
            s.get(Assignment, asg.id).done = request.form.get("done", "1") == "1"
            s.commit()
        return redirect(url_for("home"))

    # --- admin ------------------------------------------------------------------------------------------
    def admin_only():
        if not g.user.is_admin:
            abort(403)

    @app.route("/admin", methods=["GET", "POST"])
    def admin():
        admin_only()
        if request.method == "POST":
            try:
                store.add_user(request.form.get("username", "").strip(), request.form.get("password", ""),
                               is_admin=request.form.get("is_admin") == "1")
                flash("User added.")
            except ValueError as err:
                flash(f"Not added: {err}")
            return redirect(url_for("admin"))
        with store.sessions() as s:
            users = s.execute(
                select(User.username, User.is_admin, func.count(Assignment.id),
                       func.sum(case((Assignment.done, 1), else_=0)))
                .outerjoin(Assignment, Assignment.user_id == User.id)
                .group_by(User.id).order_by(User.username)).all()
            kinds = s.execute(select(Task.kind, func.count(Task.id)).group_by(Task.kind)).all()
            n_answers = s.scalar(select(func.count(Answer.id)))
        return render_template("admin.html", users=users, kinds=kinds, n_answers=n_answers)

    @app.get("/admin/export.jsonl")
    def export_jsonl():
        admin_only()
        return Response(export_jsonl_lines(store.iter_export_rows()), mimetype="application/jsonl",
                        headers={"Content-Disposition": "attachment; filename=annotations.jsonl"})

    @app.get("/admin/export.csv")
    def export_csv():
        admin_only()
        return Response(export_csv_lines(store.iter_export_rows()), mimetype="text/csv",
                        headers={"Content-Disposition": "attachment; filename=annotations.csv"})

    worker = app.extensions["gavel_worker"] = WorkerProcess(agreement_time_limit or TIME_LIMIT_S)

    def agreement_now():
        """The agreement table from the current answers, computed in the worker process."""
        return worker.run(agreement_table_of, db_url, app.config["AGREEMENT_RESAMPLES"])

    agreement_cache = AgreementCache(store, agreement_now, max_interval_s=agreement_max_interval or MAX_INTERVAL_S)
    app.extensions["gavel_agreement"] = agreement_cache

    tables_html: dict = {}  # the page's tables, rendered once per computed table (loads do not render them)

    def agreement_tables(snap) -> tuple[Markup, bool]:
        key = (id(snap.table), snap.computed_at)
        if tables_html.get("key") != key:
            shown, nothing = split_rows(snap.table.to_dict("records") if snap.table is not None else [])
            html = Markup(render_template("agreement_tables.html", rows=shown, nothing=nothing, fmt=_fmt))
            tables_html.update(key=key, value=(html, bool(shown or nothing)))
        return tables_html["value"]

    # agreement pages rendered at once: more loads queue (waiting, not running), so that admins reloading
    # back to back never hold more than this many of the server's threads busy against the saves
    page_loads = threading.BoundedSemaphore(MAX_AGREEMENT_LOADS)

    @app.get("/admin/agreement")
    def agreement():
        admin_only()
        snap = agreement_cache.get()  # may wait for a computation: asleep, holding no slot
        with page_loads:
            return agreement_page(snap)

    def agreement_page(snap):
        tables, any_rows = agreement_tables(snap)
        with store.sessions() as s:
            n_annotators = s.scalar(select(func.count(func.distinct(Assignment.user_id)))
                                    .join(Answer, Answer.assignment_id == Assignment.id)
                                    .where(Assignment.role == "annotate"))
            n_answers = s.scalar(select(func.count(Answer.id)))
        resp = Response(render_template("agreement.html", tables=tables, any_rows=any_rows, snap=snap,
                                        statuses=STATUSES, n_answers=n_answers, n_annotators=n_annotators,
                                        n_resamples=app.config["AGREEMENT_RESAMPLES"]))
        resp.headers["Cache-Control"] = "no-store"
        if not snap.current:
            resp.headers["Refresh"] = "5"  # the page reloads itself until its table is current
        return resp

    @app.get("/admin/agreement.csv")
    def agreement_csv():
        admin_only()
        snap = agreement_cache.get()
        if not snap.current:
            return Response("the agreement table is being computed; try again in a moment\n", status=503,
                            mimetype="text/plain", headers={"Retry-After": "5", "Cache-Control": "no-store"})
        return Response(csv_text(snap.table), mimetype="text/csv",
                        headers={"Content-Disposition": "attachment; filename=agreement.csv",
                                 "Cache-Control": "no-store"})

    return app


_STORES: dict = {}  # the worker process's store per database


def agreement_table_of(db_url: str, n_resamples: int):
    """The agreement table of the database ``db_url`` from its current answers (never the revision history),
    as the agreement page shows it; run in the app's worker process."""
    from gavel.metrics.metaeval import agreement_table

    store = _STORES.get(db_url) or _STORES.setdefault(db_url, Store(db_url))
    return agreement_table(pd.DataFrame(store.iter_export_rows(current_only=True)), pd.DataFrame(store.task_rows()),
                           n_resamples=n_resamples, seed=AGREEMENT_SEED)


def login_limit(given, env: str, default: int) -> int:
    """A failed-try allowance: ``given``, else the environment variable ``env``, else ``default``; a whole
    number from 1 to 10,000 (ValueError otherwise)."""
    value = given if given is not None else config.env(env)
    if value is None or value == "":
        return default
    if not str(value).strip().isdigit() or not 1 <= int(value) <= 10_000:
        raise ValueError(f"{env.removeprefix('GAVEL_').lower().replace('_', '-')}: failed password tries "
                         f"allowed before each further try waits, a whole number from 1 to 10000, not {value!r}")
    return int(value)


def check_resamples(n: int | None) -> None:
    """ValueError unless ``n`` (the agreement page's bootstrap resamples) is None or MIN..MAX_RESAMPLES."""
    if n is not None and not MIN_RESAMPLES <= n <= MAX_RESAMPLES:
        raise ValueError(f"--agreement-resamples must be from {MIN_RESAMPLES} to {MAX_RESAMPLES:,} "
                         f"(a 95% interval needs resamples to rest on; the page computes them all), not {n}")


def split_rows(rows: list[dict]) -> tuple[list[dict], list[dict]]:
    """The agreement rows to show in the table, and those of an item with nothing to show yet (no row of
    that item has a value): the page folds the latter away. The rows of all items are always shown."""
    from gavel.metrics.metaeval.agreement import ALL

    has_value = {(r["kind"], r["item"]) for r in rows if r["status"] == "ok"}
    shown = [r for r in rows if r["item"] == ALL or (r["kind"], r["item"]) in has_value]
    return shown, [r for r in rows if r not in shown]


def _fmt(value, digits: int = 3) -> str:
    """A number as the agreement page shows it (``digits`` decimals), '' for none."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return ""
    return f"{value:.{digits}f}"


def safe_next(nxt) -> str | None:
    """``nxt`` when it is a path on this site (``/...``, printable ASCII, no scheme, host or backslash, not
    ``//``), else None. Browsers drop tabs and newlines and read a backslash as ``/``, so ``/<TAB>/evil.example``
    would leave the site; a control character in a Location header is an error."""
    if not isinstance(nxt, str) or not nxt.startswith("/") or len(nxt) > 2000:
        return None
    if any(not 0x21 <= ord(c) < 0x7F for c in nxt) or "\\" in nxt or nxt.startswith("//"):
        return None
    parts = urlsplit(nxt)
    return nxt if not parts.scheme and not parts.netloc else None


EXPORT_COLUMNS = ["task", "kind", "case_id", "annotator", "role", "assignment", "field", "value", "revision",
                  "current", "stale", "base_revision", "saved_at"]


def export_csv_lines(rows):
    """The export as CSV, one line at a time (``rows``: an iterable of export rows, e.g. the store's
    ``iter_export_rows``, so nothing holds the whole export); text cells a spreadsheet would read as a formula
    are neutralised (gavel.core.spreadsheet)."""
    buf = io.StringIO()
    w = csv.DictWriter(buf, fieldnames=EXPORT_COLUMNS)
    w.writeheader()
    for r in rows:
        w.writerow({k: safe_cell(v) for k, v in dict(r, value=json.dumps(r["value"], ensure_ascii=False)).items()})
        yield buf.getvalue()
        buf.seek(0)
        buf.truncate()
    yield buf.getvalue()


def export_jsonl_lines(rows):
    """The export as JSONL, one line at a time."""
    for r in rows:
        yield json.dumps(r, ensure_ascii=False) + "\n"


def _wants_json() -> bool:
    return request.headers.get("X-Requested-With") == "fetch" or request.accept_mimetypes.best == "application/json"


def _others(store: Store, task: Task, asg: Assignment) -> list[dict]:
    """For an adjudicator: the other annotators' current answers to the same task (read only)."""
    with store.sessions() as s:
        rows = s.execute(select(User.username, Answer.field, Answer.value)
                         .join(Assignment, Assignment.user_id == User.id)
                         .join(Answer, Answer.assignment_id == Assignment.id)
                         .where(Assignment.task_id == task.id, Assignment.id != asg.id)
                         .order_by(User.username, Answer.field)).all()
    return [{"annotator": u, "field": f, "value": json.loads(v)} for u, f, v in rows]


def parse_save(task: Task, form) -> tuple[str, object, str | None, int, str | None]:
    """(field, value, token, base revision, after token) of a save request, or BadAnswer naming what is
    wrong. Every save says which revision of the answer it edited (``base``, 0 for none yet): a save that
    does not is refused, so nothing (a page-close beacon included) overwrites an answer unchecked.
    ``after``: the token of the page's own save of this field still under way when this one was sent.

    ``value`` is JSON (the page's script); without it (a form posted with JavaScript off) the value is taken
    from the form's own inputs: ``choice`` (a radio button) or ``match`` (the ticked "A,B" boxes)."""
    field = form.get("field", "")
    token = form.get("token") or None
    if token is not None and not _TOKEN.fullmatch(token):
        raise BadAnswer(f"token: 1-{MAX_TOKEN_CHARS} letters, digits, '-' or '_'")
    base = form.get("base", "")
    if not _REVISION.fullmatch(base):
        raise BadAnswer("base: the revision of the answer the page edited (a whole number, 0 for none) is "
                        "needed; reload the page")
    base = int(base)
    after = form.get("after") or None
    if after is not None and not _TOKEN.fullmatch(after):
        raise BadAnswer(f"after: 1-{MAX_TOKEN_CHARS} letters, digits, '-' or '_'")
    if "value" in form:
        raw = form.get("value", "")
        try:
            value = json.loads(raw) if raw else None
        except json.JSONDecodeError as err:
            raise BadAnswer(f"value: not JSON ({err})") from None
        except RecursionError:
            raise BadAnswer("value: nested too deeply") from None
    elif field == "matches":
        value = []
        for m in form.getlist("match"):
            parts = m.split(",")
            if len(parts) != 2 or not all(_REVISION.fullmatch(x) for x in parts):
                raise BadAnswer(f"matches: bad box {m[:40]!r}")
            value.append([int(x) for x in parts])
    elif "choice" in form:
        value = form.get("choice")
        if field.startswith("aspect:") and _REVISION.fullmatch(value):
            value = int(value)
    else:
        raise BadAnswer("nothing chosen")
    return field, validate(task, field, value), token, base, after


def _text(value, where: str, limit: int = MAX_VALUE_CHARS) -> str:
    if not isinstance(value, str):
        raise BadAnswer(f"{where}: a text is needed, not {type(value).__name__}")
    if len(value) > limit:
        raise BadAnswer(f"{where}: longer than {limit} characters")
    if "\x00" in value:
        raise BadAnswer(f"{where}: holds a NUL character")
    return value


def _whole(value) -> bool:
    return type(value) is int  # not bool, not float


def validate(task: Task, field: str, value):
    """The stored form of ``value`` for ``field`` of ``task``, or BadAnswer saying what is wrong."""
    data = task.data
    if task.kind == "extraction":
        key = field.removeprefix("item:")
        if not field.startswith("item:") or key not in {it["key"] for it in checklist_items(data)}:
            raise BadAnswer(f"unknown field {field[:130]!r}")
        if not isinstance(value, list):
            raise BadAnswer(f"{field}: an item's answer is a list of values")
        if len(value) > MAX_VALUES:
            raise BadAnswer(f"{field}: more than {MAX_VALUES} values")
        text = data["text"]
        out = []
        for i, v in enumerate(value, 1):
            where = f"{field}, value {i}"
            if not isinstance(v, dict):
                raise BadAnswer(f"{where}: an object {{value, evidence}} is needed")
            if set(v) - {"value", "evidence"}:
                raise BadAnswer(f"{where}: unknown keys {sorted(set(v) - {'value', 'evidence'})[:5]}")
            if "value" not in v:
                raise BadAnswer(f"{where}: each value needs a text")
            val = _text(v["value"], where)
            evidence = v.get("evidence", [])
            if not isinstance(evidence, list):
                raise BadAnswer(f"{where}: evidence is a list, not {type(evidence).__name__}")
            if len(evidence) > MAX_EVIDENCE:
                raise BadAnswer(f"{where}: more than {MAX_EVIDENCE} evidence spans")
            ev = []
            for k, e in enumerate(evidence, 1):
                ewhere = f"{where}, evidence {k}"
                if not isinstance(e, dict):
                    raise BadAnswer(f"{ewhere}: an object {{start, end, text}} is needed")
                if set(e) - {"start", "end", "text"}:
                    raise BadAnswer(f"{ewhere}: unknown keys {sorted(set(e) - {'start', 'end', 'text'})[:5]}")
                s, t = e.get("start"), e.get("end")
                if s is None and t is None:  # evidence kept as text only (could not be located)
                    ev.append({"start": None, "end": None, "text": _text(e.get("text", ""), ewhere)})
                    continue
                if not (_whole(s) and _whole(t) and 0 <= s < t <= len(text)):
                    raise BadAnswer(f"{ewhere}: span {str(s)[:20]}-{str(t)[:20]} is not inside the summary "
                                    f"(whole numbers 0 <= start < end <= {len(text)})")
                ev.append({"start": s, "end": t, "text": text[s:t]})
            out.append({"value": val, "evidence": ev})
        return out
    if task.kind == "comparison":
        if data["mode"] == "single":
            if field != "label" or not isinstance(value, str) or value not in COMPARISON_LABELS:
                raise BadAnswer(f"a single-value pair takes field 'label' with one of {list(COMPARISON_LABELS)}")
            return value
        if field != "matches" or not isinstance(value, list):
            raise BadAnswer("a multi-value pair takes field 'matches': a list of [A index, B index]")
        if len(value) > 10_000:
            raise BadAnswer("matches: more than 10000 pairs")
        pairs = set()
        for p in value:
            if (not isinstance(p, list) or len(p) != 2 or not all(_whole(i) for i in p)
                    or not 1 <= p[0] <= len(data["a"]) or not 1 <= p[1] <= len(data["b"])):
                raise BadAnswer(f"matches: bad pair {str(p)[:40]} (whole numbers, A 1-{len(data['a'])}, "
                                f"B 1-{len(data['b'])})")
            pairs.add(tuple(p))
        return [list(p) for p in sorted(pairs)]
    if field == "preference":
        if not isinstance(value, str) or value not in PREFERENCES:
            raise BadAnswer(f"preference is one of {list(PREFERENCES)}")
        return value
    aspect = field.removeprefix("aspect:")
    if not field.startswith("aspect:") or aspect not in STYLE_RUBRIC:
        raise BadAnswer(f"unknown field {field[:130]!r}")
    if not _whole(value) or not 1 <= value <= 5:
        raise BadAnswer(f"{field}: a rating is a whole number from 1 to 5")
    return value
