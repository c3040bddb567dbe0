"""The prompts' own example texts, written once, and how an answer that echoes its prompt is told.

The templates (``prompts/*.txt``, rendered by ``gavel.ref.prompts``) name each format example by a placeholder
``${example_NAME}``; :func:`expand` puts the text of ``EXAMPLES`` in its place when a template is read, so the
rendered prompts are what they were when the texts stood in the files. The reader uses the same texts, and
the stage's template itself, to tell an echo from a value (docs/ANSWERS.md, "Echoes of the prompt"):

- a text (a value, a fact, an evidence quote) whose words are the words of one example (``the information,
  stated briefly``, ``One atomic fact.``: case, punctuation and the angle brackets aside) is an echo;
- so is a value or a fact of at least four words more than half of which are one run of consecutive words of
  the stage's own template text (its instructions, rules and examples; never the summary, item or spans filled
  in), when the run holds at least three words that are not among ``FUNCTION_WORDS`` (``The items are copied
  character for character...`` echoes "is copied character for character"; ``Settlement of a legal case``
  shares only "of a legal case" and is a value).

Each text is split into words once (one regular expression) and each word looked up in sets: linear in the
text. The template is read once per process.
"""

from __future__ import annotations

import re
from functools import lru_cache

from gavel.core.config import PROMPTS_DIR

#: the format examples of the templates, by the name they are given there (``${example_extract_value}``)
EXAMPLES = {
    "example_extract_reasoning": "<a short account of where the summary speaks to the item, or why it does not>",
    "example_extract_evidence": "<exact quote from the summary>",
    "example_extract_value": "<the information, stated briefly>",
    "example_residual_reasoning": "<which spans carry facts, briefly>",
    "example_residual_fact": "<one atomic fact>",
    "example_residual_spans": "<numbers of the spans it comes from>",
}
#: the template whose own text an answer of each reader stage may echo
TEMPLATES = {"extract": "extract", "residual_facts": "residual"}
#: words that do not make a shared run of words an echo by themselves
FUNCTION_WORDS = frozenset("a an the of to in on at for and or is are was be it its that this with from by as not no"
                           .split())
#: the shortest run of template words (and text) that can be an echo of a rule
RUN = 4
#: texts up to this long are remembered by :func:`echo`, at most ``MEMO_SIZE`` of them per stage
MEMO_CHARS = 200
MEMO_SIZE = 1 << 16

_EXAMPLE = re.compile(r"\$\{(example_[a-z_]+)\}")
_FIELD = re.compile(r"\$\{?[A-Za-z_][A-Za-z0-9_]*\}?|^\[(?:system|user|assistant)\][ \t]*$", re.M)
_WORD = re.compile(r"[^\W_]+")


def expand(template: str) -> str:
    """``template`` with each ``${example_NAME}`` of ``EXAMPLES`` replaced by its text (others left as they are)."""
    return _EXAMPLE.sub(lambda m: EXAMPLES.get(m.group(1), m.group(0)), template)


#: every ASCII byte that is not a letter or a digit, as a blank: an ASCII text's words are what split() leaves
_ASCII_BLANKS = bytes(c if c < 128 and chr(c).isalnum() else 32 for c in range(256))
#: the non-ASCII characters of Latin-1 and of General Punctuation that are in no word (no-break and narrow
#: spaces, curly quotes, dashes, non-breaking hyphens, the section sign): what makes most answers' texts
#: non-ASCII; as blanks, a text's words are the same
_PUNCTUATION = re.compile("[{}]".format("".join(
    re.escape(c) for c in map(chr, [*range(0x80, 0xC0), *range(0x2000, 0x2070)]) if not _WORD.match(c))))


def words(text: str) -> tuple[str, ...]:
    """The words of ``text``, lower case, punctuation and blanks between them dropped (a word is a run of
    letters and digits: ``_WORD``; a text that is ASCII once its common punctuation is blanked is split at C
    speed, to the same words)."""
    text = text.lower()
    if not text.isascii():
        blanked = _PUNCTUATION.sub(" ", text)
        if not blanked.isascii():
            return tuple(_WORD.findall(text))
        text = blanked
    return tuple(text.encode("ascii").translate(_ASCII_BLANKS).decode("ascii").split())


def _mine(stage: str) -> list[str]:
    """The texts of the format examples of ``stage``'s template."""
    return [t for k, t in EXAMPLES.items() if k.startswith(f"example_{TEMPLATES[stage]}_")]


#: stage -> the longest text that may be one of its examples (the longest example and 8 characters of
#: punctuation and blanks around its words): a longer evidence quote is no example (never split into words)
EXAMPLE_CHARS = {stage: max(map(len, _mine(stage))) + 8 for stage in TEMPLATES}


@lru_cache(maxsize=8)
def _own_text(stage: str) -> tuple[tuple, tuple, frozenset]:
    """What an echo of ``stage`` is told by, as strings and as bytes (the words of an ASCII text, split at C
    speed): (word tuples of the stage's examples, the runs of RUN consecutive words of its template's own text,
    every word of that text, those of them that are not ``FUNCTION_WORDS``, the ``FUNCTION_WORDS``); and
    the examples' lengths in words."""
    name = TEMPLATES[stage]
    text = expand((PROMPTS_DIR / f"{name}.txt").read_text(encoding="utf-8"))
    runs, vocabulary = set(), set()
    for piece in _FIELD.split(text):  # a run never reaches across a field filled in per request
        w = words(piece)
        vocabulary.update(w)
        runs.update(w[i:i + RUN] for i in range(len(w) - RUN + 1))
    examples = frozenset(words(t) for t in _mine(stage))
    own = (examples, frozenset(runs), frozenset(vocabulary), frozenset(vocabulary - FUNCTION_WORDS), FUNCTION_WORDS)
    as_bytes = tuple(frozenset(tuple(x.encode() for x in w) if isinstance(w, tuple) else w.encode() for w in part)
                     for part in own)
    return own, as_bytes, frozenset(map(len, examples))


def echo(stage: str, text: str, rules: bool = True) -> bool:
    """Whether ``text`` (a value or a fact of ``stage``; an evidence quote with ``rules=False``: its examples
    only) echoes the stage's own prompt. A text of at most ``MEMO_CHARS`` characters is looked at once per
    process (the release's answers repeat two in five of theirs); a longer one each time (the memo holds no
    long text, and empties itself when it holds ``MEMO_SIZE``)."""
    if not rules and len(text) > EXAMPLE_CHARS.get(stage, -1):  # not a stage with examples, or too long
        return False
    memo = _MEMO.get((stage, rules))
    if memo is None:
        if stage not in TEMPLATES:
            return False
        memo = _MEMO.setdefault((stage, rules), {})
    found = memo.get(text)
    if found is None:
        found = _echo(stage, text, rules)
        if len(text) <= MEMO_CHARS:
            if len(memo) >= MEMO_SIZE:
                memo.clear()
            memo[text] = found
    return found


#: (stage, rules) -> {text: whether it echoes}: what :func:`echo` has already looked at
_MEMO: dict[tuple[str, bool], dict[str, bool]] = {}


def forget() -> None:
    """Empties the memo of :func:`echo`: between the case groups of a run (the next group's texts are others),
    and before a benchmark times the reader as a fresh process finds it."""
    _MEMO.clear()


def _split(text: str) -> list[bytes] | None:
    """The words of :func:`words` as ASCII bytes, split at C speed, when ``text`` holds no letter or digit
    beyond ASCII and at most ``_FEW`` characters beyond ASCII at all; else None. Every other character beyond
    ASCII is a blank there, as it is to ``_WORD``, and so is what it becomes in lower case (never a letter or
    a digit: tests/test_answers_echo.py checks every character), so the text is lowered as ASCII bytes."""
    raw = text.encode("ascii", "replace")  # each character beyond ASCII as one "?"
    if not text.isascii():
        if raw.count(b"?") > _FEW:
            return None
        at = raw.find(b"?")
        while at >= 0:
            if text[at].isalnum():  # a letter or a digit beyond ASCII (an ASCII "?" is neither)
                return None
            at = raw.find(b"?", at + 1)
    return raw.translate(_ASCII_WORDS).split()


#: a text with more characters beyond ASCII than this is split by :func:`words`
_FEW = 16
#: ASCII letters in lower case, digits as they are, every other byte a blank
_ASCII_WORDS = bytes(ord(chr(c).lower()) if c < 128 and chr(c).isalnum() else 32 for c in range(256))


def _echo(stage: str, text: str, rules: bool) -> bool:
    if not rules and len(text) > EXAMPLE_CHARS[stage]:  # too long to be an example
        return False
    own, as_bytes, lengths = _own_text(stage)
    w = _split(text)
    if w is None:
        w, (examples, runs, vocabulary, content, function) = words(text), own
    else:  # the common case: the same words as bytes, told by the same words as bytes
        examples, runs, vocabulary, content, function = as_bytes
    n = len(w)
    if n in lengths and tuple(w) in examples:  # an example, give or take its brackets, case and punctuation
        return True
    # A run that echoes the template covers more than half of the words, so it holds the middle one; and at
    # least three words of the template that are not function words.
    if not rules or n < RUN or w[n // 2] not in vocabulary or content.isdisjoint(w):
        return False
    if 2 * sum(map(vocabulary.__contains__, w)) <= n:  # most values hold words no template has
        return False
    w = tuple(w)
    counted = [0]  # counted[i]: the words of w[:i] that are not function words (each text looked at once)
    for x in w:
        counted.append(counted[-1] + (x not in function))
    run = 0  # consecutive windows of RUN words found in the template: a run of run + RUN - 1 words
    for i in range(len(w) - RUN + 1):
        if w[i:i + RUN] in runs:
            run += 1
            start, end = i - run + 1, i + RUN
            if 2 * (end - start) > len(w) and counted[end] - counted[start] >= 3:
                return True
        else:
            run = 0
    return False
