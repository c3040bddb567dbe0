"""Is the judge fair to both sides (`--orders both`, gavel.runs.orders): every judged pair asked again with the
sides swapped, the answer mapped back through gavel.core.vocab, and the order report finds exactly the position
bias a scripted judge plants; order one is today's run byte for byte."""

import hashlib
import json
import math
from dataclasses import replace
from pathlib import Path

import pandas as pd
import pytest
import test_stability as today  # its scripted run is the golden file's run

from gavel.core import vocab
from gavel.core.items import item
from gavel.llm.providers.mock import MockProvider
from gavel.llm.records import Response
from gavel.ref.stages import compare
from gavel.runs import judgments, orders, pipeline
from gavel.runs import repeats as repeated

GOLDEN = Path(__file__).parent / "golden" / "orders_one_run.json"
REF = ("The ACLU filed this class action on March 3, 2020 in the Northern District of Illinois against the City "
       "of Chicago and the Police Board. Judge Mary Smith presided. The court entered a consent decree in 2021.")
MODEL = ("On March 3, 2020 the ACLU sued the City of Chicago in the Northern District of Illinois. Judge Smith "
         "presided. The parties settled by consent decree in 2021.")
SUMMARIES = [("model-x", "1", MODEL), ("model-y", "1", MODEL)]
#: per item: (model values, reference values); single values unless lists
VALUES = {
    "filing_date": (["March 3, 2020"], ["March 3, 2020 (complaint)"]),          # reference contains model
    "judge_name": (["Judge Smith"], ["Judge Mary Smith"]),                      # planted bias
    "decree_dates": (["2021"], ["consent decree, 2021"]),                       # planted bias
    "settlement_date": (["2021 settlement"], ["2021"]),                         # planted bias
    "monitor_name": (["Ann Lee"], ["Bob Ray"]),                                 # different
    "appeals": (["none filed"], ["none filed."]),                               # equal (different spelling)
    "parties": (["ACLU", "City of Chicago"], ["ACLU", "City of Chicago", "Police Board"]),  # list matching
}
BIASED = ("judge_name", "decree_dates", "settlement_date")
ITEMS = tuple(item(k) for k in VALUES)


def _extracted(values):
    return json.dumps({"reasoning": "r", "extracted": [{"evidence": [v], "value": v} for v in values]})


def _section(text: str, head: str, next_head: str | None) -> str:
    part = text.split(head, 1)[1]
    return (part.split(next_head, 1)[0] if next_head else part).strip()


def _same(a: str, b: str) -> bool:
    return a.strip(" .").lower() == b.strip(" .").lower()


def content_verdict(a: str, b: str) -> str:
    """What a fair judge says of two single values, whichever side they are on."""
    if _same(a, b):
        return "A equals B"
    if b.lower() in a.lower():
        return "A contains B"
    if a.lower() in b.lower():
        return "B contains A"
    return "A and B are different"


def judge(biased=BIASED, swapped_answers=None):
    """A scripted provider: extraction from VALUES; a fair judge by content, except on the ``biased`` items,
    where it answers "A contains B" whatever the order; ``swapped_answers`` (item, subject) -> a fixed text
    for the second order."""
    swapped_answers = swapped_answers or {}

    def answer(request):
        user = next(m["content"] for m in request.messages if m["role"] == "user")
        if request.stage == "extract":
            model, ref = VALUES.get(request.item, ([], []))
            return _extracted(ref if request.subject == "human" else model)
        if request.stage.startswith(("compare", "residual_match")):
            fixed = swapped_answers.get((request.item, request.subject))
            if fixed and request.stage.endswith("_swapped"):
                return fixed
            if "## Information A" in user:
                if request.item in biased:
                    return "**Reasoning:** A says more.\n**Final Answer:** A contains B"
                a = _section(user, "## Information A", "## Information B")
                b = _section(user, "## Information B", None)
                return f"**Reasoning:** compared.\n**Final Answer:** {content_verdict(a, b)}"
            side_a = [line.split(". ", 1)[1] for line in _section(user, "## List A", "## List B").splitlines()]
            side_b = [line.split(". ", 1)[1] for line in _section(user, "## List B", None).splitlines()]
            common = [{"A_index": i, "B_index": j} for i, x in enumerate(side_a, 1) for j, y in enumerate(side_b, 1)
                      if _same(x, y)]
            only_a = [i for i, x in enumerate(side_a, 1) if not any(_same(x, y) for y in side_b)]
            only_b = [j for j, y in enumerate(side_b, 1) if not any(_same(x, y) for x in side_a)]
            return "**Final Answer:**\n```json\n" + json.dumps(
                {"common": common, "only_in_A": only_a, "only_in_B": only_b}) + "\n```"
        if request.stage == "residual":
            n = sum(1 for line in user.splitlines() if line.startswith("["))
            return json.dumps({"reasoning": "r", "extracted": [{"fact": f"fact {i}", "evidence_spans": [i]}
                                                               for i in range(1, n + 1)]})
        if request.stage == "style":
            return json.dumps({a: 4 for a in vocab.STYLE_ASPECTS})
        raise AssertionError(request.stage)
    return answer


def settings(**kw):
    return pipeline.Settings(extractor="gpt-oss-20b-BF16", judge="gemma-3-27b-it", items=ITEMS, **kw)


@pytest.fixture(scope="module")
def both(tmp_path_factory):
    out = tmp_path_factory.mktemp("orders")
    provider = MockProvider(answer=judge())
    return out, provider, repeated.evaluate_repeats(SUMMARIES, {"1": REF}, provider, out, settings(orders="both"))


# ---------- the mapping through the one vocabulary ----------
@pytest.mark.parametrize("ab", vocab.AB_RELATIONS)
@pytest.mark.parametrize("model_is_a", [True, False])
def test_every_relation_maps_back_to_the_same_verdict_when_the_sides_swap(ab, model_is_a):
    assert vocab.relation_of(vocab.swapped_ab(ab), not model_is_a) == vocab.relation_of(ab, model_is_a)
    assert vocab.swapped_ab(vocab.swapped_ab(ab)) == ab


def test_the_swap_table_and_an_unknown_label():
    assert [vocab.swapped_ab(x) for x in vocab.AB_RELATIONS] == ["b_contains_a", "a_contains_b", "a_equals_b",
                                                                  "a_and_b_different"]
    with pytest.raises(ValueError, match="unknown A/B relation"):
        vocab.swapped_ab("model_contains_reference")


def test_a_list_matching_with_only_in_sides_maps_back_in_both_orders():
    # model [m1, m2, m3], reference [r1, r2]: m1~r2, m3~r1; m2 only in the model; nothing only in the reference
    as_a = vocab.matching_of([(1, 2), (3, 1)], only_in_a=[2], only_in_b=[], model_is_a=True)
    as_b = vocab.matching_of([(2, 1), (1, 3)], only_in_a=[], only_in_b=[2], model_is_a=False)
    assert as_a == as_b == {"pairs": [(1, 2), (3, 1)], "only_in_model": [2], "only_in_reference": []}
    # an only_in_B of the reference side when the model is A; repeated indices read once
    assert vocab.matching_of([], [1, 1], [2, 1], model_is_a=True) == {
        "pairs": [], "only_in_model": [1], "only_in_reference": [1, 2]}
    assert vocab.matching_of([], [1, 1], [2, 1], model_is_a=False) == {
        "pairs": [], "only_in_model": [1, 2], "only_in_reference": [1]}


def test_the_compare_stage_asks_the_second_order_with_the_sides_swapped_and_maps_it_back():
    pair = compare.Pair("m", "1", "parties", ("ACLU", "City", "Board"), ("City", "ACLU"))
    (req1, meta1), = compare.build_requests([pair], "gemma-3-27b-it")[0]
    (req2, meta2), = compare.build_requests([pair], "gemma-3-27b-it", order=2)[0]
    assert meta2["model_is_a"] is (not meta1["model_is_a"]) and meta2["order"] == 2 and "order" not in meta1
    assert req2.stage == "compare_swapped" and req1.stage == "compare" and req1.custom_id != req2.custom_id
    user1, user2 = req1.messages[-1]["content"], req2.messages[-1]["content"]
    assert _section(user1, "## List A", "## List B") == _section(user2, "## List B", None)
    # a model-first answer and its swapped twin: model 1 (ACLU) ~ reference 2, model 2 ~ reference 1, model 3 alone
    model_first = {"common": [{"A_index": 1, "B_index": 2}, {"A_index": 2, "B_index": 1}], "only_in_A": [3], "only_in_B": []}
    ref_first = {"common": [{"A_index": 2, "B_index": 1}, {"A_index": 1, "B_index": 2}], "only_in_A": [], "only_in_B": [3]}
    rows = []
    for meta in (meta1, meta2):
        text = model_first if meta["model_is_a"] else ref_first
        rows.append(compare.parse_response(meta, Response("x", "succeeded", "```json\n" + json.dumps(text) + "\n```")))
    for key in ("pairs", "only_in_model", "only_in_reference", "score", "status"):
        assert rows[0][key] == rows[1][key], key
    assert json.loads(rows[0]["pairs"]) == [[1, 2], [2, 1]] and json.loads(rows[0]["only_in_model"]) == [3]
    assert rows[0]["answer_ab"] != rows[1]["answer_ab"]  # the raw answers are each order's own
    assert compare.table_rows(rows)[0].keys() == compare.parse_response(meta1, None).keys() - set(compare.JUDGMENT_FIELDS)


# ---------- the report ----------
@pytest.fixture(scope="module")
def both_twice(tmp_path_factory):
    out = tmp_path_factory.mktemp("orders_twice")
    return out, repeated.evaluate_repeats(SUMMARIES, {"1": REF}, MockProvider(answer=judge()), out,
                                          settings(orders="both"), repeats=2)


def test_four_of_four_is_too_few_to_test_and_eight_of_eight_names_exactly_the_planted_items(both, both_twice):
    from gavel.report.judge_view import order_line

    order = both[2]["order"]  # 2 summaries x 2 orders: 4 of 4 first, a sign test's p of 0.125
    assert orders.biased_items(order) == [] and orders.MIN_VERDICTS == 6
    row = order.set_index(["stage", "item"]).loc[("compare", "judge_name")]
    assert row["first_is_container"] == 4 and order_line(row) == "not tested (4 containment verdicts; the sign test needs 6)"
    two = order.copy()  # the judge view's "2 of 2", never red
    two[["containment_verdicts", "first_is_container", "first_preference_ci_low"]] = [2, 2, 1.0]
    assert not orders.position_bias(2, 2, 1.0, 1.0) and order_line(two.iloc[0]).startswith("not tested")
    twice = both_twice[1]["order"]  # 8 of 8: p = 0.0078
    assert orders.biased_items(twice) == sorted(("compare", k) for k in BIASED)
    line = orders.summary_line(both[2])
    assert "position bias: none found" in line and "not tested (fewer than 6 containment verdicts)" in line


def test_the_report_reads_the_three_planted_items(both):
    out, _, result = both
    order = result["order"]
    t = order.set_index(["stage", "item"])
    for k in BIASED:  # "A contains B" in both orders: the mapped verdicts disagree on every pair
        assert t.loc[("compare", k), "first_preference"] == 1.0
        assert t.loc[("compare", k), "consistency"] == 0.0
        assert t.loc[("compare", k), ["first_is_container", "second_is_container"]].tolist() == [4, 0]
    assert t.loc[("compare", "filing_date"), "first_preference"] == 0.5  # a containment, fairly judged
    assert t.loc[("compare", "filing_date"), ["first_preference_ci_low", "first_preference_ci_high"]].tolist() == [0.5, 0.5]
    for k in ("filing_date", "monitor_name", "appeals", "parties"):
        assert t.loc[("compare", k), "consistency"] == 1.0
        assert t.loc[("compare", k), "usable_pairs"] == 2
    assert t.loc[("compare", "parties"), "gate"] == "multi"
    assert math.isnan(t.loc[("compare", "monitor_name"), "first_preference"])  # no containment verdict at all
    # the swap matrix of a biased item: model-first pairs say model contains reference, swapped ones the opposite
    swaps = result["order_swaps"]
    cells = swaps[(swaps["item"] == "judge_name") & (swaps["count"] > 0)]
    assert {(r.order_1, r.order_2) for r in cells.itertuples()} <= {
        ("model_contains_reference", "reference_contains_model"), ("reference_contains_model", "model_contains_reference")}
    assert cells["count"].sum() == 2 and len(swaps[swaps["item"] == "judge_name"]) == 25
    # every table is written and read back; the command-line paragraph names the three items
    report = orders.read_report(out)
    assert report["order"]["position_bias"].tolist() == order["position_bias"].tolist()


def test_judgments_table_holds_both_orders_raw_and_mapped(both):
    out, _, result = both
    j = pd.read_csv(out / "judgments.csv", dtype={"case_id": str})
    assert list(j.columns) == ["checklist", "repeat", *judgments.JUDGMENT_COLUMNS] and set(j["checklist"]) == {"legal"}
    single = j[(j["stage"] == "compare") & (j["gate"] == "single")]
    assert len(single) == 2 * 2 * 6 and set(single["order"]) == {1, 2}  # two summaries x two orders x six items
    assert (single.groupby(["subject", "item"])["model_is_a"].nunique() == 2).all()  # the sides did swap
    biased = single[single["item"].isin(BIASED)]
    assert set(biased["answer_ab"]) == {"a_contains_b"}
    fair = single[single["item"] == "filing_date"]
    assert set(fair["relation"]) == {"reference_contains_model"} and set(fair["answer_ab"]) == {"a_contains_b", "b_contains_a"}
    lists = j[j["item"] == "parties"]
    assert set(lists["pairs"]) == {"[[1, 1], [2, 2]]"} and set(lists["only_in_reference"]) == {"[3]"}
    assert set(lists["only_in_model"]) == {"[]"}
    # answers.csv tells the orders apart by stage; compare.csv keeps today's columns and order 1 only
    answers = pd.read_csv(out / "answers.csv")
    assert (answers["stage"] == "compare_swapped").sum() == (answers["stage"] == "compare").sum() > 0
    assert "order" not in pd.read_csv(out / "compare.csv").columns


def test_order_aware_scores_and_order_one_is_todays_score(both):
    _, _, result = both
    summaries = result["order_summaries"].set_index("subject")
    scores = result["runs"][0]["scores"].set_index("subject")
    for subject in ("model-x", "model-y"):
        assert summaries.loc[subject, "s_checklist_order_1"] == pytest.approx(scores.loc[subject, "s_checklist"])
        # the biased items' two containments score 0.5 each: they disagree but their bounds stay a point
        assert summaries.loc[subject, "disagreeing_items"] == 3
        assert summaries.loc[subject, "s_checklist_order_aware_low"] == pytest.approx(
            summaries.loc[subject, "s_checklist_order_aware_high"])
    models = result["order_models"].set_index("subject")
    assert models.loc["model-x", "s_checklist_order_2"] == pytest.approx(models.loc["model-x", "s_checklist_order_1"])


@pytest.fixture(scope="module")
def unusable(tmp_path_factory):
    """The second order answers prose on model-y's filing date (re-asked, still unusable), and flips equal to
    different on model-x's appeals."""
    out = tmp_path_factory.mktemp("unusable")
    swapped = {("filing_date", "model-y"): "I would rather not say.",
               ("appeals", "model-x"): "**Reasoning:** no.\n**Final Answer:** A and B are different"}
    provider = MockProvider(answer=judge(biased=(), swapped_answers=swapped))
    return out, repeated.evaluate_repeats(SUMMARIES, {"1": REF}, provider, out, settings(orders="both"))


def test_an_unusable_answer_is_its_own_outcome_never_a_flip_or_a_zero(unusable):
    out, result = unusable
    t = result["order"].set_index(["stage", "item"])
    row = t.loc[("compare", "filing_date")]
    assert row[["pairs", "usable_pairs", "unusable_pairs", "consistency"]].tolist() == [2, 1, 1, 1.0]
    assert t.loc[("compare", "appeals"), "consistency"] == 0.5
    assert orders.biased_items(result["order"]) == []  # a flip of equal to different is no position preference
    swaps = result["order_swaps"]
    cell = swaps[(swaps["item"] == "filing_date") & (swaps["count"] > 0)]
    assert set(zip(cell["order_1"], cell["order_2"])) == {("reference_contains_model", "reference_contains_model"),
                                                         ("reference_contains_model", "unusable")}
    s = result["order_summaries"].set_index("subject")
    # model-y: six applicable items; filing date 0.5 in order 1, unusable in order 2: best 0.5, bounds [0, 1]
    y = s.loc["model-y"]
    assert y["unusable_items"] == 1 and y["disagreeing_items"] == 0
    assert math.isnan(y["s_checklist_order_2"]) is False
    base = result["runs"][0]["compare"]
    scores = base[(base["subject"] == "model-y") & (base["gate"] != "not_applicable")].set_index("item")["score"]
    others = scores.drop("filing_date")
    assert y["s_checklist_order_2"] == pytest.approx(100 * others.mean())
    assert y["s_checklist_order_aware"] == pytest.approx(100 * scores.mean())
    assert y["s_checklist_order_aware_low"] == pytest.approx(100 * others.sum() / len(scores))
    assert y["s_checklist_order_aware_high"] == pytest.approx(100 * (others.sum() + 1) / len(scores))
    # model-x: appeals equal (1) in order 1, different (0) in order 2: bounds [0, 1], best 0.5
    x = s.loc["model-x"]
    xs = base[(base["subject"] == "model-x") & (base["gate"] != "not_applicable")].set_index("item")["score"]
    assert x["disagreeing_items"] == 1 and x["unusable_items"] == 0
    assert x["s_checklist_order_aware"] == pytest.approx(100 * (xs.drop("appeals").sum() + 0.5) / len(xs))
    assert x["s_checklist_order_aware_low"] == pytest.approx(100 * xs.drop("appeals").sum() / len(xs))
    assert x["s_checklist_order_aware_high"] == pytest.approx(100 * (xs.drop("appeals").sum() + 1) / len(xs))
    # the majority of a unit with one usable and one unusable judgment is a tie: no majority, no stable k
    m = result["order_majority"].set_index(["subject", "item"])
    assert m.loc[("model-y", "filing_date"), "majority"] is None or pd.isna(m.loc[("model-y", "filing_date"), "majority"])
    assert math.isnan(m.loc[("model-y", "filing_date"), "stable_k"])
    assert m.loc[("model-x", "filing_date"), ["judgments", "majority_share", "stable_k"]].tolist() == [2, 1.0, 1.0]
    # answers.csv keeps the unusable swapped answer with its reason (and its re-asks)
    unusable_rows = pipeline.unusable_answers(pipeline.read_tables(out))
    assert (unusable_rows["stage"] == "compare_swapped").sum() == 1


def test_stable_k_counts_how_many_judgments_a_stable_majority_needs():
    assert orders.stable_k((4,)) == 1.0
    assert math.isnan(orders.stable_k((2, 2)))
    k31 = orders.stable_k((3, 1))  # 3 of 4: one judgment agrees 75% of the time; more are needed
    assert k31 == 9  # exact: P(Binomial(9, 3/4) >= 5) = 0.951, P(Binomial(7, 3/4) >= 4) = 0.929
    assert orders.stable_k((9, 1)) < k31
    assert math.isnan(orders.stable_k((51, 49)))  # a near-tie needs more than MAX_K judgments
    # three outcomes: the exact answer (resampling with 2000 draws said 47)
    assert orders.stable_k((2, 1, 1)) == 46


def test_majority_probability_is_exact():
    """Two outcomes: the binomial tail; three: a brute-force sum over every sequence of k judgments."""
    import itertools
    from math import comb
    for k in (1, 2, 5, 8):
        binom = sum(comb(k, t) * 0.75 ** t * 0.25 ** (k - t) for t in range(k // 2 + 1, k + 1))
        assert orders.majority_probability((3, 1), k) == pytest.approx(binom, abs=1e-12)
    p = (0.5, 0.3, 0.2)
    for k in (1, 3, 4, 6):
        brute = 0.0
        for seq in itertools.product(range(3), repeat=k):
            n = [seq.count(i) for i in range(3)]
            if n[0] > n[1] and n[0] > n[2]:
                brute += math.prod(p[i] for i in seq)
        assert orders.majority_probability((5, 3, 2), k) == pytest.approx(brute, abs=1e-12)
    curve = orders.majority_curve((3, 1), range(1, 10))
    assert curve[0] == pytest.approx(0.75) and curve[-1] >= orders.STABLE_SHARE > max(curve[:-1])


# ---------- order one is today's run ----------
def _without_the_checklist(path: Path) -> bytes:
    """A table as it was before runs named their checklist (docs/checklists.md: a `checklist` first column in
    scores.csv and model_scores.csv, a `checklist` entry in evaluation.json): that addition is deliberate,
    everything else must be byte for byte today's."""
    data = path.read_bytes()
    if path.name == "evaluation.json":
        manifest = json.loads(data)
        manifest.pop("checklist", None)
        return json.dumps(manifest, indent=1, sort_keys=True).encode()
    if data.startswith(b"checklist,"):
        return b"".join(line.split(b",", 1)[1] for line in data.splitlines(keepends=True))
    return data


def fingerprint(out: Path, provider) -> dict:
    """What must not change when orders is one: the requests sent, the cache's keys, and every table."""
    files = {p.relative_to(out).as_posix(): hashlib.sha256(_without_the_checklist(p)).hexdigest()
             for p in sorted(out.glob("*")) if p.suffix == ".csv" or p.name == "evaluation.json"}
    cache = sorted(p.relative_to(out).as_posix() for p in out.glob("runs/*/cache/**/*") if p.is_file())
    return {"ids": sorted(cid for _, cid in provider.submissions), "cache": cache, "files": files}


#: tables a run writes that did not exist when the golden file was written (each a file of its own)
ADDED_SINCE = {"cost.csv", "comparisons.csv", "comparison_models.csv"}
#: tables changed on purpose since: their bootstrap interval endpoints are written with the digits the
#: resampling supports (issue 27, stats.endpoint_digits) instead of 4 -- requests, answers and every verdict
#: and score table are still compared byte for byte
REROUNDED_SINCE = {"model_scores.csv", "summary_bootstrap.csv"}


def _comparable(run: dict) -> dict:
    return {**run, "files": {k: v for k, v in run["files"].items() if k not in ADDED_SINCE | REROUNDED_SINCE}}


def golden_run(out: Path) -> dict:
    provider = MockProvider(answer=today.scripted)
    pipeline.evaluate(today.SUMMARIES, {"1": today.REF}, provider, out, today.settings())
    return fingerprint(out, provider)


def test_order_one_is_todays_run_byte_for_byte(tmp_path):
    """The golden file was written by main without --orders (golden_run's steps on main at f494945)."""
    golden = json.loads(GOLDEN.read_text())
    now = golden_run(tmp_path / "now")
    # tables added since the golden file was written (the cost ledger, the comparisons) are new files, not changed ones
    assert set(now["files"]) - set(golden["files"]) == ADDED_SINCE
    assert _comparable(now) == _comparable(golden)
    # through the repeats machinery (what the CLI and notebooks call): the same, plus judgments.csv
    provider = MockProvider(answer=today.scripted)
    result = repeated.evaluate_repeats(today.SUMMARIES, {"1": today.REF}, provider, tmp_path / "cli", today.settings(), repeats=1)
    seen = fingerprint(tmp_path / "cli", provider)
    assert seen["files"].pop("judgments.csv") and _comparable(seen) == _comparable(golden)
    assert set(result) == {"runs", "judgments"} and set(result["judgments"]["order"]) == {1}


def test_both_orders_keep_the_first_orders_requests_and_scores(tmp_path):
    golden = json.loads(GOLDEN.read_text())
    # the same judge, answering the swapped requests as it answers their first order
    provider = MockProvider(answer=lambda r: today.scripted(replace(r, stage=r.stage.removesuffix("_swapped"))))
    tables = pipeline.evaluate(today.SUMMARIES, {"1": today.REF}, provider, tmp_path, replace(today.settings(), orders="both"))
    seen = fingerprint(tmp_path, provider)
    assert set(golden["ids"]) < set(seen["ids"])
    extra = len(seen["ids"]) - len(golden["ids"])
    assert extra == (tables["judgments"]["order"] == 2).sum() > 0  # one more request per judged pair
    for name in ("scores.csv", "compare.csv", "values.csv"):  # model_scores.csv: REROUNDED_SINCE
        assert seen["files"][name] == golden["files"][name], name
    assert tables["manifest"]["orders"] == "both"


def test_orders_must_be_one_or_both(tmp_path):
    with pytest.raises(pipeline.InputError, match="--orders"):
        pipeline.evaluate(SUMMARIES, {"1": REF}, MockProvider(answer=judge()), tmp_path, settings(orders="two"))
    assert not (tmp_path / "runs").exists()  # refused before anything was sent


def two_item_cli_run(folder: Path) -> list[str]:
    """``gavel evaluate`` arguments for one case and two items in ``folder`` (the current directory): the
    stand-in model quotes sentences sharing a word with the item's name, one value each side, not the same."""
    summary = "Filing date: March 3, 2020. The decrees were entered in 2021. The city paid damages."
    reference = "Filing date: March 3, 2020, in Chicago. The decrees were entered in 2021 and 2022."
    (folder / "s.jsonl").write_text(json.dumps({"case_id": "1", "summary": summary}) + "\n")
    (folder / "refs.json").write_text(json.dumps({"1": reference}))
    return ["evaluate", "--summaries", "s.jsonl", "--references", "refs.json", "--provider", "mock", "--out", "out",
            "--items", "filing_date", "decree_dates"]


def test_cli_orders_both_dry_run_counts_the_second_order_and_run_prints_the_report(tmp_path, capsys, monkeypatch):
    from gavel import cli

    monkeypatch.chdir(tmp_path)
    base = two_item_cli_run(tmp_path)
    assert cli.main(base + ["--dry-run"]) == 0
    assert "compare: at most 2 requests" in capsys.readouterr().out
    assert cli.main(base + ["--dry-run", "--orders", "both"]) == 0
    assert "compare: at most 4 requests; residual: at most 2 fact requests and 2 matchings" in capsys.readouterr().out
    assert cli.main(base + ["--orders", "both", "--repeats", "2"]) == 0
    printed = capsys.readouterr().out
    assert "orders:" in printed and "position bias:" in printed and "stability over 2 repeats" in printed
    report = orders.read_report(tmp_path / "out")
    assert set(report["order_summaries"]["repeat"]) == {1, 2}
    j = pd.read_csv(tmp_path / "out" / "judgments.csv")
    compared = j[j["stage"] == "compare"]
    assert sorted(compared.groupby(["repeat", "order"]).size().items()) == [((r, o), 2) for r in (1, 2) for o in (1, 2)]
    # the stand-in judges by content: the same verdict in both orders, every pair consistent, no bias
    assert report["order"].set_index("stage").loc["compare", "consistency"].tolist() == [1.0, 1.0]
    assert "position bias: none found" in printed
    with pytest.raises(SystemExit):
        cli.main(base + ["--orders", "three"])


def test_notebook_12_shows_the_order_report_and_draws_the_figure(both, tmp_path, monkeypatch):
    text = today.run_notebook_12(both[0], tmp_path, monkeypatch)
    assert (tmp_path / "figures" / "ref_order_consistency.png").stat().st_size > 0
    assert (tmp_path / "figures" / "ref_majority_curves.png").stat().st_size > 0
    assert "first_preference" in text and "judge_name" in text and "s_checklist_order_aware" in text


def test_local_model_both_orders_two_repeats(tmp_path):
    """End to end on the real local model (llama.cpp, SmolLM2): two repeats x two orders of the judge on one
    small case; every judged pair has exactly one judgment per repeat and order, and the report's counts are
    the judgments' own."""
    from needs import unavailable

    from gavel.llm.providers.local import LocalServer, default_model, installed

    if installed():
        unavailable(f"local model not installed: {installed()}")
    model = default_model()
    # one sentence each: the tiny model's extraction of a longer text runs past its cap or echoes the prompt's
    # placeholders (dropped), and then nothing reaches the judge; the stage caps are the local model's own
    reference = "The complaint was filed on March 3, 2020."
    summary = "The case was filed on March 3, 2020, and later on April 1, 2020 an amended complaint was filed."
    s = pipeline.Settings(extractor=model, judge=model, items=(item("Filing Date"),), orders="both")
    with LocalServer() as server:
        result = repeated.evaluate_repeats([("local-run", "1", summary)], {"1": reference}, server, tmp_path, s,
                                            repeats=2)
    j = result["judgments"]
    for r, run in enumerate(result["runs"], 1):
        judged = run["compare"][run["compare"]["gate"].isin(["single", "multi"])]
        mine = j[(j["repeat"] == r) & (j["stage"] == "compare")]
        assert sorted(mine[mine["order"] == 1]["item"]) == sorted(mine[mine["order"] == 2]["item"]) == sorted(judged["item"])
        assert run["manifest"]["orders"] == "both"
    assert len(j) > 0, "the local model's checklists left nothing for the judge"
    assert (tmp_path / "judgments.csv").exists() and (tmp_path / "order.csv").exists()
    order = result["order"]
    pairs = orders.order_pairs(j.assign(case_id=j["case_id"].astype(str)))
    assert int(order["pairs"].sum()) == len(pairs) == len(j) // 2
    assert int(order["unusable_pairs"].sum()) == int((~pairs["usable"]).sum())


def test_order_aware_best_estimate_keeps_the_usable_order_of_an_item():
    """docs/orders.md's worked example: an item unusable in one order enters the best estimate with the other
    order's score (75.00); only an item unusable in both orders is left out. Reading the sentence as "leave
    the item out" would give 62.50."""
    rows = [("a", "ok", 1.0, "equal", "ok", 1.0, "equal"),
            ("b", "ok", 0.5, "model_contains_reference", "ok", 0.0, "different"),
            ("c", "ok", 1.0, "equal", "no_json", None, None),
            ("d", "failed", None, None, "no_json", None, None)]
    base = {"subject": "m", "case_id": "1", "gate": "single", "pairs": None}
    compare = pd.DataFrame([{**base, "item": i, "status": s1, "score": x1, "relation": r1} for i, s1, x1, r1, *_ in rows])
    second = pd.DataFrame([{**base, "stage": "compare", "order": 2, "repeat": 1, "item": i, "status": s2, "score": x2,
                            "relation": r2} for i, _, _, _, s2, x2, r2 in rows])
    out = orders.summary_scores(second, [{"compare": compare}]).iloc[0]
    assert out["s_checklist_order_aware"] == pytest.approx(75.0)
    assert out["s_checklist_order_1"] == pytest.approx(100 * 2.5 / 3)
    assert out["s_checklist_order_2"] == pytest.approx(50.0)
    assert (out["s_checklist_order_aware_low"], out["s_checklist_order_aware_high"]) == (25.0, 87.5)
    assert (out["items"], out["disagreeing_items"], out["unusable_items"]) == (4, 1, 2)


def test_majority_table_says_what_a_stable_majority_costs_at_the_runs_prices():
    majority = pd.DataFrame({"stage": ["compare", "compare", "residual_match"], "item": ["a", "b", "residual_facts"],
                             "judgments": [4, 4, 2], "stable_k": [9.0, 1.0, math.nan],
                             "outcomes": ['{"relation:equal": 3, "relation:different": 1}', '{"relation:equal": 4}',
                                          '{"unusable": 1, "pairs:[]": 1}'],
                             "majority": ["relation:equal", "relation:equal", None]})
    cost = pd.DataFrame({"stage": ["compare", "compare", "residual_match"], "requests": [6, 2, 2],
                         "usd_when_answered": [0.03, 0.01, 0.5]})
    out = orders.with_cost(majority, [{"cost": cost}, {"cost": cost}])
    assert out["usd_per_judgment"].tolist() == pytest.approx([0.005, 0.005, 0.25])
    assert out["stable_k_usd"].tolist()[:2] == pytest.approx([0.045, 0.005]) and math.isnan(out["stable_k_usd"][2])
    assert out["more_judgments"].tolist()[:2] == [5.0, 0.0] and out["more_usd"][0] == pytest.approx(0.025)
    curves = orders.majority_curves(majority, range(1, 10)).set_index(["item", "k"])
    assert curves.loc[("a", 9), "probability"] >= orders.STABLE_SHARE > curves.loc[("a", 7), "probability"]
    assert curves.loc[("b", 1), "probability"] == 1.0 and "residual_facts" not in curves.index.get_level_values(0)
    import matplotlib
    matplotlib.use("Agg")
    assert orders.majority_figure(majority).axes[0].get_lines()

def test_an_out_of_range_index_in_the_second_order_is_recorded_in_its_judgment(tmp_path):
    """The swapped order's list matching names an index past the end of a list: the judgment keeps the usable
    part and says what it dropped (order 1's compare.csv says it in ``problems``; order 2 has only its
    judgments-table row), never ``ok`` with nothing said."""
    answer = {"common": [{"A_index": 1, "B_index": 1}, {"A_index": 9, "B_index": 2}], "only_in_A": [2, 3],
              "only_in_B": []}
    swapped = {("parties", "model-x"): "**Final Answer:**\n```json\n" + json.dumps(answer) + "\n```"}
    provider = MockProvider(answer=judge(biased=(), swapped_answers=swapped))
    result = repeated.evaluate_repeats(SUMMARIES, {"1": REF}, provider, tmp_path, settings(orders="both"))
    j = result["judgments"]
    row = j[(j["stage"] == "compare") & (j["item"] == "parties") & (j["subject"] == "model-x") & (j["order"] == 2)]
    assert len(row) == 1
    row = row.iloc[0]
    assert row["status"] != "ok" or "out of range" in row["detail"], row.to_dict()
    assert "9" in row["detail"]
    on_disk = pd.read_csv(tmp_path / "judgments.csv")
    kept = on_disk[(on_disk["item"] == "parties") & (on_disk["subject"] == "model-x") & (on_disk["order"] == 2)]
    assert "out of range" in kept.iloc[0]["detail"]


def test_the_comparison_names_the_order_aware_mean_it_compares_and_the_board_says_it_shows_order_1(both):
    """Issue 44 §1: with --orders both the comparison used the mean of both orders while the table beside it
    showed order 1's score, unlabelled."""
    from gavel.runs import comparisons

    _, _, result = both
    c, m = result["comparisons"], result["comparison_models"]
    chk = m[m["score"] == "s_checklist"].set_index("model")
    assert set(c.loc[c["score"] == "s_checklist", "compared"]) == {"mean of 2 orders"}
    aware = result["order_models"].set_index("subject")
    board = result["model_scores"].set_index("subject")
    for subject in chk.index:  # the comparison's mean is the mean of both orders; the board's is order 1's
        both_orders = aware.loc[subject, ["s_checklist_order_1", "s_checklist_order_2"]].mean()
        assert chk.loc[subject, "mean"] == pytest.approx(both_orders)
        assert board.loc[subject, "s_checklist"] == pytest.approx(aware.loc[subject, "s_checklist_order_1"])
    line = comparisons.summary_line(c, m)
    assert "S_checklist (mean of 2 orders):" in line  # one case each: nothing tested, and it says so
    assert "not tested (no pair with two common cases)" in line and "not tested (1 common case;" in line
    assert "repeat 1, order 1" in comparisons.board_heading(result["model_scores"], True)
