"""Issue 21: the defects an independent recomputation of `make results` found, one test per point, and r
with the range its span matching allows. Computation tests run on the shared release; the REPRODUCTION
rows are checked on the committed tables (CI checks that `make results` reproduces them exactly)."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
import pytest  # noqa: E402
from matplotlib.container import ErrorbarContainer  # noqa: E402

from gavel.core import draws, stats
from gavel.core.entries import entry_values  # noqa: E402
from gavel.paper import figures, reproduction, results  # noqa: E402
from gavel.ref import grounding, scoring  # noqa: E402

SONNET = "claude-sonnet-4-20250514-thinking"


@pytest.fixture(scope="module")
def committed():
    return results.read()


@pytest.fixture(scope="module")
def claims(committed):
    return reproduction.evaluate(committed).set_index("id")


# 1. grounding: evidence once per released entry ------------------------------------------------------------
def test_a_list_valued_entry_gives_values_that_share_one_entry_number():
    rows, problems = entry_values({"extracted": [{"value": ["A v. B", "C v. D"], "evidence": ["x", "y"]},
                                                 {"value": "E v. F", "evidence": ["z"]}]})
    assert [(r["index"], r["entry"], r["value"]) for r in rows] == [(1, 1, "A v. B"), (2, 1, "C v. D"),
                                                                    (3, 2, "E v. F")]
    assert [p.defect for p in problems] == ["list_value"]


def test_grounding_counts_each_entrys_evidence_once(shared_rel):
    g = results.grounding_tables(shared_rel)["summary_evidence_grounding"].set_index(["model", "item"])
    # the two entries with list values named by the recomputation (cases 46582 and 46567)
    assert g.loc[("Qwen3-32B", "consolidated_cases"), "snippets"] == 15
    assert g.loc[("gpt-oss-20b-BF16", "related_cases"), "snippets"] == 45
    # everywhere: snippets + entries without evidence == evidence counted once per released entry
    v = shared_rel.checklist_values
    v = v[(v["origin"] == "summary") & (v["method"] == "llm")]
    once = v.drop_duplicates(subset=["model", "unit", "part", "case_id", "item", "entry"])
    expected = once.groupby(["model", "item"])["evidence"].agg(lambda e: sum(max(len(x), 1) for x in e))
    got = (g["snippets"] + g["no_evidence"]).drop(index="all", level="item")
    assert got.reindex(expected.index).astype(int).equals(expected.astype(int))


# 2. end-to-end tokens per case: the cases the released counts cover ---------------------------------------
def test_token_cases_are_the_cases_the_released_counts_cover(shared_rel):
    t = results.document_tables(shared_rel)["document_s_checklist"].fillna({"configuration": ""})
    e2e = t[t["method"] == "end_to_end"].iloc[0]
    assert e2e["token_cases"] == 36  # part-2 batch 4 is an empty file: no checklists, no token counts
    assert e2e["total_tokens_per_case"] == pytest.approx((e2e["input_tokens"] + e2e["output_tokens"]) / 36)
    assert 3.6e6 < e2e["total_tokens_per_case"] < 3.7e6
    assert (t.loc[t["method"] == "agent", "token_cases"] == 40).all()
    assert (t.loc[t["model"].isin(["Qwen3-32B"]) & (t["method"] == "chunk_by_chunk"), "token_cases"] == 40).all()


def test_committed_token_rows_use_36_cases(claims):
    assert claims.loc["e2e_tokens", "analogue"] == pytest.approx(3.646, abs=0.001)
    assert "36 cases" in claims.loc["e2e_tokens", "note"]
    assert claims.loc["saving_vs_e2e", "analogue"] == pytest.approx(100 * (1 - 2.7997 / 3.6464), abs=0.05)


# 3. one summary set per model -----------------------------------------------------------------------------
def test_model_means_are_over_one_summary_set():
    scores = pd.DataFrame({"model": ["a", "a", "a", "b", "b"], "case_id": ["1", "2", "3", "1", "2"],
                           "s_checklist": [50.0, np.nan, 70.0, 40.0, 60.0],
                           "rouge1": [0.1, 0.9, 0.3, 0.2, 0.4]})
    m = results.model_means(scores, ["rouge1"]).set_index("model")
    assert m.loc["a", "rouge1"] == pytest.approx(0.2)  # not 0.433: case 2 has no S_checklist
    assert m.loc["a", "s_checklist"] == pytest.approx(60.0)
    assert (m.loc["a", "summaries"], m.loc["a", "summaries_released"]) == (2, 3)
    assert m.loc["b", "summaries"] == 2


def test_committed_model_means_match_their_summaries(committed):
    means = committed["metric_model_means"].set_index("model")
    assert means.loc[SONNET, "summaries"] == 58 and means.loc[SONNET, "summaries_released"] == 100
    scores = committed["summary_text_metrics"]
    rows = scores[(scores["model"] == SONNET) & scores["s_checklist"].notna()]
    assert len(rows) == 58
    for col in ("s_checklist", "rouge1", "rouge2", "rougeL", "embedding"):
        assert means.loc[SONNET, col] == pytest.approx(rows[col].mean(), abs=1e-4), col


# 4. r_human compares another quantity ---------------------------------------------------------------------
def test_r_human_is_not_reproducible_with_our_analogue(claims, committed):
    row = claims.loc["r_human"]
    assert row["status"] == "not reproducible" and row["ours"] is None
    r = committed["residual_ratio"].set_index(["model", "subset"])
    assert row["analogue"] == pytest.approx(r.loc[("human", "all"), "r_percent"])
    assert "reference summaries" in row["note"] and "empty" in row["note"] and "analogue" in row["note"]


# 5. r under every span matching, quotes re-typed ----------------------------------------------------------
def test_quote_styles_are_equal_in_the_normalised_match():
    text = 'The court called the policy "stop and frisk" and struck it down in full.'
    hit = grounding.locate("the policy 'stop and frisk' and struck", text, threshold=None)
    assert hit.status == "normalized" and text[hit.start:hit.end] == 'the policy "stop and frisk" and struck'
    evidence = [("struck down", ["called the policy 'stop and frisk' and struck it down in full."])]
    assert grounding.uncovered_spans(text, evidence, match="exact") == [(0, len(text))]
    assert grounding.uncovered_spans(text, evidence, match="normalized") == []


def test_values_first_or_evidence_only():
    text = "On May 1, 2020, the ACLU filed suit against the city in federal court."
    values = [("May 1, 2020", ["On May 1, 2020, the ACLU filed suit against the city in federal court."])]
    assert [text[s:e] for s, e in grounding.uncovered_spans(text, values)] == [
        ", the ACLU filed suit against the city in federal court."]
    assert grounding.uncovered_spans(text, values, values_first=False) == []
    with pytest.raises(ValueError, match="match must be one of"):
        grounding.uncovered_spans(text, values, match="loose")


def test_residual_ratio_has_every_variant_and_its_range(committed):
    r = committed["residual_ratio"]
    variants = [f"r_{name}_percent" for name, _, _ in results.R_VARIANTS]
    assert len(variants) == 6 and set(variants) <= set(r.columns)
    assert (r["r_percent"] == r["r_fuzzy_value_then_evidence_percent"]).all()
    assert np.allclose(r["r_low_percent"], r[variants].min(axis=1))
    assert np.allclose(r["r_high_percent"], r[variants].max(axis=1))
    a = r.set_index(["model", "subset"])
    # GPT-5 and Claude Sonnet 4 cover different halves; GPT-4.1 has both
    assert a.loc[("gpt-5-2025-08-07", "all"), "case_parts"] != a.loc[(SONNET, "all"), "case_parts"]
    assert a.loc[("gpt-4.1-2025-04-14", "part1"), "summaries"] == 50


def test_r_rows_report_the_range_as_bounds_and_the_halves(claims, committed):
    r = committed["residual_ratio"].set_index(["model", "subset"])
    for cid, model in (("r_gpt41", "gpt-4.1-2025-04-14"), ("r_gpt5", "gpt-5-2025-08-07"), ("r_sonnet", SONNET)):
        row = claims.loc[cid]
        assert row["low"] == pytest.approx(r.loc[(model, "all"), "r_low_percent"])
        assert row["high"] == pytest.approx(r.loc[(model, "all"), "r_high_percent"])
        assert row["low"] <= row["ours"] <= row["high"]
        assert row["status"] == ("within our bounds" if row["low"] <= row["paper"] <= row["high"] else "differs")
        assert "unreleased parameters" not in row["note"] and "how values and evidence are matched" in row["note"]
    note = claims.loc["r_gpt41", "note"]
    assert f"{r.loc[('gpt-4.1-2025-04-14', 'part2'), 'r_percent']:.1f}" in note
    assert f"{r.loc[('gpt-4.1-2025-04-14', 'part1'), 'r_percent']:.1f}" in note
    assert "half only" in claims.loc["r_gpt5", "note"] and "half only" in claims.loc["r_sonnet", "note"]


# 6. human words pooled; chunk-by-chunk GPT-oss 20B not testable -------------------------------------------
def test_human_words_pool_the_two_bins_over_their_summaries():
    t = {"summary_lengths": pd.DataFrame({"model": ["human", "human", "human"], "length_bin": ["128K", "256K", "512K"],
                                          "mean_words": [900.0, 1000.0, 1500.0], "summaries": [20, 30, 10]})}
    value, *_ = reproduction.Metrics(t).human_words(["256K", "512K"])
    assert value == pytest.approx((1000 * 30 + 1500 * 10) / 40)
    with pytest.raises(KeyError, match="1M"):
        reproduction.Metrics(t).human_words(["1M"])


def test_human_words_row_and_chunk_oss_row(claims, committed):
    row = claims.loc["human_words_512k"]
    h = committed["summary_lengths"]
    h = h[(h["model"] == "human") & h["length_bin"].isin(["256K", "512K"])]
    assert row["ours"] == pytest.approx((h["mean_words"] * h["summaries"]).sum() / h["summaries"].sum())
    assert row["status"] == "reproduced" and "together" in row["claim"]
    chunk = claims.loc["fig5_chunk_oss_s"]
    assert chunk["status"] == "not reproducible" and chunk["ours"] is None and chunk["analogue"] is not None
    assert chunk["low"] is None and "absent" in chunk["note"] and "analogue's bounds" in chunk["note"]


# 7. the three settlement items are named ------------------------------------------------------------------
def test_settlement_rows_score_terms_date_and_duration(claims, committed):
    spec = {c["id"]: c for c in reproduction.load_claims()}
    items = committed["summary_item_scores"].set_index(["model", "item"])
    for cid, item in (("pro_settle_1", "settlement_terms"), ("pro_settle_2", "settlement_date"),
                      ("pro_settle_3", "settlement_duration")):
        assert spec[cid]["metric"] == "item_score" and spec[cid]["args"]["item"] == item
        assert claims.loc[cid, "ours"] == pytest.approx(items.loc[("gemini-2.5-pro", item), "score"])
    assert not any(c.get("metric") == "kth_lowest_in_group" for c in spec.values())


# 8. agreement with intervals ------------------------------------------------------------------------------
def test_agreement_intervals_resample_cases_and_models():
    rng = np.random.default_rng(0)
    rows = []
    for m in range(12):
        for c in range(30):
            s = rng.normal(50 + m, 10)
            rows.append({"model": f"m{m}", "case_id": str(c), "s_checklist": s, "good": s, "noise": rng.normal()})
    scores = pd.DataFrame(rows)
    iv = results.agreement_intervals(scores, ["good", "noise"], np.random.default_rng(1)).set_index(["metric", "level"])
    for level in ("summary", "system"):
        for stat in results.CORRELATIONS:
            assert iv.loc[("good", level), f"{stat}_ci_low"] == pytest.approx(1.0)  # a perfect metric stays perfect
    assert iv.loc[("noise", "summary"), "pearson_ci_low"] < 0 < iv.loc[("noise", "summary"), "pearson_ci_high"]
    width = iv["pearson_ci_high"] - iv["pearson_ci_low"]
    assert width[("noise", "system")] > 2 * width[("noise", "summary")]  # 12 models vs 360 summaries
    assert (iv["resamples"] > 0.9 * stats.BOOTSTRAP_RESAMPLES).all()


def test_draw_correlations_are_the_scoring_correlations():
    rng = np.random.default_rng(3)
    x = rng.integers(0, 5, 60).astype(float)  # ties on both sides
    y = x + rng.integers(0, 3, 60)
    ref = scoring.correlations(x, y)
    one = draws.group_correlations(x, y, np.arange(60), np.ones((1, 60)))[0]
    assert tuple(one) == pytest.approx((ref["pearson"], ref["spearman"], ref["kendall"]))
    assert np.isnan(draws.group_correlations(np.ones(4), y[:4], np.arange(4), np.ones((1, 4)))).all()


def test_committed_agreement_has_intervals_and_the_figure_draws_them(committed):
    a = committed["metric_agreement"]
    for stat in results.CORRELATIONS:
        assert (a[f"{stat}_ci_low"] <= a[stat] + 1e-4).all() and (a[stat] <= a[f"{stat}_ci_high"] + 1e-4).all()
    w = (a["pearson_ci_high"] - a["pearson_ci_low"]).to_numpy()
    # system-level intervals (12 models) are at least as wide as any summary-level one (1,158 summaries); the
    # endpoints are written at the digits the resampling supports, so two widths can round to the same value
    assert w[a["level"] == "system"].min() >= w[a["level"] == "summary"].max() - 1e-9
    fig = figures.fig_metric_agreement(committed)
    bars = [c for ax in fig.axes[:2] for c in ax.containers if isinstance(c, ErrorbarContainer)]
    assert len(bars) == 2 * 3  # pearson, spearman, kendall on both panels
    fig.clf()


# the status vocabulary ------------------------------------------------------------------------------------
def test_one_status_vocabulary_and_not_reproducible_rows_name_what_is_missing(claims):
    assert set(claims["status"]) <= {"reproduced", "within our bounds", "differs", "not reproducible"}
    nr = claims[claims["status"] == "not reproducible"]
    assert nr["note"].str.len().gt(0).all()
    with_analogue = nr[nr["analogue"].notna()]
    assert with_analogue["note"].str.contains("analogue").all(), list(with_analogue.index)
    assert nr["ours"].isna().all()


def test_records_are_itertuples():
    """reconstruct.records reads string columns as arrays; rows, values and value types stay itertuples'."""
    from gavel.paper import reconstruct

    df = pd.DataFrame({"model": pd.array(["a", None, "c"], dtype="string"),
                       "part": pd.array([1, None, 2], dtype="Int64"), "x": [1.5, float("nan"), 2.0],
                       "evidence": [["e"], [], None], "class": ["k", "l", "m"]})
    ours, theirs = list(reconstruct.records(df)), list(df.itertuples(index=False))
    assert len(ours) == 3 and ours[0]._fields == theirs[0]._fields
    for a, b in zip(ours, theirs):
        assert [type(v) for v in a] == [type(v) for v in b]
        assert all(x is y or x == y or (x != x and y != y) for x, y in zip(a, b))
