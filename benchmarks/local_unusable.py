"""How often the local model's answers are unusable, per stage, before and after a change: the release's
GPT-4.1 summaries of its shortest benchmark cases against their references, on the local model
(``gavel evaluate --provider local``), every item unless ``--items`` names fewer.

    GAVEL_RELEASE=/path/to/gavel-release .venv/bin/python benchmarks/local_unusable.py [--cases 1] [--items N]
        [--before REV] [--gguf FILE] [--keep]

Per stage it prints the requests, the answers that were unusable on the first ask (truncated, no JSON,
against the schema, ...) and those still unusable after the re-asks, as rates. ``--before REV`` runs the
same on the committed tree ``REV`` (``git archive`` into a temporary folder) first and prints both tables.
The machine's load average is printed: on shared cores the speed moves with it.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))  # the benchmarks' own helpers
from first_run import own_summaries  # noqa: E402

REPO = Path(__file__).resolve().parent.parent
USABLE = ("ok", "gated", "no_values")


def rates(answers_csv: Path) -> dict[str, tuple[int, int, int, int]]:
    """{stage: (requests, unusable on the first ask, unusable in the end, answers sent)}."""
    import pandas as pd

    a = pd.read_csv(answers_csv)
    out = {}
    for stage, g in a.groupby("stage", sort=False):
        first = g[g["round"] == 0]
        last = g.sort_values("round").groupby(["subject", "case_id", "item"], dropna=False).tail(1)
        out[stage] = (len(first), int((~first["status"].isin(USABLE)).sum()),
                      int((~last["status"].isin(USABLE)).sum()), len(g))
    return out


def run(tree: Path, folder: Path, jsonl: Path, items: list[str] | None, gguf: str | None, label: str) -> dict:
    cmd = [sys.executable, "-m", "gavel", "evaluate", "--summaries", str(jsonl), "--provider", "local",
           "--out", str(folder / label)]
    if items:
        cmd += ["--items", *items]
    if gguf:
        cmd += ["--gguf", gguf]
    env = {**os.environ, "PYTHONPATH": str(tree)}
    print(f"[{label}] load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs: gavel {' '.join(cmd[3:])}",
          flush=True)
    t0 = time.perf_counter()
    done = subprocess.run(cmd, cwd=tree, capture_output=True, text=True, env=env)
    took = time.perf_counter() - t0
    if done.returncode not in (0, 1) or not (folder / label / "answers.csv").exists():
        raise SystemExit(f"[{label}] the run failed (exit status {done.returncode}):\n"
                         f"{(done.stdout + done.stderr)[-3000:]}")
    scores = folder / label / "scores.csv"
    if scores.exists():
        import pandas as pd

        cols = ["subject", "case_id", "s_checklist", "s_residual", "s_style", "s_gavel_ref"]
        s = pd.read_csv(scores)
        print(s[[c for c in cols if c in s.columns]].to_string(index=False))
    print(f"[{label}] {took:.0f} s, load average {os.getloadavg()[0]:.1f}", flush=True)
    return rates(folder / label / "answers.csv")


def table(label: str, r: dict) -> None:
    print(f"{label}: {'stage':<15} {'requests':>8} {'unusable 1st ask':>17} {'unusable at end':>16} {'answers':>8}")
    for stage, (n, first, last, sent) in r.items():
        print(f"{'':<{len(label)}}  {stage:<15} {n:>8} {first:>7} ({first / max(n, 1):>5.0%}) "
              f"{last:>7} ({last / max(n, 1):>5.0%}) {sent:>8}")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cases", type=int, default=1)
    ap.add_argument("--items", type=int, default=None, help="the first N items of the checklist (default: all)")
    ap.add_argument("--before", default=None, help="a git revision to measure first (e.g. main)")
    ap.add_argument("--gguf", default=None, help="another GGUF file to serve (default: the packaged model)")
    ap.add_argument("--keep", action="store_true", help="keep the temporary folder and print its path")
    ap.add_argument("--folder", default=None, help="work in this folder (kept; a rerun answers from its cache)")
    args = ap.parse_args()
    sys.path.insert(0, str(REPO))
    from gavel.core import config
    from gavel.core.items import ITEMS

    folder = Path(args.folder) if args.folder else Path(tempfile.mkdtemp(prefix="gavel-unusable-"))
    folder.mkdir(parents=True, exist_ok=True)
    jsonl = own_summaries(config.release_root(), folder, args.cases, "gpt-4.1", "summaries.jsonl")
    items = [it.name for it in ITEMS[:args.items]] if args.items else None
    results = {}
    if args.before:
        tree = folder / "before-tree"
        shutil.rmtree(tree, ignore_errors=True)
        tree.mkdir()
        archive = subprocess.run(["git", "archive", args.before], cwd=REPO, capture_output=True, check=True).stdout
        subprocess.run(["tar", "-x", "-C", str(tree)], input=archive, check=True)
        results[f"before ({args.before})"] = run(tree, folder, jsonl, items, args.gguf, "before")
    results["after (this tree)"] = run(REPO, folder, jsonl, items, args.gguf, "after")
    print(f"{args.cases} case(s) x {len(items) if items else len(ITEMS)} item(s), GPT-4.1 summaries against the "
          f"references, local model {args.gguf or '(packaged)'}")
    for label, r in results.items():
        table(label, r)
    if args.keep or args.folder:
        print(f"kept {folder}")
    else:
        shutil.rmtree(folder, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
