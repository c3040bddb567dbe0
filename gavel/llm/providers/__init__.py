"""One module per provider; ``get_provider`` builds one by name."""

from __future__ import annotations

import importlib

from gavel.core.vocab import PROVIDERS

#: provider name (gavel.core.vocab.PROVIDERS) -> (module, class) that serves it
MODULES = {
    "openai": ("openai_batch", "OpenAIBatch"),
    "anthropic": ("anthropic_batch", "AnthropicBatch"),
    "gemini": ("gemini_batch", "GeminiBatch"),
    "vllm": ("vllm", "VLLMServer"),
    "vllm-batch": ("vllm", "VLLMRunBatch"),
    "local": ("local", "LocalServer"),
    "mock": ("mock", "MockProvider"),
    "replay": ("replay", "ReplayProvider"),
}
assert tuple(MODULES) == PROVIDERS


def provider_class(name: str):
    """The class serving ``name``; its SDK is imported only now. For a name not in PROVIDERS an
    UnknownProviderError: a ProviderError (one `error:` line on the command line) and a ValueError."""
    if name not in MODULES:
        from .base import UnknownProviderError

        raise UnknownProviderError(f"unknown provider {name!r}; known: {', '.join(PROVIDERS)}")
    module, cls = MODULES[name]
    return getattr(importlib.import_module(f"{__name__}.{module}"), cls)


def get_provider(name: str, **kwargs):
    return provider_class(name)(**kwargs)
