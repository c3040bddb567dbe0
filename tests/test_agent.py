"""The Gavel-Agent with a scripted fake model: each tool, the golden snapshot, the stop protocol, the step
limit, refused repeats, a non-legal checklist, SIGKILL + resume, and the safety limits."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from agent_script import MODEL, SCRIPT, config, corpus, scripted_model, value

from gavel.documents import agent as agent_mod
from gavel.documents.agent import AgentState, build_snapshot, parse_action, run_agent
from gavel.documents.configs import load_yaml
from gavel.documents.corpus import Corpus
from gavel.documents.store import AgentStore, ledger_events, replay
from gavel.documents.tools import READ_LIMIT, Workspace

GOLDEN = Path(__file__).parent / "golden" / "agent_snapshot.txt"


def workspace(keys=None):
    c = corpus()
    return Workspace(c, AgentStore(keys or config().keys, clock=lambda: "T"), clock=lambda: "T")


# ------------------------------------------------------------------ tools
def test_list_documents_gives_catalog_in_paper_order():
    out = workspace().call("list_documents", {}, 1)
    assert out.success
    assert [d["name"] for d in out.result["documents"]] == ["Complaint", "Order Granting Preliminary Injunction",
                                                             "Docket"]
    assert out.result["documents"][0]["visited"] == "Not Visited"
    assert out.events[0][1]["result"]["documents"] == 3


def test_read_document_window_limit_and_coverage():
    ws = workspace()
    doc = ws.corpus.by_name["Complaint"]
    out = ws.call("read_document", {"doc_name": "complaint", "start_token": 5, "end_token": 40}, 2)
    assert out.success and out.result["text"] == doc.window(5, 40)
    assert out.result["text"] and out.result["text"] in doc.text
    assert ws.viewed["Complaint"] == [[5, 40]] and ws.visit_status("Complaint") == "Partially Visited"
    refused = ws.call("read_document", {"doc_name": "Complaint", "start_token": 0, "end_token": READ_LIMIT + 1}, 3)
    assert not refused.success and "at most 10000" in refused.result["error"]
    assert ws.viewed["Complaint"] == [[5, 40]]  # a refused read views nothing
    whole = ws.call("read_document", {"doc_name": "Docket", "start_token": 0, "end_token": 5000}, 4)
    assert whole.result["end_token"] == ws.corpus.by_name["Docket"].token_count
    assert ws.visit_status("Docket") == "Fully Visited"


def test_search_one_several_all_topk_context():
    ws = workspace()
    out = ws.call("search_document_regex", {"pattern": "order", "flags": ["IGNORECASE"], "top_k": 2,
                                            "context_tokens": 100}, 1)
    assert out.success and out.result["matches_found"] >= 3 and out.result["shown"] == 2
    for hit in out.result["matches"]:
        assert "order" in hit["match"].lower() and hit["match"] in hit["context"]
        assert hit["end_token"] - hit["start_token"] <= 100
    one = ws.call("search_document_regex", {"pattern": "ORDER", "doc_name": "Docket"}, 2)
    assert {h["doc_name"] for h in one.result["matches"]} == {"Docket"}
    several = ws.call("search_document_regex", {"pattern": "(?i)complaint", "doc_names": ["Docket", "Complaint"]}, 3)
    assert {h["doc_name"] for h in several.result["matches"]} == {"Docket", "Complaint"}
    for bad in ({"pattern": "x", "top_k": 21}, {"pattern": "x", "context_tokens": 99},
                {"pattern": "x", "context_tokens": 1001}, {"pattern": "(unclosed"}, {"pattern": "x", "flags": ["X"]}):
        assert not ws.call("search_document_regex", bad, 4).success, bad


def test_checklist_tools_batch_patches_and_not_applicable():
    ws = workspace()
    out = ws.call("append_checklist", {"patch": [
        {"key": "Filing_Date", "extracted": [value("2021-03-03", "Filed March 3, 2021.")]},
        {"key": "Type_of_Counsel", "extracted": [value("Private", "a firm")]}]}, 1)
    assert out.success and out.result["keys_updated"] == ["Filing_Date", "Type_of_Counsel"]
    ws.call("append_checklist", {"patch": [{"key": "Type_of_Counsel", "extracted": [value("Nonprofit", "ACLU")]}]}, 2)
    assert [v["value"] for v in ws.store.values["Type_of_Counsel"]] == ["Private", "Nonprofit"]
    ws.call("update_checklist", {"patch": [{"key": "Type_of_Counsel", "extracted": [value("Nonprofit", "ACLU")]},
                                           {"key": "Class_Action_or_Individual_Plaintiffs",
                                            "extracted": [value("Not Applicable", "no class sought")]}]}, 3)
    assert [v["value"] for v in ws.store.values["Type_of_Counsel"]] == ["Nonprofit"]
    assert ws.store.status("Class_Action_or_Individual_Plaintiffs") == "not_applicable"
    got = ws.call("get_checklist", {"items": ["Type_of_Counsel", "Class_Action_or_Individual_Plaintiffs"]}, 4)
    assert got.result["checklist"]["Class_Action_or_Individual_Plaintiffs"]["status"] == "not_applicable"
    # Not Applicable counts as empty in the value rows the compare stage takes
    rows = ws.store.value_rows("fake-1")
    assert {r["item"] for r in rows} == {"Filing_Date", "Type_of_Counsel"}
    assert rows[0] == {"case_id": "fake-1", "item": "Filing_Date", "index": 1, "value": "2021-03-03",
                       "evidence": ["Filed March 3, 2021."]}
    # appending Not Applicable is applied (as the release did) with a warning
    warn = ws.call("append_checklist", {"patch": [{"key": "Who_are_the_Parties",
                                                   "extracted": [value("Not Applicable", "x")]}]}, 5)
    assert warn.success and warn.result["warnings"]


def test_patch_validation_whole_call_or_entry():
    ws = workspace()
    for bad in ({}, {"patch": []}, {"patch": [{"extracted": [value("a", "b")]}]},
                {"patch": [{"key": "Filing_Date", "extracted": [{"value": "a", "evidence": [{"text": "b"}]}]}]},
                {"patch": [{"key": "Filing_Date", "extracted": [{"value": "a"}]}]}):
        out = ws.call("append_checklist", bad, 1)
        assert not out.success and not out.result["keys_updated"], bad
    assert all(not v for v in ws.store.values.values())
    partial = ws.call("append_checklist", {"patch": [{"key": "Nope", "extracted": [value("a", "b")]},
                                                     {"key": "Filing_Date", "extracted": [value("a", "b")]}]}, 2)
    assert not partial.success and partial.result["keys_updated"] == ["Filing_Date"]
    assert [e[1].get("keys_updated") for e in partial.events] == [["Filing_Date"], None]


def test_fuzzy_names_and_no_path_escape(tmp_path):
    ws = workspace()
    assert ws.corpus.resolve("Order Granting...").name == "Order Granting Preliminary Injunction"
    assert ws.corpus.resolve("  docket ").name == "Docket"
    secret = tmp_path / "secret.txt"
    secret.write_text("TOP SECRET")
    for name in (str(secret), "../secret.txt", "/etc/passwd", "../../etc/passwd"):
        out = ws.call("read_document", {"doc_name": name, "start_token": 0, "end_token": 10}, 1)
        assert not out.success and "not found" in out.result["error"]
        assert "TOP SECRET" not in json.dumps(out.result)


def test_catastrophic_regex_returns_error_in_bounded_time():
    c = Corpus.build("evil", ["a" * 30_000 + "!"], ["Evil"])
    ws = Workspace(c, AgentStore(["K"]), search_timeout=0.5)
    t0 = time.monotonic()
    out = ws.call("search_document_regex", {"pattern": "(a+)+$"[:-1] + "b", "doc_name": "all"}, 1)
    took = time.monotonic() - t0
    assert not out.success and "timed out" in out.result["error"]
    assert took < 30  # generous: bounded, not hung; the limit itself is measured in benchmarks/


# ------------------------------------------------------------------ parsing
def test_parse_action_forms():
    assert parse_action('{"tool": "list_documents", "args": {}}')[0] == {"tool": "list_documents", "args": {}}
    assert parse_action('thinking...\n```json\n{"decision": "stop", "reason": "ok"}\n```')[0]["decision"] == "stop"
    assert parse_action('{"name": "get_checklist", "arguments": "{\\"item\\": \\"all\\"}"}')[0]["args"] == {"item": "all"}
    assert parse_action("no json here")[0] is None
    assert parse_action("")[0] is None


# ------------------------------------------------------------------ the loop
def test_golden_snapshot():
    ws = workspace()
    state = AgentState(run_id="r", case_id="fake-1", configuration=config().path, model=MODEL)
    for step in (1, 2, 3):
        action = SCRIPT[step]
        out = ws.call(action["tool"], action["args"], step)
        state.step = step
        agent_mod._record(state, out)
    text = build_snapshot(config(), ws, state, 100)
    if os.environ.get("GAVEL_UPDATE_GOLDEN"):
        GOLDEN.write_text(text, encoding="utf-8")
    assert text == GOLDEN.read_text(encoding="utf-8"), "snapshot changed; rerun with GAVEL_UPDATE_GOLDEN=1 if intended"


def test_run_stop_protocol_files_and_replay(tmp_path):
    res = run_agent(corpus(), config(), scripted_model(), MODEL, tmp_path / "run", resume=False)
    assert res.end_reason == "stop" and res.steps == 8 and res.llm_calls == 7
    events = ledger_events(tmp_path / "run" / "ledger.jsonl")
    names = [(e["step"], e["event_name"]) for e in events]
    assert names[-3:] == [(6, "stop"), (7, "get_checklist"), (8, "stop")]
    assert [e["event"]["result"]["stop_count"] for e in events if e["event_name"] == "stop"] == [1, 2]
    stats = json.loads((tmp_path / "run" / "stats.json").read_text())
    assert stats["steps"] == 8 and len(stats["per_step_details"]) == 7
    assert {"system_tokens", "user_tokens", "completion_tokens", "total_prompt_tokens", "is_system_cached"} <= \
        set(stats["per_step_details"][0])
    released = json.loads((tmp_path / "run" / "checklist.json").read_text())
    assert set(released) == set(config().keys)
    assert set(released["Filing_Date"]) == {"extracted", "key", "last_updated"}
    # our ledger replays to our checklist, exactly as the release's do
    assert replay(events, config().keys).to_json().keys() == released.keys()
    assert {k: v["extracted"] for k, v in replay(events, config().keys).to_json().items()} == \
        {k: v["extracted"] for k, v in released.items()}
    # a rerun answers every call from the runner's cache
    again = run_agent(corpus(), config(), scripted_model(), MODEL, tmp_path / "run", resume=False)
    assert again.store.values == res.store.values


def test_step_limit(tmp_path):
    script = {s: {"tool": "search_document_regex", "args": {"pattern": f"word{s}"}} for s in range(1, 50)}
    res = run_agent(corpus(), config(), scripted_model(script), MODEL, tmp_path / "run", max_steps=5, resume=False)
    assert res.end_reason == "max_steps" and res.steps == 5 and res.llm_calls == 5


def test_refused_repeats_and_parse_errors(tmp_path):
    script = {1: SCRIPT[1], 2: SCRIPT[2], 3: SCRIPT[2], 4: "not json at all", 5: {"tool": "get_checklist", "args": {}},
              6: {"tool": "get_checklist", "args": {}}, 7: SCRIPT[3], 8: {"tool": "get_checklist", "args": {}},
              9: {"decision": "stop", "reason": "x"}, 11: {"decision": "stop", "reason": "x"}}
    res = run_agent(corpus(), config(), scripted_model(script), MODEL, tmp_path / "run", resume=False)
    events = {e["step"]: e for e in ledger_events(tmp_path / "run" / "ledger.jsonl")}
    assert events[3]["event"]["refused_repeat"] and "identical to the call of step 2" in events[3]["event"]["result"]["error"]
    assert events[4]["event_name"] == "parse_error"
    assert events[6]["event"].get("refused_repeat")  # checklist unchanged since step 5
    assert events[8]["event"]["success"]  # changed by step 7: allowed again
    assert res.end_reason == "stop"


def test_non_legal_checklist(tmp_path):
    cfg = load_yaml("research_paper")
    assert cfg.kind == "custom" and "Datasets" in cfg.keys
    paper = Corpus.build("paper", ["GAVEL: Agent Meets Checklist. We evaluate 12 models on 100 cases.",
                                   "Appendix A. The benchmark has five length bins."], ["Main text", "Appendix"])
    script = {1: {"tool": "search_document_regex", "args": {"pattern": r"\d+ models"}},
              2: {"tool": "update_checklist", "args": {"patch": [
                  {"key": "Title", "extracted": [value("GAVEL: Agent Meets Checklist", "GAVEL: Agent Meets Checklist",
                                                       "Main text")]},
                  {"key": "Limitations", "extracted": [value("Not Applicable", "none stated", "Main text")]}]}},
              3: {"decision": "stop", "reason": "x"}, 5: {"decision": "stop", "reason": "x"}}
    res = run_agent(paper, cfg, scripted_model(script), MODEL, tmp_path / "run", resume=False)
    assert res.end_reason == "stop"
    assert res.store.status("Title") == "filled" and res.store.status("Limitations") == "not_applicable"
    snapshot_requests = list((tmp_path / "run" / "llm" / "cache").rglob("*.json"))
    assert snapshot_requests  # went through the runner's cache
    with pytest.raises(ValueError):
        load_yaml(_write(tmp_path / "bad.yaml", "items:\n  - key: A\n"))


def _write(path, text):
    path.write_text(text)
    return path


@pytest.mark.parametrize("mode", ["before", "after"])
def test_sigkill_then_resume(tmp_path, mode):
    """Kill the run mid-step (before or after the step's ledger lines are written); resuming ends with the
    same checklist as an uninterrupted run, no duplicated ledger step, and no paid call made twice."""
    reference = run_agent(corpus(), config(), scripted_model(), MODEL, tmp_path / "ref", resume=False)
    out, paid = tmp_path / "run", tmp_path / "paid.log"
    worker = [sys.executable, str(Path(__file__).parent / "agent_script.py"), str(out), str(paid), "5", mode]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(Path(__file__).parent.parent), str(Path(__file__).parent)])}
    first = subprocess.run(worker, capture_output=True, text=True, env=env, timeout=300)
    assert first.returncode == -9, first.stderr[-2000:]
    state = json.loads((out / "state.json").read_text())
    assert state["step"] == 4  # the killed step was not saved
    second = subprocess.run(worker, capture_output=True, text=True, env=env, timeout=300)
    assert second.returncode == 0, second.stderr[-2000:]
    assert json.loads(second.stdout.strip().splitlines()[-1]) == {"end": "stop", "steps": 8, "resumed": True}
    ids = [line.split()[1] for line in paid.read_text().splitlines()]
    assert len(ids) == len(set(ids)) == 7  # every paid call once
    steps = [e["step"] for e in ledger_events(out / "ledger.jsonl")]
    assert steps == sorted(steps) and len(steps) == len(set(steps))
    got = json.loads((out / "checklist.json").read_text())
    assert {k: v["extracted"] for k, v in got.items()} == \
        {k: v["extracted"] for k, v in reference.store.to_json().items()}


def test_cli_agent_array_and_methods(tmp_path, capsys):
    from gavel.cli import main
    from gavel.documents.corpus import write_folder

    case = write_folder(corpus(), tmp_path / "cases" / "fake-1")
    out = tmp_path / "out"
    assert main(["documents", "agent", str(case), "--provider", "mock", "--model", MODEL, "--out", str(out),
                 "--config", "grouped/03_judge_info", "--max-steps", "3"]) == 0
    line = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert line["end"] == "max_steps" and line["steps"] == 3  # the mock's echo answers are parse errors
    run = out / MODEL / "fake-1" / "grouped" / "03_judge_info"
    assert {"checklist.json", "ledger.jsonl", "stats.json", "state.json"} <= {p.name for p in run.iterdir()}
    script = tmp_path / "job" / "agent.sbatch"
    assert main(["documents", "agent-array", str(tmp_path / "cases"), "--config", "individual", "--provider", "vllm",
                 "--base-url", "http://127.0.0.1:8000/v1", "--model", MODEL, "--out", str(out),
                 "--script", str(script)]) == 0
    tasks = (tmp_path / "job" / "agent_tasks.tsv").read_text().splitlines()
    assert len(tasks) == 26 and tasks[0].split("\t")[1:] == ["", "individual/01_filing_date"]
    text = script.read_text()
    assert "#SBATCH --array=1-26%32" in text
    assert subprocess.run(["bash", "-n", str(script)]).returncode == 0
    assert main(["documents", "chunked", str(case), "--provider", "mock", "--model", MODEL, "--out", str(out),
                 "--items", "judge_name", "--chunk-tokens", "500"]) == 0
    assert (out / MODEL / "fake-1" / "merge_log.jsonl").read_text().count('"error"') >= 3


def test_agent_array_leaves_out_runs_that_ended(tmp_path, capsys):
    """A rerun of `agent-array` submits only the runs that have not ended (issue 48 §1)."""
    from gavel.cli import main
    from gavel.documents.corpus import write_folder

    write_folder(corpus(), tmp_path / "cases" / "fake-1")
    out, script = tmp_path / "out", tmp_path / "job" / "agent.sbatch"
    argv = ["documents", "agent-array", str(tmp_path / "cases"), "--config", "individual", "--provider", "vllm",
            "--model", MODEL, "--out", str(out), "--script", str(script), "--max-steps", "3"]
    assert main(["documents", "agent", str(tmp_path / "cases" / "fake-1"), "--provider", "mock", "--model", MODEL,
                 "--out", str(out), "--config", "individual/01_filing_date", "--max-steps", "3"]) == 0
    capsys.readouterr()
    assert main(argv) == 0
    assert "1 of 26 runs have ended and are left out" in capsys.readouterr().out
    tasks = (tmp_path / "job" / "agent_tasks.tsv").read_text().splitlines()
    assert len(tasks) == 25 and not any(t.endswith("individual/01_filing_date") for t in tasks)
    assert "#SBATCH --array=1-25%32" in script.read_text()


def test_native_tool_calls(tmp_path):
    """The OpenAI-compatible tool-call API: tools go out as functions, the call comes back as the answer's
    tool call (parse_chat keeps it as JSON text), and the loop runs on it."""
    from gavel.documents.agent import TOOL_SPECS
    from gavel.llm.providers.openai_batch import parse_chat
    from gavel.llm.providers.vllm import VLLMServer

    body = {"choices": [{"message": {"content": None, "tool_calls": [
        {"id": "c1", "type": "function", "function": {"name": "read_document",
                                                      "arguments": '{"doc_name": "Docket", "start_token": 0, "end_token": 50}'}}]}}],
        "usage": {"prompt_tokens": 10, "completion_tokens": 5}}
    resp = parse_chat("x", body, "vllm")
    assert parse_action(resp.text)[0] == {"tool": "read_document",
                                          "args": {"doc_name": "Docket", "start_token": 0, "end_token": 50}}
    stop = json.dumps({"tool_calls": [{"name": "stop", "arguments": '{"reason": "done"}'}]})
    assert parse_action(stop)[0] == {"decision": "stop", "reason": "done"}

    def native(action):
        if "decision" in action:
            return json.dumps({"tool_calls": [{"name": "stop", "arguments": json.dumps({"reason": action["reason"]})}]})
        return json.dumps({"tool_calls": [{"name": action["tool"], "arguments": json.dumps(action["args"])}]})

    script = {k: native(v) for k, v in SCRIPT.items()}
    seen = []
    provider = scripted_model(script)
    inner = provider.answer
    provider.answer = lambda r: (seen.append(r), inner(r))[1]
    res = run_agent(corpus(), config(), provider, MODEL, tmp_path / "run", resume=False, tool_mode="native")
    assert res.end_reason == "stop" and res.store.status("Type_of_Counsel") == "filled"
    assert seen[0].params["tools"] == TOOL_SPECS and seen[0].schema is None
    assert {t["function"]["name"] for t in TOOL_SPECS} == {*agent_mod.TOOLS, "stop"}
    sent = VLLMServer(client=object()).body(seen[0].__class__(**{**seen[0].__dict__, "model": "gpt-oss-20b-BF16"}))
    assert sent["tools"] == TOOL_SPECS and sent["tool_choice"] == "auto"


def test_resume_with_a_larger_step_limit_goes_on(tmp_path):
    first = run_agent(corpus(), config(), scripted_model(), MODEL, tmp_path / "run", max_steps=3, resume=False)
    assert first.end_reason == "max_steps" and first.steps == 3
    more = run_agent(corpus(), config(), scripted_model(), MODEL, tmp_path / "run", max_steps=100)
    assert more.resumed and more.end_reason == "stop" and more.steps == 8
    assert more.llm_calls == 7  # the three earlier calls are counted once, not repeated
