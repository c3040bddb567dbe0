"""Building annotation tasks from data, and the assignment plan.

Three kinds of task, each a dict ``{key, kind, case_id, source, payload}`` for ``Store.add_tasks``:

* extraction review of one summary: its text, its paragraphs (character spans), and the 26 items pre-filled
  from a checklist given as value rows (``case_id, item, index, value, evidence`` plus ``evidence_spans``
  where known, as ``human.json`` stores them), or empty;
* comparison of one item's two value lists (A: a model's extraction, B: the reference); single-value when
  both hold one value (4-way label), otherwise list matching. The pipeline's own judgment is kept in the
  payload (``judge``) for the meta-evaluation and never shown;
* style of a model summary against the human summary of the same case; the two are shown in an order drawn
  per task (``order``), so annotators cannot tell which is the human one.

Evidence given only as text (LLM extractions) is located in the summary with gavel.ref.grounding (exact, normalised, fuzzy); evidence not found
is kept as text with no span and counted in ``payload['unlocated']`` rather than dropped.
"""

from __future__ import annotations

import random
from collections import defaultdict

import pandas as pd

from gavel.core import items as gitems
from gavel.core.vocab import ANNOTATION_RELATIONS, STYLE_ASPECTS
from gavel.metrics.metaeval import as_list, release_value_pairs, sample_pairs  # noqa: F401 (used by callers)
from gavel.metrics.metaeval.inputs import SAMPLE_MULTI, SAMPLE_SINGLE, SAMPLE_STYLE
from gavel.ref.grounding import locate

PREFERENCES = ("A", "B", "none")
COMPARISON_LABELS = {
    "equal": "A and B say the same",
    "a_contains_b": "A contains B (A says more)",
    "b_contains_a": "B contains A (B says more)",
    "different": "A and B are different",
}
assert set(COMPARISON_LABELS) == set(ANNOTATION_RELATIONS)


def paragraphs(text: str) -> list[tuple[int, int]]:
    """Character spans of the non-empty lines of ``text`` (a paragraph per line, blank lines skipped)."""
    spans, start = [], 0
    for line in text.split("\n"):
        end = start + len(line)
        if line.strip():
            spans.append((start, end))
        start = end + 1
    return spans


def checklist_items(payload: dict) -> list[dict]:
    """The items an extraction task asks about, ``{key, name, definition}``: the task's own checklist (stored
    when it was loaded with one other than the default), else the default's 26 legal items."""
    own = (payload.get("checklist") or {}).get("items")
    return own or [{"key": it.key, "name": it.name, "definition": it.definition} for it in gitems.ITEMS]


def checklist_from_rows(text: str, rows: pd.DataFrame, source: str, checklist=None) -> tuple[dict, int]:
    """Per item key, the list of values ``{value, evidence: [{start, end, text}]}`` of one case's value rows.
    Rows with ``evidence_spans`` use them (checked against the text); others are located by search.
    Returns (checklist, number of evidence strings that could not be located)."""
    checklist = gitems.load(checklist)
    out: dict[str, list] = {it.key: [] for it in checklist.items}
    unlocated = 0
    rows = rows.sort_values(["item", "index"]) if len(rows) else rows
    for r in rows.itertuples(index=False):
        key = checklist.item(r.item).key
        evidence = as_list(r.evidence)
        spans = as_list(getattr(r, "evidence_spans", None))
        ev = []
        for k, e_text in enumerate(evidence):
            span = spans[k] if k < len(spans) else None
            if span is not None:
                s, e = int(span[0]), int(span[1])
                if not 0 <= s < e <= len(text):
                    raise ValueError(f"{source}: case {getattr(r, 'case_id', '?')} item {key!r}: evidence span "
                                     f"{s}-{e} lies outside the summary ({len(text)} characters)")
                ev.append({"start": s, "end": e, "text": text[s:e]})
                continue
            hit = locate(e_text, text)
            if not hit.found:
                unlocated += 1
                ev.append({"start": None, "end": None, "text": e_text})
            else:
                ev.append({"start": hit.start, "end": hit.end, "text": text[hit.start:hit.end]})
        out[key].append({"value": str(r.value), "evidence": ev})
    return out, unlocated


def extraction_tasks(summaries: pd.DataFrame, rows: pd.DataFrame | None, source: str,
                     checklist=None) -> list[dict]:
    """One review task per summary (``summaries``: case_id, text[, model]); pre-filled from ``rows`` (value
    rows of the same cases) or empty when ``rows`` is None. With a checklist other than the default, each
    task carries its name and items (the form shows them; its key names the checklist)."""
    checklist = gitems.load(checklist)
    own = {} if checklist.is_default else {"checklist": {
        "name": checklist.name, "fingerprint": checklist.fingerprint,
        "items": [{"key": it.key, "name": it.name, "definition": it.summary_instruction} for it in checklist.items]}}
    tasks = []
    for s in summaries.itertuples(index=False):
        case_rows = rows[rows["case_id"].astype(str) == str(s.case_id)] if rows is not None else pd.DataFrame()
        prefill, unlocated = (checklist_from_rows(s.text, case_rows, source, checklist) if len(case_rows)
                              else ({it.key: [] for it in checklist.items}, 0))
        author = getattr(s, "model", "human")
        tag = "" if checklist.is_default else f":{checklist.name}"
        tasks.append({"key": f"extraction:{author}:{s.case_id}:{source}{tag}", "kind": "extraction",
                      "case_id": str(s.case_id), "source": source,
                      "payload": {"case_id": str(s.case_id), "author": author, "text": s.text,
                                  "paragraphs": paragraphs(s.text), "prefill": prefill,
                                  "prefill_source": source if rows is not None else "empty",
                                  "unlocated": unlocated, "words": len(s.text.split()), **own}})
    return tasks


def comparison_tasks(pairs: list[dict], source: str) -> list[dict]:
    """Tasks from value-list pairs ``{case_id, item, a: [str], b: [str], origin, judge}``."""
    tasks = []
    for p in pairs:
        if not p["a"] or not p["b"]:
            raise ValueError(f"{source}: case {p['case_id']} item {p['item']!r}: a comparison needs two "
                             f"non-empty lists")
        single = len(p["a"]) == 1 and len(p["b"]) == 1
        key = f"comparison:{p['origin']}:{p['case_id']}:{p['item']}"
        tasks.append({"key": key, "kind": "comparison", "case_id": str(p["case_id"]), "source": source,
                      "payload": {"case_id": str(p["case_id"]), "item": p["item"], "origin": p["origin"],
                                  "mode": "single" if single else "multi", "a": p["a"], "b": p["b"],
                                  "judge": p.get("judge")}})
    return tasks


def style_tasks(pairs: list[dict], source: str, seed: int = 0) -> list[dict]:
    """Tasks from ``{case_id, model, model_text, human_text[, judge]}``; the side shown as A is drawn per task.
    ``judge`` (aspect -> rating 1-5), an LLM's ratings of the model summary, is kept in the payload for the
    agreement page and never shown."""
    rng = random.Random(seed)
    tasks = []
    for p in pairs:
        for aspect, rating in (p.get("judge") or {}).items():
            if aspect not in STYLE_ASPECTS or type(rating) is not int or not 1 <= rating <= 5:
                raise ValueError(f"{source}: case {p['case_id']} model {p['model']!r}: LLM style rating "
                                 f"{aspect!r}={rating!r} is not a rating 1-5 of one of {list(STYLE_ASPECTS)}")
        order = ["model", "human"] if rng.random() < 0.5 else ["human", "model"]
        texts = {"model": p["model_text"], "human": p["human_text"]}
        tasks.append({"key": f"style:{p['model']}:{p['case_id']}", "kind": "style", "case_id": str(p["case_id"]),
                      "source": source,
                      "payload": {"case_id": str(p["case_id"]), "model": p["model"], "order": order,
                                  "a": texts[order[0]], "b": texts[order[1]], "judge": p.get("judge")}})
    return tasks


# --- from the release --------------------------------------------------------------------------------------

def release_extraction_tasks(release, prefill: str = "human") -> list[dict]:
    """Review tasks for the 40 human summaries of the meta-evaluation set, pre-filled from ``human.json``
    (``prefill='human'``) or empty (``'none'``)."""
    s = release.summaries
    human = s[(s["model"] == "human") & (s["set"] == "human_eval")][["case_id", "text", "model"]]
    human = human.drop_duplicates("case_id")
    rows = None
    if prefill == "human":
        cv = release.checklist_values
        rows = cv[(cv["origin"] == "summary") & (cv["method"] == "human")]
    elif prefill != "none":
        raise ValueError(f"prefill must be 'human' or 'none', not {prefill!r}")
    return extraction_tasks(human, rows, "document_checklists/human.json" if rows is not None else "empty")


def release_style_pairs(release, n: int = SAMPLE_STYLE, seed: int = 0) -> list[dict]:
    """``n`` (model, case) pairs of the benchmark set, each a model summary with the human one."""
    s = release.summaries
    s = s[s["set"] == "benchmark"]
    human = dict(zip(s[s["model"] == "human"]["case_id"], s[s["model"] == "human"]["text"]))
    models = s[s["model"] != "human"]
    rng = random.Random(seed)
    rows = [r for r in models.itertuples(index=False) if r.case_id in human and r.text]
    picked = rng.sample(rows, min(n, len(rows)))
    return [{"case_id": r.case_id, "model": r.model, "model_text": r.text, "human_text": human[r.case_id]}
            for r in picked]


def release_tasks(release, n_single: int = SAMPLE_SINGLE, n_multi: int = SAMPLE_MULTI, n_style: int = SAMPLE_STYLE,
                  seed: int = 0,
                  prefill: str = "human") -> list[dict]:
    pairs = sample_pairs(release_value_pairs(release), n_single, n_multi, seed)
    return (release_extraction_tasks(release, prefill)
            + comparison_tasks(pairs, "evaluation_documents_checklist")
            + style_tasks(release_style_pairs(release, n_style, seed), "summaries", seed))


# --- assignment plan ------------------------------------------------------------------------------------

def plan(tasks: list[dict], annotators: list[str], k: int = 1, k_long: int = 3, n_long: int = 10,
         adjudicators: list[str] | None = None) -> list[tuple[str, str, str]]:
    """(task key, annotator, role) rows: each task to ``k`` annotators, the ``n_long`` longest extraction
    tasks (by words) to ``k_long``; every task with more than one annotator also gets an adjudicator (from
    ``adjudicators``, else from the annotators not on it). The least-loaded annotators are picked first."""
    if not annotators:
        raise ValueError("an assignment plan needs at least one annotator")
    longest = sorted((t for t in tasks if t["kind"] == "extraction"),
                     key=lambda t: -t["payload"].get("words", 0))[:n_long]
    long_keys = {t["key"] for t in longest}
    load: dict[str, int] = defaultdict(int)
    rows = []
    for t in tasks:
        want = k_long if t["key"] in long_keys else k
        if want > len(annotators):
            raise ValueError(f"task {t['key']}: {want} annotators wanted (--k-long for the {n_long} longest "
                             f"reviews, --k for the rest), only {len(annotators)} given")
        chosen = sorted(annotators, key=lambda a: (load[a], annotators.index(a)))[:want]
        for a in chosen:
            load[a] += 1
            rows.append((t["key"], a, "annotate"))
        if want > 1:
            pool = [a for a in (adjudicators or annotators) if a not in chosen]
            if pool:
                adj = min(pool, key=lambda a: (load[a], pool.index(a)))
                load[adj] += 1
                rows.append((t["key"], adj, "adjudicate"))
    return rows
