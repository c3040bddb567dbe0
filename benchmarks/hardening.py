"""Issue 27's measurements, each in a fresh process, for this checkout and (``--before DIR``) another source
tree of gavel, e.g. the commit before the change unpacked with ``git archive 8e0a037 | tar -x -C DIR``:

* ``dry-run``  ``gavel evaluate --dry-run`` of the release's 12 models x 100 cases (1,200 summaries and their
               100 references): wall time and peak memory, first (the release's answer lengths measured) and
               again (kept), against the floor: a fresh process tokenising each distinct text once;
* ``oversize`` ``gavel evaluate`` (mock provider) of one 48 MB summary beside a normal one: peak memory;
* ``search``   the agent's regex search over a corpus of ``--corpus-mb`` MB: the parent's peak memory and the
               time of one search after the first (the worker already holds the texts);
* ``import``   ``import gavel.cli``: time, and whether jsonschema was imported.

    GAVEL_RELEASE=/path/to/gavel .venv/bin/python benchmarks/hardening.py [--before DIR] [--only NAME]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent

# a child that runs its argv and prints its own wall time and its child's peak RSS (MiB)
MEASURE = ("import resource, subprocess, sys, time\nt = time.perf_counter()\n"
           "done = subprocess.run(sys.argv[1:], capture_output=True, text=True)\n"
           "wall = time.perf_counter() - t\n"
           "print(wall, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024, done.returncode)\n"
           "sys.stderr.write(done.stderr[-2000:])\n")

SEARCH = """import sys, time, resource
from gavel.documents.store import AgentStore
from gavel.documents.corpus import Corpus
from gavel.documents.tools import Workspace
mb = float(sys.argv[1])
para = "The court entered a consent decree; the parties agreed to monitoring of the facility. "
docs = max(4, int(mb))
per = int(mb * 2**20 / docs / len(para)) + 1
texts = [para * per for _ in range(docs)]
texts[0] = texts[0] + " needle 2019 "
ws = Workspace(Corpus.build("big", texts, [f"Doc {i}" for i in range(docs)]), AgentStore(["unused"]),
               clock=lambda: None, search_timeout=60)
t0 = time.perf_counter()
ws.call("search_document_regex", {"pattern": "needle"}, 1)
first = time.perf_counter() - t0
t0 = time.perf_counter()
ws.call("search_document_regex", {"pattern": "needle 20[0-9]{2}"}, 2)
second = time.perf_counter() - t0
ws.close()
print(first, second, int(next(l for l in open("/proc/self/status") if l.startswith("VmHWM:")).split()[1]) / 1024)  # VmHWM: its own peak (ru_maxrss starts at the parent's size)
"""

IMPORT = ("import sys, time\nt = time.perf_counter()\nimport gavel.cli\n"
          "print(time.perf_counter() - t, 'jsonschema' in sys.modules)")


def measured(tree: Path, argv: list[str]) -> tuple[float, float, int, str]:
    env = {**os.environ, "PYTHONPATH": str(tree)}
    done = subprocess.run([sys.executable, "-c", MEASURE, *argv], capture_output=True, text=True, env=env,
                          cwd=tree)
    wall, rss, rc = done.stdout.split()
    return float(wall), float(rss), int(rc), done.stderr


def release_inputs(folder: Path) -> tuple[Path, Path]:
    from gavel.release import load_release

    s = load_release().summaries
    s = s[s["set"] == "benchmark"]
    summaries, refs = folder / "summaries.jsonl", folder / "references.json"
    with open(summaries, "w", encoding="utf-8") as fh:
        for m, c, t in s.loc[s["model"] != "human", ["model", "case_id", "text"]].itertuples(index=False):
            fh.write(json.dumps({"model": m, "case_id": c, "summary": t}) + "\n")
    human = s[s["model"] == "human"].drop_duplicates("case_id")
    refs.write_text(json.dumps(dict(zip(human["case_id"], human["text"]))), encoding="utf-8")
    return summaries, refs


# the floor of the dry run: a fresh process that reads the same inputs and tokenises each distinct text once
FLOOR = ("import json, sys\nfrom gavel.core.tokens import encoding\nenc = encoding()\n"
         "texts = {json.loads(line)['summary'] for line in open(sys.argv[1], encoding='utf-8')}\n"
         "texts |= set(json.load(open(sys.argv[2], encoding='utf-8')).values())\n"
         "print(len(texts), sum(len(enc.encode(t, disallowed_special=())) for t in texts))\n")

# forget the release's kept answer lengths (a first dry run on this machine measures them), where kept
FORGET = ("from gavel.core import config\nfrom gavel.runs import costing\n"
          "getattr(costing, 'lengths_path', None) and costing.lengths_path(str(config.release_root())).unlink("
          "missing_ok=True)\n")


def dry_run(tree: Path, folder: Path) -> str:
    s, r = release_inputs(folder)
    env = {**os.environ, "PYTHONPATH": str(tree)}
    subprocess.run([sys.executable, "-c", FORGET], env=env, cwd=tree, check=True)
    runs = []
    for n in range(2):  # the first measures the release's answer lengths, the second finds them kept
        runs.append(measured(tree, [sys.executable, "-m", "gavel", "evaluate", "--summaries", str(s), "--references",
                                    str(r), "--provider", "mock", "--dry-run", "--out",
                                    str(folder / f"out-{tree.name}-{n}")]))
    floor = min((measured(tree, [sys.executable, "-c", FLOOR, str(s), str(r)]) for _ in range(3)), key=lambda m: m[0])
    start = min(measured(tree, [sys.executable, "-c", "import gavel.cli"])[0] for _ in range(3))
    (cold, cold_rss, rc1, _), (warm, warm_rss, rc2, _) = runs
    return (f"dry run, 1,200 summaries x 26 items: first {cold:.1f} s, peak {cold_rss:.0f} MiB; again {warm:.1f} s, "
            f"peak {warm_rss:.0f} MiB (exit {rc1}, {rc2}); floor (tokenise each distinct text once, a fresh "
            f"process): {floor[0]:.2f} s, peak {floor[1]:.0f} MiB; ratio {warm / floor[0]:.1f}x "
            f"(first: {cold / floor[0]:.1f}x); a process importing gavel.cli alone takes {start:.2f} s: "
            f"without it, {(warm - start) / floor[0]:.1f}x")


def oversize(tree: Path, folder: Path) -> str:
    s = folder / "oversize.jsonl"
    with open(s, "w", encoding="utf-8") as fh:
        fh.write(json.dumps({"model": "big", "case_id": "1", "summary": "The court ruled. " * (48 * 2**20 // 17)}) + "\n")
        fh.write(json.dumps({"model": "m", "case_id": "1", "summary": "The court approved a settlement in 2021."}) + "\n")
    r = folder / "refs.json"
    r.write_text(json.dumps({"1": "The parties settled in 2021; the court approved it."}))
    wall, rss, rc, err = measured(tree, [sys.executable, "-m", "gavel", "evaluate", "--summaries", str(s),
                                         "--references", str(r), "--provider", "mock", "--items", "filing_date",
                                         "--out", str(folder / f"over-{tree.name}")])
    said = next((line.strip() for line in err.splitlines() if "big" in line or "line 1" in line), "")
    return f"48 MB summary: {wall:.1f} s, peak {rss:.0f} MiB (exit {rc}); {said[:140]}"


def search(tree: Path, corpus_mb: float) -> str:
    done = subprocess.run([sys.executable, "-c", SEARCH, str(corpus_mb)], capture_output=True, text=True,
                          env={**os.environ, "PYTHONPATH": str(tree)}, cwd=tree)
    if done.returncode:
        return f"search: failed ({done.stderr[-300:]})"
    first, second, rss = (float(x) for x in done.stdout.split())
    return (f"search over {corpus_mb:g} MB: first {first:.1f} s (worker start), next {second:.2f} s; "
            f"parent peak {rss:.0f} MiB")


def imports(tree: Path) -> str:
    times = []
    for _ in range(3):
        done = subprocess.run([sys.executable, "-c", IMPORT], capture_output=True, text=True,
                              env={**os.environ, "PYTHONPATH": str(tree)}, cwd=tree)
        t, js = done.stdout.split()
        times.append(float(t))
    return f"import gavel.cli: {min(times):.2f} s (best of 3), jsonschema imported: {js}"


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--before", default=None, help="another gavel source tree, measured the same way")
    ap.add_argument("--only", default=None, choices=["dry-run", "oversize", "search", "import"])
    ap.add_argument("--corpus-mb", type=float, default=100.0)
    args = ap.parse_args()
    trees = [("this checkout", REPO)] + ([("before", Path(args.before).resolve())] if args.before else [])
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        for name, run in (("import", lambda t: imports(t)), ("dry-run", lambda t: dry_run(t, folder)),
                          ("oversize", lambda t: oversize(t, folder)), ("search", lambda t: search(t, args.corpus_mb))):
            if args.only and args.only != name:
                continue
            for label, tree in trees:
                t0 = time.perf_counter()
                print(f"[{label}] {run(tree)}  ({time.perf_counter() - t0:.0f} s)", flush=True)


if __name__ == "__main__":
    main()
