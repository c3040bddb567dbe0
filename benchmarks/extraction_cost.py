"""Billed input of the extraction stage: our cache-friendly prompt layout against the original one.

    GAVEL_RELEASE=../shared/gavel-release .venv/bin/python benchmarks/extraction_cost.py

For the 100 benchmark human summaries x 26 items, every request is rendered for real (prompts/extract.txt)
and counted with o200k_base. Our layout puts the instructions and the summary first and the item last, so
the 25 later requests of a summary share a cached prefix with the first. The original layout (paper
Appendix G, Figure 26) puts the item definition before the summary: no two requests share a prefix beyond
the first sentence, so nothing is cached. Cache pricing per provider, from each provider's published rules:

- OpenAI: automatic prefix caching (prefixes >= 1,024 tokens), cached tokens at the price table's
  ``cache_read`` price; Gemini: implicit caching, the same;
- Anthropic: the provider puts a cache breakpoint after the summary's message (``cache_control``); the first
  request writes the cache at 1.25 x the input price, later ones read it at ``cache_read`` (0.1 x).

"Billed input" is expressed in full-price-token equivalents (cost / input price), so layouts and providers
compare directly; the target is <= 50% of the original. Also printed: a full GAVEL-REF evaluation of one
model's 100 summaries per provider (extraction of the summaries and references, compare, residual, style),
with output tokens estimated from the prompts' answer formats.
"""

from __future__ import annotations

import sys

import pandas as pd

from gavel.core import prices
from gavel.core.items import ITEMS
from gavel.core.tokens import count_tokens
from gavel.ref import prompts
from gavel.ref.stages import extract
from gavel.release import load_release

PROVIDER_MODELS = {"openai": "gpt-4.1-2025-04-14", "anthropic": "claude-sonnet-4-20250514-thinking",
                   "gemini": "gemini-2.5-flash"}
ANTHROPIC_WRITE = 1.25
MIN_CACHEABLE = {"openai": 1024, "gemini": 1024, "anthropic": 1024}
OUTPUT_PER_REQUEST = {"extract": 250, "compare": 200, "residual": 600, "residual_match": 300, "style": 500}


def price_of(model: str) -> dict:
    """Today's row of the price table (gavel/core/prices.yaml) in the shape this benchmark uses."""
    row = prices.table().row(model)
    return {"input": row.rates["input"], "output": row.rates["output"],
            "cached_input": row.rates.get("cache_read", row.rates["input"]), "batch_discount": row.batch_discount}


def _tokens(messages) -> int:
    return sum(count_tokens(m["content"]) for m in messages)


def main() -> None:
    rel = load_release()
    s = rel.summaries
    human = s[(s["model"] == "human") & (s["set"] == "benchmark")].drop_duplicates("case_id")
    rows = []
    for r in human.itertuples(index=False):
        reqs = extract.build_requests([extract.Summary("human", r.case_id, r.text)], "gpt-oss-20b-BF16")
        # system + the summary's user message: what the 26 requests share (the item is the last message)
        prefix = count_tokens(reqs[0].messages[0]["content"]) + count_tokens(reqs[0].messages[1]["content"])
        for req in reqs:
            rows.append({"case_id": r.case_id, "item": req.item, "tokens": _tokens(req.messages), "prefix": prefix})
    df = pd.DataFrame(rows)
    n_req, total = len(df), int(df["tokens"].sum())
    print(f"extraction of {human.shape[0]} human summaries x {len(ITEMS)} items = {n_req} requests, "
          f"{total:,} input tokens (o200k_base); shared prefix per summary: {df.groupby('case_id')['prefix'].first().mean():.0f} tokens on average")
    out = []
    for provider, model in PROVIDER_MODELS.items():
        price = price_of(model)
        ratio = price["cached_input"] / price["input"]
        billed = 0.0
        for _, g in df.groupby("case_id"):
            prefix = int(g["prefix"].iloc[0])
            cacheable = prefix >= MIN_CACHEABLE[provider]
            for k, tokens in enumerate(g["tokens"]):
                if k == 0 or not cacheable:
                    billed += tokens + (prefix * (ANTHROPIC_WRITE - 1) if provider == "anthropic" and cacheable else 0)
                else:
                    billed += prefix * ratio + (tokens - prefix)
        original = float(total)  # item first: nothing shared, full price
        out.append({"provider": provider, "model": model, "original_billed_tokens": int(original),
                    "ours_billed_tokens": int(billed), "ratio": round(billed / original, 3),
                    "original_usd": round(original * price["input"] / 1e6, 2),
                    "ours_usd": round(billed * price["input"] / 1e6, 2)})
    table = pd.DataFrame(out)
    print(table.to_string(index=False))
    print(f"target: ratio <= 0.50 -> {'met' if (table['ratio'] <= 0.5).all() else 'NOT met'} for every provider")

    # a full evaluation of one model (100 summaries) per provider, batch prices, cache-friendly layout
    per_summary_extract = df.groupby("case_id")["tokens"].sum().mean()
    mean_prefix = df.groupby("case_id")["prefix"].first().mean()
    style_tokens = count_tokens(prompts.template_text("style")) + 2 * human["text"].map(count_tokens).mean()
    compare_tokens = count_tokens(prompts.template_text("compare_multi")) + 150
    n = len(human)
    plan = {"extract": (2 * n * len(ITEMS), per_summary_extract / len(ITEMS)),  # model + reference summaries
            "compare": (n * 14, compare_tokens),  # ~14 judged items per summary in the release
            "residual": (2 * n, 600), "residual_match": (n, 400), "style": (n, style_tokens)}
    cost_rows = []
    for provider, model in PROVIDER_MODELS.items():
        price = price_of(model)
        disc = 1 - price.get("batch_discount", 0.0)
        usd = 0.0
        for stage, (count, tokens) in plan.items():
            inp = count * tokens
            if stage == "extract":  # 25 of 26 requests read the cached prefix
                inp -= count * (len(ITEMS) - 1) / len(ITEMS) * mean_prefix * (1 - price["cached_input"] / price["input"])
            usd += (inp * price["input"] + count * OUTPUT_PER_REQUEST[stage] * price["output"]) / 1e6 * disc
        cost_rows.append({"provider": provider, "model": model, "requests": sum(c for c, _ in plan.values()),
                          "usd_full_evaluation_of_one_model": round(usd, 2)})
    print(pd.DataFrame(cost_rows).to_string(index=False))


if __name__ == "__main__":
    sys.exit(main())
