"""Hardening of the agent's tools and the corpus reader (issue 20, points 1-4): a regex pattern cannot take
the machine, no tool input makes ``Workspace.call`` raise (or the run's files unwritable), a case folder's
bad files raise CorpusError naming the file, and patches are capped."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from agent_script import MODEL, SCRIPT, config, corpus, scripted_model, value

from gavel.documents import store as cl
from gavel.documents.agent import run_agent
from gavel.documents.corpus import CorpusError, load_folder, load_full_case_data
from gavel.documents.search_worker import SEARCH_MEMORY_BYTES
from gavel.documents.store import AgentStore, json_text, ledger_events
from gavel.documents.tools import MAX_ECHO_ARGS_CHARS, Workspace

ROOT = Path(__file__).resolve().parent.parent
BOMB = "(?:x{65535}){65535}"  # 19 characters; compiling it in-process grew to 22 GB before the fix


def workspace(keys=None):
    return Workspace(corpus(), AgentStore(keys or config().keys, clock=lambda: "T"), clock=lambda: "T")


# ------------------------------------------------------------------ 1. regex compile bounded
def test_regex_bomb_is_refused_under_a_memory_limit(tmp_path):
    """The pattern of the issue through the tool, in a subprocess whose address space is capped at 4 GiB (so
    the test cannot take the machine whatever the code does): a failed call naming the memory limit, and
    the same workspace searches normally afterwards. (A 60 s time limit, so that on a busy machine the memory
    limit, reached in well under a second, is what stops it.)"""
    script = textwrap.dedent(f"""
        import json, resource, sys
        resource.setrlimit(resource.RLIMIT_AS, (4 * 2**30, 4 * 2**30))
        sys.path[:0] = [{str(ROOT)!r}, {str(ROOT / "tests")!r}]
        from agent_script import corpus, config
        from gavel.documents.store import AgentStore
        from gavel.documents.tools import Workspace
        ws = Workspace(corpus(), AgentStore(config().keys), search_timeout=60)  # memory, not time, stops it
        bomb = ws.call("search_document_regex", {{"pattern": {BOMB!r}, "doc_name": "all"}}, 1)
        after = ws.call("search_document_regex", {{"pattern": "class action", "doc_name": "all"}}, 2)
        print(json.dumps({{"bomb": [bomb.success, bomb.result], "after": [after.success, after.result["matches_found"]
                                                                          if after.success else after.result],
                          "starts": ws.search_worker.starts}}))
    """)
    run = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300,
                         env={**os.environ, "PYTHONPATH": f"{ROOT}{os.pathsep}{ROOT / 'tests'}"})
    assert run.returncode == 0, run.stderr[-3000:]
    got = json.loads(run.stdout.strip().splitlines()[-1])
    success, result = got["bomb"]
    assert not success and "more memory than a search may use" in result["error"], result
    assert f"{SEARCH_MEMORY_BYTES // 2**20} MiB" in result["error"]
    assert got["after"] == [True, 1]
    assert got["starts"] == 2  # the worker that hit the limit was replaced


def test_search_worker_runs_with_its_own_address_space_and_cpu_limits():
    ws = workspace()
    assert ws.call("search_document_regex", {"pattern": "ORDER"}, 1).success
    worker = ws.search_worker
    limits = Path(f"/proc/{worker.proc.pid}/limits").read_text()
    address = next(line for line in limits.splitlines() if line.startswith("Max address space")).split()
    assert int(address[3]) == worker.memory_bytes  # soft limit, bytes
    assert worker.memory_bytes < 2 * SEARCH_MEMORY_BYTES
    cpu = next(line for line in limits.splitlines() if line.startswith("Max cpu time")).split()
    assert cpu[3] != "unlimited"
    pid = worker.proc.pid
    ws.close()
    assert not Path(f"/proc/{pid}").exists() or "zombie" in Path(f"/proc/{pid}/status").read_text()


def test_compile_past_the_deadline_kills_the_worker_and_the_next_search_restarts_it():
    """A pattern that compiles within memory but past the deadline (here a 1 ms limit and no grace): the
    worker is killed, the call fails with a time-limit error, and the next search starts a new worker."""
    ws = workspace()
    ws.search_timeout = 0.001
    ws.search_worker.compile_grace = 0.0
    out = ws.call("search_document_regex", {"pattern": "(?:(?:x{100}){100}){100}"}, 1)
    assert not out.success and "timed out" in out.result["error"]
    ws.search_timeout, ws.search_worker.compile_grace = 2.0, 3.0
    again = ws.call("search_document_regex", {"pattern": "ORDER", "doc_name": "Docket"}, 2)
    assert again.success and again.result["matches_found"] == 1
    assert ws.search_worker.starts == 2


# ------------------------------------------------------------------ 2. no input escapes Workspace.call
@pytest.mark.parametrize("args", [
    {"doc_name": "Complaint", "start_token": float("inf"), "end_token": 10},
    {"doc_name": "Complaint", "start_token": 0, "end_token": json.loads("1e999")},
    {"doc_name": "Complaint", "start_token": float("nan"), "end_token": 10},
    {"doc_name": "Complaint", "start_token": 1.5, "end_token": 10},
    {"doc_name": "Complaint", "start_token": "9" * 5000, "end_token": 10},
    {"doc_name": "Compl\ud800aint", "start_token": 0, "end_token": 10},
])
def test_bad_numbers_and_lone_surrogates_are_failed_calls(args):
    ws = workspace()
    out = ws.call("read_document", args, 1)
    assert not out.success and out.result["error"]
    json_text(out.events).encode("utf-8")  # writable as UTF-8
    out.brief.encode("utf-8")


def test_other_numeric_arguments_and_odd_shapes_are_failed_calls():
    ws = workspace()
    for tool, args in [("search_document_regex", {"pattern": "x", "top_k": float("inf")}),
                       ("search_document_regex", {"pattern": "x", "context_tokens": float("-inf")}),
                       ("search_document_regex", {"pattern": "\ud800"}),
                       ("get_checklist", {"items": [{"a": 1}]}),
                       ("get_checklist", {"item": ["x"]}),
                       ("append_checklist", {"patch": [{"key": "Filing_Date", "extracted": [
                           value("2021-\ud800", "Filed")]}]}),
                       ("update_checklist", {"patch": [{"key": "Filing_Date\udfff", "extracted": []}]}),
                       ("read_document", [1, 2]), (None, {})]:
        out = ws.call(tool, args, 1)
        assert not out.success and out.result["error"], (tool, args)
        line = json_text(out.events)
        line.encode("utf-8")
        assert json.loads(line)  # the ledger line reads back
    assert all(not v for v in ws.store.values.values())
    # an integral float is an integer
    assert ws.call("read_document", {"doc_name": "Docket", "start_token": 0.0, "end_token": 5.0}, 2).success


def test_agent_run_with_infinity_and_a_lone_surrogate_finishes_and_resumes(tmp_path):
    """The model's answers carry ``1e999``, ``Infinity`` and ``"\\ud800"`` (in a patch, a tool name, a stop
    reason): each tool step is a failed call in the ledger, the run ends normally, and resuming the finished
    run (answers cached) does not crash either."""
    script = {1: SCRIPT[1],
              2: '{"tool": "read_document", "args": {"doc_name": "Complaint", "start_token": 1e999, "end_token": 5}}',
              3: '{"tool": "append_checklist", "args": {"patch": [{"key": "Filing_Date", "extracted": [{"value": '
                 '"2021-03-03 \\ud800", "evidence": [{"text": "Filed", "source_document": "Complaint", '
                 '"location": "p1"}]}]}]}}',
              4: '{"tool": "search_document_regex", "args": {"pattern": "x", "top_k": Infinity}}',
              5: '{"tool": "read_\\udc00", "args": {}}',
              6: '{"decision": "stop", "reason": "done \\ud800"}', 8: {"decision": "stop", "reason": "x"}}
    out = tmp_path / "run"
    res = run_agent(corpus(), config(), scripted_model(script), MODEL, out, resume=False)
    assert res.end_reason == "stop"
    events = {e["step"]: e for e in ledger_events(out / "ledger.jsonl")}
    for step in (2, 3, 4, 5):
        assert events[step]["event"]["success"] is False, events[step]
    assert res.steps == 8  # the stop reason with a lone surrogate reached the next snapshot escaped
    assert all(not v for v in res.store.values.values())
    again = run_agent(corpus(), config(), scripted_model(script), MODEL, out, resume=True)
    assert again.resumed and again.end_reason == "stop"
    (out / "state.json").read_text(encoding="utf-8")


def test_files_are_written_even_with_a_lone_surrogate(tmp_path):
    data = {"reason": "stop \ud800 here", "ok": "é"}
    text = json_text(data)
    assert json.loads(text) == data
    cl.write_json_atomic(tmp_path / "x.json", data)
    assert json.loads((tmp_path / "x.json").read_text(encoding="utf-8")) == data
    assert json_text({"ok": "é"}) == '{"ok": "é"}'  # ordinary text is kept unescaped


# ------------------------------------------------------------------ 3. the corpus reader
def _case(tmp_path, files: dict, meta=None) -> Path:
    folder = tmp_path / "case"
    folder.mkdir(parents=True)
    for name, data in files.items():
        (folder / name).write_bytes(data if isinstance(data, bytes) else data.encode("utf-8"))
    if meta is not None:
        (folder / "metadata.json").write_text(meta if isinstance(meta, str) else json.dumps(meta), encoding="utf-8")
    return folder


def test_folder_without_metadata_does_not_follow_symlinks_out(tmp_path):
    secret = tmp_path / "secret.txt"
    secret.write_text("TOP SECRET")
    folder = _case(tmp_path, {"a.txt": "fine"})
    (folder / "b.txt").symlink_to(secret)
    with pytest.raises(CorpusError, match=r"b\.txt.*outside the case folder"):
        load_folder(folder)
    (folder / "b.txt").unlink()
    (folder / "b.txt").symlink_to(folder / "a.txt")  # a link inside the folder is fine
    assert [d.text for d in load_folder(folder).documents] == ["fine", "fine"]


def test_a_metadata_file_or_document_that_is_a_fifo_or_a_device_is_refused_not_waited_on(tmp_path):
    """A case folder is someone else's: its metadata.json as a FIFO blocked the load in open(); a document
    linked to /dev/zero would be read until memory ran out. Each is opened without waiting, then checked."""
    import os
    import threading

    folder = _case(tmp_path, {"a.txt": "fine"})
    os.mkfifo(folder / "metadata.json")
    got: list = []

    def load():
        try:
            load_folder(folder)
        except CorpusError as err:
            got.append(str(err))

    t = threading.Thread(target=load, daemon=True)
    t.start()
    t.join(60)
    assert got == [f"{folder / 'metadata.json'}: not a regular file (a device, socket or FIFO); not read"], got
    (folder / "metadata.json").unlink()
    (folder / "metadata.json").write_text(json.dumps({"documents": [{"filename": "a.txt"}]}), encoding="utf-8")
    from gavel.documents import corpus

    with pytest.raises(CorpusError, match=r"a\.txt.*not a regular file \(a device, socket or FIFO\)"):
        corpus._read_text(Path("/dev/zero"), f"{folder / 'metadata.json'}: document 1 file 'a.txt'")


@pytest.mark.parametrize("meta,needle", [
    ("[1, 2]", "expected an object"),
    ({"documents": "a.txt"}, "`documents` must be a list"),
    ({"documents": [{"filename": 7}]}, "filename must be a string"),
    ({"documents": [{"filename": ["a.txt"]}]}, "filename must be a string"),
    ({"documents": [{"filename": "a\u0000.txt"}]}, "NUL"),
    ({"documents": [{"filename": "a.txt", "title": {"x": 1}}]}, "title must be a string"),
    ({"documents": [{"filename": "../outside.txt"}]}, "outside the case folder"),
    ({"documents": [{"filename": "missing.txt"}]}, "missing.txt"),
    ({"case_id": ["x"], "documents": [{"filename": "a.txt"}]}, "case_id must be a string"),
])
def test_malformed_metadata_raises_corpus_error_naming_the_file(tmp_path, meta, needle):
    (tmp_path / "outside.txt").write_text("x")
    folder = _case(tmp_path, {"a.txt": "fine"}, meta)
    with pytest.raises(CorpusError, match="metadata.json") as err:
        load_folder(folder)
    assert needle in str(err.value)


def test_latin1_text_and_non_utf8_names_raise_corpus_error(tmp_path):
    folder = _case(tmp_path, {"a.txt": "Café".encode("latin-1")})
    with pytest.raises(CorpusError, match=r"a\.txt: not UTF-8 text"):
        load_folder(folder)
    meta = _case(tmp_path / "m", {"a.txt": "fine"}, {"documents": [{"filename": "a.txt"}]})
    (meta / "metadata.json").write_bytes('{"documents": [{"filename": "a.txt", "title": "Caf\xe9"}]}'
                                         .encode("latin-1"))
    with pytest.raises(CorpusError, match=r"metadata\.json: not UTF-8"):
        load_folder(meta)
    odd = _case(tmp_path / "n", {"a.txt": "fine"})
    (Path(os.fsdecode(bytes(odd) + b"/b\xff.txt"))).write_text("x")
    with pytest.raises(CorpusError, match=r"not UTF-8 text; rename"):
        load_folder(odd)
    cases = tmp_path / "cases.json"
    cases.write_bytes('[{"case_id": "1", "case_documents_text": ["Caf\xe9"]}]'.encode("latin-1"))
    with pytest.raises(CorpusError, match="cases.json: not UTF-8"):
        load_full_case_data(cases)
    cases.write_text('[{"case_id": "1", "case_documents_text": ["a \\ud800"]}]', encoding="utf-8")
    with pytest.raises(CorpusError, match="lone surrogate"):
        load_full_case_data(cases)
    cases.write_text('[{"case_id": "1", "case_documents_text": ["a"], "case_documents_title": 5}]',
                     encoding="utf-8")
    with pytest.raises(CorpusError, match="titles must be a list"):
        load_full_case_data(cases)


# ------------------------------------------------------------------ 4. patch caps
def _evidence():
    return [{"text": "t", "source_document": "Complaint", "location": "l"}]


@pytest.mark.parametrize("patch,needle", [
    ([{"key": "Filing_Date", "extracted": [{"value": "x" * 50_000_000, "evidence": _evidence()}]}],
     f"at most {cl.MAX_FIELD_CHARS:,} per field"),
    ([{"key": "Filing_Date", "extracted": [{"value": "v", "evidence": _evidence()}] * 200_000}],
     f"at most {cl.MAX_VALUES_PER_ENTRY} per entry"),
    ([{"key": "Filing_Date", "extracted": [{"value": "v", "evidence": _evidence()}]}] * 100_000,
     f"at most {cl.MAX_PATCH_ENTRIES} per call"),
    ([{"key": "Filing_Date", "extracted": [{"value": "v", "evidence": _evidence() * 1000}]}],
     f"at most {cl.MAX_EVIDENCE_PER_VALUE} per value"),
    ([{"key": "Filing_Date", "extracted": [{"value": "v" * 19_000, "evidence": _evidence()}] * 60}],
     f"more than {cl.MAX_PATCH_CHARS:,} characters"),
])
def test_oversized_patches_are_refused_naming_the_cap(patch, needle):
    ws = workspace()
    out = ws.call("append_checklist", {"patch": patch}, 1)
    assert not out.success and any(needle in e for e in out.result["errors"]), out.result["errors"]
    assert all(not v for v in ws.store.values.values())
    line = json_text(out.events)
    assert len(line) < 2 * MAX_ECHO_ARGS_CHARS  # the ledger echoes a preview, not 50 MB
    assert len(json_text(out.args)) <= MAX_ECHO_ARGS_CHARS


def test_a_key_holds_at_most_max_key_values():
    store = AgentStore(["K"], clock=lambda: None)
    many = [{"value": f"v{i}", "evidence": _evidence()} for i in range(cl.MAX_VALUES_PER_ENTRY)]
    for _ in range(cl.MAX_KEY_VALUES // cl.MAX_VALUES_PER_ENTRY):
        assert store.apply("append", [{"key": "K", "extracted": many}]).success
    res = store.apply("append", [{"key": "K", "extracted": many[:1]}])
    assert not res.success and f"at most {cl.MAX_KEY_VALUES:,} per key" in res.errors[0]
    assert len(store.values["K"]) == cl.MAX_KEY_VALUES
    assert store.apply("update", [{"key": "K", "extracted": many[:3]}]).success  # update replaces
    assert len(store.values["K"]) == 3
