"""``make demo`` (``python -m gavel demo``): a real LLM answering through the stage runner, offline, no keys.

The local provider starts llama.cpp's server with the packaged SmolLM2-135M-Instruct, and each demo stage
sends its requests through ``StageRunner`` (cache, state, manifest as for any stage): one free-text answer
and one JSON answer constrained by a schema. The demo prints the raw answers, parses them into records and
stops the server. A second run answers everything from the runner's cache: 0 requests sent, and the server
is never started.

After the steps, ``gavel_ref`` runs the whole GAVEL-REF pipeline (``gavel.runs.pipeline``) on the passage against a
second account of the same made-up case (one item), through the same provider.

A demo step is a stage's two plain functions, ``(stage, build, parse)``: ``build(model) -> [Request]`` and
``parse(request, response) -> [row]``. Adding the GAVEL-REF pipeline is one more entry in ``STEPS`` (or a
``steps=`` argument) built from ``gavel/ref/stages/``; ``run`` handles failed and truncated answers for every
step the same way, so a step's parser only sees complete answers.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

from gavel.llm import pace
from gavel.llm.records import Request, Response
from gavel.llm.runner import DEFAULT_RUNS_DIR, StageRunner
from gavel.ref.prompts import render_messages

# A made-up case passage (written for this demo; no real parties).
PASSAGE = (
    "In March 2014, the Riverside Tenants Union and two residents, Maria Okafor and Daniel Brandt, sued the "
    "City of Lakemont and its Housing Authority in the United States District Court for the Northern District "
    "of Ohio. They alleged that the Authority's inspection policy let landlords evict families with disabled "
    "members without the accommodations the Fair Housing Act requires. In 2016 the parties agreed to a consent "
    "decree: the Authority would rewrite the policy and a monitor would report to the court for three years."
)

# A second made-up account of the same case: the "reference" the demo's GAVEL-REF run compares against.
REFERENCE = (
    "The Riverside Tenants Union, joined by residents Maria Okafor and Daniel Brandt, filed this Fair Housing "
    "Act case in March 2014 against the City of Lakemont and the Lakemont Housing Authority in the Northern "
    "District of Ohio. A consent decree followed in 2016, requiring a new inspection policy and three years of "
    "monitoring."
)

# Only keywords llama.cpp's grammar enforces (types, required, lengths, item counts): what the grammar allows, the
# parser's check accepts. The bounds also cap how long a constrained answer can grow.
PARTIES_SCHEMA = {
    "name": "case_parties",
    "schema": {
        "type": "object",
        "properties": {
            "plaintiffs": {"type": "array", "items": {"type": "string", "maxLength": 60}, "minItems": 1, "maxItems": 3},
            "defendants": {"type": "array", "items": {"type": "string", "maxLength": 60}, "minItems": 1, "maxItems": 3},
            "court": {"type": "string", "maxLength": 100},
            "filing_year": {"type": "integer"},
        },
        "required": ["plaintiffs", "defendants", "court", "filing_year"],
        "additionalProperties": False,
    },
}


def answer_requests(model: str) -> list[Request]:
    """Free text: one question about the passage."""
    messages = render_messages("demo_answer", passage=PASSAGE, question="What did the parties agree to, and when?")
    return [Request(stage="demo_answer", model=model, case_id="demo", messages=messages,
                    params={"max_tokens": 160, "temperature": 0.0, "seed": 7})]


def answer_rows(request: Request, response: Response) -> list[dict]:
    return [{"answer": (response.text or "").strip()}]


def extract_requests(model: str) -> list[Request]:
    """JSON constrained by PARTIES_SCHEMA (the provider sends the schema; llama.cpp enforces it by grammar)."""
    messages = render_messages("demo_extract", passage=PASSAGE)
    return [Request(stage="demo_extract", model=model, case_id="demo", messages=messages, schema=PARTIES_SCHEMA,
                    params={"max_tokens": 300, "temperature": 0.0, "seed": 7})]


def extract_rows(request: Request, response: Response) -> list[dict]:
    """The JSON answer checked against the request's schema; raises ValueError naming the request.
    ``strict=False``: llama-cpp-python's schema grammar lets raw control characters (a newline) into strings,
    which strict JSON forbids; the structure is still the schema's."""
    import jsonschema

    try:
        record = json.loads(response.text or "", strict=False)
    except json.JSONDecodeError as err:
        raise ValueError(f"{request.stage} {request.custom_id}: answer is not JSON ({err})") from None
    try:
        jsonschema.validate(record, request.schema["schema"])
    except jsonschema.ValidationError as err:
        raise ValueError(f"{request.stage} {request.custom_id}: answer breaks schema "
                         f"{request.schema['name']!r}: {err.message}") from None
    return [{"party": "plaintiff", "name": n} for n in record["plaintiffs"]] + \
           [{"party": "defendant", "name": n} for n in record["defendants"]] + \
           [{"court": record["court"], "filing_year": record["filing_year"]}]


Step = tuple[str, Callable[[str], list[Request]], Callable[[Request, Response], list[dict]]]
STEPS: list[Step] = [
    ("demo_answer", answer_requests, answer_rows),
    ("demo_extract", extract_requests, extract_rows),
]


def parse_response(request: Request, response: Response, parse) -> dict:
    """One answer's outcome: ``rows`` when it is complete and parses; otherwise ``problem`` says why not
    (failed, truncated by the output limit, or unparseable). A truncated answer is never parsed."""
    if not response.ok:
        return {"status": "failed", "rows": [], "problem": response.error}
    if response.truncated:
        return {"status": "truncated", "rows": [],
                "problem": f"cut by max_tokens after {response.output_tokens} tokens; not parsed"}
    try:
        return {"status": "parsed", "rows": parse(request, response), "problem": None}
    except ValueError as err:
        return {"status": "unparseable", "rows": [], "problem": str(err)}


def gavel_ref(provider, model: str, workdir: Path, show: Callable[[str], None] = print, repeats: int = 2,
              speed=None) -> dict:
    """The whole GAVEL-REF pipeline (extract, compare, residual, style, score) on the demo passage against
    REFERENCE, one item, the same model as extractor and judge; run ``repeats`` times (``gavel.runs.stability``:
    repeat 1 is the plain run, repeat 2 the same with its own seed) and the stability table shown."""
    import pandas as pd

    from gavel.core.items import item
    from gavel.ref.tables import run_counts
    from gavel.runs import pipeline
    from gavel.runs import repeats as repeated

    # output caps per stage: the local model's measured ones (gavel.llm.pace.stage_cap)
    settings = pipeline.Settings(extractor=model, judge=model, items=(item("Filing Date"),))
    if getattr(provider, "name", None) == "local":  # its speed measured, the duration said first
        from gavel.runs.forecast import announcer

        settings.pace = announcer([("demo-model", "demo", PASSAGE)], {"demo": REFERENCE}, settings, provider,
                                  repeats, show, speed)
    result = repeated.evaluate_repeats([("demo-model", "demo", PASSAGE)], {"demo": REFERENCE}, provider, workdir,
                                        settings, repeats=repeats)
    tables = result["runs"][0]
    counts = run_counts(result["runs"])
    sent, cached = counts["sent"], counts["cached"]
    show(f"== GAVEL-REF (gavel.runs.pipeline), {repeats} repeat(s): sent {sent}, cached {cached}")
    with pd.option_context("display.width", 160, "display.max_colwidth", 60):
        show(tables["answers"][["stage", "subject", "item", "round", "status", "detail"]].to_string(index=False))
        show(tables["scores"][["subject", "s_checklist", "s_residual", "s_style", "r_reference", "s_gavel_ref"]]
             .to_string(index=False))
        if repeats > 1:
            show(f"== stability over {repeats} repeats (gavel.runs.stability): verdicts that flip, per stage and item")
            show(result["stability"][["stage", "item", "units", "flipped", "flip_share", "unusable_units"]]
                 .to_string(index=False))
            show(result["stability_models"][["subject", "score", "repeat_1", "repeat_2", "std_over_repeats"]]
                 .to_string(index=False))
    for r, run in enumerate(result["runs"], 1):
        show(f"repeat {r}: " + final_scores(run))
    show(f"tables in {workdir}")
    return {**tables, "manifest": {**tables["manifest"], "sent": sent, "cached": cached},
            "repeats": result}


def final_scores(tables: dict, subject: str = "demo-model", case_id: str = "demo") -> str:
    """The demo summary's S_checklist and S_GAVEL-REF, each a number or exactly why it is missing."""
    from gavel.ref.tables import why_missing

    row = tables["scores"].iloc[0] if len(tables["scores"]) else None
    why = why_missing(tables, subject, case_id)
    parts = []
    for col, label in (("s_checklist", "S_checklist"), ("s_gavel_ref", "S_GAVEL-REF")):
        parts.append(f"{label} missing: {why[col]}" if col in why else f"{label} {row[col]:.1f}")
    return "; ".join(parts)


def run(provider=None, steps: list[Step] | None = None, model: str | None = None,
        workdir: str | Path | None = None, show: Callable[[str], None] = print, with_pipeline: bool = True) -> dict:
    """Run every step through the runner; returns ``{stage: {"report": RunReport, "outcomes": {cid: ...}}}``.
    ``provider`` defaults to a LocalServer that this call stops at the end (a provider passed in is left
    running for its owner)."""
    from gavel.llm.providers.local import LocalServer, default_model

    own = provider is None
    provider = provider or LocalServer()
    model = model or getattr(provider, "model", None) or default_model()
    root = Path(workdir) if workdir else DEFAULT_RUNS_DIR
    results, sent, cached, ledgers, speed = {}, 0, 0, [], None
    try:
        for stage, build, parse in steps or STEPS:
            requests = build(model)
            runner = StageRunner(stage, provider, root / stage, progress=False, max_attempts=2)
            todo = [r for r in requests if not runner.is_cached(r)]
            if todo and getattr(provider, "name", None) == "local":  # its speed measured once, the duration said
                speed = speed or pace.measure(provider, model)
                show(f"== {stage}: {len(todo)} request(s) to send, expected {pace.duration(pace.forecast(todo, speed))}")
            report = runner.run(requests, mode="online")
            ledgers.append(runner.cost_table("online"))
            sent, cached = sent + report.sent, cached + report.cached
            outcomes = {}
            show(f"== {stage}: {len(requests)} request(s), {report.sent} sent, {report.cached} from the cache")
            for r in requests:
                resp = report.responses[r.custom_id]
                outcome = outcomes[r.custom_id] = parse_response(r, resp, parse)
                show(f"-- {r.custom_id}  model {model}, finish_reason {resp.finish_reason}, "
                     f"tokens in/out {resp.input_tokens}/{resp.output_tokens}")
                show(f"raw answer:\n{resp.text if resp.ok else '(none: ' + str(resp.error) + ')'}")
                show(f"parsed ({outcome['status']}):")
                for row in outcome["rows"]:
                    show(f"  {json.dumps(row, ensure_ascii=False)}")
                if outcome["problem"]:
                    show(f"  {outcome['problem']}")
            results[stage] = {"report": report, "outcomes": outcomes}
        if with_pipeline:
            tables = gavel_ref(provider, model, root / "gavel_ref", show, speed=speed)
            sent += sum(tables["manifest"]["sent"].values())
            cached += sum(tables["manifest"]["cached"].values())
            results["gavel_ref"] = tables
            ledgers += [r["cost"] for r in tables["repeats"]["runs"]]
    finally:
        started = getattr(provider, "base_url", None) is not None
        if own:
            provider.stop()
    results["cost"] = show_ledger(ledgers, show)
    show(f"demo: {sent} request(s) sent to the model, {cached} answered from the cache"
         + ("; llama.cpp server stopped" if own and started else ""))
    return results


def show_ledger(ledgers: list, show: Callable[[str], None]):
    """The demo's ledger (gavel.llm.ledger, docs/cost.md): a model on this machine costs $0 per token."""
    import pandas as pd

    from gavel.llm import ledger

    table = pd.concat(ledgers, ignore_index=True) if ledgers else ledger.table([])
    show("== cost (cost.csv of each stage's folder): the local model runs on this machine, $0 a token")
    with pd.option_context("display.width", 160):
        show(table[["stage", "model", "mode", "cached", "price_row", "requests", "input_tokens", "output_tokens",
                    "usd"]].to_string(index=False))
    show(ledger.closing_line(table))
    return table


def failures(results: dict) -> list[str]:
    """The requests no answer came back for (the provider failed them): single steps and the GAVEL-REF run.
    Poor answers of a tiny model are not failures; they are parsed or recorded with their reason."""
    bad = [cid for stage, res in results.items() if stage not in ("gavel_ref", "cost")
           for cid, o in res["outcomes"].items() if o["status"] == "failed"]
    if "gavel_ref" in results:
        runs = results["gavel_ref"].get("repeats", {}).get("runs") or [results["gavel_ref"]]
        for r, run in enumerate(runs, 1):
            answers = run["answers"]
            bad += [f"{a.stage}/{a.subject}/{a.item}" + (f" (repeat {r})" if r > 1 else "")
                    for a in answers[answers["status"] == "failed"].itertuples()]
    return bad


def main(argv: list[str] | None = None, workdir: str | Path | None = None,
         show: Callable[[str], None] = print) -> int:
    """``make demo``: exit status 1 when a request got no answer, else 0."""
    bad = failures(run(workdir=workdir, show=show))
    if bad:
        show(f"demo: no answer came back for {len(bad)} request(s): {', '.join(bad)}")
    return 1 if bad else 0
