"""A gavel run exported as inspect logs opens in inspect's own viewer: ``inspect view bundle`` turns the logs
into a static site, served here on 127.0.0.1 and rendered in headless Chromium; the page lists every case
with its S_GAVEL-REF and the score's keys."""

from __future__ import annotations

import functools
import http.server
import subprocess
import sys
import threading

import pandas as pd
from needs import need_module

need_module("inspect_ai", "the inspect extra (pip install '.[inspect]') bundles the viewer under test")
need_module("playwright", "browser tests need the playwright package (annotation extra)")

from test_inspect import CASES, ITEMS, cli_run  # noqa: E402

from gavel.cli import main  # noqa: E402


def test_the_exported_log_opens_in_inspect_view(tmp_path, browser):
    run = cli_run(tmp_path)
    assert main(["export", "inspect", str(run), "--out", str(tmp_path / "logs")]) == 0
    site = tmp_path / "site"
    subprocess.run([sys.executable, "-m", "inspect_ai", "view", "bundle", "--log-dir", str(tmp_path / "logs"),
                    "--output-dir", str(site)], check=True, timeout=300, capture_output=True)
    assert (site / "index.html").exists() and list((site / "logs").glob("*.eval"))
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(site))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    page = browser.new_page()
    try:
        page.goto(f"http://127.0.0.1:{server.server_address[1]}/")
        page.wait_for_selector(f"text={len(CASES)} Samples", timeout=120_000)
        body = page.inner_text("body")
    finally:
        page.close()
        server.shutdown()
        server.server_close()
    scores = pd.read_csv(run / "scores.csv", dtype={"case_id": str})
    for header in ("S_GAVEL_REF", "S_CHECKLIST", *(k.upper() for k in ITEMS)):
        assert header in body, header
    for row in scores.to_dict("records"):
        assert f"case {row['case_id']}" in body
        assert f"{row['s_gavel_ref']:.2f}" in body  # the score's answer: S_GAVEL-REF
