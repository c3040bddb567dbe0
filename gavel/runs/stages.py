"""One run's stages: a ``StageRunner`` per stage under ``out/runs/<stage>`` (cached, resumable), unusable
answers asked again, truncated ones once with a larger cap, and every answer logged for ``answers.csv``
(``gavel.runs.pipeline`` composes them into GAVEL-REF)."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pandas as pd

from gavel import answers
from gavel.llm import ledger
from gavel.llm.records import Request, Response
from gavel.llm.runner import PENDING_ERROR, StageRunner

REASKABLE = {"no_json", "schema", "ambiguous", "unknown_label", "indices", "empty", "no_rating"}
#: a row of ``answers.csv``: one answer (or none) to one request in one round
ANSWER_COLUMNS = ("stage", "subject", "case_id", "item", "round", "custom_id", "status", "detail", "finish_reason",
                  "input_tokens", "output_tokens")


class StagePending(RuntimeError):
    """A stage's batches have not all ended; rerun later (nothing is lost, nothing is sent twice)."""

    def __init__(self, stage: str, pending: int, total: int):
        super().__init__(f"stage {stage}: {pending} of {total} answers still pending in running batches")
        self.stage, self.pending, self.total = stage, pending, total


def reask(request: Request, response: Response, reason: str, detail: str, round_: int) -> Request:
    """The same request with the unusable answer and what was wrong with it appended (a new custom_id)."""
    note = (f"Your answer could not be used ({reason}: {detail[:200]}). Answer again, following the output "
            f"format exactly.")
    messages = request.messages + [{"role": "assistant", "content": response.text or ""},
                                   {"role": "user", "content": note}]
    return Request(stage=request.stage, model=request.model, messages=messages, params=dict(request.params),
                   case_id=request.case_id, item=request.item, subject=request.subject, schema=request.schema)


def larger_cap(request: Request, response: Response) -> int | None:
    """The output cap to ask a truncated answer's request again with, or None when it is not asked again:
    twice the request's own cap (``max_tokens`` of its params: a stage's measured cap, or ``--max-tokens``),
    where the prompt and that cap fit the model's context window. A request without a cap of its own (the
    paper's configuration) was cut at the model's output limit: nothing larger to ask for."""
    cap = request.params.get("max_tokens")
    if not isinstance(cap, int) or not response.input_tokens:
        return None
    try:
        from gavel.llm.registry import llm_model

        window = llm_model(request.model).context_window
    except (KeyError, ValueError):
        return None
    if not window:
        return None
    larger = min(2 * cap, window - response.input_tokens)
    return larger if larger > cap else None


#: output tokens all rounds of a request may ask for, in units of its own cap: the answer, a cut one asked
#: again with twice the cap, one re-ask at its cap (issue 46: re-asks kept the doubled cap, paid up to 5x)
REASK_TOKEN_FACTOR = 4


def reask_larger(request: Request, cap: int) -> Request:
    """The same request with a larger output cap (a new custom_id): a truncated answer is asked again once."""
    return replace(request, params={**request.params, "max_tokens": cap})


class Stages:
    """One runner per stage under ``out/runs/<stage>``; every answer logged for ``answers.csv``. ``s``: the run's
    ``gavel.runs.pipeline.Settings``."""

    def __init__(self, provider, out: Path, s, timeout: float | None = None):
        self.provider, self.out, self.s, self.timeout = provider, out, s, timeout
        self.log: list[dict] = []
        self.sent = {}
        self.cached = {}
        self.runners: list[StageRunner] = []
        self.label_judgments: list[dict] = []  # --label-orders: the judgments of label-order rows > 0

    def cost_table(self) -> pd.DataFrame:
        """Every stage's ledger in one table (cost.csv of the output folder)."""
        tables = [r.cost_table(self.s.mode) for r in self.runners]
        return pd.concat(tables, ignore_index=True) if tables else ledger.table([])

    def run(self, stage: str, jobs: list[tuple[Request, object]], parse) -> list:
        """Run jobs (request, meta); ``parse(meta, response) -> (result, status, detail)``; re-ask unusable
        answers. Returns the results in job order."""
        runner = StageRunner(stage, self.provider, workdir=self.out / "runs" / stage, progress=self.s.progress,
                             **{**self.s.runner_options, **self.s.runner_namespace})
        self.runners.append(runner)
        results: list = [None] * len(jobs)
        pending = list(range(len(jobs)))
        current = [replace(req, params={**req.params, **self.s.repeat_params}) if self.s.repeat_params else req
                   for req, _ in jobs]
        from gavel.llm.pace import announce

        announce(self.s.pace, runner, current, f"stage {stage}")  # with a measured speed: the stage's duration
        enlarged: set[int] = set()  # jobs whose truncated answer was asked again with a larger cap
        own = [r.params.get("max_tokens") if isinstance(r.params.get("max_tokens"), int) else None for r in current]
        asked = list(own)  # output tokens asked for so far, per job with a cap of its own
        for round_ in range(answers.MAX_REASKS + 1):
            if not pending:
                break
            report = runner.run([current[i] for i in pending], mode=self.s.mode, timeout=self.timeout)
            waiting = sum(1 for i in pending if (report.responses.get(current[i].custom_id) or Response("", "errored"))
                          .error == PENDING_ERROR)
            if waiting:
                raise StagePending(stage, waiting, len(jobs))
            self.sent[stage] = self.sent.get(stage, 0) + report.sent
            self.cached[stage] = self.cached.get(stage, 0) + report.cached
            again = []
            for i in pending:
                req, meta = current[i], jobs[i][1]
                resp = report.responses.get(req.custom_id)
                result, status, detail = parse(meta, resp)
                results[i] = result
                self.log.append({"stage": req.stage, "subject": req.subject, "case_id": req.case_id, "item": req.item,
                                 "round": round_, "custom_id": req.custom_id, "status": status, "detail": detail,
                                 "finish_reason": resp.finish_reason if resp else None,
                                 "input_tokens": resp.input_tokens if resp else None,
                                 "output_tokens": resp.output_tokens if resp else None})
                budget = None if own[i] is None else REASK_TOKEN_FACTOR * own[i] - asked[i]
                if status in REASKABLE and resp is not None and round_ < answers.MAX_REASKS:
                    if budget is not None and budget < own[i]:
                        self.log[-1]["detail"] = (f"{detail}; not asked again: its rounds have asked for "
                                                  f"{asked[i]:,} output tokens of {REASK_TOKEN_FACTOR * own[i]:,} "
                                                  f"({REASK_TOKEN_FACTOR} times its cap)").lstrip("; ")
                        continue
                    current[i] = reask(req, resp, status, detail, round_)
                    if own[i] is not None:  # back to the request's own cap (a doubled one served the cut answer)
                        current[i] = reask_larger(current[i], own[i])
                        asked[i] += own[i]
                    again.append(i)
                elif status == "truncated" and resp is not None and round_ < answers.MAX_REASKS and i not in enlarged:
                    cap = larger_cap(req, resp)
                    if cap and budget is not None and cap > budget:
                        cap = None
                    if cap:  # asked again once, with room; the log row says so
                        self.log[-1]["detail"] = f"{detail}; asked again with max_tokens {cap}".lstrip("; ")
                        current[i] = reask_larger(req, cap)
                        asked[i] += cap
                        enlarged.add(i)
                        again.append(i)
            pending = again
        return results
