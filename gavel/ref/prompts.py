"""Prompt templates: one plain text file per stage in ``prompts/`` (``prompts/<name>.txt``).

A template is plain text with ``$field`` / ``${field}`` placeholders (``string.Template``; a literal dollar
sign is ``$$``), so JSON examples with braces need no escaping. It is split into chat messages by lines that
hold only a role in brackets: ``[system]``, ``[user]`` or ``[assistant]``; text before the first such line
belongs to a ``user`` message. Lay a template out for provider prompt caching: what many requests share
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
    return path.read_text(encoding="utf-8")


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


def render_messages(name: str, prompts_dir: Path | None = None, **fields) -> list[dict]:
    """The rendered template as chat messages, split at ``[role]`` lines; empty sections are left out."""
    text = render(name, prompts_dir, **fields)
    parts = _ROLE_LINE.split(text)
    messages = []
    head, rest = parts[0], parts[1:]
    if head.strip():
        messages.append({"role": "user", "content": head.strip()})
    for role, content in zip(rest[0::2], rest[1::2]):
        if content.strip():
            messages.append({"role": role, "content": content.strip()})
    if not messages:
        raise PromptError(f"prompt {name!r} rendered to no message")
    return messages
