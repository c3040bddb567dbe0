"""How long a document method will take on the local model, said before it starts (``gavel documents
end-to-end|chunked|three-pass|agent --provider local``): the requests each method will send, multiplied by
the server's measured speed and the model's measured answer lengths per stage (``gavel.llm.pace``).

* **end-to-end**: one request per item, all known before anything is sent.
* **chunked**: one request per (item, piece); each carries the item's state so far, counted from the second
  piece on as one earlier answer (the measured ``doc_chunk`` answer length).
* **three-pass**: one extract request per piece, a merge tree of at most ``pieces - 1`` joins (a join whose
  sides share no filled item needs no call), one prune request. A join's sides are counted as long as the
  answers that made them (an extract answer at the first level, a merge answer above), the prune's input as
  one merge answer.
* **agent**: how many turns a run takes is the model's choice, so the forecast is per turn (the first turn's
  request: later turns carry the run's history and take longer) with the step limit's maximum, and the most
  a turn can take (a prompt filling the model's context window, the answer at its cap).

Each method then says, before each round it sends, that round's forecast (``gavel.llm.pace.announce``), and
shows its progress: a bar per round, a line per agent turn.
"""

from __future__ import annotations

from collections.abc import Callable

from gavel.llm import pace
from gavel.llm.pace import Pace

from . import agent, chunked, three_pass


def filler(tokens: int) -> str:
    """A stand-in text of about ``tokens`` tokens (o200k): for the parts of a prompt not known in advance."""
    return " ".join(["value"] * max(tokens, 0))


def _expected(seconds: float, n: int, at_most: bool = True, detail: str = "") -> str:
    return (f"expected duration {pace.duration(seconds)} for {'at most ' if at_most else ''}{n} requests"
            f"{detail} (cached answers take no time)")


def requests_say(requests: list) -> Callable[[Pace], str]:
    """The forecast of requests known in advance (end-to-end's: those not in the cache)."""
    return lambda speed: _expected(pace.forecast(requests, speed), len(requests), at_most=False)


def chunked_requests(corpus, model: str, items=None, max_tokens: int | None = None, checklist=None,
                     params: dict | None = None) -> list:
    """Stand-ins for the chunked method's requests, every piece of every item."""
    from gavel.core import items as gitems

    checklist = gitems.load(checklist)
    earlier = [{"value": filler(pace.answer_tokens(model, chunked.STAGE)), "evidence": []}]
    return [chunked.build_request(corpus, it.name, earlier if n else [], piece, model, params, checklist)
            for n, piece in enumerate(chunked.pieces(corpus, max_tokens or chunked.piece_tokens(model)))
            for it in checklist.select(items)]


def chunked_say(corpus, model: str, **kwargs) -> Callable[[Pace], str]:
    """The chunked method's forecast (its stand-in requests built only when it is said)."""
    def say(speed: Pace) -> str:
        reqs = chunked_requests(corpus, model, **kwargs)
        return _expected(pace.forecast(reqs, speed), len(reqs))
    return say


def three_pass_requests(corpus, model: str, checklist=None, max_tokens: int | None = None,
                        params: dict | None = None, items=None) -> tuple[list, int]:
    """(stand-ins for the three-pass requests: extract, every join of the merge tree, prune; pieces)."""
    run, parts = three_pass.prepare(corpus, model, checklist, max_tokens, params, items)
    reqs = run.extract_requests(parts)
    extracted = filler(pace.answer_tokens(model, three_pass.STAGES["extract"]))
    merged = filler(pace.answer_tokens(model, three_pass.STAGES["merge"]))
    for level, joins in enumerate(three_pass.merge_joins(len(parts)), 1):
        side = extracted if level == 1 else merged
        reqs += [run.request("merge", three_pass.MERGE_SCHEMA, item=f"level {level} join {n}", a=side, b=side)
                 for n in range(1, joins + 1)]
    if parts:
        reqs.append(run.request("prune", three_pass.PRUNE_SCHEMA, values=merged if len(parts) > 1 else extracted))
    return reqs, len(parts)


def three_pass_say(corpus, model: str, **kwargs) -> Callable[[Pace], str]:
    """The three-pass method's forecast (its stand-in requests built only when it is said)."""
    def say(speed: Pace) -> str:
        reqs, n = three_pass_requests(corpus, model, **kwargs)
        per = {p: pace.duration(pace.forecast([r for r in reqs if r.stage == three_pass.STAGES[p]], speed))
               for p in three_pass.PASSES}
        return _expected(pace.forecast(reqs, speed), len(reqs),
                         detail=f" ({n} pieces: {n} extract {per['extract']}, at most {max(n - 1, 0)} merge "
                                f"{per['merge']}, 1 prune {per['prune']})")
    return say


def agent_say(corpus, configs: list, model: str, max_steps: int = agent.MAX_STEPS, params: dict | None = None,
              tool_mode: str = "json") -> Callable[[Pace], str]:
    """Per turn and at most: ``each turn about X (...); at most N turns: about Y, at most Z``."""
    def say(speed: Pace) -> str:
        from gavel.llm.registry import llm_model

        firsts = [agent.first_turn(corpus, cfg, model, max_steps, params, tool_mode) for cfg in configs]
        cap = firsts[0].params.get("max_tokens") or llm_model(model).max_output_tokens
        window = llm_model(model).context_window
        turn = pace.forecast(firsts, speed) / len(firsts)
        most = speed.seconds(max(window - cap, 0), cap)
        turns = max_steps * len(firsts)
        runs = f" in each of {len(firsts)} runs" if len(firsts) > 1 else ""
        return (f"the agent's turns are its own choice: each turn about {pace.duration(turn)} (the first; later "
                f"turns carry the run's history, up to {pace.duration(most)} at the model's full context window); "
                f"at most {max_steps} turns{runs}: about {pace.duration(turn * turns)}, at most "
                f"{pace.duration(most * turns)} (cached turns take no time)")
    return say
