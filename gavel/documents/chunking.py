"""Lossless chunks of at most N tokens (o200k_base), cut at whitespace.

``chunk_text(text, 16_000)`` returns pieces whose concatenation is exactly ``text`` (nothing lost, nothing
repeated at an edge) and each of which encodes to at most ``max_tokens`` tokens on its own. A cut is placed
just before the last whitespace character that keeps the piece within the limit, so words are never split;
a stretch with no whitespace at all is cut at a token boundary. Every piece is re-counted after cutting
(a piece can tokenize differently from the same span inside the whole text), and moved back if needed.

``check_release`` runs this over every summary and checklist text of the release.
"""

from __future__ import annotations

import bisect
import json
import re
from dataclasses import dataclass, field
from pathlib import Path

from gavel.core.tokens import DEFAULT_ENCODING, encoding

CHUNK_TOKENS = 16_000
_WS = re.compile(r"\s")


def _count(enc, text: str) -> int:
    return len(enc.encode(text, disallowed_special=()))


def _last_space(text: str, lo: int, hi: int) -> int:
    """Index of the last whitespace character in ``text[lo+1:hi]``, or -1 (a cut at ``lo`` is no cut)."""
    for i in range(hi - 1, lo, -1):
        if text[i].isspace():
            return i
    return -1


def chunk_text(text: str, max_tokens: int = CHUNK_TOKENS, name: str = DEFAULT_ENCODING) -> list[str]:
    if max_tokens < 1:
        raise ValueError(f"max_tokens must be >= 1, got {max_tokens}")
    if not text:
        return []
    enc = encoding(name)
    tokens = enc.encode(text, disallowed_special=())
    if len(tokens) <= max_tokens:
        return [text]
    _, starts = enc.decode_with_offsets(tokens)
    offs = [*starts, len(text)]
    chunks, pos = [], 0
    while pos < len(text):
        first = max(0, bisect.bisect_right(offs, pos) - 1)  # token holding position pos
        budget = max_tokens
        while True:
            limit = len(text) if first + budget >= len(tokens) else max(offs[first + budget], pos + 1)
            cut = limit
            if limit < len(text):
                space = _last_space(text, pos, limit + 1 if limit < len(text) and text[limit].isspace() else limit)
                if space > pos:
                    cut = space
            piece = text[pos:cut]
            excess = _count(enc, piece) - max_tokens
            if excess <= 0:
                break
            budget -= max(1, excess)  # re-tokenizing the piece gave more tokens: aim lower and cut again
            if budget < 1:
                # not even one token fits at this position (cannot happen for max_tokens >= 1 with valid text,
                # kept as a guard): take one character, which is at most a few tokens
                piece = text[pos:pos + 1]
                break
        chunks.append(piece)
        pos += len(piece)
    return chunks


# ------------------------------------------------------------------ check over the release
def release_texts(root: str | Path):
    """``(source, text)`` of every summary and every checklist text (values, evidence, reasoning) in the
    release's data folder. Empty and unreadable files are skipped (the audit lists them)."""
    root = Path(root)

    def load(path: Path):
        try:
            return json.loads(path.read_text(encoding="utf-8")) if path.stat().st_size else None
        except (OSError, json.JSONDecodeError):
            return None

    def checklist_texts(source, by_item):
        for item, entry in (by_item or {}).items():
            entries = entry if isinstance(entry, list) else [entry]
            for e in entries:
                if not isinstance(e, dict):
                    continue
                if isinstance(e.get("reasoning"), str):
                    yield f"{source}:{item}:reasoning", e["reasoning"]
                for n, v in enumerate(e.get("extracted") or ([e] if "value" in e else []), 1):
                    if not isinstance(v, dict):
                        continue
                    if isinstance(v.get("value"), str):
                        yield f"{source}:{item}:{n}:value", v["value"]
                    for m, ev in enumerate(v.get("evidence") or v.get("evidences") or [], 1):
                        text = ev.get("text") if isinstance(ev, dict) else ev
                        if isinstance(text, str):
                            yield f"{source}:{item}:{n}:evidence{m}", text

    for f in sorted((root / "summaries").rglob("*.json")):
        data = load(f)
        if not isinstance(data, dict):
            continue
        rel = f.relative_to(root)
        if isinstance(data.get("results"), dict):
            for cid, text in data["results"].items():
                if isinstance(text, str):
                    yield f"{rel}:{cid}", text
        else:
            for cid, entry in data.items():
                if isinstance(entry, dict) and isinstance(entry.get("summary/long"), str):
                    yield f"{rel}:{cid}", entry["summary/long"]
    for folder in ("summary_checklists", "document_checklists"):
        for f in sorted((root / folder).rglob("*.json")):
            data = load(f)
            if not isinstance(data, dict):
                continue
            rel = str(f.relative_to(root))
            if isinstance(data.get("results"), dict):
                for cid, by_item in data["results"].items():
                    if isinstance(by_item, dict):
                        yield from checklist_texts(f"{rel}:{cid}", by_item)
            elif f.name == "checklist.json":
                yield from checklist_texts(rel, data)


@dataclass
class ChunkCheck:
    max_tokens: int
    texts: int = 0
    chunks: int = 0
    longest_text_tokens: int = 0
    largest_chunk_tokens: int = 0
    multi_chunk_texts: int = 0
    failures: list = field(default_factory=list)  # (source, what went wrong)


def check_texts(texts, max_tokens: int) -> ChunkCheck:
    """Chunk each text; record any whose chunks do not concatenate back to it or exceed the limit."""
    enc = encoding()
    out = ChunkCheck(max_tokens=max_tokens)
    for source, text in texts:
        out.texts += 1
        n = _count(enc, text)
        out.longest_text_tokens = max(out.longest_text_tokens, n)
        chunks = chunk_text(text, max_tokens)
        out.chunks += len(chunks)
        out.multi_chunk_texts += len(chunks) > 1
        if "".join(chunks) != text:
            out.failures.append((source, "chunks do not concatenate back to the text"))
        sizes = [n] if len(chunks) == 1 else [_count(enc, c) for c in chunks]
        if sizes:
            out.largest_chunk_tokens = max(out.largest_chunk_tokens, max(sizes))
        if any(s > max_tokens for s in sizes):
            out.failures.append((source, f"a chunk of {max(sizes)} tokens > {max_tokens}"))
    return out


def check_release(root: str | Path, sizes=(CHUNK_TOKENS, 256)) -> list[ChunkCheck]:
    """The chunking check over the release at each chunk size (16,000, and a small size that puts many
    edges into real text, since no release text reaches 16,000 tokens)."""
    texts = list(release_texts(root))
    return [check_texts(texts, size) for size in sizes]
