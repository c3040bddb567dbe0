"""The mock's judge (`--mock-judge`, gavel.runs.stand_in): the default stand-in has no judge noise and no order
bias (every repeat and order answers alike); a seeded noisy, order-biased judge can be asked for, so that
`--repeats`, `--orders both` and `--label-orders K` find something without a model; the default mock's cache
keys do not change."""

import argparse

import pytest

from gavel.core import options
from gavel.core.items import item
from gavel.llm.providers.mock import MockProvider
from gavel.llm.records import Request
from gavel.llm.runner import StageRunner
from gavel.runs import pipeline, stand_in
from gavel.runs import repeats as repeated

ITEMS = (item("Filing Date"), item("First and Last name of Judge"), item("Name of the Monitor"))


def _texts(n):
    """n cases whose model and reference sentences share the items' words, so the stand-in extracts one value a
    side per item (single-value pairs), equal on some items and different on others."""
    refs, summaries = {}, []
    for c in range(n):
        refs[str(c)] = (f"The filing was on March {c + 1}, 2020. Judge Mary Smith{c} presided. "
                        f"The monitor is Ann Lee.")
        summaries.append(("model-x", str(c), f"The filing was on March {c + 1}, 2020. Judge Mary Smith{c} "
                                             f"presided. The monitor is Bob Ray{c}."))
        summaries.append(("model-y", str(c), f"The filing came in 2020. Judge Smith{c} presided. "
                                             f"The monitor is Ann Lee."))
    return summaries, refs


def _run(tmp_path, spec, repeats=1, orders="one", label_orders=1):
    summaries, refs = _texts(4)
    provider = pipeline.provider("mock", **stand_in.mock_options(spec))
    s = pipeline.Settings(extractor="gpt-oss-20b-BF16", judge="gemma-3-27b-it", items=ITEMS, orders=orders,
                          label_orders=label_orders)
    return repeated.evaluate_repeats(summaries, refs, provider, tmp_path, s, repeats=repeats)


def _singles(result):
    j = result["judgments"]
    return j[(j["stage"] == "compare") & (j["gate"] == "single")]


def test_the_default_mock_judge_answers_alike_in_every_repeat_and_order(tmp_path):
    j = _singles(_run(tmp_path, None, repeats=2, orders="both"))
    assert len(j) == 4 * 2 * 2 * 3  # cases x repeats x orders x items
    per_pair = j.groupby(["subject", "case_id", "item"])["relation"].nunique()
    assert (per_pair == 1).all()


def test_a_noisy_judge_disagrees_with_itself_across_repeats_and_is_seeded(tmp_path):
    spec = options.judge_spec("noisy:seed=1,flip=0.5")
    j = _singles(_run(tmp_path / "a", spec, repeats=3))
    per_pair = j.groupby(["subject", "case_id", "item"])["relation"].nunique()
    assert (per_pair > 1).any()
    again = _singles(_run(tmp_path / "b", spec, repeats=3))
    assert list(again["relation"]) == list(j["relation"])  # the same seed: the same answers
    other = _singles(_run(tmp_path / "c", options.judge_spec("noisy:seed=2,flip=0.5"), repeats=3))
    assert list(other["relation"]) != list(j["relation"])


def test_a_side_biased_judge_is_seen_by_orders_both(tmp_path):
    result = _run(tmp_path, options.judge_spec("noisy:seed=3,a_bias=1"), orders="both")
    j = _singles(result)
    assert set(j["answer_ab"]) == {"a_contains_b"}  # A contains B whichever side the model is on
    flipped = j.groupby(["subject", "case_id", "item"])["relation"].nunique()
    assert (flipped == 2).all()  # so every single pair reads differently in the two orders


def test_a_first_option_biased_judge_is_seen_by_label_orders(tmp_path):
    result = _run(tmp_path, options.judge_spec("noisy:seed=4,first_bias=1"), label_orders=4)
    lj = result["label_judgments"]
    assert len(lj) and set(lj["answer_position"]) == {1.0}  # always the option listed first, in every row
    assert set(lj["label_order"]) == {0, 1, 2, 3}
    assert result["label_order"]["option_order_bias"].any()


def test_the_default_mock_keeps_its_cache_keys_and_a_noisy_one_has_its_own(tmp_path):
    r = Request(stage="compare", model="gemma-3-27b-it", messages=[{"role": "user", "content": "hi"}])
    assert MockProvider().identity() == {"provider": "mock", "kind": "MockProvider", "base_url": None}
    default = StageRunner("compare", pipeline.provider("mock"), workdir=tmp_path / "d", progress=False)
    noisy = StageRunner("compare", pipeline.provider("mock", **stand_in.mock_options(
        options.judge_spec("noisy:seed=1,flip=0.2"))), workdir=tmp_path / "n", progress=False)
    plain = StageRunner("compare", MockProvider(), workdir=tmp_path / "p", progress=False)
    assert default.key(r) == plain.key(r) != noisy.key(r)


@pytest.mark.parametrize("text", ["loud", "noisy:flip=2", "noisy:flip=0.7,a_bias=0.7", "noisy:bias=0.1",
                                  "noisy:seed=-1", "noisy:flip=x"])
def test_a_bad_spec_is_one_argparse_error(text):
    with pytest.raises(argparse.ArgumentTypeError):
        options.judge_spec(text)


def test_cli_mock_judge(tmp_path, capsys):
    from gavel import cli

    summaries, refs = _texts(2)
    import json
    (tmp_path / "s.json").write_text(json.dumps({c: t for s, c, t in summaries if s == "model-x"}))
    (tmp_path / "r.json").write_text(json.dumps(refs))
    base = ["evaluate", "--summaries", str(tmp_path / "s.json"), "--references", str(tmp_path / "r.json"),
            "--items", "Filing Date", "Name of the Monitor", "--out", str(tmp_path / "out")]
    assert cli.main(base + ["--provider", "mock", "--mock-judge", "noisy:seed=1,flip=0.3", "--repeats", "2"]) == 0
    assert cli.main(base + ["--provider", "openai", "--mock-judge", "noisy:seed=1", "--dry-run"]) == 2
    assert "--mock-judge sets the mock's judge" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        cli.main(base + ["--provider", "mock", "--mock-judge", "noisy:flip=3"])
    assert "--mock-judge" in capsys.readouterr().err
