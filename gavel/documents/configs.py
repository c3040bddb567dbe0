"""Extraction configurations: which keys one extraction run fills, with their definitions.

They are generated from a checklist (``gavel.core.items``: the packaged default, the 26 legal items, or any
checklist file; one definition per item, never copied): ``all`` (one run for every item), the ``grouped``
runs (one per group of the checklist) and the ``individual`` runs (one per item), named like the release's
folders (``all/all_26_items``, ``grouped/01_basic_case_info``, ``individual/01_filing_date``); a checklist
other than the default puts its name before the run's (``all/court_outcome.all_4_items``) so its runs never
share a folder with the legal ones. Keys use the underscore spelling the release's agent and chunk-by-chunk
files use (``Filing_Date``); a definition is the item's instruction for documents.

Any checklist, packaged (``research_paper``, a non-legal example) or a file, gives one custom configuration
(``load_yaml``: its ``all`` run, kind ``custom``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from gavel.core import items as gitems

KINDS = ("all", "grouped", "individual")
_KEY = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_\-.]*$")
LEGAL_TASK = gitems.default().task


class ConfigError(ValueError):
    pass


@dataclass(frozen=True)
class ExtractionConfig:
    """One run's checklist: ``kind`` (all / grouped / individual / custom), ``name`` (folder name),
    ``keys`` in order, ``definitions`` per key, and the task sentence shown to the model."""

    kind: str
    name: str
    keys: tuple[str, ...]
    definitions: dict
    task: str = LEGAL_TASK
    checklist: str = gitems.DEFAULT_NAME
    cache_tag: str | None = None  # a non-default checklist's tag: the agent's runner keys its answers by it

    @property
    def path(self) -> str:
        """Relative output folder, as in the release: ``grouped/01_basic_case_info``."""
        return f"{self.kind}/{self.name}"


def _config(kind: str, name: str, chosen, checklist: gitems.Checklist) -> ExtractionConfig:
    return ExtractionConfig(kind=kind, name=name if checklist.is_default else f"{checklist.name}.{name}",
                           keys=tuple(it.underscore for it in chosen),
                           definitions={it.underscore: it.document_instruction for it in chosen},
                           task=checklist.task, checklist=checklist.name, cache_tag=checklist.cache_tag)


def all_items(checklist=None) -> ExtractionConfig:
    c = gitems.load(checklist)
    return _config("all", f"all_{len(c.items)}_items", c.items, c)


def group_config(group_key: str, checklist=None) -> ExtractionConfig:
    c = gitems.load(checklist)
    return _config("grouped", c.group_slug(group_key), c.items_in_group(group_key), c)


def single_config(item_name: str, checklist=None) -> ExtractionConfig:
    c = gitems.load(checklist)
    it = c.item(item_name)
    return _config("individual", it.slug, (it,), c)


def configurations(kind: str, checklist=None) -> list[ExtractionConfig]:
    """The runs of one configuration kind over a checklist (default: the legal one): 1 (all), one per group
    (grouped: 9 legal) or one per item (individual: 26 legal)."""
    c = gitems.load(checklist)
    if kind == "all":
        return [all_items(c)]
    if kind == "grouped":
        if not c.groups:
            raise ConfigError(f"checklist {c.name!r} ({c.source}) has no groups: no grouped configuration")
        return [group_config(g.key, c) for g in c.groups]
    if kind == "individual":
        return [single_config(it.key, c) for it in c.items]
    raise ConfigError(f"unknown configuration kind {kind!r}; known: {KINDS}")


def release_config(kind: str, name: str, checklist=None) -> ExtractionConfig:
    """The configuration of a release folder ``<kind>/<name>`` (e.g. ``individual/13_reported_opinions``)."""
    for cfg in configurations(kind, checklist):
        if cfg.name == name:
            return cfg
    raise ConfigError(f"no {kind} configuration named {name!r}")


def load_yaml(path: str | Path) -> ExtractionConfig:
    """A checklist file's ``all`` run as one custom configuration (``custom/<checklist name>``); a bad file is
    one error naming the file and the entry (``gavel.core.items.ChecklistError``)."""
    c = gitems.load(Path(path))
    return ExtractionConfig(kind="custom", name=c.name, keys=tuple(it.underscore for it in c.items),
                           definitions={it.underscore: it.document_instruction for it in c.items}, task=c.task,
                           checklist=c.name, cache_tag=c.cache_tag)


def resolve(spec: str, checklist=None) -> list[ExtractionConfig]:
    """A configuration from a command-line word: ``all``, ``grouped``, ``individual`` (every run of that
    kind over ``checklist``), ``grouped/03_judge_info`` or ``individual/08_judge_name`` (one run), or a
    checklist file (its ``all`` run)."""
    if spec in KINDS:
        return configurations(spec, checklist)
    if "/" in spec and spec.split("/", 1)[0] in KINDS and not spec.endswith((".yaml", ".yml")):
        kind, name = spec.split("/", 1)
        return [release_config(kind, name, checklist)]
    return [load_yaml(spec)]
