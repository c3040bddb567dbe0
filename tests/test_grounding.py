"""gavel.ref.grounding.locate: exact, normalised, fuzzy, not found, with offsets into the original text."""

import pytest

from gavel.ref.grounding import FUZZY_THRESHOLD, locate, normalize

TEXT = ("On March 3, 2025, the ACLU filed a class-action complaint in the U.S. District Court\n"
        "for the  Northern District of Illinois, alleging the city\u2019s \u201cstop and frisk\u201d policy "
        "violated the Fourth Amendment \u2014 and seeking damages.")


def test_exact_hit_gives_first_occurrence_offsets():
    hit = locate("the ACLU filed", TEXT)
    assert hit.status == "exact" and TEXT[hit.start:hit.end] == "the ACLU filed" and hit.score == 100


def test_whitespace_quotes_dashes_and_case_are_normalised_and_offsets_map_back():
    hit = locate("court for the northern district", TEXT)
    assert hit.status == "normalized"
    assert TEXT[hit.start:hit.end] == "Court\nfor the  Northern District"
    hit = locate("the city's \"stop and frisk\" policy", TEXT)
    assert hit.status == "normalized" and TEXT[hit.start:hit.end] == "the city\u2019s \u201cstop and frisk\u201d policy"
    hit = locate("Fourth Amendment - and seeking", TEXT)
    assert hit.status == "normalized" and TEXT[hit.start:hit.end].endswith("and seeking")


def test_a_few_changed_characters_are_fuzzy_above_the_threshold():
    hit = locate("alleging the citys stop and frisk policy violated the Fourth Amendmant", TEXT)
    assert hit.status == "fuzzy" and hit.score >= FUZZY_THRESHOLD
    assert "stop and frisk" in TEXT[hit.start:hit.end]


def test_unrelated_short_and_empty_snippets_are_not_found():
    assert locate("The defendants settled for $2 million in 2019.", TEXT).status == "not_found"
    assert locate("ACLU sued", TEXT).status == "not_found"  # short: no fuzzy guessing
    for empty in ("", "   ", None):
        hit = locate(empty, TEXT)
        assert hit.status == "not_found" and hit.start is None and not hit.found


@pytest.mark.parametrize("text", ["a  b\n\tc ", "\u201cQ\u201d \u2014 x", "İstanbul  x"])
def test_normalize_offsets_point_at_original_characters(text):
    norm, offsets = normalize(text)
    assert len(norm) == len(offsets)
    assert all(0 <= o < len(text) for o in offsets) and offsets == sorted(offsets)


def test_human_json_evidence_is_found_exactly_where_its_offsets_say(shared_rel):
    """Real data: every evidence snippet of ``human.json`` is located exactly, at the stored character span."""
    cv = shared_rel.checklist_values
    human = cv[cv.evidence_spans.notna()]
    s = shared_rel.summaries
    texts = {r.case_id: r.text for r in s[(s.model == "human") & (s.set == "human_eval")].itertuples()}
    checked = 0
    for row in human.itertuples():
        text = texts[row.case_id]
        for snippet, (start, end) in zip(row.evidence, row.evidence_spans):
            hit = locate(snippet, text)
            assert hit.status == "exact", (row.case_id, row.item, snippet[:60])
            assert text[hit.start:hit.end] == text[start:end]
            checked += 1
    assert checked > 3900, checked


def test_uncovered_spans_two_stages_by_hand():
    from gavel.ref.grounding import uncovered_spans

    text = ("On May 1, 2020, the ACLU filed suit against the city in federal court. "
            "The mayor resigned the following spring amid unrelated protests.")
    # stage 1: the value occurs verbatim and covers only its own words; stage 2: a paraphrased value
    # covers its evidence snippet instead
    values = [("May 1, 2020", ["On May 1, 2020, the ACLU filed suit against the city in federal court."]),
              ("ACLU v. City", ["the ACLU filed suit against the city"])]
    spans = [text[s:e] for s, e in uncovered_spans(text, values)]
    assert spans == ["in federal court. The mayor resigned the following spring amid unrelated protests."]
    assert uncovered_spans(text, []) == [(0, len(text))]
    # fragments shorter than three words are not residual
    assert uncovered_spans("Filed May 1.", [("May 1", [])]) == []


def test_residual_ratio_from_released_evidence(shared_rel):
    """Real data: r per model from the released summary checklists; the two models the paper names as the
    only ones with much residual content (GPT-4.1, GPT-5) are far above every other model and the humans."""
    from gavel.paper.results import residual_ratio_table

    t = residual_ratio_table(shared_rel)
    t = t[t["subset"] == "all"].set_index("model")["r_percent"]  # rows per half too (tests/test_recount.py)
    top = {"gpt-4.1-2025-04-14", "gpt-5-2025-08-07"}
    assert set(t.sort_values(ascending=False).index[:2]) == top
    assert t[list(top)].min() > 2 * t.drop(list(top)).max()
    assert len(t) == 12 and "claude-opus-4-1-20250805-thinking" not in t  # 11 models + human; Opus unreleased


def test_normalize_equals_the_character_loop_on_random_texts():
    """The array-based ``normalize`` (and the offsets-free ``normalized_str`` of snippets) give what the
    one-character-at-a-time definition gives: every whitespace kind, runs, ends, quotes, dashes, case."""
    import random
    import sys

    from gavel.ref import grounding

    assert not [c for c in range(0x3001, sys.maxunicode + 1) if chr(c).isspace()]  # _IS_SPACE's range
    alphabet = list("aB zZ.,'\"`-") + ["  ", "\n", "\t", "\r\n", "\x0b", "\x0c", "\x1c", "\x85", "\xa0",
                                        "\u1680", "\u2003", "\u2028", "\u202f", "\u3000", "\u2019", "\u201c",
                                        "\u2014", "\u2212", "\u00c9", "\ud55c", "\U0001f600", "\ud800"]
    rng = random.Random(5)
    for _ in range(3000):
        text = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 30)))
        want = grounding._normalize_chars(text)
        assert grounding.normalize.__wrapped__(text) == want, repr(text)
        assert grounding.normalized_str.__wrapped__(text) == want[0], repr(text)


def test_residual_gaps_equal_marking_every_covered_character():
    """``uncovered_spans`` takes the gaps between the sorted spans; on random spans (empty, nested,
    overlapping, touching, at both ends) they are the runs a per-character mask leaves uncovered."""
    import random
    import re

    from gavel.ref import grounding

    rng = random.Random(11)
    for _ in range(2000):
        text = "".join(rng.choice(["ab ", "c", " ", "\n", "dd ", ", "]) for _ in range(rng.randint(0, 40)))
        spans = []
        for _ in range(rng.randint(0, 6)):
            a = rng.randint(0, len(text))
            spans.append((a, rng.randint(a, len(text))))
        mask = bytearray(len(text))
        for a, b in spans:
            mask[a:b] = b"\x01" * (b - a)
        want = []
        for run in re.finditer(rb"\x00+", bytes(mask)):
            piece = text[run.start():run.end()]
            if len(re.findall(r"\w+", piece)) >= grounding.MIN_SPAN_WORDS:
                want.append((run.start() + len(piece) - len(piece.lstrip()), run.start() + len(piece.rstrip())))
        hits = [(None, [(s, s, s) for s in spans])]
        assert grounding._residual(text, hits, "exact", values_first=True) == want, (text, spans)
