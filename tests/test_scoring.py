"""Eq. 1 and Eq. 2 on hand-built examples."""

import math

import pytest

from gavel.ref import scoring
from gavel.ref.scoring import ScoringError


def test_single_value_relations():
    assert scoring.item_score(1, 1, relation="equal") == 1.0
    assert scoring.item_score(1, 1, relation="model_contains_reference") == 0.5
    assert scoring.item_score(1, 1, relation="reference_contains_model") == 0.5
    assert scoring.item_score(1, 1, relation="b_contains_a") == 0.5  # A/B wording: direction unknown, same score
    assert scoring.item_score(1, 1, relation="different") == 0.0
    with pytest.raises(ScoringError):
        scoring.relation_score("similar")


def test_gating_rules():
    assert scoring.item_score(0, 0) is None  # not applicable
    assert scoring.item_score(3, 0) == 0.0 and scoring.item_score(0, 2) == 0.0
    assert scoring.item_score(2, 2, identical=True) == 1.0
    with pytest.raises(ScoringError):
        scoring.item_score(2, 2)  # needs a judgment


def test_matching_f1_distinct_indices_and_strict():
    # model 4 values, reference 3; model 1 and 2 both matched to reference 1; model 4 to reference 3
    pairs = [(1, 1), (2, 1), (4, 3)]
    # distinct: precision 3/4, recall 2/3 -> F1 = 2*(.75*.6667)/(.75+.6667)
    assert scoring.matching_f1(pairs, 4, 3) == pytest.approx(2 * 0.75 * (2 / 3) / (0.75 + 2 / 3))
    # strict one-to-one keeps 2 pairs: precision 2/4, recall 2/3
    assert scoring.matching_f1(pairs, 4, 3, strict=True) == pytest.approx(2 * 0.5 * (2 / 3) / (0.5 + 2 / 3))
    assert scoring.matching_f1([], 2, 2) == 0.0
    assert scoring.matching_f1([(1, 1), (2, 2)], 2, 2) == 1.0
    # indices out of range are ignored, not counted as matches
    assert scoring.matching_f1([(1, 1), (9, 2)], 2, 2) == pytest.approx(2 * 0.5 * 0.5 / 1.0)
    assert scoring.one_to_one([(1, 1), (2, 1), (2, 2)]) == [(1, 1), (2, 2)]


def test_s_checklist_averages_applicable_items_only():
    assert scoring.s_checklist([1.0, 0.5, None, 0.0, None]) == pytest.approx(50.0)
    assert math.isnan(scoring.s_checklist([None, None]))


def test_residual_style_ratio_and_gavel_ref():
    assert scoring.s_residual([(1, 1)], 2, 1) == pytest.approx(100 * 2 * 0.5 * 1 / 1.5)
    assert scoring.s_residual([], 0, 3) == 0.0 and math.isnan(scoring.s_residual([], 0, 0))
    assert scoring.s_style([5, 5, 5, 5, 5]) == 100.0
    assert scoring.s_style([1, 1, 1, 1, 1]) == 0.0
    assert scoring.s_style([3, 4, 2, 5, 1]) == pytest.approx(50.0)
    with pytest.raises(ScoringError):
        scoring.s_style([3, 4, 6, 5, 1])
    with pytest.raises(ScoringError):
        scoring.s_style([3, 4])
    assert scoring.residual_ratio([(0, 10), (5, 20), (30, 40)], 100) == pytest.approx(0.30)
    # Eq. 2 with the paper's alpha
    s = scoring.s_gavel_ref(60.0, 20.0, 80.0, r=0.1)
    assert s == pytest.approx(0.9 * 0.9 * 60 + 0.1 * 0.9 * 20 + 0.1 * 80)
    assert scoring.s_gavel_ref(60.0, float("nan"), 80.0, r=0.0) == pytest.approx(0.9 * 60 + 0.1 * 80)
    assert scoring.s_gavel_ref(60.0, 20.0, 80.0, r=0.1, alpha=1.0) == pytest.approx(0.9 * 60 + 0.1 * 20)
    with pytest.raises(ScoringError):
        scoring.s_gavel_ref(60, 20, 80, r=1.5)


def test_correlations_equal_scipy():
    import numpy as np
    from scipy import stats

    rng = np.random.default_rng(0)
    x = rng.integers(100, 1500, size=300).astype(float)
    y = np.round(0.01 * x + rng.normal(0, 5, size=300))  # many ties
    got = scoring.correlations(x, y)
    assert got["pearson"] == pytest.approx(stats.pearsonr(x, y)[0])
    assert got["spearman"] == pytest.approx(stats.spearmanr(x, y)[0])
    assert got["kendall"] == pytest.approx(stats.kendalltau(x, y)[0])


def test_kendall_pair_counts_are_the_pairs_own():
    """The pair counts behind Kendall's tau-b (value codes, ties from multiplicities) equal counting the
    pairs i < j one by one, ties and NaN included."""
    import numpy as np

    rng = np.random.default_rng(2)
    for n in (2, 3, 17, 80):
        for _ in range(20):
            x = rng.integers(0, 4, n).astype(float)
            y = np.round(rng.normal(size=n), int(rng.integers(0, 3)))
            if rng.random() < 0.2:
                y[rng.integers(0, n)] = np.nan
            pairs = [(i, j) for i in range(n) for j in range(i + 1, n)]
            sx = np.array([np.sign(x[i] - x[j]) for i, j in pairs])
            sy = np.array([np.sign(y[i] - y[j]) for i, j in pairs])
            want = (float((sx * sy).sum()), int((sx != 0).sum()), int((sy != 0).sum()))
            got = scoring._pair_counts(x, y)
            assert got[1:] == want[1:] and (got[0] == want[0] or (np.isnan(got[0]) and np.isnan(want[0])))


# ---------- how a released list matching is scored (docs/results.md, "Scoring a list matching") ----------
QWEN = "Qwen3-30B-A3B-Thinking-2507"
DOC_ROWS = (("agent", QWEN, "grouped"), ("chunk_by_chunk", QWEN, ""))  # fig5_qwen_grouped_s, chunk_best


def documented_f1(pairs, only_in_model, only_in_reference, released_model, released_reference) -> float:
    """docs/results.md's rule, written out apart from gavel.paper.reconstruct: the model's length is its
    released length; the reference's is the larger of its released length and the largest reference index
    the judgment names (pairs and only_in_reference); pairs outside 1..n on either side are dropped; the
    distinct matched indices of each side over its length give precision and recall."""
    n_ref = max([released_reference, *(b for _, b in pairs), *only_in_reference,
                 len({b for _, b in pairs} | set(only_in_reference))])
    kept = {(a, b) for a, b in pairs if 1 <= a <= released_model and 1 <= b <= n_ref}
    p, r = len({a for a, _ in kept}) / released_model, len({b for _, b in kept}) / n_ref
    return 0.0 if p + r == 0 else 2 * p * r / (p + r)


@pytest.fixture(scope="module")
def qwen_matchings(shared_rel):
    from gavel.paper import reconstruct as R

    cells = R.document_cells(shared_rel).set_index(["method", "model", "configuration", "case_id", "item"])
    lengths = R.checklist_lengths(shared_rel)
    released = lengths.set_index(["method", "model", "configuration", "case_id", "item"])["n_values"].to_dict()
    human = lengths[lengths["method"] == "human"].set_index(["case_id", "item"])["n_values"].to_dict()
    jd = shared_rel.judgments
    out = []
    for method, model, configuration in DOC_ROWS:
        sel = jd[(jd["task"] == "document") & (jd["method"] == method) & (jd["model"] == model)
                 & (jd["configuration"] == configuration) & (jd["kind"] == "matching")]
        for j in R.records(sel):
            key = (method, model, configuration, j.case_id, j.item)
            out.append((key, j, released[key], human[(j.case_id, j.item)], cells.loc[key, "best"]))
    return out


def test_release_list_matchings_are_scored_as_documented(qwen_matchings):
    assert len(qwen_matchings) == 949
    many_to_one = out_of_range = 0
    for key, j, n_model, n_ref, best in qwen_matchings:
        assert j.orientation == "model_reference"
        ms, rs = [a for a, _ in j.pairs], [b for _, b in j.pairs]
        many_to_one += len(set(ms)) < len(ms) or len(set(rs)) < len(rs)
        out_of_range += any(not (1 <= a <= n_model and 1 <= b <= n_ref) for a, b in j.pairs)
        assert best == pytest.approx(documented_f1(j.pairs, j.only_in_model, j.only_in_reference, n_model, n_ref),
                                     abs=1e-12), key
    assert (many_to_one, out_of_range) == (192, 9)  # against the released lengths


@pytest.mark.parametrize("method,case_id,item,expected", [
    ("agent", "46499", "parties", 20 / 37),              # many-to-one: 4 model values on reference 1
    ("agent", "12429", "statutory_basis", 0.0),          # the only pair names model value 2 of 1: dropped
    ("agent", "46602", "reported_opinions", 1984 / 2331),  # reference indices up to 37, released list of 1
    ("chunk_by_chunk", "46746", "type_of_counsel", 2 / 3),  # (2, 2) with one model value: dropped
])
def test_worked_examples_of_docs_results(qwen_matchings, method, case_id, item, expected):
    [best] = [b for key, _, _, _, b in qwen_matchings if key[0] == method and key[3:] == (case_id, item)]
    assert best == pytest.approx(expected, abs=1e-12)


def test_summary_benchmark_factual_basis_of_gemini_25_pro_follows_the_same_rule(shared_rel):
    """The summary benchmark's references are empty files: their length is always the implied one; a matching
    in A/B wording (no record of the model's side) takes both lengths from the judgment. 0.5835 in
    data/results/summary_item_scores.csv."""
    from gavel.paper import reconstruct as R

    cells = R.summary_cells(shared_rel)
    cells = cells[(cells["model"] == "gemini-2.5-pro") & (cells["item"] == "factual_basis")].set_index("case_id")
    lengths = R.checklist_lengths(shared_rel)
    released = lengths[(lengths["model"] == "gemini-2.5-pro") & (lengths["item"] == "factual_basis")].set_index(
        "case_id")["n_values"].to_dict()
    jd = shared_rel.judgments
    jd = jd[(jd["task"] == "summary") & (jd["model"] == "gemini-2.5-pro") & (jd["item"] == "factual_basis")]
    scores = []
    for j in R.records(jd):
        if j.kind == "relation":
            scores.append(scoring.relation_score(j.relation))
        else:
            model_side = [a for a, _ in j.pairs] + list(j.only_in_model)
            implied = max(len(set(model_side)), max(model_side, default=0))
            n_model = released.get(j.case_id) if j.orientation == "model_reference" else None
            scores.append(documented_f1(j.pairs, j.only_in_model, j.only_in_reference, n_model or implied, 0))
        assert cells.loc[j.case_id, "best"] == pytest.approx(scores[-1], abs=1e-12), j.case_id
    assert len(scores) == 100 and round(sum(scores) / 100, 4) == 0.5835
