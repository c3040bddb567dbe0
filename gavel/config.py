"""Paths and registries: where the release, the results and the figures live, and which models exist.

The release root comes from ``GAVEL_RELEASE`` (environment or ``.env``). It may point at the release
repository (the folder holding ``data/``) or at ``data/`` itself. Without it, gavel looks in
``data/external/gavel`` where ``make data`` puts a clone of the public repository.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

import yaml

REPO_ROOT = Path(__file__).resolve().parent.parent
DATA_DIR = REPO_ROOT / "data"
DEFAULT_RELEASE_DIR = DATA_DIR / "external" / "gavel"
RESULTS_DIR = DATA_DIR / "results"
FIGURES_DIR = REPO_ROOT / "figures"
PROMPTS_DIR = REPO_ROOT / "prompts"
DOCS_DIR = REPO_ROOT / "docs"
RELEASE_URL = "https://github.com/Yao-Dou/gavel"


class ReleaseNotFoundError(FileNotFoundError):
    pass


@lru_cache(maxsize=1)
def load_dotenv_once() -> None:
    """Load ``.env`` from the repository root (values already in the environment win)."""
    try:
        from dotenv import load_dotenv
    except ImportError:  # python-dotenv is a core dependency; tolerate its absence in odd setups
        return
    load_dotenv(REPO_ROOT / ".env", override=False)


def release_root(path: str | os.PathLike | None = None) -> Path:
    """The release's ``data/`` folder. Raises ReleaseNotFoundError saying what to set.
    A relative GAVEL_RELEASE is tried against the current folder, then against the repository root."""
    load_dotenv_once()
    candidates = []
    if path is not None:
        candidates.append(Path(path))
    elif os.environ.get("GAVEL_RELEASE"):
        given = Path(os.environ["GAVEL_RELEASE"]).expanduser()
        candidates.append(given)
        if not given.is_absolute():  # a relative setting (e.g. in .env) is relative to the repository
            candidates.append(REPO_ROOT / given)
    else:
        candidates.append(DEFAULT_RELEASE_DIR)
    for base in candidates:
        for root in (base / "data", base):
            if (root / "summaries").is_dir():
                return root.resolve()
    raise ReleaseNotFoundError(
        f"GAVEL release not found at {candidates[0]}. Set GAVEL_RELEASE to the folder of the public "
        f"release (the one holding data/summaries), e.g. GAVEL_RELEASE=../shared/gavel-release, or run "
        f"`make data` to clone {RELEASE_URL} into {DEFAULT_RELEASE_DIR}."
    )


@dataclass(frozen=True)
class Model:
    release_name: str
    label: str
    provider: str
    open_weights: bool
    settings: dict = field(default_factory=dict)
    llm: dict = field(default_factory=dict)  # backend settings (see gavel.llm.registry)


@lru_cache(maxsize=1)
def _registry() -> dict:
    with open(Path(__file__).with_name("models.yaml"), encoding="utf-8") as fh:
        return yaml.safe_load(fh)


def models() -> tuple[Model, ...]:
    """The 12 benchmark models, in the paper's order of S_GAVEL-REF."""
    return tuple(Model(**m) for m in _registry()["models"])


def local_models() -> tuple[Model, ...]:
    """Models gavel runs itself on this machine (provider ``local``); not part of the benchmark."""
    return tuple(Model(**m) for m in _registry().get("local_models", []))


def model(release_name: str) -> Model:
    for m in models() + local_models():
        if m.release_name == release_name:
            return m
    raise KeyError(f"unknown model {release_name!r}: not in gavel/models.yaml")


def model_label(release_name: str) -> str:
    """Display label; 'human' and unknown names are returned unchanged."""
    try:
        return model(release_name).label
    except KeyError:
        return release_name


def document_extraction_models() -> dict[str, list[str]]:
    return dict(_registry()["document_extraction"])
