"""The dry run: what a stage's requests would cost, before anything is sent.

Input tokens are counted (o200k_base); output tokens per model come from measured answer lengths -- the
caller's measurement (e.g. the release's recorded answers of that stage), else this stage's own earlier
answers in its cache -- and only when there is neither from the output cap, said so (an upper bound). A
reasoning model (a reasoning effort, a thinking budget, dynamic thinking in the registry's quirks) is billed
for hidden reasoning tokens that answer lengths measured elsewhere (the release keeps answers, not reasoning)
do not hold: the estimate names them and adds an allowance (``reasoning_allowance``). Prices
come from the price table (gavel.core.prices) in the mode the run will use: a provider without a batch API
runs online whatever was asked. A model the provider does not serve is refused (``allow_unserved`` prices
it anyway, with a warning). The estimate is kept in ``<workdir>/estimate.json`` so that the run's ledger can
stand beside it.
"""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from gavel.core import prices

from . import measured, packs
from .providers.base import ProviderError


@dataclass(frozen=True)
class Planned:
    """A request priced without rendering it: its model, its ``max_tokens`` parameter (None: the model's
    cap), its input tokens (each message's o200k tokens, summed, as the rendered request counts) and how to
    build it -- called only where the request itself is needed: to look it up in a stage cache that holds
    answers, or to name it when it is too long."""

    model: str
    max_tokens: int | None
    input_tokens: int
    build: Callable


def _planned(r) -> Planned:
    if isinstance(r, Planned):
        return r
    from gavel.core.tokens import count_tokens

    return Planned(r.model, r.params.get("max_tokens"), sum(count_tokens(msg["content"]) for msg in r.messages),
                   lambda: r)


#: the output caps a dry run prices a reasoning stage at when nothing of it is measured
SUGGESTED_CAPS = (2_000, 8_000, 32_000)
COLUMNS = ["provider", "model", "mode", "requests", "input_tokens", "output_tokens_est", "output_from",
           "cost_usd_est", "price_row"]


def reasoning_allowance(m, cap: int, answer: float | None, measured: bool) -> tuple[float, str] | None:
    """(hidden reasoning tokens a request of registry model ``m`` is billed for beyond its answer, and where
    the figure comes from); None for a model that does not reason or is not billed per token. ``answer``: the answer estimate (None: the
    cap); ``measured``: it was measured on this stage's own answers, whose output counts include reasoning
    (every provider bills reasoning as output). Otherwise the allowance is the thinking budget the request sets,
    or, where the provider publishes no figure per effort level (OpenAI's reasoning effort, Gemini's dynamic
    thinking), the room left under the output cap: an upper bound, until this stage's answers are measured."""
    from gavel.core import config

    try:
        hosted = config.model(m.name).provider in prices.HOSTED  # own GPUs are priced by the hour, not the token
    except KeyError:
        hosted = False
    q = m.quirks or {}
    if not hosted:
        return None
    effort, budget, dynamic = q.get("reasoning_effort"), q.get("thinking_budget_tokens"), q.get("thinking_budget")
    if effort is None and budget is None and dynamic is None and not q.get("enable_thinking"):
        return None
    name = (f"reasoning effort {effort}" if effort else f"thinking budget {budget:,}" if budget
            else "dynamic thinking" if dynamic == -1 else "thinking")
    if measured:
        return 0.0, f"{name}: hidden reasoning tokens included in the measured answers"
    if answer is None:
        return 0.0, f"{name}: hidden reasoning tokens within the output cap counted"
    room = max(cap - answer, 0.0)
    if budget:
        return min(budget, room), (f"{name}: + {min(budget, room):,.0f} hidden reasoning tokens a request, the "
                                   f"thinking budget the request sets (an upper bound)")
    return room, (f"{name}: + {room:,.0f} hidden reasoning tokens a request, up to the output cap of {cap:,} (the "
                  f"provider bills reasoning as output within max_tokens and publishes no figure per effort level: "
                  f"an upper bound until this stage's answers are measured)")


def run_mode(provider, mode: str) -> str:
    """The mode a run will really use: online where the provider has no batch API."""
    return mode if mode == "online" or getattr(provider, "supports_batch", True) else "online"


def unserved(provider, model: str) -> str | None:
    """Why ``provider`` cannot answer for ``model`` (its registry provider is another), or None."""
    if provider.serves_any_model:
        return None
    from gavel.core import config

    try:
        own = config.model(model).provider
    except KeyError:
        return None  # the run's own check names an unknown model
    if own == provider.name:
        return None
    return f"provider {provider.name} does not serve {model} (it is served by {own})"


def measured_output(runner) -> tuple[float | None, int]:
    """Mean output tokens of this stage's earlier answers in the runner's cache, and how many."""
    m = measured.of_cache(runner.cache.folder, runner.stage)
    return m.output_mean, m.requests


def dry_run(runner, requests, mode: str = "batch", expected_output_tokens=None, cached_prefix_tokens: int = 0,
            show: bool = True, allow_unserved: bool = False, keep: bool = True):
    """See the module's docstring. ``requests``: requests or :class:`Planned` ones (any iterable: it is
    walked once and nothing of it is kept but its numbers); ``expected_output_tokens``: one number for every
    model, or {model: tokens}; ``keep=False`` writes no estimate.json (a caller that keeps the estimate of
    several stages itself). ``attrs["too_long"]`` maps each too-long request's custom_id to why,
    ``attrs["too_long_requests"]`` to the request."""
    import pandas as pd

    mode = run_mode(runner.provider, mode)
    requests = [_planned(r) for r in requests] if isinstance(requests, list) else map(_planned, requests)
    if isinstance(requests, list):  # every model's problem said at once
        models = {r.model: unserved(runner.provider, r.model) for r in requests}
        _refuse_unserved(sorted({why for why in models.values() if why}), allow_unserved)
    else:
        models = {}
    outputs: dict[str, tuple[float | None, str]] = {}
    reasoning: dict[str, str] = {}
    allowances: dict[tuple, float] = {}
    registry: dict[str, object] = {}
    prices_now = prices.table()
    answered = packs.any_answer(runner.cache.folder)  # with none, no request is already answered
    rows, too_long, too_long_requests, priced_as = [], {}, {}, {}
    for r in requests:
        if r.model not in registry:
            if r.model not in models:
                models[r.model] = unserved(runner.provider, r.model)
                _refuse_unserved([models[r.model]] if models[r.model] else [], allow_unserved)
            registry[r.model] = runner._registry_model(r.model)
        m = registry[r.model]
        n_in = r.input_tokens
        cap = r.max_tokens or m.max_output_tokens
        if r.model not in outputs:
            given = expected_output_tokens.get(r.model) if isinstance(expected_output_tokens, dict) \
                else expected_output_tokens
            if given:
                outputs[r.model] = (float(given), "given")
            else:
                mean, n = measured_output(runner)
                outputs[r.model] = (mean, f"this stage's {n} earlier answers") if n else (None, "cap (no measurement)")
        mean, source = outputs[r.model]
        if (r.model, cap) not in allowances:
            extra = reasoning_allowance(m, cap, mean, source.startswith("this stage's"))
            allowances[(r.model, cap)] = extra[0] if extra else 0.0
            if extra:
                reasoning[r.model] = extra[1]
        n_out = cap if mean is None else min(cap, mean + allowances[(r.model, cap)])
        cached_in = min(cached_prefix_tokens, n_in)
        key = (r.model, n_in, cached_in, n_out)
        if key not in priced_as:  # requests of one length are priced once
            priced_as[key] = prices.cost(r.model, {"input": n_in, "cache_read": cached_in, "output": n_out}, mode,
                                         provider=runner.provider.name, prices=prices_now)
        priced = priced_as[key]
        request = r.build() if answered else None
        is_cached = answered and runner.is_cached(request)
        limit = m.quirks.get("max_input_tokens")  # an input limit the provider states apart (GPT-5: 272K)
        is_long = not is_cached and (n_in + cap > m.context_window or (limit is not None and n_in > limit))
        if is_long:
            request = request or r.build()
            too_long[request.custom_id] = runner.too_long(request) or (
                f"prompt of {n_in:,} tokens over the {limit:,} input tokens {r.model}'s API takes")
            too_long_requests[request.custom_id] = request
        rows.append((runner.provider.name, r.model, mode, n_in, n_out, is_cached, is_long, source,
                     priced.usd or 0.0, priced.row))
    df = pd.DataFrame(rows, columns=["provider", "model", "mode", "input_tokens", "output_tokens_est", "cached",
                                     "too_long", "output_from", "cost_usd_est", "price_row"])
    to_send = df[~df["cached"] & ~df["too_long"]]
    summary = to_send.groupby(["provider", "model", "mode"]).agg(
        requests=("input_tokens", "size"), input_tokens=("input_tokens", "sum"),
        output_tokens_est=("output_tokens_est", "sum"), output_from=("output_from", "first"),
        cost_usd_est=("cost_usd_est", "sum"), price_row=("price_row", "first")).reset_index()
    summary = summary[COLUMNS]
    summary.attrs["already_cached"] = int(df["cached"].sum())
    summary.attrs["too_long"] = too_long
    summary.attrs["too_long_requests"] = too_long_requests
    summary.attrs["mode"] = mode
    summary.attrs["reasoning"] = reasoning
    summary.attrs["unmeasured"] = unmeasured = {}  # {model: {cap N: USD with every answer capped at N}}
    for model in sorted(reasoning):
        if outputs[model][1].startswith("this stage's"):
            continue
        sent = to_send[to_send["model"] == model]
        unmeasured[model] = {c: sum(prices.cost(model, {"input": int(n_in), "output": min(float(n_out), c)}, mode,
                                                provider=runner.provider.name, prices=prices_now).usd or 0.0
                                    for n_in, n_out in zip(sent["input_tokens"], sent["output_tokens_est"]))
                             for c in SUGGESTED_CAPS if (sent["output_tokens_est"] > c).any()}
    total = float(summary["cost_usd_est"].sum())
    if keep:
        runner.workdir.mkdir(parents=True, exist_ok=True)
        (runner.workdir / "estimate.json").write_text(json.dumps(
            {"stage": runner.stage, "mode": mode, "usd": total, "requests": int(len(to_send)),
             "input_tokens": int(to_send["input_tokens"].sum()),
             "output_tokens_est": float(to_send["output_tokens_est"].sum()),
             "written_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}, indent=1))
    if show:
        print(f"dry run of stage {runner.stage!r}, priced as {mode} (the mode the run will use): {len(to_send)} to "
              f"send, {int(df['cached'].sum())} already cached, {len(too_long)} too long for the context window "
              f"(will not be sent); total ${total:.4f}; nothing was sent")
        print(summary.to_string(index=False))
        if (summary["output_from"] == "cap (no measurement)").any():
            print("  output at the cap (no answers of this stage measured yet): an upper bound; once a few requests "
                  "have run, the next dry run measures their answers")
        for model, why in sorted(reasoning.items()):
            print(f"  {model} bills hidden reasoning tokens: {why}")
            if model in unmeasured:
                caps = unmeasured[model]
                print(f"  {model}: no measured usage (no answers of this stage in {runner.cache.folder} yet), so no "
                      "central estimate: the total above is a bound"
                      + ("; max_tokens N in the requests bounds it at " + ", ".join(
                          f"${usd:,.2f} (N = {c:,})" for c, usd in caps.items())
                         + " (an answer cut off at N is unusable)" if caps else "")
                      + "; once a few requests have run, the next dry run measures them")
        for cid, why in too_long.items():
            print(f"  too long {cid}: {why}")
    return summary


def _refuse_unserved(problems: list[str], allow_unserved: bool) -> None:
    if problems and not allow_unserved:
        raise ProviderError("; ".join(problems) + ": choose the provider that serves it (or price it anyway with "
                            "--allow-unserved)")
    for why in problems:
        print(f"warning: {why}; priced at its list price anyway", file=sys.stderr)


def read_estimate(workdir: str | Path) -> float | None:
    """The dry run's estimate (USD) kept in a workdir, or None."""
    try:
        return float(json.loads((Path(workdir) / "estimate.json").read_text(encoding="utf-8"))["usd"])
    except (OSError, ValueError, KeyError, TypeError):
        return None
