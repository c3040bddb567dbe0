"""Small evaluation runs for the report tests, made by the real pipeline with a scripted model (mock
provider): two runs of the same summaries whose only differences are planted (``PLANTED``), hostile text in a
summary, a value and a judge's answer, an unusable answer that is re-asked, evidence that is not in the
summary, and a character outside the Basic Multilingual Plane before the evidence (offsets count characters,
the browser counts UTF-16 units)."""

from __future__ import annotations

import json
from pathlib import Path

from gavel.core.items import item
from gavel.llm.providers.mock import MockProvider
from gavel.runs import pipeline

# the annotation app's payload (tests/test_annotation_browser.py): markup and script that must stay text
HOSTILE = "<script>window.__pwned = 1</script><b>bold?</b> & <img src=x onerror=\"window.__pwned=2\">"
REF = {"1": "The ACLU filed this class action on March 3, 2020 in the Northern District of Illinois. Judge Mary "
            "Smith presided. The city agreed to a consent decree in 2021. Residents had complained for years.",
       "2": "Prisoners sued the state on May 1, 2018. Judge Ann Lee certified a class. A consent decree in 2020 "
            "ordered the jail population reduced."}
SUMMARIES = [
    ("model-x", "1", "\U0001F4DC On March 3, 2020, the ACLU sued the city in the Northern District of Illinois. "
                     "Judge Mary Smith presided. The parties settled by consent decree in 2021."),
    ("model-x", "2", "Prisoners sued the state on May 1, 2018. A consent decree in 2020 reduced the jail population."),
    ("model-y", "1", f"Filed March 3, 2020. {HOSTILE} Judge Mary Smith approved a consent decree in 2021."),
]
ONLY_IN_A = ("model-y", "2", "Prisoners sued on May 1, 2018; a decree followed in 2020.")
ITEMS = (item("Filing Date"), item("First and Last name of Judge"), item("Dates of All Decrees"))
#: the cells whose verdict run A changes against run B (the baseline): (subject, case, item) -> kind
PLANTED = {("model-x", "1", "decree_dates"): "regression", ("model-y", "1", "decree_dates"): "improvement"}

_DATES = ("March 3, 2020", "May 1, 2018")


def _extract(summary: str, key: str, reference: bool) -> dict:
    found = []
    if key == "filing_date":
        found = [{"evidence": [d], "value": d} for d in _DATES if d in summary]
    elif key == "judge_name":
        for judge in ("Judge Mary Smith", "Judge Ann Lee"):
            if judge in summary:
                found.append({"evidence": [judge, "the judge said so in open court"], "value": judge[6:]})
        if "Prisoners sued the state on May 1, 2018. A consent" in summary:
            return {"prose": True}
    elif key == "decree_dates":
        for year in ("2020", "2021"):
            if f"consent decree in {year}" in summary:
                found.append({"evidence": [f"consent decree in {year}"],
                              "value": f"consent decree ({year})" if reference else f"decree of {year}"})
        if HOSTILE in summary:
            found.append({"evidence": [HOSTILE], "value": HOSTILE})
    return {"reasoning": "scripted", "extracted": found}


def scripted(variant: str):
    """The scripted model of run ``variant`` ("a" or "b"); they answer alike except for the planted cells."""

    def answer(request):
        user = "\n".join(m["content"] for m in request.messages if m["role"] == "user")
        if request.stage == "extract":
            body = _extract(request.messages[1]["content"], request.item, request.subject == "human")
            return "I could not find a judge." if body.get("prose") else json.dumps(body)
        if request.stage == "compare":
            if "## List A" in user:  # several values: match none, then the planted improvement matches one
                matched = variant == "a" and request.subject == "model-y"
                common = [{"A_index": 1, "B_index": 1}] if matched else []
                return ("**Reasoning:** " + HOSTILE + "\n**Final Answer:**\n```json\n"
                        + json.dumps({"common": common, "only_in_A": [] if matched else [1], "only_in_B": []}) + "\n```")
            planted = variant == "a" and request.subject == "model-x" and request.case_id == "1" \
                and request.item == "decree_dates"
            return f"**Reasoning:** {HOSTILE}\n**Final Answer:** " + ("A and B are different" if planted else "A equals B")
        if request.stage == "residual":
            n = sum(1 for line in user.splitlines() if line.startswith("["))
            return json.dumps({"reasoning": "r", "extracted": [{"fact": f"fact {i} {HOSTILE}", "evidence_spans": [i]}
                                                               for i in range(1, n + 1)]})
        if request.stage == "residual_match":
            return '**Final Answer:**\n```json\n{"common": [{"A_index": 1, "B_index": 1}], "only_in_A": [], "only_in_B": []}\n```'
        if request.stage == "style":
            return json.dumps({"readability_jargon": 4, "narrative_order": 3, "sentence_structure": 4,
                               "formatting_layout": 5, "citation_style": 4})
        raise AssertionError(request.stage)

    return answer


def make_run(folder: Path, variant: str = "b") -> Path:
    """Run the pipeline into ``folder``: variant "b" is the baseline, "a" the changed run (planted changes and
    one summary more)."""
    summaries = SUMMARIES + ([ONLY_IN_A] if variant == "a" else [])
    settings = pipeline.Settings(extractor="gpt-oss-20b-BF16", judge="gemma-3-27b-it", items=ITEMS)
    pipeline.evaluate(summaries, REF, MockProvider(answer=scripted(variant)), folder, settings)
    return Path(folder)
