"""`gavel plan` (gavel.runs.plan, docs/plan.md): the cases x repeats x orders a difference between two models
needs at the verdict's test (paired t, Holm's first step over the pairs named), the printed interval's planned
half-width, and the cost from a pilot's ledger at the price table's list prices. The release check proper is
benchmarks/plan_check.py; here a looser sanity check of the same computation on the release's committed cells."""

import math
import os

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from scipy.stats import t as student

from gavel.core import options, paired, prices
from gavel.core.items import item
from gavel.runs import pipeline, plan, stand_in
from gavel.runs import repeats as repeated

ITEMS = (item("Filing Date"), item("First and Last name of Judge"), item("Name of the Monitor"))
GPT41 = "gpt-4.1-2025-04-14"
AS_GPT41 = dict.fromkeys(plan.TEXT_STAGES + plan.SUMMARY_STAGES + plan.JUDGE_STAGES, GPT41)


@pytest.fixture(scope="module")
def pilot(tmp_path_factory):
    """A noisy mock's run: 6 cases x 2 models x 2 repeats x both orders."""
    out = tmp_path_factory.mktemp("pilot")
    refs, summaries = {}, []
    for c in range(6):
        refs[str(c)] = f"The filing was on March {c + 1}, 2020. Judge Mary Smith{c} presided. The monitor is Ann Lee."
        summaries += [("model-x", str(c), f"The filing was on March {c + 1}, 2020. Judge Mary Smith{c} presided. "
                                          f"The monitor is Bob Ray{c}."),
                      ("model-y", str(c), f"The filing came in 2020. Judge Smith{c} presided. The monitor is Ann Lee.")]
    provider = pipeline.provider("mock", **stand_in.mock_options(options.judge_spec("noisy:seed=5,flip=0.4")))
    s = pipeline.Settings(extractor="gpt-oss-20b-BF16", judge="gemma-3-27b-it", items=ITEMS, orders="both")
    repeated.evaluate_repeats(summaries, refs, provider, out, s, repeats=2)
    return out


def test_the_detectable_difference_is_the_t_test_at_holms_first_step():
    v, n, m = 80.0, 40, 6
    expected = (student.ppf(1 - 0.05 / (2 * m), n - 1) + student.ppf(0.8, n - 1)) * math.sqrt(v / n)
    assert plan.detectable(v, n, m) == pytest.approx(expected, rel=1e-12)
    need = plan.cases_needed(v, 3.0, m)
    assert plan.detectable(v, int(need), m) <= 3.0 < plan.detectable(v, int(need) - 1, m)
    assert plan.cases_needed(v, 1e-6) == math.inf and math.isnan(plan.cases_needed(math.nan, 3.0))
    assert math.isnan(plan.detectable(v, 1))


def test_the_judges_noise_is_taken_out_of_the_between_case_variance_and_divided_by_the_cells():
    rng = np.random.default_rng(0)
    rows = []
    for c in range(400):  # true case differences sd 4, judge noise sd 3 a cell, 4 cells a case
        base = rng.normal(50, 10)
        gap = rng.normal(2, 4)
        for cell in ("r1o1", "r1o2", "r2o1", "r2o2"):
            rows += [("a", str(c), cell, base + gap + rng.normal(0, 3)), ("b", str(c), cell, base + rng.normal(0, 3))]
    cells = pd.DataFrame(rows, columns=["model", "case_id", "cell", "value"])
    pv = plan.pair_variance(cells, "a", "b")
    assert pv.judge_measured and pv.within_a == pytest.approx(9, rel=0.1) and pv.within_b == pytest.approx(9, rel=0.1)
    assert pv.between == pytest.approx(16, rel=0.2)
    assert pv.variance(8) < pv.variance(4) < pv.variance(1) and pv.variance(4) == pytest.approx(pv.v0)
    assert pv.draw_variance() == pytest.approx(pv.between + pv.within_a + pv.within_b)


def test_on_the_releases_cells_the_planned_half_width_is_near_the_realized_one():
    """A looser check than benchmarks/plan_check.py's +-10%: 40 subsamples of 50 cases, two pairs, +-20%."""
    cells = plan.release_cells()
    wide = cells.pivot_table(index="case_id", columns="model", values="value", aggfunc="first")
    rng = np.random.default_rng(1)
    for a, b in (("Qwen3-32B", "Qwen3-14B"), ("gpt-5-2025-08-07", "gemma-3-12b-it")):
        pv = plan.pair_variance(cells, a, b)
        both = wide[[a, b]].dropna()
        realized = []
        for _ in range(40):
            pick = both.iloc[rng.choice(len(both), 50, replace=False)]
            pairs, _ = paired.compare(pick.to_numpy(float).T[:, :, None], [a, b], seed=int(rng.integers(1 << 30)))
            realized.append((pairs["ci_high"][0] - pairs["ci_low"][0]) / 2)
        assert plan.half_width(pv.draw_variance(), 50) == pytest.approx(np.mean(realized), rel=0.2)


def test_a_pilot_with_repeats_and_orders_plans_every_combination_and_its_ledger_prices_itself(pilot):
    cells = plan.run_cells(pilot)
    shape = plan.pilot_shape(cells)
    assert shape == {"cases": 6, "models": ["model-x", "model-y"], "repeats": 2, "orders": 2}
    pv = plan.pair_variance(cells, "model-x", "model-y")
    assert pv.judge_measured and pv.cells_a == 4 and pv.within_a + pv.within_b > 0  # the noisy judge's
    cost = plan.ledger_cost(pilot, shape, "batch", AS_GPT41)
    # the unit costs put back together are the pilot's own ledger, repriced line by line
    ledger = pd.concat([pd.read_csv(pilot / "cost.csv"), pd.read_csv(pilot / "repeats" / "r2" / "cost.csv")])
    total = 0.0
    for rec in ledger.to_dict("records"):
        n = rec["requests"]
        usage = {"input": rec["input_tokens"] / n, "cache_read": rec["cache_read_tokens"] / n,
                 "output": rec["output_tokens"] / n}
        total += n * prices.cost(GPT41, usage, "batch").usd
    assert cost.of(2, 6, 2, 2) == pytest.approx(total, rel=1e-9) and total > 0
    table = plan.plan(cells, [("model-x", "model-y")], 20.0, repeats=(1, 2, 4), orders=(1, 2), cost=cost, pilot=shape)
    assert len(table) == 6 and list(table["cells"]) == [1, 2, 2, 4, 4, 8]
    for rec in table.to_dict("records"):
        n, r, o = int(rec["cases_needed"]), rec["repeats"], rec["orders"]
        assert rec["usd"] == pytest.approx(cost.of(2, n, r, o))
        assert rec["usd_new"] == pytest.approx(rec["usd"] - cost.of(2, min(n, 6), min(r, 2), min(o, 2)))
    inside = plan.plan(cells, [("model-x", "model-y")], math.nan, repeats=(1, 2, 4), orders=(1, 2), cases=6,
                       cost=cost, pilot=shape)
    assert list(inside["usd_new"] == 0) == [True, True, True, True, False, False]  # 4 repeats: 2 of them new


def test_the_command_line(pilot, capsys):
    from gavel import cli

    assert cli.main(["plan", "--release", "--pair", "Qwen3-32B", "Qwen3-14B", "--difference", "3"]) == 0
    out = capsys.readouterr().out
    assert "Qwen3-32B vs Qwen3-14B" in out and "cases; detects" in out and "not priced" in out
    assert "judge noise not measured" in out
    assert cli.main(["plan", "--pilot", str(pilot), "--cases", "30", "--price-as", GPT41]) == 0
    out = capsys.readouterr().out
    assert "2 repeat(s) x 2 order(s):" in out and "priced from the pilot's ledger" in out and "$" in out
    assert cli.main(["plan", "--release", "--pair", "nobody", "Qwen3-14B", "--difference", "3"]) == 2
    assert "no cells of nobody" in capsys.readouterr().err
    assert cli.main(["plan", "--release", "--pair", "Qwen3-32B", "Qwen3-14B"]) == 2
    assert "--difference D" in capsys.readouterr().err


# ---------- fuzz: a pilot folder is someone else's ----------
HOSTILE = st.one_of(st.sampled_from(["inf", "-1", "nan", "1e999", "101", "", "x", "[1]", "\x00", "9" * 400, "-0",
                                     "1e308", "0x10", "  5 ", "None"]), st.text(max_size=8),
                    st.floats(allow_nan=True, allow_infinity=True).map(repr))


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(target=st.sampled_from(["scores.csv", "repeats/r2/scores.csv", "order_summaries.csv", "cost.csv",
                                  "repeats/r2/cost.csv"]),
       action=st.sampled_from(["cell", "drop", "bytes", "dir", "empty"]), row=st.integers(0, 30),
       column=st.integers(0, 30), value=HOSTILE)
def test_a_spoiled_pilot_is_planned_or_refused_in_one_line(pilot, tmp_path_factory, target, action, row, column, value):
    import shutil

    run = tmp_path_factory.mktemp("spoiled") / "run"
    shutil.copytree(pilot, run, ignore=shutil.ignore_patterns("runs"))
    path = run / target
    if action == "bytes":
        path.write_bytes(b"\xff\xfe\x00" + value.encode("utf-8", "replace"))
    elif action == "dir":
        path.unlink()
        path.mkdir()
    elif action == "empty":
        path.write_text("")
    else:
        t = pd.read_csv(path, dtype=str, keep_default_na=False)
        name = t.columns[column % len(t.columns)]
        if action == "drop":
            t = t.drop(columns=[name])
        else:
            t.loc[row % len(t), name] = value
        t.to_csv(path, index=False)
    try:
        cells = plan.run_cells(run)
        shape = plan.pilot_shape(cells)
        cost = plan.ledger_cost(run, shape, "batch", AS_GPT41)
        table = plan.plan(cells, [("model-x", "model-y")], 10.0, cost=cost, pilot=shape)
    except plan.PlanInputError as err:
        assert "\n" not in str(err) and str(run) in str(err)
        return
    finite = table["usd"].dropna()
    assert np.isfinite(finite).all() and (finite >= 0).all()
    assert os.path.isdir(run)
