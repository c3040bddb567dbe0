"""Backend view of the model registry (gavel/core/models.yaml): provider, model id, context window, sampling
parameters and quirks, prices. ``body_params`` turns them into each provider's request parameters."""

from __future__ import annotations

from dataclasses import dataclass, field

from gavel.core import config
from gavel.core.vocab import PROVIDERS


@dataclass(frozen=True)
class LLMModel:
    name: str  # release_name, gavel's key for the model
    provider: str
    model_id: str
    context_window: int
    max_output_tokens: int
    sampling: dict = field(default_factory=dict)
    quirks: dict = field(default_factory=dict)
    price: dict = field(default_factory=dict)
    # the provider's enqueued-token limit for the model's batches (OpenAI's "batch queue limit": input tokens of
    # all batches not yet ended, per organisation and usage tier); None: no such limit
    batch_queue_tokens: int | None = None

    def input_budget(self, prompt_tokens: int, reserve_output: int | None = None) -> int:
        """Tokens left for case documents once the prompt and the output reserve are taken."""
        reserve = self.max_output_tokens if reserve_output is None else reserve_output
        return max(0, self.context_window - prompt_tokens - reserve)


def llm_model(name: str, provider: str | None = None) -> LLMModel:
    """The backend settings of a registry model; ``provider`` overrides where it is served (e.g. a
    registry model served by ``mock`` in tests)."""
    m = config.model(name)
    if not m.llm:
        raise KeyError(f"model {name!r} has no `llm` settings in gavel/core/models.yaml")
    prov = provider or m.provider
    if prov not in PROVIDERS:
        raise ValueError(f"unknown provider {prov!r}; known: {PROVIDERS}")
    return LLMModel(name=name, provider=prov, **m.llm)


def body_params(model: LLMModel, max_tokens: int | None = None) -> dict:
    """Sampling parameters and quirks in a provider-neutral form that each provider module maps."""
    q = model.quirks
    out = {"max_tokens": max_tokens or model.max_output_tokens, **model.sampling}
    for key in ("reasoning_effort", "thinking_budget", "thinking_budget_tokens", "enable_thinking", "json_outputs"):
        if key in q:
            out[key] = q[key]
    return out
