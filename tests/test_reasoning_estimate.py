"""A price you can plan with (issue 44, section 4): a reasoning model's dry run prints, beside the bound (the
whole output cap allowed as hidden reasoning), a central estimate from measured usage -- the run's own first
round, or an earlier run's ledger for the same model and stage (``--usage-from``) -- named with its source; the
hidden reasoning on its own line ("bills hidden reasoning tokens", as docs/cost.md says); where nothing is
measured, that, and what ``--max-tokens N`` would bound the stage to; a running batch re-forecasts."""

import math
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gavel.core import prices
from gavel.core.items import item
from gavel.llm import measured
from gavel.llm.providers.mock import MockProvider
from gavel.llm.records import Request
from gavel.llm.runner import StageRunner
from gavel.runs import costing, pipeline

GPT5, GPT41 = "gpt-5-2025-08-07", "gpt-4.1-2025-04-14"
ITEMS = (item("Filing Date"), item("Name of the Monitor"))
REF = "The filing was on March 3, 2020. The monitor is Ann Lee."
SUMMARIES = [("model-x", str(c), f"The filing was on March {c + 1}, 2020. The monitor is Bob Ray.") for c in range(3)]
REFS = {str(c): REF for c in range(3)}
HEADER = ("stage,model,provider,mode,cached,price_row,requests,input_tokens,cache_read_tokens,cache_write_5m_tokens,"
          "cache_write_1h_tokens,cache_write_tokens,output_tokens,reasoning_tokens,gpu_hours,usd,usd_when_answered,"
          "unknown,unknown_fields\n")


@pytest.fixture(autouse=True)
def release_lengths(monkeypatch):
    """The release's answer lengths as the dry run measures them (no release needed)."""
    monkeypatch.setattr(costing, "recorded_lengths", lambda: {"extract": (160.0, "release: recorded extraction answers"),
                                                              "compare": (40.0, "release: recorded judgments"),
                                                              "values": 12.0})


def _dry(tmp_path, capsys, **kw):
    s = pipeline.Settings(extractor=GPT5, judge=GPT41, items=ITEMS, mode="batch", **kw)
    table = pipeline.dry_run(SUMMARIES, REFS, pipeline.provider("openai"), s, tmp_path / "out")
    return table, capsys.readouterr().out


def test_nothing_measured_says_so_prints_the_reasoning_line_and_what_max_tokens_bounds_it_to(tmp_path, capsys):
    table, out = _dry(tmp_path, capsys)
    assert "gpt-5-2025-08-07 bills hidden reasoning tokens (extract): reasoning effort high: the bound allows " \
           "127,840 of its 128,000 output tokens a request as hidden reasoning (99.9%)" in out
    assert "gpt-5-2025-08-07 extract: no measured usage" in out and "no central estimate" in out
    assert table.attrs["reasoning"]["central"] is None
    # what the line says --max-tokens 8,000 bounds extraction to is what a dry run with --max-tokens 8000 prices
    said = [x for x in table.attrs["reasoning"]["unmeasured"] if x.startswith(f"{GPT5} extract")][0]
    bound = float(said.split("$")[2].split(" (N = 8,000)")[0].replace(",", ""))
    capped, _ = _dry(tmp_path / "capped", capsys, max_tokens=8000)
    assert float(capped[capped["stage"] == "extract"]["cost_usd_est"].sum()) == pytest.approx(bound, abs=0.005)


def test_an_earlier_runs_ledger_gives_the_central_estimate_named_with_its_source(tmp_path, capsys):
    earlier = tmp_path / "earlier"
    earlier.mkdir()
    (earlier / "cost.csv").write_text(HEADER + f"extract,{GPT5},openai,batch,False,x,100,100000,0,,,,250000,200000,,1,1,0,\n"
                                      f"residual,{GPT5},openai,batch,False,x,10,9000,0,,,,30000,,,1,1,0,\n"
                                      f"extract,{GPT5},openai,batch,False,x,-4,1,0,,,,2,1,,1,1,0,\n"
                                      f"extract,{GPT41},openai,batch,False,x,7,1,0,,,,99999,1,,1,1,0,\n")
    table, out = _dry(tmp_path, capsys, usage_from=(str(earlier),))
    assert (f"measured 2,500 output tokens a request, 2,000 of them hidden reasoning (80%), over 100 answers of the "
            f"ledger {earlier / 'cost.csv'}") in out
    assert "measured 3,000 output tokens a request, reasoning not counted apart by the provider" in out
    assert f"skipped {earlier / 'cost.csv'}: record 3: requests or output_tokens is not a count" in out
    low, high = table.attrs["reasoning"]["central"]
    assert f"central estimate: ${low:.2f} to ${high:.2f}" in out
    # extraction at 2,500 output tokens a request, priced as the batch will be
    t = table[table["stage"] == "extract"]
    n, n_in = int(t["requests"].sum()), float(t["input_tokens"].sum())
    per = prices.cost(GPT5, {"input": n_in / n, "output": 2500}, "batch").usd
    style = float(table[table["stage"] == "style"]["cost_usd_est"].sum())
    assert low == pytest.approx(n * per + style, rel=1e-9)
    assert low < table.attrs["total"][0] / 10  # the bound: the whole cap as reasoning


def test_the_runs_own_first_round_is_the_measurement(tmp_path, capsys):
    s = pipeline.Settings(extractor=GPT5, judge=GPT41, items=ITEMS, mode="batch")
    pipeline.evaluate(SUMMARIES[:1], REFS, MockProvider(answer=lambda r: '{"extracted": []}' if r.stage == "extract"
                      else pipeline.stand_in_answer(r)), tmp_path / "out", s)
    table, out = _dry(tmp_path, capsys)
    assert "this stage's cache" in out and "central estimate:" in out


def test_a_running_batch_reforecasts_from_what_it_has_measured(tmp_path):
    provider = MockProvider(answer=lambda r: "x" * 400)
    provider.max_batch_requests = 3
    reqs = [Request(stage="extract", model=GPT5, messages=[{"role": "user", "content": f"q{i} " * 50}])
            for i in range(9)]
    runner = StageRunner("extract", provider, workdir=tmp_path, progress=False, poll_interval=0.01)
    runner.run(reqs, mode="batch")
    assert len(runner.forecasts) == 2  # after the first and the second of three batches
    per = prices.cost(GPT5, {"input": len(str(reqs[0].messages)) // 4, "output": 100, "cache_read": 0}, "batch").usd
    assert "3 answered in ended batches" in runner.forecasts[0] and "6 still in running batches" in runner.forecasts[0]
    assert f"about ${9 * per:,.4f} for the stage" in runner.forecasts[0]


# ---------- fuzz: a ledger is someone else's ----------
CELL = st.one_of(st.sampled_from(["", "0", "1", "-1", "1e999", "nan", "inf", "9" * 40, "12.5", "٣", " 7", "x"]),
                 st.text(max_size=6))


@settings(max_examples=150, deadline=None)
@given(rows=st.lists(st.tuples(st.sampled_from(["extract", "residual", "compare", "x"]),
                               st.sampled_from([GPT5, GPT41, ""]), CELL, CELL, CELL, CELL), max_size=6),
       junk=st.binary(max_size=40), spoil=st.booleans())
def test_any_ledger_is_read_or_skipped_in_one_line(tmp_path_factory, rows, junk, spoil):
    path = tmp_path_factory.mktemp("ledger") / "cost.csv"
    body = HEADER + "".join(f"{s},{m},openai,batch,False,x,{n},1,0,,,,{o},{r},,1,1,0,{u}\n" for s, m, n, o, r, u in rows)
    path.write_bytes(body.encode("utf-8", "surrogatepass") + (junk if spoil else b""))
    for stage in ("extract", "residual"):
        m = measured.of_ledgers([path], stage, GPT5)
        assert m.requests >= 0 and math.isfinite(m.output) and m.output <= m.requests * prices.MAX_TOKENS
        assert m.reasoning <= m.output and m.reasoning_requests <= m.requests
        assert all("\n" not in note and str(path) in note for note in m.skipped)
        if m.requests:
            assert m.words()


def test_a_ledger_that_is_a_fifo_a_device_or_a_folder_is_skipped_in_one_line_not_waited_on(tmp_path):
    """--usage-from reads someone else's run folder: its cost.csv as a FIFO blocked the dry run at open()
    before the check of what was opened could run."""
    import os
    import threading

    run = tmp_path / "run"
    run.mkdir()
    os.mkfifo(run / "cost.csv")
    found: list = []
    reader = threading.Thread(target=lambda: found.append(measured.of_ledgers([run], "extract", GPT5)), daemon=True)
    reader.start()
    reader.join(60)
    assert found, "of_ledgers blocked on a FIFO"
    assert found[0].requests == 0 and found[0].skipped == [f"{run / 'cost.csv'}: not a regular file"]
    assert measured.of_ledgers([Path("/dev/zero")], "extract", GPT5).skipped == ["/dev/zero: not a regular file"]
