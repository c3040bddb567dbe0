"""What a run costs: usage as each provider reports it (fake servers speaking each wire format), priced by the
dated price table, summed into cost.csv. Every expected dollar figure is computed by hand in the test from the
list prices of gavel/core/prices.yaml (USD per million tokens)."""

import datetime as dt

import pandas as pd
import pytest
import yaml
from fakes.anthropic_fake import FakeAnthropic
from fakes.gemini_fake import FakeGemini
from fakes.openai_fake import FakeOpenAI

from gavel.core import prices
from gavel.llm import Request, ledger
from gavel.llm.providers import get_provider
from gavel.llm.providers.base import ProviderError
from gavel.llm.records import Response
from gavel.llm.runner import StageRunner

KEY = "sk-cost-test-key-0000000000"
GPT5, GPT41 = "gpt-5-2025-08-07", "gpt-4.1-2025-04-14"
SONNET, PRO = "claude-sonnet-4-20250514-thinking", "gemini-2.5-pro"


def request(model, ident, stage="judge"):
    return Request(stage=stage, model=model, case_id=ident, item="filing_date",
                   messages=[{"role": "system", "content": "Be terse."}, {"role": "user", "content": f"id={ident}"}])


def runner(provider, srv, tmp_path, **kw):
    base = srv.url + ("/v1" if provider == "openai" else "")
    return StageRunner("judge", get_provider(provider, base_url=base, api_key=KEY), tmp_path / "run",
                       poll_interval=0.01, progress=False, **kw)


def cost_csv(tmp_path):
    return pd.read_csv(tmp_path / "run" / "cost.csv")


def test_openai_batch_with_cached_input_and_reasoning(tmp_path):
    rq = request(GPT5, "a")
    with FakeOpenAI() as srv:
        srv.usage_for = lambda cid: {"prompt_tokens": 10_000, "completion_tokens": 3_000, "total_tokens": 13_000,
                                     "prompt_tokens_details": {"cached_tokens": 8_000},
                                     "completion_tokens_details": {"reasoning_tokens": 2_000}}
        report = runner("openai", srv, tmp_path).run([rq], mode="batch")
    usage = report.responses[rq.custom_id].usage
    assert (usage["input"], usage["cache_read"], usage["output"], usage["reasoning"]) == (10_000, 8_000, 3_000, 2_000)
    assert usage["cache_write"] is None and usage["mode"] == "batch"  # OpenAI reports no cache writes: unknown
    row = cost_csv(tmp_path).iloc[0]
    # GPT-5: 2,000 uncached x $1.25 + 8,000 cached x $0.125 + 3,000 output x $10, half price in batch
    assert row["usd"] == pytest.approx(0.5 * (2_000 * 1.25 + 8_000 * 0.125 + 3_000 * 10.0) / 1e6)
    assert row["usd"] == pytest.approx(0.01675)
    assert (row["cache_read_tokens"], row["reasoning_tokens"], row["mode"]) == (8_000, 2_000, "batch")
    assert row["price_row"] == "gpt-5-2025-08-07@2025-08-07 batch -50%" and row["unknown"] == 0


def test_openai_online_chat_usage_and_service_tier(tmp_path):
    rq = request(GPT41, "b")
    with FakeOpenAI() as srv:
        srv.usage_for = lambda cid: {"prompt_tokens": 5_000, "completion_tokens": 200, "total_tokens": 5_200,
                                     "prompt_tokens_details": {"cached_tokens": 4_096},
                                     "completion_tokens_details": {"reasoning_tokens": 0}, "service_tier": "default"}
        report = runner("openai", srv, tmp_path).run([rq], mode="online")
    usage = report.responses[rq.custom_id].usage
    assert usage["service_tier"] == "default" and usage["mode"] == "online"
    row = cost_csv(tmp_path).iloc[0]
    # GPT-4.1 online: 904 x $2 + 4,096 x $0.50 + 200 x $8
    assert row["usd"] == pytest.approx((904 * 2.0 + 4_096 * 0.5 + 200 * 8.0) / 1e6)
    assert row["usd"] == pytest.approx(0.005456)


def test_anthropic_cache_write_and_read_in_one_call_are_counted_once_each(tmp_path):
    rq = request(SONNET, "c")
    with FakeAnthropic() as srv:
        srv.usage_for = lambda cid: {"input_tokens": 50, "output_tokens": 300, "cache_creation_input_tokens": 1_000,
                                     "cache_read_input_tokens": 2_000, "service_tier": "standard",
                                     "cache_creation": {"ephemeral_5m_input_tokens": 600,
                                                        "ephemeral_1h_input_tokens": 400}}
        report = runner("anthropic", srv, tmp_path).run([rq], mode="online")
    usage = report.responses[rq.custom_id].usage
    assert usage["input"] == 3_050  # 50 after the breakpoint + 1,000 written + 2,000 read: each once
    assert (usage["cache_write"], usage["cache_write_5m"], usage["cache_write_1h"]) == (1_000, 600, 400)
    assert usage["service_tier"] == "standard"
    row = cost_csv(tmp_path).iloc[0]
    # Sonnet 4: 50 x $3 + 2,000 read x $0.30 + 600 written (5 min) x $3.75 + 400 written (1 h) x $6 + 300 x $15
    assert row["usd"] == pytest.approx((50 * 3.0 + 2_000 * 0.3 + 600 * 3.75 + 400 * 6.0 + 300 * 15.0) / 1e6)
    assert row["usd"] == pytest.approx(0.0099)
    assert row["input_tokens"] == 3_050 and row["cache_write_tokens"] == 1_000


def test_anthropic_batch_with_cached_input(tmp_path):
    rq = request(SONNET, "d")
    with FakeAnthropic() as srv:
        srv.usage_for = lambda cid: {"input_tokens": 100, "output_tokens": 50, "cache_creation_input_tokens": 0,
                                     "cache_read_input_tokens": 5_000, "service_tier": "batch"}
        report = runner("anthropic", srv, tmp_path).run([rq], mode="batch")
    assert report.responses[rq.custom_id].usage["service_tier"] == "batch"
    row = cost_csv(tmp_path).iloc[0]
    # the read is priced at the cache rate, then halved like every other class: (100 x 3 + 5,000 x 0.30 + 50 x 15) / 2
    assert row["usd"] == pytest.approx(0.5 * (100 * 3.0 + 5_000 * 0.3 + 50 * 15.0) / 1e6)
    assert row["usd"] == pytest.approx(0.001275)


def test_gemini_prompt_over_the_tier_threshold_prices_the_whole_request(tmp_path):
    over, under = request(PRO, "e"), request(PRO, "f")
    counts = {over.custom_id: 250_000, under.custom_id: 200_000}
    with FakeGemini() as srv:
        srv.usage_for = lambda cid: {"promptTokenCount": counts[cid], "cachedContentTokenCount": 50_000,
                                     "candidatesTokenCount": 1_000, "thoughtsTokenCount": 3_000,
                                     "totalTokenCount": counts[cid] + 4_000}
        report = runner("gemini", srv, tmp_path).run([over, under], mode="batch")
    usage = report.responses[over.custom_id].usage
    assert (usage["input"], usage["cache_read"], usage["output"], usage["reasoning"]) == (250_000, 50_000, 4_000, 3_000)
    table = cost_csv(tmp_path).set_index("price_row")
    # over 200K: every token at the long-context rates ($2.50 in, $0.25 cached, $15 out), half price in batch
    # except the cached input (Gemini's batch keeps the standard context-caching rate)
    high = table.loc["gemini-2.5-pro@2025-06-17 >200000 batch -50%", "usd"]
    assert high == pytest.approx((0.5 * (200_000 * 2.5 + 4_000 * 15.0) + 50_000 * 0.25) / 1e6)
    assert high == pytest.approx(0.2925)
    # exactly 200K is not over: base rates ($1.25, $0.125, $10)
    low = table.loc["gemini-2.5-pro@2025-06-17 batch -50%", "usd"]
    assert low == pytest.approx((0.5 * (150_000 * 1.25 + 4_000 * 10.0) + 50_000 * 0.125) / 1e6)


def test_gemini_online_usage_metadata(tmp_path):
    rq = request("gemini-2.5-flash", "g")
    with FakeGemini() as srv:
        srv.usage_for = lambda cid: {"promptTokenCount": 1_000, "cachedContentTokenCount": 400,
                                     "candidatesTokenCount": 100, "thoughtsTokenCount": 50, "totalTokenCount": 1_150}
        runner("gemini", srv, tmp_path).run([rq], mode="online")
    row = cost_csv(tmp_path).iloc[0]
    # Flash: 600 x $0.30 + 400 x $0.03 + (100 + 50 thinking) x $2.50
    assert row["usd"] == pytest.approx((600 * 0.3 + 400 * 0.03 + 150 * 2.5) / 1e6)
    assert row["reasoning_tokens"] == 50 and row["output_tokens"] == 150


def test_a_response_without_usage_is_unknown_not_zero(tmp_path):
    with_usage, without = request(GPT41, "h"), request(GPT41, "i")
    with FakeOpenAI() as srv:
        srv.usage_for = lambda ident: None if ident == "i" else {
            "prompt_tokens": 1_000, "completion_tokens": 10, "prompt_tokens_details": {"cached_tokens": 0}}
        run = runner("openai", srv, tmp_path)
        report = run.run([with_usage, without], mode="online")
    usage = report.responses[without.custom_id].usage
    assert usage["input"] is None and usage["output"] is None  # never 0
    table = cost_csv(tmp_path)
    row = table.iloc[0]
    assert row["requests"] == 2 and row["unknown"] == 1 and row["unknown_fields"] == "cache_read;input;output"
    assert row["input_tokens"] == 1_000  # the sum of the reported counts only
    assert row["usd"] == pytest.approx((1_000 * 2.0 + 10 * 8.0) / 1e6)  # the unpriced one is not in it
    assert "1 without the usage their price needs" in ledger.closing_line(run.cost_table())


def test_a_price_change_between_two_requests_of_one_run(tmp_path, monkeypatch):
    models = tmp_path / "models.yaml"
    models.write_text(yaml.safe_dump({"prices": [
        {"model": GPT41, "since": "2026-01-01", "source": "test", "input": 2.0, "output": 8.0},
        {"model": GPT41, "since": "2026-06-01", "source": "test", "input": 1.0, "output": 4.0}]}))
    monkeypatch.setenv("GAVEL_MODELS", str(models))
    clock = iter([dt.datetime(2026, 5, 31, 23, 0, tzinfo=dt.UTC),  # the run begins
                  dt.datetime(2026, 5, 31, 23, 59, tzinfo=dt.UTC), dt.datetime(2026, 6, 1, 0, 1, tzinfo=dt.UTC)])
    monkeypatch.setattr(ledger, "now", lambda: next(clock))
    first, second = request(GPT41, "j"), request(GPT41, "k")
    with FakeOpenAI() as srv:
        srv.usage_for = lambda ident: {"prompt_tokens": 1_000, "completion_tokens": 100,
                                       "prompt_tokens_details": {"cached_tokens": 0}}
        runner("openai", srv, tmp_path, concurrency=1).run([first, second], mode="online")
    table = cost_csv(tmp_path).set_index("price_row")["usd"]
    assert table[f"{GPT41}@2026-01-01"] == pytest.approx((1_000 * 2.0 + 100 * 8.0) / 1e6)  # $0.0028
    assert table[f"{GPT41}@2026-06-01"] == pytest.approx((1_000 * 1.0 + 100 * 4.0) / 1e6)  # $0.0014


def test_a_cached_rerun_costs_nothing_new_and_says_which_rows_were_cached(tmp_path):
    rq = [request(GPT41, f"m{i}") for i in range(3)]
    with FakeOpenAI() as srv:
        srv.usage_for = lambda ident: {"prompt_tokens": 1_000, "completion_tokens": 100,
                                       "prompt_tokens_details": {"cached_tokens": 0}}
        runner("openai", srv, tmp_path).run(rq[:2], mode="online")
        paid = (1_000 * 2.0 + 100 * 8.0) / 1e6
        assert cost_csv(tmp_path)["usd"].sum() == pytest.approx(2 * paid)
        again = runner("openai", srv, tmp_path)
        again.run(rq, mode="online")  # two from the cache, one new
    table = cost_csv(tmp_path).set_index("cached")
    assert table.loc[True, "requests"] == 2 and table.loc[True, "usd"] == 0.0
    assert table.loc[True, "usd_when_answered"] == pytest.approx(2 * paid)
    assert table.loc[False, "requests"] == 1 and table.loc[False, "usd"] == pytest.approx(paid)
    line = ledger.closing_line(again.cost_table())
    assert f"${paid:.4f} for 1 answered request(s) paid by this run; 2 from the cache ($0 new)" in line


def test_own_gpus_cost_nothing_per_token():
    priced = prices.cost("Qwen3-32B", {"input": 10**6, "output": 10**6}, "online", provider="vllm")
    assert priced.usd == 0.0 and priced.row == "own GPUs (vllm)"


@pytest.mark.parametrize("change, message", [
    (lambda d: d["prices"].pop(0), "model gpt-4.1-2025-04-14 (provider openai) has no price row"),
    (lambda d: d["prices"][1].update(input=-1.0), "prices entry 2 (gpt-5-2025-08-07): field 'input' is negative"),
    (lambda d: d["prices"][2].update(cahce_read=0.3), "prices entry 3 (claude-sonnet-4-20250514-thinking): unknown "
                                                      "field 'cahce_read'"),
    (lambda d: d["prices"].append({**d["prices"][0], "since": d["prices"][0]["since"]}),
     "model gpt-4.1-2025-04-14: rows since 2025-04-14 and since 2025-04-14 overlap"),
    (lambda d: d["prices"].insert(1, {**d["prices"][0], "since": dt.date(2024, 1, 1), "until": dt.date(2025, 5, 1)}),
     "model gpt-4.1-2025-04-14: rows since 2024-01-01 and since 2025-04-14 overlap"),
    (lambda d: d["prices"][0].update(model="gpt-9"), "prices entry 1 (gpt-9): model 'gpt-9' is not in the model"),
])
def test_a_malformed_price_table_is_one_error_naming_file_and_entry(change, message):
    data = yaml.safe_load(prices.PATH.read_text())
    change(data)
    with pytest.raises(prices.PriceTableError, match="^my-prices.yaml") as err:
        prices.parse(data, "my-prices.yaml")
    assert message in str(err.value)


def test_a_bad_price_row_in_the_models_file_is_one_line_on_the_command_line(tmp_path, monkeypatch, capsys):
    from gavel.cli import main
    from gavel.llm.records import write_requests

    models = tmp_path / "models.yaml"
    models.write_text(yaml.safe_dump({"prices": [{"model": GPT41, "since": "2026-01-01", "input": -2.0,
                                                  "output": 8.0}]}))
    monkeypatch.setenv("GAVEL_MODELS", str(models))
    write_requests(tmp_path / "r.jsonl", [request(GPT41, "n")])
    code = main(["stage", "--requests", str(tmp_path / "r.jsonl"), "--provider", "mock", "--workdir",
                 str(tmp_path / "w"), "--mode", "online"])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1
    assert err[0].startswith("error: gavel/core/prices.yaml") or err[0].startswith(f"error: {models}")
    assert "prices entry 1 (gpt-4.1-2025-04-14): field 'input' is negative" in err[0]


def test_dry_run_refuses_a_model_the_provider_does_not_serve(tmp_path, capsys):
    rq = [request("gpt-oss-20b-BF16", "o")]
    run = StageRunner("judge", get_provider("openai", api_key=KEY), tmp_path / "run", progress=False)
    with pytest.raises(ProviderError, match="provider openai does not serve gpt-oss-20b-BF16 .it is served by vllm"):
        run.dry_run(rq, show=False)
    table = run.dry_run(rq, show=False, allow_unserved=True)
    assert "does not serve gpt-oss-20b-BF16" in capsys.readouterr().err and len(table) == 1


def test_dry_run_estimates_output_from_earlier_answers_not_from_the_cap(tmp_path):
    mock = get_provider("mock", answer=lambda r: "x" * 400)  # 100 output tokens (the mock counts 4 chars a token)
    run = StageRunner("judge", mock, tmp_path / "run", progress=False)
    run.run([request(GPT41, f"p{i}") for i in range(3)], mode="online")
    new = [request(GPT41, f"q{i}") for i in range(2)]
    capped = [Request(**{**r.__dict__, "params": {"max_tokens": 30_000}}) for r in new]
    for reqs in (new, capped):
        est = run.dry_run(reqs, mode="online", show=False).iloc[0]
        assert est["output_tokens_est"] == 200 and est["output_from"] == "this stage's 3 earlier answers"
        # priced at GPT-4.1's list price (the mock stands in for the model's provider)
        assert est["cost_usd_est"] == pytest.approx((est["input_tokens"] * 2.0 + 200 * 8.0) / 1e6)


def test_dry_run_prices_the_mode_the_run_will_use(tmp_path):
    local_like = get_provider("mock")
    local_like.supports_batch = False  # a provider without a batch API runs online whatever is asked
    run = StageRunner("judge", local_like, tmp_path / "run", progress=False)
    table = run.dry_run([request(GPT41, "r")], mode="batch", expected_output_tokens=100, show=False)
    assert table.attrs["mode"] == "online" and table.iloc[0]["mode"] == "online"
    assert table.iloc[0]["price_row"] == f"{GPT41}@2025-04-14"  # no batch discount


def test_estimate_beside_actual_after_a_stage_run(tmp_path, capsys):
    from gavel.cli import main
    from gavel.llm.records import write_requests

    write_requests(tmp_path / "r.jsonl", [request(GPT41, f"s{i}") for i in range(4)])
    args = ["stage", "--requests", str(tmp_path / "r.jsonl"), "--provider", "mock", "--workdir", str(tmp_path / "w"),
            "--mode", "online"]
    assert main(args + ["--dry-run"]) == 0
    assert main(args) == 0
    out = capsys.readouterr().out
    assert "cost: $" in out and "dry-run estimate $" in out and "actual/estimate" in out
    assert (tmp_path / "w" / "cost.csv").exists()


def test_evaluate_dry_run_gives_one_total_and_the_run_its_ledger(tmp_path, fixture_root, monkeypatch, capsys):
    from test_pipeline import ITEMS, MODEL, REF, scripted

    from gavel.llm.providers.mock import MockProvider
    from gavel.runs import costing, pipeline

    monkeypatch.setenv("GAVEL_RELEASE", str(fixture_root))
    settings = pipeline.Settings(extractor=GPT41, judge=GPT41, items=ITEMS)
    summaries, refs = [("model-x", "1", MODEL)], {"1": REF}
    table = pipeline.dry_run(summaries, refs, MockProvider(answer=scripted), settings, tmp_path)
    printed = capsys.readouterr().out
    low, high = table.attrs["total"]
    ranges = table.attrs["range"].set_index("stage")
    assert low == pytest.approx(table["cost_usd_est"].sum()) and high == pytest.approx(low + ranges["usd_high"].sum())
    assert ranges.loc["compare", "requests_high"] == len(ITEMS) and ranges.loc["compare", "requests_low"] == 0
    assert ranges.loc["compare", "output_from"].startswith("release: ")  # the release's recorded judgments
    assert set(table.loc[table["stage"] == "extract", "output_from"]) == {costing.recorded_lengths()["extract"][1]}
    assert f"total: ${low:.2f} to ${high:.2f}, priced as online" in printed
    tables = pipeline.evaluate(summaries, refs, MockProvider(answer=scripted), tmp_path, settings)
    cost = pd.read_csv(tmp_path / "cost.csv")
    assert set(cost["stage"]) >= {"extract", "compare", "style"} and (cost["usd"] > 0).all()
    line = costing.cost_line({"runs": [tables]}, tmp_path)
    assert f"cost: ${cost['usd'].sum():.4f}" in line and "dry-run estimate $" in line


def test_own_gpus_are_priced_by_the_slurm_jobs_elapsed_time(tmp_path, monkeypatch, capsys):
    """`stage --slurm-job J` (what the vLLM sbatch template passes): sacct's elapsed time x GPUs at the
    gpu_hour_usd set in the models file. sacct here is a stand-in script answering as SLURM's does."""
    from gavel.cli import main
    from gavel.llm.records import write_requests

    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "sacct").write_text("#!/bin/sh\necho '5400|billing=8,cpu=8,gres/gpu=2,mem=64G,node=1'\n")
    (bin_dir / "sacct").chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}:{__import__('os').environ['PATH']}")
    models = tmp_path / "models.yaml"
    models.write_text(yaml.safe_dump({"gpu_hour_usd": {"vllm": 2.5}}))
    monkeypatch.setenv("GAVEL_MODELS", str(models))
    write_requests(tmp_path / "r.jsonl", [request("Qwen3-32B", "t")])
    code = main(["stage", "--requests", str(tmp_path / "r.jsonl"), "--provider", "mock", "--workdir",
                 str(tmp_path / "w"), "--mode", "online", "--slurm-job", "4242"])
    assert code == 0
    table = pd.read_csv(tmp_path / "w" / "cost.csv").set_index("mode")
    # 5,400 s = 1.5 h x 2 GPUs = 3 GPU-hours x $2.50
    assert table.loc["gpu-time", "gpu_hours"] == pytest.approx(3.0)
    assert table.loc["gpu-time", "usd"] == pytest.approx(7.5)
    assert "SLURM job 4242: 5400 s x 2 GPU(s)" in table.loc["gpu-time", "price_row"]
    assert table.loc["online", "usd"] == 0.0  # an open-weight model's tokens cost nothing per token
    assert "cost: $7.5000" in capsys.readouterr().out


def test_documents_commands_close_with_their_cost(tmp_path, capsys):
    from agent_script import MODEL, corpus  # the agent tests' fake case

    from gavel.cli import main
    from gavel.documents.corpus import write_folder

    case = write_folder(corpus(), tmp_path / "cases" / "fake-1")
    out = tmp_path / "out"
    assert main(["documents", "chunked", str(case), "--provider", "mock", "--model", MODEL, "--out", str(out),
                 "--items", "judge_name", "--chunk-tokens", "500"]) == 0
    last = capsys.readouterr().out.strip().splitlines()[-1]
    assert last.startswith("cost: $") and str(out / MODEL / "fake-1" / "llm" / "cost.csv") in last
    assert main(["documents", "agent", str(case), "--provider", "mock", "--model", MODEL, "--out", str(out),
                 "--config", "grouped/03_judge_info", "--max-steps", "2"]) == 0
    assert capsys.readouterr().err.strip().splitlines()[-1].startswith("cost: $")


def test_document_extraction_in_dollars_from_the_release(shared_rel):
    """Real data: the release's token statistics priced per case (our computation, labelled and dated)."""
    from gavel.paper import extraction_cost

    t = extraction_cost.table(shared_rel)
    key = ["method", "configuration", "tokens_of", "priced_as"]
    rows = t.set_index(key)
    qwen = rows.loc[("chunk_by_chunk", "all items per chunk", "Qwen3-32B", GPT41)]
    # GPT-4.1 has no long-context tier: per case = mean input x $2 + mean output x $8, batch half of it
    assert qwen["usd_per_case"] == pytest.approx((qwen["input_tokens_per_case"] * 2.0
                                                  + qwen["output_tokens_per_case"] * 8.0) / 1e6)
    assert qwen["usd_per_case_batch"] == pytest.approx(qwen["usd_per_case"] / 2)
    # the paper's 2.80M tokens per case for 26 Qwen agents (release-facts rule 7)
    agents = rows.loc[("agent", "individual", "Qwen3-30B-A3B-Thinking-2507", GPT41)]
    assert (agents["input_tokens_per_case"] + agents["output_tokens_per_case"]) / 1e6 == pytest.approx(2.80, abs=0.005)
    assert pd.isna(agents["usd_per_case_batch"])  # an agent's calls go online
    # end-to-end requests average ~180K tokens, some batches over 200K: Gemini 2.5 Pro's tier raises the price
    e2e = rows.loc[("end_to_end", "all items per request", GPT41, PRO)]
    flat = (e2e["input_tokens_per_case"] * 1.25 + e2e["output_tokens_per_case"] * 10.0) / 1e6
    assert e2e["usd_per_case"] > flat and ">200000" in e2e["price_row"]
    assert set(t["prices_checked"]) == {"2026-11-27"} and t["note"].str.startswith("our computation").all()
    committed = pd.read_csv(prices.PATH.parents[2] / "data" / "results" / "document_extraction_cost.csv")
    assert len(committed) == len(t)


def test_vllm_batch_keeps_its_usage_and_costs_nothing_per_token(tmp_path):
    """vLLM offline batches (the fake `vllm run-batch` answers OpenAI-format lines with usage 11 in / 7 out):
    the usage is kept, the mode is batch, and your own GPUs cost $0 a token."""
    import sys
    from pathlib import Path

    fake = Path(__file__).parent / "fakes" / "vllm_run_batch.py"
    p = get_provider("vllm-batch", folder=tmp_path / "batches", command=f"{sys.executable} {fake}")
    rq = [request("Qwen3-14B", f"u{i}") for i in range(3)]
    report = StageRunner("judge", p, tmp_path / "run", poll_interval=0.05, progress=False).run(rq)
    usage = report.responses[rq[0].custom_id].usage
    assert (usage["input"], usage["output"], usage["mode"]) == (11, 7, "batch")
    assert usage["cache_read"] is None  # vLLM gave no prompt_tokens_details: unknown, not 0
    row = cost_csv(tmp_path).iloc[0]
    assert (row["provider"], row["mode"], row["requests"], row["input_tokens"]) == ("vllm", "batch", 3, 33)
    assert row["usd"] == 0.0 and row["price_row"] == "own GPUs (vllm)" and row["unknown"] == 0


# ---------- usage that is not plausible (issue 37, section 4) ----------
def test_a_400_digit_usage_count_is_unknown_with_its_reason_and_reruns_go_on(tmp_path):
    rq = [request(GPT41, "huge"), request(GPT41, "fine")]
    with FakeOpenAI() as srv:
        srv.usage_for = lambda ident: {"prompt_tokens": 10**400 if ident == "huge" else 1_000, "completion_tokens": 10,
                                       "prompt_tokens_details": {"cached_tokens": 0}}
        runner("openai", srv, tmp_path).run(rq, mode="online")
        for _ in range(2):  # every rerun reads the cached answer: it must not end in OverflowError
            again = runner("openai", srv, tmp_path)
            again.run(rq, mode="online")
            again.dry_run(rq, mode="online", show=False)
    table = cost_csv(tmp_path).set_index("price_row")
    bad = table.loc["usage not plausible: input is over 10,000,000 tokens"]
    assert bad["unknown"] == 1 and bad["unknown_fields"] == "usage" and pd.isna(bad["input_tokens"])
    assert pd.isna(bad["usd_when_answered"])  # never priced
    assert table.loc[f"{GPT41}@2025-04-14", "usd_when_answered"] == pytest.approx((1_000 * 2.0 + 10 * 8.0) / 1e6)


@pytest.mark.parametrize("usage, why", [
    ({"input": 100, "cache_read": 500, "output": 10}, "cache_read + cache_write is over input"),
    ({"input": 10**18, "cache_read": 0, "output": 10}, "input is over 10,000,000 tokens"),
    ({"input": 100, "cache_read": 0, "output": 10**18}, "output is over 10,000,000 tokens"),
    ({"input": 100, "cache_read": 0, "output": -5}, "output is negative"),
    ({"input": "100", "cache_read": 0, "output": 5}, "input is not a number of tokens"),
    ({"input": float("nan"), "cache_read": 0, "output": 5}, "input is not a number of tokens"),
    ({"input": 100, "cache_read": 0, "output": float("inf")}, "output is over 10,000,000 tokens"),
    ({"input": 100, "cache_read": 0, "output": 5, "reasoning": 9}, "reasoning is over output"),
    ({"input": 100, "cache_write": 10, "cache_write_5m": 8, "cache_write_1h": 8, "output": 5},
     "cache_write_5m + cache_write_1h is over cache_write"),
    ("not a record", "usage is not a record of token counts"),
])
def test_usage_that_is_not_plausible_is_unknown_never_priced(usage, why):
    for model in (GPT41, SONNET, PRO):
        priced = prices.cost(model, usage, "online")
        assert priced.usd is None and priced.row == f"usage not plausible: {why}" and priced.unknown == ("usage",)


@pytest.mark.parametrize("written, row, usd", [
    ({"prompt_tokens": 1000.0, "completion_tokens": 10.0, "prompt_tokens_details": {"cached_tokens": 0.0}}, "",
     (1_000 * 2.0 + 10 * 8.0) / 1e6),
    ({"prompt_tokens": 1000, "completion_tokens": -5}, "usage not plausible: output is negative", None),
    ({"prompt_tokens": 1000.5, "completion_tokens": 10}, "usage not plausible: input is not a number of tokens", None),
    ({"prompt_tokens": 1000, "completion_tokens": 10, "completion_tokens_details": {"reasoning_tokens": -1}},
     "usage not plausible: reasoning is negative", None),
])
def test_a_count_written_as_a_whole_float_is_that_count_and_a_bad_one_is_named(tmp_path, written, row, usd):
    """Issue 46 (5): a count written ``1000.0`` made the request unknown (its input quietly missing), and a
    negative count was dropped without the documented reason. Through the real SDK and a fake server."""
    rq = request(GPT41, "float")
    with FakeOpenAI() as srv:
        srv.usage_for = lambda ident: written
        runner("openai", srv, tmp_path).run([rq], mode="online")
    got = cost_csv(tmp_path).iloc[0]
    if usd is None:
        assert got["price_row"] == row and pd.isna(got["usd"]) and got["unknown"] == 1
    else:
        assert got["unknown"] == 0 and got["usd"] == pytest.approx(usd) and got["input_tokens"] == 1000, dict(got)


@pytest.mark.parametrize("reader, body, field, expected", [
    ("anthropic", {"usage": {"input_tokens": 900.0, "cache_read_input_tokens": 100, "output_tokens": 7.0}},
     "input", 1000),
    ("anthropic", {"usage": {"input_tokens": 900, "cache_read_input_tokens": -100, "output_tokens": 7}},
     "input", -100),
    ("gemini", {"usageMetadata": {"promptTokenCount": 50.0, "candidatesTokenCount": 5, "thoughtsTokenCount": 2.0}},
     "output", 7),
    ("gemini", {"usageMetadata": {"promptTokenCount": 50, "candidatesTokenCount": -5}}, "output", -5),
    ("openai", {"usage": {"prompt_tokens": True, "completion_tokens": 3}}, "input", True),
])
def test_each_providers_counts_read_whole_floats_and_keep_bad_counts_to_name_them(reader, body, field, expected):
    from gavel.llm import usage

    got = getattr(usage, reader)(body)
    assert got[field] == expected and type(got[field]) is type(expected)
    if not isinstance(expected, bool) and expected >= 0:
        assert prices.implausible(got) is None
    else:
        assert prices.implausible(got).startswith(f"{field} is ")


def test_cached_tokens_over_prompt_tokens_are_not_a_negative_cost(tmp_path):
    rq = request(GPT5, "neg")
    with FakeOpenAI() as srv:
        srv.usage_for = lambda ident: {"prompt_tokens": 100, "completion_tokens": 10,
                                       "prompt_tokens_details": {"cached_tokens": 90_000}}
        runner("openai", srv, tmp_path).run([rq], mode="online")
    row = cost_csv(tmp_path).iloc[0]
    assert row["price_row"] == "usage not plausible: cache_read + cache_write is over input"
    assert pd.isna(row["usd"]) and row["unknown"] == 1


def test_missing_usage_is_an_empty_cost_not_zero(tmp_path):
    rq = request(GPT41, "none")
    with FakeOpenAI() as srv:
        srv.usage_for = lambda ident: None
        runner("openai", srv, tmp_path).run([rq], mode="online")
    text = (tmp_path / "run" / "cost.csv").read_text()
    row = cost_csv(tmp_path).iloc[0]
    assert row["unknown"] == 1 and pd.isna(row["usd"]) and pd.isna(row["usd_when_answered"]), text
    assert "0.0" not in text.splitlines()[1].split(",")


@pytest.mark.parametrize("field, value", [("input", float("nan")), ("output", float("inf")),
                                          ("batch_discount", float("nan")), ("cache_read", -float("inf"))])
def test_a_price_that_is_not_finite_is_refused(field, value):
    data = yaml.safe_load(prices.PATH.read_text())
    data["prices"][0][field] = value
    with pytest.raises(prices.PriceTableError) as err:
        prices.parse(data, "my-prices.yaml")
    assert str(err.value).startswith(f"my-prices.yaml, prices entry 1 (gpt-4.1-2025-04-14): field '{field}' must be "
                                     f"a finite number")


# ---------- the prices of the paper's models (issue 39, section 2): golden figures with their source ----------
FLASH = "gemini-2.5-flash"


@pytest.mark.parametrize("model, usage, mode, usd", [
    # Gemini API pricing (ai.google.dev/gemini-api/docs/pricing, read 2026-11-27): context caching 2.5 Pro
    # $0.125 per M up to 200K prompt tokens, $0.25 over; 2.5 Flash $0.03 (gavel had 0.31 / 0.625 / 0.075)
    (PRO, {"input": 100_000, "cache_read": 80_000, "output": 1_000}, "online",
     (20_000 * 1.25 + 80_000 * 0.125 + 1_000 * 10.0) / 1e6),
    (PRO, {"input": 300_000, "cache_read": 200_000, "output": 1_000}, "online",
     (100_000 * 2.5 + 200_000 * 0.25 + 1_000 * 15.0) / 1e6),
    (FLASH, {"input": 100_000, "cache_read": 80_000, "output": 1_000}, "online",
     (20_000 * 0.3 + 80_000 * 0.03 + 1_000 * 2.5) / 1e6),
    # Gemini Batch: input and output at half price, context caching at its standard rate
    (PRO, {"input": 100_000, "cache_read": 80_000, "output": 1_000}, "batch",
     (0.5 * 20_000 * 1.25 + 80_000 * 0.125 + 0.5 * 1_000 * 10.0) / 1e6),
    (FLASH, {"input": 100_000, "cache_read": 80_000, "output": 1_000}, "batch",
     (0.5 * 20_000 * 0.3 + 80_000 * 0.03 + 0.5 * 1_000 * 2.5) / 1e6),
    # OpenAI Batch tab (developers.openai.com/api/docs/pricing): GPT-5 cached input $0.0625, half the standard
    (GPT5, {"input": 100_000, "cache_read": 80_000, "output": 1_000}, "batch",
     (20_000 * 0.625 + 80_000 * 0.0625 + 1_000 * 5.0) / 1e6),
    # GPT-4.1: the Batch tab gives no cached-input rate: the standard $0.50 (an upper bound), the rest halved
    (GPT41, {"input": 100_000, "cache_read": 80_000, "output": 1_000}, "batch",
     (20_000 * 1.0 + 80_000 * 0.5 + 1_000 * 4.0) / 1e6),
    # Anthropic (platform.claude.com pricing, batch processing): the batch discount applies to cache reads and
    # writes too: Sonnet 4 at half of $3 / $0.30 read / $3.75 5-minute write / $15
    (SONNET, {"input": 100_000, "cache_read": 50_000, "cache_write_5m": 10_000, "cache_write_1h": 0,
              "cache_write": 10_000, "output": 1_000}, "batch",
     0.5 * (40_000 * 3.0 + 50_000 * 0.3 + 10_000 * 3.75 + 1_000 * 15.0) / 1e6),
])
def test_corrected_prices_and_each_providers_batch_rule_on_cached_input(model, usage, mode, usd):
    assert prices.cost(model, usage, mode).usd == pytest.approx(usd)


def test_gpt5_takes_at_most_272k_input_tokens_and_end_to_end_extraction_does_not_fit(tmp_path, shared_rel):
    """OpenAI's GPT-5 model page: 400,000-token context window, 128,000 max output tokens; the API takes at most
    272,000 input tokens. The release's end-to-end requests (up to 307K-318K tokens a request) do not fit."""
    from gavel.paper import extraction_cost

    assert extraction_cost.input_limit(GPT5) == 272_000 and extraction_cost.input_limit(PRO) == 1_048_576
    rows = extraction_cost.table(shared_rel).set_index(["method", "configuration", "tokens_of", "priced_as"])
    e2e = rows.xs("end_to_end", level="method")
    assert not e2e.xs(GPT5, level="priced_as")["fits_context"].iloc[0]
    assert e2e.xs(GPT41, level="priced_as")["fits_context"].iloc[0]
    # Sonnet 4: its >200K price tier is the 1M-context beta's, and so is the input limit fits_context reads
    sonnet = e2e.xs(SONNET, level="priced_as").iloc[0]
    assert ">200000" in sonnet["price_row"] and sonnet["fits_context"]
    # the dry run counts a 280K-token GPT-5 prompt as too long even with a small output cap
    run = StageRunner("judge", get_provider("mock"), tmp_path / "run", progress=False)
    big = Request(stage="judge", model=GPT5, messages=[{"role": "user", "content": "word " * 280_000}],
                  params={"max_tokens": 100}, case_id="1")
    est = run.dry_run([big], mode="online", show=False)
    assert list(est.attrs["too_long"]) == [big.custom_id]


# ---------- a pinned, offline cross-check against genai-prices' bundled data (issue 39, section 2) ----------
GENAI_PRICES = "0.2.3"  # the dev extra's pin (pyproject.toml); its bundled data, never fetched
GENAI_MODELS = {GPT41: ("openai", GPT41), GPT5: ("openai", GPT5), SONNET: ("anthropic", "claude-sonnet-4-20250514"),
                "claude-opus-4-1-20250805-thinking": ("anthropic", "claude-opus-4-1-20250805"),
                PRO: ("google", PRO), FLASH: ("google", FLASH)}
#: every disagreement, the source that settles it (docs/cost.md, "Checked against genai-prices"), and what
#: gavel's price is in genai-prices' terms
DISAGREEMENTS = {
    "anthropic batch": "Anthropic's batch processing is half price on every token class, cache reads and writes "
                       "included; genai-prices 0.2.3 has no batch price for Claude",
    "sonnet 4 over 200K": "Anthropic's long context pricing: Sonnet 4 prompts over 200K input tokens (1M-context "
                          "beta) at $6 / $22.50; genai-prices 0.2.3 has no tier for Sonnet 4",
}


def _grid():
    for model in GENAI_MODELS:
        for mode in ("online", "batch"):
            for cache in ("none", "write_5m", "write_1h", "read"):
                for n in (100_000, 300_000):  # below and above the 200K tiers
                    yield model, mode, cache, n


def _why_they_differ(model, mode, n):
    reasons = []
    if GENAI_MODELS[model][0] == "anthropic" and mode == "batch":
        reasons.append("anthropic batch")
    if model == SONNET and n > 200_000:
        reasons.append("sonnet 4 over 200K")
    return reasons


def test_gavels_prices_agree_with_genai_prices_but_for_the_documented_disagreements():
    genai_prices = pytest.importorskip("genai_prices", reason="the dev extra's genai-prices (pyproject.toml)")
    import warnings
    from importlib.metadata import version

    assert version("genai-prices") == GENAI_PRICES
    when = dt.datetime(2026, 11, 27, tzinfo=dt.UTC)
    doc = (prices.PATH.parents[2] / "docs" / "cost.md").read_text(encoding="utf-8")
    unexplained, seen = [], set()
    for model, mode, cache, n in _grid():
        k = n // 2
        ours = {"input": n, "output": 2_000, "cache_read": 0, "cache_write": 0, "cache_write_5m": 0, "cache_write_1h": 0}
        theirs = {"input_tokens": n, "output_tokens": 2_000}
        if cache == "read":
            ours["cache_read"] = theirs["cache_read_tokens"] = k
        elif cache != "none":
            ours["cache_write"] = ours[f"cache_{cache}"] = k
            theirs["cache_write_tokens"] = theirs[f"cache_{cache}_tokens"] = k
        provider, ref = GENAI_MODELS[model]
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            theirs_usd = float(genai_prices.calc_price(
                genai_prices.Usage(**theirs), ref, provider_id=provider, genai_request_timestamp=when,
                price_context={"processing": "batch"} if mode == "batch" else None).total_price)
        ours_usd = prices.cost(model, ours, mode, when=when).usd
        reasons = _why_they_differ(model, mode, n)
        if not reasons:
            if ours_usd != pytest.approx(theirs_usd, abs=1e-12):
                unexplained.append((model, mode, cache, n, ours_usd, theirs_usd))
            continue
        seen.update(reasons)
        # the explained difference, recomputed: genai-prices' price with the documented rule applied
        expected = theirs_usd
        if "sonnet 4 over 200K" in reasons:  # every input class at twice its rate, output $15 -> $22.50
            expected = 2 * (theirs_usd - 2_000 * 15.0 / 1e6) + 2_000 * 22.5 / 1e6
        if "anthropic batch" in reasons:
            expected *= 0.5
        if ours_usd != pytest.approx(expected, rel=1e-9):
            unexplained.append((model, mode, cache, n, ours_usd, theirs_usd))
    assert unexplained == []
    assert seen == set(DISAGREEMENTS)
    for why in DISAGREEMENTS.values():
        assert why in " ".join(doc.replace("**", "").split()), why


def test_the_dry_run_of_gpt5_at_high_effort_states_its_reasoning_allowance(tmp_path, capsys):
    """GPT-5 bills hidden reasoning as output: an answer length measured elsewhere (the release keeps answers,
    not reasoning) gets an allowance up to the output cap, named; this stage's own answers include it."""
    run = StageRunner("judge", get_provider("mock", answer=lambda r: "x" * 400), tmp_path / "run", progress=False)
    rq = [Request(stage="judge", model=GPT5, messages=[{"role": "user", "content": f"q{i}"}], params={"max_tokens": 5_000},
                  case_id=str(i)) for i in range(2)]
    est = run.dry_run(rq, mode="batch", expected_output_tokens=200).iloc[0]
    printed = capsys.readouterr().out
    assert "gpt-5-2025-08-07 bills hidden reasoning tokens: reasoning effort high: + 4,800 hidden reasoning tokens" \
           in printed
    assert est["output_tokens_est"] == 2 * 5_000  # 200 answer + 4,800 allowance, each
    run.run(rq[:1], mode="batch")  # measured: the stage's own answers (their output counts reasoning in)
    est = run.dry_run(rq[1:], mode="batch").iloc[0]
    assert est["output_tokens_est"] == 100 and "included in the measured answers" in capsys.readouterr().out
    # a model without reasoning gets none
    plain = run.dry_run([Request(stage="judge", model=GPT41, messages=[{"role": "user", "content": "q"}])],
                        mode="batch", expected_output_tokens=200, show=False)
    assert plain.iloc[0]["output_tokens_est"] == 200 and plain.attrs["reasoning"] == {}


def test_with_repeats_the_closing_line_names_the_all_repeats_ledger_with_its_repeat_column(tmp_path):
    """`--repeats 2`: the line named cost.csv (repeat 1 only) as the ledger, and cost_all_repeats.csv had no
    repeat column to tell the repeats apart."""
    from gavel.runs import costing

    since = dt.datetime(2020, 1, 1, tzinfo=dt.UTC)

    def one(ident):
        rq = request(GPT41, ident)
        usage = {"input": 1_000, "output": 100, "cache_read": 0, "answered_at": "2026-11-27T10:00:00+00:00"}
        return ledger.request_row("judge", rq, Response(rq.custom_id, "succeeded", "x", usage=usage), "openai",
                                  since, "online")
    runs = [{"cost": ledger.table([one("a"), one("b")])}, {"cost": ledger.table([one("c")])}]
    line = costing.cost_line({"runs": runs}, tmp_path)
    paid = (1_000 * 2.0 + 100 * 8.0) / 1e6
    assert line.endswith(f"ledger {tmp_path / 'cost_all_repeats.csv'}") and "cost.csv;" not in line
    assert f"${3 * paid:.4f} for 3 answered request(s)" in line
    table = pd.read_csv(tmp_path / "cost_all_repeats.csv")
    assert table.columns[0] == "repeat" and table.groupby("repeat")["requests"].sum().to_dict() == {1: 2, 2: 1}
    single = costing.cost_line({"runs": runs[:1]}, tmp_path)
    assert single.endswith(f"ledger {tmp_path / 'cost.csv'}")


def test_the_headline_forecast_leaves_out_what_the_cache_will_answer(tmp_path):
    """The local model's headline forecast counted every request, those its caches already answer too."""
    from gavel.core.items import item
    from gavel.llm import pace
    from gavel.llm.providers.mock import MockProvider
    from gavel.runs import forecast, pipeline
    from gavel.runs.stand_in import stand_in_answer

    model = "SmolLM2-135M-Instruct"
    summaries = [("model-x", "1", "The ACLU sued the city on March 3, 2020."),
                 ("model-x", "2", "The court entered a consent decree in 2021.")]
    refs = {"1": "On March 3, 2020 the ACLU sued the city.", "2": "A consent decree was entered in 2021."}
    settings = pipeline.Settings(extractor=model, judge=model, items=(item("filing_date"),))
    speed = pace.Pace(prompt_s=0.0, generate_s=0.0, request_s=1.0)
    provider = MockProvider(answer=stand_in_answer)
    planned = len(forecast.requests(summaries, refs, settings))
    pipeline.evaluate(summaries[:1], refs, provider, tmp_path, settings)  # case 1 answered: in the caches
    seconds, n = forecast.forecast(summaries, refs, settings, speed, provider, tmp_path)
    every_s, every = forecast.forecast(summaries, refs, settings, speed)  # without the folder: all of them
    assert 0 < n < planned == every and 0 < seconds < every_s
    line = forecast.announcer(summaries, refs, settings, provider, out=tmp_path, speed=speed).say(speed)
    assert f"for at most {n} requests to send; {planned - n} answered from the cache" in line


def test_the_stage_dry_run_of_a_reasoning_model_with_nothing_measured_says_what_max_tokens_bounds_it_to(tmp_path,
                                                                                                    capsys):
    """`gavel stage --dry-run` showed only the bound (the whole output cap allowed as hidden reasoning). With
    nothing of the stage measured it now says so and what max_tokens N in the requests would bound the total to;
    each figure is what a dry run of the same requests capped at N prices. Once answers exist it says neither."""
    run = StageRunner("judge", get_provider("mock", answer=lambda r: "x" * 400), tmp_path / "run", progress=False)

    def requests(cap):
        return [Request(stage="judge", model=GPT5, messages=[{"role": "user", "content": f"q{i} " * 50}],
                        params={"max_tokens": cap}, case_id=str(i)) for i in range(3)]
    est = run.dry_run(requests(100_000), mode="batch")
    printed = capsys.readouterr().out
    said = est.attrs["unmeasured"][GPT5]
    assert list(said) == [2_000, 8_000, 32_000]
    for cap, usd in said.items():
        capped = run.dry_run(requests(cap), mode="batch", show=False)
        assert float(capped["cost_usd_est"].sum()) == pytest.approx(usd, rel=1e-12)
        assert f"${usd:,.2f} (N = {cap:,})" in printed
    assert f"{GPT5}: no measured usage (no answers of this stage in {run.cache.folder} yet), so no central " \
           "estimate: the total above is a bound; max_tokens N in the requests bounds it at " in printed
    run.run(requests(100_000)[:1], mode="batch")  # measured: the next dry run prices the answers it saw
    est = run.dry_run(requests(100_000)[1:], mode="batch")
    assert est.attrs["unmeasured"] == {} and "no measured usage" not in capsys.readouterr().out
