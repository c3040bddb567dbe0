"""--label-orders K: the relation options in K rows of a Latin square, mapped back, and the label-order report."""

import json
import math
import re
from dataclasses import replace

import pandas as pd
import pytest
import test_orders as scripted  # its scripted two-summary run and fair judge
import test_stability as today

from gavel.core import vocab
from gavel.llm.providers.mock import MockProvider
from gavel.ref import prompts
from gavel.ref.stages import compare
from gavel.runs import label_orders, pipeline
from gavel.runs import repeats as repeated

PLANTED = ("filing_date", "monitor_name", "appeals")  # the judge takes whatever option is listed first
_OPTION = re.compile(r'^\d\. "([^"]+)":', re.MULTILINE)


def shown_options(request) -> list[str]:
    return _OPTION.findall(next(m["content"] for m in request.messages if m["role"] == "system"))


def option_judge(planted=PLANTED):
    """test_orders' fair judge, except on ``planted`` items, where it answers the option listed first."""
    fair = scripted.judge(biased=())

    def answer(request):
        if request.stage.startswith("compare") and request.item in planted and shown_options(request):
            return f"**Reasoning:** the first one fits.\n**Final Answer:** {shown_options(request)[0]}"
        return fair(request)
    return answer


@pytest.fixture(scope="module")
def four(tmp_path_factory):
    out = tmp_path_factory.mktemp("labels")
    provider = MockProvider(answer=option_judge())
    return out, provider, repeated.evaluate_repeats(scripted.SUMMARIES, {"1": scripted.REF}, provider, out,
                                                    scripted.settings(label_orders=4), repeats=2)


def test_the_latin_square_puts_every_option_in_every_position():
    rows = [vocab.label_order(r) for r in vocab.LABEL_ORDER_ROWS[4]]
    assert rows[0] == vocab.AB_RELATIONS
    for position in range(4):
        assert {row[position] for row in rows} == set(vocab.AB_RELATIONS)
    two = [vocab.label_order(r) for r in vocab.LABEL_ORDER_ROWS[2]]
    for ab in vocab.AB_RELATIONS:  # K = 2: once in the first half, once in the second
        assert sorted(row.index(ab) // 2 for row in two) == [0, 1]


def test_row_zero_is_todays_request_and_other_rows_reorder_only_the_options():
    pair = compare.Pair("m", "1", "filing_date", ("2020",), ("2021",))
    [(today_req, today_meta)], _ = compare.build_requests([pair], "judge")
    [(row0, meta0)], _ = compare.build_requests([pair], "judge", label_row=0)
    assert row0 == today_req and meta0 == today_meta and "label_order" not in meta0
    for row in (1, 2, 3):
        [(req, meta)], gated = compare.build_requests([pair], "judge", label_row=row)
        assert gated == [] and meta["label_order"] == row and req.stage == f"compare_labels{row}"
        assert req.custom_id != today_req.custom_id
        wanted = [compare.AB_LABELS[vocab.AB_RELATIONS.index(ab)] for ab in vocab.label_order(row)]
        assert shown_options(req) == wanted
        assert req.schema["schema"]["properties"]["relation"]["enum"] == wanted
        system = req.messages[0]["content"]
        assert system.endswith(", ".join(f'"{w}"' for w in wanted) + ">")
        # nothing but the order of the options (and their numbers) changed
        def unnumbered(text):
            return sorted(re.sub(r"^\d\. ", "", x) for x in re.sub(r"<one of [^>]*>", "<>", text).splitlines())
        assert system != today_req.messages[0]["content"]
        assert unnumbered(system) == unnumbered(today_req.messages[0]["content"])
        assert req.messages[1:] == today_req.messages[1:]
    # a list matching has no relation options: not asked again
    many = compare.Pair("m", "1", "parties", ("a", "b"), ("c",))
    assert compare.build_requests([many], "judge", label_row=2) == ([], [])


def test_a_template_without_the_options_is_refused():
    messages = [{"role": "system", "content": "Answer A or B."}, {"role": "user", "content": "x"}]
    with pytest.raises(prompts.PromptError, match="--label-orders"):
        compare.reorder_options(messages, 1)
    assert compare.reorder_options(messages, 0) is messages


@pytest.mark.parametrize("k", [0, 3, 5, True, "4"])
def test_label_orders_must_be_one_two_or_four(tmp_path, k):
    with pytest.raises(pipeline.InputError, match="--label-orders is one of 1, 2, 4"):
        pipeline.evaluate(scripted.SUMMARIES, {"1": scripted.REF}, MockProvider(answer=option_judge()), tmp_path,
                          scripted.settings(label_orders=k))


def test_a_planted_option_order_bias_on_three_items_is_found_on_exactly_those(four):
    out, _, result = four
    t = result["label_order"].set_index("item")
    assert label_orders.biased_items(result["label_order"]) == sorted(PLANTED)
    for k in PLANTED:  # 2 summaries x 2 repeats x 4 rows: always the first option, a quarter expected
        assert t.loc[k, ["judgments", "first_option_chosen"]].tolist() == [16, 16]
        assert t.loc[k, "first_option_expected"] == pytest.approx(4.0)
        assert t.loc[k, "first_option_excess"] == pytest.approx(0.75)
        assert t.loc[k, "position_consistency"] == 0.0
        assert t.loc[k, "repetition_stability"] == 1.0  # the same answer again for the same list
        assert t.loc[k, "verdict"].startswith("prefers the option listed first: chosen 16 of 16 times")
    for k in ("judge_name", "decree_dates", "settlement_date"):  # fairly judged single values
        assert t.loc[k, "position_consistency"] == 1.0 and t.loc[k, "first_option_excess"] == 0.0
        assert t.loc[k, "verdict"] == "no option-order bias found (16 usable answers, 2 cases)"
    assert "parties" not in t.index  # a list matching has no options
    line = label_orders.summary_line(result, out)
    assert line.split("option-order bias: ")[1].split("\n")[0] == ", ".join(sorted(PLANTED))
    for name in label_orders.NAMES:
        assert (out / f"{name}.csv").exists(), name


def test_each_row_is_mapped_back_and_the_change_in_s_checklist_is_reported(four):
    _, _, result = four
    j = result["label_judgments"]
    assert sorted(set(j["label_order"])) == [0, 1, 2, 3] and set(j["repeat"]) == {1, 2}
    fair = j[j["item"] == "decree_dates"]
    assert set(fair["relation"]) == {"reference_contains_model"}  # the same verdict whatever the order and side
    assert set(fair["answer_position"]) == {1.0, 2.0, 3.0, 4.0}  # ... though it stood in every position
    planted = j[j["item"] == "appeals"]
    assert set(planted["answer_position"]) == {1.0} and len(set(planted["relation"])) == 4
    m = result["label_order_models"].set_index("subject")
    runs = result["runs"]
    for subject in ("model-x", "model-y"):
        row0 = m.loc[subject, "s_checklist_label_order_0"]
        assert row0 == pytest.approx(sum(float(r["scores"].set_index("subject").loc[subject, "s_checklist"])
                                         for r in runs) / len(runs))
        values = [m.loc[subject, f"s_checklist_label_order_{r}"] for r in range(4)]
        assert m.loc[subject, "label_order_change"] == pytest.approx(max(values) - min(values)) and max(values) > min(values)
        assert m.loc[subject, "label_order_change_ci_low"] <= m.loc[subject, "label_order_change_ci_high"]


def test_default_keeps_todays_requests_and_four_orders_add_only_single_pairs(tmp_path):
    golden = json.loads(scripted.GOLDEN.read_text())
    provider = MockProvider(answer=lambda r: today.scripted(replace(r, stage=re.sub(r"_labels\d$", "", r.stage))))
    tables = pipeline.evaluate(today.SUMMARIES, {"1": today.REF}, provider, tmp_path,
                               replace(today.settings(), label_orders=4))
    seen = scripted.fingerprint(tmp_path, provider)
    assert set(golden["ids"]) < set(seen["ids"])
    j = tables["judgments"]
    singles = int(((j["stage"] == "compare") & (j["gate"] == "single")).sum())
    assert singles > 0 and len(seen["ids"]) - len(golden["ids"]) == 3 * singles  # rows 1, 2, 3 of each
    for name in ("scores.csv", "compare.csv", "values.csv"):
        assert seen["files"][name] == golden["files"][name], name
    assert tables["manifest"]["label_orders"] == 4 and len(tables["label_judgments"]) == 3 * singles


def test_cli_label_orders_dry_run_counts_the_other_orders_and_run_prints_the_report(tmp_path, capsys, monkeypatch):
    from gavel import cli

    monkeypatch.chdir(tmp_path)
    base = scripted.two_item_cli_run(tmp_path)
    assert cli.main(base + ["--dry-run", "--label-orders", "4"]) == 0
    printed = capsys.readouterr().out
    assert "compare: at most 8 requests" in printed and "--label-orders 4" in printed
    assert cli.main(base + ["--label-orders", "2"]) == 0
    printed = capsys.readouterr().out
    # the stand-in judges by content: one verdict in every option order
    assert "label orders: 2/2 single-value pairs give one verdict in every option order" in printed
    assert "option-order bias: none found at the 2-case 95% interval" in printed
    t = pd.read_csv(tmp_path / "out" / "label_order.csv")
    assert list(t["label_orders"]) == [2, 2] and not t["option_order_bias"].any()
    with pytest.raises(SystemExit):
        cli.main(base + ["--label-orders", "3"])
    assert "invalid choice: 3" in capsys.readouterr().err


def test_notebook_12_shows_the_label_order_report(four, tmp_path, monkeypatch):
    text = today.run_notebook_12(four[0], tmp_path, monkeypatch)
    assert "prefers the option listed first" in text and "s_checklist_label_order_3" in text
    assert "option-order bias:" in text and "filing_date" in text


# ---------- the report's view ----------
@pytest.fixture(scope="module")
def judged_everywhere(tmp_path_factory):
    """Both orders of the texts, four orders of the options, two repeats: the texts' bias of test_orders on its
    three items, the option bias on PLANTED; the report written into the run folder."""
    from gavel.report import page as report

    out = tmp_path_factory.mktemp("judge-view")
    texts = scripted.judge()

    def answer(request):
        if request.stage.startswith("compare") and request.item in PLANTED and shown_options(request):
            return f"**Reasoning:** first.\n**Final Answer:** {shown_options(request)[0]}"
        return texts(request)
    repeated.evaluate_repeats(scripted.SUMMARIES, {"1": scripted.REF}, MockProvider(answer=answer), out,
                              scripted.settings(orders="both", label_orders=4), repeats=2)
    return out, report.write(report.run_data(out), out / "report.html")


def test_the_report_says_per_item_what_the_judge_favours(judged_everywhere):
    from gavel.report import judge_view

    out, _ = judged_everywhere
    v = judge_view.view(out)
    rows = {r["item"]: r for r in v["rows"]}
    for k in scripted.BIASED:  # the text shown first called the container in all 2 x 2 x 2 judgments
        assert rows[k]["order"] == "prefers the first text: 8 of 8" and rows[k]["bias"]
    for k in PLANTED:
        assert rows[k]["label"].startswith("prefers the option listed first") and rows[k]["bias"]
    assert rows["parties"]["order"].startswith("multi: no bias found")
    assert [r["bias"] for r in v["rows"]] == sorted((r["bias"] for r in v["rows"]), reverse=True)  # flagged first
    # a judge that takes the first option ("A contains B" in row 0) also looks biased to the first text
    assert v["swaps"]["item"] in scripted.BIASED + PLANTED and len(v["swaps"]["rows"]) == 5
    assert set(v["links"]) >= {"order.csv", "label_order.csv", "order_majority.csv"}
    assert judge_view.view(out / "repeats") is None  # a folder without these tables: no view


def test_the_view_is_readable_at_1400_pixels_without_javascript(browser, judged_everywhere):
    out, path = judged_everywhere
    ctx = browser.new_context(java_script_enabled=False, viewport={"width": 1400, "height": 900})
    refused = []
    ctx.route("**/*", lambda r: r.continue_() if r.request.url.startswith(("file:", "data:"))
              else (refused.append(r.request.url), r.abort()))
    page = ctx.new_page()
    page.goto(path.as_uri())
    assert page.is_visible("#judge")
    lines = [tr.text_content() for tr in page.query_selector_all("#judge table.judge tbody tr")]
    assert any("judge_name" in x and "prefers the first text: 8 of 8" in x for x in lines)
    assert any("appeals" in x and "prefers the option listed first" in x for x in lines)
    assert len(page.query_selector_all("#judge svg circle")) >= len(scripted.BIASED)
    assert len(page.query_selector_all("#judge table.swaps tbody tr")) == 5
    box = page.query_selector("#judge").bounding_box()
    assert box["x"] >= 0 and box["x"] + box["width"] <= 1400
    assert page.evaluate("document.documentElement.scrollWidth") <= 1400  # no sideways scrolling
    page.screenshot(path=str(out / "judge-view.png"), full_page=True)
    assert not refused
    ctx.close()


def _judgments(answers: dict, cases: int) -> pd.DataFrame:
    """A label_judgments table: per case one pair of item ``parties``, (repeat, row) -> answer (None: unusable)."""
    from gavel.ref.stages.compare import answer_position
    rows = []
    for c in range(cases):
        for (repeat, row), ab in answers.items():
            ok = ab is not None
            rows.append({"repeat": repeat, "subject": "m", "case_id": str(c), "item": "parties", "label_order": row,
                         "status": "ok" if ok else "unusable", "relation": ab, "answer_ab": ab,
                         "answer_position": answer_position(ab, row) if ok else math.nan})
    return pd.DataFrame(rows)


def test_an_excess_that_is_exactly_zero_is_no_bias_whatever_float_sums_say():
    # each case: 6 usable answers over 2 repeats x 4 rows; the first and the last option are chosen exactly as
    # often as the pair's own verdicts predict (shares in sixths), which float sums make 1e-16 with an
    # interval of that width that "excludes 0" (issue 44: `parties`, 1.6e-17 [1.39e-17, 1.85e-17])
    d, b = "a_and_b_different", "b_contains_a"
    j = _judgments({(1, 0): None, (1, 1): d, (1, 2): d, (1, 3): d, (2, 0): d, (2, 1): b, (2, 2): None, (2, 3): b}, 12)
    t = label_orders.item_table(j, 4).set_index("item")
    for side in ("first", "last"):
        assert t.loc["parties", f"{side}_option_excess"] == 0.0
        assert t.loc["parties", f"{side}_option_excess_ci_low"] == 0.0 == t.loc["parties", f"{side}_option_excess_ci_high"]
    assert t.loc["parties", "first_option_chosen"] == t.loc["parties", "first_option_expected"]
    assert not t.loc["parties", "option_order_bias"]
    assert t.loc["parties", "verdict"] == "no option-order bias found (72 usable answers, 12 cases)"


def test_one_case_is_not_tested_and_says_so():
    j = _judgments({(1, r): "a_contains_b" for r in range(4)}, cases=1)
    t = label_orders.item_table(j, 4).set_index("item")
    assert not t.loc["parties", "option_order_bias"]
    assert t.loc["parties", "verdict"].startswith("not tested (4 usable answers from 1 case")


def test_a_run_with_no_single_value_pair_reads_not_tested_never_a_measured_zero(four):
    _, _, result = four
    j = result["judgments"]
    runs = [dict(t, label_judgments=t["label_judgments"].iloc[:0]) for t in result["runs"]]
    none = label_orders.report(j[j["gate"] != "single"], runs, 2)
    assert none["label_order_models"]["label_order_change"].isna().all()
    line = label_orders.summary_line(none)
    assert line.startswith("label orders: not tested (no single-value pair)")
    assert "option-order bias: not tested (no single-value pair)" in line
    assert "none found" not in line and "0.00" not in line


@pytest.mark.parametrize("cells", [1, 7, 13 * 4 + 3])
def test_label_order_intervals_drawn_in_blocks_are_those_of_one_draw(four, cells, monkeypatch):
    """The label-order bootstraps drawn a block of resamples at a time (memory: one block, issue 48) give the
    intervals of the resamples drawn at once: the model table of the four-order run the same, value for
    value, and the cluster interval the old one-draw formula's."""
    import numpy as np

    from gavel.core import stats

    _, _, result = four
    whole = label_orders.model_table(result["label_judgments"], result["runs"], 4)
    monkeypatch.setattr(stats, "RESAMPLE_CELLS", cells)
    assert label_orders.model_table(result["label_judgments"], result["runs"], 4).equals(whole)
    rng = np.random.default_rng(5)
    num, den = rng.integers(0, 5, 41).astype(float), rng.integers(1, 6, 41).astype(float)
    picks = stats.resamples(41, np.random.default_rng(3))
    ratio = num[picks].sum(axis=1) / den[picks].sum(axis=1)
    assert label_orders._cluster_interval(num, den, 3) == (float(np.percentile(ratio, 2.5)),
                                                           float(np.percentile(ratio, 97.5)))
