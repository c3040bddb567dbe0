"""One module per provider; ``get_provider`` builds one by name."""

from __future__ import annotations

NAMES = ("openai", "anthropic", "gemini", "vllm", "vllm-batch", "replay", "local", "mock")


def get_provider(name: str, **kwargs):
    if name == "openai":
        from .openai_batch import OpenAIBatch
        return OpenAIBatch(**kwargs)
    if name == "anthropic":
        from .anthropic_batch import AnthropicBatch
        return AnthropicBatch(**kwargs)
    if name == "gemini":
        from .gemini_batch import GeminiBatch
        return GeminiBatch(**kwargs)
    if name == "vllm":
        from .vllm import VLLMServer
        return VLLMServer(**kwargs)
    if name == "vllm-batch":
        from .vllm import VLLMRunBatch
        return VLLMRunBatch(**kwargs)
    if name == "replay":
        from .replay import ReplayProvider
        return ReplayProvider(**kwargs)
    if name == "local":
        from .local import LocalServer
        return LocalServer(**kwargs)
    if name == "mock":
        from .mock import MockProvider
        return MockProvider(**kwargs)
    from .base import UnknownProviderError

    raise UnknownProviderError(f"unknown provider {name!r}; known: {', '.join(NAMES)}")
