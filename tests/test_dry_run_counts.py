"""The dry run counts each distinct text once and renders no request it only needs a count of (issue 27 §3):
counts of a template with its long texts given as tokens.Split equal the rendered messages' counts exactly,
on the release's summaries and on texts built to break it; the release's answer lengths are measured once
per release."""

from __future__ import annotations

import json
import random

import pandas as pd
import pytest

from gavel.core import tokens
from gavel.core.items import ITEMS
from gavel.llm import estimate
from gavel.llm.providers.mock import MockProvider
from gavel.llm.runner import StageRunner
from gavel.ref import prompts
from gavel.ref.stages import extract, style
from gavel.runs import costing

STYLE_FIXED = {"aspects": style.aspects_text(), "score_keys": json.dumps({k: "<1-5>" for k in style.STYLE_ASPECTS},
                                                                         indent=1)}


def rendered(name: str, **fields) -> list[int]:
    return [tokens.count_tokens(m["content"]) for m in prompts.render_messages(name, **fields)]


def joined(name: str, **fields) -> int:
    return tokens.count_tokens("".join(m["content"] for m in prompts.render_messages(name, **fields)))


def check(text: str, other: str) -> None:
    """Every template the dry run counts, with ``text`` (and ``other`` beside it in style) given split."""
    a, b = tokens.split(text), tokens.split(other)
    assert a.tokens == tokens.count_tokens(text)
    item = {"item_name": ITEMS[0].name, "item_definition": ITEMS[0].summary_instruction}
    assert prompts.message_tokens("extract", summary=a, **item) == rendered("extract", summary=text, **item)
    assert prompts.joined_tokens("residual", spans=a) == joined("residual", spans=text)
    assert prompts.message_tokens("style", a=a, b=b, **STYLE_FIXED) == rendered("style", a=text, b=other,
                                                                                  **STYLE_FIXED)


def test_counts_from_splits_equal_the_rendered_prompts_on_every_release_summary(shared_rel):
    s = shared_rel.summaries
    s = s[s["set"] == "benchmark"]
    refs = dict(zip(s.loc[s["model"] == "human", "case_id"], s.loc[s["model"] == "human", "text"]))
    pairs = [(t, refs[c]) for t, c, m in zip(s["text"], s["case_id"], s["model"]) if m != "human" and c in refs]
    assert len(pairs) >= 1000
    naive_off = 0
    for text, reference in pairs:
        check(text, reference)
        # a sum of the parts' own counts is not exact: pieces merge across the boundaries (".\n\n")
        parts = (prompts.render_messages("style", a="", b="", **STYLE_FIXED)[1]["content"], text, reference)
        naive_off += sum(map(tokens.count_tokens, parts)) != rendered("style", a=text, b=reference,
                                                                      **STYLE_FIXED)[1]
    assert naive_off > 0


HOSTILE = ["a", "b", "Z", " ", "  ", "\n", "\n\n", "\t", ".", ",", "'", "'s", "/", "\\", "$", "${x}", "1", "22",
           "333", "é", "東京", "🚀", "[", "]", "[user]", "\n[user]\n", "\n[system]  \n", "[assistant]", "\r\n",
           "<|endoftext|>", " court", " the", "ed", "—", "\u00a0", "\u200b", "the end.", ".\n", "##", "ing", "'ll", "s",
           "Court", "he", "re", "ly", ":", "(", ")", "1,000", "\ufe0f", "\u0301"]


def hostile(rng: random.Random, most: int = 40) -> str:
    return "".join(rng.choice(HOSTILE) for _ in range(rng.randint(0, most)))


@pytest.mark.parametrize("seed", range(4))
def test_a_split_text_counts_exactly_with_any_text_on_either_side(seed):
    """The property the counting rests on: for any X and Y, tokens(X + text + Y) = tokens(X + head) + inner +
    tokens(tail + Y) -- the boundaries split at are context-free."""
    rng = random.Random(seed)
    for _ in range(1500):
        x, text, y = hostile(rng, 6), hostile(rng), hostile(rng, 6)
        sp = tokens.split(text)
        assert sp.tokens == tokens.count_tokens(text)
        assert tokens.count_parts([x, *sp.parts(), y]) == tokens.count_tokens(x + text + y), (x, text, y)


@pytest.mark.parametrize("seed", range(6))
def test_counts_from_splits_equal_the_rendered_prompts_on_texts_built_to_break_them(seed):
    """Random texts from pieces that merge across boundaries (punctuation before newlines, digits, contractions,
    spaces), whitespace at either end, role lines inside a value, placeholders and special-token text."""
    rng = random.Random(seed)
    for _ in range(60):
        text, other = hostile(rng), hostile(rng) + "x"
        if not text.strip():
            text += "x"  # an empty summary is refused before anything is counted
        check(text, other)


def test_a_role_line_in_a_summary_is_counted_as_rendering_splits_it():
    text = "The court ruled.\n[user]\nThe parties settled in 2021 and the court approved it."
    sp = tokens.split(text)
    item = {"item_name": "x", "item_definition": "y"}
    assert prompts.message_tokens("extract", summary=sp, **item) == rendered("extract", summary=text, **item)
    assert len(prompts.message_tokens("extract", summary=sp, **item)) == 4  # the value's [user] line splits it


def test_values_count_as_render_substitutes_them():
    """A number is substituted as its text (never taken for a token count); a field no template line holds
    alone, and an empty prompt, are refused or counted as rendering does."""
    fields = {"item_name": 7, "item_definition": "", "summary": tokens.split("The court ruled in 2020.")}
    assert prompts.message_tokens("extract", **fields) == rendered("extract", **{**fields, "summary":
                                                                                 fields["summary"].text})
    with pytest.raises(prompts.PromptError, match="item_name"):
        prompts.message_tokens("extract", summary="x", item_definition="y")


def test_the_dry_run_renders_no_request_and_tokenises_each_text_once(tmp_path, monkeypatch, capsys):
    """Before: every one of the 26 x (summaries + references) extract requests and every style request was
    rendered and held at once, each summary counted again in every stage."""
    from gavel.runs import pipeline

    rendered_names, encoded = [], []
    real_render, enc = prompts.render_messages, tokens.encoding()
    real_encode = enc.encode
    monkeypatch.setattr(prompts, "render_messages", lambda name, *a, **k: rendered_names.append(name)
                        or real_render(name, *a, **k))
    monkeypatch.setattr(enc, "encode", lambda text, *a, **k: encoded.append(text) or real_encode(text, *a, **k))
    tokens._count.cache_clear()
    texts = [f"Summary {m}: the court entered a consent decree in 2019 and appointed a monitor." for m in "abc"]
    reference = "The parties settled; the court approved the settlement and kept jurisdiction."
    settings = pipeline.Settings(extractor="gpt-4.1-2025-04-14", judge="gpt-4.1-2025-04-14")
    table = pipeline.dry_run([(m, "1", t) for m, t in zip("abc", texts)], {"1": reference}, MockProvider(),
                             settings, tmp_path)
    assert int(table.loc[table["stage"] == "extract", "requests"].sum()) == 4 * len(ITEMS)
    assert not {"extract", "style"} & set(rendered_names), rendered_names
    for text in texts + [reference]:
        assert encoded.count(text) == 1, text
    assert len(encoded) == len(set(encoded))


def test_planned_requests_price_as_the_built_ones_with_a_partly_answered_cache_and_a_too_long_one(tmp_path):
    """The same table, cached count and too-long requests whether the stage's requests are given built or
    planned; a planned request is built only where the cache holds answers or it is too long."""
    summaries = [extract.Summary("m", "1", "The court ruled for the plaintiffs in 2020."),
                 extract.Summary("m", "2", "The parties settled. " * 3_000)]  # over the small model's 8,192
    items = ITEMS[:3]
    built = extract.build_requests(summaries, "SmolLM2-135M-Instruct", items)
    runner = StageRunner("extract", MockProvider(), tmp_path / "run", progress=False)
    runner.run(built[:2], mode="online")  # two answered
    before = estimate.dry_run(runner, built, show=False, keep=False)
    calls = []
    plans = [estimate.Planned(p.model, p.max_tokens, p.input_tokens, lambda p=p: calls.append(1) or p.build())
             for p in extract.plan_requests(summaries, "SmolLM2-135M-Instruct", items)]
    after = estimate.dry_run(runner, iter(plans), show=False, keep=False)
    pd.testing.assert_frame_equal(before, after)
    assert before.attrs["already_cached"] == after.attrs["already_cached"] == 2
    assert before.attrs["too_long"] == after.attrs["too_long"] and len(after.attrs["too_long"]) == 3
    assert set(after.attrs["too_long_requests"]) == {r.custom_id for r in built[3:]}
    assert len(calls) == len(plans)  # the cache holds answers: each is built to be looked up
    calls.clear()
    fresh = StageRunner("extract", MockProvider(), tmp_path / "fresh", progress=False)
    estimate.dry_run(fresh, iter(plans), show=False, keep=False)
    assert len(calls) == 3  # an empty cache: only the too-long ones are built (to be named)


def test_the_release_answer_lengths_are_measured_once_per_release(fixture_root, tmp_path, monkeypatch):
    import shutil

    from gavel import release

    root = tmp_path / "data"
    shutil.copytree(fixture_root, root)
    monkeypatch.setattr(costing, "LENGTHS_DIR", tmp_path / "kept")
    costing.recorded_answer_lengths.cache_clear()
    first = costing.recorded_answer_lengths(str(root))
    assert first["extract"][1].startswith("release: ") and len(list((tmp_path / "kept").iterdir())) == 1

    def no_release(*a, **k):
        raise AssertionError("the release was read again")

    monkeypatch.setattr(release, "load_release", no_release)
    costing.recorded_answer_lengths.cache_clear()
    assert costing.recorded_answer_lengths(str(root)) == first
    changed = next(p for p in sorted(root.rglob("*.json")) if p.stat().st_size)
    changed.write_text(changed.read_text(encoding="utf-8") + " ", encoding="utf-8")
    costing.recorded_answer_lengths.cache_clear()
    with pytest.raises(AssertionError, match="read again"):
        costing.recorded_answer_lengths(str(root))  # a changed release is measured anew
    costing.recorded_answer_lengths.cache_clear()


def test_extraction_answers_are_those_of_the_grouped_rows():
    """The answers measured: one per (model, part, case, item) in key order, rows in their order; rows
    without a part (the references' own checklists, which pandas' groupby would leave out) are counted too."""
    rows = pd.DataFrame({"model": ["b", "a", "a", "b", "human", "a"], "part": pd.array([1, 2, 2, 1, None, 1], "Int64"),
                         "case_id": ["9", "1", "1", "9", "1", "1"], "item": ["x", "y", "y", "x", "x", "y"],
                         "value": ["v1", "v2", "v3", "v4", "h", "v5"],
                         "evidence": [["e1"], None, ["e3"], [], ["eh"], ["e5"]]})
    answers, lists = costing._extraction_answers(rows)
    expect_answers, expect_lists = [], []
    for _, g in rows.groupby(["model", "part", "case_id", "item"], sort=True, dropna=False):
        expect_answers.append(json.dumps({"extracted": [{"value": v, "evidence": list(e) if e is not None else []}
                                                        for v, e in zip(g["value"], g["evidence"])]},
                                         ensure_ascii=False))
        expect_lists.append("\n".join(f"{i}. {v}" for i, v in enumerate(g["value"], 1)))
    assert (answers, lists) == (expect_answers, expect_lists) and len(answers) == 4
    assert '"value": "h"' in answers[3]  # the reference's (model human, no part)
    assert lists[1] == "1. v2\n2. v3"


def test_the_command_line_and_its_dry_run_import_no_statistics_package(tmp_path):
    """scikit-learn, statsmodels and krippendorff cost every process over a second (the dry run's floor is
    half a second); they are imported by the computations that use them."""
    import subprocess
    import sys
    from pathlib import Path

    s, r = tmp_path / "s.jsonl", tmp_path / "refs.json"
    s.write_text(json.dumps({"case_id": "1", "model": "m", "summary": "The court approved a settlement."}) + "\n")
    r.write_text(json.dumps({"1": "The parties settled; the court approved it."}))
    code = ("import sys, io, contextlib\nfrom gavel.cli import main\nbefore = sorted(m for m in ('sklearn', "
            "'statsmodels', 'krippendorff') if m in sys.modules)\nwith contextlib.redirect_stdout(io.StringIO()):\n"
            f"    rc = main(['evaluate', '--summaries', {str(s)!r}, '--references', {str(r)!r}, '--provider', 'mock', "
            f"'--dry-run', '--out', {str(tmp_path / 'out')!r}])\n"
            "print(rc, before, sorted(m for m in ('sklearn', 'statsmodels', 'krippendorff') if m in sys.modules))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300,
                          cwd=Path(__file__).resolve().parent.parent)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split("\n")[-2] == "0 [] []"
