"""How the records of a release file become table rows, and the checks that need several files at once.

``Rows`` collects plain dicts per table (faster to build than DataFrames) and audit rows. ``read_source``
reads one ``layout.Source`` with ``salvage.read_file`` and hands its records to the reader of its kind.
"""

from __future__ import annotations

import json
import os
import re
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from functools import cache

from gavel.core.entries import entry_values
from gavel.core.items import UnknownItemError, item, spelling_of
from gavel.release import judge

from .audit import DEFECTS
from .layout import BENCHMARK_STEM, Source
from .salvage import FileRead, read_file

TABLES = ("files", "cases", "summaries", "checklist_items", "checklist_values", "judgments", "agent_runs",
          "token_stats", "audit")
_SPELLINGS: dict = {}  # item spelling -> (Item, is_variant), shared across loads


@dataclass
class Rows:
    root: str
    rows: dict = field(default_factory=lambda: {k: [] for k in TABLES})
    seen: dict = field(default_factory=dict)  # (kind, model or set) -> {case_id: file it was read from}

    def rel(self, path: str) -> str:
        path, prefix = str(path), self.root + os.sep
        if path.startswith(prefix):  # every path is built from root: avoid the slow general case
            return path[len(prefix):].replace(os.sep, "/")
        return os.path.relpath(path, self.root).replace(os.sep, "/") if os.path.isabs(path) else path

    def defect(self, path: str, defect: str, record: str = "", detail: str = "") -> None:
        assert defect in DEFECTS, defect
        self.rows["audit"].append({"file": self.rel(path), "record": record, "defect": defect, "detail": detail})

    def file_row(self, path: str, kind: str, got: FileRead, model: str = "", part: int | None = None,
                 records: int = 0) -> None:
        meta = got.data.get("meta_data") if isinstance(got.data, dict) else None
        self.rows["files"].append({
            "file": self.rel(path), "kind": kind, "model": model, "part": part, "status": got.status,
            "bytes": got.size, "records": records, "inference_model": (meta or {}).get("inference_model", "")
            if isinstance(meta, dict) else "", "settings": _settings_json(os.path.splitext(os.path.basename(path))[0])})

    def read(self, path: str, kind: str, model: str = "", part: int | None = None, wrapped: bool = True) -> FileRead:
        """Read one file; its state goes to ``files``, its problems to ``audit``."""
        got = read_file(path, wrapped)
        self.file_row(path, kind, got, model, part, len(got.records(wrapped)))
        for defect, record, detail in got.problems:
            self.defect(path, defect, record, detail)
        return got

    def first_reading(self, src: Source, records: dict, key: tuple):
        """(case_id, record) pairs of a file, without the cases an earlier file under ``key`` already gave
        (a case in both parts is read once, from the first; the second is audited)."""
        seen = self.seen.setdefault(key, {})
        for case_id, rec in records.items():
            if case_id in seen:
                self.defect(src.path, "duplicate_case", f"case {case_id}", f"also in {seen[case_id]}; read from there")
                continue
            seen[case_id] = self.rel(src.path)
            yield case_id, rec

    def item_key(self, path: str, name, record: str) -> str | None:
        known = _SPELLINGS.get(name) if isinstance(name, str) else None
        if known is None:
            try:
                known = (item(name), spelling_of(name) == "variant")
            except (UnknownItemError, TypeError):
                self.defect(path, "unknown_item", record, repr(name))
                return None
            _SPELLINGS[name] = known
        it, variant = known
        if variant:
            self.defect(path, "item_variant", record, f"{name!r} read as {it.name!r}")
        return it.key

    def add_checklist(self, path: str, ident: dict, case_id: str, by_item, expected: tuple[str, ...] | None) -> None:
        record = f"case {case_id}"
        if not isinstance(by_item, dict):
            self.defect(path, "malformed_record", record, f"checklist is {type(by_item).__name__}")
            return
        rel_path = self.rel(path)
        seen = set()
        for name, entry in by_item.items():
            key = self.item_key(path, name, f"{record}, item {name!r}")
            if key is None:
                continue
            seen.add(key)
            if not isinstance(entry, (dict, list)):
                self.defect(path, "malformed_record", f"{record}, item {name!r}", f"entry is {type(entry).__name__}")
                continue
            values, problems = entry_values(entry)
            for problem in problems:
                self.defect(path, problem.defect, f"{record}, item {name!r}", problem.detail)
            for v in values:
                self.rows["checklist_values"].append({**ident, "case_id": case_id, "item": key, **v})
            self.rows["checklist_items"].append({**ident, "case_id": case_id, "item": key, "n_values": len(values),
                                                 "spelling": name, "file": rel_path})
        missing = [k for k in expected or () if k not in seen]
        if missing:
            self.defect(path, "incomplete_checklist", record,
                        f"{len(seen)} of {len(expected)} items; missing {', '.join(missing)}")

    def add_judgments(self, path: str, case_id: str, by_item, ident: dict, orientations: Counter) -> None:
        if not isinstance(by_item, dict):
            self.defect(path, "malformed_record", f"case {case_id}", f"{type(by_item).__name__}")
            return
        rel_path = self.rel(path)
        for name, answer in by_item.items():
            record = f"case {case_id}, item {name!r}"
            key = self.item_key(path, name, record)
            if key is None:
                continue
            row = {**ident, "case_id": case_id, "item": key, "file": rel_path}
            try:
                j = judge.parse_answer(answer, f"{rel_path}: {record}")
            except judge.JudgeParseError as err:
                self.defect(path, "degenerate_answer" if err.degenerate else "unreadable_answer", record,
                            str(err).split(": ", 2)[-1][:200])
                self.rows["judgments"].append({**row, "kind": "unreadable", "orientation": None, "relation": None,
                                               "pairs": [], "only_in_model": [], "only_in_reference": [],
                                               "problems": "unreadable answer"})
                continue
            orientations[j.orientation] += 1
            if j.salvaged_from_text:
                self.defect(path, "text_answer", record)
            for p in j.problems:
                self.defect(path, _problem_class(p), record, p)
            self.rows["judgments"].append({**row, "kind": j.kind, "orientation": j.orientation, "relation": j.relation,
                                           "pairs": j.pairs, "only_in_model": j.only_in_model,
                                           "only_in_reference": j.only_in_reference,
                                           "problems": "; ".join(j.problems)})

    def add_token_stats(self, path: str, data: dict, ident: dict) -> None:
        ts = data.get("token_stats")
        if not isinstance(ts, dict):
            return
        overall = ts.get("overall", ts)
        rel_path = self.rel(path)
        self.rows["token_stats"].append({**ident, "file": rel_path, "scope": "file", "case_id": None,
                                         "input_tokens": overall.get("total_input_tokens"),
                                         "output_tokens": overall.get("total_output_tokens"),
                                         "prompts": overall.get("num_prompts", overall.get("total_prompts"))})
        for case_id, st in (ts.get("by_case") or {}).items():
            self.rows["token_stats"].append({**ident, "file": rel_path, "scope": "case", "case_id": case_id,
                                             "input_tokens": st.get("total_input_tokens"),
                                             "output_tokens": st.get("total_output_tokens"),
                                             "prompts": st.get("total_prompts")})


def _problem_class(problem: str) -> str:
    if problem.startswith("null"):
        return "null_index"
    if problem.startswith("list-valued"):
        return "list_index"
    if "out of range" in problem:
        return "out_of_range_index"
    if problem.startswith("malformed"):
        return "malformed_record"
    return "bad_index"


_SETTING = re.compile(r"_(order_by_date|thinking|batch)_([A-Za-z0-9]+)")


def settings_from_name(stem: str) -> dict:
    """The settings a release file name encodes, e.g. ``…_order_by_date_True_thinking_high_thinking_True``
    -> ``{"order_by_date": true, "thinking": ["high", true]}``. Repeated keys keep their order (summary
    model, then checklist extractor, then judge)."""
    out: dict = {}
    for key, val in _SETTING.findall(stem):
        parsed = {"True": True, "False": False}.get(val, int(val) if val.isdigit() else val)
        out.setdefault(key, []).append(parsed)
    return {k: (v[0] if len(v) == 1 else v) for k, v in out.items()}


@cache
def _settings_json(stem: str) -> str:
    return json.dumps(settings_from_name(stem), sort_keys=True)


# ---------- one reader per kind of file ----------

def read_source(b: Rows, src: Source) -> None:
    if src.kind == "agent_run":
        _agent_run(b, src)
        return
    got = b.read(src.path, src.kind, src.model, src.part, src.wrapped)
    if got.data is None:
        return
    if src.tokens:
        b.add_token_stats(src.path, got.data, src.tokens)
    records = got.records(src.wrapped)
    if src.kind == "human_summaries":
        _human_summaries(b, src, records)
    elif src.kind == "model_summaries":
        for case_id, text in b.first_reading(src, records, (src.kind, src.model)):
            if not isinstance(text, str):
                b.defect(src.path, "malformed_record", f"case {case_id}", "summary is not text")
                continue
            b.rows["summaries"].append({"model": src.model, "set": "benchmark", "part": src.part, "case_id": case_id,
                                        "text": text, "words": len(text.split())})
    elif src.kind in ("summary_checklists", "human_checklists", "document_checklists"):
        pairs = (b.first_reading(src, records, (src.kind, src.model)) if src.kind == "summary_checklists"
                 else records.items())
        for case_id, by_item in pairs:
            b.add_checklist(src.path, src.ident, case_id, by_item, src.expected)
    elif src.kind in ("summary_judgments", "document_judgments"):
        pairs = (b.first_reading(src, records, (src.kind, src.model)) if src.kind == "summary_judgments"
                 else records.items())
        orientations: Counter = Counter()
        for case_id, by_item in pairs:
            b.add_judgments(src.path, case_id, by_item, src.ident, orientations)
        if orientations.get("unknown"):
            b.defect(src.path, "unknown_orientation",
                     detail=f"{orientations['unknown']} of {sum(orientations.values())} answers in A/B wording")
    else:
        raise ValueError(f"no reader for files of kind {src.kind!r}")


def _human_summaries(b: Rows, src: Source, records: dict) -> None:
    set_name = src.ident["set"]
    for case_id, rec in b.first_reading(src, records, ("human_summaries", set_name)):
        if not isinstance(rec, dict) or not isinstance(rec.get("summary/long"), str):
            b.defect(src.path, "malformed_record", f"case {case_id}", "no summary/long text")
            continue
        tokens = rec.get("total_token_num")
        b.rows["cases"].append({
            "set": set_name, "part": src.part, "case_id": case_id, "length_bin": rec.get("total_length_bin"),
            "total_tokens": int(tokens) if tokens not in (None, "") else None,
            "filing_date": rec.get("filing_date"), "case_type": rec.get("case_type")})
        text = rec["summary/long"]
        b.rows["summaries"].append({"model": "human", "set": set_name, "part": src.part, "case_id": case_id,
                                    "text": text, "words": len(text.split())})


def _agent_run(b: Rows, src: Source) -> None:
    """One agent sub-run folder: checklist.json, stats.json, ledger.jsonl."""
    name, case_id = src.model, src.ident["case_id"]
    ident = {k: v for k, v in src.ident.items() if k != "case_id"}
    checklist = os.path.join(src.path, "checklist.json")
    got = b.read(checklist, "agent_checklist", name, wrapped=False)
    if got.data is not None:
        b.add_checklist(checklist, ident, case_id, got.data, src.expected)
    stats_path = os.path.join(src.path, "stats.json")
    stats = b.read(stats_path, "agent_stats", name, wrapped=False).data
    ledger = os.path.join(src.path, "ledger.jsonl")
    ledger_lines = None
    try:
        with open(ledger, "rb") as fh:
            raw = fh.read()
    except FileNotFoundError:
        b.file_row(ledger, "agent_ledger", FileRead("absent"), name)
        b.defect(ledger, "absent_file")
    except OSError as err:
        b.file_row(ledger, "agent_ledger", FileRead("not_a_file"), name)
        b.defect(ledger, "not_a_file", detail=str(err.strerror))
    else:
        ledger_lines = raw.count(b"\n") + (1 if raw and not raw.endswith(b"\n") else 0)
        b.file_row(ledger, "agent_ledger", FileRead("ok" if raw.strip() else "empty", size=len(raw)), name,
                   records=ledger_lines)
        if not raw.strip():
            b.defect(ledger, "empty_ledger")
    if stats is not None:
        steps = stats.get("per_step_details") or []
        sys_t, user_t = stats.get("total_system_prompt_tokens"), stats.get("total_user_prompt_tokens")
        b.rows["agent_runs"].append({
            "model": name, "case_id": case_id, "configuration": ident["configuration"], "unit": ident["unit"],
            "steps": stats.get("steps"), "llm_calls": len(steps), "system_tokens": sys_t, "user_tokens": user_t,
            "output_tokens": stats.get("total_completion_tokens"), "input_tokens": (sys_t or 0) + (user_t or 0),
            "ledger_events": ledger_lines, "file": b.rel(stats_path)})


# ---------- checks across files ----------

def check_index_ranges(b: Rows) -> None:
    """Flag judge indices beyond the length of the lists they point into, where both lengths are known."""
    lengths: dict = {}
    for r in b.rows["checklist_items"]:
        key = (r["origin"], r["method"], r["model"], r["configuration"], r["case_id"], r["item"])
        lengths[key] = lengths.get(key, 0) + r["n_values"]
    for r in b.rows["judgments"]:
        if r["kind"] != "matching" or r["orientation"] != "model_reference":
            continue
        if r["task"] == "summary":
            n_model = lengths.get(("summary", "llm", r["model"], "", r["case_id"], r["item"]))
            n_ref = lengths.get(("summary", "llm", "human", "", r["case_id"], r["item"]))
        else:
            n_model = lengths.get(("document", r["method"], r["model"], r["configuration"], r["case_id"], r["item"]))
            n_ref = lengths.get(("summary", "human", "human", "", r["case_id"], r["item"]))
        if n_model is None and n_ref is None:
            continue
        j = judge.Judgment(kind="matching", pairs=r["pairs"], only_in_model=r["only_in_model"],
                           only_in_reference=r["only_in_reference"])
        for problem in judge.check_ranges(j, n_model, n_ref):
            b.defect(r["file"], "out_of_range_index", f"case {r['case_id']}, item {item(r['item']).name!r}", problem)


def check_case_coverage(b: Rows) -> None:
    """Every benchmark file holds the cases it should, and only those.

    * a checklist or judgment of a case the model has no summary of is ``unmatched_case``, and not loaded;
    * a case missing from a file read in full (a reference summary, a model's summary, its checklist or
      judgment of a summary the model has) is ``missing_case``, named on that file."""
    bench = {r["case_id"]: r["part"] for r in b.rows["cases"] if r["set"] == "benchmark"}
    summarized: dict = defaultdict(set)  # model -> case ids it has summaries of
    for r in b.rows["summaries"]:
        if r["set"] == "benchmark":
            summarized[r["model"]].add(r["case_id"])
    # model summaries of cases with no reference summary: named on the reference file of their part
    lost = defaultdict(list)
    for r in b.rows["summaries"]:
        if r["model"] != "human" and r["case_id"] not in bench:
            lost[(r["part"], r["case_id"])].append(r["model"])
    for (part, case_id), models in sorted(lost.items(), key=str):
        path = f"summaries/{BENCHMARK_STEM}{'_2' if part == 2 else ''}.json"
        b.defect(path, "missing_case", f"case {case_id}",
                 f"no reference summary here, but {len(models)} model summaries of it (kept)")
    # checklists and judgments of cases the summarized model has no summary of; where the model's
    # summaries of a part were not read (file empty or absent), any case of that part may be there
    allowed = {m: set(c) for m, c in summarized.items()}
    for f in b.rows["files"]:
        if f["kind"] == "model_summaries" and f["status"] not in ("ok", "truncated"):
            allowed.setdefault(f["model"], set()).update(c for c, p in bench.items() if p == f["part"])
    drop = set()
    for table, model_col in (("checklist_items", "model"), ("judgments", "model")):
        for r in b.rows[table]:
            if r.get("origin", "summary") != "summary" or r.get("task", "summary") != "summary" \
                    or r["method"] != "llm":
                continue
            if r["case_id"] not in allowed.get(r[model_col], ()):
                key = (table, r["file"], r["case_id"])
                if key not in drop:
                    drop.add(key)
                    b.defect(r["file"], "unmatched_case", f"case {r['case_id']}",
                             f"{r[model_col]} has no summary of this case; not read")
    if drop:
        gone = {(t, f, c) for t, f, c in drop}
        files_of = {(r["origin"], r["method"], r["model"], r["part"], r["case_id"]) for r in b.rows["checklist_items"]
                    if ("checklist_items", r["file"], r["case_id"]) in gone}
        b.rows["checklist_items"] = [r for r in b.rows["checklist_items"]
                                     if ("checklist_items", r["file"], r["case_id"]) not in gone]
        b.rows["checklist_values"] = [r for r in b.rows["checklist_values"] if (
            r["origin"], r["method"], r["model"], r["part"], r["case_id"]) not in files_of]
        b.rows["judgments"] = [r for r in b.rows["judgments"] if ("judgments", r["file"], r["case_id"]) not in gone]
    # cases missing from files read in full
    held: dict = defaultdict(set)  # file -> case ids its rows hold
    for table in ("checklist_items", "judgments"):
        for r in b.rows[table]:
            held[r["file"]].add(r["case_id"])
    for r in b.rows["summaries"]:
        if r["model"] != "human" and r["set"] == "benchmark":
            held[(r["model"], r["part"])].add(r["case_id"])
    for f in b.rows["files"]:
        if f["status"] not in ("ok", "truncated") or f["kind"] not in (
                "model_summaries", "summary_checklists", "summary_judgments"):
            continue
        should = {c for c, p in bench.items() if p == f["part"]}
        got = held[(f["model"], f["part"]) if f["kind"] == "model_summaries" else f["file"]]
        for case_id in sorted(c for c in got if bench.get(c, f["part"]) != f["part"]):
            b.defect(f["file"], "misplaced_case", f"case {case_id}",
                     f"a case of part {bench[case_id]} in a part-{f['part']} file; read")
        if f["status"] != "ok":  # what a truncated file lost is said by its truncated_file row
            continue
        if f["kind"] != "model_summaries" and f["model"] != "human":
            should &= allowed.get(f["model"], set())
        for case_id in sorted(should - got - _unreadable_cases(b, f["file"])):
            b.defect(f["file"], "missing_case", f"case {case_id}", "a case of this part the file does not hold")


def _unreadable_cases(b: Rows, rel_file: str) -> set:
    """Cases of a file already audited as malformed (not to be named twice)."""
    return {a["record"][5:] for a in b.rows["audit"] if a["file"] == rel_file and a["defect"] == "malformed_record"
            and a["record"].startswith("case ") and ", item" not in a["record"]}
