"""Checklist parsing is bounded: CPU seconds and peak memory to read the worst checklist files of at most 1 kB.

Each file is read by ``gavel.core.items.load`` in a child process capped at 2 GB of address space and 30 CPU
seconds; the child prints its CPU time and its peak resident memory above what importing the loader took.
Run it against another checkout to compare (``PYTHONPATH=/path/to/other/checkout python
benchmarks/checklist_parse.py``): a file the loader does not finish within the caps shows as ``over the cap``.

    python benchmarks/checklist_parse.py
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

LIMIT = 1024  # bytes a file may take
CAP_BYTES, CAP_CPU = 2 << 30, 30
WALL = 600  # seconds of wall time for one file (the machine may be busy)

CHILD = r"""
import json, resource, sys, time
from gavel.core import items
# VmHWM: this process's own peak (KiB); ru_maxrss would start at the parent's size (vfork + exec)
def hwm():
    return int(next(l for l in open("/proc/self/status") if l.startswith("VmHWM:")).split()[1])
base = hwm()
resource.setrlimit(resource.RLIMIT_AS, (CAP_BYTES, CAP_BYTES))
resource.setrlimit(resource.RLIMIT_CPU, (CAP_CPU, CAP_CPU))
t = time.process_time()
try:
    items.load(sys.argv[1])
    said = "read"
except items.ChecklistError as err:
    said = "refused: " + str(err).split(": ", 1)[1][:70]
except MemoryError:
    said = "MemoryError"
peak = (hwm() - base) / 1024
print(json.dumps({"cpu_s": time.process_time() - t, "peak_mb": peak, "said": said}))
""".replace("CAP_BYTES", str(CAP_BYTES)).replace("CAP_CPU", str(CAP_CPU))


def _bomb(levels: int, width: int) -> str:
    """Nested aliases in `task` (the issue's reproduction): ``width ** levels`` strings once expanded."""
    names = "abcdefghijklmnopqrstuvwxyz"
    parts = [f"&{names[0]} [" + ",".join(["lol"] * width) + "]"]
    parts += [f"&{names[i]} [" + ",".join([f"*{names[i - 1]}"] * width) + "]" for i in range(1, levels)]
    return "name: bomb\nitems: [{key: a, instruction: b}]\ntask: [" + ", ".join(parts) + "]\n"


def _widest_bomb() -> str:
    """The alias bomb with the most expanded strings that fits in LIMIT bytes."""
    best = ""
    for width in range(2, 40):
        for levels in range(2, 26):
            text = _bomb(levels, width)
            if len(text.encode()) <= LIMIT and (not best or width ** levels > best[0]):
                best = (width ** levels, text)
    return best[1]


def _many_items() -> str:
    text, n = "name: many\nitems:\n", 0
    while True:
        line = f"- {{key: k{n}, instruction: i}}\n"
        if len(text) + len(line) > LIMIT:
            return text
        text, n = text + line, n + 1


def files() -> dict[str, str]:
    head = "name: x\nitems: "
    return {
        "nested aliases in task": _widest_bomb(),
        "brackets nested 500 deep": head + "[" * 500 + "]" * 500 + "\n",
        "an integer of 1000 digits": head + "9" * (LIMIT - len(head) - 1) + "\n",
        "one key repeated": "name: x\nitems:\n- key: a\n" + "  instruction: b\n" * 55,
        "many items (valid)": _many_items(),
        "a packaged checklist (1.9 kB, valid)": (Path(__file__).resolve().parents[1] / "gavel" / "core" / "checklists"
                                                 / "court_outcome.yaml").read_text(encoding="utf-8"),
    }


def main() -> None:
    env = {**os.environ, "OPENBLAS_NUM_THREADS": "1"}
    env.setdefault("PYTHONPATH", str(Path(__file__).resolve().parents[1]))
    print(f"loader from {env['PYTHONPATH']}; caps {CAP_BYTES >> 20} MB address space, {CAP_CPU} CPU s")
    print(f"{'file':38} {'bytes':>6} {'CPU s':>7} {'peak MB':>8}  outcome")
    with tempfile.TemporaryDirectory() as tmp:
        for name, text in files().items():
            path = Path(tmp) / "checklist.yaml"
            path.write_text(text, encoding="utf-8")
            try:
                done = subprocess.run([sys.executable, "-c", CHILD, str(path)], capture_output=True, text=True,
                                      env=env, cwd=tmp, timeout=WALL)
                got = json.loads(done.stdout.strip().splitlines()[-1])
                print(f"{name:38} {len(text.encode()):>6} {got['cpu_s']:>7.3f} {got['peak_mb']:>8.1f}  {got['said']}")
            except subprocess.TimeoutExpired:
                print(f"{name:38} {len(text.encode()):>6} {'-':>7} {'-':>8}  over the cap ({WALL} s of wall time)")
            except (IndexError, json.JSONDecodeError):
                print(f"{name:38} {len(text.encode()):>6} {'-':>7} {'-':>8}  over the cap (exit {done.returncode})")


if __name__ == "__main__":
    main()
