"""Storage, validation, loading and planning of the annotation app, without a browser."""

from __future__ import annotations

import threading
import uuid

import pytest

pytest.importorskip("sqlalchemy", reason="annotation tests need the annotation extra")

from gavel.annotation import tasks as T  # noqa: E402
from gavel.annotation.app import BadAnswer, export_csv_text, validate  # noqa: E402
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
    assert export_csv_text(rows).splitlines()[0].startswith("task,kind,case_id,annotator,role")


def test_passwords_are_argon2_hashes(store):
    user = store.add_user("x", "secret-pass")
    assert user.password_hash.startswith("$argon2id$") and "secret" not in user.password_hash
    assert verify_password(user.password_hash, "secret-pass")
    assert not verify_password(user.password_hash, "Secret-pass")
    assert not verify_password(None, "secret-pass")
    with pytest.raises(ValueError, match="exists"):
        store.add_user("x", "other-password")


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
        r = c.post(f"/a/{aid}/save", data={"csrf_token": tok, "field": "label", "value": _json.dumps(label)},
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
    from gavel.annotation.cli import main

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
    from gavel import metaeval

    tasks = metaeval.read_tasks(tmp_path / "tasks.jsonl")
    assert len(tasks) == 215 and len(metaeval.judge_answers(tasks)) == 150
