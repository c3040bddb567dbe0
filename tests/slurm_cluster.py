"""A one-node SLURM cluster on loopback for the tests (Debian's slurm-wlm and munge), started in a temporary
folder and stopped afterwards: munged with its own key and socket, slurmctld and slurmd in the foreground
(-D) as background processes. Every daemon started here is stopped by PID in ``stop``, and dies with the test
run (parent-death signal, tests/reaper.py) if that ends first."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import time
from pathlib import Path

from reaper import die_with_parent

BINARIES = ("munged", "slurmctld", "slurmd", "sbatch", "sinfo")


def missing_binaries() -> list[str]:
    return [b for b in BINARIES if not (shutil.which(b) or Path(f"/usr/sbin/{b}").exists())]


def _bin(name: str) -> str:
    return shutil.which(name) or f"/usr/sbin/{name}"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class SlurmCluster:
    def __init__(self, root: Path):
        self.root = Path(root)
        self.procs: list[subprocess.Popen] = []
        self.conf = self.root / "slurm.conf"
        self.env = dict(os.environ)

    def start(self, timeout: float = 60.0) -> SlurmCluster:
        r = self.root
        for d in ("munge", "state", "spool", "log"):
            (r / d).mkdir(parents=True, exist_ok=True)
        key = r / "munge" / "munge.key"
        key.write_bytes(os.urandom(1024))
        key.chmod(0o400)
        (r / "munge").chmod(0o700)
        sock = r / "munge" / "munge.sock"
        self.procs.append(subprocess.Popen(
            [_bin("munged"), "--foreground", "--force", f"--key-file={key}", f"--socket={sock}",
             f"--pid-file={r / 'munge' / 'munged.pid'}", f"--log-file={r / 'log' / 'munged.log'}",
             f"--seed-file={r / 'munge' / 'seed'}"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, preexec_fn=die_with_parent()))
        host = socket.gethostname().split(".")[0]
        ctld_port, d_port = _free_port(), _free_port()
        self.conf.write_text(f"""ClusterName=gaveltest
SlurmctldHost={host}(127.0.0.1)
SlurmctldPort={ctld_port}
SlurmdPort={d_port}
AuthType=auth/munge
AuthInfo=socket={sock}
CredType=cred/munge
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
SchedulerType=sched/backfill
StateSaveLocation={r / 'state'}
SlurmdSpoolDir={r / 'spool'}
SlurmctldPidFile={r / 'slurmctld.pid'}
SlurmdPidFile={r / 'slurmd.pid'}
SlurmctldLogFile={r / 'log' / 'slurmctld.log'}
SlurmdLogFile={r / 'log' / 'slurmd.log'}
SlurmUser=root
SlurmdUser=root
ReturnToService=2
MpiDefault=none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
NodeName={host} NodeAddr=127.0.0.1 CPUs={os.cpu_count() or 2} State=UNKNOWN
PartitionName=debug Nodes={host} Default=YES MaxTime=INFINITE State=UP
""")
        self.env["SLURM_CONF"] = str(self.conf)
        time.sleep(0.5)
        for daemon in ("slurmctld", "slurmd"):
            self.procs.append(subprocess.Popen([_bin(daemon), "-D", "-f", str(self.conf)], env=self.env,
                                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                               preexec_fn=die_with_parent()))
        deadline = time.time() + timeout
        while time.time() < deadline:
            out = subprocess.run(["sinfo", "-h", "-o", "%T"], env=self.env, capture_output=True, text=True)
            if out.returncode == 0 and out.stdout.strip() in ("idle", "mixed", "allocated"):
                return self
            time.sleep(0.5)
        logs = "\n".join(p.read_text(errors="ignore")[-1500:] for p in (r / "log").glob("*.log"))
        self.stop()
        raise RuntimeError(f"SLURM cluster did not come up: {out.stdout} {out.stderr}\n{logs}")

    def sbatch_wait(self, script: Path, timeout: float = 300) -> subprocess.CompletedProcess:
        return subprocess.run(["sbatch", "--wait", str(script)], env=self.env, capture_output=True, text=True,
                              timeout=timeout, cwd=script.parent)

    def stop(self) -> None:
        for p in reversed(self.procs):
            if p.poll() is None:
                p.terminate()
                try:
                    p.wait(timeout=10)
                except subprocess.TimeoutExpired:
                    p.kill()
                    p.wait()
        self.procs.clear()
