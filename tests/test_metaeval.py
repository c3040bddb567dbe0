"""Meta-evaluation statistics checked against published worked examples and independent computations, and
the explicit statuses of degenerate input."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from needs import need_module
from statsmodels.stats.inter_rater import cohens_kappa as sm_cohens_kappa

from gavel.core import stats as S
from gavel.core.vocab import ANNOTATION_RELATIONS, RELATIONS, STYLE_ASPECTS
from gavel.metrics import metaeval as M

# Fleiss (1971), Psychological Bulletin 76(5): 30 patients, 6 psychiatrists, 5 diagnoses; per patient the
# number of psychiatrists choosing each diagnosis. Published kappa: 0.430.
FLEISS_1971 = [[0, 0, 0, 6, 0], [0, 3, 0, 0, 3], [0, 1, 4, 0, 1], [0, 0, 0, 0, 6], [0, 3, 0, 3, 0],
               [2, 0, 4, 0, 0], [0, 0, 4, 0, 2], [2, 0, 3, 1, 0], [2, 0, 0, 4, 0], [0, 0, 0, 0, 6],
               [1, 0, 0, 5, 0], [1, 1, 0, 4, 0], [0, 3, 3, 0, 0], [1, 0, 0, 5, 0], [0, 2, 0, 3, 1],
               [0, 0, 5, 0, 1], [3, 0, 0, 1, 2], [5, 1, 0, 0, 0], [0, 2, 0, 4, 0], [1, 0, 2, 0, 3],
               [0, 0, 0, 0, 6], [0, 1, 0, 5, 0], [0, 2, 0, 1, 3], [2, 0, 0, 4, 0], [1, 0, 0, 4, 1],
               [0, 5, 0, 1, 0], [4, 0, 0, 0, 2], [0, 2, 0, 4, 0], [1, 0, 5, 0, 0], [0, 0, 0, 0, 6]]
# The textbook worked example of Fleiss' kappa: 10 subjects, 14 raters, 5 categories;
# P-bar = 0.378, P-bar-e = 0.213, kappa = 0.210.
FLEISS_TEXTBOOK = [[0, 0, 0, 0, 14], [0, 2, 6, 4, 2], [0, 0, 3, 5, 6], [0, 3, 9, 2, 0], [2, 2, 8, 1, 1],
                   [7, 7, 0, 0, 0], [3, 2, 6, 3, 0], [2, 5, 3, 2, 2], [6, 5, 2, 1, 0], [0, 2, 2, 3, 7]]
# Krippendorff (2011), "Computing Krippendorff's alpha-reliability": 4 observers, 12 units, values 1-5,
# missing data. Published: nominal .743, ordinal .815, interval .849, ratio .797.
N = np.nan
KRIPP_2011 = [[1, 2, 3, 3, 2, 1, 4, 1, 2, N, N, N],
              [1, 2, 3, 3, 2, 2, 4, 1, 2, 5, N, 3],
              [N, 3, 3, 3, 2, 3, 4, 2, 2, 5, 1, N],
              [1, 2, 3, 3, 2, 4, 4, 1, 2, 5, 1, N]]
# ... and its binary example, two observers, ten units: alpha = 0.095.
KRIPP_BINARY = [[0, 1, 0, 0, 0, 0, 0, 0, 1, 0], [1, 1, 1, 0, 0, 1, 0, 0, 0, 0]]


def test_fleiss_kappa_matches_fleiss_1971():
    s = S.fleiss_from_counts(FLEISS_1971)
    assert s.ok and s.n == 30
    assert s.value == pytest.approx(0.430, abs=5e-4)


def test_fleiss_kappa_matches_the_textbook_example_and_its_hand_computation():
    s = S.fleiss_from_counts(FLEISS_TEXTBOOK)
    assert s.value == pytest.approx(0.210, abs=5e-4)
    assert s.agreement == pytest.approx(0.378, abs=5e-4)  # P-bar, the percent agreement beside kappa
    t = np.array(FLEISS_TEXTBOOK, float)
    p = t.sum(0) / t.sum()
    pe = (p ** 2).sum()
    assert pe == pytest.approx(0.213, abs=5e-4)
    assert s.value == pytest.approx((s.agreement - pe) / (1 - pe), abs=1e-12)


def test_fleiss_kappa_from_labels_equals_from_counts():
    cats = ["a", "b", "c", "d", "e"]
    labels = [[c for c, k in zip(cats, row) for _ in range(k)] for row in FLEISS_1971]
    assert S.fleiss_kappa(labels, categories=cats).value == pytest.approx(S.fleiss_from_counts(FLEISS_1971).value)


@pytest.mark.parametrize("level,published", [("nominal", 0.743), ("ordinal", 0.815), ("interval", 0.849),
                                             ("ratio", 0.797)])
def test_krippendorff_alpha_matches_krippendorff_2011(level, published):
    s = S.krippendorff_alpha(KRIPP_2011, level)
    assert s.ok and s.value == pytest.approx(published, abs=5e-4)
    assert s.n == 11  # unit 12 has one value: not pairable


def test_krippendorff_alpha_binary_example():
    assert S.krippendorff_alpha(KRIPP_BINARY, "nominal").value == pytest.approx(0.095, abs=5e-4)
    assert S.krippendorff_alpha(KRIPP_BINARY, "nominal").agreement == pytest.approx(0.6)


def test_cohen_kappa_worked_example_and_quadratic_against_statsmodels():
    # 50 units: both yes 20, yes/no 5, no/yes 10, both no 15 -> p_o 0.70, p_e 0.50, kappa 0.40
    a = ["y"] * 20 + ["y"] * 5 + ["n"] * 10 + ["n"] * 15
    b = ["y"] * 20 + ["n"] * 5 + ["y"] * 10 + ["n"] * 15
    s = S.cohen_kappa(a, b)
    assert s.value == pytest.approx(0.40) and s.agreement == pytest.approx(0.70)
    rng = np.random.default_rng(3)
    x = rng.integers(1, 6, 200)
    y = np.clip(x + rng.integers(-1, 2, 200), 1, 5)
    table = pd.crosstab(pd.Categorical(x, [1, 2, 3, 4, 5]), pd.Categorical(y, [1, 2, 3, 4, 5]), dropna=False)
    ours = S.cohen_kappa(list(x), list(y), weights="quadratic", labels=[1, 2, 3, 4, 5]).value
    assert ours == pytest.approx(sm_cohens_kappa(table.to_numpy(), wt="quadratic").kappa, abs=1e-9)
    assert S.cohen_kappa(list(x), list(y)).value == pytest.approx(sm_cohens_kappa(table.to_numpy()).kappa, abs=1e-9)


def test_degenerate_inputs_have_explicit_statuses():
    assert S.cohen_kappa([], []).status == "empty"
    s = S.cohen_kappa([3, 3, 3], [3, 3, 3])
    assert s.status == "no_variance" and s.value is None and s.agreement == 1.0
    assert S.fleiss_from_counts([[3, 0], [3, 0]]).status == "no_variance"
    assert S.fleiss_kappa([["a"], ["b"]]).status == "one_rater"
    assert S.fleiss_kappa([["a", "a", None], ["a", "b", "b"]]).status == "unequal_raters"
    assert S.krippendorff_alpha([[1, 2, 3]]).status == "one_rater"
    assert S.krippendorff_alpha([[2, 2, N], [2, 2, 4]]).status == "no_variance"
    assert S.two_agree([[1, 2]]).status == "too_few_raters"
    assert S.majority(["equal", "different", "model_contains_reference"]) == (None, "no_majority")
    assert S.majority(["equal"]) == ("equal", "one_rater")
    assert S.pair_f1([], []) is None


def test_two_agree_and_aggregation():
    s = S.two_agree([[1, 1, 2], [1, 2, 3], [4, 4, 4], [2, 3, 2]])
    assert s.value == 0.75 and s.extra["all_differ"] == 0.25
    assert S.majority_pairs([[(1, 1), (2, 2)], [(1, 1)], [(2, 2), (3, 1)]]) == {(1, 1), (2, 2)}
    assert S.median_rating([1, 4, 5]) == 4


def test_pair_f1_and_comparison_accuracy_with_confusion():
    assert S.pair_f1([(1, 1), (2, 2)], [(1, 1), (3, 3)]) == pytest.approx(0.5)
    human = M.aggregate_comparisons(pd.DataFrame([
        {"task": "s1", "annotator": a, "mode": "single", "label": lab, "pairs": None}
        for a, lab in [("x", "equal"), ("y", "equal"), ("z", "different")]] + [
        {"task": "s2", "annotator": "x", "mode": "single", "label": "different", "pairs": None},
        {"task": "m1", "annotator": "x", "mode": "multi", "label": None, "pairs": [(1, 1), (2, 2)]},
        {"task": "m1", "annotator": "y", "mode": "multi", "label": None, "pairs": [(1, 1)]}]))
    llm = pd.DataFrame([{"task": "s1", "label": "equal", "pairs": None},
                        {"task": "s2", "label": "equal", "pairs": None},
                        {"task": "m1", "label": None, "pairs": [(1, 1), (2, 1)]}])
    out = M.comparison_metaeval(llm, human, n_resamples=200)
    assert out["Single"].value == 0.5 and out["Single"].n == 2
    conf = out["Single"].extra["confusion"]
    assert conf.loc["human equal", "llm equal"] == 1 and conf.loc["human different", "llm equal"] == 1
    assert out["Multi"].value == pytest.approx(2 / 3)  # human majority {(1,1)} vs llm {(1,1),(2,1)}


def test_coverage_agreement_counts_words():
    text = "one two three four"
    assert M.coverage_agreement(text, [(0, 7)], [(0, 3)]) == 0.75
    assert M.coverage_agreement(text, [], []) == 1.0


def test_extraction_metaeval_on_human_json(shared_rel):
    """Real data: human.json against itself scores 100 with full coverage agreement; against a copy with
    one item's values removed per case it scores less, by the item count."""
    cv = shared_rel.checklist_values
    human = cv[(cv["origin"] == "summary") & (cv["method"] == "human")]
    s = shared_rel.summaries
    texts = dict(zip(s[(s["model"] == "human") & (s["set"] == "human_eval")]["case_id"],
                     s[(s["model"] == "human") & (s["set"] == "human_eval")]["text"]))
    same = M.extraction_metaeval(human, human, texts, n_resamples=100)
    assert same["S_checklist"].value == pytest.approx(100.0) and same["S_checklist"].n == 40
    assert same["Coverage"].value == pytest.approx(100.0)
    llm = human.drop(columns=["evidence_spans"])  # evidence as text only: must be located in the summary
    located = M.extraction_metaeval(llm, human, texts, n_resamples=100)
    # located by text search: a repeated sentence is found at its first occurrence, so a few words differ
    assert 99.9 < located["Coverage"].value <= 100.0
    assert "not found in the summary: 0" in located["Coverage"].detail
    fewer = human[human["item"] != "filing_date"]
    out = M.extraction_metaeval(fewer, human, texts, n_resamples=100)
    per_case = out["S_checklist"].extra["per_case"]
    for case, score in per_case.items():
        applicable = human[human["case_id"] == case]["item"].nunique()
        has_date = (human[human["case_id"] == case]["item"] == "filing_date").any()
        assert score == pytest.approx(100 * (applicable - has_date) / applicable)
    assert out["S_checklist"].low < out["S_checklist"].value < out["S_checklist"].high


def test_table1_shape():
    t = M.table1({"m1": {"S_checklist": S.Stat(64.44), "Coverage": S.Stat(83.7), "Single": S.Stat(0.5667),
                         "Multi": S.Stat(None, "empty"), "Style kappa": S.Stat(0.157)}, "m2": {}})
    assert list(t.columns) == M.TABLE1_COLUMNS
    assert t.loc["m1", "S_checklist"] == 64.4 and t.loc["m1", "Multi"] == "empty"
    assert t.loc["m2", "Single"] == "not run"


def test_app_export_feeds_the_inter_annotator_agreement(tmp_path):
    """Three annotators answer through the app's storage; the JSONL export read back gives the same Fleiss
    kappa, pairwise F1, alpha and two-agree share as the answers computed directly."""
    need_module("sqlalchemy", "this test needs it")
    import json

    from gavel.annotation import tasks as T
    from gavel.annotation.db import Store

    store = Store(f"sqlite:///{tmp_path / 'a.db'}")
    pairs = [{"case_id": str(i), "item": "filing_date", "a": [f"a{i}"], "b": [f"b{i}"], "origin": "t"} for i in range(6)]
    pairs += [{"case_id": "m", "item": "trials", "a": ["x", "y"], "b": ["x", "z"], "origin": "t"}]
    style = [{"case_id": str(i), "model": "m", "model_text": "a", "human_text": "b"} for i in range(4)]
    tasks = T.comparison_tasks(pairs, "t") + T.style_tasks(style, "t")
    store.add_tasks(tasks)
    people = ["p1", "p2", "p3"]
    for p in people:
        store.add_user(p, f"{p}-password-1")  # the app wants 10 characters or more
    store.assign([(t["key"], p, "annotate") for t in tasks for p in people])
    labels = {"p1": ["equal", "equal", "different", "a_contains_b", "equal", "different"],
              "p2": ["equal", "different", "different", "a_contains_b", "equal", "equal"],
              "p3": ["equal", "equal", "different", "b_contains_a", "different", "different"]}
    matches = {"p1": [[1, 1]], "p2": [[1, 1], [2, 2]], "p3": [[1, 1]]}
    ratings = {"p1": [1, 2, 3, 4], "p2": [1, 3, 3, 5], "p3": [2, 2, 4, 3]}  # unit 4: all differ
    aid = {}
    from sqlalchemy import select

    from gavel.annotation.db import Assignment, Task, User
    with store.sessions() as s:
        for key, user, a in s.execute(select(Task.key, User.username, Assignment.id)
                                      .join(Assignment, Assignment.task_id == Task.id)
                                      .join(User, Assignment.user_id == User.id)):
            aid[(key, user)] = a
    uid = {p: store.user(p).id for p in people}
    for p in people:
        for i in range(6):
            store.save(aid[(f"comparison:t:{i}:filing_date", p)], uid[p], "label", "different")  # revised below
            store.save(aid[(f"comparison:t:{i}:filing_date", p)], uid[p], "label", labels[p][i])
        store.save(aid[("comparison:t:m:trials", p)], uid[p], "matches", matches[p])
        for i in range(4):
            for aspect in STYLE_ASPECTS:
                store.save(aid[(f"style:m:{i}", p)], uid[p], f"aspect:{aspect}", ratings[p][i])
    path = tmp_path / "export.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in store.export_rows()))
    export = M.read_export(path)
    iaa = M.inter_annotator(export)
    direct = S.fleiss_kappa([[ANNOTATION_RELATIONS[labels[p][i]] for p in people] for i in range(6)],
                            categories=list(RELATIONS))
    assert iaa["single-value Fleiss kappa"].value == pytest.approx(direct.value)  # only current revisions count
    assert iaa["multi-value pairwise F1"].value == pytest.approx((2 / 3 + 1 + 2 / 3) / 3)
    alpha = S.krippendorff_alpha([ratings[p] for p in people], "ordinal").value
    assert iaa["style alpha narrative_order"].value == pytest.approx(alpha)
    assert iaa["style alpha (mean of aspects)"].value == pytest.approx(alpha)
    assert iaa["style two-agree share"].value == pytest.approx(0.75)
    assert iaa["extraction pairwise S_checklist"].status == "one_rater"
    human = M.aggregate_comparisons(M.comparison_answers(export))
    assert dict(zip(human["task"], human["label"]))["comparison:t:3:filing_date"] == "model_contains_reference"


def test_run_scores_an_extractor_file_against_human_json(shared_rel, tmp_path):
    human, texts = M.human_extraction(shared_rel)
    rows = human[human["item"] != "filing_date"][["case_id", "item", "index", "value", "evidence"]]
    path = tmp_path / "rows.jsonl"
    rows.to_json(path, orient="records", lines=True)
    out = M.run(shared_rel, extraction_path=path, extractor="half-model", n_resamples=100)
    row = out["table"].loc["half-model"]
    assert 80 < row["S_checklist"] < 100 and row["Coverage"] > 90
    assert row["Single"] == "not run"
    assert out["n_tasks"] == 150 and out["judge_vs_exact"]["Single"].n == 50


def test_extractor_run_through_the_extract_stage_feeds_table1(shared_rel, tmp_path, monkeypatch):
    """The extractor path end to end, offline: the extract stage over two human summaries through the
    pipeline's stand-in provider (mock), its rows scored against human.json, the Table 1 row written."""
    from gavel.runs import pipeline

    monkeypatch.setattr(M.runs, "METAEVAL_DIR", tmp_path)  # the module that reads it
    out = M.run(shared_rel, provider=pipeline.provider("mock"), extractor="stand-in", cases=2, n_resamples=50)
    status = out["extract_status"]
    assert len(status) == 2 * 26
    stat = out["results"]["stand-in"]["S_checklist"]
    assert stat.n == 2 and "unusable item answers left out: 0" in stat.detail
    row = M.read_value_rows(tmp_path / "stand-in" / "values.jsonl")
    assert set(row["case_id"]) <= set(status["case_id"])
    written = pd.read_csv(tmp_path / "table1.csv", index_col="model")
    assert list(written.columns) == M.TABLE1_COLUMNS and "stand-in" in written.index
    assert written.loc["stand-in", "Single"] == "not run"


# --- the one-pass bootstrap against the per-resample library computation --------------------------------

def _per_draw(stat, size, statistic, n=300, seed=3):
    return S.with_interval(stat, list(range(size)), statistic, n_resamples=n, seed=seed)


def _one_pass(stat, size, draws, n=300, seed=3):
    return S.with_draws(stat, size, draws, n_resamples=n, seed=seed)


def _same_interval(a, b):
    assert (a.low is None) == (b.low is None) and (a.high is None) == (b.high is None)
    if a.low is not None:
        assert round(a.low, 4) == round(b.low, 4) and round(a.high, 4) == round(b.high, 4)


@pytest.mark.parametrize("seed", range(6))
def test_one_pass_bootstrap_equals_the_per_draw_library_calls(seed):
    """Cohen's kappa (plain, linear, quadratic; by row and by group of rows), Fleiss' kappa (with units of
    unequal rater counts and one-category resamples) and Krippendorff's alpha (nominal, ordinal, interval,
    missing ratings): every resample's value through scikit-learn / statsmodels / krippendorff one call at a
    time, and all resamples in one array pass, give the same interval to 4 dp."""
    rng = np.random.default_rng(seed)
    n = int(rng.integers(3, 25))
    cats = [1, 2, 3, 4, 5]
    a = list(rng.choice([1, 2, 3] if seed % 2 else cats, n, p=None))
    b = [x if rng.random() < 0.6 else int(rng.choice(cats)) for x in a]
    for w in (None, "linear", "quadratic"):
        stat = S.cohen_kappa(a, b, weights=w, labels=cats)
        if not stat.ok:
            continue
        per = _per_draw(stat, n, lambda pick, w=w: S.cohen_kappa([a[i] for i in pick], [b[i] for i in pick],
                                                            weights=w, labels=cats).value)
        _same_interval(per, _one_pass(stat, n, S.cohen_kappa_draws(a, b, np.arange(n), cats, w)))
    # grouped: rows of a group come together into a resample (style kappa resampled by task)
    group = np.sort(rng.integers(0, max(2, n // 3), n))
    _, group = np.unique(group, return_inverse=True)
    n_groups = int(group.max()) + 1
    stat = S.cohen_kappa(a, b, labels=cats)
    if stat.ok and n_groups >= 2:
        def grouped(pick):
            rows = [i for g in pick for i in np.flatnonzero(group == g)]
            return S.cohen_kappa([a[i] for i in rows], [b[i] for i in rows], labels=cats).value
        _same_interval(_per_draw(stat, n_groups, grouped),
                       _one_pass(stat, n_groups, S.cohen_kappa_draws(a, b, group, cats)))
    # Fleiss: a unit x rater table of labels, some units with a missing rating
    labels = ["x", "y", "z", "w"]
    table = pd.DataFrame([[labels[int(rng.integers(0, 2 + seed % 3))] for _ in range(3)] for _ in range(n)])
    if seed % 3 == 0:
        table.iloc[0, 2] = None  # one unit with two ratings: resamples holding it are undefined
    cells = table.to_numpy()
    stat = S.fleiss_kappa(table, categories=labels)
    stat = stat if stat.ok else S.Stat(0.0)  # the interval is compared even where the whole table is undefined
    _same_interval(_per_draw(stat, n, lambda pick: S.fleiss_kappa(cells[pick], categories=labels).value),
                   _one_pass(stat, n, S.fleiss_kappa_draws(table, labels)))
    # Krippendorff: raters x units with missing ratings
    data = rng.integers(1, 6, size=(3, n)).astype(float)
    data[rng.random(data.shape) < 0.3] = np.nan
    for level in ("nominal", "ordinal", "interval"):
        stat = S.krippendorff_alpha(data, level)
        if not stat.ok:
            continue
        _same_interval(_per_draw(stat, n, lambda pick, level=level: S.krippendorff_alpha(data[:, pick], level).value),
                       _one_pass(stat, n, S.krippendorff_alpha_draws(data, level)))
    # means with undefined values left out of each resample
    vals = [None if rng.random() < 0.2 else float(v) for v in rng.random(n)]
    stat = S.Stat(0.5)
    _same_interval(_per_draw(stat, n, lambda pick: float(np.mean([vals[i] for i in pick if vals[i] is not None]))
                             if any(vals[i] is not None for i in pick) else None),
                   _one_pass(stat, n, S.mean_draws(vals)))


def test_coverage_agreement_is_the_word_overlap_rule_in_linear_time():
    """The coverage agreement counts a word as covered when any span overlaps it (start < word end, end > word
    start), as the direct check of every word against every span does; computed per character position, so
    thousands of spans over a long summary cost linear time (an annotator's long review made it quadratic)."""
    rng = np.random.default_rng(5)
    words = [("w" * int(rng.integers(1, 8))) for _ in range(300)]
    text = " ".join(words)
    bounds = [(m.start(), m.end()) for m in __import__("re").finditer(r"\S+", text)]

    def direct(spans_a, spans_b):
        cov = lambda spans: [any(s < we and e > ws for s, e in spans) for ws, we in bounds]  # noqa: E731
        return float(np.mean([x == y for x, y in zip(cov(spans_a), cov(spans_b))]))
    for _ in range(30):
        spans = [[(int(s), int(s + rng.integers(-3, 40))) for s in rng.integers(-5, len(text) + 5, rng.integers(0, 12))]
                 for _ in range(2)]
        assert M.coverage_agreement(text, *spans) == pytest.approx(direct(*spans))
    long_text = "word " * 20_000
    many = [(i, i + 3) for i in range(0, len(long_text), 7)]
    assert 0 <= M.coverage_agreement(long_text, many, many[::2]) <= 1
