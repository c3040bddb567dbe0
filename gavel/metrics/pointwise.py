"""The pointwise metric (seed 003): a summary is split into *points* paragraph by paragraph; each reference
point is matched to at most one candidate point (full or partial match); recall is the weighted share of
reference points matched, precision the weighted share of candidate points matched. Pure functions; the LLM
steps (point extraction, pair judgments) are stages (gavel.ref.stages.pointwise) whose parsed rows land here.

Weights (Appendix A.3). Points are lemmatised with simplemma (English; data ships in the package, works
offline); a lemma is a lower-cased word token (letters or digits). For paragraph P and lemma l,
``W_l = min(N_l,P / N_l,points, 1)`` when l occurs in P, else 0, where ``N_l,P`` counts l in the paragraph and
``N_l,points`` counts it over all points extracted from that paragraph. A point's raw weight is the sum of
``W_l`` over its distinct lemmas; weights are normalised to sum to 1 over all points of the summary. A
summary whose points carry no lemma at all gets equal weights.

Matches. A judged pair is ``full`` or ``partial`` (or no match). A reference point credits 1 when its
assigned candidate is a full match, 0.5 when it is only a partial one (the paper's "reduced by a factor of
0.5"), 0 when unassigned; candidate points symmetrically for precision.

One-to-one assignment, two ways (``assign(..., method=)``):

* ``greedy`` (Appendix A.5): repeatedly give every candidate that has exactly one reference left its
  reference; when none is left with exactly one, take the candidate with the fewest references (ties: the
  earlier candidate) and give it its best reference: full before partial, then the highest cosine
  similarity (the paper's cosine variant; ``choose`` may replace this step, e.g. by an LLM's pick); repeat.
* ``optimal``: ``scipy.optimize.linear_sum_assignment`` maximising the summed credit (full 1, partial 0.5),
  cosine similarity breaking ties. Never credits less in total than greedy.

Easiness (Appendix A.6) of extracted points against human points: ``E_R`` = mean over human points of the
best ROUGE-1 F1 with any generated point, ``E_P`` = mean over generated points of the best with any human
point (ROUGE-1 as in gavel.metrics.text: rouge-score's tokenizer with stemming).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np

FULL, PARTIAL = "full", "partial"
CREDIT = {FULL: 1.0, PARTIAL: 0.5}
TOP_K = 5  # candidate points pre-selected per reference point by cosine similarity (section 5.2.3)
METHODS = ("greedy", "optimal")


class PointwiseError(ValueError):
    pass


# ---------------------------------------------------------------------------------------------- weights
def lemmas(text: str) -> list[str]:
    """Lower-cased lemmas of the word tokens of ``text`` (simplemma, English), punctuation left out."""
    import simplemma

    return [simplemma.lemmatize(tok.lower(), lang="en").lower()
            for tok in simplemma.simple_tokenizer(text) if any(ch.isalnum() for ch in tok)]


def point_weights(paragraphs: Sequence[str], points: Sequence[Sequence[str]]) -> list[float]:
    """A.3 weights of every point, in order (paragraph by paragraph), summing to 1. ``points[i]`` are the
    points extracted from ``paragraphs[i]``."""
    if len(paragraphs) != len(points):
        raise PointwiseError(f"{len(paragraphs)} paragraphs but points for {len(points)}")
    raw: list[float] = []
    for para, pts in zip(paragraphs, points):
        in_para = Counter(lemmas(para))
        point_lemmas = [lemmas(p) for p in pts]
        in_points = Counter(lem for pl in point_lemmas for lem in pl)
        w_lemma = {lem: min(in_para[lem] / n, 1.0) if in_para[lem] else 0.0 for lem, n in in_points.items()}
        raw.extend(sum(w_lemma[lem] for lem in set(pl)) for pl in point_lemmas)
    total = sum(raw)
    if not raw:
        return []
    if total == 0:
        return [1.0 / len(raw)] * len(raw)
    return [w / total for w in raw]


# ---------------------------------------------------------------------------------------------- assignment
@dataclass(frozen=True)
class Assignment:
    """``pairs``: (reference index, candidate index, match kind), one-to-one."""

    pairs: tuple[tuple[int, int, str], ...]
    method: str

    def reference_credit(self, n_reference: int) -> list[float]:
        credit = [0.0] * n_reference
        for r, _, kind in self.pairs:
            credit[r] = CREDIT[kind]
        return credit

    def candidate_credit(self, n_candidate: int) -> list[float]:
        credit = [0.0] * n_candidate
        for _, c, kind in self.pairs:
            credit[c] = CREDIT[kind]
        return credit


def _check_matches(matches: Mapping[tuple[int, int], str]) -> dict[tuple[int, int], str]:
    out = {}
    for (r, c), kind in matches.items():
        if kind in (None, "none", "no"):
            continue
        if kind not in CREDIT:
            raise PointwiseError(f"pair (reference {r}, candidate {c}): unknown match kind {kind!r}")
        out[(int(r), int(c))] = kind
    return out


def assign_greedy(matches: Mapping[tuple[int, int], str], similarity: np.ndarray | None = None,
                  choose: Callable[[int, list[int]], int] | None = None) -> Assignment:
    """Appendix A.5. ``matches[(r, c)]`` is ``full`` or ``partial``; ``similarity[r, c]`` the cosine used to
    pick among several references (``choose(candidate, references)`` overrides that pick)."""
    matches = _check_matches(matches)
    refs_of: dict[int, set[int]] = {}
    for r, c in matches:
        refs_of.setdefault(c, set()).add(r)
    pairs: list[tuple[int, int, str]] = []

    def take(c: int, r: int) -> None:
        pairs.append((r, c, matches[(r, c)]))
        del refs_of[c]
        for other in list(refs_of):
            refs_of[other].discard(r)
            if not refs_of[other]:
                del refs_of[other]  # all its references were taken: it stays unmatched

    while refs_of:
        single = sorted(c for c, rs in refs_of.items() if len(rs) == 1)
        if single:
            c = single[0]
            take(c, next(iter(refs_of[c])))
            continue
        c = min(refs_of, key=lambda k: (len(refs_of[k]), k))
        options = sorted(refs_of[c])
        if choose is not None:
            r = choose(c, options)
            if r not in refs_of[c]:
                raise PointwiseError(f"choose() picked reference {r} for candidate {c}; options were {options}")
        else:
            r = max(options, key=lambda r_, c=c: (CREDIT[matches[(r_, c)]],
                                                 float(similarity[r_, c]) if similarity is not None else 0.0, -r_))
        take(c, r)
    return Assignment(tuple(sorted(pairs)), "greedy")


def assign_optimal(matches: Mapping[tuple[int, int], str], similarity: np.ndarray | None = None) -> Assignment:
    """One-to-one assignment maximising the summed credit (scipy's linear_sum_assignment); cosine similarity
    (scaled far below the credit step of 0.5) breaks ties."""
    from scipy.optimize import linear_sum_assignment

    matches = _check_matches(matches)
    if not matches:
        return Assignment((), "optimal")
    n_r = 1 + max(r for r, _ in matches)
    n_c = 1 + max(c for _, c in matches)
    gain = np.zeros((n_r, n_c))
    for (r, c), kind in matches.items():
        tie = float(similarity[r, c]) if similarity is not None else 0.0
        gain[r, c] = CREDIT[kind] + 1e-3 * (1 + tie) / 2
    rows, cols = linear_sum_assignment(gain, maximize=True)
    pairs = tuple(sorted((int(r), int(c), matches[(r, c)]) for r, c in zip(rows, cols) if (r, c) in matches))
    return Assignment(pairs, "optimal")


def assign(matches, similarity=None, method: str = "greedy", **kwargs) -> Assignment:
    if method == "greedy":
        return assign_greedy(matches, similarity, **kwargs)
    if method == "optimal":
        return assign_optimal(matches, similarity)
    raise PointwiseError(f"unknown assignment method {method!r}; expected one of {METHODS}")


# ---------------------------------------------------------------------------------------------- scores
@dataclass(frozen=True)
class PointwiseScore:
    recall: float
    precision: float
    assignment: Assignment

    @property
    def f1(self) -> float:
        p, r = self.precision, self.recall
        return 2 * p * r / (p + r) if p + r > 0 else 0.0


def score(reference_weights: Sequence[float], candidate_weights: Sequence[float],
          matches: Mapping[tuple[int, int], str], similarity: np.ndarray | None = None,
          method: str = "greedy", **kwargs) -> PointwiseScore:
    """Weighted recall (over reference points) and precision (over candidate points) of one assignment."""
    a = assign(matches, similarity, method, **kwargs)
    for r, c, _ in a.pairs:
        if r >= len(reference_weights) or c >= len(candidate_weights):
            raise PointwiseError(f"match ({r}, {c}) is outside {len(reference_weights)} reference and "
                                 f"{len(candidate_weights)} candidate points")
    recall = float(np.dot(reference_weights, a.reference_credit(len(reference_weights))))
    precision = float(np.dot(candidate_weights, a.candidate_credit(len(candidate_weights))))
    return PointwiseScore(recall, precision, a)


# ---------------------------------------------------------------------------------------------- pre-selection
def similarity_matrix(reference_points: Sequence[str], candidate_points: Sequence[str], **embed_kwargs) -> np.ndarray:
    """Cosine similarity of every reference point (rows) with every candidate point (columns)."""
    from gavel.metrics import text as metrics

    vecs = metrics.embed_texts(list(reference_points) + list(candidate_points), **embed_kwargs)
    return vecs[:len(reference_points)] @ vecs[len(reference_points):].T


def preselect(similarity: np.ndarray, k: int = TOP_K) -> list[tuple[int, int]]:
    """For each reference point the ``k`` most similar candidate points (ties: earlier candidate)."""
    pairs = []
    for r in range(similarity.shape[0]):
        order = sorted(range(similarity.shape[1]), key=lambda c: (-similarity[r, c], c))[:k]
        pairs.extend((r, c) for c in order)
    return pairs


def preselection_loss(similarity: np.ndarray, judged_all: Mapping[tuple[int, int], str], k: int = TOP_K) -> dict:
    """How many true pairs (judged full or partial on ALL pairs of a sample) fall outside the top-k."""
    true = set(_check_matches(judged_all))
    kept = set(preselect(similarity, k))
    dropped = true - kept
    return {"true_pairs": len(true), "dropped": len(dropped),
            "dropped_share": len(dropped) / len(true) if true else float("nan"), "k": k}


# ---------------------------------------------------------------------------------------------- easiness
def easiness(human_points: Sequence[str], generated_points: Sequence[str]) -> tuple[float, float]:
    """(E_R, E_P) of Appendix A.6 with ROUGE-1 F1."""
    from gavel.metrics import text as metrics

    if not human_points or not generated_points:
        raise PointwiseError("easiness needs at least one human and one generated point")
    f = np.array([[metrics.rouge_scores(g, h)["rouge1"] for g in generated_points] for h in human_points])
    return float(f.max(axis=1).mean()), float(f.max(axis=0).mean())
