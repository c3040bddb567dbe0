"""Reading throughput of ``gavel.answers.read`` on the release's recorded answers (target >= 5,000 answers/s).

The answers are the release's own: every judge answer of ``evaluation*/`` (a relation string is written as
the judge's text ``**Reasoning:** ... **Final Answer:** <A/B label>``, a list matching as the JSON block the
judge wrote, model side as A), the raw judge texts of the truncated Claude Sonnet evaluation file, and every
extractor answer of ``summary_checklists/`` (``{"reasoning", "extracted"}``) as JSON text. Needs GAVEL_RELEASE.

    .venv/bin/python benchmarks/answers.py
"""

from __future__ import annotations

import json
import re
import sys
import time
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # this checkout's gavel, not an installed one

from gavel.answers import Unusable, read  # noqa: E402
from gavel.core.config import release_root  # noqa: E402

TARGET = 5_000
_LABEL = {"equal": "A equals B", "different": "A and B are different", "contains_model": "B contains A",
          "contains_reference": "A contains B"}
_RAW_TEXT = re.compile(r'"((?:[^"\\]|\\.)*\*\*Final Answer(?:[^"\\]|\\.)*)"')


def _label(relation: str) -> str:
    r = relation.lower()
    if "equal" in r:
        return _LABEL["equal"]
    if "different" in r:
        return _LABEL["different"]
    left = r.split(" contains ")[0].strip()
    return "A contains B" if left in ("model", "a") else "B contains A"


def _matching(answer: dict) -> str:
    def side(key):
        return "A" if key.startswith("model") or key.endswith("A") or key == "A_index" else "B"
    common = [{f"{side(k)}_index": v for k, v in p.items()} if isinstance(p, dict) else p
              for p in answer.get("common") or []]
    body = {"common": common}
    for k, v in answer.items():
        if k.startswith("only_in_"):
            body["only_in_A" if side(k[8:]) == "A" else "only_in_B"] = v
    return "**Reasoning:** recorded\n**Final Answer:**\n```json\n" + json.dumps(body, indent=1) + "\n```"


def answers(root: Path) -> list[tuple[str, str]]:
    out = []
    for path in sorted(root.glob("evaluation*/**/*.json")):
        raw = path.read_text(encoding="utf-8")
        try:
            results = json.loads(raw).get("results") or {}
        except json.JSONDecodeError:  # the file cut at 131,072 bytes: its complete raw judge texts
            out += [("compare_multi" if "common" in t else "compare_single", json.loads(f'"{t}"'))
                    for t in _RAW_TEXT.findall(raw)]
            continue
        for items in results.values():
            for answer in (items or {}).values() if isinstance(items, dict) else ():
                if isinstance(answer, str) and len(answer) < 80:
                    out.append(("compare_single", f"**Reasoning:** recorded\n**Final Answer:** {_label(answer)}"))
                elif isinstance(answer, dict):
                    out.append(("compare_multi", _matching(answer)))
                elif isinstance(answer, str):
                    out.append(("compare_multi", answer))
    for path in sorted((root / "summary_checklists").glob("*/*.json")):
        try:
            results = json.loads(path.read_text(encoding="utf-8")).get("results") or {}
        except (json.JSONDecodeError, UnicodeDecodeError):
            continue
        for items in results.values():
            for entry in (items or {}).values() if isinstance(items, dict) else ():
                out.append(("extract", json.dumps(entry, ensure_ascii=False)))
    return out


def main() -> None:
    data = answers(release_root())
    kinds = Counter(stage for stage, _ in data)
    outcome = Counter()
    start = time.perf_counter()
    for stage, text in data:
        try:
            read(stage, text, "stop", n_a=None, n_b=None)
            outcome["read"] += 1
        except Unusable as err:
            outcome[err.reason] += 1
    elapsed = time.perf_counter() - start
    rate = len(data) / elapsed
    print(f"answers: {len(data):,} ({', '.join(f'{k} {n:,}' for k, n in sorted(kinds.items()))})")
    print(f"outcome: {dict(outcome)}")
    print(f"read in {elapsed:.2f} s: {rate:,.0f} answers/s; target {TARGET:,}/s; ratio {rate / TARGET:.1f}x "
          f"({'met' if rate >= TARGET else 'NOT met'})")


if __name__ == "__main__":
    main()
