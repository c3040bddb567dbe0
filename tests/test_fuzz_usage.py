"""The usage record under attack (issue 37, section 4): whatever a provider's body or a cached answer holds in
its usage (400-digit counts, NaN, negative or fractional counts, parts over their whole, strings, nesting),
reading it (gavel.llm.usage), pricing it (gavel.core.prices.cost) and putting it in the ledger
(gavel.llm.ledger: a request's row, cost.csv's table, the closing line) raise nothing: a cost is a finite
number of dollars or unknown, and usage that is not plausible says why in one line of ``price_row``.

The properties run in a child process under an address-space cap (``RLIMIT_AS``) and a wall-clock limit, so
a count that would blow up memory or time fails the test instead of the machine. Bounded examples: seconds."""

import math

from fuzzing import any_text, fuzz, replay, run_capped
from hypothesis import given
from hypothesis import strategies as st

from gavel.core import prices
from gavel.llm import Request, ledger, usage
from gavel.llm.records import Response

MODELS = ("gpt-4.1-2025-04-14", "gpt-5-2025-08-07", "claude-sonnet-4-20250514-thinking", "gemini-2.5-pro",
          "Qwen3-32B", "no-such-model")
SINCE = ledger.now()
#: counts that have broken a price: huge, negative, fractional, not finite, not numbers
COUNTS = st.one_of(st.integers(min_value=-10, max_value=10**7), st.integers(min_value=10**15),
                   st.integers(min_value=10**399, max_value=10**401), st.floats(allow_nan=True),
                   st.integers(min_value=0, max_value=10**7).map(float), st.booleans(), st.none(),
                   any_text(max_size=5), st.just("1" * 400))
LEAF = st.one_of(COUNTS, st.lists(COUNTS, max_size=2))
NESTED = st.recursive(LEAF, lambda inner: st.dictionaries(st.sampled_from(
    ["cached_tokens", "reasoning_tokens", "ephemeral_5m_input_tokens", "ephemeral_1h_input_tokens", "x"]), inner,
    max_size=3), max_leaves=8)
KEYS = ["prompt_tokens", "completion_tokens", "prompt_tokens_details", "completion_tokens_details", "input_tokens",
        "output_tokens", "cache_creation_input_tokens", "cache_read_input_tokens", "cache_creation", "service_tier",
        "promptTokenCount", "candidatesTokenCount", "cachedContentTokenCount", "thoughtsTokenCount",
        "prompt_token_count", "candidates_token_count"]
USAGE_OBJECT = st.one_of(st.dictionaries(st.sampled_from(KEYS), NESTED, max_size=8), COUNTS)
BODY = st.fixed_dictionaries({}, optional={"usage": USAGE_OBJECT, "usageMetadata": USAGE_OBJECT,
                                           "usage_metadata": USAGE_OBJECT, "service_tier": COUNTS})
#: a cached answer's usage as a damaged or hostile cache file may hold it
RECORD = st.one_of(st.dictionaries(st.sampled_from([*prices.USAGE_FIELDS, "mode", "answered_at", "service_tier"]),
                                   COUNTS, max_size=9), COUNTS, st.lists(COUNTS, max_size=2))


def _check_row(row: dict) -> None:
    for key in ("usd", "usd_when_answered"):
        assert row[key] is None or (math.isfinite(row[key]) and row[key] >= 0), row
    assert "\n" not in row["price_row"] and len(row["price_row"]) < 300
    if "usage" in row["unknown_fields"].split(";"):
        assert row["price_row"].startswith("usage not plausible: ") and row["unknown"] == 1
        assert all(row[f"{c}_tokens"] is None for c in ledger.TOKEN_COLUMNS)


def _ledger(model: str, record, mode: str) -> None:
    rq = Request(stage="judge", model=model, messages=[{"role": "user", "content": "x"}], case_id="1")
    resp = Response(custom_id=rq.custom_id, status="succeeded", text="x", usage=record)
    row = ledger.request_row("judge", rq, resp, "mock", SINCE, mode)
    _check_row(row)
    table = ledger.table([row])
    ledger.closing_line(table)


def _whole(value) -> bool:
    return (isinstance(value, int) and not isinstance(value, bool) or isinstance(value, float)
            and value.is_integer()) and 0 <= value <= prices.MAX_TOKENS


@fuzz(150)
@given(body=BODY, model=st.sampled_from(MODELS), mode=st.sampled_from(["batch", "online"]))
def fuzz_provider_bodies(body, model, mode):
    for read in (usage.openai, usage.anthropic, usage.gemini):
        got = read(body)
        assert got is None or set(prices.USAGE_FIELDS) <= set(got)
        if read is usage.openai and got is not None:  # issue 46: each count is read or named, never dropped
            for field, key in (("input", "prompt_tokens"), ("output", "completion_tokens")):
                written = body["usage"].get(key)
                if written is None:
                    assert got[field] is None
                elif _whole(written):
                    assert got[field] == written and type(got[field]) is int, (key, written, got)
                else:
                    assert prices.implausible(got), (key, written, got)
        record = usage.stamped(got, mode, ledger.stamp_time())
        _ledger(model, record, mode)


@fuzz(150)
@given(record=RECORD, model=st.sampled_from(MODELS), mode=st.sampled_from(["batch", "online"]))
def fuzz_cached_records(record, model, mode):
    priced = prices.cost(model, record, mode)
    assert priced.usd is None or (math.isfinite(priced.usd) and priced.usd >= 0)
    why = prices.implausible(record)
    assert why is None or (priced.usd is None and priced.row == f"usage not plausible: {why}")
    _ledger(model, record, mode)


def test_usage_records_raise_nothing_under_memory_and_time_caps():
    # address space of the child: 3 GiB (pandas and numpy load well under it)
    done = run_capped("test_fuzz_usage", ["fuzz_provider_bodies", "fuzz_cached_records"], memory=3 * 2**30,
                      env={"OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1"})
    assert done.returncode == 0 and "fuzzed" in done.stdout, done.stderr[-3000:] + replay()
