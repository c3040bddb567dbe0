"""The public GAVEL release, read once, checked, and served as tidy pandas tables.

    >>> from gavel.release import load_release
    >>> rel = load_release()            # GAVEL_RELEASE, or data/external/gavel
    >>> rel.judgments.head()
    >>> rel.audit.groupby("defect").size()

Tables (one row per ...):

``files``            release file: kind, model, part, status (ok / empty / absent / truncated / invalid),
                     size, records read, and the settings the file name encodes (as JSON).
``cases``            (set, case): set ``benchmark`` (100 cases) or ``human_eval`` (40 cases), part, length
                     bin, total tokens, filing date, case type.
``summaries``        summary: model (``human`` for the reference), set, part, case, text, words.
``checklist_items``  item of one checklist: who made the checklist (origin, method, model, configuration,
                     unit), case, item key, number of values, the item spelling found in the file.
``checklist_values`` value of such an item: index (1-based), value, evidence snippets, and for
                     ``human.json`` the character spans of the evidence in the human summary.
``judgments``        judge output for one (candidate, case, item): relation or matched pairs in one
                     vocabulary, orientation, problems found.
``agent_runs``       Gavel-Agent run (model, case, configuration, unit): steps, LLM calls, tokens.
``token_stats``      token counts a file reports (per file, per case where given).
``audit``            defect found: file, record, defect class, detail.

Checklist identities: ``origin`` is ``summary`` (extracted from a summary) or ``document`` (extracted from
the case documents); ``method`` is ``llm`` or ``human`` for summary checklists and ``end_to_end``,
``chunk_by_chunk`` or ``agent`` for document checklists; ``model`` is whose summary it is (summary origin)
or which model extracted (document origin); ``configuration`` is ``all`` / ``grouped`` / ``individual``
for agent runs (1, 9 or 26 agents) and ``unit`` the sub-run (agent folder, end-to-end batch).

Nothing is dropped silently: every file the layout expects is listed in ``files`` whatever its state, and
every defect is a row of ``audit``. A malformed file never stops loading.
"""

from __future__ import annotations

import json
import os
import re
from collections import Counter
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path

import pandas as pd

from . import config, judge
from .checklist import NOT_APPLICABLE, entry_values  # noqa: F401  (NOT_APPLICABLE re-exported)
from .items import GROUPS, ITEMS, UnknownItemError, group_slug, item, spelling_of

PARTS = {"": 1, "_2": 2}
BENCHMARK_STEM = "50_cases_for_benchmarking"
HUMAN_EVAL_STEM = "20_human_eval_cases"
AGENT_CONFIGURATIONS = ("all", "grouped", "individual")
N_END_TO_END_BATCHES = 5

DEFECTS = {
    "empty_file": "file is empty (0 bytes)",
    "absent_file": "file the release layout expects is not there",
    "truncated_file": "file is cut off mid-JSON; complete records salvaged",
    "invalid_json": "file is not valid JSON and nothing could be salvaged",
    "unknown_orientation": "judge file in A/B wording with no record of which side was the model",
    "text_answer": "judge answer is raw text; the JSON inside was parsed",
    "unreadable_answer": "judge answer could not be parsed (unknown label, no JSON)",
    "null_index": "judge matching has a null index",
    "list_index": "judge matching has a list where an index should be",
    "bad_index": "judge matching has a non-integer index",
    "out_of_range_index": "judge index beyond the length of its list",
    "degenerate_answer": "judge answer is a runaway list of indices with no readable JSON",
    "structured_value": "checklist value given as an object of fields; joined into one text value",
    "list_value": "checklist value given as a list of strings; expanded into separate values",
    "item_variant": "item spelled in a stray variant",
    "unknown_item": "item name matches none of the 26 items",
    "incomplete_checklist": "checklist lacks some of the items it should cover",
    "empty_ledger": "agent ledger.jsonl is empty",
    "malformed_record": "record of an unexpected shape",
}


@dataclass
class Release:
    root: Path
    files: pd.DataFrame
    cases: pd.DataFrame
    summaries: pd.DataFrame
    checklist_items: pd.DataFrame
    checklist_values: pd.DataFrame
    judgments: pd.DataFrame
    agent_runs: pd.DataFrame
    token_stats: pd.DataFrame
    audit: pd.DataFrame
    cache: dict = field(default_factory=dict, repr=False)  # derived views computed once (gavel.reconstruct)

    def audit_summary(self) -> pd.DataFrame:
        """Count of audit rows and of distinct files per defect class."""
        if self.audit.empty:
            return pd.DataFrame(columns=["defect", "records", "files", "meaning"])
        out = (self.audit.groupby("defect")
               .agg(records=("file", "size"), files=("file", "nunique"))
               .reset_index())
        out["meaning"] = out["defect"].map(DEFECTS)
        return out


_SPELLINGS: dict = {}  # item spelling -> (Item, is_variant), shared across loads


@dataclass
class _Builder:
    root: Path
    rows: dict = field(default_factory=lambda: {k: [] for k in (
        "files", "cases", "summaries", "checklist_items", "checklist_values", "judgments",
        "agent_runs", "token_stats", "audit")})

    # ---------- bookkeeping ----------
    def rel(self, path: Path) -> str:
        text, prefix = str(path), str(self.root) + os.sep
        if text.startswith(prefix):  # every path is built from root: avoid pathlib's slow relative_to
            return text[len(prefix):].replace(os.sep, "/")
        return os.path.relpath(path, self.root).replace(os.sep, "/")

    def defect(self, path: Path | str, defect: str, record: str = "", detail: str = "") -> None:
        assert defect in DEFECTS, defect
        f = self.rel(path) if os.path.isabs(path) else str(path)
        self.rows["audit"].append({"file": f, "record": record, "defect": defect, "detail": detail})

    def file_row(self, path: Path, kind: str, status: str, model: str = "", part: int | None = None,
                 records: int = 0, meta: dict | None = None, size: int | None = None) -> None:
        meta = meta if isinstance(meta, dict) else {}
        self.rows["files"].append({
            "file": self.rel(path), "kind": kind, "model": model, "part": part, "status": status,
            "bytes": size, "records": records, "inference_model": meta.get("inference_model", ""),
            "settings": _settings_json(os.path.splitext(os.path.basename(path))[0]),
        })

    def read_json(self, path: Path, kind: str, model: str = "", part: int | None = None):
        """Parsed JSON, or a salvaged dict, or None; the file's state is recorded either way."""
        try:
            with open(path, "rb") as fh:
                raw = fh.read()
        except FileNotFoundError:
            self.file_row(path, kind, "absent", model, part)
            self.defect(path, "absent_file")
            return None
        if not raw.strip():
            self.file_row(path, kind, "empty", model, part, size=len(raw))
            self.defect(path, "empty_file")
            return None
        try:
            data = json.loads(raw)
        except (json.JSONDecodeError, UnicodeDecodeError) as err:
            salvaged = salvage_truncated(raw.decode("utf-8", errors="replace"))
            if salvaged is not None and salvaged.get("results"):
                n = len(salvaged["results"])
                self.file_row(path, kind, "truncated", model, part, records=n, meta=salvaged.get("meta_data"),
                              size=len(raw))
                self.defect(path, "truncated_file", detail=f"{len(raw)} bytes; JSON breaks at char {err.pos} ({err.msg}); "
                                                            f"{n} complete cases salvaged")
                return salvaged
            self.file_row(path, kind, "invalid", model, part, size=len(raw))
            self.defect(path, "invalid_json", detail=f"{err}")
            return None
        n = len(data.get("results", data)) if isinstance(data, dict) else len(data)
        self.file_row(path, kind, "ok", model, part, records=n,
                      meta=data.get("meta_data") if isinstance(data, dict) else None, size=len(raw))
        return data

    def item_key(self, path: Path, name: str, record: str) -> str | None:
        known = _SPELLINGS.get(name)
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

    # ---------- checklists ----------
    def add_checklist(self, path: Path, ident: dict, case_id: str, by_item: dict,
                      expected: tuple[str, ...] | None = None, evidence_kind: str = "plain") -> None:
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
            kept = len(values)
            self.rows["checklist_items"].append({**ident, "case_id": case_id, "item": key, "n_values": kept,
                                                 "spelling": name, "file": rel_path})
        if expected is not None:
            missing = [k for k in expected if k not in seen]
            if missing:
                self.defect(path, "incomplete_checklist", record,
                            f"{len(seen)} of {len(expected)} items; missing {', '.join(missing)}")

    # ---------- judge outputs ----------
    def add_judgments(self, path: Path, data: dict, ident: dict) -> None:
        results = data.get("results", {})
        rel_path = self.rel(path)
        orientations = Counter()
        for case_id, by_item in results.items():
            if not isinstance(by_item, dict):
                self.defect(path, "malformed_record", f"case {case_id}", f"{type(by_item).__name__}")
                continue
            for name, answer in by_item.items():
                record = f"case {case_id}, item {name!r}"
                key = self.item_key(path, name, record)
                if key is None:
                    continue
                try:
                    j = judge.parse_answer(answer, f"{rel_path}: {record}")
                except judge.JudgeParseError as err:
                    self.defect(path, "degenerate_answer" if err.degenerate else "unreadable_answer", record,
                                str(err).split(": ", 2)[-1][:200])
                    self.rows["judgments"].append({**ident, "case_id": case_id, "item": key, "kind": "unreadable",
                                                   "orientation": None, "relation": None, "pairs": [],
                                                   "only_in_model": [], "only_in_reference": [],
                                                   "problems": "unreadable answer", "file": rel_path})
                    continue
                orientations[j.orientation] += 1
                if j.salvaged_from_text:
                    self.defect(path, "text_answer", record)
                for p in j.problems:
                    self.defect(path, _problem_class(p), record, p)
                self.rows["judgments"].append({
                    **ident, "case_id": case_id, "item": key, "kind": j.kind, "orientation": j.orientation,
                    "relation": j.relation, "pairs": j.pairs, "only_in_model": j.only_in_model,
                    "only_in_reference": j.only_in_reference, "problems": "; ".join(j.problems),
                    "file": rel_path})
        if orientations.get("unknown"):
            self.defect(path, "unknown_orientation",
                        detail=f"{orientations['unknown']} of {sum(orientations.values())} answers in A/B wording")

    def add_token_stats(self, path: Path, data: dict, ident: dict) -> None:
        ts = data.get("token_stats") if isinstance(data, dict) else None
        if not isinstance(ts, dict):
            return
        overall = ts.get("overall", ts)
        self.rows["token_stats"].append({**ident, "file": self.rel(path), "scope": "file", "case_id": None,
                                         "input_tokens": overall.get("total_input_tokens"),
                                         "output_tokens": overall.get("total_output_tokens"),
                                         "prompts": overall.get("num_prompts", overall.get("total_prompts"))})
        for case_id, st in (ts.get("by_case") or {}).items():
            self.rows["token_stats"].append({**ident, "file": self.rel(path), "scope": "case", "case_id": case_id,
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


def salvage_truncated(text: str) -> dict | None:
    """Recover the complete cases of a release file cut off mid-way: ``meta_data``, ``token_stats`` and
    every case of ``results`` whose JSON value is complete. None if the file's opening is unreadable."""
    dec = json.JSONDecoder()
    out: dict = {}
    pos = text.find("{")
    if pos < 0:
        return None
    pos += 1
    ws = re.compile(r"[\s,]*")
    while True:
        pos = ws.match(text, pos).end()
        if pos >= len(text) or text[pos] == "}":
            return out
        try:
            key, pos = dec.raw_decode(text, pos)
            pos = ws.match(text, pos).end()
            if text[pos] != ":":
                return out or None
            pos = ws.match(text, pos + 1).end()
        except (json.JSONDecodeError, IndexError):
            return out or None
        if key != "results":
            try:
                out[key], pos = dec.raw_decode(text, pos)
            except json.JSONDecodeError:
                return out or None
            continue
        if text[pos] != "{":
            return out or None
        results: dict = {}
        out["results"] = results
        pos += 1
        while True:
            pos = ws.match(text, pos).end()
            if pos >= len(text) or text[pos] == "}":
                return out
            try:
                case_id, p2 = dec.raw_decode(text, pos)
                p2 = ws.match(text, p2).end()
                if text[p2] != ":":
                    return out
                value, pos = dec.raw_decode(text, ws.match(text, p2 + 1).end())
            except (json.JSONDecodeError, IndexError):
                return out  # the cut falls inside this case: keep only what came before
            results[case_id] = value


# ----------------------------------------------------------------------------------------------------
# The release layout
# ----------------------------------------------------------------------------------------------------

def _part_files(folder: Path, stem: str) -> dict[int, Path | None]:
    """Map part 1/2 to the file in folder whose name starts with ``stem`` or ``stem_2`` + '_complex'."""
    found: dict[int, Path | None] = {1: None, 2: None}
    if folder.is_dir():
        for p in sorted(folder.glob("*.json")):
            m = re.match(rf"^{re.escape(stem)}(_2)?_complex_", p.name)
            if m:
                found[2 if m.group(1) else 1] = p
    return found


def _expected(folder: Path, stem: str, part: int, suffix_like: Path | None) -> Path:
    """Best guess of the path of a part file that is absent (for the audit)."""
    name = f"{stem}{'_2' if part == 2 else ''}_complex_order_by_date_True.json"
    if suffix_like is not None:
        tail = suffix_like.name.split("_complex_", 1)[1]
        name = f"{stem}{'_2' if part == 2 else ''}_complex_{tail}"
    return folder / name


def _load_human_summaries(b: _Builder) -> None:
    for set_name, stem in (("benchmark", BENCHMARK_STEM), ("human_eval", HUMAN_EVAL_STEM)):
        for sfx, part in PARTS.items():
            path = b.root / "summaries" / f"{stem}{sfx}.json"
            data = b.read_json(path, "human_summaries", "human", part)
            if not isinstance(data, dict):
                continue
            for case_id, rec in data.items():
                if not isinstance(rec, dict) or not isinstance(rec.get("summary/long"), str):
                    b.defect(path, "malformed_record", f"case {case_id}", "no summary/long text")
                    continue
                tokens = rec.get("total_token_num")
                b.rows["cases"].append({
                    "set": set_name, "part": part, "case_id": case_id,
                    "length_bin": rec.get("total_length_bin"),
                    "total_tokens": int(tokens) if tokens not in (None, "") else None,
                    "filing_date": rec.get("filing_date"), "case_type": rec.get("case_type")})
                text = rec["summary/long"]
                b.rows["summaries"].append({"model": "human", "set": set_name, "part": part, "case_id": case_id,
                                            "text": text, "words": len(text.split())})


def _load_model_side(b: _Builder) -> None:
    all_keys = tuple(it.key for it in ITEMS)
    for m in config.models():
        name = m.release_name
        sums = _part_files(b.root / "summaries" / name, BENCHMARK_STEM)
        chks = _part_files(b.root / "summary_checklists" / f"{name}_summarization", BENCHMARK_STEM)
        evals = _part_files(b.root / "evaluation" / f"{name}_summarization", BENCHMARK_STEM)
        for part in (1, 2):
            # summaries
            path = sums[part] or _expected(b.root / "summaries" / name, BENCHMARK_STEM, part, sums[3 - part])
            data = b.read_json(path, "model_summaries", name, part)
            if isinstance(data, dict):
                b.add_token_stats(path, data, {"kind": "model_summaries", "model": name, "part": part})
                for case_id, text in data.get("results", {}).items():
                    if not isinstance(text, str):
                        b.defect(path, "malformed_record", f"case {case_id}", "summary is not text")
                        continue
                    b.rows["summaries"].append({"model": name, "set": "benchmark", "part": part,
                                                "case_id": case_id, "text": text, "words": len(text.split())})
            # checklists extracted from the summaries
            folder = b.root / "summary_checklists" / f"{name}_summarization"
            path = chks[part] or _expected(folder, BENCHMARK_STEM, part, chks[3 - part])
            data = b.read_json(path, "summary_checklists", name, part)
            if isinstance(data, dict):
                ident = {"origin": "summary", "method": "llm", "model": name, "configuration": "",
                         "unit": "", "part": part}
                for case_id, by_item in data.get("results", {}).items():
                    b.add_checklist(path, ident, case_id, by_item, expected=all_keys)
            # judge outputs
            folder = b.root / "evaluation" / f"{name}_summarization"
            path = evals[part] or _expected(folder, BENCHMARK_STEM, part, evals[3 - part])
            data = b.read_json(path, "summary_judgments", name, part)
            if isinstance(data, dict):
                b.add_judgments(path, data, {"task": "summary", "method": "llm", "model": name,
                                             "configuration": "", "part": part})
    # checklists of the human reference summaries
    for sfx, part in PARTS.items():
        path = b.root / "summary_checklists" / f"{BENCHMARK_STEM}{sfx}_thinking_True.json"
        data = b.read_json(path, "summary_checklists", "human", part)
        if isinstance(data, dict):
            ident = {"origin": "summary", "method": "llm", "model": "human", "configuration": "", "unit": "",
                     "part": part}
            for case_id, by_item in data.get("results", {}).items():
                b.add_checklist(path, ident, case_id, by_item, expected=all_keys)


def _load_documents(b: _Builder) -> None:
    all_keys = tuple(it.key for it in ITEMS)
    doc = b.root / "document_checklists"
    # human checklists of the 40 meta-evaluation summaries: the reference for document extraction
    path = doc / "human.json"
    data = b.read_json(path, "human_checklists", "human")
    if isinstance(data, dict):
        ident = {"origin": "summary", "method": "human", "model": "human", "configuration": "", "unit": "",
                 "part": None}
        for case_id, by_item in data.get("results", {}).items():
            b.add_checklist(path, ident, case_id, by_item, expected=all_keys)
    models = config.document_extraction_models()
    # end-to-end
    for name in models["end_to_end"]:
        for sfx, part in PARTS.items():
            for batch in range(1, N_END_TO_END_BATCHES + 1):
                path = doc / "end_to_end" / f"{HUMAN_EVAL_STEM}{sfx}_order_by_date_True_batch_{batch}.json"
                data = b.read_json(path, "document_checklists", name, part)
                if isinstance(data, dict):
                    ident = {"origin": "document", "method": "end_to_end", "model": name, "configuration": "",
                             "unit": f"batch_{batch}", "part": part}
                    b.add_token_stats(path, data, {"kind": "end_to_end", "model": name, "part": part})
                    for case_id, by_item in data.get("results", {}).items():
                        b.add_checklist(path, ident, case_id, by_item, expected=all_keys)
    # chunk-by-chunk
    for name in models["chunk_by_chunk"]:
        for sfx, part in PARTS.items():
            path = doc / "chunk_by_chunk" / name / f"{HUMAN_EVAL_STEM}{sfx}_thinking_True.json"
            data = b.read_json(path, "document_checklists", name, part)
            if isinstance(data, dict):
                ident = {"origin": "document", "method": "chunk_by_chunk", "model": name, "configuration": "",
                         "unit": "", "part": part}
                b.add_token_stats(path, data, {"kind": "chunk_by_chunk", "model": name, "part": part})
                for case_id, by_item in data.get("results", {}).items():
                    b.add_checklist(path, ident, case_id, by_item, expected=all_keys)
    # Gavel-Agent runs
    case_ids = sorted({r["case_id"] for r in b.rows["cases"] if r["set"] == "human_eval"})
    units = {"all": [("all_26_items", all_keys)],
             "grouped": [(group_slug(g.key), tuple(it.key for it in ITEMS if it.group == g.key)) for g in GROUPS],
             "individual": [(it.slug, (it.key,)) for it in ITEMS]}
    for name in models["agent"]:
        for case_id in case_ids:
            for configuration in AGENT_CONFIGURATIONS:
                for unit, expected in units[configuration]:
                    folder = os.path.join(doc, "gavel_agent", name, case_id, configuration, unit)
                    _load_agent_unit(b, folder, name, case_id, configuration, unit, expected)
    # judge outputs for document extraction
    ev = b.root / "evaluation_documents_checklist"
    runs = [("end_to_end", n, "", ev / "end_to_end" / f"{n}_thinking_False.json") for n in models["end_to_end"]]
    runs += [("chunk_by_chunk", n, "", ev / "chunk_by_chunk" / f"{n}_thinking_False.json")
             for n in models["chunk_by_chunk"]]
    runs += [("agent", n, c, ev / "agent" / f"{n}_{c}_thinking_False.json")
             for n in models["agent"] for c in AGENT_CONFIGURATIONS]
    for method, name, configuration, path in runs:
        data = b.read_json(path, "document_judgments", name)
        if isinstance(data, dict):
            b.add_judgments(path, data, {"task": "document", "method": method, "model": name,
                                         "configuration": configuration, "part": None})


def _load_agent_unit(b: _Builder, folder: str, name: str, case_id: str, configuration: str, unit: str,
                     expected: tuple[str, ...]) -> None:
    """One agent sub-run; paths are plain strings here (pathlib is slow over 8,640 files)."""
    ident = {"origin": "document", "method": "agent", "model": name, "configuration": configuration,
             "unit": unit, "part": None}
    checklist = os.path.join(folder, "checklist.json")
    data = b.read_json(checklist, "agent_checklist", name)
    if isinstance(data, dict):
        b.add_checklist(checklist, ident, case_id, data, expected=expected)
    stats_path = os.path.join(folder, "stats.json")
    stats = b.read_json(stats_path, "agent_stats", name)
    ledger = os.path.join(folder, "ledger.jsonl")
    ledger_lines = None
    try:
        with open(ledger, "rb") as fh:
            raw = fh.read()
    except FileNotFoundError:
        b.file_row(ledger, "agent_ledger", "absent", name)
        b.defect(ledger, "absent_file")
    else:
        ledger_lines = raw.count(b"\n") + (1 if raw and not raw.endswith(b"\n") else 0)
        b.file_row(ledger, "agent_ledger", "ok" if raw.strip() else "empty", name, records=ledger_lines,
                   size=len(raw))
        if not raw.strip():
            b.defect(ledger, "empty_ledger")
    if isinstance(stats, dict):
        steps = stats.get("per_step_details") or []
        sys_t, user_t = stats.get("total_system_prompt_tokens"), stats.get("total_user_prompt_tokens")
        out_t = stats.get("total_completion_tokens")
        b.rows["agent_runs"].append({
            "model": name, "case_id": case_id, "configuration": configuration, "unit": unit,
            "steps": stats.get("steps"), "llm_calls": len(steps),
            "system_tokens": sys_t, "user_tokens": user_t, "output_tokens": out_t,
            "input_tokens": (sys_t or 0) + (user_t or 0), "ledger_events": ledger_lines,
            "file": b.rel(stats_path)})


_COLUMNS = {
    "files": ["file", "kind", "model", "part", "status", "bytes", "records", "inference_model", "settings"],
    "cases": ["set", "part", "case_id", "length_bin", "total_tokens", "filing_date", "case_type"],
    "summaries": ["model", "set", "part", "case_id", "text", "words"],
    "checklist_items": ["origin", "method", "model", "configuration", "unit", "part", "case_id", "item",
                        "n_values", "spelling", "file"],
    "checklist_values": ["origin", "method", "model", "configuration", "unit", "part", "case_id", "item",
                         "index", "value", "evidence", "evidence_documents", "evidence_spans"],
    "judgments": ["task", "method", "model", "configuration", "part", "case_id", "item", "kind", "orientation",
                  "relation", "pairs", "only_in_model", "only_in_reference", "problems", "file"],
    "agent_runs": ["model", "case_id", "configuration", "unit", "steps", "llm_calls", "system_tokens",
                   "user_tokens", "output_tokens", "input_tokens", "ledger_events", "file"],
    "token_stats": ["kind", "model", "part", "file", "scope", "case_id", "input_tokens", "output_tokens", "prompts"],
    "audit": ["file", "record", "defect", "detail"],
}


def _check_index_ranges(b: _Builder) -> None:
    """Flag judge indices beyond the length of the lists they point into, where both lengths are known.
    Works on the row lists before they become DataFrames (plain dicts are much faster to walk)."""
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


def load_release(root: str | os.PathLike | None = None) -> Release:
    """Read the whole release at ``root`` (default: GAVEL_RELEASE or data/external/gavel)."""
    b = _Builder(config.release_root(root))
    _load_human_summaries(b)
    _load_model_side(b)
    _load_documents(b)
    _check_index_ranges(b)
    tables = {k: pd.DataFrame(v, columns=_COLUMNS[k]) for k, v in b.rows.items()}
    for name in ("cases", "files", "token_stats"):
        tables[name] = tables[name].astype({"part": "Int64"})
    tables["cases"] = tables["cases"].astype({"total_tokens": "Int64"})
    tables["checklist_items"] = tables["checklist_items"].astype({"part": "Int64"})
    tables["checklist_values"] = tables["checklist_values"].astype({"part": "Int64"})
    tables["judgments"] = tables["judgments"].astype({"part": "Int64"})
    return Release(root=b.root, **tables)
