"""The annotation app in a real browser (Debian's chromium driven by Playwright), against the real server
process, on SQLite and on a PostgreSQL server the tests start. Tasks come from the release (a human summary
with its human.json checklist and evidence offsets, released value pairs, a model/human style pair) plus two
hostile tasks whose texts hold <script> and HTML."""

from __future__ import annotations

import json
import os
import uuid

import pytest
from annotation_server import AppServer
from needs import need_module

from gavel.core import config

need_module("playwright", "browser tests need the playwright package (annotation extra)")

PASSWORDS = {"alice": "alice-pw-7", "bob": "bob-pass-8", "admin": "admin-pw-9", "carol": "carol-pw-10",
             "dave": "dave-pw-11", "erin": "erin-pw-12", "target": "target-pw-13"}
# the server's login limits in these tests: a small per-account limit (point 6's test locks its own account),
# and a per-address limit no test reaches (every test logs in from 127.0.0.1)
LOGIN_LIMITS = ["--login-limit-account", "5", "--login-limit-address", "1000"]
HOSTILE = "<script>window.__pwned = 1</script><b>bold?</b> & <img src=x onerror=\"window.__pwned=2\">"


@pytest.fixture(scope="session")
def release(request):
    """The shared release when it is there (real data), else the small fixture release."""
    try:
        config.release_root()
        return request.getfixturevalue("shared_rel")
    except config.ReleaseNotFoundError:
        return request.getfixturevalue("fixture_rel")


def _tasks(release):
    from gavel.annotation import tasks as T

    ext = T.release_extraction_tasks(release, "human")
    # the human summary with the most evidence spans: plenty to highlight
    ext = max(ext, key=lambda t: sum(len(v["evidence"]) for vs in t["payload"]["prefill"].values() for v in vs))
    pairs = T.release_value_pairs(release)
    single = next(p for p in pairs if len(p["a"]) == 1 and len(p["b"]) == 1)
    multi = next(p for p in pairs if len(p["a"]) >= 2 and len(p["b"]) >= 2)
    style = T.release_style_pairs(release, 1, seed=1)
    hostile_text = f"First paragraph {HOSTILE}.\n\nSecond paragraph, plain.\n{HOSTILE}"
    import pandas as pd

    hostile_ext = T.extraction_tasks(pd.DataFrame([{"case_id": "x1", "text": hostile_text, "model": "hostile"}]),
                                     None, "test")
    hostile_pair = {"case_id": "x1", "item": "filing_date", "a": [HOSTILE], "b": ["plain"], "origin": "hostile"}
    return {"extraction": ext, "single": T.comparison_tasks([single], "release")[0],
            "multi": T.comparison_tasks([multi], "release")[0], "style": T.style_tasks(style, "release")[0],
            "hostile_ext": hostile_ext[0], "hostile_pair": T.comparison_tasks([hostile_pair], "test")[0]}


@pytest.fixture(scope="module", params=["sqlite", "postgresql"])
def app_env(request, tmp_path_factory, release):
    from gavel.annotation.db import Store

    tmp = tmp_path_factory.mktemp(f"annot-{request.param}")
    if request.param == "sqlite":
        url = f"sqlite:///{tmp / 'annotation.db'}"
    else:
        url = request.getfixturevalue("pg_server").createdb(f"annot_{uuid.uuid4().hex[:8]}")
    store = Store(url)
    for name, pw in PASSWORDS.items():
        store.add_user(name, pw, is_admin=name == "admin")
    tasks = _tasks(release)
    store.add_tasks(list(tasks.values()))
    plan = [(t["key"], "alice", "annotate") for t in tasks.values()]
    plan += [(tasks[k]["key"], "bob", "annotate") for k in ("single", "hostile_ext")]
    plan += [(tasks[k]["key"], who, "annotate") for k in ("style", "multi", "extraction") for who in ("dave", "erin")]
    store.assign(plan)
    server = AppServer(url, tmp / "server.log", serve_args=LOGIN_LIMITS).start()
    yield {"server": server, "store": store, "tasks": tasks, "backend": request.param}
    server.stop()
    store.engine.dispose()


def _assignment(store, task_key, username):
    from sqlalchemy import select

    from gavel.annotation.db import Assignment, Task, User

    with store.sessions() as s:
        return s.scalar(select(Assignment.id).join(Task, Assignment.task_id == Task.id)
                        .join(User, Assignment.user_id == User.id)
                        .where(Task.key == task_key, User.username == username))


def _login(browser, base, user, password=None, **context):
    ctx = browser.new_context(**context)
    page = ctx.new_page()
    page.goto(base + "/login")
    page.fill('input[name="username"]', user)
    page.fill('input[name="password"]', password or PASSWORDS[user])
    page.click('button[type="submit"]')
    page.wait_for_load_state("load")  # the page after the login (or the refusal), not the form being left
    return ctx, page


def _wait_saved(page):
    page.wait_for_selector('#save-status[data-state="saved"]', state="attached", timeout=20_000)


SELECT_JS = """([idx, from, to]) => {
  const p = document.querySelectorAll('#summary p.para')[idx];
  const walker = document.createTreeWalker(p, NodeFilter.SHOW_TEXT);
  const r = document.createRange(); let pos = 0, n, setStart = false;
  while ((n = walker.nextNode())) {
    const len = n.textContent.length;
    if (!setStart && from <= pos + len) { r.setStart(n, from - pos); setStart = true; }
    if (setStart && to <= pos + len) { r.setEnd(n, to - pos); break; }
    pos += len;
  }
  const sel = window.getSelection(); sel.removeAllRanges(); sel.addRange(r);
  return +p.dataset.start;
}"""


def _marks_match(page, text, state, paragraphs):
    """The highlighted characters are exactly the stored evidence spans (within paragraphs), and every
    mark shows the summary's own characters at its offsets."""
    marks = page.eval_on_selector_all("#summary mark",
                                      "ms => ms.map(m => [+m.dataset.start, +m.dataset.end, m.textContent])")
    for s, e, t in marks:
        assert text[s:e] == t
    shown = {i for s, e, _ in marks for i in range(s, e)}
    in_paras = {i for a, b in paragraphs for i in range(a, b)}
    stored = {i for values in state.values() for v in values for ev in v["evidence"]
              if ev["start"] is not None for i in range(ev["start"], ev["end"])}
    assert stored, "the test case should have evidence to highlight"
    assert shown == stored & in_paras
    return len(marks)


def test_wrong_password_is_refused(app_env, browser):
    ctx, page = _login(browser, app_env["server"].base, "alice", "not-her-password")
    assert page.locator("#login-error").is_visible()
    assert "/login" in page.url
    r = page.request.get(app_env["server"].base + "/", max_redirects=0)
    assert r.status == 302 and "/login" in r.headers["location"]
    ctx.close()


def test_post_without_csrf_token_is_refused(app_env, browser):
    server, store, tasks = app_env["server"], app_env["store"], app_env["tasks"]
    ctx, page = _login(browser, server.base, "alice")
    aid = _assignment(store, tasks["style"]["key"], "alice")
    r = page.request.post(f"{server.base}/a/{aid}/save", form={"field": "preference", "value": '"B"'})
    assert r.status == 400
    assert "preference" not in store.answers(aid)
    # the session cookie is HttpOnly and SameSite=Lax
    cookie = next(c for c in ctx.cookies() if c["name"] == "session")
    assert cookie["httpOnly"] and cookie["sameSite"] == "Lax"
    ctx.close()


def test_annotate_reload_restart_everything_intact(app_env, browser):
    server, store, tasks = app_env["server"], app_env["store"], app_env["tasks"]
    ctx, page = _login(browser, server.base, "alice")
    ids = {k: _assignment(store, tasks[k]["key"], "alice") for k in ("extraction", "single", "multi", "style")}

    # comparison, single value
    page.goto(f"{server.base}/a/{ids['single']}")
    page.check('input[name="choice"][value="b_contains_a"]')
    _wait_saved(page)
    # comparison, multi value: A1-B2 and A2-B1
    page.goto(f"{server.base}/a/{ids['multi']}")
    page.check('input[name="match"][value="1,2"]')
    page.check('input[name="match"][value="2,1"]')
    _wait_saved(page)
    # style: five aspects and a preference
    page.goto(f"{server.base}/a/{ids['style']}")
    ratings = {"readability_jargon": 4, "narrative_order": 2, "sentence_structure": 3,
               "formatting_layout": 5, "citation_style": 1}
    for aspect, n in ratings.items():
        page.check(f'form[data-field="aspect:{aspect}"] input[name="choice"][value="{n}"]')
    page.check('form[data-field="preference"] input[name="choice"][value="B"]')
    _wait_saved(page)

    # extraction review: edit a value, add a value with evidence selected in the summary, remove evidence
    ext = tasks["extraction"]["payload"]
    page.goto(f"{server.base}/a/{ids['extraction']}")
    page.wait_for_selector("#items .item")
    first_item = next(k for k, vs in ext["prefill"].items() if vs)
    box = page.locator(f'.item[data-item="{first_item}"]')
    box.locator("input.value-text").first.fill("edited by alice")
    box.locator("input.value-text").first.press("Tab")
    _wait_saved(page)
    empty_item = next(k for k, vs in ext["prefill"].items() if not vs)
    ebox = page.locator(f'.item[data-item="{empty_item}"]')
    ebox.locator("button.add-value").click()
    ebox.locator("input.value-text").last.fill("a new value")
    ebox.locator("input.value-text").last.press("Tab")
    para_start = page.evaluate(SELECT_JS, [1, 3, 40])
    ebox.locator("button.add-evidence").last.click()
    _wait_saved(page)
    with_evidence = next(k for k, vs in ext["prefill"].items() if any(v["evidence"] for v in vs) and k != first_item)
    n_before = sum(len(v["evidence"]) for v in ext["prefill"][with_evidence])
    page.locator(f'.item[data-item="{with_evidence}"] button.del-evidence').first.click()
    _wait_saved(page)

    def check_db():
        assert store.answers(ids["single"]) == {"label": "b_contains_a"}
        assert store.answers(ids["multi"]) == {"matches": [[1, 2], [2, 1]]}
        style = store.answers(ids["style"])
        assert style == {**{f"aspect:{a}": n for a, n in ratings.items()}, "preference": "B"}
        got = store.answers(ids["extraction"])
        assert got[f"item:{first_item}"][0]["value"] == "edited by alice"
        new = got[f"item:{empty_item}"]
        assert new[0]["value"] == "a new value"
        s, e = para_start + 3, para_start + 40
        assert new[0]["evidence"] == [{"start": s, "end": e, "text": ext["text"][s:e]}]
        assert sum(len(v["evidence"]) for v in got[f"item:{with_evidence}"]) == n_before - 1
        return got

    def check_pages():
        page.goto(f"{server.base}/a/{ids['single']}")
        assert page.is_checked('input[name="choice"][value="b_contains_a"]')
        page.goto(f"{server.base}/a/{ids['multi']}")
        assert page.is_checked('input[value="1,2"]') and page.is_checked('input[value="2,1"]')
        assert not page.is_checked('input[value="1,1"]')
        page.goto(f"{server.base}/a/{ids['style']}")
        for aspect, n in ratings.items():
            assert page.is_checked(f'form[data-field="aspect:{aspect}"] input[name="choice"][value="{n}"]')
        page.goto(f"{server.base}/a/{ids['extraction']}")
        page.wait_for_selector("#items .item")
        assert page.locator(f'.item[data-item="{first_item}"] input.value-text').first.input_value() == "edited by alice"
        assert page.locator(f'.item[data-item="{empty_item}"] input.value-text').first.input_value() == "a new value"
        state = {k: json.loads(json.dumps(v)) for k, v in ext["prefill"].items()}
        state.update({f.removeprefix("item:"): v for f, v in store.answers(ids["extraction"]).items()})
        assert _marks_match(page, ext["text"], state, ext["paragraphs"]) > 0

    check_db()
    page.reload()
    check_pages()
    server.restart()  # mid-task: the same database, a new process
    check_db()
    check_pages()  # the same browser session is still logged in (the signing key lives in the database)
    assert "/login" not in page.url
    ctx.close()


def test_highlighted_evidence_matches_stored_offsets(app_env, browser):
    """Before any edit the page highlights exactly human.json's evidence offsets."""
    server, store, tasks = app_env["server"], app_env["store"], app_env["tasks"]
    ctx, page = _login(browser, server.base, "bob")
    # bob reviews the hostile summary (no evidence); alice's real one is checked in the test above, so here a
    # fresh assignment of the real case for bob
    store.assign([(tasks["extraction"]["key"], "bob", "annotate")])
    aid = _assignment(store, tasks["extraction"]["key"], "bob")
    page.goto(f"{server.base}/a/{aid}")
    page.wait_for_selector("#summary mark")
    ext = tasks["extraction"]["payload"]
    n = _marks_match(page, ext["text"], ext["prefill"], ext["paragraphs"])
    assert n >= 5
    ctx.close()


def test_two_annotators_do_not_see_each_other(app_env, browser):
    server, store, tasks = app_env["server"], app_env["store"], app_env["tasks"]
    ctx_a, a = _login(browser, server.base, "alice")
    ctx_b, b = _login(browser, server.base, "bob")
    aid_a = _assignment(store, tasks["hostile_ext"]["key"], "alice")
    aid_b = _assignment(store, tasks["hostile_ext"]["key"], "bob")
    a.goto(f"{server.base}/a/{aid_a}")
    b.goto(f"{server.base}/a/{aid_b}")
    for page, who in ((a, "alice"), (b, "bob")):
        box = page.locator('.item[data-item="judge_name"]')
        box.locator("button.add-value").click()
        box.locator("input.value-text").last.fill(f"judge by {who}")
        box.locator("input.value-text").last.press("Tab")
    _wait_saved(a)
    _wait_saved(b)
    a.reload()
    b.reload()
    assert a.locator('.item[data-item="judge_name"] input.value-text').first.input_value() == "judge by alice"
    assert b.locator('.item[data-item="judge_name"] input.value-text').first.input_value() == "judge by bob"
    assert "judge by alice" not in b.content() and "judge by bob" not in a.content()
    # bob cannot open or change alice's assignment
    assert b.goto(f"{server.base}/a/{aid_a}").status == 404
    token = b.goto(f"{server.base}/a/{aid_b}") and b.get_attribute('meta[name="csrf-token"]', "content")
    r = b.request.post(f"{server.base}/a/{aid_a}/save", form={"csrf_token": token, "field": "item:judge_name",
                                                               "value": '[{"value": "overwritten", "evidence": []}]'})
    assert r.status == 404
    assert store.answers(aid_a)["item:judge_name"][0]["value"] == "judge by alice"
    # bob's home page lists only his own assignments
    b.goto(server.base + "/")
    listed = b.eval_on_selector_all("a.task-link", "ls => ls.map(l => l.getAttribute('href'))")
    assert f"/a/{aid_a}" not in listed and f"/a/{aid_b}" in listed
    ctx_a.close()
    ctx_b.close()


def test_script_and_html_are_shown_as_text(app_env, browser):
    server, store, tasks = app_env["server"], app_env["store"], app_env["tasks"]
    ctx, page = _login(browser, server.base, "alice")
    for key in ("hostile_ext", "hostile_pair"):
        page.goto(f"{server.base}/a/{_assignment(store, tasks[key]['key'], 'alice')}")
        page.wait_for_load_state("load")
        assert page.evaluate("window.__pwned") is None
        assert page.locator("b", has_text="bold?").count() == 0
        assert page.locator("img[src=x]").count() == 0
        assert HOSTILE in page.inner_text("main")
    ctx.close()


def test_pending_edit_is_flushed_when_the_tab_closes(app_env, browser):
    server, store, tasks = app_env["server"], app_env["store"], app_env["tasks"]
    ctx, page = _login(browser, server.base, "alice")
    aid = _assignment(store, tasks["hostile_ext"]["key"], "alice")
    page.goto(f"{server.base}/a/{aid}")
    box = page.locator('.item[data-item="trials"]')
    box.locator("button.add-value").click()
    box.locator("input.value-text").last.type("typed then closed")  # debounced: not sent yet
    assert page.evaluate("document.getElementById('save-status').dataset.state") == "pending"
    page.close(run_before_unload=True)
    import time

    for _ in range(100):  # the beacon arrives shortly after the close
        if store.answers(aid).get("item:trials"):
            break
        time.sleep(0.1)
    assert store.answers(aid)["item:trials"][0]["value"] == "typed then closed"
    ctx.close()


# --- hardening (issue 20, points 5-11) ------------------------------------------------------------------------

def _logged_in(page, base) -> bool:
    r = page.request.get(base + "/", max_redirects=0)
    return r.status == 200 and "Your work" in r.text()


def _copy(browser, ctx):
    """A second browser holding a copy of ``ctx``'s cookies (a stolen or leftover cookie)."""
    other = browser.new_context()
    other.add_cookies(ctx.cookies())
    return other, other.new_page()


def test_logout_and_password_change_end_copied_sessions(app_env, browser):
    """Point 5: a cookie copied before "Log out" or before a password change no longer opens anything."""
    base = app_env["server"].base
    ctx, page = _login(browser, base, "carol")
    page.goto(base + "/")
    thief_ctx, thief = _copy(browser, ctx)
    assert _logged_in(thief, base)  # the copy works while the session lives
    page.click('header form button[type="submit"]')  # Log out
    assert "/login" in page.url
    assert not _logged_in(thief, base)
    thief.goto(base + "/")
    assert "/login" in thief.url
    thief_ctx.close()
    ctx.close()

    new_pw = "carol-new-password-1"
    ctx, page = _login(browser, base, "carol")
    thief_ctx, thief = _copy(browser, ctx)
    assert _logged_in(thief, base)
    page.goto(base + "/password")
    page.fill('input[name="current"]', PASSWORDS["carol"])
    page.fill('input[name="new"]', new_pw)
    page.fill('input[name="repeat"]', new_pw)
    page.click('main button[type="submit"]')
    assert "Password changed" in page.inner_text(".flashes")
    assert _logged_in(page, base)  # the browser that changed it stays logged in
    assert not _logged_in(thief, base)  # every other session of carol's is over
    ctx2, page2 = _login(browser, base, "carol")  # the old password no longer works
    assert page2.locator("#login-error").is_visible()
    ctx3, page3 = _login(browser, base, "carol", new_pw)
    assert _logged_in(page3, base)
    for c in (thief_ctx, ctx, ctx2, ctx3):
        c.close()


def test_failed_logins_make_the_guesser_wait_not_the_owner(app_env, browser):
    """Issue 27 (4): in one browser someone guesses "target"'s password from the same address as the owner
    (a shared network): after the allowance (5) their tries wait ("Too many failed password tries: wait ..."),
    while the owner's own browser, where target logged in before, logs in with the right password at once."""
    base = app_env["server"].base
    owner_ctx, owner = _login(browser, base, "target")  # this browser is now known for target
    owner.click('header button[type="submit"]')  # log out
    owner.wait_for_url("**/login**")
    ctx = browser.new_context()
    page = ctx.new_page()
    statuses = []
    for i in range(12):  # the waits double (1, 2, 4 ... s): a try soon meets one, however slow the machine
        page.goto(base + "/login")
        page.fill('input[name="username"]', "target")
        page.fill('input[name="password"]', f"guess-{i}")
        with page.expect_response(lambda r: r.url.startswith(base + "/login") and r.request.method == "POST") as resp:
            page.click('button[type="submit"]')
        statuses.append(resp.value.status)
        if statuses[-1] == 429:
            break
    assert statuses[:5] == [401] * 5 and statuses[-1] == 429, statuses
    assert "Too many failed password tries: wait" in page.locator("#login-error").inner_text()
    assert not _logged_in(page, base)
    owner.fill('input[name="username"]', "target")
    owner.fill('input[name="password"]', PASSWORDS["target"])
    owner.click('button[type="submit"]')
    owner.wait_for_url(base + "/")
    assert _logged_in(owner, base)
    ctx.close()
    owner_ctx.close()


@pytest.mark.parametrize("nxt", ["/%09/evil.example/phish", "/%0a/x", "/%5Cevil.example/x", "//evil.example/x",
                                 "https://evil.example/x", "/%0d%0aSet-Cookie:x=1"])
def test_login_next_stays_on_this_site(app_env, browser, nxt):
    """Point 7: after logging in, ``next`` is followed only to a path of this site; anything else goes home
    (never another host, never a 500)."""
    base = app_env["server"].base
    ctx = browser.new_context()
    page = ctx.new_page()
    page.goto(f"{base}/login?next={nxt}")
    page.fill('input[name="username"]', "bob")
    page.fill('input[name="password"]', PASSWORDS["bob"])
    with page.expect_response(lambda r: r.request.method == "POST") as resp:
        page.click('button[type="submit"]')
    assert resp.value.status == 302
    page.wait_for_load_state("load")
    assert page.url == base + "/", page.url
    assert "Your work" in page.inner_text("main")
    ctx.close()


def test_login_next_to_a_page_of_this_site_is_followed(app_env, browser):
    server, store, tasks = app_env["server"], app_env["store"], app_env["tasks"]
    aid = _assignment(store, tasks["single"]["key"], "bob")
    page_ctx = browser.new_context()
    page = page_ctx.new_page()
    page.goto(f"{server.base}/a/{aid}")  # not logged in: sent to the login page with next=/a/ID
    assert "/login?next=" in page.url
    page.fill('input[name="username"]', "bob")
    page.fill('input[name="password"]', PASSWORDS["bob"])
    page.click('button[type="submit"]')
    page.wait_for_load_state("load")
    assert page.url == f"{server.base}/a/{aid}"
    page_ctx.close()


def test_a_stale_tab_is_told_and_both_edits_are_kept(app_env, browser):
    """Point 9: two tabs on one answer; the tab that did not see the other's save is told, its edit is kept in
    the history, and the newer answer stays current."""
    server, store, tasks = app_env["server"], app_env["store"], app_env["tasks"]
    ctx, one = _login(browser, server.base, "erin")
    aid = _assignment(store, tasks["style"]["key"], "erin")
    two = ctx.new_page()
    one.goto(f"{server.base}/a/{aid}")
    two.goto(f"{server.base}/a/{aid}")
    sel = 'form[data-field="aspect:narrative_order"] input[name="choice"][value="{}"]'
    one.check(sel.format(2))
    _wait_saved(one)
    two.check(sel.format(4))  # tab two still shows the answer as it was before tab one's save
    two.wait_for_selector('#save-status[data-state="conflict"]', state="attached", timeout=20_000)
    assert "another tab" in two.inner_text("#save-status")
    assert store.answers(aid)["aspect:narrative_order"] == 2
    history = [(r["revision"], r["value"], r["current"], r["stale"]) for r in store.export_rows()
               if r["assignment"] == aid and r["field"] == "aspect:narrative_order"]
    assert history == [(1, 2, True, False), (2, 4, False, True)]
    # after a reload tab two sees the current answer and saves normally
    two.reload()
    assert two.is_checked(sel.format(2))
    two.check(sel.format(5))
    _wait_saved(two)
    assert store.answers(aid)["aspect:narrative_order"] == 5
    # and now tab one is the stale one
    one.check(sel.format(1))
    one.wait_for_selector('#save-status[data-state="conflict"]', state="attached", timeout=20_000)
    assert store.answers(aid)["aspect:narrative_order"] == 5

    # the same in the extraction review (one item's value list)
    eaid = _assignment(store, tasks["extraction"]["key"], "erin")
    one.goto(f"{server.base}/a/{eaid}")
    two.goto(f"{server.base}/a/{eaid}")
    for page, text in ((one, "from tab one"), (two, "from tab two")):
        box = page.locator('.item[data-item="trials"]')
        box.locator("button.add-value").click()
        box.locator("input.value-text").last.fill(text)
        box.locator("input.value-text").last.press("Tab")
        if page is one:
            _wait_saved(one)
    two.wait_for_selector('#save-status[data-state="conflict"]', state="attached", timeout=20_000)
    assert [v["value"] for v in store.answers(eaid)["item:trials"]][-1] == "from tab one"
    kept = [r["value"] for r in store.export_rows() if r["assignment"] == eaid and r["stale"]]
    assert kept and kept[-1][-1]["value"] == "from tab two"
    ctx.close()


def test_session_key_is_not_in_the_database_and_a_forged_cookie_fails(app_env, browser):
    """Point 10: the signing key is in a private file, not the database; whatever the database holds cannot
    sign a session cookie that reaches the admin export; the SQLite file is private."""
    from flask import Flask
    from flask.sessions import SecureCookieSessionInterface
    from sqlalchemy import inspect, text

    server, store = app_env["server"], app_env["store"]
    key = server.key_file.read_text().strip()
    assert server.key_file.stat().st_mode & 0o777 == 0o600
    if app_env["backend"] == "sqlite":
        db = store.engine.url.database
        assert os.stat(db).st_mode & 0o777 == 0o600
        for extra in (db + "-wal", db + "-shm"):
            if os.path.exists(extra):
                assert os.stat(extra).st_mode & 0o777 == 0o600
    # what an attacker who can read the database finds: every text in every table
    found = []
    with store.engine.connect() as c:
        for table in inspect(store.engine).get_table_names():
            for row in c.execute(text(f"SELECT * FROM {table}")):
                found += [v for v in row if isinstance(v, str)]
    assert key not in found and not any(key in v for v in found)
    admin_id = store.user("admin").id

    def forged(secret):
        app = Flask("forger")
        app.secret_key = secret
        return SecureCookieSessionInterface().get_signing_serializer(app).dumps(
            {"user_id": admin_id, "sid": "guessed", "_permanent": True})

    candidates = [v for v in found if 16 <= len(v) <= 200]
    ctx = browser.new_context()
    page = ctx.new_page()
    for secret in [*candidates, key]:  # the real key too: a signed cookie without a live session is refused
        ctx.clear_cookies()
        ctx.add_cookies([{"name": "session", "value": forged(secret), "url": server.base}])
        r = page.request.get(server.base + "/admin/export.jsonl", max_redirects=0)
        assert r.status == 302 and "/login" in r.headers["location"], secret[:8]
    ctx.close()


def test_forms_save_with_javascript_off(app_env, browser):
    """Point 11: with JavaScript off the comparison and style forms save through their Save buttons; the
    extraction review says plainly that it needs JavaScript."""
    server, store, tasks = app_env["server"], app_env["store"], app_env["tasks"]
    ctx, page = _login(browser, server.base, "dave", java_script_enabled=False)
    ids = {k: _assignment(store, tasks[k]["key"], "dave") for k in ("style", "multi", "extraction")}
    page.goto(f"{server.base}/a/{ids['style']}")
    form = page.locator('form[data-field="aspect:formatting_layout"]')
    form.locator('input[name="choice"][value="3"]').check()
    form.locator("button.save").click()
    assert "Saved." in page.inner_text(".flashes")
    form = page.locator('form[data-field="preference"]')
    form.locator('input[name="choice"][value="none"]').check()
    form.locator("button.save").click()
    assert store.answers(ids["style"]) == {"aspect:formatting_layout": 3, "preference": "none"}
    assert page.is_checked('form[data-field="aspect:formatting_layout"] input[name="choice"][value="3"]')

    page.goto(f"{server.base}/a/{ids['multi']}")
    page.check('input[name="match"][value="1,2"]')
    page.check('input[name="match"][value="2,1"]')
    page.click('form[data-field="matches"] button.save')
    assert store.answers(ids["multi"]) == {"matches": [[1, 2], [2, 1]]}
    page.uncheck('input[name="match"][value="2,1"]')
    page.click('form[data-field="matches"] button.save')
    assert store.answers(ids["multi"]) == {"matches": [[1, 2]]}

    page.goto(f"{server.base}/a/{ids['extraction']}")
    assert "needs JavaScript" in page.inner_text("#needs-js")
    ctx.close()
