"""What the release's layout is: every file the loader reads, in reading order, as a ``Source``, and the
folders it looks through for anything it would otherwise pass over (a model folder not in the registry,
a rerun beside a part file, a stray file).

Part files of the model side are found by name (``50_cases_for_benchmarking[_2]_complex_…``); every other
path is fixed. A Source says which reader turns the file into rows (``kind``) and what those rows carry.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field

from gavel.core import config
from gavel.core.items import GROUPS, ITEMS, group_slug

PARTS = {"": 1, "_2": 2}
BENCHMARK_STEM = "50_cases_for_benchmarking"
HUMAN_EVAL_STEM = "20_human_eval_cases"
AGENT_CONFIGURATIONS = ("all", "grouped", "individual")
N_END_TO_END_BATCHES = 5
ALL_ITEMS = tuple(it.key for it in ITEMS)
# the folders whose sub-folders are one per model, and the suffix of those folder names
MODEL_PARENTS = {"summaries": "", "summary_checklists": "_summarization", "evaluation": "_summarization",
                 "document_checklists/chunk_by_chunk": "", "document_checklists/gavel_agent": ""}


@dataclass
class Source:
    """One file (or, for an agent run, one folder) and how its records become rows."""
    path: str
    kind: str                   # the reader, and files.kind
    model: str = ""
    part: int | None = None
    ident: dict = field(default_factory=dict)   # columns every row of the file carries
    expected: tuple[str, ...] | None = None      # item keys each checklist should cover
    tokens: dict | None = None  # token_stats identity, where the file's token counts are wanted
    wrapped: bool = True        # records under "results" (False: the object is the records)


@dataclass
class Rerun:
    """A second file matching a part: reported, not read."""
    path: str
    used: str
    model: str
    part: int


def part_files(folder: str, stem: str) -> tuple[dict[int, str | None], list[tuple[str, str, int]]]:
    """Map part 1/2 to the file in ``folder`` named ``stem[_2]_complex_…``; where several match a part (a
    rerun), the largest file is read and the others are returned as ``(path, used, part)``."""
    found: dict[int, list[str]] = {1: [], 2: []}
    try:
        names = sorted(os.listdir(folder))
    except OSError:
        names = []
    for name in names:
        m = re.match(rf"^{re.escape(stem)}(_2)?_complex_.*\.json$", name)
        if m:
            found[2 if m.group(1) else 1].append(os.path.join(folder, name))
    chosen: dict[int, str | None] = {}
    others = []
    for part, paths in found.items():
        ranked = sorted(paths, key=lambda p: -(os.path.getsize(p) if os.path.isfile(p) else -1))
        chosen[part] = ranked[0] if ranked else None
        others += [(p, ranked[0], part) for p in ranked[1:]]
    return chosen, others


def _expected(folder: str, stem: str, part: int, sibling: str | None) -> str:
    """Best guess of the path of an absent part file (for the audit): the other part's settings."""
    tail = os.path.basename(sibling).split("_complex_", 1)[1] if sibling else "order_by_date_True.json"
    return os.path.join(folder, f"{stem}{'_2' if part == 2 else ''}_complex_{tail}")


def human_summary_sources(root: str) -> list[Source]:
    return [Source(os.path.join(root, "summaries", f"{stem}{sfx}.json"), "human_summaries", "human", part,
                   ident={"set": set_name}, wrapped=False)
            for set_name, stem in (("benchmark", BENCHMARK_STEM), ("human_eval", HUMAN_EVAL_STEM))
            for sfx, part in PARTS.items()]


def model_sources(root: str, reruns: list[Rerun]) -> list[Source]:
    """Each registry model's summaries, summary checklists and judge files (part 1, then part 2), then the
    checklists of the human summaries. Reruns found beside a part file are appended to ``reruns``."""
    out = []
    for m in config.models():
        name = m.release_name
        kinds = (("model_summaries", os.path.join(root, "summaries", name)),
                 ("summary_checklists", os.path.join(root, "summary_checklists", f"{name}_summarization")),
                 ("summary_judgments", os.path.join(root, "evaluation", f"{name}_summarization")))
        found = {}
        for kind, folder in kinds:
            found[kind], others = part_files(folder, BENCHMARK_STEM)
            reruns += [Rerun(p, used, name, part) for p, used, part in others]
        for part in (1, 2):
            for kind, folder in kinds:
                path = found[kind][part] or _expected(folder, BENCHMARK_STEM, part, found[kind][3 - part])
                out.append(Source(path, kind, name, part, **_model_side(kind, name, part)))
    for sfx, part in PARTS.items():
        path = os.path.join(root, "summary_checklists", f"{BENCHMARK_STEM}{sfx}_thinking_True.json")
        out.append(Source(path, "summary_checklists", "human", part, **_model_side("summary_checklists", "human",
                                                                                   part)))
    return out


def _model_side(kind: str, name: str, part: int) -> dict:
    if kind == "model_summaries":
        return {"tokens": {"kind": "model_summaries", "model": name, "part": part}}
    if kind == "summary_checklists":
        return {"ident": {"origin": "summary", "method": "llm", "model": name, "configuration": "", "unit": "",
                          "part": part}, "expected": ALL_ITEMS}
    return {"ident": {"task": "summary", "method": "llm", "model": name, "configuration": "", "part": part}}


def document_sources(root: str, human_eval_cases: list[str]) -> list[Source]:
    """human.json, end-to-end batches, chunk-by-chunk files, Gavel-Agent run folders (one Source each),
    and the judge files of document extraction."""
    doc = os.path.join(root, "document_checklists")
    models = config.document_extraction_models()
    out = [Source(os.path.join(doc, "human.json"), "human_checklists", "human",
                  ident=_checklist_ident("summary", "human", "human"), expected=ALL_ITEMS)]
    for name in models["end_to_end"]:
        for sfx, part in PARTS.items():
            for batch in range(1, N_END_TO_END_BATCHES + 1):
                path = os.path.join(doc, "end_to_end", f"{HUMAN_EVAL_STEM}{sfx}_order_by_date_True_batch_{batch}.json")
                out.append(Source(path, "document_checklists", name, part, expected=ALL_ITEMS,
                                  ident=_checklist_ident("document", "end_to_end", name, unit=f"batch_{batch}", part=part),
                                  tokens={"kind": "end_to_end", "model": name, "part": part}))
    for name in models["chunk_by_chunk"]:
        for sfx, part in PARTS.items():
            path = os.path.join(doc, "chunk_by_chunk", name, f"{HUMAN_EVAL_STEM}{sfx}_thinking_True.json")
            out.append(Source(path, "document_checklists", name, part, expected=ALL_ITEMS,
                              ident=_checklist_ident("document", "chunk_by_chunk", name, part=part),
                              tokens={"kind": "chunk_by_chunk", "model": name, "part": part}))
    units = {"all": [("all_26_items", ALL_ITEMS)],
             "grouped": [(group_slug(g.key), tuple(it.key for it in ITEMS if it.group == g.key)) for g in GROUPS],
             "individual": [(it.slug, (it.key,)) for it in ITEMS]}
    for name in models["agent"]:
        for case_id in human_eval_cases:
            for configuration in AGENT_CONFIGURATIONS:
                for unit, expected in units[configuration]:
                    folder = os.path.join(doc, "gavel_agent", name, case_id, configuration, unit)
                    out.append(Source(folder, "agent_run", name, expected=expected, wrapped=False,
                                      ident={**_checklist_ident("document", "agent", name, configuration, unit),
                                             "case_id": case_id}))
    ev = os.path.join(root, "evaluation_documents_checklist")
    runs = [("end_to_end", n, "", f"{n}_thinking_False.json") for n in models["end_to_end"]]
    runs += [("chunk_by_chunk", n, "", f"{n}_thinking_False.json") for n in models["chunk_by_chunk"]]
    runs += [("agent", n, c, f"{n}_{c}_thinking_False.json") for n in models["agent"] for c in AGENT_CONFIGURATIONS]
    for method, name, configuration, file_name in runs:
        out.append(Source(os.path.join(ev, method, file_name), "document_judgments", name,
                          ident={"task": "document", "method": method, "model": name,
                                 "configuration": configuration, "part": None}))
    return out


def _checklist_ident(origin: str, method: str, model: str, configuration: str = "", unit: str = "",
                     part: int | None = None) -> dict:
    return {"origin": origin, "method": method, "model": model, "configuration": configuration, "unit": unit,
            "part": part}


def folders_to_scan() -> list[str]:
    """Folders (relative to the release root) whose every entry should be something the loader reads: the
    model-side folders and the document folders above the agent's per-case trees."""
    out = ["summaries", "summary_checklists", "evaluation", "document_checklists",
           "document_checklists/end_to_end", "document_checklists/chunk_by_chunk", "document_checklists/gavel_agent",
           "evaluation_documents_checklist", "evaluation_documents_checklist/end_to_end",
           "evaluation_documents_checklist/chunk_by_chunk", "evaluation_documents_checklist/agent"]
    for m in config.models():
        out += [f"summaries/{m.release_name}", f"summary_checklists/{m.release_name}_summarization",
                f"evaluation/{m.release_name}_summarization"]
    models = config.document_extraction_models()
    out += [f"document_checklists/chunk_by_chunk/{n}" for n in models["chunk_by_chunk"]]
    out += [f"document_checklists/gavel_agent/{n}" for n in models["agent"]]
    return out


def unread_entries(root: str, read: set[str]) -> list[tuple[str, str, str]]:
    """Audit rows ``(path, defect, detail)`` for every entry of the scanned folders that the loader did not
    read: a model folder not in the registry (``unregistered_model``) or any other file (``unexpected_file``).
    ``read``: relative paths of the files read (and reruns already reported)."""
    scanned = folders_to_scan()
    keep = set(scanned)
    for p in read:
        parts = p.split("/")
        keep.update("/".join(parts[:i]) for i in range(1, len(parts) + 1))
    out = []
    for folder in scanned:
        try:
            names = sorted(os.listdir(os.path.join(root, folder)))
        except OSError:
            continue
        for name in names:
            rel = f"{folder}/{name}"
            if rel in keep or name == "README.md":
                continue
            full = os.path.join(root, rel)
            if folder in MODEL_PARENTS and os.path.isdir(full):
                n = sum(len(files) for _, _, files in os.walk(full))
                model = name[: -len(MODEL_PARENTS[folder])] if MODEL_PARENTS[folder] and name.endswith(
                    MODEL_PARENTS[folder]) else name
                out.append((rel, "unregistered_model",
                            f"model {model!r} is not in gavel/core/models.yaml: {n} file(s) not read"))
            else:
                out.append((rel, "unexpected_file", "not part of the release layout; not read"))
    return out
