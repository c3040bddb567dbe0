"""How often the local model's answers are unusable, per stage, before and after a change: the release's
GPT-4.1 summaries of its shortest benchmark cases against their references, on the local model
(``gavel evaluate --provider local``), every item unless ``--items`` names fewer.

    GAVEL_RELEASE=/path/to/gavel-release .venv/bin/python benchmarks/local_unusable.py [--cases 1] [--items N]
        [--before REV] [--gguf FILE] [--shards K] [--jobs J] [--folder DIR | --keep]

Per stage it prints the requests, the answers that were unusable on the first ask (truncated, no JSON,
against the schema, ...) and those still unusable after the re-asks, as rates, and how many scored rows have
each score as a number; then, per side, how many extracted values echo the prompt's own text (as this tree's
reader tells them) and how many pairs the ``identical`` gate scored 1 on echoes alone. ``--before REV`` runs the same on the committed tree ``REV`` (``git archive`` into a
temporary folder) and prints both tables. The cases are dealt into ``--shards`` runs per side (each its own
folder and llama.cpp server, on half the CPUs); ``--jobs`` of them run at once (default 2: the CPUs are
used, and no server's threads wait for another's). ``--folder`` keeps every run's cache, so a stopped
measurement goes on where it stopped. The issue-39 measurement (20 cases, every item, before = bfdd558):

    benchmarks/local_unusable.py --cases 20 --before bfdd558 --shards 4 --folder /somewhere/kept

The issue-45 measurement (echoes of the prompt; the base model Gemma 3 270M, and the packaged SmolLM2):

    benchmarks/local_unusable.py --cases 1 --items 6 --before 306ab37 --gguf gemma-3-270m-q4_k_m.gguf
    benchmarks/local_unusable.py --cases 1 --items 6 --before 306ab37

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


def start(tree: Path, out: Path, jsonl: Path, items: list[str] | None, gguf: str | None) -> subprocess.Popen:
    """Start one ``gavel evaluate`` into ``out`` (its output into ``out``.log)."""
    cmd = [sys.executable, "-m", "gavel", "evaluate", "--summaries", str(jsonl), "--provider", "local",
           "--out", str(out)]
    if items:
        cmd += ["--items", *items]
    if gguf:
        cmd += ["--gguf", gguf]
    env = {**os.environ, "PYTHONPATH": str(tree)}
    print(f"[{out.name}] load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs: gavel {' '.join(cmd[3:])}",
          flush=True)
    with open(out.with_suffix(".log"), "w", encoding="utf-8") as log:
        return subprocess.Popen(cmd, cwd=tree, stdout=log, stderr=subprocess.STDOUT, text=True, env=env)


def finish(proc: subprocess.Popen, out: Path, t0: float):
    """Wait for one run; (its rates, its scores table or None)."""
    code = proc.wait()
    if code not in (0, 1) or not (out / "answers.csv").exists():
        tail = out.with_suffix(".log").read_text(encoding="utf-8", errors="replace")[-3000:]
        raise SystemExit(f"[{out.name}] the run failed (exit status {code}):\n{tail}")
    print(f"[{out.name}] {time.perf_counter() - t0:.0f} s, load average {os.getloadavg()[0]:.1f}", flush=True)
    scores = None
    if (out / "scores.csv").exists():
        import pandas as pd

        scores = pd.read_csv(out / "scores.csv")
    return rates(out / "answers.csv"), scores


def run_all(jobs: list[tuple[str, Path, Path, Path]], items, gguf, width: int) -> dict:
    """Run every (side, tree, out, summaries) job, at most ``width`` at once; per side its summed rates and
    its scores."""
    queue, running, done = list(jobs), [], {}
    while queue or running:
        while queue and len(running) < width:
            side, tree, out, jsonl = queue.pop(0)
            running.append((side, out, start(tree, out, jsonl, items, gguf), time.perf_counter()))
        finished = next((r for r in running if r[2].poll() is not None), None)
        if finished is None:
            time.sleep(2)
            continue
        running.remove(finished)
        side, out, proc, t0 = finished
        r, scores = finish(proc, out, t0)
        total, frames, outs = done.setdefault(side, ({}, [], []))
        for stage, counts in r.items():
            total[stage] = tuple(x + y for x, y in zip(total.get(stage, (0, 0, 0, 0)), counts))
        if scores is not None:
            frames.append(scores)
        outs.append(out)
    return done


def scored(label: str, frames: list) -> None:
    """How many of the run's (subject, case) rows have each score as a number."""
    if not frames:
        print(f"{label}: no scores.csv")
        return
    import pandas as pd

    s = pd.concat(frames, ignore_index=True)
    cols = [c for c in ("s_checklist", "s_residual", "s_style", "s_gavel_ref") if c in s.columns]
    print(f"{label}: of {len(s)} scored rows, a number in " +
          ", ".join(f"{c} {int(s[c].notna().sum())} (mean {s[c].mean():.1f})" for c in cols))


def echoes(label: str, outs: list[Path]) -> None:
    """How many extracted values echo the prompt's own text (told by this tree's reader, whichever tree wrote
    them), and how many pairs the ``identical`` gate scored, with how many of those were echoes on both sides
    (an S_checklist that comes from echoes, not from extraction)."""
    import pandas as pd

    from gavel.answers import placeholder_why

    values, compared = [], []
    for out in outs:
        for name, frames in (("values.csv", values), ("compare.csv", compared)):
            try:
                frames.append(pd.read_csv(out / name, keep_default_na=False))
            except pd.errors.EmptyDataError:  # no row at all (every value dropped): no columns either
                pass
    v = pd.concat(values, ignore_index=True) if values else pd.DataFrame(columns=["subject", "case_id", "item",
                                                                                  "value"])
    v["echo"] = [placeholder_why(str(x), "extract") is not None for x in v["value"]]
    all_echo = v.groupby(["subject", "case_id", "item"])["echo"].all()
    c = pd.concat(compared, ignore_index=True) if compared else pd.DataFrame(columns=["subject", "case_id", "item",
                                                                                    "gate"])
    same = c[c["gate"] == "identical"]
    from_echo = sum(bool(all_echo.get((r.subject, r.case_id, r.item), False)) for r in same.itertuples())
    print(f"{label}: {len(v)} values, {int(v['echo'].sum())} echo the prompt; {len(c)} pairs, "
          f"{len(same)} scored 1 by the identical gate, {from_echo} of them echoes")


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
    ap.add_argument("--shards", type=int, default=1,
                    help="split the cases into this many runs per side (each its own folder and server)")
    ap.add_argument("--jobs", type=int, default=max(1, (os.cpu_count() or 1) // max(1, (os.cpu_count() or 1) // 2)),
                    help="runs at once (default: as many as fit, each server taking half the CPUs)")
    ap.add_argument("--sequential", action="store_true", help="one run at a time (--jobs 1)")
    ap.add_argument("--only", choices=("before", "after"), default=None,
                    help="run one side only (its cache fills; a later run with both answers from it)")
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
    sides = []  # (label, tree)
    if args.before and args.only != "after":
        tree = folder / "before-tree"
        shutil.rmtree(tree, ignore_errors=True)
        tree.mkdir()
        archive = subprocess.run(["git", "archive", args.before], cwd=REPO, capture_output=True, check=True).stdout
        subprocess.run(["tar", "-x", "-C", str(tree)], input=archive, check=True)
        sides.append((f"before ({args.before})", tree))
    elif args.only == "before":
        raise SystemExit("--only before needs --before REV")
    if args.only != "before":
        sides.append(("after (this tree)", REPO))
    lines = jsonl.read_text(encoding="utf-8").splitlines(keepends=True)
    shards = max(1, min(args.shards, len(lines)))
    parts = []
    for i in range(shards):
        part = folder / f"summaries-{i + 1}of{shards}.jsonl"
        part.write_text("".join(lines[i::shards]), encoding="utf-8")
        parts.append(part)
    jobs = [(title, tree, folder / f"{title.split()[0]}-{i + 1}of{shards}", part)
            for i, part in enumerate(parts) for title, tree in sides]
    width = 1 if args.sequential else args.jobs
    results = run_all(jobs, items, args.gguf, width)
    print(f"{args.cases} case(s) x {len(items) if items else len(ITEMS)} item(s), GPT-4.1 summaries against the "
          f"references, local model {args.gguf or '(packaged)'}; {len(jobs)} runs, {width} at a time")
    for title, _ in sides:
        table(title, results[title][0])
    for title, _ in sides:
        scored(title, results[title][1])
    for title, _ in sides:
        echoes(title, results[title][2])
    if args.keep or args.folder:
        print(f"kept {folder}")
    else:
        shutil.rmtree(folder, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
