"""Hosted providers at scale (issue 48 §2): OpenAI batches within the model's enqueued-token limit (split by
it as well as by count and bytes, and queued one after another while the queue is full), against the fake
that fails a batch over the queue as OpenAI does."""

import json
import sys
from pathlib import Path

import pytest
import yaml

sys.path.insert(0, str(Path(__file__).parent))

from fakes.openai_fake import FakeOpenAI  # noqa: E402

from gavel.llm import Request  # noqa: E402
from gavel.llm.providers import get_provider  # noqa: E402
from gavel.llm.providers.base import BatchTooLargeError  # noqa: E402
from gavel.llm.runner import StageRunner  # noqa: E402

GPT41 = "gpt-4.1-2025-04-14"
KEY = "sk-scale-test-key-1234567890"


def queue_limit(tmp_path, monkeypatch, tokens: int) -> None:
    """A models file giving GPT-4.1 this batch queue limit (your tier's, in your own file)."""
    path = tmp_path / "models.yaml"
    path.write_text(yaml.safe_dump({"models": [{"release_name": GPT41, "llm": {"batch_queue_tokens": tokens}}]}))
    monkeypatch.setenv("GAVEL_MODELS", str(path))


def reqs(n: int, words: int = 40) -> list[Request]:
    return [Request(stage="judge", model=GPT41, case_id=f"c{i}", item="filing_date",
                    messages=[{"role": "user", "content": f"case {i}: " + "the court ruled " * words}])
            for i in range(n)]


def test_registry_carries_the_queue_limit():
    from gavel.llm.registry import llm_model

    assert llm_model(GPT41).batch_queue_tokens == 90_000
    assert llm_model("gpt-5-2025-08-07").batch_queue_tokens == 1_500_000
    assert llm_model("gemini-2.5-pro").batch_queue_tokens is None


def test_split_by_enqueued_tokens_as_well_as_count_and_bytes(tmp_path, monkeypatch):
    rq = reqs(10)
    p = get_provider("openai", base_url="http://127.0.0.1:1/v1", api_key=KEY)
    each = p.enqueued_tokens(rq[0])
    assert each > 100
    queue_limit(tmp_path, monkeypatch, 3 * each + 1)
    chunks = p.split(rq)
    assert [len(c) for c in chunks] == [3, 3, 3, 1]
    assert all(sum(map(p.enqueued_tokens, c)) <= 3 * each + 1 for c in chunks)
    p.max_batch_requests = 2  # the count limit still holds inside
    assert [len(c) for c in p.split(rq)] == [2] * 5
    queue_limit(tmp_path, monkeypatch, each - 1)
    with pytest.raises(BatchTooLargeError, match=r"alone is .* enqueued tokens, over .*batch_queue_tokens"):
        p.split(rq)


def test_batches_wait_for_room_in_the_queue(tmp_path, monkeypatch):
    rq = reqs(10)
    with FakeOpenAI() as srv:
        p = get_provider("openai", base_url=srv.url + "/v1", api_key=KEY)
        each = p.enqueued_tokens(rq[0])
        limit = 3 * each + 1
        queue_limit(tmp_path, monkeypatch, limit)
        srv.queue_limit, srv.polls_to_end = limit, 2
        report = StageRunner("judge", p, tmp_path / "run", poll_interval=0.01, progress=False).run(rq)
        assert report.failed == [] and len(report.batches) == 4
        assert srv.over_queue == 0 and 0 < srv.queue_peak <= limit
        assert all(v == 1 for v in srv.submissions.values())  # nothing sent twice


def test_the_fake_fails_a_batch_over_the_queue_as_openai_does(tmp_path, monkeypatch):
    """Without the runner's wait: two batches of 3 into a queue of 4 requests' tokens, the second fails."""
    rq = reqs(6)
    with FakeOpenAI() as srv:
        p = get_provider("openai", base_url=srv.url + "/v1", api_key=KEY)
        srv.queue_limit, srv.polls_to_end = 4 * p.enqueued_tokens(rq[0]), 50
        first, second = p.submit(rq[:3], "t1"), p.submit(rq[3:], "t2")
        assert not p.poll(first).ended
        assert p.poll(second).ended and p.poll(second).state == "failed" and srv.over_queue == 1


# ---------------- Gemini: JSONL files past the inline limit ----------------

from fakes.gemini_fake import FakeGemini  # noqa: E402

GEMINI = "gemini-2.5-pro"


def gemini_reqs(n: int) -> list[Request]:
    return [Request(stage="judge", model=GEMINI, case_id=f"c{i}", item="filing_date",
                    messages=[{"role": "system", "content": "Be terse."},
                              {"role": "user", "content": f"case {i}: " + "the court ruled " * 20}])
            for i in range(n)]


def test_gemini_file_batches_past_the_inline_limit(tmp_path):
    rq = gemini_reqs(12)
    with FakeGemini() as srv:
        srv.polls_to_end = 2
        srv.fail_ids = {rq[3].custom_id: 1}  # fails once: asked again (in a batch of its own)
        p = get_provider("gemini", base_url=srv.url, api_key=KEY)
        each = p.request_size(rq[0])
        p.max_batch_bytes = 3 * each  # inline would take 4 batches of 3 or more
        p.max_file_bytes = 5 * each  # files of 5 requests
        assert [len(c) for c in p.split(rq)] == [5, 5, 2]
        report = StageRunner("judge", p, tmp_path / "run", poll_interval=0.01, progress=False).run(rq)
        assert report.failed == []
        for r in rq:
            got = report.responses[r.custom_id]
            assert got.ok and got.text == f"answer:{r.custom_id}" and got.input_tokens == 17
        # two files of 5; the last 2 requests (and the retry) fit the inline limit and go inline
        assert srv.file_batches == 2 and srv.largest_upload <= 5 * each and len(report.batches) == 4
        assert srv.submissions[rq[3].custom_id] == 2 and srv.submissions[rq[0].custom_id] == 1
        # the file's lines ask what an inline batch asks: the same generation config, system text first
        line = json.loads(next(iter(v for k, v in srv.files.items() if k.startswith("files/in-"))).splitlines()[0])
        assert line["request"]["systemInstruction"]["parts"][0]["text"] == "Be terse."
        assert line["request"]["generationConfig"]["maxOutputTokens"] > 0


def test_gemini_small_stage_stays_inline(tmp_path):
    rq = gemini_reqs(4)
    with FakeGemini() as srv:
        srv.polls_to_end = 1
        p = get_provider("gemini", base_url=srv.url, api_key=KEY)
        report = StageRunner("judge", p, tmp_path / "run", poll_interval=0.01, progress=False).run(rq)
        assert report.failed == [] and srv.file_batches == 0 and len(report.batches) == 1


def test_gemini_damaged_answers_file_costs_only_its_lines(tmp_path):
    rq = gemini_reqs(6)
    with FakeGemini() as srv:
        srv.polls_to_end = 1
        p = get_provider("gemini", base_url=srv.url, api_key=KEY)
        p.max_batch_bytes = 2 * p.request_size(rq[0])
        name = p.submit(rq, "t1")
        p.poll(name)
        out = next(k for k in srv.files if k.startswith("files/batch-out"))
        lines = srv.files[out].decode().splitlines()
        srv.files[out] = ("\n".join(["not json", *lines[1:]]) + "\n").encode()
        got = {r.custom_id: r for r in p.fetch(name, [r.custom_id for r in rq])}
        assert sum(r.ok for r in got.values()) == 5
        bad = [r for r in got.values() if not r.ok]
        assert len(bad) == 1 and "line 1 is not a JSON object" in bad[0].error


def test_batches_a_100000_summary_run_would_submit(shared_rel):
    """The Gemini batches of 100,000 summaries x 82 requests (26 items x summary and reference, comparisons,
    residual facts, style), each request the size of a real one: the extraction requests of 40 of the
    release's benchmark summaries, every item, cycled (the other stages' prompts are of the same order).
    Inline only, it would be some 2,200 batches of 20 MB; as files, some 22 of 2 GB."""
    from gavel.core.items import ITEMS
    from gavel.ref.stages import extract

    s = shared_rel.summaries
    s = s[(s["set"] == "benchmark") & (s["model"] != "human")].head(40)
    sample = [extract.Summary(m, c, t) for m, c, t in zip(s["model"], s["case_id"], s["text"])]
    p = get_provider("gemini", base_url="http://127.0.0.1:1", api_key=KEY)
    measured = [p.request_size(r) for r in extract.build_requests(sample, GEMINI, ITEMS)]
    n = 100_000 * 82
    sizes = [measured[i % len(measured)] for i in range(n)]
    total = sum(sizes)
    files, inline = len(p.plan(range(n), sizes)), len(p.inline_chunks(range(n), sizes))
    assert files == -(-total // p.max_file_bytes) or files == -(-total // p.max_file_bytes) + 1
    assert inline >= total // p.max_batch_bytes
    assert 15 <= files <= 40 and 1_500 <= inline <= 4_000, (files, inline, total)
    print(f"100,000 summaries: {n:,} requests, {total / 1e9:.1f} GB: {files} file batches vs {inline:,} inline")
    # OpenAI, GPT-5 at the registry's tier-1 queue limit: batches of at most 1.5M enqueued tokens, one at a time
    o = get_provider("openai", base_url="http://127.0.0.1:1/v1", api_key=KEY)
    toks = [o.enqueued_tokens(r) for r in extract.build_requests(sample, "gpt-5-2025-08-07", ITEMS)]
    limit = 1_500_000
    queued = len(o.chunks(range(n), [toks[i % len(toks)] for i in range(n)], o.max_batch_requests, limit, "tokens"))
    assert queued >= -(-sum(toks[i % len(toks)] for i in range(n)) // limit) > 1_000
    print(f"  OpenAI GPT-5 at tier 1: {queued:,} batches of at most {limit:,} enqueued tokens")
