"""Parsing the checklist judge's answers into one vocabulary.

The judge compares a model's checklist item with the reference's. It answers either

* a **relation** (both sides hold exactly one value): ``equal``, ``model_contains_reference``,
  ``reference_contains_model`` or ``different``; or
* a **matching** of two value lists: pairs ``(model_index, reference_index)`` (1-based) plus the indices
  found only on one side.

The release spells these in three vocabularies ("model equals reference", "reference contains model",
"A contains B", "A and B are different", and list matchings keyed ``model_index``/``reference_index`` or
``A_index``/``B_index``), and some answers are raw text with a JSON block after "Final Answer". When an
answer is in A/B wording and nothing records which side was the model, the parsed judgment keeps the
sides as A and B and says ``orientation="unknown"``: relations and F1 are still scorable (both are
symmetric in the sides' roles as far as Eq. 1 goes), but over/under-specification is not.

Nothing is dropped silently: every oddity (a null index, a list where a number should be, an index past
the end of its list, a duplicate) is reported in ``Judgment.problems``; an answer that cannot be read at
all raises :class:`JudgeParseError` naming where it came from.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from gavel.answers import scan_objects
from gavel.core.vocab import RELATION_SCORE, RELATIONS  # noqa: F401 (the judgments' vocabulary)

#: An unreadable answer holding more numbers than this is a runaway list of indices ("degenerate").
DEGENERATE_INDEX_COUNT = 250


class JudgeParseError(ValueError):
    """A judge answer that cannot be read; the message names the source (file, case, item).
    ``degenerate`` is set when the unreadable answer is a runaway list of indices."""

    def __init__(self, message: str, degenerate: bool = False):
        super().__init__(message)
        self.degenerate = degenerate


@dataclass
class Judgment:
    kind: str  # "relation" or "matching"
    orientation: str = "model_reference"  # or "unknown" (A/B wording without a recorded mapping)
    relation: str | None = None  # one of RELATIONS; with unknown orientation "a_contains_b"/"b_contains_a"
    pairs: list[tuple[int, int]] = field(default_factory=list)  # (model_index, reference_index), 1-based
    only_in_model: list[int] = field(default_factory=list)
    only_in_reference: list[int] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    salvaged_from_text: bool = False


_REL_PATTERNS = [
    (re.compile(r"^\s*(model|reference|a|b)\s+(?:equals?|is equal to|=)\s+(model|reference|a|b)\s*\.?$", re.I), "eq"),
    (re.compile(r"^\s*(model|reference|a|b)\s+contains\s+(model|reference|a|b)\s*\.?$", re.I), "contains"),
    (re.compile(r"^\s*(model|reference|a|b)\s+and\s+(model|reference|a|b)\s+are\s+different\s*\.?$", re.I), "diff"),
]

_SIDE = {"model": "model", "reference": "reference", "a": "a", "b": "b"}


def parse_relation(text: str, source: str = "") -> Judgment:
    """Parse a relation string in any of the release's vocabularies."""
    for pattern, kind in _REL_PATTERNS:
        m = pattern.match(text)
        if not m:
            continue
        left, right = _SIDE[m.group(1).lower()], _SIDE[m.group(2).lower()]
        sides = {left, right}
        if sides == {"model", "reference"}:
            orientation = "model_reference"
        elif sides == {"a", "b"}:
            orientation = "unknown"
        else:
            raise JudgeParseError(f"{source}: relation {text!r} mixes vocabularies")
        if kind == "eq":
            rel = "equal"
        elif kind == "diff":
            rel = "different"
        elif orientation == "model_reference":
            rel = f"{left}_contains_{right}"
        else:
            rel = f"{left}_contains_{right}"  # a_contains_b / b_contains_a: direction unknown
        return Judgment(kind="relation", orientation=orientation, relation=rel)
    raise JudgeParseError(f"{source}: unknown relation label {text!r}")


def _index(value, role: str, problems: list[str]) -> int | None:
    if isinstance(value, bool):
        problems.append(f"non-integer {role} {value!r}")
        return None
    if isinstance(value, int):
        return value
    if value is None:
        problems.append(f"null {role}")
        return None
    if isinstance(value, list):
        problems.append(f"list-valued {role} {value!r}")
        return None
    if isinstance(value, str) and value.strip().isdigit():
        return int(value)
    problems.append(f"non-integer {role} {value!r}")
    return None


def parse_matching(answer: dict, source: str = "") -> Judgment:
    """Parse a list matching keyed model/reference or A/B."""
    if not isinstance(answer, dict) or "common" not in answer:
        raise JudgeParseError(f"{source}: matching answer without 'common': {str(answer)[:120]!r}")
    if "only_in_model" in answer or "only_in_reference" in answer:
        left, right, orientation = "model", "reference", "model_reference"
    elif "only_in_A" in answer or "only_in_B" in answer:
        left, right, orientation = "A", "B", "unknown"
    else:
        # No only_in lists: infer the vocabulary from the pairs.
        first = next((p for p in answer.get("common") or [] if isinstance(p, dict)), {})
        if "A_index" in first or "B_index" in first:
            left, right, orientation = "A", "B", "unknown"
        else:
            left, right, orientation = "model", "reference", "model_reference"
    problems: list[str] = []
    pairs: list[tuple[int, int]] = []
    for raw in answer.get("common") or []:
        if not isinstance(raw, dict):
            problems.append(f"malformed pair {raw!r}")
            continue
        li = _index(raw.get(f"{left}_index"), f"{left}_index", problems)
        ri = _index(raw.get(f"{right}_index"), f"{right}_index", problems)
        if li is not None and ri is not None:
            pairs.append((li, ri))
    only: dict[str, list[int]] = {}
    for side in (left, right):
        vals = answer.get(f"only_in_{side}") or []
        if not isinstance(vals, list):
            vals = [vals]
        kept = []
        for v in vals:
            i = _index(v, f"only_in_{side}", problems)
            if i is not None:
                kept.append(i)
        only[side] = kept
    return Judgment(kind="matching", orientation=orientation, pairs=pairs,
                    only_in_model=only[left], only_in_reference=only[right], problems=problems)


def _json_from_text(text: str):
    """The last judge object (``common`` or ``relation``) in a free-text answer, after the last "final answer"
    when there is one, found by the project's one answer scanner (``gavel.answers.scan_objects``); or None."""
    tail = text
    marker = text.lower().rfind("final answer")
    if marker >= 0:
        tail = text[marker:]
    for part in (tail, text):
        found = [v for _, _, v in scan_objects(part)[0] if isinstance(v, dict) and ("common" in v or "relation" in v)]
        if found:
            return found[-1]
    return None


def parse_answer(answer, source: str = "") -> Judgment:
    """Parse whatever the judge returned: a relation string, a matching dict, or raw text that carries
    one of them (JSON after 'Final Answer', possibly fenced)."""
    if isinstance(answer, dict):
        return parse_matching(answer, source)
    if isinstance(answer, str):
        try:
            return parse_relation(answer, source)
        except JudgeParseError:
            pass
        found = _json_from_text(answer)
        if isinstance(found, dict):
            if "common" in found:
                judged = parse_matching(found, source)
            elif isinstance(found.get("relation"), str):
                judged = parse_relation(found["relation"], source)
            else:
                raise JudgeParseError(f"{source}: JSON in judge text has neither 'common' nor 'relation'")
            judged.salvaged_from_text = True
            return judged
        n_numbers = len(re.findall(r"\b\d+\b", answer))
        if n_numbers > DEGENERATE_INDEX_COUNT:
            raise JudgeParseError(f"{source}: degenerate answer: {n_numbers} indices and no readable JSON",
                                  degenerate=True)
        # A relation stated in free text ("**Final Answer:** model contains reference").
        for line in reversed(answer.strip().splitlines()):
            cleaned = re.sub(r"[*`\"']|final answer\s*:?", "", line, flags=re.I).strip()
            if cleaned:
                try:
                    judged = parse_relation(cleaned, source)
                except JudgeParseError:
                    break
                judged.salvaged_from_text = True
                return judged
        raise JudgeParseError(f"{source}: judge answer is neither a relation nor a readable matching: "
                              f"{answer[:120]!r}")
    raise JudgeParseError(f"{source}: judge answer of type {type(answer).__name__}")


def check_ranges(j: Judgment, n_model: int | None, n_reference: int | None) -> list[str]:
    """Problems of indices against known list lengths (None = length unknown, not checked).
    With unknown orientation, A is checked against n_model and B against n_reference."""
    found = []
    if j.kind != "matching":
        return found
    for role, idxs, n in (("model", [p[0] for p in j.pairs] + j.only_in_model, n_model),
                          ("reference", [p[1] for p in j.pairs] + j.only_in_reference, n_reference)):
        if n is None:
            continue
        bad = sorted({i for i in idxs if i < 1 or i > n})
        if bad:
            found.append(f"{role} index out of range {bad} (list has {n})")
    return found
