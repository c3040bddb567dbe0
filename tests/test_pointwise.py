"""The pointwise metric (gavel.metrics.pointwise) on hand-built examples: A.3 weights, partial matches, both
one-to-one assignments, easiness."""

from __future__ import annotations

import numpy as np
import pytest
from needs import need_module

from gavel.metrics import pointwise as pw

need_module("simplemma", "simplemma not installed (metrics extra)")


def test_lemmas_are_offline_english_lemmas():
    assert pw.lemmas("The Judges ruled; courts denied it.") == ["the", "judge", "rule", "court", "deny", "it"]


def test_weights_by_hand():
    paragraphs = ["The court denied the motion and the appeal.", "Judges ruled."]
    points = [["The court denied the motion.", "The court denied the appeal quickly."], ["Judges ruled."]]
    # paragraph 1: the x3, court, deny, motion, and, appeal x1; over its points: the x4, court x2, deny x2,
    # motion, appeal, quickly x1. W: the 3/4, court 1/2, deny 1/2, motion 1, appeal 1, quickly 0 (not in
    # the paragraph). Point 1: .75+.5+.5+1 = 2.75; point 2: .75+.5+.5+1+0 = 2.75.
    # paragraph 2: judge, rule each 1 -> 2. Total 7.5.
    w = pw.point_weights(paragraphs, points)
    assert w == pytest.approx([2.75 / 7.5, 2.75 / 7.5, 2 / 7.5])
    assert sum(w) == pytest.approx(1.0)


def test_weights_downweight_points_sharing_a_sentence():
    para = "The court considered the harm, the balance of equities and the public interest."
    split = ["The court considered the harm.", "The court considered the balance of equities.",
             "The court considered the public interest."]
    other = "Unrelated second paragraph."  # 3 lemmas of weight 1
    w3 = pw.point_weights([para, other], [split, [other]])
    w1 = pw.point_weights([para, other], [[para], [other]])
    # split: the 4/6, court 1/3, consider 1/3 in each point, + harm | balance, of, equity | public, interest
    # -> 2.333 + 4.333 + 3.333 = 10; unsplit: 10 distinct lemmas of weight 1. Splitting does not triple it.
    assert sum(w3[:3]) == pytest.approx(10 / 13)
    assert w1[0] == pytest.approx(10 / 13)
    assert w3[:3] == pytest.approx([(2 + 1 / 3) / 13, (4 + 1 / 3) / 13, (3 + 1 / 3) / 13])


def test_weights_refuse_mismatched_paragraphs():
    with pytest.raises(pw.PointwiseError, match="2 paragraphs but points for 1"):
        pw.point_weights(["a", "b"], [["a"]])


# three reference and three candidate points; c0 could take r0 or r1 (cosine prefers r1), c1 and c2 both
# need r1 or r2: greedy takes r1 for c0 and leaves c2 with nothing; the optimal assignment matches all
MATCHES = {(0, 0): "full", (1, 0): "full", (1, 1): "full", (2, 1): "full", (1, 2): "full", (2, 2): "partial"}
SIM = np.array([[0.5, 0.1, 0.1], [0.9, 0.6, 0.7], [0.1, 0.5, 0.6]])
REF_W = [0.5, 0.3, 0.2]
CAND_W = [0.4, 0.4, 0.2]


def test_greedy_assignment_by_hand():
    a = pw.assign_greedy(MATCHES, SIM)
    # no candidate has one reference; all have two; c0 first (earliest), cosine picks r1; then c1 has only
    # r2 left -> (2, 1); c2's references are both taken: unmatched
    assert a.pairs == ((1, 0, "full"), (2, 1, "full"))
    s = pw.score(REF_W, CAND_W, MATCHES, SIM, method="greedy")
    assert (s.recall, s.precision) == pytest.approx((0.3 + 0.2, 0.4 + 0.4))


def test_optimal_assignment_by_hand_with_a_partial_match():
    a = pw.assign_optimal(MATCHES, SIM)
    assert a.pairs == ((0, 0, "full"), (1, 2, "full"), (2, 1, "full"))
    s = pw.score(REF_W, CAND_W, MATCHES, SIM, method="optimal")
    assert (s.recall, s.precision) == pytest.approx((1.0, 1.0))
    # make the only way to reach r2 partial: it counts half
    m = dict(MATCHES)
    m[(2, 1)] = "partial"
    m.pop((1, 2))
    s = pw.score(REF_W, CAND_W, m, SIM, method="optimal")
    # best: (0,0) full, (1,1) full, (2,2) partial -> recall .5 + .3 + .2/2; precision .4 + .4 + .2/2
    assert s.assignment.pairs == ((0, 0, "full"), (1, 1, "full"), (2, 2, "partial"))
    assert (s.recall, s.precision) == pytest.approx((0.9, 0.9))


def test_greedy_prefers_a_full_match_and_takes_singles_first():
    # c1 has one reference (r0): taken first, so c0 gets r1 even though its cosine prefers r0
    m = {(0, 0): "full", (1, 0): "partial", (0, 1): "partial"}
    sim = np.array([[0.9, 0.2], [0.3, 0.1]])
    assert pw.assign_greedy(m, sim).pairs == ((0, 1, "partial"), (1, 0, "partial"))
    # without the single: c0 picks its full match over the more similar partial one
    m = {(0, 0): "partial", (1, 0): "full", (0, 1): "partial", (1, 1): "partial"}
    sim = np.array([[0.9, 0.5], [0.1, 0.5]])
    assert pw.assign_greedy(m, sim).pairs[0] == (0, 1, "partial")
    assert (1, 0, "full") in pw.assign_greedy(m, sim).pairs


def test_greedy_choose_hook_and_errors():
    a = pw.assign_greedy(MATCHES, SIM, choose=lambda c, refs: refs[0])
    assert a.pairs[0] == (0, 0, "full")
    with pytest.raises(pw.PointwiseError, match="picked reference 7"):
        pw.assign_greedy(MATCHES, SIM, choose=lambda c, refs: 7)
    with pytest.raises(pw.PointwiseError, match="unknown match kind 'maybe'"):
        pw.assign({(0, 0): "maybe"})
    with pytest.raises(pw.PointwiseError, match="unknown assignment method"):
        pw.assign(MATCHES, method="hungarian")


def test_optimal_never_credits_less_than_greedy():
    rng = np.random.default_rng(0)
    for _ in range(50):
        n_r, n_c = rng.integers(1, 7, size=2)
        m = {(r, c): rng.choice(["full", "partial"]) for r in range(n_r) for c in range(n_c) if rng.random() < 0.4}
        sim = rng.random((n_r, n_c))
        g, o = pw.assign_greedy(m, sim), pw.assign_optimal(m, sim)
        for a in (g, o):  # one-to-one
            assert len({r for r, _, _ in a.pairs}) == len(a.pairs) == len({c for _, c, _ in a.pairs})
        assert sum(o.reference_credit(n_r)) >= sum(g.reference_credit(n_r)) - 1e-12


def test_preselection_and_its_loss():
    sim = np.array([[0.9, 0.8, 0.1], [0.2, 0.3, 0.4]])
    assert pw.preselect(sim, k=1) == [(0, 0), (1, 2)]
    loss = pw.preselection_loss(sim, {(0, 1): "full", (1, 2): "partial", (1, 0): "none"}, k=1)
    assert loss == {"true_pairs": 2, "dropped": 1, "dropped_share": 0.5, "k": 1}


def test_easiness_by_hand():
    human = ["the court granted the motion", "the plaintiffs appealed"]
    generated = ["the court granted the motion", "damages were awarded"]
    e_r, e_p = pw.easiness(human, generated)
    # human 1 is reproduced exactly (1.0); human 2 shares only "the" with generated 1:
    # P = 1/5, R = 1/3 -> F1 = 0.25; generated 2 shares nothing (0)
    assert e_r == pytest.approx((1.0 + 0.25) / 2)
    assert e_p == pytest.approx((1.0 + 0.0) / 2)
