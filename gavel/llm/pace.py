"""How long a run on the local model takes, said before it starts, and the output caps that fit the model.

A model on this machine's CPU answers at a speed only this machine knows. ``measure`` asks the running
server two short questions (one long prompt and one token; one short prompt and a few dozen tokens) and
turns the timings into seconds per prompt token (counted in o200k tokens, as gavel counts every prompt)
and seconds per generated token. ``forecast`` multiplies: each request's prompt tokens, plus the answer
length the model's answers of that stage measured (``stage_answer_tokens`` of its registry entry, never
more than the stage's cap), at the measured speeds.

The registry entry of a local model (``gavel/core/models.yaml``, its ``quirks``) carries, per stage, the
output cap (``stage_max_tokens``) and the mean answer length (``stage_answer_tokens``), both measured on
that model's own answers (``benchmarks/first_run.py --measure`` prints them), and the answers per request
(``stage_rounds``: re-asks of unusable answers included). A stage's cap applies when
neither the request nor the user (``--max-tokens``) set one: a small model that loops stops at the cap
instead of at its context window (``capped`` puts it into a request's params: one definition for every stage).

Who says it: an ``Announcer`` measures the speed on first need (a run answered wholly from the cache never
starts the server) and says the whole run's forecast; ``announce`` says one round's before it is sent.
``gavel.runs.forecast`` counts an evaluation's requests, ``gavel.documents.pacing`` each document method's.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

from .records import Request

#: the question of the generation timing: it asks for a long answer, so the answer is cut by max_tokens
_COUNT = "Count from one to two hundred in words, separated by commas."
_FILLER = ("The court reviewed the consent decree and the monitor's reports on compliance, heard the parties on "
           "the remaining claims, and set a schedule for briefing on fees. ")


@dataclass(frozen=True)
class Pace:
    """Measured speeds of one served model: seconds per prompt token (o200k) and per generated token, and a
    fixed cost per request (the HTTP round trip and the server's own work)."""

    prompt_s: float
    generate_s: float
    request_s: float = 0.0

    def seconds(self, prompt_tokens: int, output_tokens: int) -> float:
        return self.request_s + prompt_tokens * self.prompt_s + output_tokens * self.generate_s


def _quirk(model: str, key: str) -> dict:
    from .registry import llm_model

    try:
        return dict(llm_model(model).quirks.get(key) or {})
    except (KeyError, ValueError):
        return {}


def stage_cap(model: str, stage: str) -> int | None:
    """The output cap of ``stage``'s requests to ``model`` from its registry entry, or None (the model's cap)."""
    return _quirk(model, "stage_max_tokens").get(stage)


def capped(params: dict | None, model: str, stage: str) -> dict:
    """A request's ``params`` with ``stage``'s output cap on ``model`` (``stage_cap``) where they set none."""
    out = dict(params or {})
    cap = stage_cap(model, stage)
    if cap and "max_tokens" not in out:
        out["max_tokens"] = cap
    return out


def answer_tokens(model: str, stage: str, cap: int | None = None) -> int:
    """The expected answer length of ``stage`` on ``model`` (measured mean; else half the cap), at most ``cap``."""
    from .registry import llm_model

    cap = cap or stage_cap(model, stage) or llm_model(model).max_output_tokens
    measured = _quirk(model, "stage_answer_tokens").get(stage)
    return min(cap, measured if measured else cap // 2)


def measure(provider, model: str) -> Pace:
    """Time two requests on ``provider`` (started if needed), sent directly (no cache: a timing must be real)."""
    from gavel.core.tokens import count_tokens

    long_prompt = f"[{time.time_ns()}] " + _FILLER * 12  # unique: the server's prefix cache must not answer it
    prompt = Request(stage="pace", model=model, messages=[{"role": "user", "content": long_prompt}],
                     params={"max_tokens": 1, "temperature": 0.0})
    gen = Request(stage="pace", model=model, messages=[{"role": "user", "content": _COUNT}],
                  params={"max_tokens": 48, "temperature": 0.0})
    timed(provider, gen)  # the first request pays for starting the server and warming it
    t_prompt, _ = timed(provider, prompt)
    t_gen, resp = timed(provider, gen)
    n_prompt = count_tokens(long_prompt)
    n_short = count_tokens(_COUNT)
    per_prompt = t_prompt / n_prompt
    generated = max(resp.output_tokens or 1, 1)
    generating = t_gen - n_short * per_prompt
    if generating < t_gen / 4:
        # the prompt's share, estimated from another request, took (nearly) all of it: a busy machine slowed
        # the long prompt's timing, or the model stopped at once. Then the whole request's time is the bound
        # (never a generation that costs nothing: that forecast would say minutes for hours)
        generating = t_gen
    return Pace(prompt_s=per_prompt, generate_s=generating / generated)


def timed(provider, request: Request):
    """(seconds, response) of one request sent directly; ProviderError when it failed."""
    from .providers.base import ProviderError

    t0 = time.perf_counter()
    resp = provider.complete(request)
    if not resp.ok:
        raise ProviderError(f"timing the local model: {resp.error}")
    return time.perf_counter() - t0, resp


def rounds(model: str, stage: str) -> float:
    """Answers per request of ``stage`` on ``model``, re-asks of unusable answers included (measured; else 1)."""
    return float(_quirk(model, "stage_rounds").get(stage) or 1.0)


def forecast(requests: list[Request], pace: Pace) -> float:
    """Expected seconds for ``requests`` (sent one after another, as llama.cpp's server answers them), with
    the re-asks the model's measured answers needed."""
    from gavel.core.tokens import count_tokens

    total = 0.0
    for r in requests:
        n_in = sum(count_tokens(m["content"]) for m in r.messages)
        total += rounds(r.model, r.stage) * pace.seconds(n_in, answer_tokens(r.model, r.stage,
                                                                             r.params.get("max_tokens")))
    return total


def say_now(line: str) -> None:
    """print, flushed: a forecast must show before the wait it announces."""
    print(line, flush=True)


def speed_line(speed: Pace) -> str:
    """``local model: N prompt tokens/s, M generated tokens/s (measured now)``."""
    return (f"local model: {1 / speed.prompt_s:,.0f} prompt tokens/s, {1 / max(speed.generate_s, 1e-9):,.0f} "
            f"generated tokens/s (measured now)")


class Announcer:
    """A lazy speed: on first call it measures ``provider`` (starting it: so a run answered wholly from the
    cache, which never calls it, never starts the server), shows the speed and ``say(speed)`` (the whole
    run's forecast, e.g. ``expected duration 3.1 min for 12 requests``), and from then on returns the speed."""

    def __init__(self, provider, model: str, say: Callable[[Pace], str], show: Callable[[str], None] | None = None,
                 speed: Pace | None = None):
        self.provider, self.model, self.say, self.show = provider, model, say, show or say_now
        self.speed, self.said = speed, False

    def __call__(self) -> Pace:
        if not self.said:
            self.speed = self.speed or measure(self.provider, self.model)
            self.said = True
            self.show(f"{speed_line(self.speed)}; {self.say(self.speed)}")
        return self.speed


def announce(speed, runner, requests: list[Request], label: str, show: Callable[[str], None] | None = None) -> int:
    """Before ``runner`` sends ``requests``: where ``speed`` (a Pace, or a function giving one, e.g. an
    Announcer) is set and some are not cached, show ``LABEL: n of m requests to send; expected D``. Returns
    how many are to send (0: no speed asked for, or all cached)."""
    if speed is None:
        return 0
    todo = [r for r in requests if not runner.is_cached(r)]
    if todo:
        pace = speed() if callable(speed) else speed
        (show or say_now)(f"{label}: {len(todo)} of {len(requests)} requests to send; expected "
                          f"{duration(forecast(todo, pace))}")
    return len(todo)


def duration(seconds: float) -> str:
    """``42 s``, ``3.5 min``, ``1.2 h``."""
    if seconds < 90:
        return f"{seconds:.0f} s"
    if seconds < 5400:
        return f"{seconds / 60:.1f} min"
    return f"{seconds / 3600:.1f} h"
