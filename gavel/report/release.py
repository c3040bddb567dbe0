"""What the release report (``gavel report --release``) shows: the paper's 12 models on the 100 benchmark
cases, in the same data shape as a run's report (``gavel.report.run``), so one page shows both.

From the release: every cell of ``reconstruct.summary_cells`` (best estimate and bounds, the status saying why),
the judge's reading (relation, or matched pairs with what was only on one side, the orientation, problems
found), the model checklists' values with their evidence located in the summary (``gavel.ref.grounding``:
the release has no offsets for them), and the summaries. The release has no reference checklists for these
cases (empty files), no raw judge text beyond its readings, no residual facts and no style ratings: the page
says so where they would be.
"""

from __future__ import annotations

from gavel.core import config
from gavel.paper import reconstruct, results
from gavel.ref import grounding
from gavel.report.run import CELL_COLUMNS, SCORES, clean, item_names, key
from gavel.runs.comparisons import pair_sentence

NOT_RELEASED = ("The release holds no residual facts and no style ratings, so S_residual, S_style and S_GAVEL-REF "
                "cannot be computed from it; S_checklist is the reconstruction's best estimate with its bounds "
                "(docs/REPRODUCTION.md).")


def _located_values(rel, models: set[str]) -> tuple[dict, dict]:
    """(values keyed by cell, evidence located in each summary) for the released model checklists."""
    texts = rel.summaries[rel.summaries["set"] == "benchmark"].set_index(["model", "case_id"])["text"]
    v = rel.checklist_values
    v = v[(v["origin"] == "summary") & (v["method"] == "llm") & (v["model"].isin(models))]
    values: dict[str, list] = {}
    normalized: dict = {}
    for r in v[["model", "case_id", "item", "index", "value", "evidence"]].itertuples(index=False):
        text = texts.get((r.model, r.case_id))
        snippets = list(r.evidence) if isinstance(r.evidence, (list, tuple)) else []
        spans, status = [], []
        for snip in snippets:
            if text is None:
                spans.append(None)
                status.append("no_summary")
                continue
            if (r.model, r.case_id) not in normalized:
                normalized[(r.model, r.case_id)] = grounding.normalize(text)
            hit = grounding.locate(snip, text, normalized_text=normalized[(r.model, r.case_id)])
            spans.append([hit.start, hit.end] if hit.found else None)
            status.append(hit.status)
        # a located snippet is its span of the text: only the ungrounded ones travel as text
        values.setdefault(key(r.model, r.case_id, r.item), []).append(
            [clean(r.index), r.value, [None if sp else snip for snip, sp in zip(snippets, spans)], spans, status])
    return values, texts


def _listed(x) -> bool:
    return isinstance(x, (list, tuple)) and len(x) > 0


def release_verdicts(pc, cells) -> tuple[dict[str, dict], list[str]]:
    """Per model, whom it is better than, worse than and indistinguishable from on S_checklist
    (``results.release_comparisons``): "better than" only where the step is ``real`` (it holds on the best
    estimates, on the released cells alone and at every cell's lower and upper bound); a step that holds on
    the best estimates only is listed apart. And each pair's sentence with its released-cells reading."""
    pairs, _ = results.release_comparisons(pc, cells, items=False)
    out: dict[str, dict] = {}
    said = []
    for r in pairs.itertuples():
        a, b = r.model_a, r.model_b
        for m in (a, b):
            out.setdefault(m, {"better_than": [], "worse_than": [], "indistinguishable_from": [],
                               "better_best_only": [], "worse_best_only": []})
        if r.verdict in ("a better", "b better"):
            win, lose = (a, b) if r.verdict == "a better" else (b, a)
            real = bool(r.real)
            out[win]["better_than" if real else "better_best_only"].append(config.model_label(lose))
            out[lose]["worse_than" if real else "worse_best_only"].append(config.model_label(win))
        else:
            out[a]["indistinguishable_from"].append(config.model_label(b))
            out[b]["indistinguishable_from"].append(config.model_label(a))
        said.append(pair_sentence(r, config.model_label) + release_reading(r))
    return out, said


def release_reading(r) -> str:
    """What a release pair's verdict rests on: the released cells' reading and whether it holds under every
    reconstruction choice (``results.VARIANTS``)."""
    if r.verdict not in ("a better", "b better"):
        return ""
    released = (f"on the released cells alone ({int(r.released_cases)} cases): {r.released_difference:+.2f} points, "
                f"p = {r.released_p_value:.3g}, Holm-adjusted {r.released_p_holm:.3g} ({r.released_verdict})"
                if r.released_cases == r.released_cases else "on the released cells alone: no common case")
    return (f". Real under every reconstruction choice: {'yes' if r.real else 'no'}; " + released
            + f"; every cell at its lower bound: {r.low_verdict}, at its upper bound: {r.high_verdict}")


def release_data(rel=None, seed: int = results.SEED) -> dict:
    """The release report's data (see the module); ``rel``: a loaded release (default: GAVEL_RELEASE)."""
    if rel is None:
        from gavel.release import load_release

        rel = load_release()
    cells = reconstruct.summary_cells(rel)
    models = [m.release_name for m in config.models() if m.release_name in set(cells["model"])]
    models += sorted(set(cells["model"]) - set(models))
    labels = {m: config.model_label(m) for m in models}
    pc = results.per_case(cells, ["model"])
    overall = results.checklist_over_cases(pc, ["model"]).set_index("model")
    order = overall.sort_values("s_checklist", ascending=False).index.tolist()
    ci, _ = results.bootstrap_tables(pc, order, labels)
    ci = ci.set_index("model")
    board = []
    for m in order:
        o, c = overall.loc[m], ci.loc[m]
        board.append({"subject": m, "label": labels[m], "cases": int(c["cases"]),
                      "s_checklist": [clean(o["s_checklist"]), clean(c["ci_low"]), clean(c["ci_high"]), int(c["cases"])],
                      "s_checklist_bounds": [clean(o["s_checklist_low"]), clean(o["s_checklist_high"])],
                      **{s: [None, None, None, 0] for s in SCORES if s != "s_checklist"},
                      "ambiguous_cells": int(o["ambiguous_cells"])})
    verdicts, sentences = release_verdicts(pc, cells)
    for b in board:
        b["compared"] = verdicts.get(b["subject"])
    heat = {}
    for (m, it), g in cells.groupby(["model", "item"]):
        best = g["best"].dropna()
        heat[key(m, it)] = {"score": clean(best.mean()) if len(best) else None, "applicable": int(len(best)),
                            "unusable": int((g["status"] == reconstruct.Status.UNREADABLE).sum()), "cells": int(len(g)),
                            "low": clean(g["low"].mean()), "high": clean(g["high"].mean())}
    js = rel.judgments[rel.judgments["task"] == "summary"]
    judged = {(r.model, r.case_id, r.item): r for r in js.itertuples(index=False)}
    rows = []
    for c in cells.itertuples(index=False):
        j = judged.get((c.model, c.case_id, c.item))
        relation = pairs = None
        gate = ""
        detail = c.estimate_source and f"estimated ({c.estimate_source}, {c.estimate_basis} cells)" or ""
        if j is not None:
            gate = j.kind
            relation = j.relation if isinstance(j.relation, str) else None
            pairs = [list(p) for p in j.pairs] if _listed(j.pairs) else None
            only = (f"only in the model: {list(j.only_in_model)}" if _listed(j.only_in_model) else "",
                    f"only in the reference: {list(j.only_in_reference)}" if _listed(j.only_in_reference) else "")
            oriented = "" if j.orientation == "model_reference" else f"orientation {j.orientation}"
            detail = "; ".join(x for x in (oriented, *only, detail) if x)
        best = clean(c.best)
        rows.append([c.model, c.case_id, c.item, gate, relation, pairs, best, str(c.status), detail,
                     c.judge_problems or "", clean(c.n_model), clean(c.n_reference), None, clean(c.low), clean(c.high)])
    values, texts = _located_values(rel, set(models))
    cases = set(cells["case_id"])
    text_map = {key(m, cid): t for (m, cid), t in texts.items() if cid in cases and (m in models or m == "human")}
    summaries = {key(r.model, r.case_id): {"scores": {"s_checklist": clean(r.s_checklist),
                                                       "s_checklist_low": clean(r.s_checklist_low),
                                                       "s_checklist_high": clean(r.s_checklist_high)}}
                 for r in pc.itertuples(index=False)}
    lost = reconstruct.lost_cases(rel)
    notes = [NOT_RELEASED, "The reference checklists of the benchmark cases are empty files in the release: the "
             "reference side shows the human summary only."]
    if len(lost):
        notes.append(f"{len(lost)} (model, case) pairs are lost from a truncated judge file and not scored.")
    return {"kind": "release", "title": "GAVEL: the paper's 12 models (from the release)",
            "source": "/".join(rel.root.parts[-2:]), "manifest": {"cases": len(cases), "models": len(models)},
            "subjects": models, "labels": labels, "items": item_names(cells["item"]), "board": board,
            "compared": "s_checklist", "comparison_sentences": sentences, "heat": heat,
            "cells_columns": CELL_COLUMNS, "cells": rows, "values": values, "texts": text_map,
            "answers": {}, "raw": [], "extract_status": {}, "summaries": summaries, "residual": {},
            "residual_match": {}, "style": {}, "optional": {}, "flipped": [], "repeat_stages": [],
            "problems": [], "notes": notes}

