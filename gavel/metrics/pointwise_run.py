"""The pointwise metric end to end for one (candidate summary, reference summary) pair: points by an LLM
(stage ``pointwise_points``), candidate pairs pre-selected by embedding cosine, each pair judged by an LLM
(stage ``pointwise_match``), one-to-one assignment both ways, weighted recall and precision.

    from gavel.llm.runner import StageRunner
    row = evaluate("gpt-5", "46567", summary, reference, model="gpt-4.1-2025-04-14",
                   runner=lambda stage: StageRunner(stage, provider, workdir / stage))

Nothing unusable is scored silently: a paragraph whose points could not be read makes the whole pair
``points_failed`` (no score); a pair whose judgment could not be read is counted in ``unjudged`` (status
``some_pairs_unjudged``) and the scores carry bounds: ``<method>_recall``/``_precision`` count such pairs as
no match, ``<method>_recall_high``/``_precision_high`` as full matches.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from gavel.metrics import pointwise, pointwise_match, pointwise_points


def _run(runner, jobs, parse, mode):
    report = runner.run([req for req, _ in jobs], mode=mode)
    return [parse(meta, report.responses.get(req.custom_id)) for req, meta in jobs]


def evaluate(subject: str, case_id: str, summary: str, reference: str, model: str,
             runner: Callable[[str], object], k: int = pointwise.TOP_K, judge_all: bool = False,
             mode: str = "online", embed_kwargs: dict | None = None, structured: bool = True) -> dict:
    """One scored row (see module doc). ``runner(stage)`` returns a StageRunner for that stage.
    ``judge_all=True`` asks the judge about every pair (not only the top ``k``) and reports how many true
    pairs the pre-selection would have dropped."""
    row: dict = {"subject": subject, "case_id": case_id, "judge": model, "k": k, "status": "ok", "detail": ""}
    jobs = pointwise_points.build_requests([(subject, case_id, summary), ("reference", case_id, reference)],
                                           model, structured=structured)
    parsed = _run(runner(pointwise_points.STAGE), jobs, pointwise_points.parse_response, mode)
    bad = [p for p in parsed if p["status"] != "ok"]
    if bad:
        return {**row, "status": "points_failed",
                "detail": "; ".join(f"{p['subject']} paragraph {p['paragraph']}: {p['status']} ({p['detail']})"
                                    for p in bad)}
    side = {name: [p for p in parsed if p["subject"] == name] for name in (subject, "reference")}
    cand_paras, ref_paras = ([p["paragraph_text"] for p in side[s]] for s in (subject, "reference"))
    cand_pts, ref_pts = ([p["points"] for p in side[s]] for s in (subject, "reference"))
    cand_flat = [x for pts in cand_pts for x in pts]
    ref_flat = [x for pts in ref_pts for x in pts]
    ref_w = pointwise.point_weights(ref_paras, ref_pts)
    cand_w = pointwise.point_weights(cand_paras, cand_pts)
    sim = pointwise.similarity_matrix(ref_flat, cand_flat, **(embed_kwargs or {}))
    pairs = ([(r, c) for r in range(len(ref_flat)) for c in range(len(cand_flat))] if judge_all
             else pointwise.preselect(sim, k))
    jobs = pointwise_match.build_requests(subject, case_id, reference, ref_flat, cand_flat, pairs, model,
                                          structured=structured)
    judged = _run(runner(pointwise_match.STAGE), jobs, pointwise_match.parse_response, mode)
    matches = {(j["reference_index"], j["candidate_index"]): j["match"] for j in judged if j["status"] == "ok"}
    unjudged = [(j["reference_index"], j["candidate_index"], j["status"]) for j in judged if j["status"] != "ok"]
    if judge_all:
        row.update({f"preselection_{key}": v for key, v in pointwise.preselection_loss(sim, matches, k).items()
                    if key != "k"})
        kept = set(pointwise.preselect(sim, k))
        matches = {p: m for p, m in matches.items() if p in kept}  # score as the pre-selection would
        unjudged = [u for u in unjudged if (u[0], u[1]) in kept]
    row.update({"reference_points": len(ref_flat), "candidate_points": len(cand_flat), "pairs_judged": len(judged),
                "unjudged": len(unjudged), "points_reference": ref_pts, "points_candidate": cand_pts,
                "matches": {f"{r}-{c}": m for (r, c), m in sorted(matches.items())}})
    if unjudged:
        row["status"] = "some_pairs_unjudged"
        row["detail"] = "; ".join(f"pair {r}-{c}: {s}" for r, c, s in unjudged[:20])
    high = {**matches, **{(r, c): pointwise.FULL for r, c, _ in unjudged}}
    for method in pointwise.METHODS:
        best = pointwise.score(ref_w, cand_w, matches, sim, method=method)
        top = pointwise.score(ref_w, cand_w, high, sim, method=method)
        row.update({f"{method}_recall": best.recall, f"{method}_precision": best.precision, f"{method}_f1": best.f1,
                    f"{method}_recall_high": top.recall, f"{method}_precision_high": top.precision})
    row["similarity_max"] = float(np.max(sim)) if sim.size else float("nan")
    return row


def llm_scores(rows: list[dict], method: str = "greedy") -> list[dict]:
    """Rows in the long form ``make results`` reads from data/llm_scores/ (model, case_id, metric, score):
    pointwise recall and precision of every fully judged pair; others are left out (their status says why)."""
    out = []
    for r in rows:
        if r.get("status") != "ok":
            continue
        for part in ("recall", "precision"):
            out.append({"model": r["subject"], "case_id": r["case_id"], "metric": f"pointwise_{part}",
                        "score": r[f"{method}_{part}"]})
    return out
