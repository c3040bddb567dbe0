"""Storage, validation, loading and planning of the annotation app, without a browser."""

from __future__ import annotations

import threading
import uuid

import pytest
from needs import need_module

need_module("sqlalchemy", "annotation tests need the annotation extra")

from gavel.annotation import tasks as T  # noqa: E402
from gavel.annotation.app import BadAnswer, export_csv_lines, validate  # noqa: E402
from gavel.annotation.auth import verify_password  # noqa: E402
from gavel.annotation.db import Answer, Revision, Store, Task  # noqa: E402


@pytest.fixture(params=["sqlite", "postgresql"])
def store(request, tmp_path):
    if request.param == "sqlite":
        url = f"sqlite:///{tmp_path / 'a.db'}"
    else:
        url = request.getfixturevalue("pg_server").createdb(f"st_{uuid.uuid4().hex[:8]}")
    s = Store(url)
    yield s
    s.engine.dispose()


def _one_task(store, kind="comparison"):
    pair = {"case_id": "1", "item": "filing_date", "a": ["May 1"], "b": ["May 1, 2024"], "origin": "t"}
    store.add_tasks(T.comparison_tasks([pair], "t"))
    store.add_user("ann", "ann-password")
    store.assign([("comparison:t:1:filing_date", "ann", "annotate")])
    return 1, 1  # assignment id, user id


def test_sqlite_runs_in_wal_mode_with_a_busy_timeout(tmp_path):
    s = Store(f"sqlite:///{tmp_path / 'a.db'}")
    with s.engine.connect() as c:
        assert c.exec_driver_sql("PRAGMA journal_mode").scalar() == "wal"
        assert c.exec_driver_sql("PRAGMA busy_timeout").scalar() >= 1000


def test_concurrent_saves_of_one_answer_keep_one_row_and_every_revision(store):
    aid, uid = _one_task(store)
    labels = list(T.COMPARISON_LABELS)
    errors = []

    def worker(i):
        try:
            store.save(aid, uid, "label", labels[i % 4], client_token=f"tok-{i}")
        except Exception as err:  # noqa: BLE001 - collected and asserted below
            errors.append(err)

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(12)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    with store.sessions() as s:
        answers = s.query(Answer).all()
        revisions = s.query(Revision).order_by(Revision.revision).all()
    assert len(answers) == 1  # a single-choice answer exists once
    assert [r.revision for r in revisions] == list(range(1, 13))  # nothing overwritten in place
    assert answers[0].revision == 12 and answers[0].value == revisions[-1].value


def test_a_resent_save_is_stored_once(store):
    aid, uid = _one_task(store)
    assert store.save(aid, uid, "label", "equal", client_token="same").revision == 1
    assert store.save(aid, uid, "label", "equal", client_token="same").revision == 1
    assert store.save(aid, uid, "label", "different", client_token="other").revision == 2
    rows = store.export_rows()
    assert [(r["revision"], r["value"], r["current"]) for r in rows] == [(1, "equal", False), (2, "different", True)]
    assert rows[0]["annotator"] == "ann" and rows[0]["saved_at"].endswith("Z")
    assert "".join(export_csv_lines(rows)).splitlines()[0].startswith("task,kind,case_id,annotator,role")


def test_passwords_are_argon2_hashes(store):
    user = store.add_user("x", "secret-pass")
    assert user.password_hash.startswith("$argon2id$") and "secret" not in user.password_hash
    assert verify_password(user.password_hash, "secret-pass")
    assert not verify_password(user.password_hash, "Secret-pass")
    assert not verify_password(None, "secret-pass")
    with pytest.raises(ValueError, match="exists"):
        store.add_user("x", "other-password")


def test_production_argon2_parameters_unless_overridden(tmp_path, monkeypatch):
    """The test suite hashes with argon2-cffi's CHEAPEST profile (tests/conftest.py sets GAVEL_PASSWORD_HASH_PROFILE);
    with the setting unset, passwords are hashed with argon2-cffi's own defaults (RFC 9106's low-memory
    profile: 64 MiB, 3 passes, 4 lanes), and a hash made under either profile verifies under the other."""
    import argon2

    from gavel.annotation import auth

    monkeypatch.setenv(auth.PROFILE_ENV, "CHEAPEST")
    cheap = Store(f"sqlite:///{tmp_path / 'cheap.db'}").add_user("x", "secret-pass").password_hash
    assert cheap.startswith("$argon2id$v=19$m=8,t=1,p=1$")
    monkeypatch.delenv(auth.PROFILE_ENV)
    default = argon2.PasswordHasher()
    chosen, dummy = auth.hasher()
    assert (chosen.time_cost, chosen.memory_cost, chosen.parallelism, chosen.hash_len, chosen.salt_len,
            chosen.type) == (default.time_cost, default.memory_cost, default.parallelism, default.hash_len,
                             default.salt_len, default.type) == (3, 65536, 4, 32, 16, argon2.Type.ID)
    assert dummy.startswith("$argon2id$v=19$m=65536,t=3,p=4$")
    store = Store(f"sqlite:///{tmp_path / 'a.db'}")
    real = store.add_user("y", "secret-pass").password_hash
    assert real.startswith("$argon2id$v=19$m=65536,t=3,p=4$")
    assert verify_password(cheap, "secret-pass") and not verify_password(cheap, "secret-pasS")
    monkeypatch.setenv(auth.PROFILE_ENV, "CHEAPEST")
    assert verify_password(real, "secret-pass") and not verify_password(real, "secret-pasS")
    monkeypatch.setenv(auth.PROFILE_ENV, "cheapest")
    with pytest.raises(ValueError, match="GAVEL_PASSWORD_HASH_PROFILE: one of argon2-cffi's profiles .* not 'cheapest'"):
        auth.hash_password("secret-pass")


def test_answers_are_validated():
    text = "one two three"
    ext = Task(key="e", kind="extraction", payload='{"text": "one two three", "prefill": {}}')
    assert validate(ext, "item:filing_date", [{"value": "v", "evidence": [{"start": 4, "end": 7}]}]) == \
        [{"value": "v", "evidence": [{"start": 4, "end": 7, "text": text[4:7]}]}]
    for field, value in [("item:filing_date", [{"value": "v", "evidence": [{"start": 4, "end": 99}]}]),
                         ("item:nonsense", []), ("label", "equal")]:
        with pytest.raises(BadAnswer):
            validate(ext, field, value)
    single = Task(key="c", kind="comparison", payload='{"mode": "single", "a": ["x"], "b": ["y"]}')
    with pytest.raises(BadAnswer):
        validate(single, "label", "maybe")
    multi = Task(key="m", kind="comparison", payload='{"mode": "multi", "a": ["x", "y"], "b": ["z"]}')
    assert validate(multi, "matches", [[2, 1], [1, 1], [2, 1]]) == [[1, 1], [2, 1]]
    with pytest.raises(BadAnswer):
        validate(multi, "matches", [[3, 1]])
    style = Task(key="s", kind="style", payload="{}")
    with pytest.raises(BadAnswer):
        validate(style, "aspect:narrative_order", 6)
    assert validate(style, "preference", "none") == "none"


def test_plan_gives_the_longest_reviews_to_three_and_an_adjudicator():
    tasks = [{"key": f"e{i}", "kind": "extraction", "payload": {"words": i}} for i in range(20)]
    tasks += [{"key": f"c{i}", "kind": "comparison", "payload": {}} for i in range(10)]
    rows = T.plan(tasks, ["a", "b", "c", "d"], k=1, k_long=3, n_long=5)
    by_task = {}
    for key, who, role in rows:
        by_task.setdefault(key, []).append((who, role))
    for i in range(15, 20):  # the five longest
        annot = [w for w, r in by_task[f"e{i}"] if r == "annotate"]
        adj = [w for w, r in by_task[f"e{i}"] if r == "adjudicate"]
        assert len(set(annot)) == 3 and len(adj) == 1 and adj[0] not in annot
    assert all(len(by_task[f"e{i}"]) == 1 for i in range(15))
    load = {}
    for _, who, _ in rows:
        load[who] = load.get(who, 0) + 1
    assert max(load.values()) - min(load.values()) <= 1
    with pytest.raises(ValueError, match="only 2"):
        T.plan(tasks, ["a", "b"], k_long=3)


def test_release_tasks_from_real_data(shared_rel):
    ext = T.release_extraction_tasks(shared_rel, "human")
    assert len(ext) == 40
    n_spans = 0
    for t in ext:
        text = t["payload"]["text"]
        for values in t["payload"]["prefill"].values():
            for v in values:
                for ev in v["evidence"]:
                    assert ev["start"] is not None  # human.json carries offsets for all evidence
                    assert text[ev["start"]:ev["end"]] == ev["text"]
                    n_spans += 1
    assert n_spans > 1000
    pairs = T.release_value_pairs(shared_rel)
    single = [p for p in pairs if len(p["a"]) == 1 and len(p["b"]) == 1]
    assert len(single) >= 50 and len(pairs) - len(single) >= 100
    assert all("relation" in p["judge"] for p in single)
    tasks = T.release_tasks(shared_rel)
    kinds = [t["kind"] for t in tasks]
    assert (kinds.count("extraction"), kinds.count("comparison"), kinds.count("style")) == (40, 150, 25)
    style = [t for t in tasks if t["kind"] == "style"]
    assert {tuple(t["payload"]["order"]) for t in style} == {("model", "human"), ("human", "model")}


def _client_login(app, user, password):
    import re

    c = app.test_client()
    tok = re.search(r'name="csrf_token" value="([^"]+)"', c.get("/login").text).group(1)
    assert c.post("/login", data={"username": user, "password": password, "csrf_token": tok}).status_code == 302
    return c


def test_adjudicator_sees_the_others_and_only_admins_export(tmp_path):
    import json as _json
    import re

    from gavel.annotation.app import create_app

    url = f"sqlite:///{tmp_path / 'a.db'}"
    store = Store(url)
    pair = {"case_id": "1", "item": "filing_date", "a": ["May 1"], "b": ["May 1, 2024"], "origin": "t"}
    store.add_tasks(T.comparison_tasks([pair], "t"))
    for u in ("a1", "a2", "a3", "adj"):
        store.add_user(u, "password-" + u)
    store.add_user("boss", "password-boss", is_admin=True)
    key = "comparison:t:1:filing_date"
    rows = T.plan([{"key": key, "kind": "extraction", "payload": {"words": 9}}], ["a1", "a2", "a3"], k_long=3,
                  n_long=1, adjudicators=["adj"])
    assert sorted(r[2] for r in rows) == ["adjudicate", "annotate", "annotate", "annotate"]
    store.assign(rows)
    app = create_app(url, secret_key_file=tmp_path / "key")
    ids = {}
    for u, label in (("a1", "equal"), ("a2", "b_contains_a"), ("a3", "b_contains_a")):
        c = _client_login(app, u, "password-" + u)
        aid = int(re.search(r'href="/a/(\d+)"', c.get("/").text).group(1))
        ids[u] = aid
        page = c.get(f"/a/{aid}").text
        assert "Other annotators" not in page  # an annotator does not see the others
        tok = re.search(r'name="csrf-token" content="([^"]+)"', page).group(1)
        r = c.post(f"/a/{aid}/save", data={"csrf_token": tok, "field": "label", "value": _json.dumps(label), "base": "0"},
                   headers={"X-Requested-With": "fetch"})
        assert r.json == {"saved": True, "field": "label", "revision": 1}
    adj = _client_login(app, "adj", "password-adj")
    aid = int(re.search(r'href="/a/(\d+)"', adj.get("/").text).group(1))
    page = adj.get(f"/a/{aid}").text
    assert "Other annotators" in page and "a1" in page and "b_contains_a" in page
    assert adj.get("/admin").status_code == 403 and adj.get("/admin/export.jsonl").status_code == 403
    boss = _client_login(app, "boss", "password-boss")
    assert boss.get("/admin").status_code == 200
    exported = [_json.loads(line) for line in boss.get("/admin/export.jsonl").text.splitlines()]
    assert sorted((r["annotator"], r["value"]) for r in exported) == \
        [("a1", "equal"), ("a2", "b_contains_a"), ("a3", "b_contains_a")]
    assert boss.get("/admin/export.csv").text.startswith("task,kind,case_id,annotator")


def test_cli_loads_assigns_and_exports(shared_rel, tmp_path, monkeypatch, capsys):
    from gavel.cli import main as gavel_main

    def main(argv):
        return gavel_main(["annotate", *argv])

    db = str(tmp_path / "cli.db")
    assert main(["--db", db, "load-release", "--release", str(shared_rel.root)]) == 0
    assert "215 tasks added" in capsys.readouterr().out
    assert main(["--db", db, "load-release", "--release", str(shared_rel.root)]) == 0  # loading twice adds nothing
    assert "0 tasks added" in capsys.readouterr().out
    for name in ("a", "b", "c", "lead"):
        monkeypatch.setenv("GAVEL_ANNOTATOR_PASSWORD", f"password-{name}")
        assert main(["--db", db, "adduser", name] + (["--admin"] if name == "lead" else [])) == 0
    assert main(["--db", db, "assign", "a", "b", "c", "--adjudicator", "lead"]) == 0
    # 215 tasks once, the 10 longest reviews twice more, and an adjudicator for each of those 10
    assert "245 assignments added" in capsys.readouterr().out.splitlines()[-1]
    store = Store(f"sqlite:///{db}")
    assert store.export_rows() == []
    assert main(["--db", db, "export-tasks", str(tmp_path / "tasks.jsonl")]) == 0
    from gavel.metrics import metaeval

    tasks = metaeval.read_tasks(tmp_path / "tasks.jsonl")
    assert len(tasks) == 215 and len(metaeval.judge_answers(tasks)) == 150


# --- hardening (issue 20, points 6, 8, 10) -------------------------------------------------------------------

def _csrf_of(client, path="/login"):
    import re

    page = client.get(path).text
    return re.search(r'name="csrf[-_]token" (?:content|value)="([^"]+)"', page).group(1)


def _post_login(client, user, password):
    return client.post("/login", data={"username": user, "password": password, "csrf_token": _csrf_of(client)})


def _hardening_app(store, tmp_path, **limits):
    """An app on ``store`` with alice and bob, each assigned the same single-value pair, a multi-value pair, a
    style pair and a small extraction review; bob is an admin."""
    import pandas as pd

    from gavel.annotation.app import create_app

    single = {"case_id": "1", "item": "filing_date", "a": ["May 1"], "b": ["May 1, 2024"], "origin": "t"}
    multi = {"case_id": "2", "item": "judge_name", "a": ["X", "Y"], "b": ["X", "Z"], "origin": "t"}
    ext = T.extraction_tasks(pd.DataFrame([{"case_id": "3", "text": "one two three four", "model": "human"}]),
                             None, "t")
    style = T.style_tasks([{"case_id": "4", "model": "m", "model_text": "a b", "human_text": "c d"}], "t")
    tasks = T.comparison_tasks([single, multi], "t") + ext + style
    store.add_tasks(tasks)
    store.add_user("alice", "alice-password")
    store.add_user("bob", "bob-password", is_admin=True)
    store.assign([(t["key"], u, "annotate") for t in tasks for u in ("alice", "bob")])
    app = create_app(store.url, secret_key_file=tmp_path / "key", **limits)
    keys = {"single": tasks[0]["key"], "multi": tasks[1]["key"], "extraction": tasks[2]["key"],
            "style": tasks[3]["key"]}
    return app, keys


def _aid(store, task_key, username):
    from sqlalchemy import select

    from gavel.annotation.db import Assignment, User

    with store.sessions() as s:
        return s.scalar(select(Assignment.id).join(Task, Assignment.task_id == Task.id)
                        .join(User, Assignment.user_id == User.id)
                        .where(Task.key == task_key, User.username == username))


def test_every_bad_save_is_one_clear_400_on_both_databases(store, tmp_path):
    """Point 8: malformed values, booleans as numbers, over-long tokens, NUL bytes: a 400 naming the problem,
    nothing stored, the same on SQLite and PostgreSQL; another user's token is refused, not answered 'saved'."""
    app, keys = _hardening_app(store, tmp_path)
    alice = _client_login(app, "alice", "alice-password")
    ids = {k: _aid(store, key, "alice") for k, key in keys.items()}
    tok = _csrf_of(alice, f"/a/{ids['single']}")
    good_item = '[{"value": "v", "evidence": [{"start": 0, "end": 3}]}]'
    bad = [  # (task, form fields, words the error must hold)
        ("single", {"field": "label", "value": "[" * 100_000}, "nested too deeply"),
        ("single", {"field": "label", "value": '["equal"]'}, "label"),
        ("single", {"field": "label", "value": '{"x": 1}'}, "label"),
        ("single", {"field": "label\x00", "value": '"equal"'}, "label"),
        ("single", {"field": "label", "value": '"equal"', "token": "t" * 65}, "token"),
        ("single", {"field": "label", "value": '"equal"', "token": "ab\x00cd"}, "token"),
        ("single", {"field": "label", "value": '"equal"', "base": "one"}, "base"),
        ("single", {"field": "label", "value": '"equal"', "base": "-1"}, "base"),
        ("single", {"field": "label"}, "nothing chosen"),
        ("single", {"field": "label", "value": "{not json"}, "not JSON"),
        ("multi", {"field": "matches", "value": "[[true, 1]]"}, "matches"),
        ("multi", {"field": "matches", "value": "[[1.0, 1]]"}, "matches"),
        ("style", {"field": "aspect:narrative_order", "value": "true"}, "whole number"),
        ("style", {"field": "aspect:narrative_order", "value": "4.0"}, "whole number"),
        ("style", {"field": "preference", "value": '["A"]'}, "preference"),
        ("extraction", {"field": "item:filing_date", "value": '[{"value": "v", "evidence": null}]'}, "evidence"),
        ("extraction", {"field": "item:filing_date", "value": '[{"value": "v", "evidence": "0-3"}]'}, "evidence"),
        ("extraction", {"field": "item:filing_date", "value": '[{"value": "v", "evidence": [null]}]'}, "evidence 1"),
        ("extraction", {"field": "item:filing_date",
                        "value": '[{"value": "v", "evidence": [{"start": true, "end": 3}]}]'}, "span"),
        ("extraction", {"field": "item:filing_date",
                        "value": '[{"value": "v", "evidence": [{"start": 0, "end": 99}]}]'}, "span"),
        ("extraction", {"field": "item:filing_date", "value": '[{"value": "a\\u0000b", "evidence": []}]'}, "NUL"),
        ("extraction", {"field": "item:filing_date",
                        "value": '[{"value": "v", "evidence": [{"start": null, "end": null, "text": "\\u0000"}]}]'},
         "NUL"),
        ("extraction", {"field": "item:filing_date", "value": '[{"value": ["v"], "evidence": []}]'}, "value 1"),
        ("extraction", {"field": "item:filing_date", "value": '[{"value": "v", "extra": 1}]'}, "unknown keys"),
        ("extraction", {"field": "item:filing_date", "value": '{"value": "v"}'}, "list of values"),
        ("extraction", {"field": "item:filing_date", "value": good_item, "token": "x" * 65}, "token"),
    ]
    for kind, form, words in bad:
        r = alice.post(f"/a/{ids[kind]}/save", data={"csrf_token": tok, "base": "0", **form}, headers={"X-Requested-With": "fetch"})
        assert r.status_code == 400, (kind, form.get("field"), r.status_code, r.text[:300])
        assert r.json["saved"] is False and words in r.json["error"], (kind, r.json)
    # the same without the fetch header (a plain form post): a redirect back with the message, never a 500
    r = alice.post(f"/a/{ids['single']}/save", data={"csrf_token": tok, "field": "label", "value": "[" * 100_000, "base": "0"})
    assert r.status_code == 302
    with store.sessions() as s:
        assert s.query(Revision).count() == 0 and s.query(Answer).count() == 0
    # a good save still works, the longest token included
    r = alice.post(f"/a/{ids['extraction']}/save", data={"csrf_token": tok, "field": "item:filing_date",
                                                        "value": good_item, "token": "t" * 64, "base": "0"},
                   headers={"X-Requested-With": "fetch"})
    assert r.json == {"saved": True, "field": "item:filing_date", "revision": 1}
    assert store.answers(ids["extraction"])["item:filing_date"][0]["evidence"][0]["text"] == "one"

    # bob's save with alice's token: refused (409, says why), nothing stored for bob, alice's answer intact
    r = alice.post(f"/a/{ids['single']}/save", data={"csrf_token": tok, "field": "label", "value": '"equal"',
                                                    "token": "alice-token-1", "base": "0"}, headers={"X-Requested-With": "fetch"})
    assert r.json["saved"] is True
    bob = _client_login(app, "bob", "bob-password")
    bob_single = _aid(store, keys["single"], "bob")
    btok = _csrf_of(bob, f"/a/{bob_single}")
    r = bob.post(f"/a/{bob_single}/save", data={"csrf_token": btok, "field": "label", "value": '"different"',
                                               "token": "alice-token-1", "base": "0"}, headers={"X-Requested-With": "fetch"})
    assert r.status_code == 409 and r.json["saved"] is False and "token" in r.json["error"]
    assert store.answers(bob_single) == {} and store.answers(ids["single"]) == {"label": "equal"}
    # alice resending her own save is still answered from the first one
    r = alice.post(f"/a/{ids['single']}/save", data={"csrf_token": tok, "field": "label", "value": '"equal"',
                                                    "token": "alice-token-1", "base": "0"}, headers={"X-Requested-With": "fetch"})
    assert r.json == {"saved": True, "field": "label", "revision": 1}

    # user names the database cannot hold (81 characters, NUL) are a refused login or a refused account
    anon = app.test_client()
    for name in ("u" * 81, "al\x00ice", "alice\n"):
        assert _post_login(anon, name, "alice-password").status_code == 401
    for name in ("u" * 81, "bad\x00name", "two words"):
        r = bob.post("/admin", data={"csrf_token": _csrf_of(bob, "/admin"), "username": name,
                                     "password": "long-enough-password"}, follow_redirects=True)
        assert r.status_code == 200 and "Not added: a user name is 1-80" in r.text
    with store.sessions() as s:
        from gavel.annotation.db import User

        assert s.query(User).count() == 2


def test_weak_passwords_are_refused(store, tmp_path, monkeypatch):
    """Point 10: a password of a few characters (or the user name) is refused by the store, the admin page
    and the command line."""
    from gavel.cli import main as gavel_main

    def main(argv):
        return gavel_main(["annotate", *argv])

    for pw in ("x", "p", "short-pw", "", "weakling01"):
        with pytest.raises(ValueError, match="password"):
            store.add_user("weakling01", pw)
    app, _ = _hardening_app(store, tmp_path)
    bob = _client_login(app, "bob", "bob-password")
    r = bob.post("/admin", data={"csrf_token": _csrf_of(bob, "/admin"), "username": "x", "password": "p"},
                 follow_redirects=True)
    assert "Not added: a password needs at least 10 characters" in r.text
    assert store.user("x") is None
    monkeypatch.setenv("GAVEL_ANNOTATOR_PASSWORD", "p")
    with pytest.raises(SystemExit, match="at least 10"):
        main(["--db", store.url, "adduser", "x"])
    assert store.user("x") is None
    with pytest.raises(SystemExit, match="at least 10"):
        main(["--db", store.url, "passwd", "alice"])


def test_password_guessing_waits_but_the_owner_still_logs_in(store, tmp_path, monkeypatch):
    """Issue 27 (4): failures make further tries from the same account and address wait (never a lockout of
    the owner): another address, or the owner's own browser behind the attacker's address, logs in with the
    right password; failures spread over many addresses slow unknown browsers only; concurrent failures cannot
    slip past the count; the counts live in the database (a new app on it still makes the attacker wait);
    the password-change form is limited the same way. The guard's clock stands still here: no wait runs out
    while the test runs, however slow the machine."""
    import threading
    from datetime import datetime

    from gavel.annotation import guard
    from gavel.annotation.app import create_app
    from gavel.annotation.db import LoginGuard
    from gavel.annotation.guard import wait_after

    monkeypatch.setattr(guard, "now", lambda: datetime(2026, 1, 1, 12, 0, 0))
    app, _ = _hardening_app(store, tmp_path, login_limit_account=3, login_limit_address=6)

    def client(addr):
        c = app.test_client()
        c.environ_base["REMOTE_ADDR"] = addr
        return c

    owner = client("10.0.9.9")  # alice's own browser: known once it has logged in
    assert _post_login(owner, "alice", "alice-password").status_code == 302
    owner.post("/logout", data={"csrf_token": _csrf_of(owner, "/")})

    attacker = client("10.0.0.1")
    for _ in range(3):
        assert _post_login(attacker, "alice", "wrong-password").status_code == 401
    r = _post_login(attacker, "alice", "alice-password")  # the right password too: it must wait
    assert r.status_code == 429 and "wait" in r.text
    assert attacker.get("/").status_code == 302  # not logged in
    assert _post_login(client("10.0.0.2"), "alice", "alice-password").status_code == 302  # another address
    with store.sessions() as s:  # the waits double: 1 s after the allowance, then 2, 4 ...
        row = next(r for r in s.query(LoginGuard) if r.key.startswith("p:") and r.key.endswith(":10.0.0.1"))
        assert row.failures == 3 and (row.next_at - row.updated_at).total_seconds() == wait_after(3, 3) == 1
    assert [wait_after(n, 3) for n in (2, 3, 4, 5)] == [0, 1, 2, 4]

    # failures for alice from many addresses: a guesser's second try waits; alice's own browser logs in, and
    # so does her first try from a new browser at a new address (issue 38: nobody else's guesses hold it)
    for i in range(12):
        _post_login(client(f"10.0.1.{i}"), "alice", "wrong-password")
    assert _post_login(client("10.0.1.0"), "alice", "alice-password").status_code == 429
    assert _post_login(client("10.0.2.1"), "alice", "alice-password").status_code == 302
    assert _post_login(owner, "alice", "alice-password").status_code == 302
    # failures at many accounts from one address (a shared NAT): the guesser's next try waits, but bob's
    # first login from a new browser behind it does not (issue 38), nor does alice's known browser
    nat = client("10.0.9.9")
    for name in ("carol", "dave", "erin", "frank", "gina", "hank"):
        assert _post_login(nat, name, "wrong-password").status_code == 401
    assert _post_login(nat, "carol", "wrong-password").status_code == 429
    assert _post_login(client("10.0.9.9"), "bob", "bob-password").status_code == 302
    owner.post("/logout", data={"csrf_token": _csrf_of(owner, "/")})
    assert _post_login(owner, "alice", "alice-password").status_code == 302

    # twenty concurrent wrong tries from a fresh address: no more than the allowance (3) are tried
    codes = []
    gate = threading.Barrier(20)

    def guess():
        c = client("10.0.5.5")
        tok = _csrf_of(c)
        gate.wait()
        codes.append(c.post("/login", data={"username": "bob", "password": "wrong-password",
                                            "csrf_token": tok}).status_code)
    threads = [threading.Thread(target=guess) for _ in range(20)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert codes.count(401) <= 3 and codes.count(401) + codes.count(429) == 20, codes

    # the counts are in the database: a new app (a restart) still makes the attacker wait
    app2 = create_app(store.url, secret_key_file=tmp_path / "key", login_limit_account=3, login_limit_address=6)
    c = app2.test_client()
    c.environ_base["REMOTE_ADDR"] = "10.0.0.1"
    assert _post_login(c, "alice", "alice-password").status_code == 429
    # once the wait is over the right password works again (no lockout), and clears the count
    monkeypatch.setattr(guard, "now", lambda: datetime(2026, 1, 1, 12, 16, 0))
    assert _post_login(c, "alice", "alice-password").status_code == 302

    # a stolen session guessing the current password on the change form waits too
    thief = _client_login(app, "bob", "bob-password")
    for i in range(3):
        r = thief.post("/password", data={"csrf_token": _csrf_of(thief, "/password"), "current": f"guess-{i}",
                                          "new": "a-new-password-1", "repeat": "a-new-password-1"})
        assert r.status_code == 400 and "current password is wrong" in r.text
    r = thief.post("/password", data={"csrf_token": _csrf_of(thief, "/password"), "current": "bob-password",
                                      "new": "a-new-password-1", "repeat": "a-new-password-1"})
    assert r.status_code == 429
    assert _post_login(client("10.0.7.7"), "bob", "bob-password").status_code == 302  # unchanged


def test_every_save_carries_its_base_and_a_beacon_never_overwrites_a_newer_answer(store, tmp_path):
    """Issue 27 (4): a save without the revision it edited (what the page-close beacon sent) is refused; a
    beacon based on an older revision is kept in the history, not made current; one based on the page's own
    save still under way applies whether it arrives after that save or before it."""
    from gavel.annotation.db import Revision

    app, keys = _hardening_app(store, tmp_path)
    alice = _client_login(app, "alice", "alice-password")
    aid = _aid(store, keys["single"], "alice")
    tok = _csrf_of(alice, f"/a/{aid}")

    def save(value, token, base=None, after=None):
        data = {"csrf_token": tok, "field": "label", "value": f'"{value}"', "token": token}
        data.update({k: v for k, v in (("base", base), ("after", after)) if v is not None})
        return alice.post(f"/a/{aid}/save", data=data, headers={"X-Requested-With": "fetch"})

    assert save("equal", "t1", base="0").json["revision"] == 1
    assert save("different", "t2", base="1").json["revision"] == 2  # another tab's newer answer
    r = save("a_contains_b", "beacon-1")  # no base: refused, nothing stored
    assert r.status_code == 400 and "base" in r.json["error"]
    r = save("a_contains_b", "beacon-2", base="0", after="t1")  # based on revision 1, which is no longer current
    assert r.status_code == 409 and r.json["conflict"] is True
    assert store.answers(aid)["label"] == "different"
    # the page's own save (t3, based on 2) is under way when the page closes; its beacon says so
    assert save("b_contains_a", "t3", base="2").json["revision"] == 4  # (3: the stale beacon, kept)
    assert save("equal", "beacon-3", base="2", after="t3").json["saved"] is True  # arrives after t3
    assert store.answers(aid)["label"] == "equal"
    assert save("different", "beacon-4", base="5", after="t5").json["saved"] is True  # arrives before t5 ...
    assert save("b_contains_a", "t5", base="5").status_code == 409  # ... which then is the stale one
    assert store.answers(aid)["label"] == "different"
    with store.sessions() as s:
        assert s.query(Revision).filter_by(client_token="beacon-1").count() == 0
        assert s.query(Revision).filter_by(client_token="beacon-2").one().stale


def test_the_history_of_an_answer_is_bounded(store):
    """Issue 27 (4): saving one field again and again keeps the newest MAX_REVISIONS revisions (the current
    one always), so an annotator cannot grow the database without bound; numbering goes on."""
    from gavel.annotation.db import MAX_REVISIONS, Revision

    aid, uid = _one_task(store)
    for i in range(MAX_REVISIONS + 15):
        result = store.save(aid, uid, "label", ["equal", "different"][i % 2], base_revision=i)
    assert result.revision == MAX_REVISIONS + 15 and not result.stale
    with store.sessions() as s:
        kept = sorted(r for (r,) in s.query(Revision.revision))
    assert kept == list(range(16, MAX_REVISIONS + 16))
    # a stale save far behind keeps the current revision even when it is the oldest one
    for _ in range(MAX_REVISIONS + 5):
        assert store.save(aid, uid, "label", "equal", base_revision=0).stale
    with store.sessions() as s:
        kept = sorted(r for (r,) in s.query(Revision.revision))
    assert len(kept) <= MAX_REVISIONS + 1 and MAX_REVISIONS + 15 in kept


def test_exports_neutralise_formula_cells_and_keep_numbers(store, tmp_path):
    """Issue 27 (4): user names such as ``+A1`` and values starting with = + - @ (or a tab or CR) reach a
    spreadsheet as text; numbers, including negative ones, are written as they are. The exports stream."""
    import csv as _csv
    import io as _io

    from gavel.annotation.app import export_csv_lines
    from gavel.core.spreadsheet import safe_cell

    assert [safe_cell(v) for v in ("=1+1", "+A1", "-cmd", "@SUM(A1)", "\tx", "\rx", "-3", "+0.5", "-1e-3", 7, -2.5,
                                   None, "plain")] == [
        "'=1+1", "'+A1", "'-cmd", "'@SUM(A1)", "'\tx", "'\rx", "-3", "+0.5", "-1e-3", 7, -2.5, None, "plain"]
    store.add_user("+A1", "plus-password-1")
    aid, _ = _one_task(store)
    store.assign([(store.task_rows()[0]["task"], "+A1", "annotate")])
    with store.sessions() as s:
        from sqlalchemy import select

        from gavel.annotation.db import Assignment, User
        plus = s.scalar(select(Assignment.id).join(User, Assignment.user_id == User.id).where(User.username == "+A1"))
    store.save(plus, store.user("+A1").id, "label", "equal")
    lines = export_csv_lines(store.iter_export_rows())
    assert not isinstance(lines, (list, str))  # a generator: the web and CLI exports stream it
    rows = list(_csv.DictReader(_io.StringIO("".join(lines))))
    assert [r["annotator"] for r in rows] == ["'+A1"]
    assert rows[0]["revision"] == "1" and rows[0]["value"] == '"equal"'
    app, _ = _hardening_app(store, tmp_path)
    bob = _client_login(app, "bob", "bob-password")
    r = bob.get("/admin/export.csv")
    assert r.is_streamed and "'+A1" in r.text and ",+A1," not in r.text


def test_assign_takes_the_names_the_admin_form_takes_and_bad_input_is_one_error_line(tmp_path, capsys):
    """Issue 27 (4) / 28: ``annotate assign`` accepts every name the admin form accepts (``+A1``, ``-bob``
    after ``--``, ``é.b@c``), and bad input (unknown names, names the form refuses, fewer annotators than
    --k or --k-long, negative counts) is one ``error:`` line, never a traceback; the README's flags work."""
    import pandas as pd

    from gavel.cli import main as gavel_main

    db = f"sqlite:///{tmp_path / 'a.db'}"
    store = Store(db)
    names = ["+A1", "-bob", "é.b@c", "lead"]
    for n in names:
        store.add_user(n, f"{n}-password-long")
    ext = T.extraction_tasks(pd.DataFrame([{"case_id": "3", "text": "one two three", "model": "human"}]), None, "t")
    single = {"case_id": "1", "item": "filing_date", "a": ["May 1"], "b": ["May 1, 2024"], "origin": "t"}
    store.add_tasks(ext + T.comparison_tasks([single], "t"))

    def run(*argv):
        capsys.readouterr()
        try:
            code = gavel_main(["annotate", "--db", db, "assign", *argv])
        except SystemExit as stop:  # a value the option's type refuses: argparse's one error line
            code = stop.code
        return code, capsys.readouterr()

    for argv, words in [(("ann1", "ann2"), "no user 'ann1'"),
                        (("+A1", "--k", "2"), "--k 2"),
                        (("+A1", "é.b@c", "--k-long", "3"), "3 annotators wanted"),
                        (("+A1", "--n-long", "-1"), "--n-long: must be a whole number >= 0"),
                        (("+A1", "--k", "0"), "--k: must be a whole number >= 1"),
                        (("+A1", "two words"), "a user name is"),
                        (("+A1", "--adjudicator", "nobody"), "no user 'nobody'")]:
        code, out = run(*argv)
        assert code == 2 and out.err.startswith("error: ") and out.err.count("\n") == 1, (argv, out)
        assert words in out.err and "Traceback" not in out.err, (argv, out.err)
    assert store.assign([]) == 0 and not store.export_rows()
    code, out = run("--k", "1", "--k-long", "2", "--n-long", "1", "--adjudicator=lead", "--", "+A1", "é.b@c", "-bob")
    assert code == 0 and "assignments added" in out.out, out
    with store.sessions() as s:
        from sqlalchemy import select

        from gavel.annotation.db import Assignment, User
        who = {u for (u,) in s.execute(select(User.username).join(Assignment, Assignment.user_id == User.id))}
    assert who == {"+A1", "é.b@c", "-bob", "lead"}
    store.engine.dispose()


def test_what_one_annotator_and_one_task_store_is_bounded(tmp_path):
    """Issue 38 (3): the revision cap was per field, so 8 fields x 50 revisions of a big value added up. Now
    the revisions of one annotator, and of one task, hold a bounded number of characters in all: the oldest
    ones that are not current go first; the current answers and the newest save are always kept; a save
    that would still leave the bound exceeded is refused and stores nothing."""
    from gavel.annotation.db import Assignment, QuotaExceeded

    store = Store(f"sqlite:///{tmp_path / 'a.db'}", max_user_chars=100_000, max_task_chars=40_000)
    pairs = [{"case_id": str(c), "item": "filing_date", "a": ["x"], "b": ["y"], "origin": "t"} for c in (1, 2)]
    store.add_tasks(T.comparison_tasks(pairs, "t"))
    store.add_user("ann", "ann-password")
    store.assign([(f"comparison:t:{c}:filing_date", "ann", "annotate") for c in (1, 2)])
    big = ["a" * 4_000 + str(i) for i in range(8)]

    def used(where):
        with store.sessions() as s:
            revs = s.query(Revision).join(Answer).join(Assignment).filter(where).all()
            return sum(len(r.value) for r in revs), revs

    for i in range(30):  # 8 fields, 30 saves each: ~1 MB per task without a bound
        for f in range(8):
            for aid in (1, 2):
                store.save(aid, 1, f"f{f}", big[(i + f) % 8] + str(i), base_revision=i)
        total, _ = used(Assignment.user_id == 1)
        assert total <= 100_000 + 5_000
        for aid in (1, 2):
            assert used(Assignment.task_id == aid)[0] <= 40_000 + 5_000
    for aid in (1, 2):  # every current answer is kept, and is the newest save
        assert store.answers(aid) == {f"f{f}": big[(29 + f) % 8] + "29" for f in range(8)}
        _, revs = used(Assignment.id == aid)
        assert {r.revision for r in revs} >= {30}
    with store.sessions() as s:  # the running count matches what is stored
        for asg in s.query(Assignment):
            assert asg.stored == used(Assignment.id == asg.id)[0]
    with pytest.raises(QuotaExceeded, match="more than 40,000 characters"):
        store.save(1, 1, "f9", "b" * 9_000, base_revision=0)
    assert "f9" not in store.answers(1)


def test_guesses_behind_a_shared_address_never_hold_an_owners_first_login(tmp_path, monkeypatch):
    """Issue 38 (3): failures from one address (a NAT, the README's reverse proxy) made the first login of
    every new browser behind it wait up to 15 minutes, kept there by one failure per 15 minutes. Now the
    address's count holds the guesser, never an owner's first try with the right password; and made-up names
    do not grow login_guard without bound."""
    from datetime import datetime, timedelta

    from gavel.annotation import guard
    from gavel.annotation.db import LoginGuard

    clock = [datetime(2026, 1, 1, 12, 0, 0)]
    monkeypatch.setattr(guard, "now", lambda: clock[0])
    store = Store(f"sqlite:///{tmp_path / 'a.db'}")
    app, _ = _hardening_app(store, tmp_path, login_limit_account=3, login_limit_address=6)

    def client():
        c = app.test_client()
        c.environ_base["REMOTE_ADDR"] = "10.9.9.9"  # everyone behind one proxy
        return c

    guesser = client()
    for i in range(30):  # guesses at many made-up names, then one per 15 minutes
        _post_login(guesser, f"nobody{i}", "wrong-password")
    for _ in range(4):
        clock[0] += timedelta(minutes=15)
        assert _post_login(guesser, "someone", "wrong-password").status_code in (401, 429)
        assert _post_login(guesser, "someone", "wrong-password").status_code == 429  # held
        assert _post_login(client(), "alice", "alice-password").status_code == 302  # a new browser
        assert _post_login(client(), "bob", "bob-password").status_code == 302
    # the bound of login_guard: made-up names add rows on every try, the table keeps at most MAX_ROWS
    monkeypatch.setattr(guard, "MAX_ROWS", 40, raising=False)
    for i in range(100):
        clock[0] += timedelta(minutes=15)
        _post_login(guesser, f"made-up-{i}", "wrong-password")
    with store.sessions() as s:
        assert s.query(LoginGuard).count() <= 41
        assert s.get(LoginGuard, "i:10.9.9.9").failures > 30  # the guesser's own count is kept


def test_the_agreement_table_is_recomputed_at_most_once_per_interval_while_saves_arrive(tmp_path):
    """Issue 38 (2): with admins reloading the agreement page back to back while saves keep arriving, the
    table was recomputed back to back in the server's process, and saves slowed 11-13x. Now a computation
    starts at most once per interval (its duration over the duty, at least min_interval_s); loads in between
    get the last table, marked as not current; once saves stop, the next load gets a current table."""
    import time

    from gavel.annotation.agreement_cache import AgreementCache

    store = Store(f"sqlite:///{tmp_path / 'a.db'}")
    aid, uid = _one_task(store)

    def compute():
        time.sleep(0.05)
        return "table"

    cache = AgreementCache(store, compute, wait_s=0.2, duty=0.05, min_interval_s=1.0)
    assert cache.get().current and cache.computations == 1  # the first load: computed at once
    stop = threading.Event()

    def reload_back_to_back():
        while not stop.is_set():
            cache.get()

    admins = [threading.Thread(target=reload_back_to_back) for _ in range(8)]
    for t in admins:
        t.start()
    t0 = time.monotonic()
    i = 0
    while time.monotonic() - t0 < 2.5:  # saves keep arriving for 2.5 s
        i += 1
        store.save(aid, uid, "label", ["equal", "different"][i % 2], base_revision=None)
        time.sleep(0.02)
    stop.set()
    for t in admins:
        t.join()
    assert i >= 3  # saves kept changing the data
    # one computation per second at most (1 + 2.5 s of saves: 4; back to back it was ~40)
    assert cache.computations <= 5, cache.computations
    time.sleep(1.1)
    # saves stopped: a load gets a current table. The first may still see the last one (a busy machine can
    # stretch the computation past wait_s), so loads go on until one is current, within a bound that only a
    # cache that never recomputes would reach
    deadline = time.monotonic() + 60
    while not cache.get().current:
        assert time.monotonic() < deadline, "no current table 60 s after the saves stopped"
        time.sleep(0.1)


def test_serve_sets_the_agreement_tables_longest_pause(tmp_path):
    """``serve --agreement-max-interval SECONDS`` (the browser tests set 0.5 s so as not to wait out the pause)
    bounds the pause after even a slow computation; unset, the pause is at most 10 s."""
    import time

    from gavel.annotation.agreement_cache import MAX_INTERVAL_S
    from gavel.annotation.app import create_app

    url = f"sqlite:///{tmp_path / 'a.db'}"
    for given, bound in ((None, 10.0), (0.5, 0.5)):
        app = create_app(url, secret_key_file=tmp_path / "key", agreement_max_interval=given)
        cache = app.extensions["gavel_agreement"]
        assert cache.max_interval_s == (given or MAX_INTERVAL_S) == bound
        before = time.monotonic()
        cache._pause(30.0)  # a 30 s computation: 570 s at 5% duty, held to the bound
        assert before + bound - 0.001 <= cache._next_start <= time.monotonic() + bound
        app.extensions["gavel_worker"].close()


@pytest.mark.parametrize("scope", ["annotator", "task"])
def test_quotas_hold_under_eight_simultaneous_saves(store, scope):
    """Issue 46 (4): on PostgreSQL, 8 simultaneous saves by one annotator across 8 tasks stored 1.8x the
    per-annotator quota (each save summed the others' sizes before they committed; SQLite held). Now a save
    locks the assignments it counts, in one fixed order. 8 saves of 9,992 characters each against a quota of
    30,000 (no history to clear): exactly 3 are stored, 5 refused, on both databases; per annotator (one
    annotator, 8 tasks) and per task (8 annotators, one task)."""
    from gavel.annotation.db import Assignment, QuotaExceeded

    people = ["ann"] if scope == "annotator" else [f"p{i}" for i in range(8)]
    cases = range(8) if scope == "annotator" else [0]
    pairs = [{"case_id": str(c), "item": "filing_date", "a": ["x"], "b": ["y"], "origin": "t"} for c in cases]
    store.add_tasks(T.comparison_tasks(pairs, "t"))
    for p in people:
        store.add_user(p, f"{p}-password-1")
    store.assign([(f"comparison:t:{c}:filing_date", p, "annotate") for c in cases for p in people])
    if scope == "annotator":
        store.max_user_chars = 30_000
    else:
        store.max_task_chars = 30_000
    with store.sessions() as s:
        saves = [(a.id, a.user_id) for a in s.query(Assignment).order_by(Assignment.id)]
    assert len(saves) == 8
    gate, outcomes = threading.Barrier(8), []

    def save(aid, uid):
        gate.wait()
        try:
            store.save(aid, uid, "note", "a" * 9_990)
            outcomes.append("stored")
        except QuotaExceeded:
            outcomes.append("refused")
        except Exception as err:  # noqa: BLE001 - asserted below
            outcomes.append(repr(err))

    threads = [threading.Thread(target=save, args=pair) for pair in saves]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(outcomes) == ["refused"] * 5 + ["stored"] * 3
    with store.sessions() as s:
        assert sum(a.stored for a in s.query(Assignment)) == 3 * 9_992
        assert s.query(Revision).count() == s.query(Answer).count() == 3
