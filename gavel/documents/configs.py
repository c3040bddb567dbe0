"""Checklist configurations: which keys one extraction run fills, with their definitions.

The legal ones are generated from ``gavel.core.items`` (one definition per item, never copied): ``all`` (one run
for the 26 items), the 9 ``grouped`` runs and the 26 ``individual`` runs, named like the release's folders
(``all/all_26_items``, ``grouped/01_basic_case_info``, ``individual/01_filing_date``). Keys use the
underscore spelling the release's agent and chunk-by-chunk files use (``Filing_Date``).

Any other checklist is a YAML file::

    name: research_paper            # folder-safe name of the configuration
    task: Extract ... from the paper # optional one-line instruction
    items:
      - key: Title                   # letters, digits, underscores, hyphens
        definition: The paper's full title.

``checklists/research_paper.yaml`` next to this module is a shipped non-legal example.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

import yaml

from gavel.core import items as gitems

KINDS = ("all", "grouped", "individual")
EXAMPLES_DIR = Path(__file__).with_name("checklists")
_KEY = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_\-.]*$")
LEGAL_TASK = ("Extract the checklist items below from the documents of one U.S. civil-rights case, citing "
              "evidence for every value.")


class ConfigError(ValueError):
    pass


@dataclass(frozen=True)
class ChecklistConfig:
    """One run's checklist: ``kind`` (all / grouped / individual / custom), ``name`` (folder name),
    ``keys`` in order, ``definitions`` per key, and the task sentence shown to the model."""

    kind: str
    name: str
    keys: tuple[str, ...]
    definitions: dict
    task: str = LEGAL_TASK

    @property
    def path(self) -> str:
        """Relative output folder, as in the release: ``grouped/01_basic_case_info``."""
        return f"{self.kind}/{self.name}"


def _legal(kind: str, name: str, chosen) -> ChecklistConfig:
    return ChecklistConfig(kind=kind, name=name, keys=tuple(it.underscore for it in chosen),
                           definitions={it.underscore: it.definition for it in chosen})


def all_items() -> ChecklistConfig:
    return _legal("all", f"all_{len(gitems.ITEMS)}_items", gitems.ITEMS)


def group_config(group_key: str) -> ChecklistConfig:
    return _legal("grouped", gitems.group_slug(group_key), gitems.items_in_group(group_key))


def single_config(item_name: str) -> ChecklistConfig:
    it = gitems.item(item_name)
    return _legal("individual", it.slug, (it,))


def configurations(kind: str) -> list[ChecklistConfig]:
    """The runs of one configuration kind: 1 (all), 9 (grouped) or 26 (individual)."""
    if kind == "all":
        return [all_items()]
    if kind == "grouped":
        return [group_config(g.key) for g in gitems.GROUPS]
    if kind == "individual":
        return [single_config(it.key) for it in gitems.ITEMS]
    raise ConfigError(f"unknown configuration kind {kind!r}; known: {KINDS}")


def release_config(kind: str, name: str) -> ChecklistConfig:
    """The configuration of a release folder ``<kind>/<name>`` (e.g. ``individual/13_reported_opinions``)."""
    for cfg in configurations(kind):
        if cfg.name == name:
            return cfg
    raise ConfigError(f"no {kind} configuration named {name!r}")


def load_yaml(path: str | Path) -> ChecklistConfig:
    """A user-defined checklist; errors name the file and the entry."""
    path = Path(path)
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (OSError, yaml.YAMLError) as err:
        raise ConfigError(f"{path}: cannot read checklist YAML ({err})") from None
    if not isinstance(data, dict) or not isinstance(data.get("items"), list) or not data["items"]:
        raise ConfigError(f"{path}: expected a mapping with a non-empty `items` list")
    name = str(data.get("name") or path.stem)
    if not _KEY.match(name):
        raise ConfigError(f"{path}: name {name!r} must be letters, digits, '_', '-' or '.'")
    keys, definitions = [], {}
    for n, entry in enumerate(data["items"], 1):
        if not isinstance(entry, dict) or not entry.get("key") or not entry.get("definition"):
            raise ConfigError(f"{path}: item {n} needs a `key` and a `definition`")
        key = str(entry["key"])
        if not _KEY.match(key):
            raise ConfigError(f"{path}: item {n}: key {key!r} must be letters, digits, '_', '-' or '.'")
        if key in definitions:
            raise ConfigError(f"{path}: item {n}: key {key!r} is defined twice")
        keys.append(key)
        definitions[key] = str(entry["definition"]).strip()
    task = str(data.get("task") or "Extract the checklist items below from the documents, citing evidence "
                                   "for every value.")
    return ChecklistConfig(kind="custom", name=name, keys=tuple(keys), definitions=definitions, task=task)


def resolve(spec: str) -> list[ChecklistConfig]:
    """A configuration from a command-line word: ``all``, ``grouped``, ``individual`` (every run of that
    kind), ``grouped/03_judge_info`` or ``individual/08_judge_name`` (one run), or a YAML path."""
    if spec in KINDS:
        return configurations(spec)
    if "/" in spec and spec.split("/", 1)[0] in KINDS and not spec.endswith((".yaml", ".yml")):
        kind, name = spec.split("/", 1)
        return [release_config(kind, name)]
    return [load_yaml(spec)]
