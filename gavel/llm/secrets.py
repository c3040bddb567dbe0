"""Keeping API keys out of everything gavel writes, prints or returns.

``scrub`` replaces the values of the API-key variables (environment or .env) and of keys handed to a
provider directly (``api_key=...``, registered with ``register``) by a placeholder. The stage runner passes
every file it writes through it; providers pass every Response text and error and every exception message
through it; the CLI and the notebook report table pass what they print through it."""

from __future__ import annotations

import threading

from gavel.core import config

#: the environment variables (or .env entries) holding each hosted provider's API key, any one of which will do
KEY_VARIABLES = {"openai": ("OPENAI_API_KEY",), "anthropic": ("ANTHROPIC_API_KEY",),
                 "gemini": ("GEMINI_API_KEY", "GOOGLE_API_KEY")}
#: every variable whose value is scrubbed: the providers' keys, a vLLM server's key, a Hugging Face token
SECRET_VARIABLES = (*(v for names in KEY_VARIABLES.values() for v in names), "VLLM_API_KEY", "HF_TOKEN")
MIN_SECRET_LENGTH = 8  # shorter values ("EMPTY", "x") are placeholders, not secrets
_REGISTERED: set[str] = set()
_LOCK = threading.Lock()


def register(value: str | None) -> None:
    """Scrub ``value`` from now on too (a key given to a provider as an argument, not by a variable)."""
    if value and len(value) >= MIN_SECRET_LENGTH:
        with _LOCK:
            _REGISTERED.add(value)


def scrub(text):
    """``text`` with every known secret replaced by ``<VARIABLE>`` (or ``<api_key>``); non-strings as given."""
    if not isinstance(text, str) or not text:
        return text
    for var in SECRET_VARIABLES:
        value = config.env(var)
        if value and len(value) >= MIN_SECRET_LENGTH:
            text = text.replace(value, f"<{var}>")
    with _LOCK:
        registered = sorted(_REGISTERED, key=len, reverse=True)
    for value in registered:
        text = text.replace(value, "<api_key>")
    return text
