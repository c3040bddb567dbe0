"""One stage across a SLURM job array (issue 48 §1) on the real one-node cluster the tests start: 4 array
tasks, each with its own (fake) vLLM server, answer their shards into the stage's cache; a task that fails is
the only one the rerun of the same command submits, and it sends only what its shard lacks."""

import random
import re
import socket
import sys
from pathlib import Path

from gavel.cli import main
from gavel.core import shards
from gavel.llm import Request
from gavel.llm.providers import get_provider
from gavel.llm.records import write_requests
from gavel.llm.runner import StageRunner
from gavel.llm.slurm import render_vllm_array, served_as

FAKE_VLLM = Path(__file__).parent / "fakes" / "vllm_fake_server.py"


def free_range(n: int) -> int:
    """A base port with base+1 .. base+n free now."""
    for _ in range(200):
        base = random.randint(20000, 60000)
        try:
            for p in range(base + 1, base + n + 1):
                with socket.socket() as s:
                    s.bind(("127.0.0.1", p))
            return base
        except OSError:
            continue
    raise RuntimeError("no free port range")


def the_requests(n_cases: int = 10) -> list[Request]:
    return [Request(stage="summaries", model="Qwen3-32B", case_id=f"c{i}", item=item,
                    messages=[{"role": "user", "content": f"Summarise {item} of case {i} id=c{i}-{item}"}])
            for i in range(n_cases) for item in ("a", "b")]


def test_array_template_renders_for_a_multi_node_cluster(tmp_path):
    script = render_vllm_array("Qwen3-32B", tmp_path / "r.jsonl", tmp_path / "w", tmp_path / "a.sbatch", n_shards=64,
                               tasks=[3, 7, 64], max_parallel=16, partition="gpu", account="lab", gpus=4,
                               mem="200G", time_limit="08:00:00")
    text = script.read_text()
    assert "#SBATCH --array=3,7,64%16" in text and "#SBATCH --gres=gpu:4" in text
    assert "#SBATCH --partition=gpu" in text and "#SBATCH --account=lab" in text
    assert '--shard "$TASK/64"' in text and "--max-model-len 131072" in text and "rope_scaling" in text
    assert f'--served-as {served_as("Qwen3-32B")}' in text
    leftover = re.sub(r"\$\{SLURM_[A-Z_]+(:[-?][^}]*)?\}", "", text)
    assert "${" not in leftover  # every template field was filled


def test_shards_are_stable_and_cover_every_case():
    ids = [f"case-{i}" for i in range(1000)]
    for n in (1, 4, 7):
        got = [shards.shard_of(c, n) for c in ids]
        assert set(got) == set(range(1, n + 1)) and got == [shards.shard_of(c, n) for c in ids]
    assert shards.parse("2/4") == (2, 4)
    assert shards.parse("04/10") == (4, 10)
    # ASCII digits only: int() would take these as 2/4 (other scripts' digits, blanks, signs, underscores)
    for bad in ("0/4", "5/4", "4", "a/b", "1/0", "", "\u0662/\u0664", "\uff12/\uff14", " 2/4", "2/4\n", "+2/4",
                "2/4_0", "2//4", "2/4/8", "1/" + "9" * 5000, "-1/4", "1.0/4"):
        try:
            shards.parse(bad)
        except ValueError as err:
            assert repr(bad) in str(err)
        else:
            raise AssertionError(bad)


def logs_of(folder: Path) -> str:
    return "\n".join(p.read_text(errors="ignore") for p in sorted(folder.glob("*.out")))


def test_stage_across_four_array_tasks(slurm_cluster, tmp_path, monkeypatch, capsys):
    for k, v in slurm_cluster.env.items():
        monkeypatch.setenv(k, v)
    requests = the_requests()
    write_requests(tmp_path / "requests.jsonl", requests)
    by_shard = {i: [r for r in requests if shards.shard_of(r.case_id, 4) == i] for i in range(1, 5)}
    assert all(by_shard.values())  # every task has work
    bad = by_shard[2][0]  # its server refuses this request (400: no retries with backoff)
    base = free_range(4)
    fake = f"{sys.executable} {FAKE_VLLM}"
    args = ["stage-array", "--requests", str(tmp_path / "requests.jsonl"), "--workdir", str(tmp_path / "work"),
            "--shards", "4", "--script", str(tmp_path / "array.sbatch"), "--submit", "--wait", "--gpus", "0",
            "--cpus", "1", "--time", "00:05:00", "--health-timeout", "60", "--base-port", str(base)]
    # the first submission: task 2's server fails one request; sbatch --wait reports the failed array
    rc = main(args + ["--vllm-command", f"{fake} --fail c{bad.case_id[1:]}-{bad.item} --fail-status 400"])
    out, err = capsys.readouterr()
    assert rc == 1 and "sbatch" in err and "failed" in err
    assert "20 of 20 requests missing, in shards 1,2,3,4 of 4" in out
    logs = logs_of(tmp_path / "logs")
    for i in range(1, 5):
        assert f"vLLM server of shard {i}/4 healthy on port {base + i}" in logs
        assert f"shard {i}/4: {len(by_shard[i])} requests" in logs
    assert "1 failed" in logs
    runner = StageRunner("summaries", get_provider("vllm", base_url="http://127.0.0.1:1/v1",
                                                   served_as=served_as("Qwen3-32B")), tmp_path / "work")
    answered = {r.custom_id for r in requests if runner.cached(r) is not None}
    assert answered == {r.custom_id for r in requests} - {bad.custom_id}  # every other answer merged
    for r in requests:
        got = runner.cached(r)
        assert got is None or got.text == f"answer:{r.case_id}-{r.item}"
    # the answers packed into one file (gavel cache pack): the tasks of the next submission read them there
    assert main(["cache", "pack", str(tmp_path / "work")]) == 0
    assert "19 answers in answers.sqlite" in capsys.readouterr().out
    assert not list((tmp_path / "work" / "cache").glob("*/*.json"))
    # the same command again: only shard 2 is submitted, and it sends only its missing request
    for p in (tmp_path / "logs").glob("*.out"):
        p.unlink()
    assert main(args + ["--vllm-command", fake]) == 0
    out = capsys.readouterr().out
    assert "1 of 20 requests missing, in shards 2 of 4" in out and "(ended)" in out
    logs = logs_of(tmp_path / "logs")
    assert logs.count("healthy on port") == 1 and "shard 2/4 healthy" in logs
    n2 = len(by_shard[2])
    assert f"stage summaries: {n2} requests, {n2 - 1} cached, 1 sent" in logs, logs
    assert all(runner.cached(r) is not None for r in requests)
    # and once more: nothing is missing, nothing is submitted
    assert main(args + ["--vllm-command", fake]) == 0
    assert "nothing to submit" in capsys.readouterr().out
    for i in range(1, 5):  # every server stopped with its task
        with socket.socket() as s:
            assert s.connect_ex(("127.0.0.1", base + i)) != 0
