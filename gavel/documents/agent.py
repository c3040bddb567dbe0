"""The Gavel-Agent loop (paper §4.1): one model call per step, a fresh snapshot each time.

Each step the model gets the system prompt (``prompts/agent.txt``) and a *snapshot* built from the run's
state: the task, the checklist definitions, the document catalog with the token ranges already read and the
coverage, the checklist summary, and the last 100 actions (the 5 most recent with their full results, the
rest in one line). It answers with one JSON action (a tool call or a stop), schema-constrained where the
provider supports it.

* **Two-stage stop.** The first stop makes the driver run ``get_checklist`` itself (its own step, as in the
  release's ledgers) so the model reviews the whole checklist; the second stop ends the run. A counter guards
  the end: no run goes on after its second stop.
* **Step limit.** ``max_steps`` counts every step, the driver's automatic one included (the release's
  ``stats.json`` does the same; LLM calls are ``len(per_step_details)``).
* **Refused repeats.** A call identical (tool and arguments) to an earlier successful one is refused with an
  error instead of run; ``get_checklist`` only when the checklist has not changed since.
* **Parse failures** are recorded (``parse_error``) with the raw answer's reason and the run goes on: the
  next snapshot shows the error, so the next request differs.
* **Files** (release field names): ``checklist.json``, ``ledger.jsonl`` (one event per line), ``stats.json``
  (per-step tokens), and ``state.json``, everything needed to resume.
* **Resume.** ``state.json`` is written atomically after each step, after the step's ledger lines. A killed
  run restarts from it, drops ledger lines of an unfinished step, and rebuilds the same snapshot, so the
  request of the interrupted step is answered from the runner's cache: no paid call is repeated.

Every call goes through ``StageRunner.run(..., mode="online")`` (cache, key scrubbing, manifest). Nothing
in the snapshot depends on the clock, so the same state always gives the same request.
"""

from __future__ import annotations

import copy
import json
import os
import time
import uuid
from dataclasses import asdict, dataclass, field
from pathlib import Path

from gavel.answers import Unusable, read
from gavel.core import jsonl
from gavel.core.tokens import count_tokens
from gavel.ref.prompts import render_messages

from ..llm.pace import capped, duration, say_now
from ..llm.records import Request, canonical_json
from ..llm.runner import StageRunner
from .configs import ExtractionConfig
from .corpus import Corpus
from .store import NOT_APPLICABLE, AgentStore, json_text, write_json_atomic
from .tools import TOOLS, Outcome, Workspace, escaped, now

STAGE = "agent"
PROMPT = "agent"
MAX_STEPS = 100
HISTORY = 100
RECENT_FULL = 5
MAX_STOPS = 2

ACTION_SCHEMA = {
    "name": "agent_action",
    "schema": {
        "type": "object",
        "properties": {
            "tool": {"type": "string", "enum": list(TOOLS)},
            "args": {"type": "object"},
            "decision": {"type": "string", "enum": ["stop"]},
            "reason": {"type": "string"},
        },
    },
}


TOOL_MODES = ("json", "native")
ACTION_FORMAT = {
    "json": ('Answer with one JSON object and nothing else.\n'
             'To call a tool:  {"tool": "<tool name>", "args": {...}}\n'
             'To finish:       {"decision": "stop", "reason": "<short justification>"}'),
    "native": ("Call exactly one of the functions you are given (the six tools below, or `stop` with a short "
               "`reason` to finish)."),
}

_S, _I = {"type": "string"}, {"type": "integer"}
_PATCH = {"type": "array", "items": {"type": "object", "properties": {
    "key": _S, "extracted": {"type": "array", "items": {"type": "object", "properties": {
        "value": _S, "evidence": {"type": "array", "items": {"type": "object", "properties": {
            "text": _S, "source_document": _S, "location": _S}, "required": ["text", "source_document", "location"]}}},
        "required": ["value", "evidence"]}}}, "required": ["key", "extracted"]}}
_TOOL_PARAMS = {
    "list_documents": {},
    "read_document": {"doc_name": _S, "start_token": _I, "end_token": _I},
    "search_document_regex": {"pattern": _S, "doc_name": _S, "doc_names": {"type": "array", "items": _S},
                              "flags": {"type": "array", "items": {"type": "string",
                                                                   "enum": ["IGNORECASE", "MULTILINE", "DOTALL"]}},
                              "top_k": _I, "context_tokens": _I},
    "get_checklist": {"item": _S, "items": {"type": "array", "items": _S}},
    "append_checklist": {"patch": _PATCH},
    "update_checklist": {"patch": _PATCH},
    "stop": {"reason": _S},
}
_REQUIRED = {"read_document": ["doc_name", "start_token", "end_token"], "search_document_regex": ["pattern"],
             "append_checklist": ["patch"], "update_checklist": ["patch"], "stop": ["reason"]}
#: The tools in the OpenAI-compatible function-calling form (vLLM serves them with its tool-call parser).
TOOL_SPECS = [{"type": "function", "function": {"name": name, "parameters": {
    "type": "object", "properties": props, "required": _REQUIRED.get(name, [])}}} for name, props in _TOOL_PARAMS.items()]


class AgentError(RuntimeError):
    pass


# ------------------------------------------------------------------ parsing the model's answer
def parse_action(text: str | None, finish_reason: str | None = "stop") -> tuple[dict | None, str]:
    """``(action, "")`` or ``(None, reason)``, read by ``gavel.answers.read("agent_action", ...)``: an action is
    ``{"tool", "args"}`` (``update_checklist`` also says which keys it sets to Not Applicable) or
    ``{"decision": "stop", "reason"}``; exactly one per answer. Limits stay the tools' job."""
    try:
        return read("agent_action", text, finish_reason), ""
    except Unusable as err:
        return None, f"{err.reason}: {err.detail}" if err.detail else err.reason


# ------------------------------------------------------------------ state
@dataclass
class AgentState:
    run_id: str
    case_id: str
    configuration: str
    model: str
    step: int = 0
    stop_count: int = 0
    auto_review_due: bool = False
    ended: str | None = None  # why the run ended: stop, max_steps, llm_error
    store_version: int = 0
    history: list = field(default_factory=list)  # {step, tool, args, brief, success, full?}
    done_calls: dict = field(default_factory=dict)  # call key -> step of the successful call
    checklist: dict = field(default_factory=dict)  # store.to_json()
    viewed: dict = field(default_factory=dict)
    catalog_listed: bool = False
    per_step: list = field(default_factory=list)  # stats.json per_step_details
    provider_tokens: dict = field(default_factory=lambda: {"input": 0, "output": 0, "cached_calls": 0})
    corpus_hash: str = ""  # Corpus.fingerprint of the documents the run read ("" in runs saved before it was kept)


def call_key(tool: str, args: dict, store_version: int) -> str:
    key = {"tool": tool, "args": args}
    if tool == "get_checklist":
        key["version"] = store_version
    return canonical_json(key)


# ------------------------------------------------------------------ snapshot
def _ranges(ranges) -> str:
    return ", ".join(f"{s}-{e}" for s, e in ranges)


def build_snapshot(config: ExtractionConfig, ws: Workspace, state: AgentState, max_steps: int) -> str:
    """The user message of one step: only the run's state, never the clock."""
    corpus, store = ws.corpus, ws.store
    lines = [f"# Run\nStep {state.step + 1} of at most {max_steps}. Case {corpus.case_id}. "
             f"Stop decisions so far: {state.stop_count}.", "", f"# Task\n{config.task}", "",
             f"# Checklist definitions ({len(config.keys)} keys)"]
    lines += [f"- {k}: {config.definitions[k]}" for k in config.keys]
    total = corpus.total_tokens
    seen = sum(ws.viewed_tokens(d.name) for d in corpus.documents)
    lines += ["", f"# Documents ({len(corpus.documents)} documents, {total:,} tokens; "
                  f"{100 * seen / max(total, 1):.1f}% read)"]
    if not ws.catalog_listed:
        lines.append("Catalog not listed yet: call list_documents.")
    else:
        for i, d in enumerate(corpus.documents, 1):
            status = ws.visit_status(d.name)
            meta = ", ".join(x for x in (d.doc_type, d.date or "") if x)
            line = f"{i}. {d.name}" + (f" ({meta})" if meta else "") + f": {d.token_count:,} tokens, {status}"
            if ws.viewed[d.name] and status != "Fully Visited":
                line += f"; viewed tokens: {_ranges(ws.viewed[d.name])}"
            lines.append(line)
    lines += ["", "# Checklist summary"]
    groups = {"filled": [], "not_applicable": [], "empty": []}
    for k in config.keys:
        groups[store.status(k)].append(k)
    lines.append("Filled: " + (", ".join(f"{k} ({len(store.values[k])} value"
                                         f"{'s' if len(store.values[k]) != 1 else ''})" for k in groups["filled"])
                               or "none"))
    lines.append(f"{NOT_APPLICABLE}: " + (", ".join(groups["not_applicable"]) or "none"))
    lines.append("Empty: " + (", ".join(groups["empty"]) or "none"))
    recent = state.history[-HISTORY:]
    lines += ["", f"# Recent actions ({len(recent)} of {len(state.history)}; oldest first)"]
    if not recent:
        lines.append("none yet")
    full_from = max(0, len(recent) - RECENT_FULL)
    for i, h in enumerate(recent):
        head = f"[step {h['step']}] {h['tool']}" + (f" {canonical_json(h['args'])[:200]}" if h["args"] else "")
        if i < full_from or "full" not in h:
            lines.append(f"{head} -> {h['brief']}")
        else:
            lines.append(f"{head}\n  result: {h['full']}")
    if state.stop_count == 1:
        lines += ["", "You asked to stop; the checklist above and the get_checklist result show what you "
                      "extracted. Continue if something is missing, or stop again to finish."]
    lines += ["", "Answer with one JSON action."]
    return "\n".join(lines)


# ------------------------------------------------------------------ files
class RunFiles:
    def __init__(self, out_dir: str | Path):
        self.dir = Path(out_dir)
        self.checklist = self.dir / "checklist.json"
        self.ledger = self.dir / "ledger.jsonl"
        self.stats = self.dir / "stats.json"
        self.state = self.dir / "state.json"

    def append_events(self, state: AgentState, events: list) -> None:
        self.dir.mkdir(parents=True, exist_ok=True)
        with open(self.ledger, "a", encoding="utf-8") as fh:
            for name, body in events:
                fh.write(json_text({"event_name": name, "event": body, "run_id": state.run_id,
                                    "step": body.get("step", state.step)}) + "\n")
            fh.flush()
            os.fsync(fh.fileno())

    def truncate_ledger(self, last_step: int) -> int:
        """Drop ledger lines of steps after ``last_step`` (an interrupted step); returns how many."""
        if not self.ledger.exists():
            return 0
        keep, dropped = [], 0
        for line in jsonl.read_file(self.ledger):
            if not isinstance(line.value, dict) or line.value.get("step", 0) <= last_step:
                keep.append(line.text)
            else:
                dropped += 1
        if dropped:
            tmp = self.ledger.with_suffix(".tmp")
            tmp.write_text("".join(x + "\n" for x in keep), encoding="utf-8")
            os.replace(tmp, self.ledger)
        return dropped


def stats_json(state: AgentState) -> dict:
    per = state.per_step
    return {"model": state.model, "steps": state.step,
            "total_system_prompt_tokens": sum(p["system_tokens"] for p in per),
            "total_user_prompt_tokens": sum(p["user_tokens"] for p in per),
            "total_completion_tokens": sum(p["completion_tokens"] for p in per),
            "per_step_details": per,
            # gavel's additions
            "run_id": state.run_id, "case_id": state.case_id, "configuration": state.configuration,
            "llm_calls": len(per), "end_reason": state.ended,
            "provider_input_tokens": state.provider_tokens["input"],
            "provider_output_tokens": state.provider_tokens["output"],
            "cached_calls": state.provider_tokens["cached_calls"]}


# ------------------------------------------------------------------ the loop
@dataclass
class AgentResult:
    out_dir: Path
    end_reason: str | None
    steps: int
    llm_calls: int
    store: AgentStore
    resumed: bool

    def value_rows(self, case_id: str, item_of=None) -> list[dict]:
        return self.store.value_rows(case_id, item_of)


def _record(state: AgentState, outcome: Outcome, keep_full: bool = True) -> None:
    # escaped: a lone surrogate from the model (a stop reason, a tool name) must not reach the next request
    entry = escaped({"step": state.step, "tool": outcome.tool, "args": outcome.args, "brief": outcome.brief,
                     "success": outcome.success})
    if keep_full:
        entry["full"] = escaped(json.dumps(outcome.result, ensure_ascii=False))
    state.history.append(entry)
    # full results are shown for the most recent actions only; drop older ones from the saved state
    for h in state.history[:-RECENT_FULL]:
        h.pop("full", None)
    del state.history[:-HISTORY]


def agent_params(model: str, params: dict | None = None, tool_mode: str = "json") -> dict:
    """A turn's request params: at the agent stage's output cap on ``model`` (``gavel.llm.pace.capped``), with
    the tools as functions in ``native`` tool mode."""
    params = capped(params, model, STAGE)
    if tool_mode == "native":
        params.update(tools=TOOL_SPECS, tool_choice="auto")
    return params


def turn_request(config: ExtractionConfig, ws: Workspace, state: AgentState, max_steps: int, model: str,
                 params: dict, tool_mode: str = "json") -> Request:
    """The request of the turn after ``state`` (``agent_params``' params): the system prompt and the snapshot."""
    messages = render_messages(PROMPT, snapshot=build_snapshot(config, ws, state, max_steps),
                               action_format=ACTION_FORMAT[tool_mode])
    return Request(stage=STAGE, model=model, messages=messages, params=params, case_id=ws.corpus.case_id,
                   item=config.path, schema=ACTION_SCHEMA if tool_mode == "json" else None)


def first_turn(corpus: Corpus, config: ExtractionConfig, model: str, max_steps: int = MAX_STEPS,
               params: dict | None = None, tool_mode: str = "json") -> Request:
    """The first turn's request of a fresh run (what a forecast of a turn's duration starts from)."""
    ws = Workspace(corpus, AgentStore(config.keys))  # its search worker starts on first search: never here
    state = AgentState(run_id="", case_id=corpus.case_id, configuration=config.path, model=model)
    return turn_request(config, ws, state, max_steps, model, agent_params(model, params, tool_mode), tool_mode)


def run_agent(corpus: Corpus, config: ExtractionConfig, provider, model: str, out_dir: str | Path,
              max_steps: int = MAX_STEPS, resume: bool = True, runner: StageRunner | None = None,
              params: dict | None = None, search_timeout: float | None = None,
              tool_mode: str = "json", pace=None) -> AgentResult:
    """Run (or resume) one agent on one corpus with one extraction configuration. ``tool_mode`` ``json``:
    actions as JSON text (any model; the answer schema is attached to the request); ``native``: the tools
    are sent as functions in the request (an OpenAI-compatible server's tool-call API, e.g. vLLM serving
    Qwen3 or gpt-oss with its tool-call parser) and the call comes back as the answer's tool call.
    ``pace`` (a function, e.g. a ``gavel.llm.pace.Announcer``): called before the first turn that is not
    answered from the cache (it says the run's expected duration), and each model turn prints one line."""
    if tool_mode not in TOOL_MODES:
        raise AgentError(f"tool_mode must be one of {TOOL_MODES}, got {tool_mode!r}")
    if not corpus.documents:
        raise AgentError(f"case {corpus.case_id}: no documents to read; nothing to run")
    params = agent_params(model, params, tool_mode)
    files = RunFiles(out_dir)
    cached = False
    runner = runner or StageRunner(STAGE, provider, files.dir / "llm", progress=False, namespace=config.cache_tag)
    store = AgentStore(config.keys)
    ws = Workspace(corpus, store, **({"search_timeout": search_timeout} if search_timeout else {}))
    resumed = False
    if resume and files.state.exists():
        state = AgentState(**json.loads(files.state.read_text(encoding="utf-8")))
        if (state.case_id, state.configuration) != (corpus.case_id, config.path):
            raise AgentError(f"{files.state}: belongs to case {state.case_id} / {state.configuration}, "
                             f"not {corpus.case_id} / {config.path}")
        if state.corpus_hash and state.corpus_hash != corpus.fingerprint:
            raise AgentError(f"{files.state}: the case's documents changed since this run read them (corpus "
                             f"{state.corpus_hash[:12]}, now {corpus.fingerprint[:12]}); refusing to resume it "
                             f"over other documents: start over with --fresh (resume=False), or use another --out")
        state.corpus_hash = corpus.fingerprint
        loaded = AgentStore.from_json(state.checklist, keys=config.keys)
        store.values, store.updated = loaded.values, loaded.updated
        ws.viewed.update({k: [list(r) for r in v] for k, v in state.viewed.items()})
        ws.catalog_listed = state.catalog_listed
        files.truncate_ledger(state.step)
        resumed = True
        if state.ended == "llm_error" or (state.ended == "max_steps" and state.step < max_steps):
            state.ended = None  # a failed call is tried again; a larger step limit lets the run go on
    else:
        for f in (files.ledger, files.state, files.stats, files.checklist):
            if f.exists():
                f.unlink()
        state = AgentState(run_id=str(uuid.uuid4()), case_id=corpus.case_id, configuration=config.path,
                           model=model, corpus_hash=corpus.fingerprint)

    def save(events: list, turn: float | None = None) -> None:
        if turn is not None and pace is not None:  # progress: one line per model turn (the model's text shown
            brief = "".join(c if c.isprintable() else " " for c in state.history[-1]["brief"][:100])  # inert)
            say_now(f"  turn {state.step} of at most {max_steps}: {brief} "
                    f"({'from the cache' if cached else duration(time.perf_counter() - turn)})")
        files.append_events(state, events)
        state.checklist = store.to_json()
        state.viewed = copy.deepcopy(ws.viewed)
        state.catalog_listed = ws.catalog_listed
        store.save(files.checklist)
        write_json_atomic(files.stats, stats_json(state))
        write_json_atomic(files.state, asdict(state), indent=None)

    while state.ended is None:
        if state.step >= max_steps:
            state.ended = "max_steps"
            save([])
            break
        state.step += 1
        if state.auto_review_due:  # the driver's own step after a first stop
            state.auto_review_due = False
            outcome = ws.call("get_checklist", {}, state.step)
            _record(state, outcome)
            save(outcome.events)
            continue
        request = turn_request(config, ws, _previous(state), max_steps, model, params, tool_mode)
        messages = request.messages
        cached = runner.is_cached(request)
        if callable(pace) and not cached:
            pace()  # first uncached turn: the speed is measured and the run's duration said (Announcer)
        t0 = time.perf_counter()
        report = runner.run([request], mode="online")
        response = report.responses[request.custom_id]
        if not response.ok:
            state.step -= 1
            state.ended = "llm_error"
            save([("llm_error", {"timestamp": now(), "tool_name": "llm_error", "args": {},
                                 "result": {"error": response.error}, "success": False, "step": state.step + 1})])
            break
        system = "\n".join(m["content"] for m in messages if m["role"] == "system")
        user = "\n".join(m["content"] for m in messages if m["role"] != "system")
        state.per_step.append({"step": state.step, "system_tokens": count_tokens(system),
                               "user_tokens": count_tokens(user),
                               "completion_tokens": response.output_tokens if response.output_tokens is not None
                               else count_tokens(response.text or ""),
                               "total_prompt_tokens": 0, "is_system_cached": len(state.per_step) > 0})
        state.per_step[-1]["total_prompt_tokens"] = state.per_step[-1]["system_tokens"] + state.per_step[-1]["user_tokens"]
        state.provider_tokens["input"] += response.input_tokens or 0
        state.provider_tokens["output"] += response.output_tokens or 0
        state.provider_tokens["cached_calls"] += int(cached)
        action, error = parse_action(response.text, response.finish_reason)
        if action is None:
            outcome = Outcome("parse_error", {}, {"error": error}, False, f"answer not understood: {error}")
            outcome.events = [("parse_error", {"timestamp": now(), "tool_name": "parse_error",
                                               "args": {"error": error}, "result": {"error": error},
                                               "success": False, "step": state.step})]
            _record(state, outcome)
            save(outcome.events, t0)
            continue
        if "decision" in action:
            state.stop_count += 1
            ev = ("stop", {"timestamp": now(), "tool_name": "stop", "args": {"reason": action["reason"]},
                           "result": {"stop_count": state.stop_count, "decision": "stop"}, "success": True,
                           "step": state.step})
            _record(state, Outcome("stop", {"reason": action["reason"]}, {}, True,
                                   f"stop #{state.stop_count}: {action['reason'][:100]}"), keep_full=False)
            if state.stop_count >= MAX_STOPS:
                state.ended = "stop"
            else:
                state.auto_review_due = True
            save([ev], t0)
            continue
        tool, args = action["tool"], action["args"]
        key = call_key(tool, args, state.store_version)
        if key in state.done_calls:
            error = (f"refused: identical to the call of step {state.done_calls[key]}, whose result you already "
                     f"have; choose a different action")
            outcome = Outcome(tool, args, {"error": error}, False, error)
            outcome.events = [(tool if tool in TOOLS else "unknown_tool",
                               {"timestamp": now(), "tool_name": tool, "args": args, "result": {"error": error},
                                "success": False, "step": state.step, "refused_repeat": True})]
        else:
            outcome = ws.call(tool, args, state.step)
            if outcome.success:
                state.done_calls[key] = state.step
            if tool in ("append_checklist", "update_checklist") and outcome.result.get("keys_updated"):
                state.store_version += 1
        _record(state, outcome)
        save(outcome.events, t0)
    return AgentResult(files.dir, state.ended, state.step, len(state.per_step), store, resumed)


def _previous(state: AgentState) -> AgentState:
    """The snapshot describes the state before the step being taken (``step`` already counts it)."""
    view = copy.copy(state)
    view.step = state.step - 1
    return view


# ------------------------------------------------------------------ collecting runs for evaluation
def item_name(key: str) -> str:
    """The spaced item name of a legal key (``Filing_Date`` -> ``Filing Date``); other keys unchanged."""
    from gavel.core import items as gitems

    try:
        return gitems.item(key).name
    except gitems.UnknownItemError:
        return key


def collect_runs(root: str | Path):
    """Value rows and token rows of every agent run under ``root`` laid out as ``MODEL/CASE/KIND/NAME/``
    (our output folder, or the release's ``document_checklists/gavel_agent``).

    Returns two DataFrames: ``values`` (model, configuration, case_id, item, index, value, evidence; Not
    Applicable keys give no rows, as the release's judge treated them as empty) and ``tokens`` (one row per
    run: model, configuration, unit, case_id, steps, llm_calls, input_tokens = system + user prompt tokens,
    output_tokens, end_reason)."""
    import pandas as pd

    values, tokens = [], []
    root = Path(root)
    for checklist in sorted(root.glob("*/*/*/*/checklist.json")):
        run = checklist.parent
        model, case_id, kind, unit = run.parts[-4:]
        try:
            data = json.loads(checklist.read_text(encoding="utf-8"))
        except json.JSONDecodeError as err:
            raise ValueError(f"{checklist}: not JSON ({err})") from None
        store = AgentStore.from_json(data, clock=lambda: None)
        for row in store.value_rows(case_id, item_name):
            values.append({"model": model, "configuration": kind, "unit": unit, **row})
        stats_path = run / "stats.json"
        if stats_path.exists():
            s = json.loads(stats_path.read_text(encoding="utf-8"))
            tokens.append({"model": model, "configuration": kind, "unit": unit, "case_id": case_id,
                           "steps": s.get("steps"), "llm_calls": len(s.get("per_step_details") or []),
                           "input_tokens": (s.get("total_system_prompt_tokens") or 0)
                           + (s.get("total_user_prompt_tokens") or 0),
                           "output_tokens": s.get("total_completion_tokens") or 0,
                           "end_reason": s.get("end_reason")})
    return (pd.DataFrame(values, columns=["model", "configuration", "unit", "case_id", "item", "index", "value",
                                          "evidence"]),
            pd.DataFrame(tokens, columns=["model", "configuration", "unit", "case_id", "steps", "llm_calls",
                                          "input_tokens", "output_tokens", "end_reason"]))


def tokens_per_case(tokens):
    """Input, output and total tokens per (model, configuration, case): the sum over the configuration's runs
    (1, 9 or 26 agents), the quantity of the paper's Figures 5 and 8."""
    per_case = tokens.groupby(["model", "configuration", "case_id"], as_index=False)[["input_tokens",
                                                                                       "output_tokens"]].sum()
    per_case["total_tokens"] = per_case["input_tokens"] + per_case["output_tokens"]
    return per_case
