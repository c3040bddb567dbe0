"""The LLM layer: typed requests and responses, a model registry, one module per provider, and a
resumable stage runner (content-addressed cache, persisted state, dry-run with cost estimates,
run manifest). See gavel/llm/runner.py."""

from .records import Request, Response, make_custom_id  # noqa: F401
