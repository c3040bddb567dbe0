"""A small release in the public release's shapes, with planted defects, written into a temp folder.

Well-formed parts: human summaries (3 benchmark cases, 1 meta-evaluation case), one model's summaries,
summary checklist and judge file, ``human.json``, one agent run and its judge file.
Planted defects (each test knows how many of each to expect):

* empty files: human-summary checklist part 1, human-eval summaries part 2
* a truncated judge file (gemini-2.5-pro part 2) with 1 complete case (c3) before the cut (c4)
* a judge file in A/B wording (gemini-2.5-pro part 1)
* judge oddities: 1 null index, 1 list-valued index, 1 out-of-range index, 1 unknown label, 1 raw-text answer,
  1 degenerate answer
* checklists: 1 unknown item, 1 stray item spelling, 1 list-valued value, 1 object value, 1 case missing items
* an empty agent ledger
"""

from __future__ import annotations

import json
from pathlib import Path

from gavel.core.items import ITEMS

MODEL = "gpt-5-2025-08-07"
AB_MODEL = "gemini-2.5-pro"
AGENT_MODEL = "gpt-oss-20b-BF16"
STEM = "50_cases_for_benchmarking"


def _write(path: Path, data) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(data if isinstance(data, str) else json.dumps(data, indent=2), encoding="utf-8")
    return path


def _value(text: str, evidence: str | None = None) -> dict:
    return {"evidence": [evidence or f"The summary says {text}."], "value": text}


def _checklist(values: dict[str, list]) -> dict:
    """All 26 items, empty unless given; keys in the spaced spelling."""
    out = {}
    for it in ITEMS:
        out[it.name] = {"reasoning": "fixture", "extracted": values.get(it.key, [])}
    return out


def build(root: Path) -> Path:
    """Write the fixture release under ``root`` and return the folder holding ``data/``."""
    data = root / "data"
    cases1 = {
        "c1": {"summary/long": "On May 5, 2025, tenants sued the city housing authority in federal court.",
               "filing_date": "2025-05-05", "case_type": "Housing", "total_token_num": "31000",
               "total_length_bin": "32K"},
        "c2": {"summary/long": "Parents challenged a school board policy. The judge granted an injunction.",
               "filing_date": "2025-02-01", "case_type": "Education", "total_token_num": None,
               "total_length_bin": "512K"},
    }
    cases2 = {"c3": {"summary/long": "A class of detainees sued the county sheriff over jail conditions.",
                     "filing_date": "2025-03-03", "case_type": "Jail Conditions", "total_token_num": "66000",
                     "total_length_bin": "64K"},
              "c4": {"summary/long": "Voters challenged a county's new district map under the Voting Rights Act.",
                     "filing_date": "2024-10-01", "case_type": "Election/Voting Rights", "total_token_num": "40000",
                     "total_length_bin": "32K"}}
    _write(data / "summaries" / f"{STEM}.json", cases1)
    _write(data / "summaries" / f"{STEM}_2.json", cases2)
    human_eval = {"h1": {"summary/long": "On February 28, 2023, the United States sued a chemical plant. "
                                         "Judge Jane Doe presided.",
                         "filing_date": "2023-02-28", "case_type": "Environmental", "total_token_num": "250000",
                         "total_length_bin": "256K"}}
    _write(data / "summaries" / "20_human_eval_cases.json", human_eval)
    _write(data / "summaries" / "20_human_eval_cases_2.json", "")  # empty file

    # one model's summaries, part 1 only (part 2 absent)
    _write(data / "summaries" / MODEL / f"{STEM}_complex_order_by_date_True_thinking_high.json", {
        "meta_data": {"file_name": "x", "inference_model": MODEL},
        "token_stats": {"total_input_tokens": 1000, "total_output_tokens": 50, "num_prompts": 2},
        "results": {"c1": "Tenants filed suit on May 5, 2025 against the housing authority.",
                    "c2": "Parents sued the school board; an injunction was granted."}})

    # its summary checklist: c1 complete with defects, c2 missing items
    c1 = _checklist({
        "filing_date": [_value("May 5, 2025")],
        "parties": [_value("Tenants"), _value("City housing authority")],
        "related_cases": [{"evidence": ["x"], "value": ["No. 1:25-cv-1", "No. 1:25-cv-2"]}],  # list value
        "enforcement_disputes": [{"evidence": ["y"], "value": {"date": "June 1", "outcome": "Pending"}}],
    })
    c1["Colour of the Courtroom"] = {"reasoning": "", "extracted": []}  # unknown item
    c1["Name_of_the_Monitor."] = c1.pop("Name of the Monitor")  # stray spelling
    c2 = {k: v for k, v in _checklist({"filing_date": [_value("February 1, 2025")]}).items()
          if k in ("Filing Date", "Who are the Parties")}
    _write(data / "summary_checklists" / f"{MODEL}_summarization" /
           f"{STEM}_complex_order_by_date_True_thinking_high_thinking_True.json",
           {"meta_data": {"inference_model": "unsloth/gpt-oss-20b-BF16"}, "results": {"c1": c1, "c2": c2}})
    _write(data / "summary_checklists" / f"{STEM}_thinking_True.json", "")  # empty human checklist

    # its judge file (model/reference wording) with oddities
    _write(data / "evaluation" / f"{MODEL}_summarization" /
           f"{STEM}_complex_order_by_date_True_thinking_high_thinking_True_thinking_False.json", {
               "meta_data": {"inference_model": "google/gemma-3-27b-it"},
               "results": {
                   "c1": {
                       "Filing Date": "model equals reference",
                       "Who are the Parties": {"common": [{"model_index": 1, "reference_index": 2},
                                                          {"model_index": None, "reference_index": 1}],
                                               "only_in_model": [2], "only_in_reference": []},
                       "Type of Counsel": {"common": [{"model_index": [1, 2], "reference_index": 1}],
                                           "only_in_model": [], "only_in_reference": []},
                       "Remedy Sought": "reference sort-of includes model",  # unknown label
                       "Court Rulings": "**Reasoning:** both differ.\n\n**Final Answer:**\n```json\n"
                                        "{\"common\": [], \"only_in_model\": [1], \"only_in_reference\": [1]}\n```",
                       "Trials": "Final Answer: {\"common\": [" + ", ".join(
                           f"{{\"model_index\": {i}, \"reference_index\": {i}" for i in range(1, 200)) + "]",
                   },
                   "c2": {"Filing Date": "reference contains model",
                          "Who are the Parties": {"common": [{"model_index": 7, "reference_index": 1}],
                                                  "only_in_model": [], "only_in_reference": []}},
               }})

    # A/B judge files for another model: part 1 complete, part 2 truncated after 2 complete cases
    ab = {"meta_data": {"inference_model": "google/gemma-3-27b-it"},
          "results": {"c1": {"Filing Date": "A equals B",
                             "Cause of Action": {"common": [{"A_index": 1, "B_index": 2}], "only_in_A": [2],
                                                 "only_in_B": [1]}},
                      "c2": {"Filing Date": "B contains A"}}}
    folder = data / "evaluation" / f"{AB_MODEL}_summarization"
    _write(folder / f"{STEM}_complex_order_by_date_True_thinking_True_thinking_True_thinking_False.json", ab)
    long = {"c3": ab["results"]["c1"], "c4": {"Filing Date": "A and B are different " + "x" * 200}}
    text = json.dumps({"meta_data": ab["meta_data"], "results": long}, indent=4)
    cut = text.index("x" * 50)
    _write(folder / f"{STEM}_2_complex_order_by_date_True_thinking_True_thinking_True_thinking_False.json",
           text[:cut])

    # human checklist of the meta-evaluation case (reference for document extraction)
    summary = human_eval["h1"]["summary/long"]
    start = summary.index("On February 28, 2023")
    _write(data / "document_checklists" / "human.json", {
        "metadata": {"name": "fixture"},
        "results": {"h1": {it.name: ([{"evidences_indices": [[start, start + 20]],
                                       "evidences": [summary[start:start + 20]],
                                       "value": "February 28, 2023"}] if it.key == "filing_date" else
                                     [{"evidences_indices": [[0, 5]], "evidences": ["On Fe"],
                                       "value": "Jane Doe"}] if it.key == "judge_name" else [])
                           for it in ITEMS}}})

    # one agent run (individual, filing date) with an empty ledger
    unit = data / "document_checklists" / "gavel_agent" / AGENT_MODEL / "h1" / "individual" / "01_filing_date"
    _write(unit / "checklist.json", {"Filing_Date": {"extracted": [
        {"evidence": [{"text": "Filed 02/28/2023", "source_document": "Docket", "location": "tokens 1-20"}],
         "value": "February 28, 2023"}], "key": "Filing_Date"}})
    _write(unit / "stats.json", {"model": AGENT_MODEL, "steps": 4, "total_system_prompt_tokens": 300,
                                 "total_user_prompt_tokens": 700, "total_completion_tokens": 90,
                                 "per_step_details": [{"step": i} for i in range(1, 4)]})
    _write(unit / "ledger.jsonl", "")
    _write(data / "evaluation_documents_checklist" / "agent" / f"{AGENT_MODEL}_individual_thinking_False.json", {
        "meta_data": {"inference_model": "google/gemma-3-27b-it"},
        "results": {"h1": {"Filing Date": "model equals reference",
                           "First and Last name of Judge": ":\n```json\n{\"common\": [], \"only_in_A\": [" +
                           ", ".join(str(i) for i in range(1, 400)) + "]\n  ],\n}\n```"}}})
    return root
