"""Time of the text metrics for all 1,300 release summaries (1,200 model summaries scored against their 100
human references: ROUGE-1/2/L and embedding cosine, cold cache) against the embedding model's raw
throughput on the same texts, measured in the same run.

    GAVEL_RELEASE=/path/to/gavel-release .venv/bin/python benchmarks/metrics_time.py [--sample N]

Raw: ``SentenceTransformer.encode`` on every window of every text at once (windows cut beforehand, batches of
32 sorted by length, nothing else). Ours: ``gavel.metrics.text`` as ``make results`` runs it with an empty cache
(windowing, one batch per text, writing the cache) plus ROUGE for every pair. Targets: ours <= 5 minutes
and <= 1.5 x raw. Run it on an idle machine: both sides share the 2 cores with whatever else runs.
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time

os.environ.setdefault("HF_HUB_OFFLINE", "1")

from gavel.metrics import text as metrics  # noqa: E402
from gavel.release import load_release  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sample", type=int, default=None, help="only the first N cases (quick check)")
    args = ap.parse_args()
    s = load_release().summaries
    s = s[s["set"] == "benchmark"]
    if args.sample:
        s = s[s["case_id"].isin(sorted(s["case_id"].unique())[:args.sample])]
    refs = s[s["model"] == "human"].set_index("case_id")["text"]
    cand = s[s["model"] != "human"]
    texts = list(dict.fromkeys(list(cand["text"]) + list(refs)))
    print(f"{len(cand)} model summaries, {len(refs)} references, {len(texts)} distinct texts")

    t0 = time.perf_counter()
    model = metrics.load_embedder()
    load_t = time.perf_counter() - t0
    model.encode(["warm up the model"] * 4)

    pieces = [p for t in texts for p, _ in metrics.windows(t, model.tokenizer)]
    t0 = time.perf_counter()
    model.encode(pieces, batch_size=32, normalize_embeddings=True, show_progress_bar=False)
    raw = time.perf_counter() - t0
    print(f"raw embedding: {len(pieces)} windows of <= {metrics.EMBEDDING_WINDOW} word pieces in {raw:.1f} s "
          f"({len(pieces) / raw:.1f} windows/s, {len(texts) / raw:.2f} texts/s); model load {load_t:.1f} s")

    with tempfile.TemporaryDirectory() as cache:
        t0 = time.perf_counter()
        for summary, case in zip(cand["text"], cand["case_id"]):
            metrics.rouge_scores(summary, refs[case])
        rouge_t = time.perf_counter() - t0
        t1 = time.perf_counter()
        metrics.embedding_similarity(list(cand["text"]), list(cand["case_id"].map(refs)), model=model,
                                     cache_dir=cache)
        emb_t = time.perf_counter() - t1
    total = rouge_t + emb_t
    print(f"ours: ROUGE {rouge_t:.1f} s + embedding similarity (cold cache) {emb_t:.1f} s = {total:.1f} s")
    print(f"total {total / 60:.2f} min (target <= 5 min); ratio ours / raw embedding {total / raw:.2f} "
          f"(target <= 1.5); embedding part alone / raw {emb_t / raw:.2f}")


if __name__ == "__main__":
    main()
