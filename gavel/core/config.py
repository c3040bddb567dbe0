"""Paths and registries: where the release, the results and the figures live, and which models exist.

The release root comes from ``GAVEL_RELEASE`` (environment or ``.env``). It may point at the release
repository (the folder holding ``data/``) or at ``data/`` itself. Without it, gavel looks in
``data/external/gavel`` where ``make data`` puts a clone of the public repository.
"""

from __future__ import annotations

import gc
import os
from contextlib import contextmanager
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

import yaml

from gavel.core.vocab import PROVIDERS

#: the installed package: what ships with it (prompts, SLURM templates, models.yaml) is found from here, so a
#: wheel works as well as a checkout (``gavel/prompts`` and ``gavel/slurm`` link to the top-level folders)
PACKAGE_DIR = Path(__file__).resolve().parent.parent
PROMPTS_DIR = PACKAGE_DIR / "prompts"
SLURM_DIR = PACKAGE_DIR / "slurm"
#: every environment variable gavel reads, and what it sets: the one list (docs/settings.md's table is checked
#: against it). Each may also be given in the project's ``.env`` (the environment wins), except GAVEL_HOME,
#: which says where that ``.env`` is. Read them with ``env(name)``, never ``os.environ`` elsewhere.
ENVIRONMENT = {
    "GAVEL_HOME": "the project folder (data/, figures/, docs/, .env) when gavel does not run from its checkout",
    "GAVEL_RELEASE": "the public release (the folder holding data/summaries, or that data/ itself)",
    "GAVEL_MODELS": "a models file of one's own, merged over the package's models.yaml",
    "GAVEL_FIGURES_DIR": "where the figure notebooks write (default figures/)",
    "TIKTOKEN_CACHE_DIR": "tiktoken's encoding files (default .cache/tiktoken, filled by make install)",
    "OPENAI_API_KEY": "OpenAI's API key",
    "ANTHROPIC_API_KEY": "Anthropic's API key",
    "GEMINI_API_KEY": "Gemini's API key (or GOOGLE_API_KEY)",
    "GOOGLE_API_KEY": "Gemini's API key (or GEMINI_API_KEY)",
    "OPENAI_BASE_URL": "another address for the OpenAI API (a proxy; read by the OpenAI SDK)",
    "ANTHROPIC_BASE_URL": "another address for the Anthropic API (a proxy; read by the Anthropic SDK)",
    "GEMINI_BASE_URL": "another address for the Gemini API (a proxy)",
    "VLLM_BASE_URL": "the vLLM server's /v1 address, when --base-url is not given",
    "VLLM_API_KEY": "the vLLM server's key, if it was started with one",
    "HF_TOKEN": "a Hugging Face token: never used by gavel, only scrubbed from what it writes",
    "GAVEL_ANNOTATION_DB": "the annotation app's database (a file path or a SQLAlchemy URL)",
    "GAVEL_ANNOTATION_SECRET_KEY": "the annotation app's session signing key",
    "GAVEL_ANNOTATION_SECRET_KEY_FILE": "the file (mode 0600) holding that key",
    "GAVEL_LOGIN_LIMIT_ACCOUNT": "failed password tries per account and address before each further try waits (default 5)",
    "GAVEL_LOGIN_LIMIT_ADDRESS": "failed password tries per address, from unknown browsers, before tries wait (default 50)",
    "GAVEL_PASSWORD_HASH_PROFILE": "argon2-cffi's parameter profile for the annotation app's password hashes (default RFC_9106_LOW_MEMORY)",
    "GAVEL_ANNOTATOR_PASSWORD": "the password for `annotate adduser` / `passwd` (--password-env names another)",
}
HOME_ENV = "GAVEL_HOME"


class UnknownSettingError(KeyError):
    """A variable that is not in ENVIRONMENT (a typo, or a setting that was never documented)."""


def env(name: str, named_by_user: bool = False) -> str | None:
    """The value of environment variable ``name`` (or of its ``.env`` entry); None when unset or empty.
    ``name`` must be one of ENVIRONMENT, unless the user named it (``--password-env MY_VAR``)."""
    if name not in ENVIRONMENT and not named_by_user:
        raise UnknownSettingError(f"{name} is not one of gavel's settings (gavel.core.config.ENVIRONMENT)")
    if name != HOME_ENV:
        load_dotenv_once()
    return os.environ.get(name) or None


def _project_root() -> Path:
    """The project folder: ``GAVEL_HOME``; else the checkout holding the package (an editable install);
    else the current folder (a wheel run from a checkout or a project of one's own)."""
    if env(HOME_ENV):
        return Path(env(HOME_ENV)).expanduser().resolve()
    checkout = PACKAGE_DIR.parent
    if (checkout / "pyproject.toml").is_file() and (checkout / "Makefile").is_file():
        return checkout
    return Path.cwd().resolve()


REPO_ROOT = _project_root()
DATA_DIR = REPO_ROOT / "data"
DEFAULT_RELEASE_DIR = DATA_DIR / "external" / "gavel"
RESULTS_DIR = DATA_DIR / "results"
INTERIM_DIR = DATA_DIR / "interim"
FIGURES_DIR = REPO_ROOT / "figures"
DOCS_DIR = REPO_ROOT / "docs"
RELEASE_URL = "https://github.com/Yao-Dou/gavel"


class ReleaseNotFoundError(FileNotFoundError):
    pass


class SettingsFileError(ValueError):
    """``.env`` cannot be read (not UTF-8 text); the message names the file and the line."""


@lru_cache(maxsize=1)
def load_dotenv_once() -> None:
    """Load ``.env`` from the repository root (values already in the environment win). A file that is not
    UTF-8 text raises SettingsFileError naming it and the line."""
    try:
        from dotenv import load_dotenv
    except ImportError:  # python-dotenv is a core dependency; tolerate its absence in odd setups
        return
    path = REPO_ROOT / ".env"
    try:
        data = path.read_bytes()
    except OSError:
        return  # no .env (or none readable): nothing to load, as python-dotenv does
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as err:
        line = data.count(b"\n", 0, err.start) + 1
        raise SettingsFileError(f"{path}, line {line}: not UTF-8 text (byte 0x{data[err.start]:02x}); save .env "
                                f"as UTF-8") from None
    import io

    load_dotenv(stream=io.StringIO(text), override=False)


def release_root(path: str | os.PathLike | None = None) -> Path:
    """The release's ``data/`` folder. Raises ReleaseNotFoundError saying what to set.
    A relative GAVEL_RELEASE is tried against the current folder, then against the repository root."""
    candidates = []
    if path is not None:
        candidates.append(Path(path))
    elif env("GAVEL_RELEASE"):
        given = Path(env("GAVEL_RELEASE")).expanduser()
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
        f"release (the one holding data/summaries), e.g. GAVEL_RELEASE=/path/to/gavel-release (in the environment or in .env), or run "
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


#: environment variable (or .env entry) naming the user's own models file, merged over gavel/core/models.yaml
MODELS_ENV = "GAVEL_MODELS"
MODEL_FIELDS = ("release_name", "label", "provider", "open_weights", "settings", "llm")
LLM_FIELDS = ("model_id", "context_window", "max_output_tokens", "sampling", "quirks", "price", "batch_queue_tokens")
_REQUIRED_LLM = ("model_id", "context_window", "max_output_tokens")


class ModelsFileError(ValueError):
    """A malformed models file; the message names the file, the entry, the field and what to set."""


def package_yaml(text):
    """``yaml.safe_load(text)`` for the YAML files that ship with gavel (models.yaml, prices.yaml, the paper's
    claims), by libyaml's C parser where PyYAML has it: the same values (tests/test_cli_import.py), ~10x
    faster. Files a user writes go through ``yaml.safe_load``, whose error messages the docs quote."""
    return yaml.load(text, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))  # noqa: S506 -- a safe loader


@lru_cache(maxsize=1)
def _package_registry() -> dict:
    with open(Path(__file__).with_name("models.yaml"), encoding="utf-8") as fh:
        return package_yaml(fh)


def models_file() -> Path | None:
    """The user's models file named by GAVEL_MODELS (environment or .env), or None."""
    value = env(MODELS_ENV)
    if not value:
        return None
    path = Path(value).expanduser()
    if not path.is_absolute() and not path.exists() and (REPO_ROOT / path).exists():
        path = REPO_ROOT / path  # a relative setting in .env is relative to the repository
    return path


def _registry() -> dict:
    """The package's registry with the user's models file (GAVEL_MODELS) merged over it."""
    path = models_file()
    if path is None:
        return _package_registry()
    try:
        stamp = path.stat().st_mtime_ns
    except OSError:
        raise ModelsFileError(f"{path}: models file named by {MODELS_ENV} does not exist; fix the path or unset "
                              f"{MODELS_ENV}") from None
    return _merged_registry(str(path), stamp)


@lru_cache(maxsize=8)
def _merged_registry(path: str, _stamp: int) -> dict:
    import copy

    base = copy.deepcopy(_package_registry())
    entries, prices, gpu = _read_user_models(Path(path))
    base["user_prices"], base["user_gpu_hour_usd"] = prices, gpu  # one's own prices (gavel.core.prices)
    for entry in entries:
        name = entry["release_name"]
        for group in ("models", "local_models"):
            found = next((m for m in base.get(group, []) if m["release_name"] == name), None)
            if found is not None:  # override: the given fields replace the package's; `llm` key by key
                llm = {**found.get("llm", {}), **entry.get("llm", {})}
                found.update({k: v for k, v in entry.items() if k != "llm"}, llm=llm)
                break
        else:
            _check_new_model(path, entry)
            base.setdefault("user_models", []).append(
                {"label": name, "open_weights": False, "settings": {}, **entry})
    return base


def _read_user_models(path: Path) -> tuple[list[dict], list, dict]:
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except yaml.YAMLError as err:
        mark = getattr(err, "problem_mark", None)
        where = f", line {mark.line + 1}" if mark is not None else ""
        raise ModelsFileError(f"{path}{where}: not valid YAML ({getattr(err, 'problem', None) or err})") from None
    except OSError as err:
        raise ModelsFileError(f"{path}: cannot read the models file named by {MODELS_ENV} ({err})") from None
    if not isinstance(data, dict) or not isinstance(data.get("models", []), list) or set(data) - {"models", "prices", "gpu_hour_usd"} \
            or not isinstance(data.get("prices", []), list) or not isinstance(data.get("gpu_hour_usd", {}), dict):
        raise ModelsFileError(f"{path}: a models file is a mapping with the key `models:`, holding a list of "
                              f"entries like gavel/core/models.yaml's (release_name, provider, llm: {{model_id, "
                              f"context_window, max_output_tokens, ...}}), and optionally `prices:`, a list of "
                              f"price rows like gavel/core/prices.yaml's, and `gpu_hour_usd:`")
    data.setdefault("models", [])
    for n, entry in enumerate(data["models"], 1):
        where = f"{path}, models entry {n}"
        if not isinstance(entry, dict) or not isinstance(entry.get("release_name"), str):
            raise ModelsFileError(f"{where}: field 'release_name' (a string, the model's name) is missing")
        where += f" ({entry['release_name']})"
        unknown = sorted(set(entry) - set(MODEL_FIELDS))
        if unknown:
            raise ModelsFileError(f"{where}: unknown field {unknown[0]!r}; known: {', '.join(MODEL_FIELDS)}")
        if "provider" in entry and entry["provider"] not in PROVIDERS:
            raise ModelsFileError(f"{where}: field 'provider' is {entry['provider']!r}; set one of "
                                  f"{', '.join(PROVIDERS)}")
        llm = entry.get("llm", {})
        if not isinstance(llm, dict):
            raise ModelsFileError(f"{where}: field 'llm' must be a mapping ({', '.join(LLM_FIELDS)})")
        unknown = sorted(set(llm) - set(LLM_FIELDS))
        if unknown:
            raise ModelsFileError(f"{where}: unknown field 'llm.{unknown[0]}'; known: {', '.join(LLM_FIELDS)}")
        for key in ("context_window", "max_output_tokens", "batch_queue_tokens"):
            if key in llm and (not isinstance(llm[key], int) or isinstance(llm[key], bool) or llm[key] <= 0):
                raise ModelsFileError(f"{where}: field 'llm.{key}' must be a positive whole number of tokens, "
                                      f"got {llm[key]!r}")
        for key in ("sampling", "quirks", "price"):
            if key in llm and not isinstance(llm[key], dict):
                raise ModelsFileError(f"{where}: field 'llm.{key}' must be a mapping, got {llm[key]!r}")
        if "model_id" in llm and not (isinstance(llm["model_id"], str) and llm["model_id"]):
            raise ModelsFileError(f"{where}: field 'llm.model_id' must be the provider's model id (a string)")
    return data["models"], data.get("prices") or [], data.get("gpu_hour_usd") or {}


def _check_new_model(path: str, entry: dict) -> None:
    where = f"{path}, model {entry['release_name']}"
    if "provider" not in entry:
        raise ModelsFileError(f"{where}: a model not in gavel/core/models.yaml needs field 'provider'")
    missing = [k for k in _REQUIRED_LLM if k not in entry.get("llm", {})]
    if missing:
        raise ModelsFileError(f"{where}: a model not in gavel/core/models.yaml needs field 'llm.{missing[0]}' "
                              f"(llm needs {', '.join(_REQUIRED_LLM)})")


def models() -> tuple[Model, ...]:
    """The 12 benchmark models, in the paper's order of S_GAVEL-REF (with the user's overrides applied)."""
    return tuple(Model(**m) for m in _registry()["models"])


def local_models() -> tuple[Model, ...]:
    """Models gavel runs itself on this machine (provider ``local``); not part of the benchmark."""
    return tuple(Model(**m) for m in _registry().get("local_models", []))


def user_models() -> tuple[Model, ...]:
    """Models added by the user's models file (GAVEL_MODELS); not part of the benchmark."""
    return tuple(Model(**m) for m in _registry().get("user_models", []))


_INDEX: tuple = (None, {})  # the registry last indexed (held, so its identity is never reused), its models by name


def model(release_name: str) -> Model:
    global _INDEX
    registry = _registry()
    held, index = _INDEX
    if held is not registry:  # a models file read anew (or another one named) is indexed anew
        index = {}
        for m in models() + local_models() + user_models():
            index.setdefault(m.release_name, m)
        _INDEX = (registry, index)
    if release_name in index:
        return index[release_name]
    where = f"gavel/core/models.yaml or {models_file()}" if models_file() else "gavel/core/models.yaml"
    raise KeyError(f"unknown model {release_name!r}: not in {where}; add it to your own models file named by "
                   f"{MODELS_ENV} (environment or .env)")


def model_label(release_name: str) -> str:
    """Display label; 'human' and unknown names are returned unchanged."""
    try:
        return model(release_name).label
    except KeyError:
        return release_name


def document_extraction_models() -> dict[str, list[str]]:
    return dict(_registry()["document_extraction"])


#: objects allocated between two young-generation collections inside ``few_collections`` (Python's default: 700)
FEW_COLLECTIONS_GEN0 = 100_000


@contextmanager
def few_collections():
    """Python's cycle collector, run less often for a while: a command that holds the whole release (about a
    million Python objects, few of them in cycles) spends ~1 s of `make results` in collections at the default
    thresholds, each older-generation pass walking every object it holds. Between collections at most
    ``FEW_COLLECTIONS_GEN0`` new objects wait; nothing else changes, and the thresholds are put back after."""
    before = gc.get_threshold()
    gc.set_threshold(FEW_COLLECTIONS_GEN0, *before[1:])
    try:
        yield
    finally:
        gc.set_threshold(*before)
