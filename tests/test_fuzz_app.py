"""Issue 38: fuzz targets for the annotation app's request bodies. Every POST endpoint (login, password change,
a save of each task kind, done, the admin's new user) gets hypothesis-made bodies: forms of known and unknown
fields with any text, any JSON as a save's value, raw bytes that are not even UTF-8. The app answers each with
a 2xx, 3xx or 4xx, never a 500.

The fuzz runs in a child process under a memory cap (RLIMIT_AS) and a time limit: ``test_the_fuzz_targets_run_
under_caps`` starts ``pytest`` on this file with GAVEL_FUZZ_CHILD=1, which runs the targets themselves (not
collected in the parent run). Examples are bounded so the child takes seconds."""

from __future__ import annotations

import json
import os
import re
import resource
import subprocess
import sys
from pathlib import Path
from urllib.parse import urlencode

import pytest
from needs import need_module

need_module("flask", "annotation tests need the annotation extra")
CHILD = os.environ.get("GAVEL_FUZZ_CHILD") == "1"
MEMORY_CAP = 3 * 2**30  # address space of the fuzzing process
TIME_CAP_S = 400
EXAMPLES = 40

from fuzzing import any_text, fuzz, replay  # noqa: E402
from hypothesis import given  # noqa: E402
from hypothesis import strategies as st  # noqa: E402


def child_only(f):
    """A target is collected only in the capped child (the parent collects the test that starts the child), so
    neither run reports a skip."""
    return f if CHILD else None


def parent_only(f):
    return None if CHILD else f


text = any_text(max_size=300)
numbers_as_text = st.integers(min_value=-10, max_value=10**12).map(str)
json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=True) | text,
    lambda inner: st.lists(inner, max_size=8) | st.dictionaries(text | st.sampled_from(
        ["value", "evidence", "start", "end", "text"]), inner, max_size=6),
    max_leaves=40)
SAVE_FIELDS = ["label", "matches", "preference", "aspect:narrative_order", "item:filing_date", "item:x", ""]


save_bodies = st.fixed_dictionaries({"field": st.sampled_from(SAVE_FIELDS) | text},
                                    optional={"value": json_values.map(json.dumps) | text,
                                              "base": numbers_as_text | text, "token": text, "after": text,
                                              "choice": text | numbers_as_text,
                                              "match": st.lists(text | st.just("1,1"), max_size=5)})
raw_bodies = st.binary(max_size=2000)


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    """An app on SQLite with alice and bob (an admin), every kind of task assigned to both; bob logged in."""
    import pandas as pd

    from gavel.annotation import tasks as T
    from gavel.annotation.app import create_app
    from gavel.annotation.db import Store

    tmp = tmp_path_factory.mktemp("fuzz")
    store = Store(f"sqlite:///{tmp / 'a.db'}")
    single = {"case_id": "1", "item": "filing_date", "a": ["May 1"], "b": ["May 1, 2024"], "origin": "t"}
    multi = {"case_id": "2", "item": "judge_name", "a": ["X", "Y"], "b": ["X", "Z"], "origin": "t"}
    tasks = (T.comparison_tasks([single, multi], "t")
             + T.extraction_tasks(pd.DataFrame([{"case_id": "3", "text": "one two three four", "model": "human"}]),
                                  None, "t")
             + T.style_tasks([{"case_id": "4", "model": "m", "model_text": "a b", "human_text": "c d"}], "t"))
    store.add_tasks(tasks)
    store.add_user("alice", "alice-password")
    store.add_user("bob", "bob-password", is_admin=True)
    store.assign([(t["key"], u, "annotate") for t in tasks for u in ("alice", "bob")])
    app = create_app(store.url, secret_key_file=tmp / "key", login_limit_account=10_000,
                     login_limit_address=10_000)
    client = app.test_client()
    token = _csrf(client, "/login")
    assert client.post("/login", data={"username": "bob", "password": "bob-password",
                                       "csrf_token": token}).status_code == 302
    with store.sessions() as s:
        from gavel.annotation.db import Assignment, User

        bob = s.query(User).filter_by(username="bob").one().id
        ids = [a.id for a in s.query(Assignment).filter_by(user_id=bob).order_by(Assignment.id)]
    return {"app": app, "client": client, "csrf": _csrf(client, "/"), "assignments": ids}


def _csrf(client, path):
    return re.search(r'name="csrf[-_]token" (?:content|value)="([^"]+)"', client.get(path).text).group(1)


def _form(data: dict) -> bytes:
    """A form body as a hostile client may send it: every text as its UTF-8 bytes, a lone surrogate as the
    three bytes it would take (not UTF-8: the app must refuse or replace them, never fail)."""
    def raw(x):
        return x.encode("utf-8", "surrogatepass") if isinstance(x, str) else x
    return urlencode([(raw(k), raw(v)) for k, vs in data.items() for v in (vs if isinstance(vs, list) else [vs])]).encode()


def _check(resp, what):
    assert 200 <= resp.status_code < 500, f"{what}: {resp.status_code} {resp.get_data(as_text=True)[:300]}"
    assert "Traceback" not in resp.get_data(as_text=True)


@child_only
@fuzz(EXAMPLES)
@given(body=save_bodies, which=st.integers(min_value=0, max_value=3), fetch=st.booleans())
def test_saves_answer_4xx_never_500(world, body, which, fetch):
    headers = {"X-Requested-With": "fetch"} if fetch else {}
    resp = world["client"].post(f"/a/{world['assignments'][which]}/save", data=_form({**body, "csrf_token": world["csrf"]}),
                                content_type="application/x-www-form-urlencoded", headers=headers)
    _check(resp, f"save {body!r:.200}")


@child_only
@fuzz(EXAMPLES)
@given(path=st.sampled_from(["/login", "/password", "/admin", "/a/{}/save", "/a/{}/done"]), raw=raw_bodies,
       kind=st.sampled_from(["application/x-www-form-urlencoded", "multipart/form-data; boundary=xyz",
                             "application/json", "text/plain"]))
def test_raw_bodies_answer_4xx_never_500(world, path, raw, kind):
    resp = world["client"].post(path.format(world["assignments"][0]), data=raw, content_type=kind,
                                headers={"X-CSRFToken": world["csrf"]})
    _check(resp, f"{path} {raw[:100]!r}")


@child_only
@fuzz(EXAMPLES)
@given(form=st.dictionaries(st.sampled_from(["username", "password", "current", "new", "repeat", "is_admin",
                                             "done", "next"]) | text, text, max_size=6),
       path=st.sampled_from(["/login", "/password", "/admin", "/a/{}/done"]), with_token=st.booleans())
def test_forms_answer_4xx_never_500(world, form, path, with_token):
    data = {**form, "csrf_token": world["csrf"]} if with_token else form
    fresh = path == "/login"  # a login from another browser: bob's session stays for the other targets
    client = world["app"].test_client() if fresh else world["client"]
    resp = client.post(path.format(world["assignments"][1]), data=_form(data),
                       content_type="application/x-www-form-urlencoded")
    _check(resp, f"{path} {form!r:.200}")


def _caps():
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY_CAP, MEMORY_CAP))


@parent_only
def test_the_fuzz_targets_run_under_caps(tmp_path):
    here = Path(__file__)
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-x", "-p", "no:cacheprovider", str(here),
                           "--basetemp", str(tmp_path / "child")], cwd=here.parent.parent,
                          env={**os.environ, "GAVEL_FUZZ_CHILD": "1", "OPENBLAS_NUM_THREADS": "1"},
                          capture_output=True, text=True, timeout=TIME_CAP_S, preexec_fn=_caps)
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:] + replay()
    assert "3 passed" in done.stdout, done.stdout[-2000:]
