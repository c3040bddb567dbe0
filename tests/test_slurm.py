"""The SLURM path on a real one-node cluster: sbatch a rendered job that starts a (fake) vLLM server with the
registry's context settings, waits for its health endpoint, runs a stage against it, and stops it."""

import socket
import sys
from pathlib import Path

import pandas as pd

from gavel.llm import Request
from gavel.llm.providers import get_provider
from gavel.llm.records import write_requests
from gavel.llm.runner import StageRunner
from gavel.llm.slurm import render_vllm_job

FAKE_VLLM = Path(__file__).parent / "fakes" / "vllm_fake_server.py"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_rendered_job_carries_registry_settings(tmp_path):
    script = render_vllm_job("Qwen3-32B", tmp_path / "r.jsonl", tmp_path / "w", tmp_path / "job.sbatch",
                             partition="gpu", account="lab", gpus=2, mem="200G", time_limit="02:00:00")
    text = script.read_text()
    assert "#SBATCH --partition=gpu" in text and "#SBATCH --account=lab" in text and "#SBATCH --gres=gpu:2" in text
    assert '"Qwen/Qwen3-32B"' in text and "--max-model-len 131072" in text and "rope_scaling" in text
    assert "$SLURM_JOB_ID" in text or "${SLURM_JOB_ID:-local}" in text
    assert "${" not in text.replace("${SLURM_JOB_ID:-local}", "")  # every template field was filled


def vllm_job(tmp_path, n: int, fake_args: str = ""):
    """n summary requests for Qwen3-32B written to tmp_path, and an sbatch script that serves them with the fake
    vLLM server (``fake_args`` passed to it) on a free port: (requests, port, script)."""
    requests = [Request(stage="summaries", model="Qwen3-32B", case_id=f"c{i}",
                        messages=[{"role": "user", "content": f"Summarise case {i} id=c{i}"}]) for i in range(n)]
    write_requests(tmp_path / "requests.jsonl", requests)
    port = free_port()
    script = render_vllm_job("Qwen3-32B", tmp_path / "requests.jsonl", tmp_path / "work", tmp_path / "job.sbatch",
                             port=port, gpus=None, cpus=1, time_limit="00:05:00", health_timeout=60,
                             vllm_command=f"{sys.executable} {FAKE_VLLM} {fake_args}".rstrip(), python=sys.executable)
    return requests, port, script


def test_vllm_stage_runs_on_slurm(slurm_cluster, tmp_path):
    requests, port, script = vllm_job(tmp_path, 5)
    done = slurm_cluster.sbatch_wait(script, timeout=240)
    logs = "\n".join(p.read_text(errors="ignore") for p in (tmp_path / "logs").glob("*"))
    assert done.returncode == 0, done.stderr + logs
    assert "vLLM server healthy" in logs and "5 requests" in logs
    runner = StageRunner("summaries", get_provider("vllm", base_url=f"http://127.0.0.1:{port}/v1"), tmp_path / "work")
    for r in requests:
        got = runner.cached(r)  # cached under the key of the server the job used
        assert got is not None and got.ok and got.text == f"answer:{r.case_id}"  # the fake echoes the id= tag
    with socket.socket() as s:  # the job stopped its server
        assert s.connect_ex(("127.0.0.1", port)) != 0
    # the job's ledger has its GPU-time row; this test cluster keeps no accounting, so sacct cannot say how long
    # the job took: the time is unknown (not 0) and the run still succeeded
    gpu = pd.read_csv(tmp_path / "work" / "cost.csv").set_index("mode").loc["gpu-time"]
    assert gpu["unknown"] == 1 and gpu["unknown_fields"] == "gpu_hours" and "SLURM job " in gpu["price_row"]


def test_slurm_job_log_holds_no_key(slurm_cluster, tmp_path):
    """The job log is the stage command's stdout: a server that quotes the key in its errors (one request
    always fails) leaves only the scrubbed placeholder there, in the cache and in the run's files."""
    key = "sk-slurm-planted-key-5151515151"
    # 400, not 500: the SDK does not retry it with backoff (a minute of waiting that tests nothing more)
    requests, port, script = vllm_job(tmp_path, 3, "--echo-key --fail c0 --fail-status 400")
    old = slurm_cluster.env.get("VLLM_API_KEY")
    slurm_cluster.env["VLLM_API_KEY"] = key
    try:
        done = slurm_cluster.sbatch_wait(script, timeout=240)
    finally:
        if old is None:
            slurm_cluster.env.pop("VLLM_API_KEY")
        else:
            slurm_cluster.env["VLLM_API_KEY"] = old
    logs = "\n".join(p.read_text(errors="ignore") for p in (tmp_path / "logs").glob("*"))
    assert done.returncode != 0  # the stage reports its failed request
    assert "1 failed" in logs and "<VLLM_API_KEY>" in logs, logs
    written = [p for p in tmp_path.rglob("*") if p.is_file()]
    assert not any(key[:12] in p.read_text(errors="ignore") for p in written)
    assert key[:12] not in done.stdout + done.stderr
