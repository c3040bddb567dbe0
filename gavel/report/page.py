"""One self-contained HTML file that shows a GAVEL-REF run, the release, or what changed between two runs
(``gavel report``; docs/report.md).

    from gavel.report import page as report
    report.write(report.run_data("data/interim/ref_demo"), "report.html")
    report.write(report.run_data("runs/new"), "diff.html", against=report.run_data("runs/old"))
    report.write(report.release_data(), "release.html")
    report.inline(report.release_data(rel, models=["gemini-2.5-pro"]), view={"view": "cells", "item": "judge_name"})

The page is one file: its CSS, JavaScript and data are inline, nothing is fetched (a Content-Security-Policy
meta tag forbids every network request and allows only the page's own script and style, by their hashes, so
no ``eval`` and no handler written into the markup can run). The leaderboard and the heatmap are rendered
here by Jinja2, so they are readable with JavaScript off; the script adds filters, cell and summary views and
the diff from the data, which it reads as JSON and only ever sets as text. The URL fragment holds the view.
"""

from __future__ import annotations

import base64
import hashlib
import html
import json
from functools import lru_cache
from importlib import resources
from pathlib import Path

from gavel.report.diff import diff
from gavel.report.release import release_data as _release_data
from gavel.report.run import SCORES, ReportInputError, heat_class, key, run_data

__all__ = ["ReportInputError", "diff", "inline", "release_data", "render", "run_data", "write"]

#: what only the cell, summary and baseline views need: a second JSON block, parsed when such a view first opens
#: (the page is interactive before the texts are parsed)
DETAIL = ("texts", "values", "answers", "raw", "residual", "residual_match", "style", "summaries", "against")
SCORE_LABELS = {"s_checklist": "S_checklist", "s_residual": "S_residual", "s_style": "S_style",
                "s_gavel_ref": "S_GAVEL-REF"}


def release_data(rel=None, models: list[str] | None = None, items: list[str] | None = None) -> dict:
    """The release report's data (``gavel.report.release``), optionally only some models and items (notebook 07
    shows one model's cells inline)."""
    data = _release_data(rel)
    if models or items:
        data = subset(data, models, items)
    return data


def subset(data: dict, models: list[str] | None = None, items: list[str] | None = None) -> dict:
    """The same report data restricted to some models and items (texts and values of the rest left out)."""
    from gavel.core.items import item as item_named

    keep_m = set(models) if models else set(data["subjects"])
    keep_i = {item_named(i).key for i in items} if items else {k for k, _ in data["items"]}
    unknown = keep_m - set(data["subjects"])
    if unknown:
        raise ValueError(f"no cells of {sorted(unknown)} in this report; models: {data['subjects']}")
    cells = [c for c in data["cells"] if c[0] in keep_m and c[2] in keep_i]
    cases = {c[1] for c in cells}
    out = dict(data)
    out.update(subjects=[s for s in data["subjects"] if s in keep_m], cells=cells,
               items=[it for it in data["items"] if it[0] in keep_i],
               board=[b for b in data["board"] if b["subject"] in keep_m],
               heat={k: v for k, v in data["heat"].items() if k.split("|")[0] in keep_m and k.split("|")[1] in keep_i},
               values={k: v for k, v in data["values"].items()
                       if k.split("|")[0] in keep_m | {"human"} and k.split("|")[2] in keep_i},
               texts={k: v for k, v in data["texts"].items()
                      if k.split("|")[0] in keep_m | {"human"} and k.split("|")[1] in cases},
               summaries={k: v for k, v in data["summaries"].items() if k.split("|")[0] in keep_m})
    return out


# ---------- rendering ----------
@lru_cache(maxsize=1)
def _environment():
    import jinja2

    return jinja2.Environment(loader=jinja2.PackageLoader("gavel.report", "templates"),
                              autoescape=True, undefined=jinja2.StrictUndefined, trim_blocks=True,
                              lstrip_blocks=True)


def _asset(name: str) -> str:
    return resources.files("gavel.report").joinpath("templates", name).read_text(encoding="utf-8")


def _csp_hash(text: str) -> str:
    return "'sha256-" + base64.b64encode(hashlib.sha256(text.encode("utf-8")).digest()).decode() + "'"


def content_security_policy(script: str, style: str) -> str:
    """Nothing from the network, no plug-ins, no forms, no base URL; only this page's script and style (by
    hash) run, images only as data: URLs."""
    return (f"default-src 'none'; script-src {_csp_hash(script)}; style-src {_csp_hash(style)}; img-src data:; "
            "connect-src 'none'; font-src 'none'; object-src 'none'; media-src 'none'; frame-src 'none'; "
            "worker-src 'none'; manifest-src 'none'; base-uri 'none'; form-action 'none'")


def data_json(data: dict) -> str:
    """The data as JSON that cannot end the <script> element holding it (``<``, ``>``, ``&`` escaped)."""
    text = json.dumps(data, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


def _fmt(x, digits: int = 1) -> str:
    return "–" if x is None else f"{x:.{digits}f}"


def _board_rows(data: dict) -> list[dict]:
    rows = []
    for n, b in enumerate(data["board"], 1):
        cols = []
        for s in SCORES:
            mean, lo, hi, count = b[s]
            text = _fmt(mean)
            if s == "s_checklist" and b.get("s_checklist_bounds"):
                lo_b, hi_b = b["s_checklist_bounds"]
                text += f" (bounds {_fmt(lo_b)}–{_fmt(hi_b)})"
            cols.append({"text": text, "interval": f"{_fmt(lo)}–{_fmt(hi)}" if lo is not None else "", "n": count})
        rows.append({"rank": n, "subject": b["subject"], "label": b["label"], "cases": b["cases"], "scores": cols,
                     "link": fragment({"view": "cells", "subject": b["subject"]}),
                     "compared": _compared(b.get("compared"))})
    return rows


def _compared(verdicts: dict | None) -> list[str]:
    """The leaderboard's "which differences are real" lines of one model (comparisons.csv; plain text, the
    template escapes it)."""
    if not verdicts:
        return []
    said = (("better than", "better_than"), ("worse than", "worse_than"),
            ("better on the best estimates only (not under every reconstruction choice) than", "better_best_only"),
            ("worse on the best estimates only (not under every reconstruction choice) than", "worse_best_only"),
            ("indistinguishable from", "indistinguishable_from"))
    return [f"{words}: {', '.join(verdicts[k])}" for words, k in said if verdicts.get(k)]


def _heat_rows(data: dict) -> list[dict]:
    rows = []
    for item, name in data["items"]:
        cols = []
        for s in data["subjects"]:
            h = data["heat"].get(key(s, item))
            if h is None:
                cols.append({"cls": "qn", "text": "", "title": "no cell", "link": ""})
                continue
            title = f"{data['labels'].get(s, s)} · {name}: {h['applicable']} applicable of {h['cells']} cells"
            if h["unusable"]:
                title += f", {h['unusable']} unusable"
            text = _fmt(h["score"], 2) + ("*" if h["unusable"] else "")
            cols.append({"cls": heat_class(h["score"]), "text": text, "title": title,
                         "link": fragment({"view": "cells", "subject": s, "item": item})})
        rows.append({"item": item, "name": name, "cols": cols})
    return rows


def fragment(state: dict) -> str:
    """The URL fragment of a view (what the page's script reads back)."""
    from urllib.parse import urlencode

    return "#" + urlencode({k: v for k, v in state.items() if v not in (None, "")})


def render(data: dict, against: dict | None = None, start: dict | None = None) -> str:
    """The report's HTML: ``data`` of a run or the release; ``against``: the baseline run for a diff;
    ``start``: the view shown when the address has no fragment (notebook 07's inline view)."""
    data = dict(data)
    if against is not None:
        data["against"] = against
        data["diff"] = diff(data, against)
    if start:
        data["start"] = fragment(start)
    script, style = _asset("report.js"), _asset("report.css")
    core = {k: v for k, v in data.items() if k not in DETAIL}
    detail = {k: v for k, v in data.items() if k in DETAIL}
    return _environment().get_template("report.html.j2").render(
        data=data, data_json=data_json(core), detail_json=data_json(detail), script=script, style=style,
        csp=content_security_policy(script, style), board=_board_rows(data), heat=_heat_rows(data),
        score_labels=[SCORE_LABELS[s] for s in SCORES], diff=data.get("diff"),
        compared=SCORE_LABELS.get(data.get("compared") or "", ""),
        levels=next((b.get("interval_levels") for b in data["board"] if b.get("interval_levels")), ""))


def write(data: dict, path: str | Path, against: dict | None = None) -> Path:
    """Render and write the report; returns its path."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(render(data, against), encoding="utf-8")
    return path


def inline(data: dict, view: dict | None = None, height: int = 900):
    """The report shown inside a notebook (an iframe holding the same page, opened at ``view``): notebook 07's
    cells, one renderer for the notebook and the file."""
    import warnings

    from IPython.display import HTML

    page = render(data, start=view)
    with warnings.catch_warnings():  # IPython suggests its IFrame, which takes an address, not a page
        warnings.simplefilter("ignore", UserWarning)
        return HTML(f'<iframe sandbox="allow-scripts" style="width:100%;height:{int(height)}px;border:1px solid #ccc" '
                    f'srcdoc="{html.escape(page, quote=True)}"></iframe>')


def notebook_report(run_folder, against=None):
    """Notebooks 11 and 12: write ``run_folder/report.html`` (a relative folder is read from the repository
    root) and return a link to it for ``display``."""
    import os

    from IPython.display import FileLink

    from gavel.ref.tables import in_repo

    folder = in_repo(run_folder)
    base = run_data(folder)
    path = write(base, folder / "report.html", against=run_data(in_repo(against)) if against else None)
    return FileLink(os.path.relpath(path), result_html_prefix="Report of this run (one file, opens offline): ")
