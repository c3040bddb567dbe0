"""Where does an evidence snippet occur in a text? Exact, after normalisation, fuzzily, or not at all.

The paper asks extractors for *verbatim* evidence; in practice models re-quote with other whitespace, curly
quotes, changed dashes, or a few words changed. ``locate`` tries, in order:

1. ``exact``       the snippet occurs as written (first occurrence);
2. ``normalized``  it occurs once both sides are normalised: runs of whitespace become one space, every
                   quote style becomes ``'`` (curly or straight, single or double: extractors re-type
                   ``"..."`` as ``'...'``), dashes become ``-``, letters are lower-cased;
3. ``fuzzy``       the best-aligned window of the normalised text scores at least ``threshold`` on
                   rapidfuzz's ``partial_ratio`` (0-100; default ``FUZZY_THRESHOLD`` = 90, i.e. about one
                   character in ten may differ);
4. ``not_found``   none of these.

Offsets are always character offsets into the ORIGINAL text (``text[start:end]``), so they can be stored
next to ``human.json``'s ``evidences_indices`` and highlighted in the annotation app.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache

import numpy as np
from rapidfuzz import fuzz

STATUSES = ("exact", "normalized", "fuzzy", "not_found")
FUZZY_THRESHOLD = 90.0
MIN_FUZZY_CHARS = 12  # shorter snippets must match exactly or after normalisation: fuzzy is noise there

_CHAR_MAP = str.maketrans({
    "\u2018": "'", "\u2019": "'", "\u201a": "'", "\u201b": "'", "\u2032": "'", "`": "'",
    "\u201c": "'", "\u201d": "'", "\u201e": "'", "\u201f": "'", "\u2033": "'", '"': "'",
    "\u2010": "-", "\u2011": "-", "\u2012": "-", "\u2013": "-", "\u2014": "-", "\u2015": "-", "\u2212": "-",
    "\u00a0": " ", "\u2009": " ", "\u202f": " ",
})


@dataclass(frozen=True)
class Located:
    """``text[start:end]`` is where the snippet was found (``None`` when ``not_found``); ``score`` is 100 for
    exact and normalised hits, rapidfuzz's alignment score for fuzzy ones, the best score seen otherwise."""

    start: int | None
    end: int | None
    status: str
    score: float

    @property
    def found(self) -> bool:
        return self.status != "not_found"


_CHAR_PAIRS = tuple((chr(k), v) for k, v in _CHAR_MAP.items())  # no value is also a key: order is free


#: ``str.isspace`` (and so the ``\s`` of a str pattern) of every code point up to U+3000, the last space (tested);
#: code points above it are looked up at the end, False
_IS_SPACE = np.array([chr(c).isspace() for c in range(0x3001)] + [False])
_ODD_SPACE = re.compile(r"[^\S ]|  ")  # whitespace other than single plain spaces


def _lower(text: str) -> str | None:
    """``text`` with quotes and dashes mapped and lower-cased, character for character; None where that
    cannot keep every character in its place."""
    mapped = text
    for old, new in _CHAR_PAIRS:  # = text.translate(_CHAR_MAP), one character for one; str.replace is C-fast
        if old in mapped:
            mapped = mapped.replace(old, new)
    low = mapped.lower()
    if len(low) != len(mapped) or "\u03a3" in mapped:  # a character that lower-cases to two, or a Greek
        return None                                # capital sigma (lower() of a whole word is contextual)
    return low


@lru_cache(maxsize=1 << 16)  # snippets: every variant and table locates the same ones
def normalized_str(text: str) -> str:
    """``normalize(text)[0]``, without the offsets (what a snippet needs)."""
    low = _lower(text)
    return _normalize_chars(text)[0] if low is None else " ".join(low.split())  # split(): str.isspace runs


@lru_cache(maxsize=4096)  # a summary is normalised once for its 26 items, all their snippets and every variant
def normalize(text: str) -> tuple[str, list[int]]:
    """The normalised text and, for each of its characters, the offset of the original character it came
    from (a run of whitespace maps to its first character)."""
    low = _lower(text)
    if low is None:
        return _normalize_chars(text)
    if not _ODD_SPACE.search(low):  # single spaces only (most snippets): trim the ends, nothing else moves
        start, end = len(low) - len(low.lstrip(" ")), len(low.rstrip(" "))
        return low[start:end], list(range(start, end))
    # kept: every non-space character and the first of each whitespace run between two of them
    codes = np.frombuffer(low.encode("utf-32-le", "surrogatepass"), dtype=np.uint32)
    space = _IS_SPACE[np.minimum(codes, len(_IS_SPACE) - 1)]
    solid = np.flatnonzero(~space)
    if not len(solid):
        return "", []
    start, end = int(solid[0]), int(solid[-1]) + 1
    keep = ~space[start:end]
    keep[1:] |= ~space[start:end - 1]
    return " ".join(low.split()), (np.flatnonzero(keep) + start).tolist()


def _normalize_chars(text: str) -> tuple[str, list[int]]:
    """``normalize``, one character at a time (texts where lower-casing the whole string would not keep
    every character in its place)."""
    out: list[str] = []
    offsets: list[int] = []
    in_space = False
    for i, ch in enumerate(text):
        ch = ch.translate(_CHAR_MAP)
        if ch.isspace():
            if not in_space and out:
                out.append(" ")
                offsets.append(i)
            in_space = True
            continue
        in_space = False
        low = ch.lower()
        if len(low) != 1:  # e.g. 'İ' lower-cases to two characters: keep the original, offsets stay aligned
            low = ch
        out.append(low)
        offsets.append(i)
    if out and out[-1] == " ":
        out.pop()
        offsets.pop()
    return "".join(out), offsets


def _span(offsets: list[int], text: str, start: int, end: int) -> tuple[int, int]:
    """Original offsets of the normalised range [start, end)."""
    last = offsets[end - 1]
    return offsets[start], last + 1 if last < len(text) else len(text)


@lru_cache(maxsize=1 << 14)  # the grounding table and the residual ratios align the same snippets in one text
def _alignment(norm_snippet: str, norm_text: str):
    return fuzz.partial_ratio_alignment(norm_snippet, norm_text)


def locate(snippet: str, text: str, threshold: float | None = FUZZY_THRESHOLD,
           normalized_text: tuple[str, list[int]] | None = None) -> Located:
    """Find ``snippet`` in ``text``. ``normalized_text`` may pass ``normalize(text)`` precomputed when many
    snippets are located in one text; ``threshold=None`` skips the fuzzy step."""
    if not isinstance(snippet, str) or not snippet.strip():
        return Located(None, None, "not_found", 0.0)
    at = text.find(snippet)
    if at >= 0:
        return Located(at, at + len(snippet), "exact", 100.0)
    norm_text, offsets = normalized_text or normalize(text)
    norm_snippet = normalized_str(snippet)
    if not norm_snippet or not norm_text:
        return Located(None, None, "not_found", 0.0)
    at = norm_text.find(norm_snippet)
    if at >= 0:
        start, end = _span(offsets, text, at, at + len(norm_snippet))
        return Located(start, end, "normalized", 100.0)
    if threshold is None or len(norm_snippet) < MIN_FUZZY_CHARS:
        return Located(None, None, "not_found", 0.0)
    alignment = _alignment(norm_snippet, norm_text)
    if alignment is None:
        return Located(None, None, "not_found", 0.0)
    if alignment.score >= threshold and alignment.dest_end > alignment.dest_start:
        start, end = _span(offsets, text, alignment.dest_start, alignment.dest_end)
        return Located(start, end, "fuzzy", round(alignment.score, 2))
    return Located(None, None, "not_found", round(alignment.score, 2))


# ---------- what a checklist leaves uncovered (the residual stage's first, deterministic step) ----------
MIN_SPAN_WORDS = 3
#: How evidence spans are matched (the paper leaves it open): ``exact`` (as written), ``normalized`` (also
#: after ``normalize``: whitespace, quote styles, dashes, case), ``fuzzy`` (also ``locate``'s fuzzy step).
#: Values are always located exactly or after normalisation (short: fuzzy is noise there). Default ``fuzzy``.
MATCHES = ("exact", "normalized", "fuzzy")


def located(snippet, text: str) -> Located:
    """``locate(snippet, text)`` at the default threshold, memoised: the grounding table and every residual
    ratio variant locate the same snippets in the same summaries, each once per process."""
    if not isinstance(snippet, str) or not isinstance(text, str):
        return locate(snippet, text)
    return _located(snippet, text)


@lru_cache(maxsize=1 << 17)
def _located(snippet: str, text: str) -> Located:
    return locate(snippet, text, normalized_text=normalize(text))


def forget() -> None:
    """Empties the memos of normalised texts and located snippets: a run in case groups calls it between
    groups (the next group's summaries are other texts; what a memo keeps of the last group is only memory)."""
    for memo in (normalize, normalized_str, _located, _alignment):
        memo.cache_clear()


def _hits(text: str, values: list[tuple[str, list[str]]], fuzzy: bool) -> list[tuple]:
    """Per (value, evidence): the value's span after normalisation (or None) and, per evidence snippet, its
    span under each of ``MATCHES`` (None where not found; ``fuzzy=False``: no fuzzy step, the fuzzy span is
    the normalised one). Each distinct snippet is located once: the three matches are steps of one search."""
    norm = normalize(text)
    plain: dict[str, Located] = {}

    def hit(snippet, with_fuzzy: bool) -> Located | None:
        if not isinstance(snippet, str) or not snippet.strip():
            return None
        if with_fuzzy:
            return located(snippet, text)
        if snippet not in plain:
            plain[snippet] = locate(snippet, text, threshold=None, normalized_text=norm)
        return plain[snippet]

    def spans(snippet) -> tuple:
        h = hit(snippet, fuzzy)
        span = (h.start, h.end) if h is not None and h.found else None
        return (span if span and h.status == "exact" else None,
                span if span and h.status != "fuzzy" else None, span)

    out = []
    for value, evidence in values:
        h = hit(value, False)
        out.append(((h.start, h.end) if h is not None and h.found else None, [spans(e) for e in evidence]))
    return out


_WORD = re.compile(r"\w+")


def _residual(text: str, hits: list[tuple], match: str, values_first: bool) -> list[tuple[int, int]]:
    """``uncovered_spans`` from ``_hits``: the gaps between the covered spans (merged in order)."""
    m = MATCHES.index(match)
    spans = []
    for value, evidence in hits:
        if values_first and value is not None:
            spans.append(value)
        else:
            for e in evidence:
                if e[m] is not None:
                    spans.append(e[m])
    spans.sort()
    spans.append((len(text), len(text) + 1))  # the gap after the last span
    out = []
    at = 0
    for start, end in spans:
        if end <= start:  # an empty span covers nothing
            continue
        if start > at:  # a gap: residual if it holds enough words
            piece = text[at:start]
            if len(_WORD.findall(piece)) >= MIN_SPAN_WORDS:
                lead = len(piece) - len(piece.lstrip())
                out.append((at + lead, at + len(piece.rstrip())))
        if end > at:
            at = end
    return out


def uncovered_spans(text: str, values: list[tuple[str, list[str]]], match: str = "fuzzy",
                    values_first: bool = True) -> list[tuple[int, int]]:
    """Residual spans of ``text`` given its checklist ``values`` as (value, evidence snippets): the paper's
    two-stage matching. A value found in the text (exactly or after normalisation) covers just its own
    words; a value that is not (a paraphrase) covers its evidence snippets instead, located as ``match``
    says (``MATCHES``: how evidence is matched). ``values_first=False``: evidence only, every value
    covers its evidence. What is left, in runs of at least ``MIN_SPAN_WORDS`` words, is residual (leading
    and trailing whitespace trimmed)."""
    if match not in MATCHES:
        raise ValueError(f"match must be one of {', '.join(MATCHES)}, got {match!r}")
    return _residual(text, _hits(text, values, fuzzy=match == "fuzzy"), match, values_first)


def residual_ratios(summaries, values, match: str = "fuzzy", values_first: bool = True,
                    variants: list[tuple[str, bool]] | None = None) -> list[dict]:
    """r of each summary: ``summaries`` is {(who, case_id): text}, ``values`` {(who, case_id): [(value,
    evidence), ...]} (a summary without values is skipped: its checklist is not known); ``match`` and
    ``values_first`` as in ``uncovered_spans``. ``variants``: several (match, values_first) at once, each
    summary under all of them in turn (its text and snippets normalised once, not once per variant); the
    rows then carry ``variant`` (its index)."""
    todo = variants or [(match, values_first)]
    for m, _ in todo:
        if m not in MATCHES:
            raise ValueError(f"match must be one of {', '.join(MATCHES)}, got {m!r}")
    out = []
    for key, vals in values.items():
        text = summaries.get(key)
        if not text:
            continue
        hits = _hits(text, vals, fuzzy=any(m == "fuzzy" for m, _ in todo))
        for n, (m, first) in enumerate(todo):
            spans = _residual(text, hits, m, first)
            covered = sum(e - s for s, e in spans)
            row = {"who": key[0], "case_id": key[1], "r": covered / len(text), "spans": len(spans)}
            out.append({**row, "variant": n} if variants else row)
    return out
