"""SLURM jobs that serve a model with vLLM and run a stage against it (template: slurm/vllm_stage.sbatch.in),
and one stage across a job array of GPUs (slurm/vllm_array.sbatch.in, ``python -m gavel stage-array``):
task I of N starts its own server, answers shard I/N of the requests (by case id, ``gavel.core.shards``) into
the stage's cache and stops; the command submits only the shards that still lack an answer.

Every site-specific value (partition, account, GPUs, time, paths, the vLLM command itself) is a parameter;
context settings come from the model registry (``--max-model-len`` = the model's context window, plus the
model's ``vllm_args`` quirk such as a RoPE-scaling override)."""

from __future__ import annotations

import argparse
import hashlib
import json
import re
import shlex
import subprocess
import sys
from pathlib import Path
from string import Template

from gavel.core import config, options, shards

from .records import Request
from .registry import llm_model

TEMPLATE = config.SLURM_DIR / "vllm_stage.sbatch.in"
ARRAY_TEMPLATE = config.SLURM_DIR / "vllm_array.sbatch.in"


def vllm_args_for(model_name: str) -> str:
    m = llm_model(model_name, "vllm")
    args = []
    if "rope_scaling" in m.quirks:
        args += ["--hf-overrides", shlex.quote(json.dumps({"rope_scaling": m.quirks["rope_scaling"]}))]
    if m.quirks.get("chat_format") == "harmony":
        args += ["--async-scheduling"]
    return " ".join(args)


def _directives(partition, account, gpus, gres, mem, extra_directives) -> str:
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
    return "\n".join(directives)


def _fields(model_name, requests, workdir, out, *, job_name=None, time_limit="04:00:00", cpus=8, partition=None,
            account=None, gpus=1, gres=None, mem=None, log_dir=None, vllm_command="vllm serve", extra_vllm_args="",
            health_timeout=900, concurrency=32, python=None, extra_directives=None, max_model_len=None) -> dict:
    """The template fields shared by the single job and the array."""
    m = llm_model(model_name, "vllm")
    log_dir = Path(log_dir) if log_dir else Path(out).parent / "logs"
    log_dir.mkdir(parents=True, exist_ok=True)
    return dict(
        job_name=job_name or f"gavel-{model_name}"[:60], log_dir=str(log_dir.resolve()), time_limit=time_limit,
        cpus=cpus, optional_directives=_directives(partition, account, gpus, gres, mem, extra_directives),
        repo_dir=str(config.REPO_ROOT), vllm_command=vllm_command, model_id=m.model_id,
        max_model_len=max_model_len or m.context_window,
        vllm_args=" ".join(x for x in (vllm_args_for(model_name), extra_vllm_args) if x),
        health_timeout=health_timeout, python=python or sys.executable, requests=str(Path(requests).resolve()),
        workdir=str(Path(workdir).resolve()), concurrency=concurrency)


def _write(out, template: Path, fields: dict) -> Path:
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(Template(template.read_text()).substitute(fields))
    out.chmod(0o755)
    return out


def render_vllm_job(model_name: str, requests: str | Path, workdir: str | Path, out: str | Path, *,
                    port: int = 8000, **kw) -> Path:
    """Write an sbatch script for ``model_name`` and return its path (keywords: those of ``_fields``: job_name,
    time_limit, cpus, partition, account, gpus, gres, mem, log_dir, vllm_command, extra_vllm_args,
    health_timeout, concurrency, python, extra_directives, max_model_len)."""
    return _write(out, TEMPLATE, {**_fields(model_name, requests, workdir, out, **kw), "port": port})


def served_as(model_name: str, max_model_len: int | None = None, extra_vllm_args: str = "") -> str:
    """The name an array's servers answer under in the cache key: the model and the server's settings (every
    task serves the same model the same way, each on its own port)."""
    m = llm_model(model_name, "vllm")
    args = " ".join(x for x in (vllm_args_for(model_name), extra_vllm_args) if x)
    settings = f"--max-model-len {max_model_len or m.context_window} {args}".rstrip()
    return f"slurm-array:{m.model_id}:{hashlib.sha256(settings.encode()).hexdigest()[:16]}"


def render_vllm_array(model_name: str, requests: str | Path, workdir: str | Path, out: str | Path, *,
                      n_shards: int, tasks: list[int] | None = None, max_parallel: int | None = None,
                      base_port: int = 8000, **kw) -> Path:
    """Write the job-array script of a stage split into ``n_shards`` shards by case id; ``tasks`` (default:
    all, 1..n_shards) are the array indices it runs (the shards still missing answers); at most
    ``max_parallel`` at a time. Task I serves on port ``base_port + I`` (on one node the ports differ; on many,
    each is its node's own)."""
    options.check_positive("n_shards", n_shards)
    tasks = sorted(set(tasks)) if tasks is not None else list(range(1, n_shards + 1))
    if not tasks or not all(1 <= t <= n_shards for t in tasks):
        raise ValueError(f"array tasks {tasks} are not shards of 1..{n_shards}")
    fields = _fields(model_name, requests, workdir, out, **kw)
    array = ",".join(str(t) for t in tasks) + (f"%{max_parallel}" if max_parallel else "")
    return _write(out, ARRAY_TEMPLATE, {**fields, "array": array, "shards": n_shards, "base_port": base_port,
                                        "served_as": shlex.quote(served_as(model_name, kw.get("max_model_len"),
                                                               kw.get("extra_vllm_args", "")))})


def shard_requests(requests: list[Request], shard: tuple[int, int]) -> list[Request]:
    """The requests of shard (I, N): those whose case id (else custom_id) hashes to I of N."""
    i, n = shard
    return [r for r in requests if shards.shard_of(r.case_id or r.custom_id, n) == i]


def shard_workdir(workdir: str | Path, shard: tuple[int, int]) -> Path:
    """Where shard (I, N) keeps its state, lock, manifest and ledger; its answers go to ``workdir/cache``."""
    return Path(workdir) / "shards" / f"{shard[0]}-of-{shard[1]}"


def missing_shards(requests: list[Request], runner, n_shards: int) -> dict[int, int]:
    """{shard: requests it still lacks in the runner's cache}, only shards that lack any."""
    out: dict[int, int] = {}
    for r in requests:
        if not runner.is_cached(r):
            i = shards.shard_of(r.case_id or r.custom_id, n_shards)
            out[i] = out.get(i, 0) + 1
    return dict(sorted(out.items()))


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


def cmd_stage_array(args: argparse.Namespace) -> int:
    """Render (and with --submit, sbatch) the job array of the shards that still lack answers; a rerun of the
    same command sends only what is missing, and nothing when nothing is."""
    from .providers import get_provider
    from .records import read_requests
    from .runner import StageRunner

    requests = read_requests(args.requests)
    if not requests:
        print(f"error: {args.requests}: no requests", file=sys.stderr)
        return 2
    models = sorted({r.model for r in requests})
    if len(models) != 1:
        print(f"error: {args.requests}: one model per array job, found {', '.join(models)}", file=sys.stderr)
        return 2
    label = served_as(models[0], args.max_model_len, args.extra_vllm_args)
    # the key needs no server: the array's servers answer under their name, not their address
    provider = get_provider("vllm", base_url="http://127.0.0.1:1/v1", served_as=label)
    runner = StageRunner(args.stage or requests[0].stage, provider, args.workdir, progress=False)
    missing = missing_shards(requests, runner, args.shards)
    if not missing:
        print(f"stage-array: all {len(requests)} requests of {args.requests} are answered in {runner.cache.folder}; "
              f"nothing to submit (`gavel cache pack {runner.workdir}` keeps the answers in one file)")
        return 0
    script = render_vllm_array(
        models[0], args.requests, runner.workdir, args.script, n_shards=args.shards, tasks=list(missing),
        max_parallel=args.max_parallel, base_port=args.base_port, partition=args.partition, account=args.account,
        gpus=args.gpus, gres=args.gres, mem=args.mem, time_limit=args.time, cpus=args.cpus,
        vllm_command=args.vllm_command, extra_vllm_args=args.extra_vllm_args, concurrency=args.concurrency,
        max_model_len=args.max_model_len, health_timeout=args.health_timeout)
    todo = sum(missing.values())
    print(f"stage-array: {todo} of {len(requests)} requests missing, in shards "
          f"{','.join(map(str, missing))} of {args.shards}; job array script {script}")
    if args.submit:
        job = submit(script, wait=args.wait)
        print(f"submitted job array {job}" + (" (ended)" if args.wait else ""))
    return 0


def add_parser(sub) -> None:
    p = sub.add_parser("stage-array", help="one stage across a SLURM job array of GPUs: a vLLM server per shard; "
                                           "only the shards still missing answers are submitted")
    p.add_argument("--requests", required=True, help="JSONL file of requests of one registry model")
    p.add_argument("--workdir", required=True, help="the stage's folder: its cache, and shards/I-of-N of each task")
    p.add_argument("--shards", type=options.positive_int, required=True, help="N: shards (array tasks) by case id")
    p.add_argument("--script", required=True, help="the sbatch script to write")
    p.add_argument("--submit", action="store_true", help="sbatch it (default: only write it)")
    p.add_argument("--wait", action="store_true", help="with --submit: return when the array has ended")
    p.add_argument("--stage", default=None)
    p.add_argument("--max-parallel", type=options.positive_int, default=None, help="tasks running at once")
    p.add_argument("--base-port", type=options.port, default=8000, help="task I serves on BASE_PORT + I")
    p.add_argument("--partition", default=None)
    p.add_argument("--account", default=None)
    p.add_argument("--gpus", type=options.non_negative_int, default=1, help="GPUs per task (0: no --gres line)")
    p.add_argument("--gres", default=None, help="a --gres value instead of gpu:GPUS")
    p.add_argument("--mem", default=None)
    p.add_argument("--time", default="04:00:00", help="time limit per task")
    p.add_argument("--cpus", type=options.positive_int, default=8)
    p.add_argument("--vllm-command", default="vllm serve")
    p.add_argument("--extra-vllm-args", default="")
    p.add_argument("--max-model-len", type=options.positive_int, default=None,
                   help="default: the model's context window in the registry")
    p.add_argument("--health-timeout", type=options.positive_int, default=900, help="seconds to wait for a server")
    p.add_argument("--concurrency", type=options.positive_int, default=32)
    p.set_defaults(func=cmd_stage_array)
