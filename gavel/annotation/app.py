"""The annotation web app (Flask, server-rendered pages; a small script saves each edit as it is made).

Every page needs a login (argon2-hashed passwords, a signed session cookie that is HttpOnly and SameSite=Lax);
every POST needs the CSRF token (Flask-WTF). An annotator reaches only their own assignments; the admin
page lists people and progress and exports every revision. A save answers only after the database commit;
the page shows "saved" only then.
"""

from __future__ import annotations

import csv
import io
import json
from datetime import timedelta

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
from sqlalchemy import case, func, select

from gavel.core import items as gitems
from gavel.core.vocab import STYLE_RUBRIC

from .auth import verify_password
from .db import Answer, Assignment, Store, Task, User
from .tasks import COMPARISON_LABELS, PREFERENCES

MAX_VALUE_CHARS = 20_000


class BadAnswer(ValueError):
    pass


def create_app(db_url: str, secure_cookies: bool = False) -> Flask:
    store = Store(db_url)
    app = Flask(__name__)
    app.config.update(
        SECRET_KEY=store.secret_key(),
        SESSION_COOKIE_HTTPONLY=True,
        SESSION_COOKIE_SAMESITE="Lax",
        SESSION_COOKIE_SECURE=secure_cookies,
        PERMANENT_SESSION_LIFETIME=timedelta(hours=12),
        WTF_CSRF_TIME_LIMIT=None,  # valid as long as the session: a page left open for hours still saves
        MAX_CONTENT_LENGTH=2 * 1024 * 1024,
    )
    app.extensions["gavel_store"] = store
    CSRFProtect(app)

    def current_user() -> User | None:
        uid = session.get("user_id")
        if uid is None:
            return None
        with store.sessions() as s:
            return s.get(User, uid)

    @app.before_request
    def _load_user():
        g.user = current_user()
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

    # --- login ------------------------------------------------------------------------------------------
    @app.route("/login", methods=["GET", "POST"])
    def login():
        if request.method == "POST":
            user = store.user(request.form.get("username", ""))
            if verify_password(user.password_hash if user else None, request.form.get("password", "")):
                session.clear()
                session["user_id"] = user.id
                session.permanent = True
                nxt = request.args.get("next", "")
                return redirect(nxt if nxt.startswith("/") and not nxt.startswith("//") else url_for("home"))
            return render_template("login.html", error="Wrong user name or password."), 401
        return render_template("login.html", error=None)

    @app.post("/logout")
    def logout():
        session.clear()
        return redirect(url_for("login"))

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
        common = dict(asg=asg, task=task, data=data, answers=answers, others=others)
        if task.kind == "extraction":
            state = {it.key: answers.get(f"item:{it.key}", data["prefill"].get(it.key, []))
                     for it in gitems.ITEMS}
            text = data["text"]
            paras = [{"start": a, "end": b, "text": text[a:b]} for a, b in data["paragraphs"]]
            item_info = [{"key": it.key, "label": it.name, "definition": it.definition} for it in gitems.ITEMS]
            return render_template("extraction.html", paras=paras, state=state, item_info=item_info, **common)
        if task.kind == "comparison":
            return render_template("comparison.html", labels=COMPARISON_LABELS,
                                   item=gitems.item(data["item"]), **common)
        return render_template("style.html", scales=STYLE_RUBRIC, preferences=PREFERENCES, **common)

    @app.post("/a/<int:assignment_id>/save")
    def save(assignment_id: int):
        asg, task = own_assignment(assignment_id)
        field = request.form.get("field", "")
        try:
            raw = request.form.get("value", "")
            value = json.loads(raw) if raw else None
            value = validate(task, field, value)
        except (BadAnswer, json.JSONDecodeError) as err:
            if _wants_json():
                return jsonify(saved=False, error=str(err)), 400
            flash(f"Not saved: {err}")
            return redirect(url_for("task_page", assignment_id=asg.id))
        revision = store.save(asg.id, g.user.id, field, value, request.form.get("token") or None)
        if _wants_json():
            return jsonify(saved=True, field=field, revision=revision)
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
                flash(str(err))
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
        body = "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in store.export_rows())
        return Response(body, mimetype="application/jsonl",
                        headers={"Content-Disposition": "attachment; filename=annotations.jsonl"})

    @app.get("/admin/export.csv")
    def export_csv():
        admin_only()
        return Response(export_csv_text(store.export_rows()), mimetype="text/csv",
                        headers={"Content-Disposition": "attachment; filename=annotations.csv"})

    return app


def export_csv_text(rows: list[dict]) -> str:
    buf = io.StringIO()
    cols = ["task", "kind", "case_id", "annotator", "role", "assignment", "field", "value", "revision",
            "current", "saved_at"]
    w = csv.DictWriter(buf, fieldnames=cols)
    w.writeheader()
    for r in rows:
        w.writerow(dict(r, value=json.dumps(r["value"], ensure_ascii=False)))
    return buf.getvalue()


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


def validate(task: Task, field: str, value):
    """The stored form of ``value`` for ``field`` of ``task``, or BadAnswer saying what is wrong."""
    data = task.data
    if task.kind == "extraction":
        key = field.removeprefix("item:")
        if not field.startswith("item:") or key not in gitems.ITEM_KEYS:
            raise BadAnswer(f"unknown field {field!r}")
        if not isinstance(value, list):
            raise BadAnswer("an item's answer is a list of values")
        text = data["text"]
        out = []
        for v in value:
            if not isinstance(v, dict) or not isinstance(v.get("value"), str):
                raise BadAnswer("each value needs a text")
            if len(v["value"]) > MAX_VALUE_CHARS:
                raise BadAnswer("value too long")
            ev = []
            for e in v.get("evidence", []):
                s, t = e.get("start"), e.get("end")
                if s is None and t is None:  # evidence kept as text only (could not be located)
                    ev.append({"start": None, "end": None, "text": str(e.get("text", ""))[:MAX_VALUE_CHARS]})
                    continue
                if not (isinstance(s, int) and isinstance(t, int) and 0 <= s < t <= len(text)):
                    raise BadAnswer(f"evidence span {s}-{t} is not inside the summary")
                ev.append({"start": s, "end": t, "text": text[s:t]})
            out.append({"value": v["value"], "evidence": ev})
        return out
    if task.kind == "comparison":
        if data["mode"] == "single":
            if field != "label" or value not in COMPARISON_LABELS:
                raise BadAnswer(f"a single-value pair takes field 'label' with one of {list(COMPARISON_LABELS)}")
            return value
        if field != "matches" or not isinstance(value, list):
            raise BadAnswer("a multi-value pair takes field 'matches': a list of [A index, B index]")
        pairs = set()
        for p in value:
            if (not isinstance(p, list) or len(p) != 2 or not all(isinstance(i, int) for i in p)
                    or not 1 <= p[0] <= len(data["a"]) or not 1 <= p[1] <= len(data["b"])):
                raise BadAnswer(f"bad match {p!r}")
            pairs.add(tuple(p))
        return [list(p) for p in sorted(pairs)]
    if field == "preference":
        if value not in PREFERENCES:
            raise BadAnswer(f"preference is one of {list(PREFERENCES)}")
        return value
    aspect = field.removeprefix("aspect:")
    if not field.startswith("aspect:") or aspect not in STYLE_RUBRIC:
        raise BadAnswer(f"unknown field {field!r}")
    if not isinstance(value, int) or not 1 <= value <= 5:
        raise BadAnswer("a rating is a whole number from 1 to 5")
    return value
