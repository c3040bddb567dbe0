"""Prompt templates: one plain text file per stage in ``prompts/`` (``prompts/<name>.txt``).

A template is plain text with ``$field`` / ``${field}`` placeholders (``string.Template``; a literal dollar
sign is ``$$``), so JSON examples with braces need no escaping. It is split into chat messages by lines that
hold only a role in brackets: ``[system]``, ``[user]`` or ``[assistant]``; text before the first such line
belongs to a ``user`` message. A format example is named as ``${example_NAME}`` and written in when the
template is read (its text is in ``gavel.answers.examples``, where the answer reader finds it too). Lay a template out for provider prompt caching: what many requests share
(instructions, the summary or the documents) first, what differs per request (the item) last.

Every request built from a template records the template's hash (``template_hash``) so the run manifest
says exactly which prompt produced an answer.
"""

from __future__ import annotations

import hashlib
import re
from functools import lru_cache
from pathlib import Path
from string import Template

from gavel.answers.examples import expand
from gavel.core import tokens
from gavel.core.config import PROMPTS_DIR

ROLES = ("system", "user", "assistant")
_ROLE_LINE = re.compile(r"^\[(system|user|assistant)\][ \t]*$", re.MULTILINE)


class PromptError(ValueError):
    pass


def template_path(name: str, prompts_dir: Path | None = None) -> Path:
    path = Path(prompts_dir or PROMPTS_DIR) / f"{name}.txt"
    if not path.is_file():
        raise PromptError(f"no prompt template {name!r}: {path} does not exist")
    return path


@lru_cache(maxsize=64)
def _read(path: Path) -> str:
    """The template's text with its format examples (``${example_NAME}``) written in: their one definition is
    ``gavel.answers.examples.EXAMPLES``, which the reader uses too; a template's hash is of this text."""
    return expand(path.read_text(encoding="utf-8"))


def template_text(name: str, prompts_dir: Path | None = None) -> str:
    return _read(template_path(name, prompts_dir))


def template_hash(name: str, prompts_dir: Path | None = None) -> str:
    """sha256 of the template file's text, 16 hex digits: what the manifest records per stage."""
    return hashlib.sha256(template_text(name, prompts_dir).encode("utf-8")).hexdigest()[:16]


def render(name: str, prompts_dir: Path | None = None, **fields) -> str:
    """The template with every placeholder filled; a missing or unknown placeholder raises PromptError
    naming the template and the field (never a silently empty prompt)."""
    text = template_text(name, prompts_dir)
    try:
        return Template(text).substitute({k: str(v) for k, v in fields.items()})
    except KeyError as err:
        raise PromptError(f"prompt {name!r}: no value given for ${err.args[0]}") from None
    except ValueError as err:
        raise PromptError(f"prompt {name!r}: bad placeholder ({err})") from None


def placeholders(name: str, prompts_dir: Path | None = None) -> set[str]:
    """The field names a template needs."""
    return {m.group("named") or m.group("braced") for m in Template.pattern.finditer(template_text(name, prompts_dir))
            if m.group("named") or m.group("braced")}


def _sections(text: str) -> list[tuple[str, str]]:
    """(role, unstripped content) of each section of a rendered template."""
    parts = _ROLE_LINE.split(text)
    return [("user", parts[0])] + list(zip(parts[1::2], parts[2::2]))


def render_messages(name: str, prompts_dir: Path | None = None, **fields) -> list[dict]:
    """The rendered template as chat messages, split at ``[role]`` lines; empty sections are left out."""
    messages = [{"role": role, "content": content.strip()}
                for role, content in _sections(render(name, prompts_dir, **fields)) if content.strip()]
    if not messages:
        raise PromptError(f"prompt {name!r} rendered to no message")
    return messages


# ---------- counting a prompt's tokens without rendering it ----------
_MARK = re.compile("\x00([0-9]+)\x00")


@lru_cache(maxsize=64)
def _layout(name: str, prompts_dir: Path | None, fields: tuple[str, ...]) -> tuple | None:
    """The template's sections as (literal text | field index) parts, with the text on the field's own line
    before and after it; None where the template itself holds the marks used to find the fields."""
    if "\x00" in template_text(name, prompts_dir):
        return None
    out = []
    for _, content in _sections(render(name, prompts_dir, **{f: f"\x00{n}\x00" for n, f in enumerate(fields)})):
        pieces = _MARK.split(content)
        parts, lines = [], []
        for n, piece in enumerate(pieces):
            if n % 2:
                before, after = pieces[n - 1].rpartition("\n")[2], pieces[n + 1].partition("\n")[0]
                if "\x00" in before + after:
                    return None  # two fields on one line: not laid out this way
                parts.append(int(piece))
                lines.append((before, after))
            elif piece:
                parts.append(piece)
        used = tuple(sorted({p for p in parts if isinstance(p, int)}))
        out.append((tuple(used.index(p) if isinstance(p, int) else p for p in parts), tuple(lines), used))
    return tuple(out)


def _stripped(parts: list) -> list:
    """``parts`` (strings, token counts) as the text's ``strip()``: a count is always preceded by a string
    ending in a letter and followed by one (or the end) after which nothing is left to strip (see
    tokens.Split), so the strip never reaches past one."""
    out = list(parts)
    for ends in ((0, str.lstrip), (-1, str.rstrip)):
        at, strip = ends
        while out and isinstance(out[at], str) and not strip(out[at]):
            out.pop(at)
        if out and isinstance(out[at], str):
            out[at] = strip(out[at])
    return out


@lru_cache(maxsize=4096)
def _section(layout: tuple, index: int, values: tuple) -> tuple[tuple, int] | None:
    """The stripped parts of section ``index`` of ``_layout(*layout)`` with ``values`` (strings or
    tokens.Split, those of the fields it holds) in place of its fields, and their tokens; None where a value
    would make a ``[role]`` line of its own (then only rendering tells)."""
    fields, lines, _ = _layout(*layout)[index]
    parts, n = [], 0
    for p in fields:
        if isinstance(p, str):
            parts.append(p)
            continue
        value = values[p]
        text = value.text if isinstance(value, tokens.Split) else str(value)  # as render() substitutes it
        before, after = lines[n]
        n += 1
        if "\n" in text or "[" in before + text + after:
            if _ROLE_LINE.search(before + text + after):
                return None
        parts.extend(value.parts() if isinstance(value, tokens.Split) else [text])
    parts = _stripped(parts)
    return tuple(parts), tokens.count_parts(parts)


def forget() -> None:
    """Empties the memo of rendered sections (they hold the texts put into them): between a run's case groups."""
    _section.cache_clear()


def _sections_of(name: str, prompts_dir: Path | None, fields: dict) -> list[tuple[tuple, int]] | None:
    names = tuple(sorted(fields))
    layout = _layout(name, prompts_dir, names)
    if layout is None:
        return None
    values = tuple(fields[f] for f in names)
    sections = [_section((name, prompts_dir, names), i, tuple(values[f] for f in used))
                for i, (_, _, used) in enumerate(layout)]
    return None if None in sections else [s for s in sections if s[0]]


def message_tokens(name: str, prompts_dir: Path | None = None, **fields) -> list[int]:
    """o200k tokens of each message of ``render_messages(name, **fields)``, exactly, without rendering them:
    a field may be given as ``tokens.Split`` (a long text tokenised once), whose inner tokens are not
    counted again. A section is counted once for the values it holds (26 item requests share the summary's
    message)."""
    sections = _sections_of(name, prompts_dir, fields)
    if sections is None:
        return [tokens.count_tokens(m["content"]) for m in render_messages(name, prompts_dir, **_texts(fields))]
    if not sections:
        raise PromptError(f"prompt {name!r} rendered to no message")
    return [n for _, n in sections]


def joined_tokens(name: str, prompts_dir: Path | None = None, **fields) -> int:
    """o200k tokens of the rendered messages' contents joined with nothing between them (as message_tokens
    counts, without rendering)."""
    sections = _sections_of(name, prompts_dir, fields)
    if sections is None:
        return tokens.count_tokens("".join(m["content"] for m in render_messages(name, prompts_dir,
                                                                                  **_texts(fields))))
    return tokens.count_parts([p for parts, _ in sections for p in parts])


def _texts(fields: dict) -> dict:
    return {k: v.text if isinstance(v, tokens.Split) else v for k, v in fields.items()}
