"""Checklists as data: the one loader of checklist files, and the packaged default (the 26 GAVEL items).

A checklist is a YAML file (docs/checklists.md describes it; ``checklists/`` next to this module holds
every packaged checklist, found by name: ``legal`` the default, ``court_outcome`` a small example,
``research_paper`` one for another field). ``load(spec)`` reads one, by packaged name
(``legal``) or by path, and checks it whole: a duplicate key, an empty instruction, an unknown field, a group
naming a missing item, each is one :class:`ChecklistError` naming the file and the entry.

Each item has

* ``key``        a short canonical identifier (``filing_date``), also the folder name suffix the
                 Gavel-Agent uses for its per-item runs (``01_filing_date``);
* ``name``       the spelling with spaces used by summary checklists, judge files and ``human.json``;
* ``underscore`` the spelling with underscores used by chunk-by-chunk and agent runs;
* ``label``      a short human label for figures;
* ``group``      the key of the group listing it (the agent's grouped configuration), or "" for none;
* ``usually_single``  whether the item normally holds one value (``values: single``; the scoring rules do
                 not depend on it: a pair is compared as single-valued when both sides hold exactly one value);
* ``definition`` the extraction instruction for summaries; ``document_definition`` the one for case documents
                 (the same text unless the file gives ``document_instruction``);
* ``not_applicable`` what "not applicable" means for the item ("" when the file says nothing).

The module keeps its old face: ``ITEMS``, ``GROUPS``, ``item()``, ``group()`` ... are those of the default
checklist, so code written for the 26 legal items runs unchanged.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import stat
import unicodedata
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

import yaml

#: folder of the packaged checklists (``<name>.yaml``)
PACKAGED_DIR = Path(__file__).with_name("checklists")
DEFAULT_NAME = "legal"
_KEY = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_\-]*$")
VALUES = ("single", "multi")
TOP_FIELDS = ("name", "description", "task", "groups", "items", "style")
ITEM_FIELDS = ("key", "name", "label", "values", "instruction", "document_instruction", "not_applicable", "aliases")
GROUP_FIELDS = ("key", "label", "items")
STYLE_FIELDS = ("label", "what")
DEFAULT_TASK = "Extract the checklist items below from the documents, citing evidence for every value."
#: limits on a checklist file, checked before anything in it is hashed, rendered or expanded (docs/hardening.md)
MAX_FILE_BYTES = 512_000  # the packaged legal.yaml is under 9 kB
MAX_TEXT_CHARS = 4_000  # one field's text (the longest packaged instruction is under 300 characters)
MAX_ITEMS = 500  # items, and groups
MAX_ALIASES = 50  # aliases of one item
MAX_DEPTH = 8  # nesting of YAML lists and mappings (the format needs 5)


class UnknownItemError(KeyError):
    """Raised for a checklist item name that matches none of the checklist's items or their known variants."""

    def __str__(self) -> str:  # KeyError quotes its argument; give a readable message instead
        return str(self.args[0]) if self.args else "unknown checklist item"


class ChecklistError(ValueError):
    """A checklist file that cannot be used; the message names the file and the entry."""


@dataclass(frozen=True)
class Group:
    number: int
    key: str
    label: str


@dataclass(frozen=True)
class Item:
    number: int
    key: str
    name: str
    label: str
    group: str
    usually_single: bool
    definition: str
    document_definition: str = ""
    not_applicable: str = ""
    aliases: tuple[str, ...] = ()

    @property
    def underscore(self) -> str:
        return self.name.replace(" ", "_")

    @property
    def slug(self) -> str:
        """Folder name of the Gavel-Agent's per-item run, e.g. ``01_filing_date``."""
        return f"{self.number:02d}_{self.key}"

    @property
    def document_instruction(self) -> str:
        """What an extractor reading case documents is told (with the meaning of "not applicable")."""
        text = self.document_definition or self.definition
        return f"{text} Not applicable when: {self.not_applicable}" if self.not_applicable else text

    @property
    def summary_instruction(self) -> str:
        return f"{self.definition} Not applicable when: {self.not_applicable}" if self.not_applicable \
            else self.definition


# Spellings that differ from an item's name or underscore form only in this way are "variants":
# they are accepted, and reported by `spelling_of` so the release audit can list them.
_VARIANT_NORMALISER = re.compile(r"[\s_]+")


def _fold(text: str) -> str:
    """Case-, space-, Unicode-form- and punctuation-insensitive form used to recognise stray spellings (``Café``,
    the same word in decomposed form, ``cafe_`` with a zero-width space ... fold alike)."""
    text = "".join(ch for ch in unicodedata.normalize("NFKC", text) if unicodedata.category(ch) != "Cf")
    return _VARIANT_NORMALISER.sub(" ", text).strip(" ._-:").casefold()


def _spellings(it: Item) -> tuple[str, ...]:
    """Every spelling by which code finds the item: key, name, underscore name, agent slug, aliases."""
    return (it.key, it.name, it.underscore, it.slug, *it.aliases)


@dataclass(frozen=True, eq=False)  # compared and hashed as the object: ``load`` gives one per file
class Checklist:
    """One loaded checklist: its items and groups in file order, style aspect wordings it overrides
    (``{aspect: (label, what)}``), the task sentence for document extraction, where it came from, and
    ``fingerprint``: a hash of its content (what cache keys of a non-default checklist include)."""

    name: str
    items: tuple[Item, ...]
    groups: tuple[Group, ...]
    style: dict = field(default_factory=dict)
    task: str = DEFAULT_TASK
    description: str = ""
    source: str = ""
    fingerprint: str = ""

    def __post_init__(self):
        exact: dict[str, Item] = {}
        for it in self.items:
            for spelling in (it.key, it.name, it.underscore, it.slug):
                exact.setdefault(spelling, it)
        folded: dict[str, Item] = {}
        for it in self.items:  # ``parse`` refuses two items sharing a folded spelling: the first is kept here
            for spelling in _spellings(it):
                folded.setdefault(_fold(spelling), it)
        object.__setattr__(self, "_exact", exact)
        object.__setattr__(self, "_folded", folded)

    @property
    def is_default(self) -> bool:
        """The packaged default's content (wherever it was read from): the release's results, caches and
        request ids are those of the default, so nothing about the checklist enters them."""
        return self.fingerprint == default().fingerprint

    @property
    def cache_tag(self) -> str | None:
        """What a runner's cache key adds for this checklist: None for the default (keys unchanged)."""
        return None if self.is_default else f"checklist:{self.name}:{self.fingerprint}"

    @property
    def keys(self) -> tuple[str, ...]:
        return tuple(it.key for it in self.items)

    def item(self, name: str) -> Item:
        """The item for any known spelling (key, spaced name, underscore name, agent slug, an alias, or a stray
        variant such as a trailing underscore or full stop). Raises UnknownItemError."""
        found = self._exact.get(name) if isinstance(name, str) else None
        if found is None and isinstance(name, str):
            found = self._folded.get(_fold(name))
        if found is None:
            which = "GAVEL items" if self.is_default else f"items of checklist {self.name!r} ({self.source})"
            close = self.closest(name) if isinstance(name, str) else []
            hint = (f"; did you mean {' or '.join(repr(c) for c in close)}?" if close
                    else "; `gavel items` lists them")
            raise UnknownItemError(f"unknown checklist item {name!r}: not one of the {len(self.items)} {which}{hint}")
        return found

    def closest(self, name: str, n: int = 3) -> list[str]:
        """The item names (spaced spelling) closest to ``name`` -- by any of its spellings -- best first."""
        import difflib

        want = _fold(name)
        scored: dict[str, float] = {}
        for spelled, it in self._folded.items():
            ratio = difflib.SequenceMatcher(None, want, spelled).ratio()
            if ratio >= 0.6 or (len(want) >= 4 and want in spelled):
                scored[it.name] = max(scored.get(it.name, 0.0), ratio + (0.3 if want in spelled else 0.0))
        return sorted(scored, key=lambda k: -scored[k])[:n]

    def spelling_of(self, name: str) -> str:
        """Classify a spelling: 'key', 'name' (spaces), 'underscore', 'slug' or 'variant'."""
        it = self.item(name)
        for kind, spelled in (("key", it.key), ("name", it.name), ("underscore", it.underscore), ("slug", it.slug)):
            if name == spelled:
                return kind
        return "variant"

    def group(self, key: str) -> Group:
        for g in self.groups:
            if g.key == key:
                return g
        raise UnknownItemError(f"unknown checklist group {key!r} in checklist {self.name!r}")

    def items_in_group(self, key: str) -> tuple[Item, ...]:
        self.group(key)
        return tuple(it for it in self.items if it.group == key)

    def group_slug(self, key: str) -> str:
        """Folder name of the Gavel-Agent's grouped run, e.g. ``01_basic_case_info``."""
        g = self.group(key)
        return f"{g.number:02d}_{g.key}"

    def select(self, names) -> tuple[Item, ...]:
        """The items named (any spelling), or all of them when ``names`` is empty."""
        return tuple(self.item(n) for n in names) if names else self.items


# ---------------------------------------------------------------------------------------------- loading
def _shown(value, limit: int = 60) -> str:
    """``repr`` of a value from the file, cut to ``limit`` characters (an error line stays one short line)."""
    text = repr(value) if isinstance(value, (str, int, float, bool)) or value is None else type(value).__name__
    return text if len(text) <= limit else text[:limit - 3] + "..."


_SURROGATE = re.compile("[\ud800-\udfff]")


def _text(value, where: str, what: str, required: bool = True) -> str:
    if value is None and not required:
        return ""
    if not isinstance(value, str) or (required and not value.strip()):
        raise ChecklistError(f"{where}: {what} must be a non-empty text" if required else f"{where}: {what} must be text")
    _no_surrogate(value, where, what)
    if len(value) > MAX_TEXT_CHARS:
        raise ChecklistError(f"{where}: {what} is {len(value):,} characters long (at most {MAX_TEXT_CHARS:,})")
    return value.strip()


def _no_surrogate(value: str, where: str, what: str) -> None:
    """A lone surrogate (a ``\\ud800`` escape in JSON or YAML) is no character: it cannot be written as UTF-8,
    so it would end a run later in an encoding error. Refused here, naming where it is."""
    found = _SURROGATE.search(value)
    if found:
        raise ChecklistError(f"{where}: {what} holds a lone surrogate (U+{ord(found.group()):04X} at character "
                             f"{found.start() + 1:,}), which is not a character; write the text as UTF-8")


def _surrogates_anywhere(data, source: str, depth: int = 0) -> None:
    """Every text of the parsed file (keys too) checked for lone surrogates, before any field is read."""
    if isinstance(data, str):
        _no_surrogate(data, source, "a text")
    elif isinstance(data, dict) and depth <= MAX_DEPTH:
        for k, v in data.items():
            _surrogates_anywhere(k, source, depth + 1)
            _surrogates_anywhere(v, source, depth + 1)
    elif isinstance(data, list) and depth <= MAX_DEPTH:
        for v in data:
            _surrogates_anywhere(v, source, depth + 1)


def _list(value, where: str, what: str, limit: int) -> list:
    if not isinstance(value, list) or not value:
        raise ChecklistError(f"{where}: {what} must be a non-empty list")
    if len(value) > limit:
        raise ChecklistError(f"{where}: {what} lists {len(value):,} entries (at most {limit:,})")
    return value


def _fields(entry, allowed: tuple, where: str) -> dict:
    if not isinstance(entry, dict):
        raise ChecklistError(f"{where}: expected a mapping of fields, got {type(entry).__name__}")
    unknown = [k for k in entry if k not in allowed]
    if unknown:
        raise ChecklistError(f"{where}: unknown field {_shown(unknown[0])} (known: {', '.join(allowed)})")
    return entry


def _entry(source: str, kind: str, n: int, entry) -> str:
    key = entry.get("key") if isinstance(entry, dict) else None
    return f"{source}, {kind} {n}" + (f" ({_shown(key)})" if isinstance(key, str) and key else "")


def _collisions(items: list[Item], source: str) -> None:
    """Refuse two items that share a spelling once case, spaces, underscores, Unicode form and the derived
    spellings (underscore name, agent slug) are taken into account: one item's values would reach the other."""
    owner: dict[str, tuple[Item, str]] = {}
    for it in items:
        where = _entry(source, "item", it.number, {"key": it.key})
        kinds = ("key", "name", "underscore name", "slug") + ("alias",) * len(it.aliases)
        for kind, spelling in zip(kinds, _spellings(it)):
            folded = _fold(spelling)
            if not folded:
                raise ChecklistError(f"{where}: {kind} {_shown(spelling)} is only spaces and punctuation")
            first, first_spelling = owner.setdefault(folded, (it, f"{kind} {_shown(spelling)}"))
            if first is not it:
                raise ChecklistError(f"{where}: its {kind} {_shown(spelling)} is the same name as item "
                                     f"{first.number}'s {first_spelling} (names are compared ignoring case, "
                                     "spaces, underscores and Unicode form)")


def parse(data, source: str) -> Checklist:
    """A checklist from the parsed YAML ``data``; ``source`` (the file) is named in every error. Every field's
    type and size is checked before anything is hashed."""
    top = _fields(data, TOP_FIELDS, source)
    name = _text(top.get("name"), source, "`name`")
    if not _KEY.match(name):
        raise ChecklistError(f"{source}: name {_shown(name)} must be letters, digits, '_' or '-'")
    task = _text(top.get("task"), source, "`task`", False)
    description = _text(top.get("description"), source, "`description`", False)
    entries = _list(top.get("items"), source, "`items`", MAX_ITEMS)
    raw, seen = [], {}
    for n, entry in enumerate(entries, 1):
        where = _entry(source, "item", n, entry)
        e = _fields(entry, ITEM_FIELDS, where)
        key = _text(e.get("key"), where, "`key`")
        if not _KEY.match(key):
            raise ChecklistError(f"{where}: key {_shown(key)} must be letters, digits, '_' or '-'")
        item_name = _text(e.get("name", key), where, "`name`")
        for spelling in {key, item_name}:
            if spelling in seen:
                raise ChecklistError(f"{where}: {_shown(spelling)} is used twice (first by item {seen[spelling]})")
            seen[spelling] = n
        values = e.get("values", "multi")
        if not isinstance(values, str) or values not in VALUES:
            raise ChecklistError(f"{where}: `values` must be one of {', '.join(VALUES)}, got {_shown(values)}")
        aliases = e.get("aliases") or []
        if not isinstance(aliases, list) or not all(isinstance(a, str) and a.strip() for a in aliases):
            raise ChecklistError(f"{where}: `aliases` must be a list of texts")
        if len(aliases) > MAX_ALIASES:
            raise ChecklistError(f"{where}: `aliases` lists {len(aliases):,} entries (at most {MAX_ALIASES})")
        raw.append(dict(number=n, key=key, name=item_name, label=_text(e.get("label", item_name), where, "`label`"),
                        usually_single=values == "single", definition=_text(e.get("instruction"), where, "`instruction`"),
                        document_definition=_text(e.get("document_instruction"), where, "`document_instruction`", False),
                        not_applicable=_text(e.get("not_applicable"), where, "`not_applicable`", False),
                        aliases=tuple(_text(a, where, "an alias") for a in aliases)))
    by_key = {r["key"]: r for r in raw}
    groups, member = [], {}
    group_entries = top.get("groups") or []
    if not isinstance(group_entries, list):
        raise ChecklistError(f"{source}: `groups` must be a list")
    if len(group_entries) > MAX_ITEMS:
        raise ChecklistError(f"{source}: `groups` lists {len(group_entries):,} entries (at most {MAX_ITEMS:,})")
    for n, entry in enumerate(group_entries, 1):
        where = _entry(source, "group", n, entry)
        g = _fields(entry, GROUP_FIELDS, where)
        key = _text(g.get("key"), where, "`key`")
        if not _KEY.match(key) or any(x.key == key for x in groups):
            raise ChecklistError(f"{where}: key {_shown(key)} must be unique letters, digits, '_' or '-'")
        listed = _list(g.get("items"), where, "`items` (item keys)", MAX_ITEMS)
        for k in listed:
            if not isinstance(k, str) or k not in by_key:
                raise ChecklistError(f"{where}: names item {_shown(k)}, which the checklist does not define")
            if k in member:
                raise ChecklistError(f"{where}: item {_shown(k)} is already in group {_shown(member[k])}")
            member[k] = key
        groups.append(Group(n, key, _text(g.get("label", key), where, "`label`")))
    style = _style(top.get("style"), source)
    items = tuple(Item(group=member.get(r["key"], ""), **r) for r in raw)
    _collisions(list(items), source)
    # every field is now text of bounded size in lists of bounded length: hashing it is bounded too
    _surrogates_anywhere(data, source)  # what no field check read (keys, aliases), before it is hashed
    content = {"name": name, "task": top.get("task"), "groups": group_entries, "items": entries,
               "style": top.get("style")}
    fingerprint = hashlib.sha256(json.dumps(content, sort_keys=True, ensure_ascii=False, default=str).encode()).hexdigest()[:16]
    return Checklist(name=name, items=items, groups=tuple(groups), style=style, task=task or DEFAULT_TASK,
                     description=description, source=source, fingerprint=fingerprint)


def _style(entries, source: str) -> dict:
    """Style aspects whose wording differs from the default rubric: ``{aspect: (label, what)}``."""
    from gavel.core.vocab import STYLE_ASPECTS

    if entries is None:
        return {}
    if not isinstance(entries, dict):
        raise ChecklistError(f"{source}: `style` must map style aspects to their wording")
    out = {}
    for aspect, entry in entries.items():
        where = f"{source}, style aspect {_shown(aspect)}"
        if aspect not in STYLE_ASPECTS:
            raise ChecklistError(f"{where}: not a style aspect (known: {', '.join(STYLE_ASPECTS)})")
        e = _fields(entry, STYLE_FIELDS, where)
        out[aspect] = (_text(e.get("label"), where, "`label`"), _text(e.get("what"), where, "`what`"))
    return out


def packaged() -> tuple[str, ...]:
    """Names of the packaged checklists."""
    return tuple(sorted(p.stem for p in PACKAGED_DIR.glob("*.yaml")))


def _named(path: str) -> str:
    """A path as an error line names it: characters that do not print escaped, cut to 200 characters."""
    shown = path if path.isprintable() else repr(path)[1:-1]
    return shown if len(shown) <= 200 else shown[:197] + "..."


def load(spec: str | Path | Checklist | None = None) -> Checklist:
    """A checklist by packaged name (``legal``), by file path, or as given; None: the default."""
    if isinstance(spec, Checklist):
        return spec
    spec = DEFAULT_NAME if spec is None or spec == "" else spec
    if not isinstance(spec, (str, Path)):
        raise ChecklistError(f"a checklist is a packaged name or a file path, not {type(spec).__name__}")
    where = _named(str(spec))
    try:
        path = Path(spec)
        if not path.suffix and not path.exists():
            if str(spec) not in packaged():
                raise ChecklistError(f"no checklist {_shown(str(spec), 200)}: neither a file nor a packaged "
                                     f"checklist ({', '.join(packaged())})")
            path = PACKAGED_DIR / f"{spec}.yaml"
        path = str(path.resolve())
        where = _named(path)
        # opened without waiting on a FIFO, then what was opened is checked (never the path, then the path again)
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            os.close(fd)
            raise ChecklistError(f"{path}: cannot read checklist (not a regular file)")
        with os.fdopen(fd, "rb") as f:
            data = f.read(MAX_FILE_BYTES + 1)
    except ChecklistError:
        raise
    except (OSError, ValueError) as err:  # ValueError: a path with a NUL character
        raise ChecklistError(f"{where}: cannot read checklist ({getattr(err, 'strerror', None) or err})") from None
    if len(data) > MAX_FILE_BYTES:
        raise ChecklistError(f"{path}: a checklist file is at most {MAX_FILE_BYTES:,} bytes; this one is longer")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as err:
        raise ChecklistError(f"{path}: not UTF-8 text (byte {err.start:,})") from None
    return _parsed(path, text)


class _Refused(Exception):
    """What the checklist loader refuses in the YAML itself, with the line (1-based)."""

    def __init__(self, line: int, why: str):
        super().__init__(why)
        self.line, self.why = line, why


class _Loader(yaml.SafeLoader):
    """YAML's safe loader, stricter: no anchors or aliases (a few hundred bytes of nested aliases expand to
    gigabytes), no explicit tags (``!!timestamp``, ``!!bool``, ``!!set`` on the wrong value crash PyYAML's
    constructors with AttributeError, KeyError or TypeError; a checklist needs none), no merge keys, a key at
    most once per mapping, nesting at most ``MAX_DEPTH`` deep."""

    depth = 0

    def compose_node(self, parent, index):
        event = self.peek_event()
        if isinstance(event, yaml.AliasEvent) or getattr(event, "anchor", None) is not None:
            raise _Refused(event.start_mark.line + 1, "anchors and aliases (& and *) are not allowed in a checklist")
        if getattr(event, "tag", None) is not None:  # only an explicit tag is set on an event
            raise _Refused(event.start_mark.line + 1, f"tags ({_shown(event.tag, 40)}) are not allowed in a checklist; "
                                                      "write the value plainly")
        self.depth += 1
        try:
            if self.depth > MAX_DEPTH:
                raise _Refused(event.start_mark.line + 1, f"nested deeper than {MAX_DEPTH} levels")
            return super().compose_node(parent, index)
        finally:
            self.depth -= 1

    def construct_mapping(self, node, deep=False):
        first: dict = {}
        for key_node, _ in node.value:
            line = key_node.start_mark.line + 1
            if key_node.tag == "tag:yaml.org,2002:merge":
                raise _Refused(line, "merge keys (<<) are not allowed in a checklist")
            if isinstance(key_node, yaml.ScalarNode):
                key = (key_node.tag, key_node.value)
                if key in first:
                    raise _Refused(line, f"key {_shown(key_node.value)} is given twice in one entry "
                                         f"(first on line {first[key]})")
                first[key] = line
        return super().construct_mapping(node, deep)


def from_text(text: str, source: str) -> Checklist:
    """A checklist from the text of a file (a run folder's ``checklist.yaml``, from someone else), read as
    ``load`` reads a file: the strict loader, every refusal a ChecklistError naming ``source``."""
    return _parsed(source, text)


@lru_cache(maxsize=32)
def _parsed(path: str, text: str) -> Checklist:
    """One Checklist per file content: a file edited since is read anew."""
    try:
        data = yaml.load(text, Loader=_Loader)  # noqa: S506 -- a SafeLoader, stricter
    except _Refused as err:
        raise ChecklistError(f"{path}, line {err.line}: {err.why}") from None
    except yaml.YAMLError as err:
        raise ChecklistError(f"{path}: not YAML ({str(err).splitlines()[0][:200]})") from None
    except (ValueError, OverflowError) as err:  # e.g. an integer too long to convert
        raise ChecklistError(f"{path}: not a usable YAML value ({_shown(str(err).splitlines()[0], 100)})") from None
    return parse(data, path)


def default() -> Checklist:
    return load(DEFAULT_NAME)


def named_in(*tables) -> str | None:
    """The checklist a run's tables were made with: the values of their ``checklist`` column (``a, b`` where
    tables of several checklists were joined); None where no table has the column (the paper's tables)."""
    names = sorted({str(v) for t in tables if t is not None and "checklist" in getattr(t, "columns", ())
                    for v in t["checklist"].dropna().unique()})
    return ", ".join(names) or None


def titled(title: str, *tables) -> str:
    """A figure title that names the checklist of the tables it draws (unchanged for the paper's tables)."""
    name = named_in(*tables)
    return f"{title} (checklist: {name})" if name else title


# ------------------------------------------------- the default checklist under the module's old names
_DEFAULT = default()
ITEMS: tuple[Item, ...] = _DEFAULT.items
GROUPS: tuple[Group, ...] = _DEFAULT.groups
ITEM_KEYS: tuple[str, ...] = tuple(it.key for it in ITEMS)
GROUP_KEYS: tuple[str, ...] = tuple(g.key for g in GROUPS)
item = _DEFAULT.item
spelling_of = _DEFAULT.spelling_of
closest = _DEFAULT.closest
group = _DEFAULT.group
items_in_group = _DEFAULT.items_in_group
group_slug = _DEFAULT.group_slug
