"""The annotation app in a real browser (Debian's chromium driven by Playwright), against the real server
process, on SQLite and on a PostgreSQL server the tests start. Tasks come from the release (a human summary
with its human.json checklist and evidence offsets, released value pairs, a model/human style pair) plus two
hostile tasks whose texts hold <script> and HTML."""

from __future__ import annotations

import json
import os
import shutil
import uuid

import pytest
from annotation_server import AppServer

from gavel.core import config

pytest.importorskip("playwright", reason="browser tests need the playwright package (annotation extra)")
from playwright.sync_api import sync_playwright  # noqa: E402

CHROMIUM = os.environ.get("GAVEL_CHROMIUM", "/usr/bin/chromium")
PASSWORDS = {"alice": "alice-pw-7", "bob": "bob-pw-8", "admin": "admin-pw-9"}
HOSTILE = "<script>window.__pwned = 1</script><b>bold?</b> & <img src=x onerror=\"window.__pwned=2\">"


@pytest.fixture(scope="session")
def browser():
    if not shutil.which(CHROMIUM) and not os.path.exists(CHROMIUM):
        msg = f"browser tests need chromium at {CHROMIUM} (apt-get install chromium; make system-deps)"
        if os.environ.get("CI"):
            pytest.fail(msg)
        pytest.skip(msg)
    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, headless=True,
                              args=["--no-sandbox", "--disable-gpu", "--disable-background-networking",
                                    "--disable-component-update", "--disable-sync"])
        yield b
        b.close()


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
    store.assign(plan)
    server = AppServer(url, tmp / "server.log").start()
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


def _login(browser, base, user, password=None):
    ctx = browser.new_context()
    page = ctx.new_page()
    page.goto(base + "/login")
    page.fill('input[name="username"]', user)
    page.fill('input[name="password"]', password or PASSWORDS[user])
    page.click('button[type="submit"]')
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
        page.check(f'form[data-field="aspect:{aspect}"] input[value="{n}"]')
    page.check('form[data-field="preference"] input[value="B"]')
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
            assert page.is_checked(f'form[data-field="aspect:{aspect}"] input[value="{n}"]')
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
