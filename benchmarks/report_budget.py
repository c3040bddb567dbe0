"""Budgets of `gavel report` (issue 31), measured and printed as ratios to the budget (below 1 is within it):

1. the release report (the paper's 12 models, 100 cases, every cell, summary and located evidence): file size
   against 25 MB, and the time from opening it in Chromium (from disk, network refused) until it is
   interactive (the page's script has drawn the cell list and a click on a heatmap cell has drawn that
   cell's list) against 3 s, opened five times, each in a fresh browser context: the best opening (the
   page's own cost) and the median are printed with the machine's load average, since other processes on a
   shared machine stretch the wall time;
2. the report of a 100-summary run: 100 real summaries of one model from the release with their 100 human
   references, all 26 items, every stage run by the pipeline with the stand-in model (mock provider): file
   size against 5 MB. The stand-in's answers are shorter than a real judge's; the share of the file that raw
   answers take is printed so a real run's size can be judged.

    GAVEL_RELEASE=/path/to/gavel-release .venv/bin/python benchmarks/report_budget.py [--model gemini-2.5-pro]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from gavel.release import load_release  # noqa: E402
from gavel.report import page as report  # noqa: E402

RELEASE_MB, RUN_MB, INTERACTIVE_S = 25.0, 5.0, 3.0


def open_in_chromium(path: Path, times: int = 3) -> list[float]:
    """Seconds from navigation until the page is interactive (see the module), for each of ``times`` openings
    in a fresh browser context; network refused."""
    from playwright.sync_api import sync_playwright

    chromium = os.environ.get("GAVEL_CHROMIUM", "/usr/bin/chromium")
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=chromium, headless=True,
                                    args=["--no-sandbox", "--disable-gpu", "--disable-background-networking"])
        seconds = []
        for _ in range(times):
            ctx = browser.new_context()
            ctx.route("**/*", lambda r: r.continue_() if r.request.url.startswith(("file:", "data:")) else r.abort())
            page = ctx.new_page()
            start = time.perf_counter()
            page.goto(path.as_uri(), wait_until="commit", timeout=120_000)
            page.wait_for_selector('body[data-ready="1"]', state="attached", timeout=120_000)
            page.click("#heatmap tbody tr:first-child td a")
            page.wait_for_function("location.hash.includes('item=') && document.querySelector('#cell-count')")
            seconds.append(time.perf_counter() - start)
            ctx.close()
        browser.close()
    return seconds


def run_of_100(rel, model: str, folder: Path) -> Path:
    from gavel.runs import pipeline

    s = rel.summaries[rel.summaries["set"] == "benchmark"]
    mine = s[s["model"] == model].drop_duplicates("case_id").head(100)
    refs, _ = pipeline.release_references(rel)
    summaries = [(model, r.case_id, r.text) for r in mine.itertuples()]
    roles = pipeline.default_roles()
    settings = pipeline.Settings(extractor=roles["extractor"], judge=roles["judge"])
    pipeline.evaluate(summaries, {c: refs[c] for _, c, _ in summaries}, pipeline.provider("mock"), folder, settings)
    return folder


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--model", default="gemini-2.5-pro", help="whose 100 summaries make the run")
    ap.add_argument("--openings", type=int, default=5, help="times the release report is opened (best and median)")
    args = ap.parse_args()
    t0 = time.perf_counter()
    rel = load_release()
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        t1 = time.perf_counter()
        data = report.release_data(rel)
        path = report.write(data, tmp / "release.html")
        built = time.perf_counter() - t1
        mb = path.stat().st_size / 1e6
        load = os.getloadavg()[0]
        times = open_in_chromium(path, args.openings)
        best, median = min(times), statistics.median(times)
        print(f"release report: {len(data['subjects'])} models, {len(data['cells'])} cells, {mb:.1f} MB "
              f"(ratio to {RELEASE_MB:.0f} MB: {mb / RELEASE_MB:.2f}); built in {built:.0f} s (release loaded in "
              f"{t1 - t0:.0f} s)")
        print(f"interactive in Chromium after {', '.join(f'{t:.2f}' for t in times)} s (load average {load:.1f} on "
              f"{os.cpu_count()} cores): best {best:.2f} s (ratio to {INTERACTIVE_S:.0f} s: {best / INTERACTIVE_S:.2f}), "
              f"median {median:.2f} s (ratio {median / INTERACTIVE_S:.2f})")
        t2 = time.perf_counter()
        run = run_of_100(rel, args.model, tmp / "run")
        data = report.run_data(run)
        path = report.write(data, tmp / "run.html")
        mb = path.stat().st_size / 1e6
        raw = len(json.dumps(data["raw"], ensure_ascii=False).encode()) / 1e6
        texts = len(json.dumps(data["texts"], ensure_ascii=False).encode()) / 1e6
        print(f"100-summary run ({args.model}, stand-in model, {len(data['cells'])} cells, evaluated in "
              f"{time.perf_counter() - t2:.0f} s): {mb:.2f} MB (ratio to {RUN_MB:.0f} MB: {mb / RUN_MB:.2f}); of it "
              f"texts {texts:.2f} MB, raw answers {raw:.2f} MB ({len(data['raw'])} distinct)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
