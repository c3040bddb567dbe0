"""GAVEL-REF scores: pure functions, no I/O.

Matching score of one checklist item (Eq. 1 of the paper):

* both checklists empty            -> not applicable (None): left out of every mean;
* exactly one side empty           -> 0;
* identical value lists            -> 1 (the judge is not asked);
* both sides exactly one value     -> the judge's relation: equal 1, either containment 0.5, different 0;
* otherwise (list matching)        -> F1 of the matched pairs.

F1 rule (``strict=False``, the default, which reproduces the released judgments): precision is the share of
the model's values that appear in at least one matched pair, recall the share of the reference's values that
do (distinct indices). ``strict=True`` first reduces the pairs to a maximum one-to-one matching, which can
only lower the score.

S_checklist = 100 x mean of the applicable items' scores. S_residual = 100 x F1 over residual facts.
S_style = (mean of five 1-5 ratings - 1) x 25. S_GAVEL-REF (Eq. 2) =
(1 - r) * alpha * S_checklist + r * alpha * S_residual + (1 - alpha) * S_style, alpha = 0.9 in the paper.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence

import numpy as np

from gavel.core.vocab import RELATION_SCORE, STYLE_ASPECTS

ALPHA = 0.9

_RELATION = dict(RELATION_SCORE, a_contains_b=0.5, b_contains_a=0.5)


class ScoringError(ValueError):
    pass


def relation_score(relation: str) -> float:
    try:
        return _RELATION[relation]
    except KeyError:
        raise ScoringError(f"unknown relation {relation!r}; expected one of {sorted(_RELATION)}") from None


def one_to_one(pairs: Iterable[tuple[int, int]]) -> list[tuple[int, int]]:
    """A maximum one-to-one subset of matched pairs (bipartite matching by augmenting paths)."""
    pairs = sorted(set(pairs))
    adj: dict[int, list[int]] = {}
    for m, r in pairs:
        adj.setdefault(m, []).append(r)
    match_r: dict[int, int] = {}

    def augment(m: int, seen: set[int]) -> bool:
        for r in adj[m]:
            if r in seen:
                continue
            seen.add(r)
            if r not in match_r or augment(match_r[r], seen):
                match_r[r] = m
                return True
        return False

    for m in adj:
        augment(m, set())
    return sorted((m, r) for r, m in match_r.items())


def matching_f1(pairs: Iterable[tuple[int, int]], n_model: int, n_reference: int, strict: bool = False) -> float:
    """F1 of a list matching. Pairs whose index lies outside 1..n are ignored (count them elsewhere)."""
    if n_model <= 0 or n_reference <= 0:
        raise ScoringError(f"F1 needs two non-empty lists, got {n_model} and {n_reference} values")
    valid = [(m, r) for m, r in pairs if 1 <= m <= n_model and 1 <= r <= n_reference]
    if strict:
        valid = one_to_one(valid)
    matched_model = len({m for m, _ in valid})
    matched_ref = len({r for _, r in valid})
    precision, recall = matched_model / n_model, matched_ref / n_reference
    return 0.0 if precision + recall == 0 else 2 * precision * recall / (precision + recall)


def item_score(n_model: int, n_reference: int, *, identical: bool = False, relation: str | None = None,
               pairs: Sequence[tuple[int, int]] | None = None, strict: bool = False) -> float | None:
    """Matching score m_i of one item (Eq. 1), or None when not applicable (both empty)."""
    if n_model < 0 or n_reference < 0:
        raise ScoringError("list lengths must be >= 0")
    if n_model == 0 and n_reference == 0:
        return None
    if n_model == 0 or n_reference == 0:
        return 0.0
    if identical:
        return 1.0
    if relation is not None:
        return relation_score(relation)
    if pairs is not None:
        return matching_f1(pairs, n_model, n_reference, strict=strict)
    raise ScoringError("two non-empty, non-identical lists need a judge relation or a matching")


def s_checklist(scores: Iterable[float | None]) -> float:
    """100 x mean over applicable items (None = not applicable). NaN when no item applies."""
    kept = [s for s in scores if s is not None and not (isinstance(s, float) and math.isnan(s))]
    return 100.0 * sum(kept) / len(kept) if kept else math.nan


def s_residual(pairs: Iterable[tuple[int, int]], n_model_facts: int, n_reference_facts: int,
               strict: bool = False) -> float:
    """100 x F1 between the model's and the reference's residual facts; 0 when exactly one side has none,
    NaN when neither has any."""
    if n_model_facts == 0 and n_reference_facts == 0:
        return math.nan
    if n_model_facts == 0 or n_reference_facts == 0:
        return 0.0
    return 100.0 * matching_f1(pairs, n_model_facts, n_reference_facts, strict=strict)


def s_style(ratings: Sequence[float] | dict) -> float:
    """(mean of the five aspect ratings - 1) x 25, on 0..100."""
    values = [ratings[a] for a in STYLE_ASPECTS] if isinstance(ratings, dict) else list(ratings)
    if len(values) != len(STYLE_ASPECTS):
        raise ScoringError(f"S_style needs {len(STYLE_ASPECTS)} ratings, got {len(values)}")
    for v in values:
        if not 1 <= v <= 5:
            raise ScoringError(f"style rating {v!r} outside 1..5")
    return (sum(values) / len(values) - 1.0) * 25.0


def residual_ratio(residual_spans: Iterable[tuple[int, int]], summary_length: int) -> float:
    """Share of a summary's characters that lie in residual spans (overlaps counted once)."""
    if summary_length <= 0:
        raise ScoringError("summary length must be positive")
    covered, end = 0, -1
    for s, e in sorted((max(0, s), min(summary_length, e)) for s, e in residual_spans):
        if e <= s:
            continue
        if s > end:
            covered += e - s
            end = e
        elif e > end:
            covered += e - end
            end = e
    return covered / summary_length


def s_gavel_ref(s_checklist_value: float, s_residual_value: float, s_style_value: float, r: float,
                alpha: float = ALPHA) -> float:
    """Eq. 2. A NaN residual score with r = 0 (no residual content) contributes nothing."""
    if not 0 <= r <= 1 or not 0 <= alpha <= 1:
        raise ScoringError(f"r and alpha must lie in [0, 1], got r={r}, alpha={alpha}")
    residual_term = 0.0 if r == 0 else r * alpha * s_residual_value
    return (1 - r) * alpha * s_checklist_value + residual_term + (1 - alpha) * s_style_value


def _ranks(x: np.ndarray) -> np.ndarray:
    """Average ranks (ties share the mean rank), 1-based."""
    order = np.argsort(x, kind="mergesort")
    ranks = np.empty(len(x), dtype=float)
    sorted_x = x[order]
    boundaries = np.flatnonzero(np.r_[True, sorted_x[1:] != sorted_x[:-1], True])
    for start, end in zip(boundaries[:-1], boundaries[1:]):
        ranks[order[start:end]] = (start + end + 1) / 2.0
    return ranks


def _pair_counts(x: np.ndarray, y: np.ndarray) -> tuple[float, int, int]:
    """Over the pairs i < j: the sum of sign(x_i - x_j) * sign(y_i - y_j), and the pairs not tied in x, in y
    (integers: the full sign matrices of small value codes, halved; ties from the values' multiplicities)."""
    if np.isnan(x).any() or np.isnan(y).any():  # NaN signs: as the pairs themselves give them
        upper = np.triu_indices(len(x), k=1)
        sx, sy = np.sign(x[:, None] - x[None, :])[upper], np.sign(y[:, None] - y[None, :])[upper]
        return float((sx * sy).sum()), int((sx != 0).sum()), int((sy != 0).sum())
    pairs = len(x) * (len(x) - 1) // 2
    out = []
    for v in (x, y):
        _, codes, counts = np.unique(v, return_inverse=True, return_counts=True)
        codes = codes.ravel().astype(np.int32)
        out.append((np.sign(np.subtract.outer(codes, codes)).astype(np.int8), pairs - int((counts * (counts - 1) // 2).sum())))
    (sx, nx), (sy, ny) = out
    return float(np.einsum("ij,ij->", sx, sy, dtype=np.int64) // 2), nx, ny


def correlations(x, y) -> dict[str, float]:
    """Pearson r, Spearman rho and Kendall tau-b of two equal-length samples."""
    x, y = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    if len(x) != len(y) or len(x) < 2:
        raise ScoringError("correlations need two samples of the same length >= 2")

    def pearson(a, b):
        a, b = a - a.mean(), b - b.mean()
        denom = math.sqrt(float((a * a).sum() * (b * b).sum()))
        return float((a * b).sum() / denom) if denom else math.nan

    concordance, untied_x, untied_y = _pair_counts(x, y)
    denom = math.sqrt(float(untied_x) * float(untied_y))
    return {"pearson": pearson(x, y), "spearman": pearson(_ranks(x), _ranks(y)),
            "kendall": concordance / denom if denom else math.nan}
