"""The LLM layer: typed requests and responses, a model registry, one module per provider, and a
resumable stage runner (content-addressed cache, persisted state, dry-run with cost estimates,
run manifest). See gavel/llm/runner.py."""

from .records import Request, Response, make_custom_id  # noqa: F401


def demo_requests(model: str = "gpt-4.1-2025-04-14", n: int = 3, stage: str = "demo") -> list[Request]:
    """A few small requests for trying a provider or the runner (no case data needed)."""
    return [Request(stage=stage, model=model, case_id=f"demo{i}",
                    messages=[{"role": "system", "content": "Answer in one short sentence."},
                              {"role": "user", "content": f"What is a consent decree? (variant {i}) id=demo{i}"}])
            for i in range(n)]


def report_table(report):
    """One row per request of a RunReport: status, tokens, error (no texts; errors scrubbed of API keys)."""
    import pandas as pd

    from .secrets import scrub

    rows = [{"custom_id": cid, "status": r.status, "input_tokens": r.input_tokens, "output_tokens": r.output_tokens,
             "batch_id": r.batch_id, "error": scrub(r.error)} for cid, r in report.responses.items()]
    return pd.DataFrame(rows)
