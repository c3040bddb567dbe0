"""The document methods on the local model, as a user runs them: ``gavel documents end-to-end`` and
``three-pass`` (or any of the four) on one small case of real release text, in a fresh temporary folder;
prints, per command, the duration it predicted before it started, the actual one, and their ratio (target:
within ±50%, a ratio between 0.5 and 1.5).

    GAVEL_RELEASE=/path/to/gavel-release .venv/bin/python benchmarks/documents_run.py
    GAVEL_RELEASE=... .venv/bin/python benchmarks/documents_run.py --methods end-to-end chunked three-pass agent
    GAVEL_RELEASE=... .venv/bin/python benchmarks/documents_run.py --measure --methods end-to-end chunked three-pass agent

The case: the release's summaries of one case (the human one and GPT-4.1's), written as a case folder, two
items, pieces of 400 tokens for the chunked methods (so the merge tree has levels). ``--measure`` runs the
same at a generous output cap (1,024) and prints, per stage, the local model's answer lengths and the caps
they suggest (``stage_max_tokens`` / ``stage_answer_tokens`` of the local model in gavel/core/models.yaml,
by ``benchmarks/first_run.py``'s rule). The machine's load average is printed: on shared cores the speed
moves with it.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(Path(__file__).resolve().parent))
from first_run import lengths_table, predicted_seconds, start, tidy  # noqa: E402  (one rule for predictions and caps)

CASE = "46340"  # one of the cases whose human checklist is in human.json
AUTHORS = ("human", "gpt-4.1-2025-04-14")
ITEMS = ["Filing Date", "Who are the Parties"]
METHODS = ("end-to-end", "chunked", "three-pass", "agent")


def case_folder(release: Path, folder: Path) -> Path:
    from gavel.documents.corpus import Corpus, release_summaries, write_folder

    found = [(a, t) for a, t in release_summaries(release, CASE) if a in AUTHORS]
    corpus = Corpus.build(CASE, [t for _, t in found], [f"Summary by {a}" for a, _ in found])
    return write_folder(corpus, folder / "my_case")


STAGES = {"end-to-end": "doc_end_to_end", "chunked": "doc_chunk", "agent": "agent"}


def answers(out: Path, method: str):
    """Every cached answer of a run's output folder: stage, output tokens, finish reason."""
    import pandas as pd

    rows = []
    for f in sorted(out.rglob("cache/*/*.json")):
        r = json.loads(f.read_text(encoding="utf-8"))
        runner = f.parent.parent.parent.name  # OUT/.../llm[/PASS]/cache/xx/KEY.json
        stage = STAGES.get(method) or f"doc_3pass_{runner}"
        rows.append({"stage": stage, "output_tokens": r.get("output_tokens"), "finish_reason": r.get("finish_reason"),
                     "round": 0})
    return pd.DataFrame(rows, columns=["stage", "output_tokens", "finish_reason", "round"])


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--methods", nargs="+", default=["end-to-end", "three-pass"], choices=METHODS)
    ap.add_argument("--measure", action="store_true", help="answer lengths per stage at a 1,024-token cap")
    ap.add_argument("--max-steps", type=int, default=6, help="the agent's step limit")
    ap.add_argument("--items", nargs="+", default=ITEMS, help="the items of the non-agent methods")
    ap.add_argument("--keep", action="store_true", help="keep the temporary folder and print its path")
    args = ap.parse_args()
    release, folder = start("gavel-documents-run-")
    case = case_folder(release, folder)
    ratios = {}
    for method in args.methods:
        out = folder / "runs" / method
        cmd = [sys.executable, "-m", "gavel", "documents", method, str(case), "--provider", "local",
               "--model", "SmolLM2-135M-Instruct", "--out", str(out)]
        if method == "agent":
            cmd += ["--config", "individual/01_filing_date", "--max-steps", str(args.max_steps)]
        else:
            cmd += ["--items", *args.items]
        if method in ("chunked", "three-pass"):
            cmd += ["--chunk-tokens", "400"]
        if method == "end-to-end":
            cmd += ["--mode", "online"]
        if args.measure:
            cmd += ["--max-tokens", "1024"]
        print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs; {' '.join(cmd[1:])}", flush=True)
        t0 = time.perf_counter()
        said = None  # when the forecast line came: what it forecasts is the time after it
        with subprocess.Popen(cmd, cwd=folder, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
                              env={**os.environ, "GAVEL_RELEASE": str(release)}) as proc:
            lines = []
            for line in proc.stdout:
                lines.append(line)
                if said is None and "(measured now)" in line:
                    said = time.perf_counter()
        end = time.perf_counter()
        actual = end - t0
        output = "".join(lines)
        print(output[-3000:])
        if proc.returncode not in (0, 1) or said is None:
            raise SystemExit(f"{method} failed (exit status {proc.returncode}) or printed no forecast")
        after = end - said
        if method == "agent":  # its forecast: about (every turn like the first), at most (full context)
            predicted = predicted_seconds(output.replace("turns: about", "expected duration"))
        else:
            predicted = predicted_seconds(output)
        ratios[method] = actual / predicted
        print(f"{method}: predicted {predicted:.0f} s; actual {actual:.0f} s for the whole command (start, speed "
              f"measurement and model start included): ratio {actual / predicted:.2f} (target 0.5-1.5); "
              f"{after:.0f} s after the forecast line: ratio {after / predicted:.2f}; load average "
              f"{os.getloadavg()[0]:.1f}", flush=True)
        if args.measure:
            lengths_table(answers(out, method))
    print("ratios actual/predicted: " + ", ".join(f"{m} {r:.2f}" for m, r in ratios.items()))
    return tidy(folder, args.keep)


if __name__ == "__main__":
    sys.exit(main())
