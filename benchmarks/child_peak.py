"""A gavel command in a child process, with the child's own CPU and peak memory.

The peak is the child's ``VmHWM`` (read from ``/proc/self/status`` as it exits), not the ``ru_maxrss`` that
``wait4`` reports: Linux starts a child's ``ru_maxrss`` at its parent's resident size when it forks and execs
(``subprocess`` spawns with vfork), so a 30 MiB child of a 110 MiB benchmark read as 110 MiB (issue 48: the
"packing peak of 109.8 MiB" of a 100,000-summary shard was ``scale_mock.py``'s own size; the packing itself
peaks at 28.5 MiB on the same 528,580 answers). ``ru_maxrss`` is kept as the fallback where the child could
not say (killed, or ended by ``os._exit``), and the line then says so.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time

#: run in the child: ``python -c BOOT MODULE ARGS...``; writes VmHWM (KiB) to $BENCH_PEAK_FILE at exit
BOOT = """
import atexit, os, runpy, sys
out = os.environ.pop("BENCH_PEAK_FILE")
def said():
    with open("/proc/self/status") as fh:
        hwm = next(line for line in fh if line.startswith("VmHWM:"))
    with open(out, "w") as fh:
        fh.write(hwm.split()[1])
atexit.register(said)
module, sys.argv = sys.argv[1], [sys.argv[1], *sys.argv[2:]]
runpy.run_module(module, run_name="__main__", alter_sys=True)
"""


def measured(argv: list[str], module: str = "gavel", **popen) -> tuple[float, int, float, int, str, bool]:
    """(CPU seconds, peak resident KiB, wall seconds, exit status, stderr, whether the peak is the child's
    own) of ``python -m MODULE ARGV``."""
    with tempfile.NamedTemporaryFile(prefix="bench-peak-", delete=False) as fh:
        peak_file = fh.name
    try:
        env = {**(popen.pop("env", None) or os.environ), "BENCH_PEAK_FILE": peak_file}
        t0 = time.perf_counter()
        proc = subprocess.Popen([sys.executable, "-c", BOOT, module, *argv], env=env,
                                stdout=popen.pop("stdout", subprocess.DEVNULL), stderr=subprocess.PIPE, text=True,
                                **popen)
        err = proc.stderr.read()
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - t0
        with open(peak_file) as fh:
            said = fh.read().strip()
        own = said.isdigit()
        peak = int(said) if own else usage.ru_maxrss
        return usage.ru_utime + usage.ru_stime, peak, wall, os.waitstatus_to_exitcode(status), err, own
    finally:
        os.unlink(peak_file)
