"""The six Gavel-Agent tools (paper §4.1) over one corpus and one agent store, with the paper's limits.

``Workspace.call(tool, args, step)`` runs one call and returns an ``Outcome``: the result the model sees, a
one-line brief for the action history, and the ledger events in the release's field names. No input from
the model makes ``call`` raise: a call is either executed or refused as a failed call (``{"error": ...}``,
``success: false``) that the model sees in its next snapshot and the ledger records.

Limits (the constants below and in ``checklist``/``search_worker``; docs/documents.md's "The agent's tool limits"
lists them all): ``read_document`` at most ``READ_LIMIT`` (10,000) tokens per call (a larger range is
refused, not clipped); ``search_document_regex`` ``top_k`` 1–20 (the release's own bound),
``context_tokens`` 100–1,000, patterns of at most ``MAX_PATTERN_CHARS`` characters, a time limit per search
(default 2 s over all documents searched, ``regex``'s ``timeout``) and, because compiling a pattern can
itself take unbounded memory and time, compiling and matching in a worker process limited to
``SEARCH_MEMORY_BYTES`` of address space (plus the corpus text) and killed ``COMPILE_GRACE_S`` after the time
limit (``search_worker``). Numeric arguments must be integers (an integral float such as ``200.0`` is
taken; ``Infinity``/``NaN``/``1.5`` are refused). Every string in the arguments must be valid Unicode text: a
lone surrogate (``"\\ud800"`` in the model's JSON) is refused, naming the argument, and the arguments echoed in
the ledger and the history show it escaped. Arguments larger than ``MAX_ECHO_ARGS_CHARS`` (as JSON) are
echoed as a preview. Patch caps: ``checklist.PATCH_LIMITS``. Document names are looked up in the catalog only
(``Corpus.resolve``), never used as paths.
"""

from __future__ import annotations

import bisect
import json
import math
import time
from dataclasses import dataclass, field
from datetime import datetime

import regex

from gavel.core.vocab import AGENT_TOOLS

from .corpus import Corpus, DocumentNotFoundError, is_text
from .search_worker import COMPILE_GRACE_S, SEARCH_MEMORY_BYTES, SearchRefused, SearchWorker  # noqa: F401
from .store import NOT_APPLICABLE, AgentStore

TOOLS = AGENT_TOOLS
READ_LIMIT = 10_000
TOP_K_MAX = 20
TOP_K_DEFAULT = 5
CONTEXT_MIN, CONTEXT_MAX, CONTEXT_DEFAULT = 100, 1_000, 200
SEARCH_TIMEOUT_S = 2.0
FLAGS = {"IGNORECASE": regex.IGNORECASE, "MULTILINE": regex.MULTILINE, "DOTALL": regex.DOTALL}
MAX_PATTERN_CHARS = 2_000
MAX_ECHO_ARGS_CHARS = 100_000  # arguments echoed in the ledger / history beyond this are shown as a preview
ECHO_PREVIEW_CHARS = 2_000


def now() -> str:
    return datetime.now().astimezone().isoformat()


@dataclass
class Outcome:
    tool: str
    args: dict
    result: dict
    success: bool
    brief: str
    events: list = field(default_factory=list)  # (event_name, event body) in the release's shape


def merge_ranges(ranges: list) -> list:
    out = []
    for s, e in sorted(ranges):
        if out and s <= out[-1][1]:
            out[-1][1] = max(out[-1][1], e)
        else:
            out.append([s, e])
    return out


class Workspace:
    """What the tools act on: the corpus, the store, and which token ranges of each document were read."""

    def __init__(self, corpus: Corpus, store: AgentStore, search_timeout: float = SEARCH_TIMEOUT_S,
                 clock=now):
        self.corpus = corpus
        self.store = store
        self.search_timeout = search_timeout
        self.clock = clock
        self.viewed: dict[str, list] = {d.name: [] for d in corpus.documents}
        self.catalog_listed = False
        self.search_worker = SearchWorker([d.text for d in corpus.documents])
        self._doc_index = {d.name: i for i, d in enumerate(corpus.documents)}

    def close(self) -> None:
        """Stop the search worker (it also stops when the workspace is garbage-collected or Python exits)."""
        self.search_worker.close()

    # ---- coverage ----
    def mark_viewed(self, name: str, start: int, end: int) -> None:
        if end > start:
            self.viewed[name] = merge_ranges(self.viewed[name] + [[start, end]])

    def viewed_tokens(self, name: str) -> int:
        return sum(e - s for s, e in self.viewed[name])

    def visit_status(self, name: str) -> str:
        seen, total = self.viewed_tokens(name), self.corpus.by_name[name].token_count
        if total and seen >= total:
            return "Fully Visited"
        return "Partially Visited" if seen else "Not Visited"

    # ---- dispatch ----
    def call(self, tool, args, step: int) -> Outcome:
        """Run one tool call; never raises on the model's input (see the module docstring)."""
        tool_text = tool if isinstance(tool, str) else repr(tool)
        if not is_text(tool_text):
            tool_text = _escape(tool_text)
        args = {} if args is None else args
        if not isinstance(args, dict):
            return self._fail(tool_text, {}, step, f"arguments must be a JSON object, got {type(args).__name__}")
        try:
            shown = echo_args(args)
        except (RecursionError, ValueError, TypeError) as err:  # too deep or not JSON-shaped
            return self._fail(tool_text, {}, step, f"arguments cannot be read: {type(err).__name__}: {err}")
        handler = getattr(self, f"_{tool_text}", None) if tool_text in TOOLS else None
        if handler is None:
            return self._fail(tool_text, shown, step, f"unknown tool {tool_text!r}; tools: {', '.join(TOOLS)}")
        bad = lone_surrogate_path(args)
        if bad is not None:
            return self._fail(tool_text, shown, step, f"{bad}: not valid Unicode text (a lone surrogate such as "
                                                      f"\\ud800); send the text without it")
        try:
            outcome = handler(args, step)
        except (DocumentNotFoundError, KeyError, ValueError, TypeError, OverflowError) as err:
            return self._fail(tool_text, shown, step, f"{type(err).__name__}: {err}")
        except Exception as err:  # a fault of ours: refused and recorded, so a resume does not crash on it
            return self._fail(tool_text, shown, step, f"the tool failed ({type(err).__name__}: {err}); try a "
                                                      f"different call")
        if shown is not args:
            outcome.args = shown
            outcome.events = [(name, {**body, "args": shown} if "args" in body else body)
                              for name, body in outcome.events]
        return outcome

    def _fail(self, tool: str, args: dict, step: int, error: str) -> Outcome:
        body = {"timestamp": self.clock(), "tool_name": tool, "args": args, "result": {"error": error},
                "success": False, "step": step}
        return Outcome(tool, args, {"error": error}, False, f"error: {error[:100]}", [(tool, body)])

    def _tool_event(self, tool, args, step, result: dict, success=True):
        return (tool, {"timestamp": self.clock(), "tool_name": tool, "args": args, "result": result,
                       "success": success, "step": step})

    # ---- the six tools ----
    def _list_documents(self, args: dict, step: int) -> Outcome:
        self.catalog_listed = True
        docs = [{"name": d.name, "type": d.doc_type, "date": d.date, "token_count": d.token_count,
                 "visited": self.visit_status(d.name)} for d in self.corpus.documents]
        ev = self._tool_event("list_documents", args, step,
                              {"documents": len(docs), "items_requested": None, "validation_errors": None})
        return Outcome("list_documents", args, {"documents": docs}, True, f"listed {len(docs)} documents", [ev])

    def _read_document(self, args: dict, step: int) -> Outcome:
        doc = self.corpus.resolve(args.get("doc_name"))
        start = _int(args.get("start_token", 0), "start_token")
        end = _int(args.get("end_token", start + READ_LIMIT), "end_token")
        if start < 0 or end <= start:
            raise ValueError(f"need 0 <= start_token < end_token, got {start}-{end}")
        if end - start > READ_LIMIT:
            raise ValueError(f"range {start}-{end} is {end - start} tokens; at most {READ_LIMIT} per read")
        n = doc.token_count
        if start >= n:
            raise ValueError(f"start_token {start} is past the end of {doc.name!r} ({n} tokens)")
        end = min(end, n)
        text = doc.window(start, end)
        self.mark_viewed(doc.name, start, end)
        body = {"timestamp": self.clock(), "doc_name": doc.name, "start_token": start, "end_token": end,
                "tokens_read": end - start, "step": step}
        result = {"doc_name": doc.name, "start_token": start, "end_token": end, "total_tokens": n, "text": text}
        return Outcome("read_document", args, result, True,
                       f"read {doc.name!r} tokens {start}-{end} ({end - start:,} tokens)", [("read_document", body)])

    def _search_document_regex(self, args: dict, step: int) -> Outcome:
        pattern = args.get("pattern")
        if not isinstance(pattern, str) or not pattern:
            raise ValueError("pattern: required, a non-empty string")
        if len(pattern) > MAX_PATTERN_CHARS:
            raise ValueError(f"pattern is {len(pattern)} characters; at most {MAX_PATTERN_CHARS}")
        top_k = _int(args.get("top_k", TOP_K_DEFAULT), "top_k")
        if not 1 <= top_k <= TOP_K_MAX:
            raise ValueError(f"top_k must be 1..{TOP_K_MAX}, got {top_k}")
        ctx = _int(args.get("context_tokens", CONTEXT_DEFAULT), "context_tokens")
        if not CONTEXT_MIN <= ctx <= CONTEXT_MAX:
            raise ValueError(f"context_tokens must be {CONTEXT_MIN}..{CONTEXT_MAX}, got {ctx}")
        flags = args.get("flags") or []
        if isinstance(flags, str):
            flags = [flags]
        bad = [f for f in flags if str(f).upper() not in FLAGS]
        if bad:
            raise ValueError(f"unknown flag(s) {bad}; allowed: {', '.join(FLAGS)}")
        value = 0
        for f in flags:
            value |= FLAGS[str(f).upper()]
        names = args.get("doc_names")
        if names:
            if not isinstance(names, list):
                raise ValueError("doc_names must be a list of document names")
            docs = [self.corpus.resolve(n) for n in names]
        elif args.get("doc_name") in (None, "", "all"):
            docs = list(self.corpus.documents)
        else:
            docs = [self.corpus.resolve(args["doc_name"])]
        docs = list({d.name: d for d in docs}.values())
        hits, per_doc, total, error = search(docs, pattern, value, top_k, ctx, self.search_timeout,
                                             self.search_worker, self._doc_index)
        if error:
            return self._fail("search_document_regex", args, step, error)
        body = {"timestamp": self.clock(), "doc_name": args.get("doc_name"), "doc_names": names,
                "pattern": pattern, "flags": flags, "matches_found": total, "step": step,
                "document_matches": per_doc}
        result = {"matches_found": total, "shown": len(hits), "matches": hits}
        return Outcome("search_document_regex", args, result, True,
                       f"search /{pattern[:60]}/ in {len(docs)} document(s): {total} match(es), {len(hits)} shown",
                       [("search_document_regex", body)])

    def _get_checklist(self, args: dict, step: int) -> Outcome:
        if args.get("items"):
            keys = list(args["items"])
        elif args.get("item") not in (None, "", "all"):
            keys = [args["item"]]
        else:
            keys = None
        data = self.store.get(keys)
        requested = "all" if keys is None else keys
        ev = self._tool_event("get_checklist", args, step,
                              {"documents": None, "items_requested": requested, "validation_errors": None})
        return Outcome("get_checklist", args, {"checklist": data}, True,
                       f"viewed checklist ({'all keys' if keys is None else ', '.join(keys)})", [ev])

    def _patch(self, operation: str, args: dict, step: int) -> Outcome:
        tool = f"{operation}_checklist"
        res = self.store.apply(operation, args.get("patch"))
        events = []
        if res.applied:
            events.append((tool, {"timestamp": self.clock(), "keys_updated": res.applied, "patch": res.patch,
                                  "success": res.success, "step": step}))
        if not res.success:
            events.append((tool, {"timestamp": self.clock(), "tool_name": tool, "args": args,
                                  "result": {"documents": None, "items_requested": None,
                                             "validation_errors": res.errors},
                                  "success": False, "step": step}))
        verb = "appended to" if operation == "append" else "updated"
        keys = list(dict.fromkeys(res.applied))
        na = [k for k in keys if self.store.status(k) == "not_applicable"]
        brief = (f"{verb} {', '.join(keys)}" if keys else f"{operation} refused") + \
                (f" ({', '.join(na)} {NOT_APPLICABLE})" if na else "") + \
                (f"; errors: {'; '.join(res.errors)[:150]}" if res.errors else "")
        result = {"keys_updated": keys, "errors": res.errors, "warnings": res.warnings}
        return Outcome(tool, args, result, res.success, brief, events)

    def _append_checklist(self, args: dict, step: int) -> Outcome:
        return self._patch("append", args, step)

    def _update_checklist(self, args: dict, step: int) -> Outcome:
        return self._patch("update", args, step)


def _int(value, name: str) -> int:
    """An integer argument: an int, an integral finite float (``200.0``) or a decimal string (``"200"``)."""
    if isinstance(value, bool) or not isinstance(value, (int, float, str)):
        raise ValueError(f"{name} must be an integer")
    if isinstance(value, float) and not (math.isfinite(value) and value.is_integer()):
        raise ValueError(f"{name} must be an integer, got {value!r}")
    try:
        return int(value)
    except (ValueError, OverflowError):
        raise ValueError(f"{name} must be an integer, got {str(value)[:40]!r}") from None


def _escape(s: str) -> str:
    """``s`` with lone surrogates written as ``\\udXXX`` escapes (so it can be written as UTF-8)."""
    return s.encode("utf-8", "backslashreplace").decode("utf-8")


def lone_surrogate_path(obj, path: str = "args"):
    """The dotted path of the first string (value or key) in ``obj`` that is not valid Unicode text, or None."""
    stack = [(obj, path)]
    while stack:
        item, where = stack.pop()
        if isinstance(item, str):
            if not is_text(item):
                return where
        elif isinstance(item, dict):
            for k, v in item.items():
                if isinstance(k, str) and not is_text(k):
                    return f"{where} key {_escape(k)!r}"
                stack.append((v, f"{where}.{k}"))
        elif isinstance(item, list):
            stack.extend((v, f"{where}.{i}") for i, v in enumerate(item))
    return None


def escaped(obj):
    """A copy of a JSON-shaped ``obj`` with lone surrogates in its strings (keys too) written as escapes."""
    if isinstance(obj, str):
        return obj if is_text(obj) else _escape(obj)
    if isinstance(obj, dict):
        return {escaped(k): escaped(v) for k, v in obj.items()}
    if isinstance(obj, list):
        return [escaped(v) for v in obj]
    return obj


def echo_args(args: dict) -> dict:
    """The arguments as the ledger and the history show them: ``args`` itself when it is valid text and at
    most ``MAX_ECHO_ARGS_CHARS`` as JSON; otherwise a copy with lone surrogates escaped, and past the size a
    preview ``{"_preview": first ECHO_PREVIEW_CHARS characters of the JSON, "_chars": size}``."""
    text = json.dumps(args, ensure_ascii=False, sort_keys=True, default=repr)
    clean = is_text(text)
    if len(text) > MAX_ECHO_ARGS_CHARS:
        preview = text[:ECHO_PREVIEW_CHARS]
        return {"_preview": preview if clean else _escape(preview), "_chars": len(text)}
    return args if clean else escaped(args)


def search(docs, pattern: str, flags: int, top_k: int, context_tokens: int, timeout: float,
           worker: SearchWorker, index_of: dict):
    """Matches of ``pattern`` in ``docs`` (catalog order, then position): the first ``top_k`` with about
    ``context_tokens`` tokens of text around each, the token ranges per document (as the release's ledgers
    record them), and the total count. Returns ``(hits, per_doc, total, error)``; ``error`` is set when the
    pattern does not compile, needs more memory than a search may use, or the search ran past ``timeout``
    seconds. Compiling and matching happen in ``worker`` (a process with bounded memory and time);
    ``index_of`` maps a document name to its index in the worker's texts."""
    try:
        counts, spans = worker.search(pattern, flags, [index_of[d.name] for d in docs], top_k, timeout)
    except SearchRefused as err:
        return [], {}, 0, str(err)
    by_index = {}
    for i, s, e in spans:
        by_index.setdefault(i, []).append((s, e))
    hits, per_doc = [], {}
    for doc in docs:
        ranges = []
        found = by_index.get(index_of[doc.name])
        if not found:  # a document without a match is not tokenised for it (a big corpus: seconds and GBs each)
            per_doc[doc.name] = ranges
            continue
        offs, n = doc.offsets, doc.token_count
        for s, e in found:
            ts = max(0, bisect.bisect_right(offs, s) - 1)
            te = max(ts + 1, bisect.bisect_left(offs, e))
            center = (ts + te) // 2
            start = max(0, min(center - context_tokens // 2, n - context_tokens))
            end = min(n, start + context_tokens)
            ranges.append([start, end])
            hits.append({"doc_name": doc.name, "start_token": start, "end_token": end,
                         "match": doc.text[s:e][:500], "context": doc.window(start, end)})
        per_doc[doc.name] = ranges
    return hits, per_doc, sum(counts), None


# ------------------------------------------------------------------ the release's own search patterns
def release_patterns(root) -> list[tuple[str, list]]:
    """Distinct ``(pattern, flags)`` of every ``search_document_regex`` call in the release's agent ledgers,
    in first-seen order (the model's flags as given; a non-list is kept for the tool to judge)."""
    from .store import agent_run_folders, ledger_events

    seen, out = set(), []
    for folder, *_ in agent_run_folders(root):
        ledger = folder / "ledger.jsonl"
        if not ledger.exists() or not ledger.stat().st_size:
            continue
        for ev in ledger_events(ledger):
            if ev.get("event_name") != "search_document_regex":
                continue
            body = ev.get("event") or {}
            src = body if "pattern" in body else (body.get("args") or {})
            pattern, flags = src.get("pattern"), src.get("flags")
            key = (repr(pattern), repr(flags))
            if key not in seen:
                seen.add(key)
                out.append((pattern, flags))
    return out


@dataclass
class PatternCheck:
    patterns: int
    completed: int  # answered within the time limit (matches or none)
    refused: int  # refused by validation or compilation (an error the model sees at once)
    timed_out: list  # patterns that ran past the limit
    slowest_s: float
    slowest_pattern: str
    refusal_reasons: dict


def check_patterns(corpus: Corpus, patterns, timeout: float = SEARCH_TIMEOUT_S) -> PatternCheck:
    """Run every pattern through the search tool over all documents of ``corpus`` (top_k 20)."""
    ws = Workspace(corpus, AgentStore(["unused"]), search_timeout=timeout, clock=lambda: None)
    completed, refused, timed_out, reasons = 0, 0, [], {}
    slowest, slowest_pattern = 0.0, ""
    for pattern, flags in patterns:
        args = {"pattern": pattern, "doc_name": "all", "top_k": TOP_K_MAX}
        if flags is not None:
            args["flags"] = flags
        t0 = time.perf_counter()
        out = ws.call("search_document_regex", args, 0)
        took = time.perf_counter() - t0
        if took > slowest:
            slowest, slowest_pattern = took, str(pattern)
        if out.success:
            completed += 1
        elif "timed out" in out.result["error"]:
            timed_out.append((pattern, flags))
        else:
            refused += 1
            reason = out.result["error"].split(":")[0][:60]
            reasons[reason] = reasons.get(reason, 0) + 1
    return PatternCheck(len(patterns), completed, refused, timed_out, slowest, slowest_pattern, reasons)
