"""What a run spent: every answered request priced by the price table (gavel.core.prices), summed into
``cost.csv`` per stage, model, provider, mode and price row, answers from the cache apart.

An answer is *new* (paid by this run) when the runner received it from the provider after the run began
(its ``usage.answered_at`` is at or after the ledger's ``since``); an answer that was already in the cache
costs nothing new: its row says ``cached`` and ``usd`` 0, and ``usd_when_answered`` keeps what it cost then.
Requests that failed are not in the ledger (providers do not bill them). docs/cost.md lists the columns.
"""

from __future__ import annotations

import datetime as dt
import math
from pathlib import Path

from gavel.core import prices
from gavel.core.spreadsheet import read_csv, write_csv

#: token classes summed in cost.csv (``<class>_tokens``): the parts of input, output and reasoning
TOKEN_COLUMNS = ("input", "cache_read", "cache_write_5m", "cache_write_1h", "cache_write", "output", "reasoning")
GROUP = ["stage", "model", "provider", "mode", "cached", "price_row"]
COLUMNS = GROUP + ["requests", *(f"{c}_tokens" for c in TOKEN_COLUMNS), "gpu_hours", "usd", "usd_when_answered",
                   "unknown", "unknown_fields"]


def now() -> dt.datetime:
    """The time an answer is stamped with (UTC)."""
    return dt.datetime.now(dt.UTC)


def stamp_time() -> str:
    return now().isoformat(timespec="microseconds")


def _when(value) -> dt.datetime | None:
    if not value:
        return None
    try:
        when = dt.datetime.fromisoformat(str(value).replace("Z", "+00:00"))
    except ValueError:
        return None
    return when if when.tzinfo else when.replace(tzinfo=dt.UTC)


def usage_of(response) -> dict:
    """The response's usage; an answer cached before usage was recorded keeps its input and output counts."""
    if isinstance(response.usage, dict) and response.usage:
        return response.usage
    return {"input": response.input_tokens, "output": response.output_tokens}


def request_row(stage: str, request, response, provider: str, since: dt.datetime, run_mode: str) -> dict:
    """One answered request: its usage, its price and whether this run paid it."""
    usage = usage_of(response)
    mode = usage.get("mode") or run_mode
    answered = _when(usage.get("answered_at"))
    cached = answered is None or answered < since
    priced = prices.cost(request.model, usage, mode, answered, provider=response.provider or provider)
    row = {"stage": stage, "model": request.model, "provider": response.provider or provider, "mode": mode,
           "cached": cached, "price_row": priced.row, "requests": 1,
           "usd": 0.0 if cached else priced.usd, "usd_when_answered": priced.usd,
           "unknown": int(priced.usd is None or bool(priced.unknown)), "unknown_fields": ";".join(priced.unknown)}
    plausible = "usage" not in priced.unknown  # implausible counts are not summed either (prices.implausible)
    for c in TOKEN_COLUMNS:
        row[f"{c}_tokens"] = usage.get(c) if plausible else None
    return row


def gpu_row(stage: str, models: list[str], provider: str, job_id: str, seconds: float, gpus: int) -> dict:
    """A run on your own GPUs (vllm, local) as one ledger row: the SLURM job's elapsed time x its GPUs at the
    price table's ``gpu_hour_usd`` of the provider (0 unless set; a stand-in such as the mock takes the rate of
    the models' own provider, as it takes their token prices)."""
    from gavel.core import config

    rates = prices.table().gpu_hour_usd
    own = {m.provider for m in config.models() + config.local_models() if m.release_name in models}
    rate = rates.get(provider, next((rates[p] for p in sorted(own) if p in rates), 0.0))
    hours = None if seconds is None else seconds / 3600 * gpus
    usd = None if hours is None else hours * rate
    took = "elapsed time unknown (sacct did not answer)" if seconds is None else f"{seconds:.0f} s x {gpus} GPU(s)"
    return {"stage": stage, "model": ";".join(sorted(models)), "provider": provider, "mode": "gpu-time",
            "cached": False, "price_row": f"gpu_hour_usd[{provider}] = ${rate:g}; SLURM job {job_id}: {took}",
            "requests": 0, **{f"{c}_tokens": None for c in TOKEN_COLUMNS}, "gpu_hours": hours, "usd": usd,
            "usd_when_answered": usd, "unknown": int(usd is None), "unknown_fields": "" if usd is not None else "gpu_hours"}


def table(rows: list[dict]):
    """cost.csv's table from request rows: one line per (stage, model, provider, mode, cached, price row). A token
    sum counts the requests that reported the class; ``unknown`` counts requests whose price needed a class the
    provider did not report (their classes in ``unknown_fields``); ``usd`` sums the known costs."""
    import pandas as pd

    if not rows:
        return pd.DataFrame(columns=COLUMNS)
    frame = pd.DataFrame(rows)
    out = []
    for key, g in frame.groupby(GROUP, sort=True, dropna=False):
        rec = dict(zip(GROUP, key))
        rec["requests"] = len(g)
        for c in TOKEN_COLUMNS:
            known = g[f"{c}_tokens"].dropna()
            rec[f"{c}_tokens"] = int(known.sum()) if len(known) else None
        hours = g["gpu_hours"].dropna() if "gpu_hours" in g else ()
        rec["gpu_hours"] = float(sum(hours)) if len(hours) else None
        for c in ("usd", "usd_when_answered"):  # empty, not 0, when no request of the line could be priced
            known = g[c].dropna()
            rec[c] = float(known.sum()) if len(known) else None
        rec["unknown"] = int(g["unknown"].sum())
        fields = sorted({f for v in g["unknown_fields"] for f in str(v).split(";") if f})
        rec["unknown_fields"] = ";".join(fields)
        out.append(rec)
    return pd.DataFrame(out, columns=COLUMNS)


def combine(tables) -> object:
    """Ledgers of parts of one run (the shards of ``gavel merge``) as the run's one ledger: their lines summed
    per (stage, model, provider, mode, cached, price row), as ``table`` sums requests (a sum empty where every
    part's is); stages in the order the parts list them (a run's ledger is its stages' in turn), each stage's
    lines sorted as ``table`` sorts them."""
    import pandas as pd

    frames = [t for t in tables if t is not None and len(t)]
    if not frames:
        return pd.DataFrame(columns=COLUMNS)
    frame = pd.concat(frames, ignore_index=True)
    order = {stage: i for i, stage in reversed(list(enumerate(frame["stage"])))}
    out = []
    for key, g in frame.groupby(GROUP, sort=True, dropna=False):
        rec = dict(zip(GROUP, key))
        rec["requests"] = int(g["requests"].sum())
        for c in [f"{c}_tokens" for c in TOKEN_COLUMNS]:
            known = g[c].dropna()
            rec[c] = int(known.sum()) if len(known) else None
        for c in ("gpu_hours", "usd", "usd_when_answered"):
            known = g[c].dropna()
            rec[c] = float(known.sum()) if len(known) else None
        rec["unknown"] = int(g["unknown"].sum())
        rec["unknown_fields"] = ";".join(sorted({f for v in g["unknown_fields"].dropna() for f in str(v).split(";")
                                                 if f}))
        out.append(rec)
    out.sort(key=lambda rec: order[rec["stage"]])  # stable: within a stage, groupby's order
    return pd.DataFrame(out, columns=COLUMNS)


def write(path: str | Path, cost_table) -> Path:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp")
    write_csv(cost_table, tmp)
    tmp.replace(path)
    return path


def totals(cost_table) -> dict:
    """New spending of a cost table: usd, requests paid, cached, unknown."""
    if cost_table is None or not len(cost_table):
        return {"usd": 0.0, "sent": 0, "cached": 0, "unknown": 0}
    cached = cost_table["cached"].astype(bool)
    return {"usd": float(cost_table["usd"].sum()), "sent": int(cost_table.loc[~cached, "requests"].sum()),
            "cached": int(cost_table.loc[cached, "requests"].sum()), "unknown": int(cost_table.loc[~cached, "unknown"].sum())}


def closing_line(cost_table, where: str | Path | None = None, estimate: float | None = None) -> str:
    """One line: what the run spent, what came from the cache, what could not be priced, and the dry run's
    estimate beside it (with their ratio) when there was one."""
    t = totals(cost_table)
    line = (f"cost: ${t['usd']:.4f} for {t['sent']} answered request(s) paid by this run; {t['cached']} from the "
            f"cache ($0 new)")
    if t["unknown"]:
        line += f"; {t['unknown']} without the usage their price needs (not in the total: see unknown_fields)"
    if isinstance(estimate, tuple):  # a range: compare and residual from none to all of their requests
        low, high = estimate
        where_in = "below" if t["usd"] < low else "above" if t["usd"] > high else "within"
        line += (f"; dry-run estimate ${low:.4f} to ${high:.4f}, the actual {where_in} it (actual/estimate "
                 f"{t['usd'] / high if high else math.nan:.2f} of the high end)")
    elif estimate is not None:
        ratio = t["usd"] / estimate if estimate else math.nan
        line += f"; dry-run estimate ${estimate:.4f} (actual/estimate {ratio:.2f})"
    if where:
        line += f"; ledger {where}"
    return line


def read(folders) -> object:
    """The cost.csv tables of ``folders`` (runner workdirs) in one; folders without one are left out."""
    import pandas as pd

    tables = [read_csv(Path(f) / "cost.csv") for f in folders if (Path(f) / "cost.csv").exists()]
    return pd.concat(tables, ignore_index=True) if tables else table([])
