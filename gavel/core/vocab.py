"""The project's vocabularies, each defined once: judge relations, their scores, the A/B wording a judge
answers in, and the style aspects with the one rubric that both the LLM judge and the human annotators rate on.

Every module that names a relation or a style aspect imports it from here.
"""

from __future__ import annotations

#: A single-value comparison in the model/reference wording used by scores and result tables.
RELATIONS = ("equal", "model_contains_reference", "reference_contains_model", "different")
#: Matching score of each single-value relation (Eq. 1 of the paper).
RELATION_SCORE = {"equal": 1.0, "model_contains_reference": 0.5, "reference_contains_model": 0.5, "different": 0.0}

#: The annotation form's single-value labels (A is the model's value, B the reference's) as relations.
ANNOTATION_RELATIONS = {"equal": "equal", "a_contains_b": "model_contains_reference",
                        "b_contains_a": "reference_contains_model", "different": "different"}

#: What a judge answers when it sees two values in positions A and B (``gavel.answers`` readings).
AB_RELATIONS = ("a_contains_b", "b_contains_a", "a_equals_b", "a_and_b_different")


#: ``--label-orders K``: which rows of the Latin square over ``AB_RELATIONS`` a single-value comparison is asked
#: in. Row r lists the options shifted by r (row 0: today's order); with K = 4 every option stands once in every
#: position, with K = 2 (rows 0 and 2) every option stands once in the first and once in the second half.
LABEL_ORDER_ROWS = {1: (0,), 2: (0, 2), 4: (0, 1, 2, 3)}


def label_order(row: int) -> tuple[str, ...]:
    """The A/B relations in the order row ``row`` of the Latin square shows them (row 0: ``AB_RELATIONS``)."""
    if row not in range(len(AB_RELATIONS)):
        raise ValueError(f"label order rows are 0..{len(AB_RELATIONS) - 1}, got {row!r}")
    return tuple(AB_RELATIONS[(i + row) % len(AB_RELATIONS)] for i in range(len(AB_RELATIONS)))


def relation_of(ab: str, model_is_a: bool) -> str:
    """An A/B relation in the model/reference wording, given which position the model's value held."""
    if ab == "a_equals_b":
        return "equal"
    if ab == "a_and_b_different":
        return "different"
    if ab not in ("a_contains_b", "b_contains_a"):
        raise ValueError(f"unknown A/B relation {ab!r}; expected one of {AB_RELATIONS}")
    model_contains = (ab == "a_contains_b") == model_is_a
    return "model_contains_reference" if model_contains else "reference_contains_model"


def swapped_ab(ab: str) -> str:
    """The same judgment said with the sides swapped: ``a_contains_b`` <-> ``b_contains_a``; equal and
    different stay. ``relation_of(swapped_ab(x), not m) == relation_of(x, m)`` for every relation."""
    if ab not in AB_RELATIONS:
        raise ValueError(f"unknown A/B relation {ab!r}; expected one of {AB_RELATIONS}")
    return {"a_contains_b": "b_contains_a", "b_contains_a": "a_contains_b"}.get(ab, ab)


def matching_of(common, only_in_a, only_in_b, model_is_a: bool) -> dict:
    """A list matching answered in A/B indices (``common`` (A index, B index) pairs, ``only_in_A``,
    ``only_in_B``) in the model/reference wording: ``pairs`` (model index, reference index), sorted and
    distinct, ``only_in_model`` and ``only_in_reference`` (sorted, distinct). A matched pair (a, b) is
    (model, reference) when the model held A, (b, a) otherwise; ``only_in_A`` is the model's when it held A."""
    pairs = sorted({(int(a), int(b)) if model_is_a else (int(b), int(a)) for a, b in common})
    side_a, side_b = sorted({int(i) for i in only_in_a}), sorted({int(i) for i in only_in_b})
    return {"pairs": pairs, "only_in_model": side_a if model_is_a else side_b,
            "only_in_reference": side_b if model_is_a else side_a}


#: Where requests can be sent (``gavel.llm.providers.get_provider`` builds each; a test holds the two equal). The
#: names live here, below the transport, because the models file (``gavel.core.config``) is checked against them.
PROVIDERS = ("openai", "anthropic", "gemini", "vllm", "vllm-batch", "local", "mock", "replay")

#: The agent's six tools (gavel.documents.tools runs them; gavel.answers reads calls to them).
AGENT_TOOLS = ("list_documents", "read_document", "search_document_regex", "get_checklist", "append_checklist",
               "update_checklist")

#: The five style aspects (the paper's S_style), in the order of the rubric.
STYLE_ASPECTS = ("readability_jargon", "narrative_order", "sentence_structure", "formatting_layout", "citation_style")

#: aspect -> (label, what to compare, what each rating 1..5 means). 1 = completely different, 5 = the same.
#: The LLM judge's prompt (gavel.ref.stages.style) and the annotation form (gavel.annotation) both render this.
STYLE_RUBRIC = {
    "readability_jargon": (
        "Readability and jargon",
        "How technical the language is: legal terms against plain words, and who could read it without legal "
        "training.",
        ("written for different readers altogether (lawyers against the general public)",
         "one is consistently more technical or more accessible than the other",
         "one is clearly more technical in places, though the overall level is alike",
         "close, with small differences in wording or occasional technical passages",
         "same reading level and density of legal terms throughout")),
    "narrative_order": (
        "Narrative order",
        "The sequence in which events, facts and arguments appear (chronological or by theme).",
        ("entirely different organisation (e.g. by date against by issue)",
         "different plans that overlap in places",
         "recognisably the same plan with several parts moved",
         "same flow with one or two elements moved",
         "same events and arguments in the same order")),
    "sentence_structure": (
        "Sentence structure and voice",
        "Sentence length and variety, active against passive voice, tense.",
        ("opposite approaches (varied and active against uniform and passive)",
         "consistently different sentence habits",
         "moderate differences: one uses longer or more passive sentences",
         "very alike with occasional differences",
         "nearly the same sentence patterns, voice and tense")),
    "formatting_layout": (
        "Formatting and layout",
        "Headings, bullet or numbered lists, paragraphs and other visible structure.",
        ("opposites (heavily formatted against continuous prose)",
         "one is far more structured than the other",
         "the same kind of formatting used differently",
         "very alike with a small difference (an extra heading, another list style)",
         "the same formatting choices")),
    "citation_style": (
        "Citations and references",
        "Whether and how cases, statutes and documents are cited: inline or apart, how often, in what form.",
        ("not comparable (many citations against none)",
         "one relies on citations much more, or cites in another style",
         "both cite, with different density or placement",
         "alike with small differences in form or placement",
         "the same citation practice")),
}
assert tuple(STYLE_RUBRIC) == STYLE_ASPECTS
STYLE_SCALE = (1, 5)  # lowest and highest rating
