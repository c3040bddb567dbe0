"""Hosted providers at scale (issue 48 §2): OpenAI batches within the model's enqueued-token limit (split by
it as well as by count and bytes, and queued one after another while the queue is full), against the fake
that fails a batch over the queue as OpenAI does."""

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
    with pytest.raises(BatchTooLargeError, match=r"alone is .* enqueued tokens > .*batch_queue_tokens"):
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
