"""Document extraction in dollars: what each method of the paper's section 4 costs per case, computed by us
from the release's token statistics at the list prices of gavel/core/prices.yaml (the date they were checked is
in every row). The paper reports tokens, not dollars; this table is our computation, not the paper's.

Token counts per case and method:

* end-to-end (GPT-4.1): the ``token_stats`` of each released batch file (20 cases a file, one file per item
  batch); a batch missing from one part (part 2, batch 4 is an empty file) takes the other part's per-case mean.
* chunk-by-chunk: the per-case ``token_stats`` of each model's run (gpt-oss 20B has none released).
* the agent: ``agent_runs`` (each run's ``stats.json``), summed over the units of a configuration
  (``all``: one agent for the 26 items; ``grouped``: 9; ``individual``: 26).

Each method's tokens are priced as if sent to each hosted model of the paper. A request's size decides its
long-context tier (a whole-request switch): it is taken as the mean of its file, case or run (input tokens /
requests), since the release keeps no per-request sizes. Batch prices apply to end-to-end and chunk-by-chunk;
an agent's calls depend on each other's answers and go online. Prompt caching is not counted (the release does
not say what a provider would have cached): agent costs, whose calls resend a growing history, are upper bounds.
``fits_context`` says whether the largest mean request size fits the model's input limit: the registry's
``quirks.max_input_tokens`` where the provider states one (GPT-5: 272K of its 400K window, the rest being
output; Claude Sonnet 4: 1M with the 1M-context beta, which is also when its >200K price tier applies), else the
context window. A method whose requests do not fit could not be run on that model as released (its price is
shown all the same).
"""

from __future__ import annotations

import pandas as pd

from gavel.core import config, prices

COLUMNS = ["method", "configuration", "tokens_of", "priced_as", "cases", "requests_per_case", "input_tokens_per_case",
           "output_tokens_per_case", "usd_per_case", "usd_per_case_batch", "fits_context", "price_row",
           "prices_checked", "note"]
CASES_PER_FILE = 20
NOTE = "our computation: release token statistics x list prices (gavel/core/prices.yaml), not the paper's figures"


def _usage(rows: pd.DataFrame) -> pd.DataFrame:
    """Per-case tokens and requests of one method: columns case_id, input_tokens, output_tokens, requests."""
    return rows[["case_id", "input_tokens", "output_tokens", "requests"]]


def end_to_end(rel) -> pd.DataFrame:
    files = rel.token_stats[(rel.token_stats["kind"] == "end_to_end") & (rel.token_stats["scope"] == "file")].copy()
    files["batch"] = files["file"].str.extract(r"batch_(\d+)", expand=False)
    per = files.assign(input_tokens=files["input_tokens"] / CASES_PER_FILE,
                       output_tokens=files["output_tokens"] / CASES_PER_FILE,
                       requests=files["prompts"] / CASES_PER_FILE)
    by_batch = per.groupby("batch")[["input_tokens", "output_tokens", "requests"]].mean()  # over the parts
    return by_batch.reset_index().rename(columns={"batch": "case_id"})  # one row per batch: a case is their sum


def chunk_by_chunk(rel, model: str) -> pd.DataFrame:
    t = rel.token_stats
    rows = t[(t["kind"] == "chunk_by_chunk") & (t["scope"] == "case") & (t["model"] == model)]
    return _usage(rows.rename(columns={"prompts": "requests"}))


def agent(rel, model: str, configuration: str) -> pd.DataFrame:
    a = rel.agent_runs
    rows = a[(a["model"] == model) & (a["configuration"] == configuration)]
    per_case = rows.groupby("case_id")[["input_tokens", "output_tokens", "llm_calls"]].sum().reset_index()
    return _usage(per_case.rename(columns={"llm_calls": "requests"}))


def input_limit(model: str) -> int:
    """The most input tokens one request to ``model`` may hold, as its provider states it (see the docstring)."""
    llm = config.model(model).llm
    return int((llm.get("quirks") or {}).get("max_input_tokens") or llm["context_window"])


def _price(model: str, usage: pd.DataFrame, mode: str, table: prices.Table, cases: int) -> tuple[float, str]:
    """USD per case: each row's requests at their mean size (which picks the tier), over ``cases``."""
    total, rows = 0.0, set()
    for r in usage.itertuples():
        n = max(float(r.requests), 1.0)
        per = prices.cost(model, {"input": r.input_tokens / n, "output": r.output_tokens / n}, mode,
                          when=table.checked, prices=table)  # the rows in effect when the table was checked
        total += (per.usd or 0.0) * n
        rows.add(per.row)
    return total / cases, "; ".join(sorted(rows))


def table(rel, price_table: prices.Table | None = None) -> pd.DataFrame:
    """The document_extraction_cost table (see the module's docstring)."""
    price_table = price_table or prices.table()
    hosted = [m.release_name for m in config.models() if m.provider in prices.HOSTED]
    runs = [("end_to_end", "all items per request", "gpt-4.1-2025-04-14", end_to_end(rel))]
    methods = config.document_extraction_models()
    for model in methods.get("chunk_by_chunk", []):
        runs.append(("chunk_by_chunk", "all items per chunk", model, chunk_by_chunk(rel, model)))
    for model in methods.get("agent", []):
        for configuration in ("all", "grouped", "individual"):
            runs.append(("agent", configuration, model, agent(rel, model, configuration)))
    out = []
    for method, configuration, tokens_of, usage in runs:
        if not len(usage):
            continue  # no token statistics released for this run (gpt-oss 20B chunk-by-chunk)
        per_case = 1 if method == "end_to_end" else len(usage)  # end-to-end: rows are batches of one case
        sums = usage[["requests", "input_tokens", "output_tokens"]].sum() / per_case
        largest = float((usage["input_tokens"] / usage["requests"].clip(lower=1)).max())
        for model in hosted:
            online, row = _price(model, usage, "online", price_table, per_case)
            batch = None if method == "agent" else _price(model, usage, "batch", price_table, per_case)[0]
            out.append({"method": method, "configuration": configuration, "tokens_of": tokens_of, "priced_as": model,
                        "cases": 2 * CASES_PER_FILE if method == "end_to_end" else len(usage),
                        "requests_per_case": float(sums["requests"]), "input_tokens_per_case": float(sums["input_tokens"]),
                        "output_tokens_per_case": float(sums["output_tokens"]),
                        "usd_per_case": online, "usd_per_case_batch": batch, "price_row": row,
                        "fits_context": largest <= input_limit(model),
                        "prices_checked": price_table.checked.isoformat() if price_table.checked else None,
                        "note": NOTE})
    return pd.DataFrame(out, columns=COLUMNS)
