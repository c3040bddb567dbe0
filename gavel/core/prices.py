"""The price table (gavel/core/prices.yaml): dated prices per model, read and checked once, and the cost of one
request's usage under it.

A request's usage is a dict of token counts by class (USAGE_FIELDS); a class the provider did not report is
``None`` (unknown), never 0. ``input`` is every prompt token, cached or not; ``cache_read`` and
``cache_write`` (split into ``cache_write_5m`` / ``cache_write_1h`` where the provider splits it) are parts of
it; ``output`` is every generated token billed as output; ``reasoning`` is the part of it spent thinking.

The price of a request: the row of its model in effect on the day it was answered; the row's long-context
tier when the whole prompt is over the tier's threshold (the tier prices the whole request); every class at
its rate; the batch discount on every rate but the row's ``batch_keeps`` (the provider's own rule: Gemini keeps
cached input at its standard rate) when it went through a batch API. Each input token is billed in
exactly one class: uncached input = input - cache_read - cache_write.
"""

from __future__ import annotations

import datetime as dt
import math
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import yaml

from gavel.core import config

PATH = Path(__file__).with_name("prices.yaml")
#: token classes of a request's usage (see the module's docstring); ``None`` = not reported
USAGE_FIELDS = ("input", "cache_read", "cache_write", "cache_write_5m", "cache_write_1h", "output", "reasoning")
#: rates of a price row, USD per million tokens
RATES = ("input", "cache_read", "cache_write_5m", "cache_write_1h", "output")
ROW_FIELDS = ("model", "since", "until", "source", "batch_discount", "batch_keeps", "tiers", *RATES)
#: the most tokens of one class a single request may report: ten times the largest context window of a model
#: gavel knows (about 1M tokens); a count over it is a provider's or a cache file's error, never priced
MAX_TOKENS = 10_000_000
#: providers that bill per token (the others run on your own GPUs, or are stand-ins)
HOSTED = ("openai", "anthropic", "gemini")
#: providers on your own GPUs: priced by GPU-hour (gpu_hour_usd), not per token
OWN_GPUS = ("vllm", "vllm-batch", "local")


class PriceTableError(config.ModelsFileError):
    """A malformed price table; the message names the file and the entry."""


@dataclass(frozen=True)
class Row:
    model: str
    since: dt.date
    until: dt.date | None
    source: str
    rates: dict
    batch_discount: float = 0.0
    batch_keeps: tuple = ()  # rates the batch discount leaves at their standard value (Gemini's cached input)
    tiers: tuple = ()  # ((above, {rate: value}), ...) by threshold

    @property
    def id(self) -> str:
        """How a cost names the row it was priced by: ``model@since``."""
        return f"{self.model}@{self.since.isoformat()}"

    def tier(self, prompt_tokens: int | None) -> tuple[int | None, dict]:
        """(threshold, rates) for a prompt of ``prompt_tokens``: the highest tier it is over, else (None, base)."""
        chosen, rates = None, dict(self.rates)
        for above, tier_rates in self.tiers:
            if prompt_tokens is not None and prompt_tokens > above:
                chosen, rates = above, {**self.rates, **tier_rates}
        return chosen, rates


@dataclass(frozen=True)
class Table:
    path: str
    rows: dict  # model -> tuple of Rows by since
    gpu_hour_usd: dict
    checked: dt.date | None = None

    def row(self, model: str, when: dt.date | dt.datetime | str | None = None) -> Row | None:
        """The row of ``model`` in effect on ``when`` (default today, UTC); before the first row, the first."""
        rows = self.rows.get(model, ())
        if not rows:
            return None
        day = _day(when) if when is not None else dt.datetime.now(dt.UTC).date()
        current = [r for r in rows if r.since <= day and (r.until is None or day <= r.until)]
        return current[-1] if current else rows[0]


@dataclass(frozen=True)
class Priced:
    usd: float | None  # None: unknown (no price, or no input / output count)
    row: str  # the price row (``model@since``, ``>N`` for a tier, `` batch -50%``), or why there is none
    unknown: tuple = ()  # token classes the price needed that the provider did not report


def _day(value) -> dt.date:
    if isinstance(value, dt.datetime):
        return value.astimezone(dt.UTC).date() if value.tzinfo else value.date()
    if isinstance(value, dt.date):
        return value
    return dt.datetime.fromisoformat(str(value).replace("Z", "+00:00")).date()


def _number(where: str, name: str, value) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise PriceTableError(f"{where}: field {name!r} must be a number (USD per million tokens), got {value!r}")
    try:
        number = float(value)
    except OverflowError:
        number = math.inf
    if not math.isfinite(number):
        raise PriceTableError(f"{where}: field {name!r} must be a finite number (USD per million tokens), got "
                              f"{'NaN' if number != number else 'an infinite or too large value'}")
    if number < 0:
        raise PriceTableError(f"{where}: field {name!r} is negative ({number:g}); prices are 0 or more")
    return number


def _date(where: str, name: str, value) -> dt.date:
    if isinstance(value, dt.date) and not isinstance(value, dt.datetime):
        return value
    try:
        return dt.date.fromisoformat(str(value))
    except ValueError:
        raise PriceTableError(f"{where}: field {name!r} must be a date (YYYY-MM-DD), got {value!r}") from None


def _rates(where: str, entry: dict) -> dict:
    return {k: _number(where, k, entry[k]) for k in RATES if k in entry}


def parse_row(where: str, entry) -> Row:
    if not isinstance(entry, dict):
        raise PriceTableError(f"{where}: a price row is a mapping (model, since, source, input, output, ...)")
    unknown = sorted(set(entry) - set(ROW_FIELDS))
    if unknown:
        raise PriceTableError(f"{where}: unknown field {unknown[0]!r}; known: {', '.join(ROW_FIELDS)}")
    for key in ("model", "since", "input", "output"):
        if key not in entry:
            raise PriceTableError(f"{where}: field {key!r} is missing (every row needs model, since, input, output)")
    model = entry["model"]
    try:
        config.model(model)
    except KeyError:
        raise PriceTableError(f"{where}: model {model!r} is not in the model registry (gavel/core/models.yaml)") \
            from None
    since = _date(where, "since", entry["since"])
    until = _date(where, "until", entry["until"]) if entry.get("until") is not None else None
    if until is not None and until < since:
        raise PriceTableError(f"{where}: 'until' {until} is before 'since' {since}")
    discount = _number(where, "batch_discount", entry.get("batch_discount", 0.0))
    if discount >= 1:
        raise PriceTableError(f"{where}: 'batch_discount' is the share taken off (0.5 = half price), got {discount}")
    keeps = entry.get("batch_keeps") or []
    if not isinstance(keeps, list) or any(k not in RATES for k in keeps):
        raise PriceTableError(f"{where}: 'batch_keeps' lists the rates the batch discount does not apply to "
                              f"(of {', '.join(RATES)}), got {keeps!r}")
    tiers = []
    for n, tier in enumerate(entry.get("tiers") or [], 1):
        at = f"{where}, tier {n}"
        if not isinstance(tier, dict) or "above" not in tier:
            raise PriceTableError(f"{at}: a tier is a mapping with 'above' (prompt tokens) and its rates")
        extra = sorted(set(tier) - {"above", *RATES})
        if extra:
            raise PriceTableError(f"{at}: unknown field {extra[0]!r}; known: above, {', '.join(RATES)}")
        above = tier["above"]
        if isinstance(above, bool) or not isinstance(above, int) or above <= 0:
            raise PriceTableError(f"{at}: 'above' must be a positive whole number of prompt tokens, got {above!r}")
        tiers.append((above, _rates(at, tier)))
    if len({a for a, _ in tiers}) < len(tiers):
        raise PriceTableError(f"{where}: two tiers with the same 'above'")
    return Row(model=model, since=since, until=until, source=str(entry.get("source") or ""),
               rates=_rates(where, entry), batch_discount=discount, batch_keeps=tuple(keeps),
               tiers=tuple(sorted(tiers, key=lambda t: t[0])))


def parse(data, path: str, extra_rows: list | None = None, extra_where: str = "", extra_gpu: dict | None = None) -> Table:
    """A checked Table from the YAML ``data`` of ``path``. ``extra_rows`` and ``extra_gpu`` (the user's models
    file's ``prices`` and ``gpu_hour_usd``) replace the package's rows of the models they name, and its rates."""
    if not isinstance(data, dict) or not isinstance(data.get("prices"), list):
        raise PriceTableError(f"{path}: a price table is a mapping with `prices:` (a list of rows), `checked:` and "
                              f"`gpu_hour_usd:`")
    unknown = sorted(set(data) - {"prices", "checked", "gpu_hour_usd"})
    if unknown:
        raise PriceTableError(f"{path}: unknown field {unknown[0]!r}; known: prices, checked, gpu_hour_usd")
    rows: dict[str, list[Row]] = {}
    for n, entry in enumerate(data["prices"], 1):
        label = entry.get("model") if isinstance(entry, dict) else None
        row = parse_row(f"{path}, prices entry {n}" + (f" ({label})" if label else ""), entry)
        rows.setdefault(row.model, []).append(row)
    user: dict[str, list[Row]] = {}
    for n, entry in enumerate(extra_rows or [], 1):
        label = entry.get("model") if isinstance(entry, dict) else None
        row = parse_row(f"{extra_where}, prices entry {n}" + (f" ({label})" if label else ""), entry)
        user.setdefault(row.model, []).append(row)
    rows.update(user)
    for model, group in rows.items():
        group.sort(key=lambda r: r.since)
        for a, b in zip(group, group[1:]):
            if a.since == b.since or (a.until is not None and a.until >= b.since):
                raise PriceTableError(f"{path}: model {model}: rows since {a.since} and since {b.since} overlap "
                                      f"(a row applies until the next one's 'since'; fix the dates)")
    for m in config.models():
        if m.provider in HOSTED and m.release_name not in rows:
            raise PriceTableError(f"{path}: model {m.release_name} (provider {m.provider}) has no price row; add "
                                  f"one (model, since, source, input, output, ...)")
    gpu = {}
    for where, given in ((path, data.get("gpu_hour_usd") or {}), (extra_where, extra_gpu or {})):
        if not isinstance(given, dict) or set(given) - set(OWN_GPUS):
            raise PriceTableError(f"{where}: 'gpu_hour_usd' maps {', '.join(OWN_GPUS)} to USD per GPU-hour, got "
                                  f"{given!r}")
        gpu.update({k: _number(f"{where}, gpu_hour_usd", k, v) for k, v in given.items()})
    checked = _date(path, "checked", data["checked"]) if data.get("checked") is not None else None
    return Table(path=path, rows={k: tuple(v) for k, v in rows.items()}, gpu_hour_usd=gpu, checked=checked)


def read(path: str | Path) -> Table:
    """A price table of one's own (the same shape as gavel/core/prices.yaml)."""
    try:
        data = yaml.safe_load(Path(path).read_text(encoding="utf-8"))
    except (OSError, yaml.YAMLError) as err:
        raise PriceTableError(f"{path}: cannot read the price table ({err})") from None
    return parse(data, str(path))


@lru_cache(maxsize=4)
def _package(_stamp: int, user_key: str) -> Table:
    data = config.package_yaml(PATH.read_text(encoding="utf-8"))
    registry = config._registry()
    return parse(data, "gavel/core/prices.yaml", registry.get("user_prices") or [], str(config.models_file() or ""),
                 registry.get("user_gpu_hour_usd") or {})


def table() -> Table:
    """The package's price table with the rows of the user's models file (its ``prices:``) over it."""
    registry = config._registry()
    return _package(PATH.stat().st_mtime_ns, repr((registry.get("user_prices"), registry.get("user_gpu_hour_usd"))))


def legacy_row(model: str) -> Row | None:
    """An undated row from a models file's ``llm.price`` ({input, output, cached_input, batch_discount}), the
    shape prices had before the price table; None when the model has neither."""
    try:
        p = config.model(model).llm.get("price")
    except KeyError:
        return None
    if not p:
        return None
    where = f"{config.models_file() or 'the models file'}: model {model}, llm.price"
    rates = {k: _number(where, k, p.get(k, 0.0)) for k in ("input", "output")}
    if "cached_input" in p:
        rates["cache_read"] = _number(where, "cached_input", p["cached_input"])
    return Row(model=model, since=dt.date.min, until=None, source="llm.price of the models file", rates=rates,
               batch_discount=_number(where, "batch_discount", p.get("batch_discount", 0.0)))


def implausible(usage) -> str | None:
    """Why ``usage`` cannot be a request's usage (one short phrase), or None when it can: a count that is not a
    number from 0 to MAX_TOKENS, or parts larger than their whole (cache reads and writes over the input,
    the split writes over the writes, reasoning over the output). Never shows the offending number itself. An
    estimate's counts may be fractional (a mean); a provider's are whole (gavel.llm.usage)."""
    if usage is None:
        return None
    if not isinstance(usage, dict):
        return "usage is not a record of token counts"
    for k in USAGE_FIELDS:
        v = usage.get(k)
        if v is None:
            continue
        if isinstance(v, bool) or not isinstance(v, (int, float)) or v != v:
            return f"{k} is not a number of tokens"
        if v < 0:
            return f"{k} is negative"
        if v > MAX_TOKENS:
            return f"{k} is over {MAX_TOKENS:,} tokens"

    def known(*keys):
        return sum(usage.get(k) or 0 for k in keys)

    writes = known("cache_write_5m", "cache_write_1h")
    if usage.get("cache_write") is not None and writes > usage["cache_write"]:
        return "cache_write_5m + cache_write_1h is over cache_write"
    if usage.get("input") is not None and known("cache_read") + max(writes, known("cache_write")) > usage["input"]:
        return "cache_read + cache_write is over input"
    if usage.get("output") is not None and known("reasoning") > usage["output"]:
        return "reasoning is over output"
    return None


def cost(model: str, usage: dict | None, mode: str, when=None, provider: str | None = None,
         prices: Table | None = None) -> Priced:
    """What one answered request cost (see the module's docstring). ``provider`` on your own GPUs (vllm,
    local): 0 per token (their time is priced per GPU-hour, by the job). Usage that is not plausible
    (``implausible``) is never priced: unknown, its reason in ``row``, ``unknown`` = ("usage",)."""
    why = implausible(usage)
    if why:
        return Priced(None, f"usage not plausible: {why}", ("usage",))
    if provider in OWN_GPUS:
        return Priced(0.0, f"own GPUs ({provider})")
    if provider == "replay":
        return Priced(0.0, "replayed (nothing sent)")
    prices = prices or table()
    row = prices.row(model, when) or legacy_row(model)
    if row is None:
        try:
            own = config.model(model).provider
        except KeyError:
            own = None
        if own in OWN_GPUS:  # an open-weight model served by a stand-in (mock): priced as on your own GPUs
            return Priced(0.0, f"own GPUs ({own})")
        return Priced(None, f"no price row for {model}")
    usage = usage or {}
    above, rates = row.tier(usage.get("input"))
    label = row.id + (f" >{above}" if above else "") + (f" batch -{row.batch_discount:.0%}" if mode == "batch"
                                                        and row.batch_discount else "")
    unknown = [k for k in ("input", "output") if usage.get(k) is None]
    if "cache_read" in rates and rates["cache_read"] != rates["input"] and usage.get("cache_read") is None:
        unknown.append("cache_read")
    writes = [usage.get("cache_write_5m"), usage.get("cache_write_1h")]
    if writes == [None, None]:  # not split: the default (5-minute) cache
        writes = [usage.get("cache_write"), None]
        if usage.get("cache_write") is None and ("cache_write_5m" in rates or "cache_write_1h" in rates):
            unknown.append("cache_write")
    if usage.get("input") is None or usage.get("output") is None:
        return Priced(None, label, tuple(unknown))
    w5, w1 = (w or 0 for w in writes)
    read = usage.get("cache_read") or 0
    uncached = usage["input"] - read - w5 - w1
    r5 = rates.get("cache_write_5m", rates["input"])
    spent = {"input": uncached * rates["input"], "cache_read": read * rates.get("cache_read", rates["input"]),
             "cache_write_5m": w5 * r5, "cache_write_1h": w1 * rates.get("cache_write_1h", r5),
             "output": usage["output"] * rates["output"]}
    if mode == "batch":  # the discount on every rate but those the provider keeps at the standard rate
        spent = {k: v if k in row.batch_keeps else v * (1 - row.batch_discount) for k, v in spent.items()}
    return Priced(sum(spent.values()) / 1e6, label, tuple(unknown))
