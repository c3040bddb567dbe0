"""How stable is a score (`--repeats N`): repeats get distinct seeds or cache namespaces, repeat 1 is today's run
exactly, and the stability report finds exactly the flips a scripted provider plants in repeat 2."""

import json
import math

import numpy as np
import pandas as pd
import pytest

from gavel.core.items import item
from gavel.llm.providers.mock import MockProvider
from gavel.llm.records import Request
from gavel.llm.runner import StageRunner
from gavel.runs import pipeline, stability
from gavel.runs import repeats as repeated

REF = ("The ACLU filed this class action on March 3, 2020 in the Northern District of Illinois. "
       "Judge Mary Smith presided over the case. The city agreed to a consent decree in 2021.")
MODEL = ("On March 3, 2020, the ACLU sued the city in the Northern District of Illinois. "
         "The parties settled by consent decree in 2021. A monitor, Ann Lee, reports each year.")
ITEMS = (item("Filing Date"), item("First and Last name of Judge"), item("Dates of All Decrees"),
         item("Name of the Monitor"))
SUMMARIES = [("model-x", "1", MODEL), ("model-y", "1", MODEL)]


def extracted(*pairs):
    return json.dumps({"reasoning": "r", "extracted": [{"evidence": [e], "value": v} for e, v in pairs]})


def scripted(request):
    """A judge whose answers in a seeded repeat differ in exactly these places (the planted flips):
    extract  model-y filing_date: nothing found;   model-x monitor_name: "Ann Lee" found
    compare  model-x decree_dates: different;       model-y decree_dates: an unusable answer (prose)
    style    model-x readability_jargon: 2 instead of 4
    (and, following from the extract flips, the compare gates of model-y filing_date and model-x monitor_name)."""
    seeded = "seed" in request.params
    user = request.messages[-1]["content"] if request.messages[-1]["role"] == "user" else ""
    who = request.subject
    if request.stage == "extract":
        if request.item == "filing_date":
            return extracted() if seeded and who == "model-y" else extracted(("March 3, 2020", "March 3, 2020"))
        if request.item == "judge_name":
            return extracted(("Judge Mary Smith", "Mary Smith")) if who == "human" else extracted()
        if request.item == "monitor_name":
            return extracted(("Ann Lee", "Ann Lee")) if seeded and who == "model-x" else extracted()
        if who == "human":
            return extracted(("consent decree in 2021", "consent decree (2021)"))
        return extracted(("consent decree in 2021", "decree 2021"))
    if request.stage == "compare":
        if seeded and who == "model-x" and request.item == "decree_dates":
            return "**Reasoning:** no.\n**Final Answer:** A and B are different"
        if seeded and who == "model-y" and request.item == "decree_dates":
            return "I would rather not say."
        return "**Reasoning:** same year.\n**Final Answer:** A equals B"
    if request.stage == "residual":
        n = sum(1 for line in user.splitlines() if line.startswith("["))
        return json.dumps({"reasoning": "r", "extracted": [{"fact": f"fact {i}", "evidence_spans": [i]}
                                                           for i in range(1, n + 1)]})
    if request.stage == "residual_match":
        return '**Final Answer:**\n```json\n{"common": [{"A_index": 1, "B_index": 1}], "only_in_A": [], "only_in_B": []}\n```'
    if request.stage == "style":
        return json.dumps({"readability_jargon": 2 if seeded and who == "model-x" else 4, "narrative_order": 3,
                           "sentence_structure": 4, "formatting_layout": 5, "citation_style": 4})
    raise AssertionError(request.stage)


def settings():
    return pipeline.Settings(extractor="gpt-oss-20b-BF16", judge="gemma-3-27b-it", items=ITEMS)


@pytest.fixture(scope="module")
def two_repeats(tmp_path_factory):
    out = tmp_path_factory.mktemp("stab")
    provider = MockProvider(answer=scripted)
    return out, provider, repeated.evaluate_repeats(SUMMARIES, {"1": REF}, provider, out, settings(), repeats=2)


def test_report_finds_exactly_the_planted_flips(two_repeats):
    out, _, result = two_repeats
    units = result["stability_units"]
    found = {(r.stage, r.subject, r.item): (r.repeat_1, r.repeat_2) for r in units.itertuples()}
    assert found == {
        ("extract", "model-y", "filing_date"): ('["March 3, 2020"]', "[]"),
        ("extract", "model-x", "monitor_name"): ("[]", '["Ann Lee"]'),
        ("compare", "model-y", "filing_date"): ("gate:identical", "gate:one_empty"),
        ("compare", "model-x", "monitor_name"): ("gate:not_applicable", "gate:one_empty"),
        ("compare", "model-x", "decree_dates"): ("relation:equal", "relation:different"),
        ("compare", "model-y", "decree_dates"): ("relation:equal", "unusable"),
        ("style", "model-x", "readability_jargon"): ("rating:4", "rating:2"),
    }
    table = result["stability"].set_index(["stage", "item"])
    # per stage and item: 3 texts (two models, the reference) for extract, two summaries for compare and style
    assert table.loc[("extract", "filing_date"), ["units", "flipped"]].tolist() == [3, 1]
    assert table.loc[("extract", "filing_date"), "flip_share"] == pytest.approx(1 / 3)
    assert table.loc[("extract", "judge_name"), "flipped"] == 0
    assert table.loc[("compare", "decree_dates"), ["units", "flipped", "flip_share"]].tolist() == [2, 2, 1.0]
    # the unusable answer is its own outcome, counted as such; never a flip to a relation or a 0
    assert table.loc[("compare", "decree_dates"), ["unusable_units", "flips_with_unusable"]].tolist() == [1, 1]
    assert table.loc[("style", "readability_jargon"), "flip_share"] == 0.5
    assert table.loc[("style", "narrative_order"), "flipped"] == 0
    assert table.loc[("residual_match", "residual_facts"), "flipped"] == 0
    assert int(table["flipped"].sum()) == len(found)
    assert pd.read_csv(out / "stability.csv").shape[0] == len(table)


def test_summary_and_model_spread_and_applicable_sets(two_repeats):
    out, _, result = two_repeats
    runs = result["runs"]
    s = result["stability_summaries"].set_index("subject")
    # model-x's applicable items gain monitor_name in repeat 2: Jaccard 3/4; model-y's stay the same
    assert s.loc["model-x", "applicable_jaccard"] == pytest.approx(0.75)
    assert bool(s.loc["model-x", "applicable_changes"]) and not bool(s.loc["model-y", "applicable_changes"])
    assert s.loc["model-y", "applicable_jaccard"] == 1.0
    for subject in ("model-x", "model-y"):
        for col in stability.SCORES:
            values = [float(r["scores"].set_index("subject").loc[subject, col]) for r in runs]
            present = [v for v in values if not math.isnan(v)]
            expected = float(np.std(present, ddof=1)) if len(present) > 1 else math.nan
            assert s.loc[subject, f"{col}_std"] == pytest.approx(expected, nan_ok=True)
    # the style flip moves S_style; the relation flip moves S_checklist
    assert s.loc["model-x", "s_style_std"] > 0 and s.loc["model-x", "s_checklist_std"] > 0
    m = result["stability_models"].set_index(["subject", "score"])
    row = m.loc[("model-x", "s_style")]
    assert row["std_over_repeats"] == pytest.approx(abs(row["repeat_1"] - row["repeat_2"]) / math.sqrt(2))
    # one case: the cases-only interval of repeat 1 is a point; the interval over repeats spans both repeats
    assert row["repeat_1_ci_low"] == row["repeat_1_ci_high"]
    assert row["ci_low"] == pytest.approx(min(row["repeat_1"], row["repeat_2"]))
    assert row["ci_high"] == pytest.approx(max(row["repeat_1"], row["repeat_2"]))
    assert set(stability.read_report(out)) == {"stability", "stability_units", "stability_summaries",
                                               "stability_models"}


def test_repeat_one_is_todays_run_and_repeats_are_never_answered_from_each_other(tmp_path, two_repeats):
    _, _, result = two_repeats
    provider = MockProvider(answer=scripted)
    plain = pipeline.evaluate(SUMMARIES, {"1": REF}, provider, tmp_path, settings())
    ids_plain = [cid for _, cid in provider.submissions]
    again = MockProvider(answer=scripted)
    twice = repeated.evaluate_repeats(SUMMARIES, {"1": REF}, again, tmp_path, settings(), repeats=2)
    first, second = twice["runs"]
    assert sum(first["manifest"]["sent"].values()) == 0  # repeat 1: today's keys, all answered from the cache
    assert first["manifest"]["cached"] == plain["manifest"]["sent"]
    pd.testing.assert_frame_equal(first["scores"], plain["scores"])
    # repeat 2 sent all its requests (its own seed), none of them one of repeat 1's ids
    ids_second = [cid for _, cid in again.submissions]
    assert sum(second["manifest"]["sent"].values()) == len(ids_second) > 0
    assert not set(ids_second) & set(ids_plain)
    # N = 1 is exactly today's evaluate: same requests, no report
    one = MockProvider(answer=scripted)
    single = repeated.evaluate_repeats(SUMMARIES, {"1": REF}, one, tmp_path / "one", settings(), repeats=1)
    assert sorted(cid for _, cid in one.submissions) == sorted(ids_plain)
    assert set(single) == {"runs", "judgments"} and not (tmp_path / "one" / "stability.csv").exists()


def test_seed_or_namespace_per_repeat(tmp_path):
    s = settings()
    assert repeated.repeat_settings(s, MockProvider(), 1) is s
    seeded = [repeated.repeat_settings(s, MockProvider(), r) for r in (2, 3)]
    assert [x.repeat_params["seed"] for x in seeded] == [1002, 1003] and not seeded[0].runner_options

    class Anthropic:
        name = "anthropic"

    spaced = repeated.repeat_settings(s, Anthropic(), 2)
    assert spaced.runner_options == {"namespace": "repeat-2"} and not spaced.repeat_params
    with pytest.raises(ValueError):
        repeated.repeat_settings(s, MockProvider(), 0)
    # a namespace changes the cache key and nothing else; no namespace keeps the key as it was
    req = Request(stage="extract", model="gemma-3-27b-it", messages=[{"role": "user", "content": "hi"}])
    provider = MockProvider()
    plain, spaced_runner = StageRunner("x", provider, tmp_path / "w", progress=False), \
        StageRunner("x", provider, tmp_path / "w", progress=False, namespace="repeat-2")
    assert plain.key(req) != spaced_runner.key(req)
    assert plain.run([req], mode="online").sent == 1
    assert plain.run([req], mode="online").cached == 1
    assert spaced_runner.run([req], mode="online").sent == 1  # never answered from the other namespace's cache


def test_bad_repeats_is_a_clear_error(tmp_path):
    with pytest.raises(pipeline.InputError, match="repeats"):
        repeated.evaluate_repeats(SUMMARIES, {"1": REF}, MockProvider(answer=scripted), tmp_path, settings(),
                                   repeats=0)


def test_repeat_interval_draws_cases_and_repeats():
    # two cases, two repeats: the resampled means can only be the averages of a value of each drawn case
    matrix = np.array([[0.0, 10.0], [20.0, np.nan]])
    lo, hi = stability.repeat_interval(matrix, seed=1)
    assert 0.0 <= lo <= hi <= 20.0 and lo < 10.0 < hi
    assert stability.repeat_interval(np.full((2, 2), np.nan)) == (math.nan, math.nan) or \
        all(math.isnan(v) for v in stability.repeat_interval(np.full((2, 2), np.nan)))


def test_cli_repeats_dry_run_prices_n_repeats_and_run_writes_the_report(tmp_path, capsys, monkeypatch):
    from gavel import cli

    monkeypatch.chdir(tmp_path)
    (tmp_path / "s.jsonl").write_text(json.dumps({"case_id": "1", "summary": MODEL}) + "\n")
    (tmp_path / "refs.json").write_text(json.dumps({"1": REF}))
    base = ["evaluate", "--summaries", "s.jsonl", "--references", "refs.json", "--provider", "mock", "--out", "out",
            "--items", "filing_date", "decree_dates"]
    assert cli.main(base + ["--dry-run"]) == 0
    one = capsys.readouterr().out
    assert "repeats" not in one  # N = 1: today's dry run, nothing about repeats
    assert cli.main(base + ["--dry-run", "--repeats", "3"]) == 0
    three = capsys.readouterr().out
    assert "3 repeats (a seed per repeat)" in three
    table = pipeline.dry_run([("s", "1", MODEL)], {"1": REF}, pipeline.provider("mock"),
                             pipeline.Settings(extractor=pipeline.default_roles()["extractor"],
                                               judge=pipeline.default_roles()["judge"],
                                               items=(item("Filing Date"), item("Dates of All Decrees"))), "dry")
    assert f"= {3 * int(table['requests'].sum())} requests, {3 * int(table['input_tokens'].sum())} input tokens" in three
    assert int(table["requests"].sum()) > 0 and not (tmp_path / "out" / "runs").exists()  # nothing was sent
    assert cli.main(base + ["--repeats", "2"]) == 0
    printed = capsys.readouterr().out
    assert "stability over 2 repeats" in printed and "S_GAVEL-REF" in printed
    report = stability.read_report(tmp_path / "out")
    # the stand-in model ignores seeds: two repeats, no flips, no spread
    assert report["stability"]["flipped"].sum() == 0
    assert (tmp_path / "out" / "repeats" / "r2" / "scores.csv").exists()
    with pytest.raises(SystemExit):
        cli.main(base + ["--repeats", "x"])
    with pytest.raises(SystemExit) as stop:  # refused as the command line is read (gavel.core.options)
        cli.main(base + ["--repeats", "0"])
    assert stop.value.code == 2 and "--repeats: must be a whole number >= 1, got 0" in capsys.readouterr().err


def test_local_model_at_temperature_above_zero_two_repeats(tmp_path):
    """End to end on the real local model (llama.cpp, SmolLM2-135M, temperature 0.2 from the registry): repeat 2
    sends every request again with its seed in the body, and the report counts exactly the verdicts that differ
    between the two repeats' own tables."""
    from needs import unavailable

    from gavel.llm.providers.local import LocalServer, default_model, installed

    if installed():
        unavailable(f"local model not installed: {installed()}")
    model = default_model()
    from gavel.llm.registry import llm_model

    assert llm_model(model, "local").sampling.get("temperature", 0) > 0
    s = pipeline.Settings(extractor=model, judge=model, items=(item("Filing Date"),), max_tokens=128)
    with LocalServer() as server:
        result = repeated.evaluate_repeats([("local-run", "1", MODEL)], {"1": REF}, server, tmp_path, s, repeats=2)
    first, second = result["runs"]
    assert sum(first["manifest"]["sent"].values()) > 0
    # repeat 2 asks the model itself (how many re-asks it needs is the model's business)
    assert second["manifest"]["sent"]["extract"] >= 2 and not any(second["manifest"]["cached"].values())
    assert not set(first["answers"]["custom_id"]) & set(second["answers"]["custom_id"])  # the seed is in each request
    cache = sorted((tmp_path / "repeats" / "r2" / "runs" / "extract" / "cache").rglob("*.json"))
    assert cache, "repeat 2 cached nothing"
    # an independent count of the extract flips from the two repeats' own tables
    def value_sets(tables):
        a = tables["answers"]
        last = a[a.stage == "extract"].sort_values("round").groupby(["subject", "item"]).last()["status"]
        v = tables["values"]
        return {k: ("unusable" if st != "ok" else
                    sorted(v[(v.subject == k[0]) & (v["item"] == k[1])]["value"].astype(str)) if len(v) else [])
                for k, st in last.items()}
    one, two = value_sets(first), value_sets(second)
    expected = sum(one[k] != two.get(k) for k in one)
    table = result["stability"]
    assert int(table[table.stage == "extract"]["flipped"].sum()) == expected
    assert set(table["stage"]) >= {"extract", "compare", "style"}
    assert (tmp_path / "stability.csv").exists()


def run_notebook_12(out, tmp_path, monkeypatch) -> str:
    """Notebook 12 on the tables in ``out``, figures into ``tmp_path/figures``; the executed notebook's text."""
    import papermill as pm

    from gavel.core import config

    monkeypatch.setenv("GAVEL_FIGURES_DIR", str(tmp_path / "figures"))
    pm.execute_notebook(str(config.REPO_ROOT / "notebooks" / "12_ref_analysis.ipynb"), str(tmp_path / "12.ipynb"),
                        parameters={"out": str(out)}, kernel_name="python3", progress_bar=False,
                        cwd=str(config.REPO_ROOT / "notebooks"))
    return (tmp_path / "12.ipynb").read_text()


def test_notebook_12_shows_the_report_and_draws_the_figure(two_repeats, tmp_path, monkeypatch):
    text = run_notebook_12(two_repeats[0], tmp_path, monkeypatch)
    assert (tmp_path / "figures" / "ref_stability_flips.png").stat().st_size > 0
    assert "readability_jargon" in text and "applicable_jaccard" in text
