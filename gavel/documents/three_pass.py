"""The three-pass document method: high-recall extraction per chunk, a pairwise merge tree, a strict prune.

1. **Extract** (``doc_3pass_extract``): every piece of every document (``chunked.pieces``) is read once for the
   whole checklist; each candidate value carries evidence objects ``{text, source_document, location}`` where
   ``location`` is ``chunk N`` of that document.
2. **Merge** (``doc_3pass_merge``): the per-piece checklists are joined pairwise, level by level (a tree of
   LLM calls: n pieces take n - 1 joins at most). Only items that both sides fill go to the model; the others
   are joined mechanically. The model names the values it joins (``from``); a value it leaves out is restored.
3. **Prune** (``doc_3pass_prune``): one strict reading of the merged checklist; each value is kept or removed
   with a reason; a value it does not mention is kept and recorded.

What the model writes is never trusted: after every pass each evidence object is checked mechanically and
dropped, with its reason in the log, when it is not byte-equal to a candidate's (one the first pass produced
for the same item) or, for the first pass, when its text is not in the named document at the named
location. A value left with no evidence is dropped the same way. Nothing is dropped silently: ``log`` holds
one record per merge, removal, restoration and drop.

Every call goes through ``StageRunner``'s online path with a cache per pass: a killed run reruns and every
finished call is answered from the cache. Tokens per case are counted like the other methods
(``token_stats``: totals and per pass).
"""

from __future__ import annotations

import json
import re
import unicodedata
from dataclasses import dataclass, field

from gavel.answers import json_candidates
from gavel.answers.scan import has_lone_surrogate
from gavel.core import items as gitems
from gavel.core.tokens import count_tokens
from gavel.ref.prompts import render_messages

from ..llm.pace import announce, capped
from ..llm.records import Request
from ..llm.runner import StageRunner
from .chunked import Piece, piece_tokens, pieces
from .corpus import Corpus

PASSES = ("extract", "merge", "prune")
STAGES = {p: f"doc_3pass_{p}" for p in PASSES}
_EVIDENCE = {"type": "object", "properties": {k: {"type": "string"} for k in ("text", "source_document", "location")},
             "required": ["text", "source_document", "location"], "additionalProperties": False}


def _schema(name: str, value_props: dict, top: dict | None = None) -> dict:
    value = {"type": "object", "properties": {**value_props, "value": {"type": "string"},
                                              "evidence": {"type": "array", "items": _EVIDENCE}},
             "required": [*value_props, "value", "evidence"], "additionalProperties": False}
    items = {"type": "array", "items": {"type": "object", "properties": {
        "key": {"type": "string"}, "values": {"type": "array", "items": value}},
        "required": ["key", "values"], "additionalProperties": False}}
    props = top or {"items": items}
    return {"name": name, "schema": {"type": "object", "properties": props, "required": list(props),
                                     "additionalProperties": False}}


EXTRACT_SCHEMA = _schema("three_pass_extract", {})
MERGE_SCHEMA = _schema("three_pass_merge", {"from": {"type": "array", "items": {"type": "string"}}})
_KEPT = {"type": "object", "properties": {"id": {"type": "string"}, "value": {"type": "string"},
                                        "evidence": {"type": "array", "items": _EVIDENCE}},
         "required": ["id", "value", "evidence"], "additionalProperties": False}
_REMOVED = {"type": "object", "properties": {"id": {"type": "string"}, "why": {"type": "string"}},
            "required": ["id", "why"], "additionalProperties": False}
PRUNE_SCHEMA = _schema("three_pass_prune", {}, {"kept": {"type": "array", "items": _KEPT},
                                                "removed": {"type": "array", "items": _REMOVED}})
#: the location a first-pass evidence object names: exactly ``chunk N`` of its document, as the prompt writes it
#: (ASCII digits, no leading zero, nothing before or after: ``chunk 0001``, ``Chunk 1``, ``chunk 1 ... also chunk 7``
#: are refused)
CHUNK_LOCATION = re.compile(r"chunk ([1-9][0-9]{0,5})", re.ASCII)
#: the least a quote must be to support a value: this many characters (spaces at its ends not counted), at least
#: one letter or digit, and whole words: the quote neither starts nor ends inside a word of the chunk
MIN_EVIDENCE_CHARS = 4
_WORD = re.compile(r"\w+")


def location_of(piece: Piece) -> str:
    return f"chunk {piece.chunk_id}"


def checklist_text(checklist: gitems.Checklist) -> str:
    return "\n".join(f"- {it.key} ({it.name}): {it.document_instruction}" for it in checklist.items)


def _ev(e: dict) -> tuple:
    return (e["text"], e["source_document"], e["location"])


def _brief(x, limit: int = 80) -> str:
    """A short account of something a model wrote (text cut, anything else named by its type)."""
    text = repr(x) if isinstance(x, (str, int, float, bool)) or x is None else f"a {type(x).__name__}"
    return text if len(text) <= limit else text[:limit - 3] + "..."


def _list(x) -> list:
    return x if isinstance(x, list) else []


def _whole_words_in(text: str, chunk: str) -> bool:
    """Whether ``text`` occurs in ``chunk`` starting and ending at word boundaries (where it begins or ends
    with a word character, the chunk's neighbouring character is not one)."""
    def word(ch: str) -> bool:
        return ch.isalnum() or ch == "_"
    start = chunk.find(text)
    while start >= 0:
        end = start + len(text)
        if (not word(text[0]) or start == 0 or not word(chunk[start - 1])) and \
                (not word(text[-1]) or end == len(chunk) or not word(chunk[end])):
            return True
        start = chunk.find(text, start + 1)
    return False


def too_little(text: str) -> str:
    """"" when a quote is long enough to support a value, else why not (docs/checklists.md)."""
    core = text.strip()
    if len(core) < MIN_EVIDENCE_CHARS or not any(ch.isalnum() for ch in core):
        return f"quote {_brief(text)} too short to support a value (at least {MIN_EVIDENCE_CHARS} characters, " \
               "a letter or digit among them)"
    return ""


def unsupported_words(new: str, sources: list[str]) -> list[str]:
    """The words of a reworded value found in none of ``sources`` (the values it came from and its evidence),
    compared case-insensitively; [] when every word is supported."""
    known = {w.casefold() for t in sources for w in _WORD.findall(t)}
    return [w for w in dict.fromkeys(_WORD.findall(new)) if w.casefold() not in known]


#: words that negate what follows them (a contraction's n't too), and words a negation or a swap is not about
_NEGATIONS = frozenset("not no never neither nor none nothing nobody without cannot non".split())
_MINOR = frozenset("a an the of to in on at by for from with as and or is was were be been being are has have had "
                   "that this its their his her it".split())
_TOKEN = re.compile(r"\w+(?:['\u2019]\w+)*|[.;:!?,()\[\]]")


def _tokens(text: str) -> list[str]:
    return [t.casefold() for t in _TOKEN.findall(text)]


def _negated(text: str) -> set[tuple[str, bool]]:
    """(word, negated) for each content word of ``text``: negated when it is the first content word after a
    negation (``not``, ``no``, a word ending in n't ...) in its clause."""
    out, pending = set(), False
    for t in _tokens(text):
        if not t[0].isalnum():
            pending = False  # a clause ends at punctuation
        elif t in _NEGATIONS or t.endswith(("n't", "n\u2019t")):
            pending = not pending  # "not not dismissed" is not "not dismissed"
        elif t not in _MINOR:
            out.add((t, pending))
            pending = False
    return out


#: content words past which a rewording's word order is not compared (each check is quadratic in them); a
#: longer rewording is refused, to be safe
MAX_ORDER_WORDS = 200


def _content(text: str) -> list[str]:
    return [t for t in _tokens(text) if t[0].isalnum() and t not in _MINOR and t not in _NEGATIONS]


def _swapped(new: str, old: str) -> str | None:
    """The word two others trade sides around (``The City paid the plaintiffs`` -> ``The plaintiffs paid the
    City``: ``paid``), or None. A pivot is a content word said as often in both texts; around each of its
    places, one shared word that stood before it stands only after it now, and another that stood after it
    stands only before it now. A word said twice counts on every side it stands (``District Court for the
    District of Maine`` -> ``Maine Court for the District of District``: around the second ``district``)."""
    a, b = _content(new), _content(old)
    shared = set(a) & set(b)
    a, b = [w for w in a if w in shared], [w for w in b if w in shared]
    for pivot in dict.fromkeys(a):
        places_a = [i for i, w in enumerate(a) if w == pivot]
        places_b = [j for j, w in enumerate(b) if w == pivot]
        if len(places_a) != len(places_b):
            continue
        for i, j in zip(places_a, places_b):
            before_a, after_a, before_b, after_b = set(a[:i]), set(a[i + 1:]), set(b[:j]), set(b[j + 1:])
            left_before = (before_b - before_a) - {pivot}
            left_after = (after_b - after_a) - {pivot}
            if left_before and left_after:
                return pivot
    return None


def meaning_changed(new: str, old: list[str]) -> str | None:
    """Why a rewording of the values ``old`` into ``new`` would change what they say, or None: it carries an
    invisible character (a zero-width space inside ``not dismissed`` reads as neither word), it adds or drops
    a negation before a word (``Case not dismissed`` -> ``Case dismissed``), or two words trade sides around a
    third (who did what to whom; a passive turned active counts too: the value keeps its text, to be safe)."""
    hidden = next((ch for ch in new if unicodedata.category(ch) in ("Cf", "Cc", "Co", "Cn", "Cs")
                   and ch not in "\t\n\r"), None)
    if hidden is not None:
        return f"it holds an invisible character (U+{ord(hidden):04X})"
    known = set().union(*(_negated(o) for o in old))
    for word, negated in sorted(_negated(new)):
        if (word, negated) not in known and (word, not negated) in known:
            return f"it {'adds a negation before' if negated else 'drops the negation of'} {word!r}"
    if len(_content(new)) > MAX_ORDER_WORDS:
        return f"it is too long to compare its word order (over {MAX_ORDER_WORDS} words)"
    for o in old:
        pivot = _swapped(new, o)
        if pivot:
            return f"words trade sides around {pivot!r} (who did what to whom)"
    return None


@dataclass
class ThreePassResult:
    values: dict  # item key -> final list of {"value", "evidence": [{text, source_document, location}]}
    log: list  # one record per merge, removal, restoration and drop (pass, action, item, value, why)
    token_stats: dict  # case -> totals and per pass

    def value_rows(self, case_id: str, checklist=None) -> list[dict]:
        """One row per value; ``reworded_from``: the values a merge or prune reworded into this text (logged
        ``reworded``), None for a value that keeps the text a pass found (docs/documents.md)."""
        checklist = gitems.load(checklist)
        reworded = {(r["item"], r["value"]): r.get("before") for r in self.actions("reworded")}
        rows = []
        for key, values in self.values.items():
            for i, v in enumerate(values, 1):
                rows.append({"case_id": case_id, "item": checklist.item(key).name, "index": i, "value": v["value"],
                             "evidence": [e["text"] for e in v["evidence"]],
                             "source_documents": [e["source_document"] for e in v["evidence"]],
                             "locations": [e["location"] for e in v["evidence"]],
                             "reworded_from": reworded.get((key, v["value"]))})
        return rows

    def actions(self, action: str) -> list[dict]:
        return [r for r in self.log if r["action"] == action]


@dataclass
class _Run:
    corpus: Corpus
    checklist: gitems.Checklist
    model: str
    runners: dict
    params: dict
    chunk_text: dict  # (document, chunk number) -> text
    log: list = field(default_factory=list)
    candidates: dict = field(default_factory=dict)  # item key -> {(text, document, location)} of pass 1
    tokens: dict = field(default_factory=dict)
    pace: object = None  # gavel.llm.pace.Pace, or a function giving one: each call says its duration first

    def note(self, pass_, action, item, value, why, **extra):
        self.log.append({"case_id": self.corpus.case_id, "pass": pass_, "action": action, "item": item,
                         "value": value, "why": why, **extra})

    def call(self, pass_: str, requests: list[Request], label: str = "") -> dict:
        """Answers (custom_id -> text or None), failures logged; tokens counted per pass."""
        if not requests:
            return {}
        announce(self.pace, self.runners[pass_], requests, f"three-pass {pass_}{label}")
        report = self.runners[pass_].run(requests, mode="online")
        t = self.tokens.setdefault(pass_, {"input_tokens": 0, "output_tokens": 0, "prompts": 0})
        out = {}
        for r in requests:
            resp = report.responses[r.custom_id]
            t["prompts"] += 1
            if not resp.ok or resp.truncated:
                why = f"call failed: {resp.error}" if not resp.ok else "answer cut by the output-token limit"
                self.note(pass_, "call_failed", None, None, why, custom_id=r.custom_id)
                out[r.custom_id] = None
                continue
            t["input_tokens"] += resp.input_tokens if resp.input_tokens is not None else \
                sum(count_tokens(m["content"]) for m in r.messages)
            t["output_tokens"] += resp.output_tokens if resp.output_tokens is not None else count_tokens(resp.text or "")
            out[r.custom_id] = resp.text
        return out

    def request(self, pass_: str, schema: dict, item: str | None = None, **fields) -> Request:
        """A request of ``pass_``, at the pass's output cap on the model (``gavel.llm.pace.capped``)."""
        messages = render_messages(STAGES[pass_], checklist=checklist_text(self.checklist), **fields)
        return Request(stage=STAGES[pass_], model=self.model, case_id=self.corpus.case_id, item=item,
                       messages=messages, params=capped(self.params, self.model, STAGES[pass_]), schema=schema)

    def extract_requests(self, parts: list[Piece]) -> list[Request]:
        """The first pass: one request per piece, every item."""
        return [self.request("extract", EXTRACT_SCHEMA, document_name=p.document, location=location_of(p),
                             total_chunks=p.total_chunks, document_chunk=p.text) for p in parts]

    # ---- mechanical checks
    def located(self, e: dict) -> str:
        """"" when the quote is in the named document at the named location, else why not."""
        doc, where, text = e["source_document"], e["location"], e["text"]
        if doc not in self.corpus.by_name:
            return f"no document named {_brief(doc)}"
        m = CHUNK_LOCATION.fullmatch(where)
        if not m:
            return f"location {_brief(where)} is not written 'chunk N'"
        if (doc, int(m.group(1))) not in self.chunk_text:
            return f"location {where!r} is no chunk of {doc!r}"
        short = too_little(text)
        if short:
            return short
        if text in self.chunk_text[(doc, int(m.group(1)))]:
            if _whole_words_in(text, self.chunk_text[(doc, int(m.group(1)))]):
                return ""
            return f"quote {_brief(text)} starts or ends inside a word of {doc!r} at {where!r}"
        elsewhere = [c for (d, c), t in self.chunk_text.items() if d == doc and text in t]
        return (f"quote not in {doc!r} at {where!r}" + (f" (it is in chunk {elsewhere[0]})" if elsewhere else "")
                + ("" if elsewhere else ": not byte-equal to any text of the document"))

    def checked_evidence(self, pass_: str, key: str, value: str, evidence, allowed: set | None) -> list[dict]:
        """The evidence objects that pass; each other one logged as dropped with its reason."""
        kept = []
        for e in evidence if isinstance(evidence, list) else []:
            if not (isinstance(e, dict) and all(isinstance(e.get(k), str) for k in ("text", "source_document",
                                                                                    "location"))):
                self.note(pass_, "dropped_evidence", key, value, f"not an evidence object: {_brief(e)}")
                continue
            e = {k: e[k] for k in ("text", "source_document", "location")}
            if allowed is not None and _ev(e) not in allowed:
                self.note(pass_, "dropped_evidence", key, value, "evidence not byte-equal to a candidate's",
                          evidence=e)
                continue
            why = self.located(e)
            if why:
                self.note(pass_, "dropped_evidence", key, value, why, evidence=e)
                continue
            if e not in kept:
                kept.append(e)
        return kept

    def read_values(self, pass_: str, key_values, allowed_for=None) -> dict:
        """``{item key: [value dicts]}`` from an answer's ``items`` list, values checked (unknown items,
        empty values and values left without evidence are logged and dropped)."""
        out: dict = {}
        for entry in _list(key_values):
            if not isinstance(entry, dict):
                self.note(pass_, "dropped_value", None, None, f"not an item entry: {_brief(entry)}")
                continue
            raw_key = entry.get("key")
            try:
                key = self.checklist.item(raw_key).key if isinstance(raw_key, str) else None
            except KeyError:
                key = None
            if key is None:
                self.note(pass_, "dropped_value", raw_key if isinstance(raw_key, str) and len(raw_key) <= 80
                          else _brief(raw_key), None, "not an item of the checklist")
                continue
            if not isinstance(entry.get("values") or [], list):
                self.note(pass_, "dropped_value", key, None, f"values are not a list: {_brief(entry.get('values'))}")
                continue
            for v in entry.get("values") or []:
                if not isinstance(v, dict) or not isinstance(v.get("value"), str) or not v["value"].strip():
                    self.note(pass_, "dropped_value", key, None, f"no value text: {_brief(v)}")
                    continue
                if has_lone_surrogate(v["value"]):  # no character: it could not be sent in the next prompt
                    self.note(pass_, "dropped_value", key, None, f"a lone surrogate (not text) in {_brief(v['value'])}")
                    continue
                allowed = allowed_for(key) if allowed_for else None
                ev = self.checked_evidence(pass_, key, v["value"], v.get("evidence"), allowed)
                if not ev:
                    self.note(pass_, "dropped_value", key, v["value"], "no evidence left")
                    continue
                out.setdefault(key, []).append({"value": v["value"].strip(), "evidence": ev,
                                                **({"from": v.get("from")} if "from" in v else {})})
        return out

    def wording(self, pass_: str, key: str, new: str, before: list[dict], evidence: list[dict], where: str) -> str:
        """The text a value leaves ``pass_`` with: ``new`` when it is the text of a value that entered
        (``before``), or a rewording whose every word is in those values or in the evidence kept (logged
        ``reworded``); else the first entering value's text, the rewording logged ``rewording_refused``."""
        old = [b["value"] for b in before]
        if new in old:
            return new
        changed = "a lone surrogate (not text)" if has_lone_surrogate(new) else meaning_changed(new, old)
        if changed:
            self.note(pass_, "rewording_refused", key, old[0], f"{where}: rewording {_brief(new)} would change "
                      f"the meaning: {changed}; the value keeps its text", rewording=new)
            return old[0]
        missing = unsupported_words(new, old + [e["text"] for e in evidence])
        if missing:
            self.note(pass_, "rewording_refused", key, old[0], f"{where}: rewording {_brief(new)} has words in "
                      f"neither the value nor its evidence ({', '.join(missing[:8])}); the value keeps its text",
                      rewording=new)
            return old[0]
        self.note(pass_, "reworded", key, new, f"{where}: reworded from {_brief(old[0])}; every word is in the "
                  "value or its evidence", before=old)
        return new


def _answer(text: str | None) -> dict | None:
    if not text:
        return None
    for candidate in [text.strip(), *json_candidates(text)]:
        try:
            obj = json.loads(candidate)
        except (json.JSONDecodeError, RecursionError):
            continue
        if isinstance(obj, dict):
            return obj
    return None


def _numbered(side: str, checklist: dict) -> tuple[str, dict]:
    ids, lines = {}, []
    n = 0
    for key, values in checklist.items():
        lines.append(f"## {key}")
        for v in values:
            n += 1
            ids[f"{side}{n}"] = (key, v)
            lines.append(json.dumps({"id": f"{side}{n}", "value": v["value"], "evidence": v["evidence"]},
                                    ensure_ascii=False))
    return "\n".join(lines), ids


def _merge_pair(run: _Run, a: dict, b: dict, text: str | None, where: str) -> dict:
    """The checklist joining ``a`` and ``b`` from the merge answer (None: no call was needed)."""
    both = [k for k in run.checklist.keys if a.get(k) and b.get(k)]
    merged = {k: list(a.get(k, [])) + list(b.get(k, [])) for k in run.checklist.keys if a.get(k) or b.get(k)}
    if not both or text is None:
        if both:
            run.note("merge", "unmerged", None, None, f"{where}: no usable answer; both sides kept as they were")
        return merged
    answer = _answer(text)
    if answer is None:
        run.note("merge", "unmerged", None, None, f"{where}: answer is not a JSON object; both sides kept")
        return merged
    _, a_ids = _numbered("A", {k: a[k] for k in both})
    _, b_ids = _numbered("B", {k: b[k] for k in both})
    ids = {**a_ids, **b_ids}
    got = run.read_values("merge", answer.get("items"), lambda k: run.candidates.get(k, set()))
    used: set = set()
    for key in both:
        out = []
        for v in got.get(key, []):
            sources = [i for i in _list(v.pop("from", None)) if isinstance(i, str) and i in ids
                       and ids[i][0] == key and i not in used]
            if not sources:
                run.note("merge", "dropped_value", key, v["value"], "names no value of A or B for this item")
                continue
            joined = {_ev(e) for i in sources for e in ids[i][1]["evidence"]}
            for e in [e for e in v["evidence"] if _ev(e) not in joined]:
                run.note("merge", "dropped_evidence", key, v["value"], "evidence of no value it joins", evidence=e)
            v["evidence"] = [e for e in v["evidence"] if _ev(e) in joined]
            if not v["evidence"]:
                run.note("merge", "dropped_value", key, v["value"], "no evidence left")
                continue
            v["value"] = run.wording("merge", key, v["value"], [ids[i][1] for i in sources], v["evidence"], where)
            used.update(sources)
            if len(sources) > 1:
                run.note("merge", "merged", key, v["value"], f"{where}: joins {', '.join(sources)}",
                         sources=[ids[i][1]["value"] for i in sources])
            out.append(v)
        for i, (k, v) in ids.items():
            if k == key and i not in used:
                run.note("merge", "restored", key, v["value"], f"{where}: {i} left out by the answer; kept")
                out.append(v)
        merged[key] = out
    for key in set(got) - set(both):
        run.note("merge", "dropped_value", key, None, f"{where}: the answer lists an item it was not given")
    return merged


def prepare(corpus: Corpus, model: str, checklist=None, max_tokens: int | None = None, params: dict | None = None,
            items=None) -> tuple[_Run, list[Piece]]:
    """A run without runners yet (its requests can be built, e.g. to forecast them) and the case's pieces."""
    from dataclasses import replace

    checklist = gitems.load(checklist)
    if items:
        checklist = replace(checklist, items=checklist.select(items))
    parts = pieces(corpus, max_tokens or piece_tokens(model, STAGES["extract"]))
    return _Run(corpus, checklist, model, {}, dict(params or {}), {(p.document, p.chunk_id): p.text for p in parts}), parts


def merge_joins(pieces_: int) -> list[int]:
    """Joins per level of the merge tree over ``pieces_`` first-pass checklists (each a call at most: a join
    whose sides share no filled item is done without one): n pieces take n - 1 in all."""
    joins = []
    while pieces_ > 1:
        joins.append(pieces_ // 2)
        pieces_ -= pieces_ // 2
    return joins


def run_three_pass(corpus: Corpus, provider, model: str, checklist=None, workdir=None, max_tokens: int | None = None,
                   params: dict | None = None, items=None, pace=None) -> ThreePassResult:
    """The three passes over one case for ``checklist`` (default: the 26 legal items; ``items``: only these),
    pieces of at most ``max_tokens`` tokens (None: ``chunked.piece_tokens``). ``workdir`` holds one runner cache
    per pass.
    ``pace`` (a ``gavel.llm.pace.Pace`` or a function giving one): each pass (each merge level) says its
    expected duration before it sends, and shows a progress bar."""
    from pathlib import Path

    run, parts = prepare(corpus, model, checklist, max_tokens, params, items)
    checklist = run.checklist
    run.runners = {p: StageRunner(STAGES[p], provider, Path(workdir) / p if workdir else None,
                                  progress=pace is not None, namespace=checklist.cache_tag) for p in PASSES}
    run.pace = pace

    # 1. extract: one call per piece, every item
    reqs = run.extract_requests(parts)
    texts = run.call("extract", reqs)
    level = []
    for p, r in zip(parts, reqs):
        answer = _answer(texts.get(r.custom_id))
        if answer is None and texts.get(r.custom_id) is not None:
            run.note("extract", "unusable", None, None, f"{p.document} {location_of(p)}: answer is not a JSON object")
        got = run.read_values("extract", (answer or {}).get("items"))
        for key, values in got.items():
            run.candidates.setdefault(key, set()).update(_ev(e) for v in values for e in v["evidence"])
        level.append(got)

    # 2. merge tree: pairs of the level joined at once, until one checklist is left
    depth = 0
    while len(level) > 1:
        depth += 1
        pairs = [(level[i], level[i + 1]) for i in range(0, len(level) - 1, 2)]
        jobs = []
        for n, (a, b) in enumerate(pairs, 1):
            both = [k for k in checklist.keys if a.get(k) and b.get(k)]
            if not both:
                jobs.append(None)
                continue
            a_text, _ = _numbered("A", {k: a[k] for k in both})
            b_text, _ = _numbered("B", {k: b[k] for k in both})
            jobs.append(run.request("merge", MERGE_SCHEMA, item=f"level {depth} join {n}", a=a_text, b=b_text))
        texts = run.call("merge", [j for j in jobs if j is not None], f" level {depth}")
        nxt = [_merge_pair(run, a, b, texts.get(j.custom_id) if j else None, f"level {depth} join {n}")
               for n, ((a, b), j) in enumerate(zip(pairs, jobs), 1)]
        level = nxt + ([level[-1]] if len(level) % 2 else [])
    merged = level[0] if level else {}

    # 3. prune: one strict reading of the merged checklist
    ids, lines = {}, []
    for key in checklist.keys:
        for v in merged.get(key, []):
            ids[f"v{len(ids) + 1}"] = (key, v)
            lines.append(json.dumps({"id": f"v{len(ids)}", "item": key, "value": v["value"],
                                     "evidence": v["evidence"]}, ensure_ascii=False))
    final: dict = {}
    if ids:
        req = run.request("prune", PRUNE_SCHEMA, values="\n".join(lines))
        answer = _answer(run.call("prune", [req]).get(req.custom_id)) or {}
        if not answer:
            run.note("prune", "unpruned", None, None, "no usable answer; every merged value kept")
        decided: dict = {}
        def known(x) -> bool:
            return isinstance(x, dict) and isinstance(x.get("id"), str) and x["id"] in ids

        for r in _list(answer.get("removed")):
            if known(r) and r["id"] not in decided:
                decided[r["id"]] = None
                why = r.get("why")
                run.note("prune", "removed", ids[r["id"]][0], ids[r["id"]][1]["value"],
                         why[:2000] if isinstance(why, str) and why.strip() else "no reason given")
        for k in _list(answer.get("kept")):
            if not known(k) or k["id"] in decided:
                continue
            key, old = ids[k["id"]]
            allowed = {_ev(e) for e in old["evidence"]}
            value = k["value"].strip() if isinstance(k.get("value"), str) and k["value"].strip() else old["value"]
            ev = run.checked_evidence("prune", key, value, k.get("evidence"), allowed)
            if not ev:
                run.note("prune", "dropped_value", key, value, "no evidence left")
                decided[k["id"]] = None
                continue
            decided[k["id"]] = {"value": run.wording("prune", key, value, [old], ev, k["id"]), "evidence": ev}
        for i, (key, v) in ids.items():
            if i not in decided and answer:
                run.note("prune", "kept_unmentioned", key, v["value"], f"{i} neither kept nor removed; kept")
            if decided.get(i, v) is not None:
                final.setdefault(key, []).append(decided.get(i, v))
    totals = {"total_input_tokens": sum(t["input_tokens"] for t in run.tokens.values()),
              "total_output_tokens": sum(t["output_tokens"] for t in run.tokens.values()),
              "total_prompts": sum(t["prompts"] for t in run.tokens.values()), "chunks_in_case": len(parts),
              "merge_levels": depth, "by_pass": run.tokens}
    return ThreePassResult({k: final[k] for k in checklist.keys if k in final}, run.log, {corpus.case_id: totals})
