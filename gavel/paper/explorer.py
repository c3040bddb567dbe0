"""Item explorer: look at single cells, the model's and the reference's values side by side, with the
judge's verdict and each value's evidence highlighted in its text. Used by notebooks/07_item_explorer.

    from gavel.paper import explorer
    explorer.find(rel, model="gemini-2.5-pro", item="judge_name", relation="different")
    explorer.show(rel, model="gemini-2.5-pro", case_id="45143", item="judge_name")   # HTML

Task ``summary``: the model's summary checklist against the reference summary (the release has no
reference checklist for the benchmark, so that side shows the human summary text only). Task
``document``: a document-extraction run against ``human.json``, whose evidence spans are highlighted in
the human summary.
"""

from __future__ import annotations

import html
import re

import pandas as pd

from gavel.core import config
from gavel.core.items import item as item_of
from gavel.paper import reconstruct
from gavel.release.judge import RELATIONS


def _values(rel, origin, method, model, configuration, case_id, item):
    v = rel.checklist_values
    sel = v[(v["origin"] == origin) & (v["method"] == method) & (v["model"] == model) &
            (v["configuration"] == configuration) & (v["case_id"] == case_id) & (v["item"] == item)]
    return sel.sort_values(["unit", "index"]) if "unit" in sel else sel


def find(rel, model: str, item: str | None = None, case_id: str | None = None, relation: str | None = None,
         status: str | None = None, task: str = "summary", method: str = "llm", configuration: str = "") -> pd.DataFrame:
    """Cells matching the filters, with their scores and the judge's relation or matching.
    ``relation`` filters judged single-value cells (e.g. "different"); ``status`` filters by cell status."""
    if task not in ("summary", "document"):
        raise ValueError(f"task must be 'summary' or 'document', got {task!r}")
    valid = RELATIONS
    if relation is not None and relation not in valid:
        raise ValueError(f"unknown relation {relation!r}; use one of {valid} or None")
    cells = reconstruct.summary_cells(rel) if task == "summary" else reconstruct.document_cells(rel)
    if model not in set(cells["model"]):
        raise ValueError(f"no {task} cells for model {model!r}; models: {sorted(set(cells['model']))}")
    sel = cells[(cells["model"] == model)]
    if task == "document":
        sel = sel[(sel["method"] == method) & (sel["configuration"] == configuration)]
    if item:
        sel = sel[sel["item"] == item_of(item).key]
    if case_id:
        sel = sel[sel["case_id"] == str(case_id)]
    if status:
        sel = sel[sel["status"] == status]
    j = rel.judgments[(rel.judgments["task"] == task) & (rel.judgments["model"] == model)]
    if task == "document":
        j = j[(j["method"] == method) & (j["configuration"] == configuration)]
    sel = sel.merge(j[["case_id", "item", "kind", "orientation", "relation", "pairs", "only_in_model",
                       "only_in_reference"]], on=["case_id", "item"], how="left")
    if relation:
        sel = sel[sel["relation"] == relation]
    return sel.reset_index(drop=True)


def highlight(text: str, snippets: list[str], spans: list | None = None) -> str:
    """HTML of ``text`` with every evidence snippet (or character span) wrapped in <mark>.
    Snippets are found verbatim, then ignoring runs of white space; unfound ones are listed after."""
    marks: list[tuple[int, int]] = []
    missing = []
    for s, e in spans or []:
        marks.append((int(s), int(e)))
    for snip in snippets:
        snip = snip.strip()
        if not snip:
            continue
        pos = text.find(snip)
        if pos >= 0:
            marks.append((pos, pos + len(snip)))
            continue
        pattern = r"\s+".join(re.escape(w) for w in snip.split())
        m = re.search(pattern, text)
        if m:
            marks.append(m.span())
        else:
            missing.append(snip)
    out, last = [], 0
    for s, e in sorted(marks):
        if s < last:
            s = last
        if e <= s:
            continue
        out.append(html.escape(text[last:s]))
        out.append(f"<mark>{html.escape(text[s:e])}</mark>")
        last = e
    out.append(html.escape(text[last:]))
    body = "".join(out).replace("\n", "<br>")
    if missing:
        body += "<p><i>evidence not found verbatim:</i> " + "; ".join(html.escape(m) for m in missing) + "</p>"
    return body


def show(rel, model: str, case_id: str, item: str, task: str = "summary", method: str = "llm",
         configuration: str = "") -> str:
    """One cell as HTML: values side by side, verdict, and highlighted evidence."""
    key = item_of(item).key
    case_id = str(case_id)
    if task == "summary":
        mine = _values(rel, "summary", "llm", model, "", case_id, key)
        ref = _values(rel, "summary", "llm", "human", "", case_id, key)
        texts = rel.summaries[(rel.summaries["case_id"] == case_id) & (rel.summaries["set"] == "benchmark")]
        model_text = texts.loc[texts["model"] == model, "text"]
        ref_text = texts.loc[texts["model"] == "human", "text"]
    else:
        mine = _values(rel, "document", method, model, configuration, case_id, key)
        ref = _values(rel, "summary", "human", "human", "", case_id, key)
        texts = rel.summaries[(rel.summaries["case_id"] == case_id) & (rel.summaries["set"] == "human_eval")]
        model_text = pd.Series([], dtype=object)
        ref_text = texts.loc[texts["model"] == "human", "text"]
    cell = find(rel, model, key, case_id, task=task, method=method, configuration=configuration)
    verdict = "no judgment"
    if len(cell):
        c = cell.iloc[0]
        verdict = f"status <b>{c['status']}</b>, score {c['best']:.2f} (bounds {c['low']}..{c['high']})"
        if isinstance(c.get("relation"), str):
            verdict += f"; judge: <b>{c['relation']}</b>"
        elif isinstance(c.get("pairs"), list):
            verdict += f"; matched (model, reference): {c['pairs']}, only model {c['only_in_model']}, " \
                       f"only reference {c['only_in_reference']}"

    def listing(values):
        if values.empty:
            return "<i>(no values released)</i>"
        return "<ol>" + "".join(f"<li>{html.escape(v)}</li>" for v in values["value"]) + "</ol>"

    def evidence(values, text, use_spans):
        if text.empty:
            return ""
        snippets = [s for ev in values["evidence"] for s in ev] if not values.empty else []
        spans = [sp for spans in values["evidence_spans"].dropna() for sp in spans] if use_spans and not values.empty else []
        return highlight(text.iloc[0], [] if spans else snippets, spans)

    label = config.model_label(model) + (f" ({method} {configuration})".rstrip() if task == "document" else "")
    return (f"<h4>{html.escape(item_of(key).name)} — case {html.escape(case_id)}</h4><p>{verdict}</p>"
            f"<table><tr><th>{html.escape(label)}</th><th>Reference</th></tr>"
            f"<tr><td style='vertical-align:top'>{listing(mine)}</td>"
            f"<td style='vertical-align:top'>{listing(ref)}</td></tr>"
            f"<tr><td style='vertical-align:top;max-width:45em'>{evidence(mine, model_text, False)}</td>"
            f"<td style='vertical-align:top;max-width:45em'>{evidence(ref, ref_text, task == 'document')}</td>"
            f"</tr></table>")
