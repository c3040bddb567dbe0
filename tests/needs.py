"""One rule for a test that cannot run here (an extra not installed, a system binary missing, no release):
outside CI it is skipped with the reason printed; in CI it fails, because CI installs everything and must
skip nothing it can run."""

from __future__ import annotations

import importlib
import os

import pytest


def unavailable(reason: str):
    """Skip (outside CI) or fail (in CI) with ``reason``; usable at module level too."""
    if os.environ.get("CI"):
        pytest.fail(f"CI must run this test, but {reason}", pytrace=False)
    pytest.skip(reason, allow_module_level=True)


def need_module(name: str, why: str):
    """``importlib.import_module(name)``, or :func:`unavailable` saying ``why`` it is needed."""
    try:
        return importlib.import_module(name)
    except ImportError as err:
        unavailable(f"{why} ({err})")
