"""SLURM jobs that serve a model with vLLM and run a stage against it (template: slurm/vllm_stage.sbatch.in).

Every site-specific value (partition, account, GPUs, time, paths, the vLLM command itself) is a parameter;
context settings come from the model registry (``--max-model-len`` = the model's context window, plus the
model's ``vllm_args`` quirk such as a RoPE-scaling override)."""

from __future__ import annotations

import json
import re
import shlex
import subprocess
import sys
from pathlib import Path
from string import Template

from gavel.core import config

from .registry import llm_model

TEMPLATE = config.SLURM_DIR / "vllm_stage.sbatch.in"


def vllm_args_for(model_name: str) -> str:
    m = llm_model(model_name, "vllm")
    args = []
    if "rope_scaling" in m.quirks:
        args += ["--hf-overrides", shlex.quote(json.dumps({"rope_scaling": m.quirks["rope_scaling"]}))]
    if m.quirks.get("chat_format") == "harmony":
        args += ["--async-scheduling"]
    return " ".join(args)


def render_vllm_job(model_name: str, requests: str | Path, workdir: str | Path, out: str | Path, *,
                    port: int = 8000, job_name: str | None = None, time_limit: str = "04:00:00", cpus: int = 8,
                    partition: str | None = None, account: str | None = None, gpus: int | None = 1,
                    gres: str | None = None, mem: str | None = None, log_dir: str | Path | None = None,
                    vllm_command: str = "vllm serve", extra_vllm_args: str = "", health_timeout: int = 900,
                    concurrency: int = 32, python: str | None = None, extra_directives: list[str] | None = None,
                    max_model_len: int | None = None) -> Path:
    """Write an sbatch script for ``model_name`` and return its path."""
    m = llm_model(model_name, "vllm")
    out = Path(out)
    log_dir = Path(log_dir) if log_dir else out.parent / "logs"
    log_dir.mkdir(parents=True, exist_ok=True)
    directives = []
    if partition:
        directives.append(f"#SBATCH --partition={partition}")
    if account:
        directives.append(f"#SBATCH --account={account}")
    if gres:
        directives.append(f"#SBATCH --gres={gres}")
    elif gpus:
        directives.append(f"#SBATCH --gres=gpu:{gpus}")
    if mem:
        directives.append(f"#SBATCH --mem={mem}")
    directives += [d if d.startswith("#SBATCH") else f"#SBATCH {d}" for d in extra_directives or []]
    script = Template(TEMPLATE.read_text()).substitute(
        job_name=job_name or f"gavel-{model_name}"[:60], log_dir=str(log_dir.resolve()), time_limit=time_limit,
        cpus=cpus, optional_directives="\n".join(directives), repo_dir=str(config.REPO_ROOT), port=port,
        vllm_command=vllm_command, model_id=m.model_id, max_model_len=max_model_len or m.context_window,
        vllm_args=" ".join(x for x in (vllm_args_for(model_name), extra_vllm_args) if x),
        health_timeout=health_timeout, python=python or sys.executable, requests=str(Path(requests).resolve()),
        workdir=str(Path(workdir).resolve()), concurrency=concurrency)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(script)
    out.chmod(0o755)
    return out


def submit(script: str | Path, wait: bool = False, env: dict | None = None) -> str:
    """sbatch the script; returns the job id (with ``wait``, after the job ended; raises if it failed)."""
    cmd = ["sbatch", "--parsable"] + (["--wait"] if wait else []) + [str(script)]
    done = subprocess.run(cmd, capture_output=True, text=True, env=env)
    if done.returncode != 0:
        raise RuntimeError(f"sbatch {script} failed ({done.returncode}): {done.stderr.strip()}")
    return done.stdout.strip().split(";")[0]


def job_usage(job_id: str) -> tuple[float, int]:
    """(elapsed seconds, GPUs allocated) of a SLURM job, from ``sacct`` (ElapsedRaw, AllocTRES): what a run on
    your own GPUs is priced by (gavel.llm.ledger.gpu_row). A running job's elapsed time is the time so far."""
    cmd = ["sacct", "-j", str(job_id), "-X", "-n", "-P", "-o", "ElapsedRaw,AllocTRES"]
    try:
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired) as err:
        raise RuntimeError(f"sacct for job {job_id} failed: {err}") from None
    lines = [x for x in done.stdout.splitlines() if x.strip()]
    if done.returncode != 0 or not lines:
        raise RuntimeError(f"sacct knows no job {job_id} ({done.returncode}): {done.stderr.strip()[:200]}")
    elapsed, _, tres = lines[0].partition("|")
    found = re.search(r"gres/gpu=(\d+)", tres) or re.search(r"gres/gpu:[^=,]+=(\d+)", tres)
    return float(elapsed or 0), int(found.group(1)) if found else 0
